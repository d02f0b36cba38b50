"""Properties of the journaling drivers (spec §12, §14).

1. The journal the sync (and the async) driver writes folds to the live state
   and replays to the result JSON of the plain, unjournaled run.
2. Resuming from every prefix of a journal — cut after any entry, or with the
   last entry turned into ``started`` — ends as §12 *Resume* says, and never
   performs a finished effect again. The oracle is the scenario: a resumed
   process gets fresh scripted doubles that start where the prefix left off,
   and its expected outcome is the uninterrupted replay, or the fail-closed
   reason for an interrupted executor or gatekeeper.
3. An observer that raises at random hooks never changes the result.
4. "Done when" of the journal issue: 300 generated scenarios give
   byte-identical result JSON live and replayed from their journal, in Python
   and through the command line.
"""

from __future__ import annotations

import asyncio
import collections
import io
import json
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
from hypothesis import given, note, settings
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
import diagnosis_core.scenarios as dcs
import diagnosis_core.testing as dt
from diagnosis_core import ReasonCode
from diagnosis_core.cli import main
from diagnosis_core.journal import EntryState, JournalCall
from diagnosis_core.machine import AgentName

_GATEKEEPER = "gatekeeper"


def _live_json(document: dict[str, Any]) -> str:
    return dcp.canonical_json(dc.replay(document))  # the plain driver, no journal


def _record(document: dict[str, Any]) -> tuple[dcj.Journal, dc.DiagnosisState]:
    scenario = dc.load_scenario(document)
    request = dc.scenario_request(scenario)
    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
    return sink.journal(request), state


@given(dt.scenarios())
def test_the_drivers_journals_fold_to_the_live_state_and_replay(document: dict[str, Any]) -> None:
    expected = _live_json(document)
    scenario = dc.load_scenario(document)
    request = dc.scenario_request(scenario)
    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
    journal = dcj.Journal.from_json(dcj.journal_to_json(sink.journal(request)))
    assert dcj.fold_journal(journal) == state
    assert dcp.canonical_json(dc.to_wire(state.result)) == expected
    assert dcp.canonical_json(dcj.replay_journal(journal)) == expected

    async_sink = dcj.ListJournalSink()
    effects = dc.AsyncEffects.from_sync(dc.scenario_effects(scenario))
    async_state = asyncio.run(dc.arun_diagnosis(request, effects, sink=async_sink))
    async_journal = async_sink.journal(request)
    assert dcj.fold_journal(async_journal) == async_state == state
    assert dcp.canonical_json(dcj.replay_journal(async_journal)) == expected


@given(dt.effect_scripts(), st.booleans())
def test_facts_holding_surrogate_pairs_fold_from_the_stored_journal_to_the_live_state(
    script: Any, keyed: bool
) -> None:
    """Effects whose messages and gatekeeper results hold lone surrogates and
    high-low pairs (``fact_texts``): the stored, reloaded journal — signed or
    not — folds to the live state, and that state round-trips (spec §12.1)."""
    key = b"property-key" if keyed else None
    request = script.request
    plain = dc.run_diagnosis(request, script.effects())
    sink = dcj.ListJournalSink()
    live = dc.run_diagnosis(request, script.effects(), sink=sink, key=key)
    assert live == plain
    text = dcj.journal_to_json(sink.journal(request))
    text.encode("utf-8")
    folded = dcj.fold_journal(dcj.Journal.from_json(text), key=key)
    assert folded == live
    assert dc.from_json(dc.DiagnosisState, dc.to_json(live)) == live
    report = dc.build_trace_report(live)
    assert dc.from_json(dc.TraceReport, dc.to_json(report)) == report
    assert dcp.canonical_json(dc.to_wire(folded.result)) == dcp.canonical_json(
        dc.to_wire(live.result)
    )


# --- resume from every prefix --------------------------------------------------------------


