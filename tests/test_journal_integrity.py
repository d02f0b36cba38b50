"""A journal that commits to its end, bound to its request (spec §12.2), for both workflows.

Every MAC here is computed by the test itself, with :mod:`hmac` and
:mod:`hashlib`, from the rule ``docs/protocol.md`` states — never with the
package's signer — and every refused edit names the check that refused it.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core import JournalError
from diagnosis_core.journal import EntryState, JournalCall
from tests._reach import aiops as dca
from tests._reach import journal as dcj

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "journal_v1"
KEY = b"integrity-test-key"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


# --- the oracle: the documented rule, computed here -----------------------------------------


def canonical(value: object) -> str:
    """Canonical JSON as §6.6 states it (sorted keys, no spaces, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def oracle_hmac(message: str) -> str:
    return hmac.new(KEY, message.encode("utf-8"), hashlib.sha256).hexdigest()


def oracle_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def oracle_macs(wire: dict[str, Any]) -> tuple[list[str], str | None]:
    """Every entry's v2 ``mac`` and the end marker's, from the documented rule."""
    link = oracle_hmac(canonical(wire["request"]))
    macs = []
    for entry in wire["entries"]:
        bare = {k: v for k, v in entry.items() if k != "mac"}
        link = oracle_hmac(f"{entry['state']}:" + link + canonical(bare))
        macs.append(link)
    end = wire.get("end")
    end_mac = None
    if end is not None:
        end_mac = oracle_hmac("end:" + link + canonical({"entries": end["entries"]}))
    return macs, end_mac


class Sink:
    """Every write in order (entries and the end marker), as a store would see them."""

    def __init__(self) -> None:
        self.writes: list[Any] = []
        self.list = dcj.ListJournalSink()

    def write(self, record: Any, /) -> None:
        self.writes.append(record)
        self.list.write(record)


def signed_run(name: str = "payment_timeout.json", key: bytes | None = KEY) -> tuple[
    dc.DiagnosisRequest, dc.Effects, Sink, dc.DiagnosisState
]:
    scenario = dc.load_scenario(load(name))
    request, effects = dc.scenario_request(scenario), dc.scenario_effects(scenario)
    sink = Sink()
    state = dc.run_diagnosis(request, effects, sink=sink, key=key)
    return request, effects, sink, state


def wire_of(journal: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(dcj.journal_to_json(journal))
    return data


# --- the MAC rule, checked by an independent oracle ------------------------------------------


def test_every_mac_of_a_signed_journal_is_the_documented_hmac() -> None:
    request, _, sink, _ = signed_run()
    wire = wire_of(sink.list.journal(request))
    assert wire["format"] == "diagnosis_journal_v2"
    macs, end_mac = oracle_macs(wire)
    assert [entry["mac"] for entry in wire["entries"]] == macs
    assert wire["end"] == {"entries": 5, "mac": end_mac}


def test_every_mac_of_a_signed_aiops_journal_is_the_documented_hmac() -> None:
    journal = dca.record_aiops_scenario(load("aiops_payload_targeted.json"), key=KEY)
    wire = wire_of(journal)
    assert wire["format"] == "aiops_journal_v2"
    macs, end_mac = oracle_macs(wire)
    assert [entry["mac"] for entry in wire["entries"]] == macs
    assert wire["end"]["mac"] == end_mac


def test_started_and_finished_entries_are_signed_in_separate_domains() -> None:
    request, _, sink, _ = signed_run()
    started = [
        w for w in sink.writes if isinstance(w, dcj.JournalEntry) and w.state.value == "started"
    ]
    assert len(started) == 5
    journal = sink.list.journal(request)
    link = oracle_hmac(canonical(wire_of(journal)["request"]))
    for entry in journal.entries:
        start = next(s for s in started if s.seq == entry.seq)
        wired: Any = dcj.journal_to_wire(dcj.Journal(request, (start,)))["entries"]
        bare = {k: v for k, v in wired[0].items() if k != "mac"}
        assert start.mac == oracle_hmac("started:" + link + canonical(bare))
        assert start.mac != oracle_hmac("finished:" + link + canonical(bare))
        assert start.mac != entry.mac
        link = entry.mac or ""


def test_a_signed_started_entry_cannot_stand_in_for_its_finished_entry() -> None:
    request, _, sink, _ = signed_run()
    journal = sink.list.journal(request)
    started_verifier = next(
        w for w in sink.writes
        if isinstance(w, dcj.JournalEntry) and w.call is JournalCall.VERIFIER
        and w.state is EntryState.STARTED
    )
    # Its MAC on the finished entry: refused by the chain, at that entry.
    forged = attrs.evolve(journal.entries[3], mac=started_verifier.mac)
    entries = (*journal.entries[:3], forged, journal.entries[4])
    edited = dcj.Journal(request, entries, end=journal.end)
    with pytest.raises(JournalError, match=r"^entries\[3\]\.mac: does not match"):
        dcj.fold_journal(edited, key=KEY)
    # The started entry itself, cut after it: a valid interrupted journal (the documented
    # limit without the head) ...
    rolled_back = dcj.Journal(request, (*journal.entries[:3], started_verifier))
    status = dcj.journal_status(rolled_back, key=KEY)
    assert status.describe() == "incomplete: interrupted during verifier round 1 attempt 1"
    # ... which the head refuses: the head commits to the finished journal's end.
    head = dcj.journal_head(journal)
    with pytest.raises(JournalError, match=r"^head: the journal has 4 entries, the head commits"):
        dcj.journal_status(rolled_back, key=KEY, head=head)
    # With a head taken on the verifier's entry (same length), the rollback diverges.
    head4 = dcj.JournalHead(4, journal.entries[3].mac or "")
    with pytest.raises(JournalError, match=r"^head: the journal diverges from the head at entr"):
        dcj.journal_status(rolled_back, key=KEY, head=head4)


# --- the end marker ----------------------------------------------------------------------------


def test_a_complete_signed_journal_ends_with_its_marker_and_every_prefix_is_incomplete() -> None:
    request, _, sink, state = signed_run()
    journal = sink.list.journal(request)
    assert dcj.journal_status(journal, key=KEY).complete
    assert sink.writes[-1] == journal.end
    for cut in range(len(journal.entries) + 1):
        prefix = dcj.Journal(request, journal.entries[:cut])
        status = dcj.journal_status(prefix, key=KEY)
        assert not status.complete
        with pytest.raises(JournalError, match=r"^the journal is incomplete"):
            dcj.replay_journal(prefix, key=KEY)
        with pytest.raises(JournalError, match=r"^the journal is incomplete"):
            dcj.journal_to_scenario(prefix, key=KEY)
    # Whatever its last entry says: every entry, no marker.
    unmarked = dcj.Journal(request, journal.entries)
    status = dcj.journal_status(unmarked, key=KEY)
    assert status.state.finished and not status.complete
    assert status.describe() == "incomplete: the run has ended, the journal has no end marker"
    # A cut that keeps the marker is refused by the marker's count.
    with pytest.raises(JournalError, match=r"^end: the journal has an end marker, but the run"):
        dcj.journal_status(dcj.Journal(request, journal.entries[:2], end=journal.end), key=KEY)
    # A forged marker (another count, or one copied from elsewhere) does not verify.
    with pytest.raises(JournalError, match=r"^end\.mac: does not match"):
        dcj.journal_status(attrs.evolve(journal, end=dcj.JournalEnd(5, "0" * 64)), key=KEY)
    with pytest.raises(JournalError, match=r"^end\.mac: missing"):
        dcj.journal_status(attrs.evolve(journal, end=dcj.JournalEnd(5)), key=KEY)
    assert dcj.fold_journal(journal, key=KEY) == state


def test_resume_treats_a_journal_without_its_marker_as_interrupted() -> None:
    request, effects, sink, state = signed_run()
    unmarked = dcj.Journal(request, tuple(sink.list.entries))
    resumed_sink = Sink()
    calls: list[str] = []

    def count(name: str, inner: Any) -> Any:
        def call(*args: Any) -> Any:
            calls.append(name)
            return inner(*args)

        return call

    counted = attrs.evolve(
        effects,
        planner=count("planner", effects.planner), executor=count("executor", effects.executor),
        verifier=count("verifier", effects.verifier), composer=count("composer", effects.composer),
        gatekeeper=count("gatekeeper", effects.gatekeeper),
    )
    again = dc.run_diagnosis(request, counted, journal=unmarked, sink=resumed_sink, key=KEY)
    assert calls == []  # nothing re-run: the facts are all there
    assert again.result == state.result
    assert resumed_sink.writes == [sink.list.end]  # the marker the dead process never wrote


def test_replay_and_scenario_refuse_a_tampered_signed_journal() -> None:
    request, _, sink, _ = signed_run()
    wire = wire_of(sink.list.journal(request))
    tampered = copy.deepcopy(wire)
    tampered["entries"][3]["outcome"]["text"] += " "
    journal = dcj.Journal.load(tampered)
    with pytest.raises(JournalError, match=r"^entries\[3\]\.mac: does not match"):
        dcj.replay_journal(journal, key=KEY)
    with pytest.raises(JournalError, match=r"^entries\[3\]\.mac: does not match"):
        dcj.journal_to_scenario(journal, key=KEY)
    swapped = copy.deepcopy(wire)
    swapped["end"]["entries"] = 4
    with pytest.raises(JournalError, match=r"^end\.entries: the end marker covers 4 entries"):
        dcj.replay_journal(dcj.Journal.load(swapped), key=KEY)


# --- the head ------------------------------------------------------------------------------------


def test_the_head_has_a_codec_and_refuses_a_cut_or_diverging_journal() -> None:
    request, effects, sink, _ = signed_run()
    journal = sink.list.journal(request)
    head = dcj.journal_head(journal)
    assert journal.end is not None
    assert head == dcj.JournalHead(5, journal.end.mac or "")
    text = head.to_json()
    assert json.loads(text) == {"entries": 5, "mac": journal.end.mac}
    assert dcj.JournalHead.from_json(text) == head
    for bad, message in [
        ("[]", 'head: expected an object with exactly "entries" and "mac"'),
        ('{"entries": -1, "mac": "' + "0" * 64 + '"}', "head.entries: expected an integer >= 0"),
        ('{"entries": 1, "mac": "XY"}', "head.mac: expected 64 lowercase hex digits"),
        ("{", "head: not valid JSON"),
    ]:
        with pytest.raises(JournalError, match="^" + re.escape(message)):
            dcj.JournalHead.from_json(bad)
    dcj.journal_status(journal, key=KEY, head=head)  # the journal it was taken from
    with pytest.raises(JournalError, match=r"^head: checking a head needs the key"):
        dcj.journal_status(journal, head=head)
    # Cut after the planner: without the head it resumes and would run the executor again;
    # with it, resume refuses before any effect.
    cut = dcj.Journal(request, journal.entries[:1])
    assert dcj.journal_status(cut, key=KEY).describe().startswith("incomplete: ends before exec")
    with pytest.raises(JournalError, match=r"^head: the journal has 1 entries, the head commits"):
        dc.run_diagnosis(request, effects, journal=cut, sink=Sink(), key=KEY, head=head)
    with pytest.raises(JournalError, match=r"^head: the journal has 1 entries"):
        dcj.resume_journal(cut, key=KEY, head=head)
    # A head taken mid-run still accepts the journal that went on from there.
    for index in range(5):
        mid = dcj.JournalHead(index + 1, sink.writes[2 * index].mac)  # the started entry
        dcj.journal_status(journal, key=KEY, head=mid)
        mid = dcj.JournalHead(index + 1, journal.entries[index].mac or "")
        dcj.journal_status(journal, key=KEY, head=mid)


def test_the_aiops_head_and_marker_refuse_a_cut() -> None:
    journal = dca.record_aiops_scenario(load("aiops_payload_targeted.json"), key=KEY)
    head = dcj.journal_head(journal)
    cut = dcj.AiOpsJournal(journal.request, journal.entries[:3])
    assert not dcj.journal_status(cut, key=KEY).complete
    with pytest.raises(JournalError, match=r"^head: the journal has 3 entries"):
        dcj.journal_status(cut, key=KEY, head=head)
    with pytest.raises(JournalError, match=r"^head: the journal has 3 entries"):
        dcj.resume_journal(cut, key=KEY, head=head)
    scenario = dca.load_aiops_scenario(load("aiops_payload_targeted.json"))
    with pytest.raises(JournalError, match=r"^head: the journal has 3 entries"):
        dca.run_aiops(
            dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario),
            journal=cut, key=KEY, head=head,
        )
    with pytest.raises(JournalError, match=r"^the journal is incomplete"):
        dcj.replay_journal(cut, key=KEY)


# --- without a key: entries are bound to their request ----------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"run_id": "run-of-tenant-b"},
        {"session_id": "session-of-tenant-b"},
        {"metadata": {"tenant": "b"}},
    ],
    ids=["run_id", "session_id", "metadata"],
)
def test_entries_recorded_under_another_run_never_fold_under_this_request(
    change: dict[str, Any],
) -> None:
    request, _, sink, _ = signed_run(key=None)
    theirs = sink.list.journal(request)
    ours = attrs.evolve(request, run=attrs.evolve(request.run, **change))
    grafted = dcj.Journal(ours, theirs.entries)
    with pytest.raises(JournalError, match=r"^entries\[0\]\.input_sha256: the input of planner"):
        dcj.fold_journal(grafted)
    # The oracle: the planner entry's hash is bound to the canonical request.
    wire = wire_of(theirs)
    planner_input = theirs.entries[0]
    trace_hash = dc.run_diagnosis(request, dc.scenario_effects(
        dc.load_scenario(load("payment_timeout.json")))).events[0].input_sha256
    bound = oracle_sha(oracle_sha(canonical(wire["request"])) + (trace_hash or ""))
    assert planner_input.input_sha256 == bound


