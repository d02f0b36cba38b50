"""The AIOps graph has every guarantee of the chat graph (one construction serves both).

Async effects, interrupt points, an observer, forged checkpoints refused and
bad input refused before anything runs — each checked on the AIOps graph
against the plain AIOps driver.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from adapter_support import EXAMPLES_DIR, golden_result, load_doc, scenario_of
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_support import edit_entry, forge_checkpoint

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
from diagnosis_core.adapters.langgraph import build_diagnosis_graph
from diagnosis_core.adapters.langgraph_aiops import (
    AIOPS_NODES,
    aiops_journal_of,
    aiops_state_graph,
    aiops_state_of,
    arun_aiops_graph,
    build_aiops_graph,
    resume_aiops_graph,
    run_aiops_graph,
)

TARGETED = EXAMPLES_DIR / "aiops_payload_targeted.json"
KEY = b"host key of the aiops parity tests"


def _scenario(path: Path = TARGETED) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    scenario = dca.load_aiops_scenario(load_doc(path))
    return dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)


def _expected(path: Path = TARGETED) -> str:
    return dc.to_json(dca.run_aiops(*_scenario(path)))


def _thread(request: dca.AiOpsRequest) -> dict[str, Any]:
    return {"configurable": {"thread_id": request.run.run_id}}


@pytest.mark.parametrize(
    "path", sorted(EXAMPLES_DIR.glob("aiops*.json")), ids=lambda p: p.stem
)
def test_async_effects_run_like_the_sync_driver(path: Path) -> None:
    request, effects = _scenario(path)
    graph = build_aiops_graph(dca.AsyncAiOpsEffects.from_sync(effects))
    state = asyncio.run(arun_aiops_graph(graph, request))
    assert dc.to_json(state) == _expected(path)
    assert dc.to_wire(state.result) == golden_result(path.stem)  # the corpus's, not ours


@pytest.mark.parametrize("node", AIOPS_NODES)
def test_an_interrupt_after_each_node_stops_there_and_resumes_to_the_same_result(
    node: str,
) -> None:
    request, effects = _scenario()
    saver = InMemorySaver()
    graph = build_aiops_graph(effects, checkpointer=saver, interrupt_after=[node])
    state = run_aiops_graph(graph, request)
    calls = aiops_journal_of(graph.get_state(_thread(request)).values).entries
    assert not state.finished
    assert calls[-1].call.value == node and calls[-1].state.value == "finished"
    while not state.finished:
        state = resume_aiops_graph(graph, thread_id=request.run.run_id)
    assert dc.to_json(state) == _expected()


def test_an_interrupt_before_the_reporter_stops_before_its_started_entry() -> None:
    request, effects = _scenario()
    graph = build_aiops_graph(
        effects, checkpointer=InMemorySaver(), interrupt_before=["reporter"]
    )
    state = run_aiops_graph(graph, request)
    entries = aiops_journal_of(graph.get_state(_thread(request)).values).entries
    assert not state.finished
    assert "reporter" not in {entry.call.value for entry in entries}
    stops = 1
    while not state.finished:  # the reporter is called twice in this run: two stops
        state = resume_aiops_graph(graph, thread_id=request.run.run_id)
        stops += 1
    assert dc.to_json(state) == _expected()
    assert stops == 1 + state.calls.reporter


class Recording:
    """An AIOps observer that keeps the hooks it heard, by name."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    def __getattr__(self, hook: str) -> Any:
        if hook.startswith("_"):
            raise AttributeError(hook)
        return lambda *args: self.heard.append(hook)


def test_the_observer_hears_every_effect_and_every_trace_event() -> None:
    request, effects = _scenario()
    observer = Recording()
    state = run_aiops_graph(build_aiops_graph(effects, observer=observer), request)
    driver = Recording()
    dca.run_aiops(*_scenario(), observer=driver)
    assert dc.to_json(state) == _expected()
    for hook in ("effect_started", "effect_finished", "event_appended"):
        assert observer.heard.count(hook) == driver.heard.count(hook) > 0, hook
    assert observer.heard.count("event_appended") == len(state.events)


def test_a_forged_checkpoint_is_refused_on_resume() -> None:
    request, effects = _scenario()
    saver = InMemorySaver()
    graph = build_aiops_graph(
        effects, checkpointer=saver, key=KEY, interrupt_after=["executor"]
    )
    run_aiops_graph(graph, request)

    def forged(wire: dict[str, Any]) -> None:
        wire["outcome"] = {"text": json.dumps({"forged": True})}

    forge_checkpoint(saver, request.run.run_id, edit_entry(-1, forged))
    with pytest.raises(dc.JournalError, match=r"entries\[\d+\]"):
        resume_aiops_graph(
            build_aiops_graph(effects, checkpointer=saver, key=KEY),
            thread_id=request.run.run_id,
        )
    values = graph.get_state(_thread(request)).values
    with pytest.raises(dc.JournalError):
        aiops_state_of(values, key=KEY)


def test_bad_input_is_refused_before_anything_runs() -> None:
    request, effects = _scenario()
    chat_request, chat_effects = scenario_of(load_doc(EXAMPLES_DIR / "payment_timeout.json"))
    graph = build_aiops_graph(effects, checkpointer=InMemorySaver())
    with pytest.raises(TypeError, match="request: expected AiOpsRequest"):
        run_aiops_graph(graph, chat_request)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="effects: expected AiOpsEffects"):
        build_aiops_graph(chat_effects)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a diagnosis graph, not a aiops graph"):
        run_aiops_graph(build_diagnosis_graph(chat_effects), request)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"interrupt_after: unknown node\(s\) \['gatekeeper'\]"):
        build_aiops_graph(effects, interrupt_after=["gatekeeper"])
    assert graph.get_state(_thread(request)).values == {}


def test_the_uncompiled_graph_compiles_to_the_same_run() -> None:
    request, effects = _scenario()
    graph = aiops_state_graph(effects).compile()
    values = graph.invoke(
        {"request": json.dumps(dcj.aiops_request_to_wire(request), separators=(",", ":"))},
        {"recursion_limit": 200},
    )
    assert dc.to_json(aiops_state_of(values)) == _expected()
    assert dc.to_wire(aiops_state_of(values).result) == golden_result(TARGETED.stem)