class _Counted:
    """Fresh scripted doubles that start after ``consumed`` calls, counting what they perform.

    Before every call it checks that the sink's last entry is the ``started``
    entry of this very call (the sink has it before the effect runs).
    """

    def __init__(
        self,
        scenario: dc.Scenario,
        consumed: collections.Counter[str],
        sink: dcj.ListJournalSink,
    ) -> None:
        self.performed: collections.Counter[str] = collections.Counter()
        self._sink = sink
        agents = {
            agent: dcs.ScriptedAgent(scenario.responses[agent][consumed[agent.value]:])
            for agent in AgentName
        }
        gatekeeper: dc.Gatekeeper = (
            dc.ReferenceGatekeeper(scenario.tool_ledger)
            if scenario.tool_ledger is not None
            else dcs.ScriptedGatekeeper(scenario.gatekeeper[consumed[_GATEKEEPER]:])
        )
        self.effects = dc.Effects(
            planner=self._agent("planner", agents[AgentName.PLANNER]),
            executor=self._agent("executor", agents[AgentName.EXECUTOR]),
            verifier=self._agent("verifier", agents[AgentName.VERIFIER]),
            composer=self._agent("composer", agents[AgentName.COMPOSER]),
            gatekeeper=self._gatekeeper(gatekeeper),
        )

    def _check(self, call: str) -> None:
        last = self._sink.entries[-1]
        assert (last.state, last.call.value) == (EntryState.STARTED, call)
        self.performed[call] += 1

    def _agent(self, name: str, inner: dc.AgentInvoker) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            self._check(name)
            return inner(input, config)

        return call

    def _gatekeeper(self, inner: dc.Gatekeeper) -> dc.Gatekeeper:
        def call(run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
            self._check(_GATEKEEPER)
            return inner(run_id, executor_output)

        return call


def _prefixes(journal: dcj.Journal) -> Iterator[tuple[dcj.Journal, dcj.JournalEntry | None]]:
    """Every cut after an entry, and every cut whose last entry is turned into started."""
    entries = journal.entries
    for index in range(len(entries) + 1):
        yield dcj.Journal(journal.request, entries[:index]), None
    for index, entry in enumerate(entries):
        interrupted = attrs.evolve(
            entry, state=EntryState.STARTED, outcome=None, tool_invocations=None
        )
        yield dcj.Journal(journal.request, (*entries[:index], interrupted)), entry


@given(dt.scenarios(), st.booleans())
def test_resuming_any_prefix_ends_as_the_resume_rule_says(
    document: dict[str, Any], resend_gatekeeper: bool
) -> None:
    expected = _live_json(document)
    scenario = dc.load_scenario(document)
    request = dc.scenario_request(scenario)
    journal, _ = _record(document)
    for prefix, interrupted in _prefixes(journal):
        finished = [entry for entry in prefix.entries if entry.state is EntryState.FINISHED]
        consumed = collections.Counter(entry.call.value for entry in finished)
        sink = dcj.ListJournalSink(prefix.entries)
        doubles = _Counted(scenario, consumed, sink)
        note(f"prefix of {len(prefix.entries)}, interrupted: {interrupted}")
        state = dc.run_diagnosis(
            request,
            doubles.effects,
            journal=prefix,
            sink=sink,
            resend_gatekeeper=resend_gatekeeper,
        )
        resumed = sink.journal(request)
        assert resumed.entries[: len(finished)] == tuple(finished)  # nothing finished changes
        assert dcj.fold_journal(resumed) == state
        # Every effect performed here has its own new entry: none was performed twice.
        new = collections.Counter(entry.call.value for entry in resumed.entries[len(finished):])
        fail_closed = interrupted is not None and (
            interrupted.call is JournalCall.EXECUTOR
            or (interrupted.call is JournalCall.GATEKEEPER and not resend_gatekeeper)
        )
        if fail_closed:
            assert interrupted is not None
            new[interrupted.call.value] -= 1  # completed by the rule, not performed
        assert +new == +doubles.performed
        result = dcp.canonical_json(dc.to_wire(state.result))
        if not fail_closed:
            assert result == expected
        elif interrupted is not None and interrupted.call is JournalCall.EXECUTOR:
            assert state.result.reason_code is ReasonCode.EXECUTOR_FAILED
            assert doubles.performed[_GATEKEEPER] == doubles.performed["executor"] == 0
        else:
            assert state.result.reason_code is ReasonCode.GATEKEEPER_UNAVAILABLE
            assert doubles.performed[_GATEKEEPER] == 0


# --- observers never change the run ----------------------------------------------------------


class _Flaky:
    """An observer whose hooks raise, or edit what they are shown, as the drawn schedule says."""

    def __init__(self, schedule: list[int]) -> None:
        self._schedule = schedule
        self.calls = 0

    def _maybe(self, shown: object = None) -> None:
        move = self._schedule[self.calls % len(self._schedule)]
        self.calls += 1
        if move == 1:
            raise RuntimeError("observer down")
        if move == 2 and isinstance(shown, dcm.GatekeeperReturned):
            raw = shown.raw
            if isinstance(raw, dict):  # a REJECT edited into a clean PASS
                raw.clear()
                raw.update({"status": "pass", "checked_bindings": [], "reason_codes": []})
            raise RuntimeError("edited, then down")
        if move == 3 and isinstance(shown, dcm.GatekeeperReturned):
            raw = shown.raw
            if isinstance(raw, dict):
                for entry in raw.get("checked_bindings") or []:
                    if isinstance(entry, dict):
                        entry["status"] = "pass"
                        entry["matched_text"] = "forged"

    def effect_started(self, action: object, /) -> None:
        self._maybe()

    def effect_finished(self, action: object, result: object, /) -> None:
        self._maybe(result)

    def event_appended(self, event: object, /) -> None:
        self._maybe()


@given(dt.scenarios(), st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_an_observer_that_raises_or_edits_never_changes_the_result_or_the_journal(
    document: dict[str, Any], schedule: list[int]
) -> None:
    expected = _live_json(document)
    scenario = dc.load_scenario(document)
    request = dc.scenario_request(scenario)
    plain_sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=plain_sink)
    sink = dcj.ListJournalSink()
    observer = _Flaky(schedule)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a host's -W error: a hook failure must not escape
        state = dc.run_diagnosis(
            request, dc.scenario_effects(scenario), sink=sink, observer=observer
        )
        unjournaled = dc.run_diagnosis(
            request, dc.scenario_effects(scenario), observer=_Flaky(schedule)
        )
        items = list(
            dc.iter_diagnosis(
                request, dc.scenario_effects(scenario), observer=_Flaky(schedule)
            )
        )
    assert observer.calls > 0
    assert dcp.canonical_json(dc.to_wire(state.result)) == expected
    assert dcp.canonical_json(dc.to_wire(unjournaled.result)) == expected
    assert items == [*state.events, state.result]
    journal = dcj.journal_to_json(sink.journal(request))
    assert journal == dcj.journal_to_json(plain_sink.journal(request))
    folded = dcj.fold_journal(dcj.Journal.from_json(journal))
    assert dcp.canonical_json(dc.to_wire(folded.result)) == expected


# --- done when: 300 scenarios, Python and the command line --------------------------------------


def _cli(*args: str) -> tuple[int, bytes]:
    """``main(args)`` in this process; its standard output as bytes."""
    buffer = io.BytesIO()
    saved = sys.stdout
    wrapper = io.TextIOWrapper(buffer, encoding="utf-8")
    sys.stdout = wrapper
    try:
        code = main(list(args))
        wrapper.flush()
        return code, buffer.getvalue()
    finally:
        sys.stdout = saved
        wrapper.detach()


@settings(max_examples=300)
@given(dt.scenarios())
def test_300_scenarios_replay_from_their_journal_byte_for_byte(document: dict[str, Any]) -> None:
    # The file is the scenario: a Python string holding a high surrogate followed by
    # a low one as two code points is written as a pair of escapes, which a JSON
    # reader takes for one character, so the live run to compare with is the file's.
    text = json.dumps(document)
    expected = (_live_json(json.loads(text)) + "\n").encode("utf-8", "backslashreplace")
    with tempfile.TemporaryDirectory() as directory:
        scenario_path = Path(directory) / "scenario.json"
        journal_path = Path(directory) / "journal.json"
        scenario_path.write_text(text, encoding="utf-8")
        code, recorded = _cli(
            "run", "--json", "--journal-out", str(journal_path), str(scenario_path)
        )
        assert (code, recorded) == (0, expected)
        code, replayed = _cli("run", "--json", str(journal_path))
        assert (code, replayed) == (0, expected)
        journal = dcj.Journal.from_json(journal_path.read_text(encoding="utf-8"))
    replayed_in_python = dcp.canonical_json(dcj.replay_journal(journal)) + "\n"
    assert replayed_in_python.encode("utf-8", "backslashreplace") == expected
