"""Every engine adapter refuses the drivers' wiring and request mistakes at its door.

The drivers refuse, before any effect runs or anything is written, a missing,
``None``, non-callable or wrong-arity effect and a gatekeeper built over
another tool recorder than ``tools=`` (``TypeError``), a question over
``max_question_chars`` and a lone surrogate anywhere in the request
(``PayloadError``). The adapters (LangGraph, Temporal, DBOS; both workflows)
apply the same check — the one the drivers use, published as
``check_diagnosis_effects`` / ``check_diagnosis_request`` and their AIOps
twins — in their entry functions, before the engine is reached: so these
tests need no server. A Temporal client or a DBOS that is never used stands
for the engine: were the check later, the entry function would fail another
way (no client, DBOS not launched) or run. The checkpointer of a LangGraph
graph is real and is checked to hold nothing; DBOS is launched on a real
SQLite system database for the runs, which must record no workflow.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("temporalio")
pytest.importorskip("dbos")

from dbos import DBOS
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

import diagnosis_core as dc
import diagnosis_core.adapters.dbos as dbos_adapter
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct
from diagnosis_core.adapters import langgraph as lg
from diagnosis_core.adapters import langgraph_aiops as lga
from diagnosis_core.adapters import temporal as tp
from diagnosis_core.adapters import temporal_aiops as tpa

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
LONE = "\ud800"
AGENT = r"\(input: str, config: RunConfig\) -> str"


# --- effects that count their calls ------------------------------------------------------


def chat_setup() -> tuple[dc.DiagnosisRequest, dc.Effects, list[str]]:
    scenario = dc.load_scenario(
        json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
    )
    inner = dc.scenario_effects(scenario)
    calls: list[str] = []

    def counted(name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            calls.append(name)
            invoker: dc.AgentInvoker = getattr(inner, name)
            return invoker(input, config)

        return call

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        calls.append("gatekeeper")
        return inner.gatekeeper(run_id, output)

    effects = dc.Effects(
        planner=counted("planner"), executor=counted("executor"),
        verifier=counted("verifier"), composer=counted("composer"), gatekeeper=gatekeeper,
    )
    return dc.scenario_request(scenario), effects, calls


def aiops_setup() -> tuple[dca.AiOpsRequest, dca.AiOpsEffects, list[str]]:
    scenario = dca.load_aiops_scenario(
        json.loads((EXAMPLES / "aiops_payload_targeted.json").read_text(encoding="utf-8"))
    )
    inner = dca.aiops_scenario_effects(scenario)
    calls: list[str] = []

    def counted(name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            calls.append(name)
            invoker: dc.AgentInvoker = getattr(inner, name)
            return invoker(input, config)

        return call

    effects = dca.AiOpsEffects(
        supervisor=counted("supervisor"), planner=counted("planner"),
        executor=counted("executor"), reporter=counted("reporter"),
    )
    return dca.aiops_scenario_request(scenario), effects, calls


def _changed(effects: Any, name: str, value: object) -> Any:
    """``effects`` with one field changed after construction (past the class's validators)."""
    copy = attrs.evolve(effects)
    object.__setattr__(copy, name, value)
    return copy


def _short(input: str) -> str:
    return input


async def _ashort(input: str) -> str:
    return input


# (name, field, value, message) — each a mistake the drivers refuse.
EFFECT_MISTAKES: list[tuple[str, str, object, str]] = [
    ("wrong arity", "planner", _short, r"\.planner: expected a callable .*cannot be called "
     r"with 2 positional arguments"),
    ("None", "composer", None, r"\.composer: expected a callable .*got None"),
    ("non-callable", "gatekeeper", {"status": "pass"}, r"\.gatekeeper: expected a callable "
     r"\(run_id: str, executor_output: ExecutorEvidence\).*got dict \(not callable\)"),
]
AIOPS_MISTAKES: list[tuple[str, str, object, str]] = [
    ("wrong arity", "supervisor", _short, r"\.supervisor: expected a callable \(input: str, "
     r"config: RunConfig\) -> (Awaitable\[)?str\]?, got _short\(input\), which cannot be "
     r"called with 2"),
    ("None", "reporter", None, r"\.reporter: expected a callable .*got None"),
    ("non-callable", "executor", "executor", r"\.executor: expected a callable .*got str "
     r"\(not callable\)"),
]


def chat_effect_entries(tmp_path: Path) -> list[tuple[str, Callable[[Any, Any], object]]]:
    """Every chat entry point that takes effects: ``(where, call(effects, tools))``.

    ``where`` is the name a refusal gives: the entry function, or the activities
    class a Temporal worker is built with.
    """
    connection = sqlite3.connect(tmp_path / "graph.sqlite", check_same_thread=False)
    saver = SqliteSaver(connection)
    return [
        ("build_diagnosis_graph", lambda effects, tools: lg.build_diagnosis_graph(
            effects, checkpointer=saver, tools=tools)),
        ("diagnosis_state_graph", lambda effects, tools: lg.diagnosis_state_graph(
            effects, tools=tools)),
        ("DiagnosisActivities", lambda effects, tools: tp.DiagnosisActivities(
            effects, tools=tools)),
        # No client: the check comes before the worker is built (by the activities).
        ("DiagnosisActivities", lambda effects, tools: tp.create_diagnosis_worker(
            None, effects, task_queue="door", tools=tools)),  # type: ignore[arg-type]
        ("configure_diagnosis_dbos", lambda effects, tools: dbos_adapter.configure_diagnosis_dbos(
            effects, tools=tools)),
    ]


def aiops_effect_entries() -> list[tuple[str, Callable[[Any], object]]]:
    _, chat_effects, _ = chat_setup()
    return [
        ("build_aiops_graph", lambda effects: lga.build_aiops_graph(
            effects, checkpointer=InMemorySaver())),
        ("aiops_state_graph", lambda effects: lga.aiops_state_graph(effects)),
        ("AiOpsActivities", lambda effects: tpa.AiOpsActivities(effects)),
        ("AiOpsActivities", lambda effects: tpa.create_aiops_worker(
            None, effects, task_queue="door")),  # type: ignore[arg-type]
        ("AiOpsActivities", lambda effects: tp.create_diagnosis_worker(
            None, chat_effects, task_queue="door", aiops_effects=effects)),  # type: ignore[arg-type]
        ("configure_aiops_dbos", lambda effects: dbos_adapter.configure_aiops_dbos(effects)),
    ]


@pytest.fixture
def dbos_hosts() -> Iterator[tuple[object, object]]:
    """The DBOS adapter's configuration before the test (restored after it)."""
    chat, aiops = dbos_adapter._CHAT.host, dbos_adapter._AIOPS.host
    yield chat, aiops
    dbos_adapter._CHAT.host, dbos_adapter._AIOPS.host = chat, aiops


def unchanged(hosts: tuple[object, object]) -> bool:
    """Whether the DBOS adapter's configuration is still ``hosts`` (a refusal changes nothing)."""
    return dbos_adapter._CHAT.host is hosts[0] and dbos_adapter._AIOPS.host is hosts[1]


# --- effects -----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", range(5))
@pytest.mark.parametrize(("mistake", "field", "value", "message"), EFFECT_MISTAKES)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_chat_adapter_refuses_a_broken_effect_before_anything_runs(
    entry: int, mistake: str, field: str, value: object, message: str, kind: str,
    tmp_path: Path, dbos_hosts: tuple[object, object],
) -> None:
    _, effects, calls = chat_setup()
    given: Any = effects if kind == "sync" else dc.AsyncEffects.from_sync(effects)
    if mistake == "wrong arity" and kind == "async":
        value = _ashort
    _, call = chat_effect_entries(tmp_path)[entry]
    owner = "Effects" if kind == "sync" else "AsyncEffects"
    with pytest.raises(TypeError, match=rf"^{owner}{message}"):
        call(_changed(given, field, value), None)
    assert calls == [] and unchanged(dbos_hosts)


@pytest.mark.parametrize("entry", range(5))
def test_a_chat_adapter_refuses_a_gatekeeper_over_other_recorders_than_tools(
    entry: int, tmp_path: Path, dbos_hosts: tuple[object, object]
) -> None:
    _, effects, calls = chat_setup()
    tools = dct.RunRecorders()
    name, call = chat_effect_entries(tmp_path)[entry]
    other = dct.RunRecorders()
    foreign = attrs.evolve(effects, gatekeeper=other.gatekeeper())
    with pytest.raises(TypeError, match=rf"^{name}: the gatekeeper was built over "
                       rf"<RunRecorders at {id(other):#x}> .* tools= is "
                       rf"<RunRecorders at {id(tools):#x}>"):
        call(foreign, tools)
    single = dct.ToolRecorder()
    one = attrs.evolve(effects, gatekeeper=single.gatekeeper())
    with pytest.raises(TypeError, match=rf"^{name}: the gatekeeper reads one ToolRecorder "
                       rf"\(<ToolRecorder at {id(single):#x}>\) but tools= is "
                       rf"<RunRecorders at {id(tools):#x}>"):
        call(dc.AsyncEffects.from_sync(one), tools)
    assert calls == [] and unchanged(dbos_hosts)
    if name != "DiagnosisActivities" or entry == 2:  # a worker needs a client; the rest build
        call(attrs.evolve(effects, gatekeeper=tools.gatekeeper()), tools)  # its own: accepted


@pytest.mark.parametrize("entry", range(5))
def test_a_chat_adapter_refuses_effects_of_neither_kind(
    entry: int, tmp_path: Path, dbos_hosts: tuple[object, object]
) -> None:
    _, aiops_effects, _ = aiops_setup()
    name, call = chat_effect_entries(tmp_path)[entry]
    with pytest.raises(TypeError, match=rf"^{name}: effects: expected Effects or AsyncEffects, "
                       r"got AiOpsEffects$"):
        call(aiops_effects, None)
    assert unchanged(dbos_hosts)


@pytest.mark.parametrize("entry", range(6))
@pytest.mark.parametrize(("mistake", "field", "value", "message"), AIOPS_MISTAKES)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_aiops_adapter_refuses_a_broken_effect_before_anything_runs(
    entry: int, mistake: str, field: str, value: object, message: str, kind: str,
    dbos_hosts: tuple[object, object],
) -> None:
    _, effects, calls = aiops_setup()
    given: Any = effects if kind == "sync" else dca.AsyncAiOpsEffects.from_sync(effects)
    if mistake == "wrong arity" and kind == "async":
        value, message = _ashort, message.replace("_short", "_ashort")
    _, call = aiops_effect_entries()[entry]
    owner = "AiOpsEffects" if kind == "sync" else "AsyncAiOpsEffects"
    with pytest.raises(TypeError, match=rf"^{owner}{message}"):
        call(_changed(given, field, value))
    assert calls == [] and unchanged(dbos_hosts)


def test_effects_of_the_wrong_kind_inside_are_refused_by_every_adapter(
    tmp_path: Path, dbos_hosts: tuple[object, object]
) -> None:
    """A sync agent among async effects: the driver's kind check, at each adapter's door."""
    _, effects, calls = chat_setup()
    mixed = _changed(dc.AsyncEffects.from_sync(effects), "verifier", effects.verifier)
    for name, call in chat_effect_entries(tmp_path):
        with pytest.raises(TypeError, match=rf"^AsyncEffects\.verifier is a synchronous "
                           rf"callable; {name} needs async def effects"):
            call(mixed, None)
    assert calls == [] and unchanged(dbos_hosts)


# --- requests ----------------------------------------------------------------------------


def _with_run(request: Any, **changes: Any) -> Any:
    return attrs.evolve(request, run=attrs.evolve(request.run, **changes))


def chat_bad_requests(request: dc.DiagnosisRequest) -> list[tuple[str, str, dc.DiagnosisRequest]]:
    """``(field, message, request)``: each one the drivers refuse."""
    lone = "holds a lone surrogate code point"
    return [
        ("request.question", "100001 characters, over the limit of 100000",
         attrs.evolve(request, question="x" * 100_001)),
        ("request.question", lone, attrs.evolve(request, question=f"why{LONE}?")),
        ("request.run.run_id", lone, _with_run(request, run_id=f"run-{LONE}")),
        ("request.run.session_id", lone, _with_run(request, session_id=f"s{LONE}")),
        ("request.run.metadata.tenant", lone, _with_run(request, metadata={"tenant": LONE})),
        ("request.run.metadata", lone, _with_run(request, metadata={f"k{LONE}": "v"})),
    ]


def aiops_bad_requests(request: dca.AiOpsRequest) -> list[tuple[str, str, dca.AiOpsRequest]]:
    lone = "holds a lone surrogate code point"
    alert = attrs.evolve(request.alerts[0], service=f"api{LONE}")
    return [
        ("request.run.run_id", lone, _with_run(request, run_id=f"run-{LONE}")),
        ("request.run.session_id", lone, _with_run(request, session_id=f"s{LONE}")),
        ("request.run.metadata.tenant", lone, _with_run(request, metadata={"tenant": LONE})),
        ("request.alerts[0].service", lone, attrs.evolve(request, alerts=(alert,))),
    ]


def _checkpoints(saver: Any) -> list[Any]:
    return list(saver.list(None))


@pytest.mark.parametrize("index", range(6))
def test_the_langgraph_run_helpers_refuse_a_bad_request_before_any_checkpoint(
    index: int, tmp_path: Path
) -> None:
    request, effects, calls = chat_setup()
    field, message, bad = chat_bad_requests(request)[index]
    with sqlite3.connect(tmp_path / "graph.sqlite", check_same_thread=False) as connection:
        saver = SqliteSaver(connection)
        graph = lg.build_diagnosis_graph(effects, checkpointer=saver)
        with pytest.raises(dc.PayloadError, match=message) as raised:
            lg.run_diagnosis_graph(graph, bad)
        assert raised.value.path.startswith(field)
        assert "run_diagnosis_graph" in str(raised.value) or "over the limit" in str(raised.value)
        assert _checkpoints(saver) == []
    memory = InMemorySaver()
    agraph = lg.build_diagnosis_graph(dc.AsyncEffects.from_sync(effects), checkpointer=memory)
    with pytest.raises(dc.PayloadError, match=message):
        asyncio.run(lg.arun_diagnosis_graph(agraph, bad))
    assert _checkpoints(memory) == [] and calls == []


def test_the_langgraph_question_limit_is_the_run_helpers_option(tmp_path: Path) -> None:
    request, effects, calls = chat_setup()
    memory = InMemorySaver()
    graph = lg.build_diagnosis_graph(effects, checkpointer=memory)
    short = attrs.evolve(request, question="x" * 11)
    with pytest.raises(dc.PayloadError, match=r"^request\.question: 11 characters, over the "
                       r"limit of 10 \(run_diagnosis_graph: max_question_chars=\)$"):
        lg.run_diagnosis_graph(graph, short, max_question_chars=10)
    with pytest.raises(dc.RunOptionsError, match="max_question_chars: expected a positive int"):
        lg.run_diagnosis_graph(graph, short, max_question_chars=0)
    assert _checkpoints(memory) == [] and calls == []
    state = lg.run_diagnosis_graph(graph, short, max_question_chars=11)  # at the limit: runs
    assert state.finished and calls and _checkpoints(memory)


@pytest.mark.parametrize("index", range(4))
def test_the_aiops_graph_run_helpers_refuse_a_bad_request_before_any_checkpoint(
    index: int,
) -> None:
    request, effects, calls = aiops_setup()
    field, message, bad = aiops_bad_requests(request)[index]
    memory = InMemorySaver()
    graph = lga.build_aiops_graph(effects, checkpointer=memory)
    with pytest.raises(dc.PayloadError, match=message) as raised:
        lga.run_aiops_graph(graph, bad)
    assert raised.value.path.startswith(field)
    agraph = lga.build_aiops_graph(dca.AsyncAiOpsEffects.from_sync(effects), checkpointer=memory)
    with pytest.raises(dc.PayloadError, match=message):
        asyncio.run(lga.arun_aiops_graph(agraph, bad))
    assert _checkpoints(memory) == [] and calls == []


@pytest.mark.parametrize("index", range(6))
def test_the_temporal_client_refuses_a_bad_request_before_the_server_is_reached(
    index: int,
) -> None:
    """No client at all: a start that got past the check would fail on it, not on the request."""
    request, _, _ = chat_setup()
    field, message, bad = chat_bad_requests(request)[index]
    for start in (tp.start_diagnosis_workflow, tp.execute_diagnosis):
        with pytest.raises(dc.PayloadError, match=message) as raised:
            asyncio.run(start(None, bad, task_queue="door"))  # type: ignore[arg-type]
        assert raised.value.path.startswith(field)
    with pytest.raises(dc.PayloadError, match=message):
        tp.DiagnosisWorkflowInput.of(bad)
    with pytest.raises(dc.PayloadError, match=message):
        tp.DiagnosisWorkflowInput.of(dc.to_wire(bad))  # the wire form is checked alike
    short = attrs.evolve(request, question="x" * 11)
    with pytest.raises(dc.PayloadError, match=r"limit of 10 \(start_diagnosis_workflow"):
        asyncio.run(tp.start_diagnosis_workflow(
            None, short, task_queue="door", max_question_chars=10))  # type: ignore[arg-type]


@pytest.mark.parametrize("index", range(4))
def test_the_temporal_aiops_client_refuses_a_bad_request_before_the_server_is_reached(
    index: int,
) -> None:
    request, _, _ = aiops_setup()
    field, message, bad = aiops_bad_requests(request)[index]
    for start in (tpa.start_aiops_workflow, tpa.execute_aiops):
        with pytest.raises(dc.PayloadError, match=message) as raised:
            asyncio.run(start(None, bad, task_queue="door"))  # type: ignore[arg-type]
        assert raised.value.path.startswith(field)


@pytest.fixture
def launched_dbos(tmp_path: Path) -> Iterator[None]:
    """DBOS launched on a fresh SQLite system database, configured for both workflows."""
    _, chat_effects, _ = chat_setup()
    _, aiops_effects, _ = aiops_setup()
    dbos_adapter.configure_diagnosis_dbos(chat_effects)
    dbos_adapter.configure_aiops_dbos(aiops_effects)
    DBOS(config={"name": "diagnosis-door", "system_database_url":
                 f"sqlite:///{tmp_path / 'dbos.sqlite'}"})
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy()


def test_dbos_refuses_a_bad_request_before_a_workflow_is_recorded(launched_dbos: None) -> None:
    chat_request, _, _ = chat_setup()
    aiops_request, _, _ = aiops_setup()
    for field, message, bad in chat_bad_requests(chat_request):
        for start in (dbos_adapter.start_diagnosis_dbos, dbos_adapter.run_diagnosis_dbos):
            with pytest.raises(dc.PayloadError, match=message) as raised:
                start(bad)
            assert raised.value.path.startswith(field)
    for field, message, bad_aiops in aiops_bad_requests(aiops_request):
        for start_aiops in (dbos_adapter.start_aiops_dbos, dbos_adapter.run_aiops_dbos):
            with pytest.raises(dc.PayloadError, match=message) as raised:
                start_aiops(bad_aiops)
            assert raised.value.path.startswith(field)
    short = attrs.evolve(chat_request, question="x" * 11)
    with pytest.raises(dc.PayloadError, match=r"limit of 10 \(run_diagnosis_dbos"):
        dbos_adapter.run_diagnosis_dbos(short, max_question_chars=10)
    assert DBOS.list_workflows() == []
    state = dbos_adapter.run_diagnosis_dbos(short, max_question_chars=11)  # at the limit: runs
    assert state.finished and len(DBOS.list_workflows()) == 1


# --- the check is the drivers' own -------------------------------------------------------


def test_the_public_checks_refuse_what_the_drivers_refuse() -> None:
    request, effects, calls = chat_setup()
    broken = _changed(effects, "composer", None)
    with pytest.raises(TypeError, match=r"^Effects\.composer: expected a callable") as driver:
        dc.run_diagnosis(request, broken)
    with pytest.raises(TypeError, match=r"^Effects\.composer: expected a callable") as check:
        dcm.check_diagnosis_effects(broken, where="host")
    assert str(check.value) == str(driver.value)
    for _, _, bad in chat_bad_requests(request):
        with pytest.raises(dc.PayloadError) as by_driver:
            dc.run_diagnosis(bad, effects)
        with pytest.raises(dc.PayloadError) as by_check:
            dcm.check_diagnosis_request(bad, where="run_diagnosis")
        assert str(by_check.value) == str(by_driver.value)
    assert dcm.DEFAULT_MAX_QUESTION_CHARS == 100_000 == dc.RunOptions().max_question_chars
    aiops_request, aiops_effects, aiops_calls = aiops_setup()
    for _, _, bad_aiops in aiops_bad_requests(aiops_request):
        with pytest.raises(dc.PayloadError) as by_aiops_driver:
            dca.run_aiops(bad_aiops, aiops_effects)
        with pytest.raises(dc.PayloadError) as by_aiops_check:
            dcm.check_aiops_request(bad_aiops, where="run_aiops")
        assert str(by_aiops_check.value) == str(by_aiops_driver.value)
    dcm.check_diagnosis_effects(effects, where="host")  # sound ones pass
    dcm.check_diagnosis_request(request, where="host")
    dcm.check_aiops_effects(aiops_effects, where="host")
    dcm.check_aiops_request(aiops_request, where="host")
    assert calls == [] and aiops_calls == []