def test_aiops_entries_recorded_under_another_run_never_fold_under_this_request() -> None:
    journal = dca.record_aiops_scenario(load("aiops_payload_targeted.json"))
    ours = attrs.evolve(
        journal.request, run=attrs.evolve(journal.request.run, metadata={"tenant": "b"})
    )
    with pytest.raises(JournalError, match=r"^entries\[0\]\.input_sha256: the input of supervisor"):
        dcj.fold_journal(dcj.AiOpsJournal(ours, journal.entries))


def test_a_gatekeeper_input_hash_replaced_by_the_hash_of_null_is_refused() -> None:
    for key in (None, KEY):
        request, _, sink, _ = signed_run(key=key)
        wire = wire_of(sink.list.journal(request))
        gatekeeper = wire["entries"][2]
        assert gatekeeper["call"] == "gatekeeper"
        gatekeeper["input_sha256"] = oracle_sha("null")
        journal = dcj.Journal.load(wire)
        with pytest.raises(JournalError, match=r"^entries\[2\]\.input_sha256: the input of gatek"):
            dcj.fold_journal(journal)
        if key is not None:
            with pytest.raises(JournalError, match=r"^entries\[2\]\.mac: does not match"):
                dcj.fold_journal(journal, key=key)


# --- v1 journals still load and replay byte for byte ------------------------------------------


