"""AIOps parity across engines: every example and 300 generated scenarios, byte for byte.

The plain synchronous driver is the reference; Temporal (a real dev server, one
worker, all runs at once), DBOS on a SQLite system database and LangGraph on
SQLite and PostgreSQL savers must give the identical finished state JSON. The
scenarios are the package's own Hypothesis strategy drawn derandomized
(``aiops_parity_support.generated_docs``).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from aiops_parity_support import (
    GENERATED,
    RoutedAiOpsEffects,
    example_docs,
    generated_docs,
    request_and_effects,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca

Case = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    docs = [*example_docs(), *generated_docs()]
    assert len(docs) == len(example_docs()) + GENERATED
    assert len({doc["run"]["run_id"] for _, doc in docs}) == len(docs)
    return docs


@pytest.fixture(scope="module")
def expected(cases: list[Case]) -> dict[str, str]:
    """Each run's finished state through the plain driver, as JSON, by run id."""
    reference = {}
    for _, doc in cases:
        request, effects = request_and_effects(doc)
        reference[request.run.run_id] = dc.to_json(dca.run_aiops(request, effects))
    return reference


def test_the_cases_reach_both_outcomes(expected: dict[str, str]) -> None:
    outcomes = {dc.from_json(dca.AiOpsState, text).outcome for text in expected.values()}
    assert outcomes == {dca.AiOpsOutcome.REPORTED, dca.AiOpsOutcome.FALLBACK}


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory for the SQLite files: in memory (``/dev/shm``) where there is one.

    Parity is about what the adapters record, not about the disk: a file in
    tmpfs is a real SQLite database whose commits cost no fsync.
    """
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="aiops-parity-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _diverging(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    assert got.keys() == expected.keys()
    return sorted(run_id for run_id in expected if got[run_id] != expected[run_id])


async def test_temporal_gives_identical_states(
    temporal_address: str, cases: list[Case], expected: dict[str, str]
) -> None:
    pytest.importorskip("temporalio")
    from temporalio.client import Client

    from diagnosis_core.adapters.temporal_aiops import create_aiops_worker, start_aiops_workflow

    client = await Client.connect(temporal_address)
    queue = f"aiops-parity-{uuid.uuid4()}"
    routed = RoutedAiOpsEffects()
    requests = [routed.add(doc) for _, doc in cases]
    got: dict[str, str] = {}
    async with create_aiops_worker(
        client, routed.effects(), task_queue=queue, max_concurrent_activities=16
    ):
        handles = await asyncio.gather(*(
            start_aiops_workflow(
                client, request, task_queue=queue, workflow_id=f"{queue}-{request.run.run_id}"
            )
            for request in requests
        ))
        for request, handle in zip(requests, handles, strict=True):
            state = dc.from_wire(dca.AiOpsState, await handle.result())
            got[request.run.run_id] = dc.to_json(state)
    assert _diverging(expected, got) == []


def test_dbos_on_sqlite_gives_identical_states(
    fast_dir: Path, cases: list[Case], expected: dict[str, str]
) -> None:
    pytest.importorskip("dbos")
    from dbos import DBOS

    from diagnosis_core.adapters.dbos import configure_aiops_dbos, start_aiops_dbos

    routed = RoutedAiOpsEffects()
    requests = [routed.add(doc) for _, doc in cases]
    configure_aiops_dbos(routed.effects())
    DBOS(config={"name": "aiops-parity", "system_database_url": f"sqlite:///{fast_dir / 'p.db'}"})
    DBOS.launch()
    try:
        handles = [start_aiops_dbos(request) for request in requests]
        got = {
            request.run.run_id: dc.to_json(dc.from_wire(dca.AiOpsState, handle.get_result()))
            for request, handle in zip(requests, handles, strict=True)
        }
    finally:
        DBOS.destroy()
    assert _diverging(expected, got) == []


def _langgraph_states(saver: Any, cases: list[Case]) -> dict[str, str]:
    from diagnosis_core.adapters.langgraph_aiops import build_aiops_graph, run_aiops_graph

    routed = RoutedAiOpsEffects()
    requests = [routed.add(doc) for _, doc in cases]
    graph = build_aiops_graph(routed.effects(), checkpointer=saver)
    return {
        request.run.run_id: dc.to_json(run_aiops_graph(graph, request)) for request in requests
    }


def test_langgraph_on_sqlite_gives_identical_states(
    fast_dir: Path, cases: list[Case], expected: dict[str, str]
) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(fast_dir / "checkpoints.sqlite", check_same_thread=False)
    try:
        got = _langgraph_states(SqliteSaver(connection), cases)
    finally:
        connection.close()
    assert _diverging(expected, got) == []


@pytest.fixture(scope="module")
def postgres_conninfo() -> Iterator[str]:
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph_support import postgres_server

    try:
        with postgres_server() as conninfo:
            yield conninfo
    except LookupError as error:
        pytest.skip(str(error))


def test_langgraph_on_postgres_gives_identical_states(
    postgres_conninfo: str, cases: list[Case], expected: dict[str, str]
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_conninfo) as saver:
        saver.setup()
        got = _langgraph_states(saver, cases)
    assert _diverging(expected, got) == []
