"""The AIOps flow on LangGraph: parity with the sync driver, resume after a crash (§11, §12)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, golden_result, load_doc
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

import diagnosis_core as dc
from diagnosis_core.adapters.langgraph_aiops import (
    AIOPS_NODES,
    aiops_state_of,
    build_aiops_graph,
    resume_aiops_graph,
    run_aiops_graph,
)
from tests._reach import aiops as dca
from tests._reach import journal as dcj

AIOPS_EXAMPLES = sorted(EXAMPLES_DIR.glob("aiops*.json"))
TARGETED = EXAMPLES_DIR / "aiops_payload_targeted.json"


class Crash(BaseException):
    """A process dying mid-effect."""


def _scenario(path: Path) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    scenario = dca.load_aiops_scenario(load_doc(path))
    return dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
@pytest.mark.parametrize("path", AIOPS_EXAMPLES, ids=lambda p: p.stem)
def test_every_aiops_example_runs_like_the_sync_driver(
    path: Path, saver: str, tmp_path: Path
) -> None:
    request, effects = _scenario(path)
    expected = dca.run_aiops(*_scenario(path))
    connection = sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False)
    checkpointer: Any = InMemorySaver() if saver == "memory" else SqliteSaver(connection)
    graph = build_aiops_graph(effects, checkpointer=checkpointer)
    state = run_aiops_graph(graph, request)
    connection.close()
    assert dc.to_json(state) == dc.to_json(expected)
    assert set(graph.get_graph().nodes) == {"__start__", *AIOPS_NODES, "__end__"}


def _crashing(agent: str) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects, list[int]]:
    request, effects = _scenario(TARGETED)
    calls: list[int] = []
    inner = getattr(effects, agent)

    def call(input: str, config: dc.RunConfig, /) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise Crash
        return str(inner(input, config))

    return request, attrs.evolve(effects, **{agent: call}), calls


def test_an_executor_that_died_mid_call_is_never_called_again(tmp_path: Path) -> None:
    request, effects, calls = _crashing("executor")
    database = tmp_path / "c.sqlite"
    with sqlite3.connect(database, check_same_thread=False) as connection, pytest.raises(Crash):
        run_aiops_graph(build_aiops_graph(effects, checkpointer=SqliteSaver(connection)),
                        request)
    with sqlite3.connect(database, check_same_thread=False) as connection:
        fresh = build_aiops_graph(effects, checkpointer=SqliteSaver(connection))
        state = resume_aiops_graph(fresh, thread_id=request.run.run_id)
    assert calls == [1]
    assert state.result.reason_code is not None
    assert state.result.reason_code.value == "EXECUTOR_FAILED"


def test_a_reporter_that_died_mid_call_is_sent_again_as_the_same_attempt() -> None:
    request, effects, calls = _crashing("reporter")
    saver = InMemorySaver()
    with pytest.raises(Crash):
        run_aiops_graph(build_aiops_graph(effects, checkpointer=saver), request)
    state = resume_aiops_graph(
        build_aiops_graph(effects, checkpointer=saver), thread_id=request.run.run_id
    )
    assert len(calls) >= 2
    assert dc.to_json(state) == dc.to_json(dca.run_aiops(*_scenario(TARGETED)))
    values = build_aiops_graph(effects, checkpointer=saver).get_state(
        {"configurable": {"thread_id": request.run.run_id}}
    ).values
    assert dc.to_json(aiops_state_of(values)) == dc.to_json(state)


def test_each_executor_entry_carries_the_tool_calls_of_its_call() -> None:
    import diagnosis_core.tools as dct
    from diagnosis_core.adapters.langgraph_aiops import AiOpsGraph

    def run_with(recorders: dct.RunRecorders, saver: InMemorySaver) -> AiOpsGraph:
        _, effects = _scenario(TARGETED)
        executor = effects.executor

        def calling(input: str, config: dc.RunConfig, /) -> str:
            recorders.recorder(config.run_id).wrap("query_metrics", lambda: {"p99": 3.4})()
            return str(executor(input, config))

        return build_aiops_graph(
            attrs.evolve(effects, executor=calling), checkpointer=saver, tools=recorders
        )

    request, _ = _scenario(TARGETED)
    saver = InMemorySaver()
    first = dct.RunRecorders()
    state = run_aiops_graph(run_with(first, saver), request)
    values = run_with(first, saver).get_state(
        {"configurable": {"thread_id": request.run.run_id}}
    ).values
    journal = dcj.AiOpsJournal.load(
        {"format": dca.AIOPS_JOURNAL_FORMAT, "request": dcj.aiops_request_to_wire(request),
         "entries": [json.loads(text) for text in values["journal"]]}
    )
    carried = [
        [item.invocation_id for item in entry.tool_invocations or ()]
        for entry in journal.entries
        if entry.call.value == "executor"
    ]
    assert carried and all(carried)
    flat = [inv for ids in carried for inv in ids]
    assert flat == [f"inv-{n}" for n in range(1, len(flat) + 1)]
    assert dc.to_json(aiops_state_of(values)) == dc.to_json(state)


@pytest.fixture(scope="module")
def postgres_conninfo() -> Any:
    pytest.importorskip("langgraph.checkpoint.postgres")
    pytest.importorskip("psycopg")
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph_support import postgres_server

    try:
        with postgres_server() as info:
            with PostgresSaver.from_conn_string(info) as saver:
                saver.setup()
            yield info
    except LookupError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("path", AIOPS_EXAMPLES, ids=lambda p: p.stem)
def test_every_aiops_example_runs_through_postgres_like_the_sync_driver(
    path: Path, postgres_conninfo: str
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    request, effects = _scenario(path)
    with PostgresSaver.from_conn_string(postgres_conninfo) as saver:
        state = run_aiops_graph(build_aiops_graph(effects, checkpointer=saver), request)
    assert dc.to_json(state) == dc.to_json(dca.run_aiops(*_scenario(path)))
    assert dc.to_wire(state.result) == golden_result(path.stem)  # the corpus's, not ours