@pytest.mark.parametrize("name", ["payment_timeout", "payment_timeout.signed"])
def test_a_v1_journal_loads_folds_and_replays_byte_identically(name: str) -> None:
    text = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    output = (FIXTURES / f"{name}.output.json").read_text(encoding="utf-8")
    key = b"v1-fixture-key" if name.endswith("signed") else None
    journal = dcj.Journal.from_json(text.strip())
    assert journal.format == "diagnosis_journal_v1" and journal.end is None
    assert dcj.journal_to_json(journal) + "\n" == text
    assert dcp.canonical_json(dcj.replay_journal(journal, key=key)) + "\n" == output
    assert dcj.journal_status(journal, key=key).complete
    if key is not None:
        assert dcj.sign_journal(journal, key) == journal  # the v1 rule, unchanged
        with pytest.raises(JournalError, match=r"^entries\[0\]\.mac: does not match"):
            dcj.replay_journal(journal, key=b"another key")


@pytest.mark.parametrize("name", ["aiops_payload_targeted", "aiops_payload_targeted.signed"])
def test_a_v1_aiops_journal_loads_and_replays_byte_identically(name: str) -> None:
    text = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    output = (FIXTURES / f"{name}.output.json").read_text(encoding="utf-8")
    key = b"v1-fixture-key" if name.endswith("signed") else None
    journal = dcj.AiOpsJournal.from_json(text.strip())
    assert journal.format == "aiops_journal_v1"
    assert dcj.journal_to_json(journal) + "\n" == text
    assert dcp.canonical_json(dcj.replay_journal(journal, key=key)) + "\n" == output


