"""The LangGraph adapter: graph shape, checkpoint resume in a new graph, exact round trips."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, load_doc, reference_state, scenario_of
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

import diagnosis_core as dc
from diagnosis_core.adapters.langgraph import (
    AGENT_NODE,
    GATEKEEPER_NODE,
    START_NODE,
    aresume_diagnosis_graph,
    arun_diagnosis_graph,
    build_diagnosis_graph,
    diagnosis_state_of,
    graph_input,
    graph_run_config,
    recursion_limit_for,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)

REDIS = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
PAYMENT = EXAMPLES_DIR / "payment_timeout.json"


def _text(doc: dict[str, Any], agent: str, index: int = 0) -> str:
    text: str = doc["responses"][agent][index]["text"]
    return text


def test_graph_has_a_start_node_and_one_node_per_effect_kind() -> None:
    _, effects = scenario_of(load_doc(PAYMENT))
    nodes = set(build_diagnosis_graph(effects).get_graph().nodes)
    assert nodes == {"__start__", START_NODE, AGENT_NODE, GATEKEEPER_NODE, "__end__"}


def test_graph_state_is_ascii_wire_json_text() -> None:
    request, effects = scenario_of(load_doc(PAYMENT))
    graph = build_diagnosis_graph(effects)
    values = graph.invoke(graph_input(request), graph_run_config(request.config))
    text = values["state"]
    assert isinstance(text, str) and text.isascii()
    state = dc.from_wire(dc.DiagnosisState, json.loads(text))
    assert state == diagnosis_state_of(values)
    assert dc.to_json(state.result) == dc.to_json(reference_state(load_doc(PAYMENT)).result)


def test_interrupted_run_resumes_from_sqlite_in_a_new_graph_like_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    doc = load_doc(REDIS)  # two executor rounds: two gatekeeper calls, two interrupts
    request, effects = scenario_of(doc)  # the outside world: it outlives every graph
    gatekeeper = effects.gatekeeper
    assert isinstance(gatekeeper, dc.ScriptedGatekeeper)
    database = tmp_path / "checkpoints.sqlite"

    connection = sqlite3.connect(database, check_same_thread=False)
    graph = build_diagnosis_graph(
        effects, checkpointer=SqliteSaver(connection), interrupt_after=[GATEKEEPER_NODE]
    )
    state = run_diagnosis_graph(graph, request, thread_id="thread-1")
    connection.close()
    assert not state.finished and state.calls.gatekeeper == 1 == gatekeeper.calls

    resumes = 0
    while not state.finished:
        resumes += 1
        connection = sqlite3.connect(database, check_same_thread=False)
        fresh = build_diagnosis_graph(
            effects, checkpointer=SqliteSaver(connection), interrupt_after=[GATEKEEPER_NODE]
        )
        state = resume_diagnosis_graph(fresh, thread_id="thread-1")
        connection.close()

    assert resumes == 2
    assert gatekeeper.calls == 2 == state.calls.gatekeeper  # once per round, never replayed
    expected = reference_state(doc)
    assert dc.to_json(state.result) == dc.to_json(expected.result)
    assert dc.to_json(state) == dc.to_json(expected)


def _flaky_planner_effects(doc: dict[str, Any]) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """Scripted effects whose planner first raises with an unpaired surrogate in the message."""
    request, effects = scenario_of(doc)
    planner = effects.planner
    failed: list[bool] = []

    def flaky(input: str, config: dc.RunConfig, /) -> str:
        if not failed:
            failed.append(True)
            raise TimeoutError("bad byte \ud800 from the model")
        return planner(input, config)

    return request, attrs.evolve(effects, planner=flaky)


def test_checkpoints_keep_unpaired_surrogates_and_huge_integers_exactly(tmp_path: Path) -> None:
    doc = load_doc(PAYMENT)
    verifier = json.loads(_text(doc, "verifier"))
    verifier["critical_fact_count"] = 2**70
    doc["responses"]["verifier"] = [{"text": json.dumps(verifier)}]
    request, effects = _flaky_planner_effects(doc)
    database = tmp_path / "checkpoints.sqlite"
    with SqliteSaver.from_conn_string(str(database)) as saver:
        finished = run_diagnosis_graph(build_diagnosis_graph(effects, checkpointer=saver), request)
    assert r"\ud800" in dc.to_json(finished)  # escaped: the JSON text stays valid UTF-8
    assert dc.from_json(dc.DiagnosisState, dc.to_json(finished)) == finished
    assert finished.evaluation is not None
    assert finished.evaluation.output.critical_fact_count == 2**70

    with SqliteSaver.from_conn_string(str(database)) as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        config = graph_run_config(request.config, thread_id=request.run.run_id)
        restored = diagnosis_state_of(graph.get_state(config).values)
    assert restored == finished
    expected = dc.run_diagnosis(*_flaky_planner_effects(doc))
    assert dc.to_json(restored) == dc.to_json(expected)


async def test_async_effects_run_and_resume_with_ainvoke() -> None:
    doc = load_doc(REDIS)
    request, effects = scenario_of(doc)
    async_effects = dc.AsyncEffects.from_sync(effects)
    saver = InMemorySaver()
    graph = build_diagnosis_graph(
        async_effects, checkpointer=saver, interrupt_before=[GATEKEEPER_NODE]
    )
    state = await arun_diagnosis_graph(graph, request, thread_id="t")
    assert isinstance(dc.next_action(state), dc.CallGatekeeper)
    resumed = build_diagnosis_graph(async_effects, checkpointer=saver)
    state = await aresume_diagnosis_graph(resumed, thread_id="t")
    assert dc.to_json(state.result) == dc.to_json(reference_state(doc).result)


def test_the_longest_run_stays_within_the_recursion_limit_from_the_config() -> None:
    """technical_retry_limit 3 with every retry used and an evidence retry."""
    doc = load_doc(REDIS)
    doc["config"] = {"technical_retry_limit": 3}
    retryable = {"error": {"kind": "retryable", "message": "overloaded"}}
    responses = doc["responses"]
    responses["planner"] = [retryable] * 3 + responses["planner"]
    responses["verifier"] = (
        [retryable] * 3 + responses["verifier"][:1] + [retryable] * 3 + responses["verifier"][1:]
    )
    responses["composer"] = [retryable] * 4
    request, effects = scenario_of(doc)
    graph = build_diagnosis_graph(effects)
    config = graph_run_config(request.config)
    steps = list(graph.stream(graph_input(request), config, stream_mode="updates"))
    state = diagnosis_state_of(steps[-1][AGENT_NODE])
    assert state.result.outcome is dc.Outcome.POST_VERIFICATION_FALLBACK
    calls = state.calls
    effects_performed = (
        calls.planner + calls.executor + calls.gatekeeper + calls.verifier + calls.composer
    )
    assert len(steps) == 1 + effects_performed == 21
    assert len(steps) < recursion_limit_for(request.config) == config["recursion_limit"]
    assert request.config.max_node_executions < recursion_limit_for(request.config)
    assert dc.to_json(state.result) == dc.to_json(reference_state(doc).result)


def test_a_node_sent_a_run_that_awaits_another_effect_refuses_it() -> None:
    request, effects = scenario_of(load_doc(PAYMENT))
    graph = build_diagnosis_graph(
        effects, checkpointer=InMemorySaver(), interrupt_after=[START_NODE]
    )
    state = run_diagnosis_graph(graph, request, thread_id="t")
    assert isinstance(dc.next_action(state), dc.InvokeAgent)  # the planner is pending
    config = graph_run_config(request.config, thread_id="t")
    with pytest.raises(dc.MachineError, match="CallGatekeeper node ran while the run awaits"):
        graph.invoke(Command(goto=GATEKEEPER_NODE), config)


def test_graph_input_without_a_request_or_state_is_a_machine_error() -> None:
    _, effects = scenario_of(load_doc(PAYMENT))
    with pytest.raises(dc.MachineError, match="request"):
        build_diagnosis_graph(effects).invoke({})
    with pytest.raises(dc.MachineError, match="no diagnosis state"):
        diagnosis_state_of({})


@pytest.mark.parametrize("text", ['{"request": {"question": 1}}', '{"request": ', "null"])
def test_a_damaged_checkpointed_state_fails_loudly(text: str) -> None:
    with pytest.raises(dc.PayloadError):
        diagnosis_state_of({"state": text})


def test_run_config_keeps_the_callers_settings() -> None:
    config = dc.DiagnosisConfig(technical_retry_limit=3)
    merged = graph_run_config(
        config, thread_id="t", base={"tags": ["x"], "configurable": {"user": "u"}}
    )
    assert merged["tags"] == ["x"]
    assert merged["configurable"] == {"user": "u", "thread_id": "t"}
    assert merged["recursion_limit"] == recursion_limit_for(config) > 25
