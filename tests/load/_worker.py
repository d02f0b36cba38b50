"""One worker process of the load test (run as a script): ``_worker.py ENGINE SETTINGS SLOT``.

``SETTINGS`` is a JSON file: ``folder`` (event logs, ready files, results),
``plan`` (every run this worker may serve) and the engine's own keys. The
worker notes every effect in ``folder/events-<pid>.log`` (see ``_harness``),
touches ``folder/ready-<pid>`` once it serves runs, and runs until killed.

* ``temporal``: a worker from ``create_diagnosis_worker`` (both workflows) on
  the shared task queue, with the sticky-queue timeout of the settings.
* ``dbos``: DBOS launched on the shared PostgreSQL system database with the
  executor id ``load-worker-<slot>`` (a restarted slot recovers the runs of the
  killed one at launch), serving the shared queue.
* ``langgraph``: polls the shared PostgreSQL for unfinished runs and drives
  each one it can through the graph (run, or resume when a checkpoint exists).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from _harness import EventLog, WorkerEffects, read_plan


def _ready(folder: Path) -> None:
    (folder / f"ready-{os.getpid()}").touch()


async def temporal(settings: dict[str, Any], slot: int, effects: WorkerEffects) -> None:
    from temporalio.client import Client

    from diagnosis_core.adapters.temporal import create_diagnosis_worker

    client = await Client.connect(settings["address"])
    sticky = timedelta(seconds=settings["sticky_seconds"])
    worker = create_diagnosis_worker(
        client,
        effects.chat(),
        task_queue=settings["queue"],
        tools=effects.recorders,
        observer=effects.attempts,
        aiops_effects=effects.aiops(),
        aiops_observer=effects.attempts,
        identity=f"load-{slot}-{os.getpid()}",
        sticky_queue_schedule_to_start_timeout=sticky,
        max_concurrent_activities=settings["concurrency"],
    )
    # The option reaches the Temporal worker unchanged (the recovery bound depends on it).
    assert worker.config()["sticky_queue_schedule_to_start_timeout"] == sticky
    async with worker:
        _ready(Path(settings["folder"]))
        await asyncio.Event().wait()


def dbos(settings: dict[str, Any], slot: int, effects: WorkerEffects) -> None:
    from dbos import DBOS, DBOSConfig

    from diagnosis_core.adapters.dbos import configure_aiops_dbos, configure_diagnosis_dbos

    configure_diagnosis_dbos(effects.chat(), tools=effects.recorders, observer=effects.attempts)
    configure_aiops_dbos(effects.aiops(), observer=effects.attempts)
    config: DBOSConfig = {
        "name": "diagnosis-load",
        "system_database_url": settings["url"],
        "executor_id": f"load-worker-{slot}",
        "application_version": settings["version"],
    }
    DBOS(config=config)
    DBOS.launch()
    DBOS.register_queue(
        settings["queue"], worker_concurrency=settings["concurrency"], polling_interval_sec=0.2
    )
    _ready(Path(settings["folder"]))
    while True:
        time.sleep(3600)


def main(engine: str, settings_path: str, slot_text: str) -> None:
    settings = json.loads(Path(settings_path).read_text(encoding="utf-8"))
    folder, slot = Path(settings["folder"]), int(slot_text)
    log = EventLog(folder / f"events-{os.getpid()}.log")
    effects = WorkerEffects(read_plan(Path(settings["plan"])), log, seed=os.getpid())
    if engine == "temporal":
        asyncio.run(temporal(settings, slot, effects))
    elif engine == "dbos":
        dbos(settings, slot, effects)
    else:
        from _langgraph_worker import serve

        serve(settings, slot, effects, lambda: _ready(folder))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main(*sys.argv[1:4])
