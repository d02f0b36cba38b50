"""Properties of the run journal (spec §12).

1. The fold of a live run's journal is the live state, and the journal's
   scenario replays to the same JSON.
2. A single-field edit of an entry is refused by fold-and-verify, or — for an
   outcome — folds to what the edited facts imply. The oracle is independent
   of the fold: the *scenario* is edited the same way and replayed through
   the ordinary driver.
3. With a key, every edit is refused.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import assume, given, note
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
import diagnosis_core.testing as dt
from diagnosis_core import (
    JournalError,
)
from diagnosis_core.journal import (
    Journal,
    JournalRecorder,
)

KEY = b"property-key"

# What the §9 scripted doubles raise per error kind (spec §9, _replay.py), and
# so the text a journal records for a scripted error: written out here, not
# taken from the code under test.
_SCRIPTED_CLASS = {
    "retryable": ("retryable", "ScriptedError"),
    "non_retryable": ("non_retryable", "NonRetryableError"),
    "tool_blocked": ("tool_blocked", "ToolBlockedError"),
    "unknown": ("non_retryable", "UnknownScriptedError"),
}
_NO_RESPONSE = {"error": {"kind": "non_retryable", "message": "no scripted response left"}}
_NO_GATEKEEPER = {"error": {"message": "no scripted gatekeeper result left"}}


def record(document: dict[str, Any], key: bytes | None = None) -> tuple[Journal, dc.DiagnosisState]:
    scenario = dc.load_scenario(document)
    request, effects = dc.scenario_request(scenario), dc.scenario_effects(scenario)
    recorder = JournalRecorder(Journal(request), key=key)
    state = dcm.start_diagnosis(request)
    while not isinstance(action := dcm.next_action(state), dcm.Finished):
        recorder.begin(action)
        state = dcm.advance(state, recorder.end(dcm.perform_effect(action, effects)))
    return recorder.journal, state


@given(dt.scenarios())
def test_the_fold_of_a_live_journal_is_the_live_state(document: dict[str, Any]) -> None:
    journal, recorded = record(document)
    live = dc.replay_scenario(dc.load_scenario(document))  # the plain driver, no journal
    assert recorded == live
    loaded = dcj.Journal.from_json(dcj.journal_to_json(journal))
    assert loaded == journal
    assert dcj.fold_journal(loaded) == live
    expected = dcp.canonical_json(dc.replay(document))
    assert dcp.canonical_json(dcj.replay_journal(loaded)) == expected
    assert dcp.canonical_json(dc.replay(dcj.journal_to_scenario(loaded))) == expected


# --- single-field edits -----------------------------------------------------------------------


def _journal_outcome(scenario_entry: dict[str, Any], gatekeeper: bool) -> dict[str, Any]:
    """The outcome a journal records when the scenario scripts ``scenario_entry``."""
    if "text" in scenario_entry or "result" in scenario_entry:
        return scenario_entry
    error = scenario_entry["error"]
    message = error.get("message") or ""
    if gatekeeper:
        shown = message or "scripted gatekeeper error"
        return {"error": {"message": f"NonRetryableError: {shown}"}}
    kind, name = _SCRIPTED_CLASS[error["kind"]]
    return {"error": {"kind": kind, "message": f"{name}: {message}" if message else name}}


def _agent_entries() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda text: {"text": text}, dt.texts(max_size=30)),
        st.builds(
            lambda kind, message: {"error": {"kind": kind, "message": message}},
            st.sampled_from(sorted(_SCRIPTED_CLASS)),
            st.text(st.characters(codec="utf-8"), max_size=10),
        ),
    )


def _gatekeeper_entries() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda result: {"result": dc.to_wire(result)}, dt.gatekeeper_result_values()),
        st.builds(lambda result: {"result": result}, st.sampled_from([None, {}, [], "pass"])),
        st.builds(
            lambda message: {"error": {"message": message}},
            st.text(st.characters(codec="utf-8"), min_size=1, max_size=10),
        ),
    )


def _edited_scenario(
    document: dict[str, Any], journal: Journal, index: int, new: dict[str, Any]
) -> dict[str, Any]:
    """``document`` with the response behind entry ``index`` replaced by ``new``."""
    call = journal.entries[index].call.value
    earlier = sum(1 for entry in journal.entries[:index] if entry.call.value == call)
    edited = copy.deepcopy(document)
    # A scenario without ``run`` derives its run id from its content: keep the original one.
    edited["run"] = dc.to_wire(journal.request.run)
    if call == "gatekeeper":
        items = list(edited.get("gatekeeper") or [])
        filler = _NO_GATEKEEPER
    else:
        items = list((edited.get("responses") or {}).get(call) or [])
        filler = _NO_RESPONSE
    items = items[:earlier] + [filler] * (earlier - len(items)) + [new] + items[earlier + 1 :]
    if call == "gatekeeper":
        edited["gatekeeper"] = items
    else:
        edited.setdefault("responses", {})[call] = items
    return edited


_HEADER_FIELDS = ("seq", "call", "round", "attempt", "input_sha256", "state")


def _header_edit(draw: st.DrawFn, entry: dict[str, Any], field: str) -> object:
    value = entry[field]
    if field in ("seq", "round", "attempt"):
        return draw(st.integers(1, 5).filter(lambda new: new != value))
    if field == "call":
        names = ["planner", "executor", "verifier", "composer", "gatekeeper"]
        return draw(st.sampled_from([name for name in names if name != value]))
    if field == "input_sha256":
        return draw(st.text("0123456789abcdef", min_size=64, max_size=64).filter(
            lambda new: new != value))
    return "started"


@given(dt.scenarios(gatekeeper="scripted"), st.data())
def test_a_single_field_edit_is_refused_or_folds_to_what_the_edited_facts_imply(
    document: dict[str, Any], data: st.DataObject
) -> None:
    journal, _ = record(document)
    wire = json.loads(dcj.journal_to_json(journal))
    index = data.draw(st.integers(0, len(wire["entries"]) - 1), label="entry")
    entry = wire["entries"][index]
    field = data.draw(st.sampled_from((*_HEADER_FIELDS, "outcome")), label="field")
    if field != "outcome":
        new_value = _header_edit(data.draw, entry, field)
        assume(new_value != entry[field])
        entry[field] = new_value
        if field == "state":
            entry.pop("outcome")
        note(f"entries[{index}].{field} = {new_value!r}")
        try:
            status = dcj.journal_status(dcj.Journal.load(wire))
        except JournalError:
            return
        # The only header edit that stays valid: the last entry marked started,
        # which says "the process died during it" — the state before that entry.
        assert field == "state" and index == len(wire["entries"]) - 1
        before = Journal(journal.request, journal.entries[:index])
        assert status.state == dcj.fold_journal(before)
        assert status.interrupted is not None and not status.complete
        return
    gatekeeper = entry["call"] == "gatekeeper"
    scenario_entry = data.draw(_gatekeeper_entries() if gatekeeper else _agent_entries())
    entry["outcome"] = _journal_outcome(scenario_entry, gatekeeper)
    note(f"entries[{index}].outcome = {entry['outcome']!r}")
    try:
        status = dcj.journal_status(dcj.Journal.load(wire))
    except JournalError:
        return
    oracle = dc.replay(_edited_scenario(document, journal, index, scenario_entry))
    if status.complete:
        assert dcp.canonical_json(dc.to_wire(status.state.result)) == dcp.canonical_json(oracle)
    else:
        # The edited facts need calls the journal does not have: what it has is a
        # prefix of the run they imply.
        events = dc.to_wire(status.state.events)
        assert isinstance(events, list)
        assert oracle["trace"][: len(events)] == events


def _any_edit(draw: st.DrawFn, wire: dict[str, Any]) -> str:
    """Change one field anywhere in a signed journal; returns what was changed."""
    where = draw(st.sampled_from(("request", "entry", "mac")))
    if where == "request":
        field = draw(st.sampled_from(("question", "config", "run")))
        if field == "question":
            wire["request"]["question"] += draw(st.text(min_size=1, max_size=3))
        elif field == "config":
            config = wire["request"]["config"]
            config["history_limit"] = (config["history_limit"] + 1) % 100
        else:
            wire["request"]["run"]["session_id"] += "x"
        return f"request.{field}"
    index = draw(st.integers(0, len(wire["entries"]) - 1))
    entry = wire["entries"][index]
    if where == "mac":
        mac = entry["mac"]
        entry["mac"] = ("0" if mac[0] != "0" else "1") + mac[1:]
        return f"entries[{index}].mac"
    field = draw(st.sampled_from((*_HEADER_FIELDS, "outcome")))
    if field == "outcome":
        outcome = entry.get("outcome")
        assume(outcome is not None)
        assert outcome is not None
        if "text" in outcome:
            outcome["text"] += "x"
        elif "result" in outcome:
            entry["outcome"] = {"result": [outcome["result"]]}
        else:
            outcome["error"]["message"] += "x"
        return f"entries[{index}].outcome"
    new_value = _header_edit(draw, entry, field)
    assume(new_value != entry[field])
    entry[field] = new_value
    if field == "state":
        entry.pop("outcome", None)
    return f"entries[{index}].{field}"


@given(dt.scenarios(), st.data())
def test_with_a_key_every_edit_is_refused(document: dict[str, Any], data: st.DataObject) -> None:
    journal, _ = record(document, key=KEY)
    wire = json.loads(dcj.journal_to_json(journal))
    dcj.fold_journal(dcj.Journal.load(wire), key=KEY)  # the untouched journal verifies
    changed = _any_edit(data.draw, wire)
    note(changed)
    # The check that refuses the edit is the MAC of the edited entry (an edited request:
    # the first entry's, whose link is the request's HMAC) — or, for an edit that breaks
    # the form, the loader naming the edited place.
    edited = changed.partition(".")[0] if changed.startswith("entries") else "entries[0]"
    try:
        loaded = dcj.Journal.load(wire)
    except JournalError as error:
        assert str(error).startswith(changed.rpartition(".")[0] or changed), (changed, error)
        return
    try:
        dcj.fold_journal(loaded, key=KEY)
    except JournalError as error:
        assert str(error).startswith(f"{edited}.mac: does not match"), (changed, error)
        return
    raise AssertionError(f"an edit of {changed} was accepted with a key")
