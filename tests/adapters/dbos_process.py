"""A DBOS process of the crash tests (run as a script).

``python dbos_process.py DATABASE_URL WHO HANG SIDE_FILE TOOL_LOG [SCHEMA]`` configures
the tooled effects of ``tools_support`` (every call noted in ``SIDE_FILE``
before it runs, every tool call in ``TOOL_LOG``) and launches DBOS on the
system database. ``WHO`` ``first`` starts the run and waits to be killed
(the effect named ``HANG`` never returns); ``WHO`` ``second`` recovers the
pending run — DBOS recovers it at launch — and prints its result as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from adapter_support import logged_effects
from dbos import DBOS, DBOSConfig
from tools_support import tooled_effects

import diagnosis_core.tools as dct
from diagnosis_core.adapters.dbos import configure_diagnosis_dbos, start_diagnosis_dbos


def main(
    database_url: str, who: str, hang: str, side_file: str, tool_log: str, schema: str = "-"
) -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders, tool_log=Path(tool_log))
    effects = logged_effects(effects, Path(side_file), who, hang=hang if hang != "-" else None)
    configure_diagnosis_dbos(effects, tools=recorders)
    config: DBOSConfig = {"name": "diagnosis-crash", "system_database_url": database_url}
    if schema != "-":
        config["dbos_system_schema"] = schema  # one PostgreSQL database, a schema per test
    DBOS(config=config)
    DBOS.launch()
    workflow_id = f"diagnosis-{request.run.run_id}"
    if who == "first":
        start_diagnosis_dbos(request)
        time.sleep(3600)
        return
    # Polled every 50 ms, not DBOS's default second: the same result, sooner.
    result = DBOS.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.05)
    print(json.dumps(result, sort_keys=True))
    DBOS.destroy()


if __name__ == "__main__":
    main(*sys.argv[1:7])