def test_a_v1_journal_cannot_carry_v2_fields() -> None:
    wire = json.loads((FIXTURES / "payment_timeout.json").read_text(encoding="utf-8"))
    with_end = dict(wire, end={"entries": 5})
    with pytest.raises(JournalError, match=r'^\$: unknown key "end"'):
        dcj.Journal.load(with_end)
    derived = copy.deepcopy(wire)
    derived["entries"][2]["derived"] = True
    with pytest.raises(JournalError, match=r"^entries\[2\]: unknown key"):
        dcj.Journal.load(derived)


# --- tool records keep their audit fields; duration_ms is validated ------------------------


def test_converting_tool_records_keeps_error_and_duration() -> None:
    ticks = iter([10.0, 10.25, 20.0, 20.5])
    recorder = dct.ToolRecorder(clock=lambda: next(ticks))
    ok = recorder.wrap("ok", lambda: {"a": 1})
    bad = recorder.wrap("bad", lambda: (_ for _ in ()).throw(ValueError("nope")))
    ok()
    with pytest.raises(ValueError, match="nope"):
        bad()
    converted = dcj.recorded_tool_invocations(recorder.records())
    assert [(c.invocation_id, c.success, c.duration_ms) for c in converted] == [
        ("inv-1", True, 250), ("inv-2", False, 500),
    ]
    assert converted[0].error is None and converted[0].output_json == '{"a":1}'
    assert converted[1].error == dcj.RecordedToolError("ValueError", "nope")
    assert converted[1].output_json == "null"
    assert converted[1].input_json == '{"args":[],"kwargs":{}}'
    assert [c.to_record() for c in converted] == recorder.to_records()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "duration_ms: expected a number >= 0"),
        (float("nan"), "duration_ms: expected a number >= 0"),
        (float("inf"), "duration_ms: expected a number >= 0"),
        (True, "duration_ms: expected a number, got bool"),
        ("5", "duration_ms: expected a number, got str"),
    ],
)
def test_duration_ms_is_validated(value: object, message: str) -> None:
    with pytest.raises(JournalError, match="^" + re.escape(message)):
        dcj.RecordedToolInvocation("inv-1", "t", True, duration_ms=value)
    request, _, sink, _ = signed_run(key=None)
    wire = wire_of(sink.list.journal(request))
    wire["entries"][1]["tool_invocations"] = [
        {"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": None,
         "duration_ms": value if value == value and value not in (float("inf"),) else -1}
    ]
    if isinstance(value, float) and value != value:
        return  # NaN is not JSON; the loader never sees it
    with pytest.raises(JournalError, match=r"^entries\[1\]\.tool_invocations\[0\]: duration_ms"):
        dcj.Journal.load(wire)
    for good in (0, 12, 3.5):
        assert dcj.RecordedToolInvocation("inv-1", "t", True, duration_ms=good).duration_ms == good


