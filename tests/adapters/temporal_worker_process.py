"""A Temporal worker in its own process, for the kill tests (run as a script).

``python temporal_worker_process.py ADDRESS QUEUE SIDE_FILE PLAN_JSON`` serves
the runs of ``PLAN_JSON`` (``[[scenario path, run id, effect to hang in], …]``)
until it is killed. Every effect call is noted in ``SIDE_FILE`` before it
runs (see ``adapter_support.logged_effects``); the chosen effect of each run
then never returns, so the test can SIGKILL the process during it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from adapter_support import RoutedEffects, load_doc, logged_effects, scenario_of
from temporalio.client import Client

from diagnosis_core.adapters.temporal import create_diagnosis_worker


async def main(address: str, queue: str, side_file: str, plan: str) -> None:
    routed = RoutedEffects()
    for path, run_id, hang in json.loads(plan):
        doc = load_doc(Path(path))
        doc["run"]["run_id"] = run_id
        _, scripted = scenario_of(doc)
        routed.add(doc, logged_effects(scripted, Path(side_file), "doomed", hang=hang))
    client = await Client.connect(address)
    worker = create_diagnosis_worker(client, routed.effects(), task_queue=queue, identity="doomed")
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
