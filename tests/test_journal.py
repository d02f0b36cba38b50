"""The run journal (spec §12): wire form, fold and verify, resume, integrity, replay."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.machine as dcm
from diagnosis_core import (
    FailureKind,
    JournalError,
)
from diagnosis_core.journal import (
    EntryState,
    Journal,
    JournalCall,
    JournalEntry,
    JournalRecorder,
    RecordedAgentError,
    RecordedGatekeeperError,
)
from tests._reach import journal as dcj
from tests._reach import protocol as dcp

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = b"host-key-for-tests"


def chat_examples() -> list[Path]:
    return [
        path
        for path in sorted(EXAMPLES.glob("*.json"))
        if json.loads(path.read_text(encoding="utf-8")).get("workflow") != "aiops"
    ]


def record(
    request: dc.DiagnosisRequest,
    effects: dc.Effects,
    *,
    key: bytes | None = None,
    sink: dcj.JournalSink | None = None,
) -> tuple[Journal, dc.DiagnosisState]:
    """A journaling loop over next_action / perform_effect / advance."""
    recorder = JournalRecorder(Journal(request), sink=sink, key=key)
    state = dcm.start_diagnosis(request)
    while not isinstance(action := dcm.next_action(state), dcm.Finished):
        recorder.begin(action)
        state = dcm.advance(state, recorder.end(dcm.perform_effect(action, effects)))
    recorder.close()  # the end marker: a signed v2 journal is complete only with it
    return recorder.journal, state


def record_scenario(document: Mapping[str, Any], *, key: bytes | None = None) -> Journal:
    scenario = dc.load_scenario(document)
    journal, _ = record(dc.scenario_request(scenario), dc.scenario_effects(scenario), key=key)
    return journal


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def wire_of(journal: Journal) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(dcj.journal_to_json(journal))
    return data


def started(entry: JournalEntry) -> JournalEntry:
    return attrs.evolve(
        entry, state=EntryState.STARTED, outcome=None, tool_invocations=None, mac=None
    )


# --- every example: live == folded == replayed from the converted scenario --------------


@pytest.mark.parametrize("path", chat_examples(), ids=lambda path: path.stem)
@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_every_example_gives_the_same_result_live_folded_and_replayed(
    path: Path, key: bytes | None
) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    live = dcp.canonical_json(dc.replay(document))
    journal = record_scenario(document, key=key)
    loaded = dcj.Journal.from_json(dcj.journal_to_json(journal))
    assert loaded == journal
    assert dcp.canonical_json(dcj.replay_journal(loaded, key=key)) == live
    assert dcp.canonical_json(dc.replay(dcj.journal_to_scenario(loaded, key=key))) == live
    assert dcj.journal_status(loaded, key=key).describe() == "complete"


def test_the_wire_form_is_canonical_json_with_the_section_12_shape() -> None:
    journal = record_scenario(example("payment_timeout.json"))
    text = dcj.journal_to_json(journal)
    data = json.loads(text)
    assert text == dcp.canonical_json(data)
    assert data["format"] == "diagnosis_journal_v2"
    assert data["end"] == {"entries": 5}  # unsigned: the end marker has no mac
    assert set(data["request"]) == {"question", "run", "history", "skills", "config"}
    assert [entry["call"] for entry in data["entries"]] == [
        "planner", "executor", "gatekeeper", "verifier", "composer",
    ]
    first = data["entries"][0]
    assert set(first) == {"seq", "call", "round", "attempt", "input_sha256", "state", "outcome"}
    state = dcj.fold_journal(journal)
    # v2: the entry's hash is the trace's hash of the same input, bound to the request:
    # SHA-256 of (SHA-256 of the request's canonical JSON) + (the trace's hash), as hex text.
    request_sha = hashlib.sha256(dcp.canonical_json(data["request"]).encode("utf-8")).hexdigest()
    bound = (request_sha + state.events[0].input_sha256).encode("ascii")
    assert first["input_sha256"] == hashlib.sha256(bound).hexdigest()
    assert "result" in data["entries"][2]["outcome"]


# --- fold and verify: refused journals name the entry --------------------------------------


def test_a_journal_truncated_in_the_middle_names_the_entry() -> None:
    wire = wire_of(record_scenario(example("payment_timeout.json")))
    del wire["entries"][1]
    with pytest.raises(JournalError, match=r"^entries\[1\]\.seq: expected 2, got 3$"):
        dcj.fold_journal(dcj.Journal.load(wire))
    for seq, entry in enumerate(wire["entries"], start=1):
        entry["seq"] = seq
    with pytest.raises(JournalError) as caught:
        dcj.fold_journal(dcj.Journal.load(wire))
    assert str(caught.value) == (
        "entries[1]: the run expects executor round 1 attempt 1, the journal has gatekeeper"
    )


def test_a_wrong_attempt_names_what_the_run_expects() -> None:
    wire = wire_of(record_scenario(example("composer_fails_twice.json")))
    calls = [entry["call"] for entry in wire["entries"]]
    index = calls.index("composer") + 1
    wire["entries"][index]["attempt"] = 3
    with pytest.raises(JournalError) as caught:
        dcj.fold_journal(dcj.Journal.load(wire))
    assert str(caught.value) == (
        f"entries[{index}]: the run expects composer round 1 attempt 2, "
        "the journal has composer round 1 attempt 3"
    )


def test_a_changed_planner_text_is_caught_by_the_next_input_hash() -> None:
    wire = wire_of(record_scenario(example("payment_timeout.json")))
    plan = json.loads(dcp.extract_json_text(wire["entries"][0]["outcome"]["text"]))
    plan["steps"][0]["goal"] = "something else"
    wire["entries"][0]["outcome"]["text"] = json.dumps(plan)
    with pytest.raises(JournalError, match=r"^entries\[1\]\.input_sha256: the input of executor"):
        dcj.fold_journal(dcj.Journal.load(wire))


def test_non_consecutive_seq_and_an_entry_after_end_are_refused() -> None:
    wire = wire_of(record_scenario(example("payment_timeout.json")))
    skipped = copy.deepcopy(wire)
    skipped["entries"][2]["seq"] = 4
    with pytest.raises(JournalError, match=r"^entries\[2\]\.seq: expected 3, got 4$"):
        dcj.fold_journal(dcj.Journal.load(skipped))
    extra = copy.deepcopy(wire)
    extra["entries"].append({**extra["entries"][-1], "seq": 6})
    with pytest.raises(JournalError, match=r"^entries\[5\]: the run has ended, the journal has"):
        dcj.fold_journal(dcj.Journal.load(extra))


def test_only_the_last_entry_may_be_started() -> None:
    journal = record_scenario(example("payment_timeout.json"))
    entries = list(journal.entries)
    entries[1] = started(entries[1])
    with pytest.raises(JournalError, match=r"^entries\[1\]\.state: only the last entry"):
        dcj.fold_journal(Journal(journal.request, tuple(entries)))


def test_a_forged_gatekeeper_pass_is_a_fact_and_goes_through_the_parsers() -> None:
    # The gatekeeper was unavailable; an edit claims it passed. Without a key the
    # edit is a fact like any other: the run then needs a verifier call the
    # journal does not have, so no verdict and no answer exist.
    wire = wire_of(record_scenario(example("zh_cn_gatekeeper_unavailable.json")))
    gatekeeper = wire["entries"][2]
    assert gatekeeper["call"] == "gatekeeper"
    gatekeeper["outcome"] = {"result": {"status": "pass"}}
    wire["entries"] = wire["entries"][:3]
    del wire["end"]  # cut like a crashed run (an end marker that covers 5 entries is refused)
    status = dcj.journal_status(dcj.Journal.load(wire))
    assert not status.complete
    assert status.describe() == "incomplete: ends before verifier round 1 attempt 1"
    assert status.state.evaluation is None and status.state.answer is None
    with pytest.raises(JournalError, match="incomplete"):
        dcj.replay_journal(dcj.Journal.load(wire))


def test_a_journal_that_ends_early_names_the_pending_call() -> None:
    journal = record_scenario(example("payment_timeout.json"))
    early = Journal(journal.request, journal.entries[:2])
    status = dcj.journal_status(early)
    assert status.pending == dcj.ExpectedCall(
        JournalCall.GATEKEEPER, 1, 1, journal.entries[2].input_sha256
    )
    assert status.describe() == "incomplete: ends before gatekeeper round 1 attempt 1"
    assert status.interrupted is None
    assert not status.state.finished
    with pytest.raises(JournalError, match="incomplete: ends before gatekeeper"):
        dcj.journal_to_scenario(early)


# --- strict loading -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda w: w.pop("format"), "format: missing"),
        (lambda w: w.update(format="aiops_journal_v1"),
         "format: expected 'diagnosis_journal_v2' or 'diagnosis_journal_v1'"),
        (lambda w: w.update(extra=1), "$: unknown key 'extra'"),
        (lambda w: w["request"].pop("question"), "request.question: missing"),
        (lambda w: w["request"]["run"].pop("session_id"), "request.run.session_id: missing"),
        (lambda w: w["request"]["config"].update(technical_retry_limit=99),
         "request.config.technical_retry_limit: 99 is outside"),
        (lambda w: w["entries"][0].update(x=1), "entries[0]: unknown key 'x'"),
        (lambda w: w["entries"][0].update(seq=True), "entries[0].seq: expected an integer"),
        (lambda w: w["entries"][0].update(round=0), "entries[0].round: expected an integer >= 1"),
        (lambda w: w["entries"][0].update(call="judge"), "entries[0].call: expected one of"),
        (lambda w: w["entries"][0].update(input_sha256="ABC"),
         "entries[0].input_sha256: expected 64 lowercase hex digits"),
        (lambda w: w["entries"][0].update(state="started"),
         "entries[0].outcome: a started entry has none"),
        (lambda w: w["entries"][0].pop("outcome"), "entries[0].outcome: missing"),
        (lambda w: w["entries"][0].update(outcome={"result": 1}),
         "entries[0].outcome: unknown key 'result'"),
        (lambda w: w["entries"][2].update(outcome={"text": "x"}),
         "entries[2].outcome: unknown key 'text'"),
        (lambda w: w["entries"][0].update(outcome={"error": {"kind": "maybe", "message": ""}}),
         "entries[0].outcome.error.kind: expected one of"),
        (lambda w: w["entries"][0].update(tool_invocations=[]),
         "entries[0].tool_invocations: only executor entries carry them"),
        (lambda w: w["entries"][1].update(tool_invocations=[{"invocation_id": "inv-1"}]),
         "entries[1].tool_invocations[0].tool_name: missing"),
        (lambda w: w["entries"][0].update(mac="zz"), "entries[0].mac: expected 64 lowercase hex"),
    ],
)
def test_malformed_journals_are_refused_with_a_path(edit: Any, message: str) -> None:
    wire = wire_of(record_scenario(example("payment_timeout.json")))
    edit(wire)
    with pytest.raises(JournalError) as caught:
        dcj.Journal.load(wire)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    "text",
    [
        '{"format": "diagnosis_journal_v1", "format": "diagnosis_journal_v1"}',
        '{"format": NaN}',
        '{"format": ' + "1" * 5000 + "}",
        "[1, 2",
    ],
    ids=["duplicate-key", "nan", "long-int", "invalid"],
)
def test_journal_text_goes_through_the_strict_json_layer(text: str) -> None:
    with pytest.raises(JournalError):
        dcj.Journal.from_json(text)


def test_a_duplicate_key_in_an_entry_is_located() -> None:
    text = dcj.journal_to_json(record_scenario(example("payment_timeout.json")))
    forged = text.replace('"attempt":1,', '"attempt":1,"attempt":2,', 1)
    with pytest.raises(JournalError, match=r"entries\[0\]: duplicate key 'attempt'"):
        dcj.Journal.from_json(forged)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"k\\ud800": 1, "k\\ud800": 2}', "$: duplicate key 'k\\ud800'"),
        ('{"\\udc80": {"a": NaN}}', "$['\\udc80'].a: NaN is not a JSON number"),
        ('{"m": "\\ud800", "n": [1, 1e400]}', "n[1]: number 1e400 is out of range"),
        ('{"m": "\\ud800", "m": 2}', "$: duplicate key 'm'"),
    ],
    ids=["surrogate-key-duplicated", "under-a-surrogate-key", "after-a-surrogate", "duplicate"],
)
def test_a_problem_in_journal_text_is_named_as_written(text: str, message: str) -> None:
    # Escaped lone surrogates are facts a journal keeps: the error names the
    # real key and path, never a placeholder for the surrogate.
    with pytest.raises(JournalError) as caught:
        dcj.Journal.from_json(text)
    assert str(caught.value) == message


def test_journal_text_with_a_raw_surrogate_is_refused() -> None:
    # The journal writer always escapes surrogates (its text is valid UTF-8).
    with pytest.raises(JournalError, match="raw surrogate"):
        dcj.Journal.from_json('{"format": "\ud800"}')


# --- lone surrogates in stored facts --------------------------------------------------------


def _effects_with_failing_verifier(message: str) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(example("payment_timeout.json"))
    base = dc.scenario_effects(scenario)

    def verifier(text: str, config: dc.RunConfig) -> str:
        raise RuntimeError(message)

    return dc.scenario_request(scenario), attrs.evolve(base, verifier=verifier)


def test_a_lone_surrogate_in_an_error_message_round_trips() -> None:
    request, effects = _effects_with_failing_verifier("bad byte \udcff here")
    journal, live = record(request, effects, key=KEY)
    text = dcj.journal_to_json(journal)
    text.encode("utf-8")  # always valid UTF-8
    assert "\\udcff" in text
    loaded = dcj.Journal.from_json(text)
    assert loaded == journal
    outcome = loaded.entries[3].outcome
    message = "RuntimeError: bad byte \udcff here"
    assert outcome == RecordedAgentError(FailureKind.NON_RETRYABLE, message)
    assert dcj.fold_journal(loaded, key=KEY) == live
    assert dc.to_json(dcj.fold_journal(loaded).result) == dc.to_json(live.result)
    # A §9 scenario cannot hold it: refused unless an approximate scenario is asked for.
    with pytest.raises(JournalError, match=r"^entries\[3\]\.outcome\.error\.message"):
        dcj.journal_to_scenario(loaded)
    approximate = dcj.journal_to_scenario(loaded, exact=False)
    assert dc.replay(approximate)["reason_code"] == "VERIFIER_FAILED"


# --- integrity ------------------------------------------------------------------------------


def test_with_a_key_every_entry_is_signed_and_verified() -> None:
    journal = record_scenario(example("payment_timeout.json"), key=KEY)
    assert all(entry.mac is not None for entry in journal.entries)
    bare_end = dcj.JournalEnd(len(journal.entries))
    assert dcj.sign_journal(Journal(journal.request, journal.entries, end=bare_end), KEY) == journal
    dcj.fold_journal(journal, key=KEY)
    with pytest.raises(JournalError, match=r"^entries\[0\]\.mac: does not match"):
        dcj.fold_journal(journal, key=b"another key")
    assert dcj.fold_journal(journal) == dcj.fold_journal(journal, key=KEY)  # no key: not checked


def test_a_missing_mac_is_refused_with_a_key() -> None:
    journal = record_scenario(example("payment_timeout.json"), key=KEY)
    entries = list(journal.entries)
    entries[2] = attrs.evolve(entries[2], mac=None)
    with pytest.raises(JournalError, match=r"^entries\[2\]\.mac: missing"):
        dcj.fold_journal(Journal(journal.request, tuple(entries)), key=KEY)


@pytest.mark.parametrize(
    "edit",
    [
        lambda w: w["request"].update(question="another question"),
        lambda w: w["request"]["config"].update(locale="zh-CN"),
        lambda w: w["entries"][4]["outcome"].update(text="forged answer"),
        lambda w: w["entries"].pop(2),
    ],
    ids=["question", "config", "outcome", "removed-entry"],
)
def test_with_a_key_tampering_is_refused(edit: Any) -> None:
    wire = wire_of(record_scenario(example("payment_timeout.json"), key=KEY))
    edit(wire)
    with pytest.raises(JournalError, match=r"\.mac: does not match|the run expects"):
        dcj.fold_journal(dcj.Journal.load(wire), key=KEY)


def test_an_empty_key_is_refused() -> None:
    journal = record_scenario(example("payment_timeout.json"))
    with pytest.raises(JournalError, match="key: expected non-empty bytes"):
        dcj.fold_journal(journal, key=b"")


# --- the resume rule ------------------------------------------------------------------------


def _interrupted_at(journal: Journal, index: int) -> Journal:
    return Journal(journal.request, (*journal.entries[:index], started(journal.entries[index])))


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
@pytest.mark.parametrize("index", [0, 3, 4], ids=["planner", "verifier", "composer"])
def test_an_interrupted_llm_call_is_resent_as_the_same_attempt(
    index: int, key: bytes | None
) -> None:
    complete = record_scenario(example("payment_timeout.json"), key=key)
    interrupted = _interrupted_at(complete, index)
    if key is not None:
        interrupted = dcj.sign_journal(interrupted, key)
    resumed, state = dcj.resume_journal(interrupted, key=key)
    assert resumed == interrupted
    assert state == dcj.fold_journal(Journal(complete.request, complete.entries[:index]))
    action = dcm.next_action(state)
    assert not isinstance(action, dcm.Finished)
    original = complete.entries[index]
    again = dcj.start_entry(resumed, action, key=key)
    assert (again.seq, again.call, again.attempt, again.input_sha256) == (
        original.seq, original.call, original.attempt, original.input_sha256,
    )
    # Re-sending and finishing with the same outcome gives the uninterrupted run.
    journal = dcj.append_entry(resumed, again)
    finished = dcj.finish_entry(journal, dcj.entry_result(original), key=key)
    journal = dcj.append_entry(journal, finished)
    journal = Journal(journal.request, (*journal.entries, *complete.entries[index + 1 :]))
    assert dc.to_json(dcj.fold_journal(journal, key=key).result) == dc.to_json(
        dcj.fold_journal(complete).result
    )


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_an_interrupted_executor_call_fails_closed_and_is_never_resent(key: bytes | None) -> None:
    complete = record_scenario(example("payment_timeout.json"), key=key)
    interrupted = _interrupted_at(complete, 1)
    if key is not None:
        interrupted = dcj.sign_journal(interrupted, key)
    resumed, state = dcj.resume_journal(interrupted, key=key)
    last = resumed.entries[-1]
    assert last.state is EntryState.FINISHED and last.seq == 2
    assert last.outcome == RecordedAgentError(FailureKind.NON_RETRYABLE, dcj.INTERRUPTED_MESSAGE)
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
    assert state.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert state.result.calls.executor == 1
    assert dcj.fold_journal(resumed, key=key) == state
    # With a key, a v2 journal is complete only once its end marker is written (the
    # driver writes it when the run ends; resume_journal only settles the entry).
    assert dcj.journal_status(resumed, key=key).complete is (key is None)
    # Resuming a resumed journal changes nothing.
    assert dcj.resume_journal(resumed, key=key) == (resumed, state)


def test_an_interrupted_gatekeeper_call_is_unavailable_unless_the_host_resends_it() -> None:
    complete = record_scenario(example("payment_timeout.json"))
    interrupted = _interrupted_at(complete, 2)
    resumed, state = dcj.resume_journal(interrupted)
    assert resumed.entries[-1].outcome == RecordedGatekeeperError(dcj.INTERRUPTED_MESSAGE)
    assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert dcj.fold_journal(resumed) == state
    again, before = dcj.resume_journal(interrupted, resend_gatekeeper=True)
    assert again == interrupted
    assert isinstance(dcm.next_action(before), dcm.CallGatekeeper)
    assert dcj.journal_status(interrupted).describe() == (
        "incomplete: interrupted during gatekeeper round 1 attempt 1"
    )


# --- the builder and the sink ---------------------------------------------------------------


def test_the_sink_gets_the_started_entry_before_the_effect_runs() -> None:
    scenario = dc.load_scenario(example("payment_timeout.json"))
    sink = dcj.ListJournalSink()
    seen: list[tuple[int, str]] = []
    base = dc.scenario_effects(scenario)

    def watching(name: str) -> dc.AgentInvoker:
        inner = base.agent(dcm.AgentName(name))

        def call(text: str, config: dc.RunConfig) -> str:
            last = sink.entries[-1]
            seen.append((last.seq, last.state.value))
            assert last.call.value == name
            return inner(text, config)

        return call

    effects = attrs.evolve(base, planner=watching("planner"), composer=watching("composer"))
    journal, state = record(dc.scenario_request(scenario), effects, sink=sink)
    assert seen == [(1, "started"), (5, "started")]
    assert tuple(sink.entries) == journal.entries
    assert all(entry.state is EntryState.FINISHED for entry in sink.entries)
    assert dcj.fold_journal(journal) == state


def test_an_agent_reply_that_is_not_text_is_recorded_as_a_non_retryable_error() -> None:
    outcome = dcj.outcome_of(dcm.AgentReplied(42))  # type: ignore[arg-type]
    assert outcome == RecordedAgentError(
        FailureKind.NON_RETRYABLE, "TypeError: the agent returned int, not message text"
    )


def test_a_gatekeeper_result_that_is_not_json_is_recorded_and_stays_invalid() -> None:
    scenario = dc.load_scenario(example("payment_timeout.json"))
    effects = attrs.evolve(
        dc.scenario_effects(scenario), gatekeeper=lambda run_id, output: {"status": {1, 2}}
    )
    journal, state = record(dc.scenario_request(scenario), effects)
    assert "unserializable" in json.loads(dcj.journal_to_json(journal))["entries"][2]["outcome"][
        "result"
    ]
    assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_INVALID_RESULT
    assert dcj.fold_journal(dcj.Journal.from_json(dcj.journal_to_json(journal))) == state


def test_finishing_without_a_started_entry_and_a_conflicting_start_are_refused() -> None:
    journal = record_scenario(example("payment_timeout.json"))
    with pytest.raises(JournalError, match="not started"):
        dcj.finish_entry(journal, dcm.AgentReplied("x"))
    interrupted = _interrupted_at(journal, 3)
    state = dcj.fold_journal(Journal(journal.request, journal.entries[:1]))
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent)
    with pytest.raises(JournalError, match=r"^entries\[3\]: started for verifier"):
        dcj.start_entry(interrupted, action)


def test_tool_invocations_round_trip_on_executor_entries() -> None:
    journal = record_scenario(example("payment_timeout.json"))
    tool = dcj.RecordedToolInvocation(
        invocation_id="inv-1",
        tool_name="query_logs",
        success=False,
        output_json="null",
        input_json='{"q":"timeout"}',
        error=dcj.RecordedToolError("TimeoutError", "slow"),
        duration_ms=12.5,
    )
    entries = list(journal.entries)
    entries[1] = attrs.evolve(entries[1], tool_invocations=(tool,))
    with_tools = Journal(journal.request, tuple(entries))
    wire = wire_of(with_tools)
    assert wire["entries"][1]["tool_invocations"] == [{
        "invocation_id": "inv-1", "tool_name": "query_logs", "success": False, "output": None,
        "input": {"q": "timeout"}, "error": {"type": "TimeoutError", "message": "slow"},
        "duration_ms": 12.5,
    }]
    assert dcj.Journal.load(wire) == with_tools
    assert dcj.fold_journal(with_tools) == dcj.fold_journal(journal)