def test_signing_rules_per_version_and_their_refusals() -> None:
    # A v1 journal's entries are signed by the v1 rule (no domain), entry by entry.
    text = (FIXTURES / "payment_timeout.signed.json").read_text(encoding="utf-8")
    v1 = dcj.Journal.from_json(text.strip())
    v1_key = b"v1-fixture-key"
    for index, entry in enumerate(v1.entries):
        prefix = attrs.evolve(v1, entries=v1.entries[:index])
        assert dcj.sign_entry(prefix, entry, v1_key).mac == entry.mac
    # A v2 journal without its end marker: the head is the last entry's mac.
    request, _, sink, _ = signed_run()
    journal = sink.list.journal(request)
    unended = attrs.evolve(journal, end=None)
    assert dcj.journal_head(unended) == dcj.JournalHead(5, journal.entries[4].mac or "")
    entry = journal.entries[2]
    with pytest.raises(JournalError, match=r"^entries\[2\]: entry 2 is missing; cannot sign$"):
        dcj.sign_entry(dcj.Journal(request, journal.entries[:1]), entry, KEY)
    bare = dcj.Journal(request, (*journal.entries[:1], attrs.evolve(journal.entries[1], mac=None)))
    with pytest.raises(JournalError, match=r"^entries\[1\]\.mac: missing; cannot sign the entry "):
        dcj.sign_entry(bare, entry, KEY)
    with pytest.raises(JournalError, match=r"^key: expected non-empty bytes$"):
        dcj.sign_journal(journal, b"")
    for bad in ("1", '"x"', "[]"):
        with pytest.raises(JournalError, match=r'^head: expected an object with exactly "entries"'):
            dcj.JournalHead.from_json(bad)


