"""The doomed processes of the kill matrix, forked from one warm parent (run as a script).

``python kill_matrix_process.py`` imports Temporal, DBOS and the adapters once,
then reads one JSON order per line on stdin and forks a child for it, which
prints nothing and dies by SIGKILL at its crash plan's point
(``kill_matrix_support.CrashPlan``). Forking a warm parent keeps a matrix of
dozens of real processes within CI time; the parent starts no thread itself.

An order: ``{"engine": "temporal" | "dbos", "workflow": "chat" | "aiops",
"run_id", "point", "log", "fired", "address", "queue"}`` (Temporal) or
``{…, "database_url", "schema"}`` (DBOS).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
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
    start_aiops_dbos,
    start_diagnosis_dbos,
)
from diagnosis_core.adapters.temporal import create_diagnosis_worker
from diagnosis_core.adapters.temporal_aiops import create_aiops_worker

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


def child(order: dict[str, Any]) -> None:
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
