"""Every engine under load: W worker processes, N concurrent runs, random SIGKILL (issue 22).

For each engine, W >= 3 worker processes serve two batches of N >= 30 runs of
mixed scenarios (chat, chat with a real recorded tool, AIOps): the first
batch without kills (runs/s), the second while random workers are SIGKILLed at
random instants and started again. Then every run must be finished with the
uninterrupted result or the §12 fail-closed outcome of the call the kill
interrupted, no tool and no executor may have run twice, and no run may have
had two effects in flight at once (two live drivers). The table of figures is
printed at the end of the module (``docs/engines.md``, "Under load").

Real parts only: the Temporal dev server, PostgreSQL started here, worker
processes killed with SIGKILL. The module is in the ``slow`` lane.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

from _harness import (  # noqa: E402
    Finished,
    Pool,
    Reference,
    Row,
    Run,
    chaos,
    check_runs,
    interrupted,
    kill_to_done,
    make_plan,
    read_events,
    reference,
    state_of,
    table,
    write_plan,
)

RUNS = 40  # per batch: one without kills, one with kills
WORKERS = 3
KILLS = 6
HEARTBEAT_SECONDS = 3.0
STICKY_SECONDS = 2.0
CONCURRENCY = 14  # runs (DBOS, LangGraph) or activities (Temporal) a worker serves at once;
# 3 x 14 >= 40: every run of a batch can be in flight at once

ROWS: list[Row] = []


@pytest.fixture(scope="module", autouse=True)
def _print_table(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if ROWS:
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print("\n" + table(ROWS), flush=True)


@pytest.fixture(scope="module")
def conninfo() -> Iterator[str]:
    pytest.importorskip("psycopg")
    from langgraph_support import postgres_server

    try:
        with postgres_server() as info:
            yield info
    except LookupError as error:
        pytest.skip(str(error))


def _postgres_url(conninfo: str, database: str) -> str:
    """A SQLAlchemy URL of a new database on the server of ``conninfo``."""
    import psycopg

    fields = dict(item.split("=", 1) for item in conninfo.split())
    admin = f"host={fields['host']} port={fields['port']} user={fields['user']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{database}"')
    return f"postgresql://{fields['user']}@{fields['host']}:{fields['port']}/{database}"


def _references(runs: list[Run]) -> dict[str, Reference]:
    return {run.run_id: reference(run) for run in runs}


def _settings(folder: Path, runs: list[Run], **engine: Any) -> Path:
    plan = folder / "plan.json"
    write_plan(plan, runs)
    settings = folder / "settings.json"
    settings.write_text(json.dumps({"folder": str(folder), "plan": str(plan), **engine}), "utf-8")
    return settings


def _verdict(
    engine: str, pool: Pool, refs: dict[str, Reference], finished: dict[str, Finished],
    batches: tuple[tuple[float, list[Run]], tuple[float, list[Run]]], note: str = "",
) -> None:
    keep = os.environ.get("DIAGNOSIS_LOAD_KEEP")  # a folder to keep the event logs in
    if keep:
        shutil.copytree(pool.folder, Path(keep) / engine.split()[0].lower(), dirs_exist_ok=True)
        summary = {r: [f.done_at, refs[r].run.example] for r, f in finished.items()}
        (Path(keep) / f"{engine.split()[0].lower()}.json").write_text(
            json.dumps({"finished": summary, "kills": [vars(k) for k in pool.kills]}), "utf-8"
        )
    events = read_events(pool.folder)
    problems = check_runs(refs, finished, events, pool.kills)
    assert not problems, _explain(problems, events, pool, finished)
    assert pool.kills, "no worker was killed"
    rates = []
    for started, runs in batches:
        last = max(finished[run.run_id].done_at for run in runs)
        rates.append(len(runs) / (last - started))
    recovery = kill_to_done(finished, events, pool.kills)
    cut = interrupted(events, pool.kills)
    assert recovery, "no kill cut an effect in flight"
    fail_closed = sum(
        1 for run_id, ref in refs.items() if finished[run_id].result_json != ref.result_json
    )
    ROWS.append(
        Row(engine, RUNS, WORKERS, len(pool.kills), rates[0], rates[1], recovery, cut, fail_closed,
            note)
    )


def _explain(
    problems: list[str], events: list[Any], pool: Pool, finished: dict[str, Finished]
) -> str:
    """The problems, with the events and result of each run concerned, and the kills."""
    lines = [*problems[:20], f"kills: {pool.kills}"]
    for run_id in sorted({problem.split()[0].rstrip(":") for problem in problems[:5]}):
        lines.append(f"--- {run_id}")
        lines.extend(
            f"  {e.kind} {e.at:.3f} {e.pid} {e.name}" for e in events if e.run_id == run_id
        )
        done = finished.get(run_id)
        lines.append(f"  result: {done.result_json[:1500] if done else None}")
    return "\n".join(lines) + "\n" + pool.output()[-3000:]


# --- Temporal ---------------------------------------------------------------------------


def _with_kills(pool: Pool, batch: Callable[[threading.Event], float]) -> float:
    """Run ``batch`` while a thread SIGKILLs random busy workers of ``pool`` (seeded).

    ``batch`` sets the event it is given once every run is submitted, so the
    kills land while runs are in flight; returns what ``batch`` returns.
    """
    done, submitted = threading.Event(), threading.Event()
    killer = threading.Thread(
        target=chaos,
        args=(pool, KILLS, lambda: not done.is_set(), random.Random(22), submitted),
    )
    killer.start()
    try:
        return batch(submitted)
    finally:
        done.set()
        submitted.set()
        killer.join()


async def _temporal_batch(
    address: str, queue: str, runs: list[Run], finished: dict[str, Finished],
    submitted: threading.Event | None = None,
) -> float:
    from temporalio.client import Client

    import diagnosis_core.aiops as dca
    from diagnosis_core.adapters.temporal import start_diagnosis_workflow
    from diagnosis_core.adapters.temporal_aiops import start_aiops_workflow

    client = await Client.connect(address)
    heartbeat = __import__("datetime").timedelta(seconds=HEARTBEAT_SECONDS)
    started = time.time()

    async def one(run: Run) -> Any:
        if run.aiops:
            scenario = dca.load_aiops_scenario(run.doc())
            request = dca.aiops_scenario_request(scenario)
            handle: Any = await start_aiops_workflow(
                client, request, task_queue=queue, heartbeat_timeout=heartbeat
            )
        else:
            import diagnosis_core as dc

            request = dc.scenario_request(dc.load_scenario(run.doc()))
            handle = await start_diagnosis_workflow(
                client, request, task_queue=queue, heartbeat_timeout=heartbeat
            )
        return handle

    async def wait(run: Run, handle: Any) -> None:
        wire = await handle.result()
        finished[run.run_id] = state_of(run, wire, time.time())

    handles = await asyncio.gather(*(one(run) for run in runs))
    if submitted is not None:
        submitted.set()
    waits = (wait(run, handle) for run, handle in zip(runs, handles, strict=True))
    await asyncio.wait_for(asyncio.gather(*waits), timeout=240)
    return started


def test_temporal_workers_under_load_with_random_kills(
    temporal_address: str, tmp_path: Path
) -> None:
    pytest.importorskip("temporalio")
    plain, killed = make_plan("tl-plain", RUNS), make_plan("tl-kill", RUNS)
    refs = _references(plain + killed)
    queue = f"diagnosis-load-{uuid.uuid4()}"
    settings = _settings(
        tmp_path, plain + killed, address=temporal_address, queue=queue,
        sticky_seconds=STICKY_SECONDS, concurrency=CONCURRENCY,
    )
    pool = Pool("temporal", settings, tmp_path, WORKERS)
    finished: dict[str, Finished] = {}
    try:
        pool.start_all()
        first = asyncio.run(_temporal_batch(temporal_address, queue, plain, finished))
        pool.check_alive()
        second_started = _with_kills(pool, lambda submitted: asyncio.run(
            _temporal_batch(temporal_address, queue, killed, finished, submitted)
        ))
    finally:
        pool.stop()
    note = f"heartbeat {HEARTBEAT_SECONDS:g} s, sticky {STICKY_SECONDS:g} s"
    _verdict("Temporal", pool, refs, finished, ((first, plain), (second_started, killed)), note)


# --- DBOS -------------------------------------------------------------------------------

DBOS_QUEUE = "diagnosis-load"


def _dbos_batch(
    client: Any, runs: list[Run], finished: dict[str, Finished],
    submitted: threading.Event | None = None,
) -> float:
    import diagnosis_core as dc
    from diagnosis_core.adapters.dbos import AIOPS_WORKFLOW_NAME, DIAGNOSIS_WORKFLOW_NAME

    started = time.time()
    ids = {}
    for run in runs:
        prefix, name = (
            ("aiops", AIOPS_WORKFLOW_NAME) if run.aiops else ("diagnosis", DIAGNOSIS_WORKFLOW_NAME)
        )
        workflow_id = f"{prefix}-{run.run_id}"
        ids[workflow_id] = run
        doc_request = _request_of(run)
        client.enqueue(
            {"queue_name": DBOS_QUEUE, "workflow_name": name, "workflow_id": workflow_id,
             "app_version": "load"},
            dc.to_wire(doc_request),
        )
    if submitted is not None:
        submitted.set()
    deadline = time.monotonic() + 240
    while True:
        statuses = client.list_workflows(workflow_ids=list(ids), load_input=False)
        for status in statuses:
            run = ids[status.workflow_id]
            if run.run_id in finished:
                continue
            if status.status == "SUCCESS":
                finished[run.run_id] = state_of(run, status.output, status.updated_at / 1000)
            elif status.status not in ("ENQUEUED", "PENDING"):
                raise AssertionError(f"{status.workflow_id}: {status.status} {status.error!r}")
        if all(run.run_id in finished for run in runs):
            return started
        assert time.monotonic() < deadline, "the DBOS runs did not finish"
        time.sleep(0.1)


def _request_of(run: Run) -> Any:
    import diagnosis_core as dc
    import diagnosis_core.aiops as dca

    if run.aiops:
        return dca.aiops_scenario_request(dca.load_aiops_scenario(run.doc()))
    return dc.scenario_request(dc.load_scenario(run.doc()))


def test_dbos_workers_on_postgres_under_load_with_random_kills(
    conninfo: str, tmp_path: Path
) -> None:
    pytest.importorskip("dbos")
    from dbos import DBOSClient

    url = _postgres_url(conninfo, "dbos_load")
    plain, killed = make_plan("db-plain", RUNS), make_plan("db-kill", RUNS)
    refs = _references(plain + killed)
    settings = _settings(
        tmp_path, plain + killed, url=url, queue=DBOS_QUEUE, version="load", concurrency=CONCURRENCY
    )
    pool = Pool("dbos", settings, tmp_path, WORKERS)
    finished: dict[str, Finished] = {}
    try:
        pool.start_all(one_first=True)
        client = DBOSClient(system_database_url=url)
        try:
            first = _dbos_batch(client, plain, finished)
            pool.check_alive()
            second_started = _with_kills(
                pool, lambda submitted: _dbos_batch(client, killed, finished, submitted)
            )
        finally:
            client.destroy()
    finally:
        pool.stop()
    _verdict(
        "DBOS (PostgreSQL)", pool, refs, finished, ((first, plain), (second_started, killed)),
        "executor id per slot; recovered at relaunch",
    )


# --- LangGraph --------------------------------------------------------------------------


def _langgraph_batch(
    conninfo: str, runs: list[Run], finished: dict[str, Finished],
    submitted: threading.Event | None = None,
) -> float:
    import psycopg

    started = time.time()
    with psycopg.connect(conninfo, autocommit=True) as connection:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO load_runs (run_id, submitted) VALUES (%s, %s)",
                [(run.run_id, started) for run in runs],
            )
        if submitted is not None:
            submitted.set()
        by_id = {run.run_id: run for run in runs}
        deadline = time.monotonic() + 240
        while True:
            rows = connection.execute(
                "SELECT run_id, finished, state FROM load_runs "
                "WHERE finished IS NOT NULL AND run_id = ANY(%s)",
                (list(by_id),),
            ).fetchall()
            for run_id, done_at, state in rows:
                if run_id not in finished:
                    finished[run_id] = state_of(by_id[run_id], json.loads(state), done_at)
            if all(run.run_id in finished for run in runs):
                return started
            assert time.monotonic() < deadline, "the LangGraph runs did not finish"
            time.sleep(0.1)


def test_langgraph_workers_on_one_postgres_saver_under_load_with_random_kills(
    conninfo: str, tmp_path: Path
) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres")
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    _postgres_url(conninfo, "langgraph_load")  # a database of its own on the server
    database = conninfo.rsplit("dbname=", 1)[0] + "dbname=langgraph_load"
    with PostgresSaver.from_conn_string(database) as saver:
        saver.setup()
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE load_runs (run_id text PRIMARY KEY, submitted double precision, "
            "finished double precision, state text)"
        )
    plain, killed = make_plan("lg-plain", RUNS), make_plan("lg-kill", RUNS)
    refs = _references(plain + killed)
    settings = _settings(tmp_path, plain + killed, conninfo=database, concurrency=CONCURRENCY)
    pool = Pool("langgraph", settings, tmp_path, WORKERS)
    finished: dict[str, Finished] = {}
    try:
        pool.start_all()
        first = _langgraph_batch(database, plain, finished)
        pool.check_alive()
        second_started = _with_kills(
            pool, lambda submitted: _langgraph_batch(database, killed, finished, submitted)
        )
    finally:
        pool.stop()
    _verdict(
        "LangGraph (PostgreSQL saver)", pool, refs, finished,
        ((first, plain), (second_started, killed)), "ThreadBusyError; workers poll",
    )
