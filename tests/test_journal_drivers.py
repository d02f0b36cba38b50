"""The drivers write, resume and stream a run journal (spec §12, §14)."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from adapters.adapter_support import golden_result

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core import JournalError, Outcome, ReasonCode
from diagnosis_core.journal import EntryState, JournalCall
from diagnosis_core.machine import AgentName

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = b"driver-test-key"


def chat_examples() -> list[Path]:
    return [
        path
        for path in sorted(EXAMPLES.glob("*.json"))
        if json.loads(path.read_text(encoding="utf-8")).get("workflow") != "aiops"
    ]


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def setup(document: dict[str, Any]) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(document)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def result_json(state: dc.DiagnosisState) -> str:
    return dcp.canonical_json(dc.to_wire(state.result))


class Counting:
    """Effects that count every call per effect name (and can check the sink first)."""

    def __init__(
        self, effects: dc.Effects, before: Callable[[str], None] | None = None
    ) -> None:
        self.calls: dict[str, int] = {name: 0 for name in (*(a.value for a in AgentName), "gk")}
        self._effects = effects
        self._before = before

    def _agent(self, name: AgentName) -> dc.AgentInvoker:
        inner = self._effects.agent(name)

        def call(input: str, config: dc.RunConfig, /) -> str:
            if self._before is not None:
                self._before(name.value)
            self.calls[name.value] += 1
            return inner(input, config)

        return call

    def _gatekeeper(self, run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
        if self._before is not None:
            self._before("gatekeeper")
        self.calls["gk"] += 1
        return self._effects.gatekeeper(run_id, executor_output)

    def effects(self) -> dc.Effects:
        return dc.Effects(
            planner=self._agent(AgentName.PLANNER),
            executor=self._agent(AgentName.EXECUTOR),
            verifier=self._agent(AgentName.VERIFIER),
            composer=self._agent(AgentName.COMPOSER),
            gatekeeper=self._gatekeeper,
        )


def started(entry: dcj.JournalEntry) -> dcj.JournalEntry:
    return attrs.evolve(
        entry, state=EntryState.STARTED, outcome=None, tool_invocations=None, mac=None
    )


# --- writing ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", chat_examples(), ids=lambda path: path.stem)
@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_every_example_journal_folds_to_the_live_state_and_replays_byte_for_byte(
    path: Path, key: bytes | None
) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    expected = dcp.canonical_json(dc.replay(document))
    request, effects = setup(document)
    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(request, effects, sink=sink, key=key)
    journal = dcj.Journal.from_json(dcj.journal_to_json(sink.journal(request)))
    assert result_json(state) == expected
    assert json.loads(expected) == golden_result(path.stem)  # the replay is the corpus's
    assert dcj.fold_journal(journal, key=key) == state
    assert dcp.canonical_json(dcj.replay_journal(journal, key=key)) == expected

    request, effects = setup(document)
    async_sink = dcj.ListJournalSink()
    async_state = asyncio.run(
        dc.arun_diagnosis(request, dc.AsyncEffects.from_sync(effects), sink=async_sink, key=key)
    )
    assert async_state == state
    assert async_sink.journal(request) == sink.journal(request)


def test_the_sink_has_the_started_entry_before_the_effect_runs() -> None:
    request, plain = setup(load("redis_latency_evidence_retry.json"))
    sink = dcj.ListJournalSink()
    seen: list[str] = []

    def before(call: str) -> None:
        last = sink.entries[-1]
        assert last.state is EntryState.STARTED
        assert last.call.value == call
        seen.append(call)

    counting = Counting(plain, before)
    state = dc.run_diagnosis(request, counting.effects(), sink=sink)
    assert seen == [entry.call.value for entry in sink.entries]
    assert all(entry.state is EntryState.FINISHED for entry in sink.entries)
    assert dcj.fold_journal(sink.journal(request)) == state


def test_the_machine_is_fed_the_recorded_fact() -> None:
    # An agent returning something other than text, a gatekeeper returning a
    # value that is not JSON: the journal records a fact, and the live state is
    # the fold of that fact (never the raw object).
    request, plain = setup(load("payment_timeout.json"))

    def bad_planner(input: str, config: dc.RunConfig, /) -> str:
        return 42  # type: ignore[return-value]

    sink = dcj.ListJournalSink()
    effects = attrs.evolve(plain, planner=bad_planner)
    state = dc.run_diagnosis(request, effects, sink=sink)
    assert dcj.fold_journal(sink.journal(request)) == state
    assert state.result.reason_code is ReasonCode.PLANNER_FAILED

    request, plain = setup(load("payment_timeout.json"))
    sink = dcj.ListJournalSink()
    effects = attrs.evolve(plain, gatekeeper=lambda run_id, output: {"status": object()})
    state = dc.run_diagnosis(request, effects, sink=sink)
    assert dcj.fold_journal(sink.journal(request)) == state


def test_a_sink_that_raises_stops_the_run_before_the_effect() -> None:
    request, plain = setup(load("payment_timeout.json"))
    counting = Counting(plain)

    class Broken:
        def write(self, entry: dcj.JournalEntry, /) -> None:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        dc.run_diagnosis(request, counting.effects(), sink=Broken())
    assert sum(counting.calls.values()) == 0


def test_the_executor_entry_carries_the_tools_recorded_during_its_call() -> None:
    request, plain = setup(load("payment_timeout.json"))
    tools = dct.ToolRecorder()
    query = tools.wrap("query_logs", lambda service: {"lines": [f"{service} timeout"]})
    tools.wrap("before", lambda: 1)()  # recorded before the run: in no entry

    def executor(input: str, config: dc.RunConfig, /) -> str:
        query("payment")
        query("db")
        return plain.executor(input, config)

    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, attrs.evolve(plain, executor=executor), sink=sink, tools=tools)
    journal = dcj.Journal.from_json(dcj.journal_to_json(sink.journal(request)))
    carried = {entry.call: entry.tool_invocations for entry in journal.entries}
    executor_tools = carried.pop(JournalCall.EXECUTOR)
    assert executor_tools is not None
    assert [item.invocation_id for item in executor_tools] == ["inv-2", "inv-3"]
    assert set(carried.values()) == {None}
    records = dcj.journal_tool_records(journal)
    assert records == [record.to_record() for record in tools.records()][1:]
    rebuilt = dct.ToolRecorder.from_records(records)
    assert rebuilt.records() == tools.records()[1:]


# --- resuming -------------------------------------------------------------------------------


def recorded(document: dict[str, Any], key: bytes | None = None) -> dcj.Journal:
    request, effects = setup(document)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink, key=key)
    return sink.journal(request)


def interrupted_at(
    journal: dcj.Journal, call: JournalCall, key: bytes | None = None
) -> dcj.Journal:
    index = next(i for i, entry in enumerate(journal.entries) if entry.call is call)
    cut = dcj.Journal(journal.request, (*journal.entries[:index], started(journal.entries[index])))
    return dcj.sign_journal(cut, key) if key is not None else cut


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
@pytest.mark.parametrize("call", [JournalCall.PLANNER, JournalCall.VERIFIER, JournalCall.COMPOSER])
def test_an_interrupted_llm_call_is_re_sent_as_the_same_attempt(
    call: JournalCall, key: bytes | None
) -> None:
    document = load("payment_timeout.json")
    full = recorded(document, key)
    cut = interrupted_at(full, call, key)
    request, plain = setup(document)
    counting = Counting(plain)
    sink = dcj.ListJournalSink(cut.entries)
    # The scripted doubles restart at their first response: skip what was consumed.
    for entry in cut.entries[:-1]:
        if entry.call is JournalCall.GATEKEEPER:
            plain.gatekeeper(request.run.run_id, None)  # type: ignore[arg-type]
        else:
            plain.agent(AgentName(entry.call.value))("", request.run)
    state = dc.run_diagnosis(request, counting.effects(), journal=cut, sink=sink, key=key)
    assert result_json(state) == dcp.canonical_json(dc.replay(document))
    assert sink.journal(request) == full  # the same entries, the same MACs
    assert counting.calls[call.value] == 1  # only the interrupted call, once
    assert len(sink.entries) == len(full.entries)


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_an_interrupted_executor_is_never_re_sent_and_fails_closed(key: bytes | None) -> None:
    document = load("payment_timeout.json")
    cut = interrupted_at(recorded(document, key), JournalCall.EXECUTOR, key)
    request, plain = setup(document)
    counting = Counting(plain)
    written: list[dcj.JournalEntry] = []
    ends: list[dcj.JournalEnd] = []

    class Sink:
        def write(self, entry: dcj.JournalEntry | dcj.JournalEnd, /) -> None:
            if isinstance(entry, dcj.JournalEnd):
                ends.append(entry)  # the end marker, once, after the last entry
            else:
                written.append(entry)

    state = dc.run_diagnosis(request, counting.effects(), journal=cut, sink=Sink(), key=key)
    assert len(ends) == 1 and ends[0].entries == len(cut.entries) + len(written) - 1
    assert counting.calls["executor"] == 0 and counting.calls["gk"] == 0
    assert state.result.reason_code is ReasonCode.EXECUTOR_FAILED
    first = written[0]
    assert (first.call, first.state, first.seq) == (
        JournalCall.EXECUTOR, EntryState.FINISHED, cut.entries[-1].seq,
    )
    assert first.outcome == dcj.RecordedAgentError(
        dc.FailureKind.NON_RETRYABLE, dcj.INTERRUPTED_MESSAGE
    )
    whole = dcj.Journal(request, (*cut.entries[:-1], *written), end=ends[0])
    assert dcj.fold_journal(whole, key=key) == state
    assert dcj.journal_status(whole, key=key).complete


@pytest.mark.parametrize("resend", [False, True])
def test_an_interrupted_gatekeeper_fails_closed_unless_the_host_re_sends_it(resend: bool) -> None:
    document = load("payment_timeout.json")
    cut = interrupted_at(recorded(document), JournalCall.GATEKEEPER)
    request, plain = setup(document)
    counting = Counting(plain)
    state = dc.run_diagnosis(request, counting.effects(), journal=cut, resend_gatekeeper=resend)
    assert counting.calls["executor"] == 0
    if resend:
        assert counting.calls["gk"] == 1
        assert result_json(state) == dcp.canonical_json(dc.replay(document))
    else:
        assert counting.calls["gk"] == 0
        assert state.result.reason_code is ReasonCode.GATEKEEPER_UNAVAILABLE


def test_resuming_a_complete_journal_performs_nothing() -> None:
    document = load("payment_timeout.json")
    journal = recorded(document)
    request, plain = setup(document)
    counting = Counting(plain)
    items = list(dc.iter_diagnosis(request, counting.effects(), journal=journal))
    assert sum(counting.calls.values()) == 0
    assert items == [dcj.fold_journal(journal).result]  # no event is appended here


def test_the_request_must_be_the_journals() -> None:
    document = load("payment_timeout.json")
    journal = recorded(document)
    request, effects = setup(document)
    other = attrs.evolve(request, question="something else")
    with pytest.raises(
        JournalError, match=r"^request: the journal is of another request \(different question;"
    ):
        dc.run_diagnosis(other, effects, journal=journal)
    with pytest.raises(JournalError, match="expected a Journal"):
        dc.run_diagnosis(request, effects, journal={"format": "x"})  # type: ignore[arg-type]


def test_a_tampered_or_wrongly_keyed_journal_is_refused_before_any_effect() -> None:
    document = load("payment_timeout.json")
    journal = recorded(document, KEY)
    request, plain = setup(document)
    counting = Counting(plain)
    cut = dcj.Journal(request, journal.entries[:2])
    with pytest.raises(JournalError, match=r"entries\[0\]\.mac"):
        dc.run_diagnosis(request, counting.effects(), journal=cut, key=b"another key")
    forged = attrs.evolve(journal.entries[0], outcome=dcj.RecordedReply("{}"))
    with pytest.raises(JournalError, match=r"entries\[0\]\.mac"):
        dc.run_diagnosis(
            request, counting.effects(), journal=dcj.Journal(request, (forged,)), key=KEY
        )
    assert sum(counting.calls.values()) == 0


def test_a_state_cannot_start_a_journal() -> None:
    request, effects = setup(load("payment_timeout.json"))
    state = dcm.start_diagnosis(request)
    with pytest.raises(dc.RunOptionsError, match="run_diagnosis: state= cannot start a journaling"):
        dc.run_diagnosis(request, effects, state=state, sink=dcj.ListJournalSink())
    with pytest.raises(ValueError, match="key= and tools= record a journal"):
        dc.run_diagnosis(request, effects, key=KEY)  # a key that would sign nothing
    with pytest.raises(TypeError, match="tools= must be a ToolRecorder"):
        dc.run_diagnosis(request, effects, sink=dcj.ListJournalSink(), tools=object())  # type: ignore[arg-type]


# --- observers and streaming -----------------------------------------------------------------


class Recorder:
    def __init__(self, sink: dcj.ListJournalSink | None = None) -> None:
        self.calls: list[tuple[str, object]] = []
        self._sink = sink

    def effect_started(self, action: dcm.InvokeAgent | dcm.CallGatekeeper, /) -> None:
        if self._sink is not None:
            # Before its started entry: no hook between the entry and the effect (§12.5).
            assert not self._sink.entries or self._sink.entries[-1].state is EntryState.FINISHED
        self.calls.append(("started", action))

    def effect_finished(
        self, action: dcm.InvokeAgent | dcm.CallGatekeeper, result: dcm.EffectResult, /
    ) -> None:
        self.calls.append(("finished", result))

    def event_appended(self, event: dc.TraceEvent, /) -> None:
        self.calls.append(("event", event))


def test_the_observer_sees_every_effect_and_every_event_in_order() -> None:
    request, effects = setup(load("redis_latency_evidence_retry.json"))
    sink = dcj.ListJournalSink()
    observer = Recorder(sink)
    state = dc.run_diagnosis(request, effects, sink=sink, observer=observer)
    events = [value for kind, value in observer.calls if kind == "event"]
    assert events == list(state.events)
    results = [value for kind, value in observer.calls if kind == "finished"]
    assert results == [dcj.entry_result(entry) for entry in sink.entries]
    kinds = [kind for kind, _ in observer.calls]
    assert kinds.count("started") == kinds.count("finished") == len(sink.entries)
    assert kinds[0] == "started"  # an effect starts before any event


def test_iterators_yield_the_trace_then_the_result() -> None:
    document = load("redis_latency_evidence_retry.json")
    request, effects = setup(document)
    expected = dc.run_diagnosis(request, effects)
    request, effects = setup(document)
    items = list(dc.iter_diagnosis(request, effects))
    assert items == [*expected.events, expected.result]

    async def collect() -> list[dc.TraceEvent | dc.DiagnosisResult]:
        request, effects = setup(document)
        stream = dc.aiter_diagnosis(request, dc.AsyncEffects.from_sync(effects))
        return [item async for item in stream]

    assert asyncio.run(collect()) == items


def test_a_resumed_iterator_yields_only_the_events_appended_in_this_process() -> None:
    document = load("payment_timeout.json")
    full = recorded(document)
    cut = interrupted_at(full, JournalCall.EXECUTOR)
    request, effects = setup(document)
    before = dcj.fold_journal(cut)
    items = list(dc.iter_diagnosis(request, effects, journal=cut))
    final = items[-1]
    assert isinstance(final, dc.DiagnosisResult)
    assert final.reason_code is ReasonCode.EXECUTOR_FAILED
    assert items[:-1] == list(final.trace[len(before.events):])
    assert items[:-1]  # the interrupted executor's failure is announced


def test_iterators_check_their_options_when_called() -> None:
    request, effects = setup(load("payment_timeout.json"))
    with pytest.raises(TypeError, match="iter_diagnosis"):
        dc.iter_diagnosis(request, dc.AsyncEffects.from_sync(effects))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="aiter_diagnosis"):
        dc.aiter_diagnosis(request, effects)  # type: ignore[arg-type]


class Raising:
    def effect_started(self, action: object, /) -> None:
        raise RuntimeError("down")

    def effect_finished(self, action: object, result: object, /) -> None:
        raise ValueError("down")

    def event_appended(self, event: object, /) -> None:
        raise KeyError("down")


def test_an_observer_that_raises_is_reported_and_changes_nothing() -> None:
    document = load("redis_latency_evidence_retry.json")
    expected = dcp.canonical_json(dc.replay(document))
    request, effects = setup(document)
    sink = dcj.ListJournalSink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a hook failure is logged, never warned
        state = dc.run_diagnosis(request, effects, sink=sink, observer=Raising())
    assert result_json(state) == expected
    assert state.observer_failures > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        request, effects = setup(document)
        streamed = list(dc.iter_diagnosis(request, effects, observer=Raising()))
    assert streamed[-1] == state.result
    assert Outcome(state.result.outcome)


# --- the documentation's snippets run -------------------------------------------------------


def test_the_journal_and_streaming_snippets_of_the_embedding_page_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    page = (EXAMPLES.parent / "docs" / "embedding.md").read_text(encoding="utf-8")
    section = page[page.index("## Journal and resume") : page.index("## Orchestrator adapters")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3
    monkeypatch.chdir(EXAMPLES.parent)
    for block in blocks:
        exec(compile(block, "embedding.md", "exec"), {})  # the page's own code
    printed = capsys.readouterr().out
    assert "incomplete: interrupted during verifier round 1 attempt 1" in printed
    assert printed.count("ANSWERED") == 3  # resumed, streamed, run with options=