@pytest.mark.parametrize("name", ["payment_timeout", "aiops_payload_targeted",
                                  "payment_timeout.signed"])
def test_the_cli_replays_a_v1_journal_byte_identically(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from diagnosis_core.cli import main

    arguments = ["run", "--json", str(FIXTURES / f"{name}.json")]
    if name.endswith("signed"):
        key_file = tmp_path / "key"
        key_file.write_bytes(b"v1-fixture-key")
        arguments[2:2] = ["--journal-key-file", str(key_file)]
    assert main(arguments) == 0
    expected = (FIXTURES / f"{name}.output.json").read_text(encoding="utf-8")
    assert capsys.readouterr().out == expected


def test_an_ended_or_v1_journal_refuses_what_v2_running_entries_do() -> None:
    request, _, sink, _ = signed_run()
    journal = sink.list.journal(request)
    with pytest.raises(JournalError, match=r"^end: the journal has ended; nothing can be appended"):
        dcj.append_entry(journal, journal.entries[-1])
    recorder = dcj.JournalRecorder(attrs.evolve(journal, end=None), key=KEY)
    with pytest.raises(JournalError, match=r"^the journal's last entry is not started; nothing to"):
        recorder.progress(())
    v1 = dcj.Journal.from_json(
        (FIXTURES / "payment_timeout.json").read_text(encoding="utf-8").strip()
    )
    cut = attrs.evolve(v1, entries=(*v1.entries[:1], attrs.evolve(
        v1.entries[1], state=EntryState.STARTED, outcome=None, tool_invocations=None)))
    with pytest.raises(JournalError, match=r"^tool_invocations: a diagnosis_journal_v1 started"):
        dcj.JournalRecorder(cut).progress(())
    assert dcj.JournalRecorder(v1).close() is None and dcj.JournalRecorder(v1).journal.end is None
