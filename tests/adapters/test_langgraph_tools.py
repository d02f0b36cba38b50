"""LangGraph: the tool ledger and the observer cross processes with the journal (spec §13, §14).

A run interrupted after its executor and resumed in a fresh graph — a new
process, for everything the run needs — must hand its gatekeeper the ledger
rebuilt from the checkpoint: with an empty one the package's own reference
gatekeeper returns ``GATEKEEPER_REJECTED`` on honest evidence.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from tools_support import reference_tooled_state, tooled_effects

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct
from diagnosis_core.adapters.langgraph import (
    EXECUTOR_NODE,
    arun_diagnosis_graph,
    build_diagnosis_graph,
    diagnosis_journal_of,
    graph_run_config,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)


class Crash(BaseException):
    """A process dying mid-effect."""


def _journal(graph: Any, thread: str) -> dcj.Journal:
    config = graph_run_config(dc.DiagnosisConfig(), thread_id=thread)
    return diagnosis_journal_of(graph.get_state(config).values)


def test_the_executor_entry_carries_the_tool_calls_of_its_call() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    graph = build_diagnosis_graph(effects, checkpointer=InMemorySaver(), tools=recorders)
    state = run_diagnosis_graph(graph, request)
    assert dc.to_json(state) == dc.to_json(reference_tooled_state())
    assert state.result.outcome is dc.Outcome.ANSWERED
    journal = _journal(graph, request.run.run_id)
    carried = [(e.call.value, e.tool_invocations) for e in journal.entries]
    executor = [items for call, items in carried if call == "executor"]
    assert [[i.invocation_id for i in items or ()] for items in executor] == [["inv-1", "inv-2"]]
    assert all(items is None for call, items in carried if call != "executor")
    assert [r["invocation_id"] for r in dcj.journal_tool_records(journal)] == ["inv-1", "inv-2"]


def test_a_gatekeeper_resumed_in_a_fresh_graph_reads_the_ledger_from_the_checkpoint(
    tmp_path: Path,
) -> None:
    database = tmp_path / "checkpoints.sqlite"
    tool_log = tmp_path / "tools.log"
    first = dct.RunRecorders()
    request, effects = tooled_effects(first, tool_log=tool_log)
    connection = sqlite3.connect(database, check_same_thread=False)
    graph = build_diagnosis_graph(
        effects, checkpointer=SqliteSaver(connection), interrupt_after=[EXECUTOR_NODE],
        tools=first,
    )
    state = run_diagnosis_graph(graph, request)
    connection.close()
    assert not state.finished and state.calls.executor == 1 and state.calls.gatekeeper == 0

    # Everything in memory is gone: new recorders, new effects, new graph, new connection.
    fresh = dct.RunRecorders()
    _, fresh_effects = tooled_effects(fresh, tool_log=tool_log)
    connection = sqlite3.connect(database, check_same_thread=False)
    resumer = build_diagnosis_graph(
        fresh_effects, checkpointer=SqliteSaver(connection), tools=fresh
    )
    state = resume_diagnosis_graph(resumer, thread_id=request.run.run_id)
    connection.close()
    assert state.result.reason_code is not dc.ReasonCode.GATEKEEPER_REJECTED
    assert state.result.outcome is dc.Outcome.ANSWERED
    assert dc.to_json(state) == dc.to_json(reference_tooled_state())
    assert [r.invocation_id for r in fresh.recorder(request.run.run_id).records()] == [
        "inv-1", "inv-2",
    ]
    assert tool_log.read_text().splitlines() == ["query_logs gateway", "query_logs pay-svc"]


def test_a_resent_gatekeeper_after_a_crash_reads_the_ledger_from_the_checkpoint() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)

    def dying(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        raise Crash

    saver = InMemorySaver()
    graph = build_diagnosis_graph(
        attrs.evolve(effects, gatekeeper=dying), checkpointer=saver, tools=recorders
    )
    with pytest.raises(Crash):
        run_diagnosis_graph(graph, request)
    fresh = dct.RunRecorders()
    _, fresh_effects = tooled_effects(fresh)
    resumer = build_diagnosis_graph(
        fresh_effects, checkpointer=saver, tools=fresh, resend_gatekeeper=True
    )
    state = resume_diagnosis_graph(resumer, thread_id=request.run.run_id)
    assert state.result.outcome is dc.Outcome.ANSWERED
    assert dc.to_json(state) == dc.to_json(reference_tooled_state())


def test_without_tools_the_executor_fails_closed_instead_of_citing_an_empty_ledger() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    state = run_diagnosis_graph(build_diagnosis_graph(effects), request)
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED


class Recording:
    """An observer that keeps every hook call (kind and wire form)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def effect_started(self, action: object, /) -> None:
        self.calls.append(("effect_started", json.dumps(dc.to_wire(action), sort_keys=True)))

    def effect_finished(self, action: object, result: object, /) -> None:
        # A gatekeeper's result may hold host objects: named by their type, so the hook
        # records every call instead of raising (and being skipped) on one.
        wire = json.dumps(dc.to_wire(result), sort_keys=True, default=lambda o: type(o).__name__)
        self.calls.append(("effect_finished", wire))

    def event_appended(self, event: object, /) -> None:
        self.calls.append(("event_appended", json.dumps(dc.to_wire(event), sort_keys=True)))


