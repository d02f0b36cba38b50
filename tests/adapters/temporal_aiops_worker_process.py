"""An AIOps Temporal worker in its own process, for the kill test (run as a script).

``python temporal_aiops_worker_process.py ADDRESS QUEUE SIDE_FILE PLAN_JSON`` serves
the runs of ``PLAN_JSON`` (``[[run id, agent to hang in], …]``) of the
``aiops_payload_targeted`` example until it is killed; every agent call is
noted in ``SIDE_FILE`` before it runs (``WHO RUN_ID AGENT``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import attrs
from adapter_support import EXAMPLES_DIR, load_doc
from temporalio.client import Client

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters.temporal_aiops import create_aiops_worker

AGENTS = ("supervisor", "planner", "executor", "reporter")
EXAMPLE = EXAMPLES_DIR / "aiops_payload_targeted.json"


def routed_effects(plan: dict[str, str | None], side_file: Path, who: str) -> dca.AiOpsEffects:
    """One scripted effects per run id; each call noted, the planned agent hangs."""
    runs = {}
    for run_id in plan:
        scenario = dca.load_aiops_scenario(load_doc(EXAMPLE))
        runs[run_id] = dca.aiops_scenario_effects(scenario)

    def agent(name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            with side_file.open("a", encoding="utf-8") as file:
                file.write(f"{who} {config.run_id} {name}\n")
            if plan.get(config.run_id) == name:
                time.sleep(3600)
            return str(getattr(runs[config.run_id], name)(input, config))

        return call

    first = next(iter(runs.values()))
    return attrs.evolve(first, **{name: agent(name) for name in AGENTS})


async def main(address: str, queue: str, side_file: str, plan_json: str) -> None:
    plan = {run_id: hang for run_id, hang in json.loads(plan_json)}
    client = await Client.connect(address)
    effects = routed_effects(plan, Path(side_file), "doomed")
    worker = create_aiops_worker(client, effects, task_queue=queue, identity="doomed")
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
