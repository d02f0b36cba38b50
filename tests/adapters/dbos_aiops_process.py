"""An AIOps DBOS process of the crash tests (run as a script).

``python dbos_aiops_process.py DATABASE_URL WHO HANG SIDE_FILE`` runs the
``aiops_payload_targeted`` example; every agent call is noted in ``SIDE_FILE``
before it runs and the agent named ``HANG`` never returns. ``WHO`` ``first``
starts the run and waits to be killed; ``second`` recovers it (at launch) and
prints its result as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import attrs
from adapter_support import EXAMPLES_DIR, load_doc
from dbos import DBOS

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters.dbos import configure_aiops_dbos, start_aiops_dbos

AGENTS = ("supervisor", "planner", "executor", "reporter")


def logged(effects: dca.AiOpsEffects, side_file: Path, who: str, hang: str) -> dca.AiOpsEffects:
    def wrap(name: str) -> dc.AgentInvoker:
        inner = getattr(effects, name)

        def call(input: str, config: dc.RunConfig, /) -> str:
            with side_file.open("a", encoding="utf-8") as file:
                file.write(f"{who} {config.run_id} {name}\n")
            if name == hang:
                time.sleep(3600)
            return str(inner(input, config))

        return call

    return attrs.evolve(effects, **{name: wrap(name) for name in AGENTS})


def main(database_url: str, who: str, hang: str, side_file: str) -> None:
    scenario = dca.load_aiops_scenario(load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json"))
    request = dca.aiops_scenario_request(scenario)
    configure_aiops_dbos(logged(dca.aiops_scenario_effects(scenario), Path(side_file), who, hang))
    DBOS(config={"name": "aiops-crash", "system_database_url": database_url})
    DBOS.launch()
    if who == "first":
        start_aiops_dbos(request)
        time.sleep(3600)
        return
    # Polled every 50 ms, not DBOS's default second: the same result, sooner.
    handle = DBOS.retrieve_workflow(f"aiops-{request.run.run_id}")
    result = handle.get_result(polling_interval_sec=0.05)
    print(json.dumps(result, sort_keys=True))
    DBOS.destroy()


if __name__ == "__main__":
    main(*sys.argv[1:5])
