"""The doomed processes of the kill matrix, forked from one warm parent (run as a script).

``python kill_matrix_process.py`` imports Temporal, DBOS and the adapters once,
then reads one JSON order per line on stdin and forks a child for it, which
prints nothing and dies by SIGKILL at its crash plan's point
(``kill_matrix_support.CrashPlan``). Forking a warm parent keeps a matrix of
dozens of real processes within CI time; the parent starts no thread itself.

An order: ``{"engine": "temporal" | "dbos", "workflow": "chat" | "aiops",
"run_id", "point", "log", "fired", "address", "queue"}`` (Temporal) or
``{…, "database_url", "schema"}`` (DBOS). ``{"engine": "dbos-recover", "workflow",
"run_id", "log", "database_url", "schema", "out"}`` forks a process that launches DBOS on
the killed run's system database (DBOS recovers the run), waits for the run's result and
writes it with the run's journal to ``out``, then exits: every killed run is finished by
a new process, several side by side.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig
from kill_matrix_support import CrashPlan, aiops_case, chat_case
from temporalio.client import Client

import diagnosis_core.tools as dct
from diagnosis_core.adapters.dbos import (
    configure_aiops_dbos,
    configure_diagnosis_dbos,
    dbos_aiops_journal,
    dbos_diagnosis_journal,
    start_aiops_dbos,
    start_diagnosis_dbos,
)
from diagnosis_core.adapters.temporal import create_diagnosis_worker
from diagnosis_core.adapters.temporal_aiops import create_aiops_worker
from diagnosis_core.journal import journal_to_json

APP_VERSION = "kill-matrix"


def dbos_config(database_url: str, schema: str | None) -> DBOSConfig:
    """The DBOS config of a run's doomed and recovering processes (one app version)."""
    config: DBOSConfig = {
        "name": "kill-matrix",
        "system_database_url": database_url,
        "application_version": APP_VERSION,
    }
    if schema:
        config["dbos_system_schema"] = schema
    return config


async def _temporal(order: dict[str, Any], plan: CrashPlan) -> None:
    recorders = dct.RunRecorders()
    client = await Client.connect(order["address"])
    options: dict[str, Any] = {
        "task_queue": order["queue"],
        "tools": recorders,
        "identity": "doomed",
        "sticky_queue_schedule_to_start_timeout": timedelta(seconds=1),
    }
    log = Path(order["log"])
    if order["workflow"] == "chat":
        _, effects = chat_case(order["run_id"], recorders, log, plan)
        worker = create_diagnosis_worker(client, effects, **options)
    else:
        _, aiops = aiops_case(order["run_id"], recorders, log, plan)
        worker = create_aiops_worker(client, aiops, **options)
    await worker.run()


def _dbos(order: dict[str, Any], plan: CrashPlan) -> None:
    recorders = dct.RunRecorders()
    log = Path(order["log"])
    DBOS(config=dbos_config(order["database_url"], order.get("schema")))
    if order["workflow"] == "chat":
        request, effects = chat_case(order["run_id"], recorders, log, plan)
        configure_diagnosis_dbos(effects, tools=recorders)
        DBOS.launch()
        start_diagnosis_dbos(request)
    else:
        aiops_request, aiops = aiops_case(order["run_id"], recorders, log, plan)
        configure_aiops_dbos(aiops, tools=recorders)
        DBOS.launch()
        start_aiops_dbos(aiops_request)
    time.sleep(3600)


def _dbos_recover(order: dict[str, Any]) -> None:
    recorders = dct.RunRecorders()
    log, plan = Path(order["log"]), CrashPlan(None, None)
    if order["workflow"] == "chat":
        _, effects = chat_case(order["run_id"], recorders, log, plan)
        configure_diagnosis_dbos(effects, tools=recorders)
        workflow_id, journal_of = f"diagnosis-{order['run_id']}", dbos_diagnosis_journal
    else:
        _, aiops = aiops_case(order["run_id"], recorders, log, plan)
        configure_aiops_dbos(aiops, tools=recorders)
        workflow_id, journal_of = f"aiops-{order['run_id']}", dbos_aiops_journal
    DBOS(config=dbos_config(order["database_url"], order.get("schema")))
    DBOS.launch()  # recovers the killed run
    # The recovered run is read from the system database every 50 ms, not DBOS's default
    # second: the same result, without up to a second of sleep per case.
    result = DBOS.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.05)
    journal = json.loads(journal_to_json(journal_of(workflow_id)))  # its wire object
    _write(Path(order["out"]), {"result": result, "journal": journal})


def _write(out: Path, found: dict[str, Any]) -> None:
    part = out.with_suffix(".part")
    part.write_text(json.dumps(found), encoding="utf-8")
    part.replace(out)  # the parent sees the whole file or none


def child(order: dict[str, Any]) -> None:
    if order["engine"] == "dbos-recover":
        try:
            _dbos_recover(order)
        except BaseException:  # the parent fails the case with this process's traceback
            _write(Path(order["out"]), {"error": traceback.format_exc()})
        os._exit(0)  # no DBOS.destroy(): its threads' waits would only slow the matrix
    plan = CrashPlan(order["point"], Path(order["fired"]))
    if order["engine"] == "temporal":
        asyncio.run(_temporal(order, plan))
    else:
        _dbos(order, plan)


def main() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    for line in sys.stdin:
        order = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                child(order)
            finally:
                os._exit(1)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
