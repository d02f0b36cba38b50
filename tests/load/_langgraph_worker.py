"""The LangGraph worker of the load test: drives the unfinished runs of a shared PostgreSQL.

LangGraph has no task queue: a run is a thread of the shared PostgreSQL saver.
The harness submits a run by inserting a row into ``load_runs``; every worker
polls that table for unfinished runs and drives each one it can, with
``CONCURRENCY`` threads: ``run_*_graph`` when the thread has no checkpoint yet,
``resume_*_graph`` when it has one (a run whose worker was killed). Which
worker drives a thread is decided by the adapter alone: run and resume hold
the thread exclusively and refuse a second live driver with
``ThreadBusyError``, which sends this worker on to the next run. A finished
run's state is written back to its row (``finished``, ``state``).
"""

from __future__ import annotations

import json
import random
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from _harness import Run, WorkerEffects, read_plan
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters.langgraph import (
    ThreadBusyError,
    build_diagnosis_graph,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)
from diagnosis_core.adapters.langgraph_aiops import (
    build_aiops_graph,
    resume_aiops_graph,
    run_aiops_graph,
)

POLL_SECONDS = 0.2


def serve(
    settings: dict[str, Any], slot: int, effects: WorkerEffects, ready: Callable[[], None]
) -> None:
    from pathlib import Path

    runs = {run.run_id: run for run in read_plan(Path(settings["plan"]))}
    conninfo = settings["conninfo"]
    concurrency = int(settings["concurrency"])
    pool = ConnectionPool(  # shared by the saver and the polls; each drive adds its lock's
        conninfo,
        min_size=1,
        max_size=8,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    saver = PostgresSaver(pool)  # type: ignore[arg-type]
    chat = build_diagnosis_graph(
        effects.chat(), checkpointer=saver, tools=effects.recorders, observer=effects.attempts
    )
    aiops = build_aiops_graph(effects.aiops(), checkpointer=saver, observer=effects.attempts)
    active: set[str] = set()
    lock = threading.Lock()
    rng = random.Random(slot * 7919 + time.time_ns())

    def drive(run: Run) -> Any:
        config = {"configurable": {"thread_id": run.run_id, "checkpoint_ns": ""}}
        started = saver.get_tuple(config) is not None  # type: ignore[arg-type]
        if run.aiops:
            if started:
                return resume_aiops_graph(aiops, thread_id=run.run_id)
            request = dca.aiops_scenario_request(dca.load_aiops_scenario(run.doc()))
            return run_aiops_graph(aiops, request, thread_id=run.run_id)
        if started:
            return resume_diagnosis_graph(chat, thread_id=run.run_id)
        request = dc.scenario_request(dc.load_scenario(run.doc()))
        return run_diagnosis_graph(chat, request, thread_id=run.run_id)

    def loop() -> None:
        while True:
            with pool.connection() as connection:
                rows = connection.execute(
                    "SELECT run_id FROM load_runs WHERE finished IS NULL"
                ).fetchall()
            candidates = [row["run_id"] for row in rows]
            rng.shuffle(candidates)
            drove = False
            for run_id in candidates:
                with lock:
                    if run_id in active:
                        continue
                    active.add(run_id)
                try:
                    state = drive(runs[run_id])
                except ThreadBusyError:
                    continue  # another live worker drives it
                except Exception as error:  # noted; the test fails on any
                    effects.log.note("X", run_id, type(error).__name__)
                    traceback.print_exc()
                    continue
                finally:
                    with lock:
                        active.discard(run_id)
                if not state.finished:
                    continue
                effects.log.note("R", run_id, "finished")
                with pool.connection() as connection:
                    connection.execute(
                        "UPDATE load_runs SET finished = %s, state = %s "
                        "WHERE run_id = %s AND finished IS NULL",
                        (time.time(), json.dumps(dc.to_wire(state)), run_id),
                    )
                drove = True
                break
            if not drove:
                time.sleep(POLL_SECONDS)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    ready()
    for thread in threads:
        thread.join()