def _driver_calls() -> list[tuple[str, str]]:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    observer = Recording()
    dc.run_diagnosis(
        request, effects, tools=recorders(request.run.run_id, []), observer=observer,
        sink=dcj.ListJournalSink(),
    )
    # The order spec §14 gives, stated here rather than read from the driver: each
    # effect's start and finish, then the trace events it appended.
    assert _skeleton(observer.calls) == [
        ("effect_started", "planner"), ("effect_finished",), ("event_appended", "planner"),
        ("effect_started", "executor"), ("effect_finished",), ("event_appended", "executor"),
        ("effect_started", "gatekeeper"), ("effect_finished",),
        ("event_appended", "gatekeeper"), ("event_appended", "verified_input"),
        ("effect_started", "verifier"), ("effect_finished",), ("event_appended", "verifier"),
        ("effect_started", "composer"), ("effect_finished",), ("event_appended", "composer"),
    ]
    return observer.calls


def _skeleton(calls: list[tuple[str, str]]) -> list[tuple[str, ...]]:
    """Each hook call as its kind and what it is about (the effect, the event's node)."""
    skeleton: list[tuple[str, ...]] = []
    for kind, wire in calls:
        data = json.loads(wire)
        if kind == "effect_started":
            skeleton.append((kind, data.get("agent", "gatekeeper")))
        elif kind == "event_appended":
            skeleton.append((kind, data["node"]))
        else:
            skeleton.append((kind,))
    return skeleton


def test_the_observer_hears_what_the_sync_driver_tells_it() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    observer = Recording()
    graph = build_diagnosis_graph(
        effects, checkpointer=InMemorySaver(), tools=recorders, observer=observer
    )
    run_diagnosis_graph(graph, request)
    assert observer.calls == _driver_calls()


async def test_the_observer_hears_the_same_from_async_effects() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    plain = effects

    async def executor(input: str, config: dc.RunConfig, /) -> str:
        return plain.executor(input, config)

    async def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        return plain.gatekeeper(run_id, output)

    def lift(name: str) -> Any:
        inner = getattr(plain, name)

        async def call(input: str, config: dc.RunConfig, /) -> str:
            return str(inner(input, config))

        return call

    async_effects = dc.AsyncEffects(
        planner=lift("planner"), executor=executor, verifier=lift("verifier"),
        composer=lift("composer"), gatekeeper=gatekeeper,
    )
    observer = Recording()
    graph = build_diagnosis_graph(async_effects, tools=recorders, observer=observer)
    state = await arun_diagnosis_graph(graph, request)
    assert state.result.outcome is dc.Outcome.ANSWERED
    assert observer.calls == _driver_calls()


def test_a_resumed_graph_announces_only_what_it_appends() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    saver = InMemorySaver()
    before, after = Recording(), Recording()
    graph = build_diagnosis_graph(
        effects, checkpointer=saver, tools=recorders, observer=before,
        interrupt_after=[EXECUTOR_NODE],
    )
    run_diagnosis_graph(graph, request)
    fresh = dct.RunRecorders()
    _, fresh_effects = tooled_effects(fresh)
    resumer = build_diagnosis_graph(fresh_effects, checkpointer=saver, tools=fresh, observer=after)
    resume_diagnosis_graph(resumer, thread_id=request.run.run_id)
    assert before.calls + after.calls == _driver_calls()


def test_the_tools_snippet_of_the_embedding_page_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    root = Path(__file__).resolve().parent.parent.parent
    page = (root / "docs" / "embedding.md").read_text(encoding="utf-8")
    section = page[page.index("#### Tools and observers across processes") :
                   page.index("### Temporal")]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    monkeypatch.chdir(root)
    exec(compile(block, "embedding.md", "exec"), {})  # the page's own code
    assert capsys.readouterr().out == "PASS\n"
