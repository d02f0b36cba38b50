"""Properties of the AIOps run journal (spec §12, last bullet).

1. For generated AIOps runs, the fold of the journal the journaling driver
   wrote is the state of the same run driven *without* a journal (the
   oracle: the plain driver, which never sees a journal), and the journal
   replays — directly and through its scenario — to ``replay_aiops`` of the
   scenario.
2. With a key, every single-field edit of an entry is refused.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st
from test_aiops_properties import SETTINGS, _run, scenarios

import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp
from diagnosis_core import JournalError
from tests._reach import aiops as dca

KEY = b"aiops-property-key"


def _journaled(document: dict[str, Any], key: bytes | None) -> tuple[dcj.AiOpsJournal, Any]:
    scenario = dca.load_aiops_scenario(document)
    request = dca.aiops_scenario_request(scenario)
    sink = dcj.ListAiOpsJournalSink()
    state = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), sink=sink, key=key)
    return sink.journal(request), state


@SETTINGS
@given(scenarios(), st.sampled_from([None, KEY]))
def test_the_fold_of_a_live_aiops_journal_is_the_live_state(
    document: dict[str, Any], key: bytes | None
) -> None:
    live = _run(document)
    journal, state = _journaled(document, key)
    assert state == live
    loaded = dcj.AiOpsJournal.from_json(dcj.journal_to_json(journal))
    assert loaded == journal
    assert dcj.fold_journal(loaded, key=key) == live
    assert dcj.journal_status(loaded, key=key).complete
    # Calls in the journal are exactly the agent invocations of the live run.
    assert [(e.call, e.round, e.attempt) for e in journal.entries] == [
        (record.agent, record.step, record.attempt) for record in live.invocations
    ]


@SETTINGS
@given(scenarios())
def test_a_recorded_aiops_journal_replays_like_its_scenario(document: dict[str, Any]) -> None:
    expected = dcp.canonical_json(dca.replay_aiops(document))
    executor_called = _run(document).calls.executor > 0
    if document["tool_ledger"] and not executor_called:
        try:
            dca.record_aiops_scenario(document)
        except JournalError as error:
            assert str(error).startswith("tool_ledger: the run makes no executor call")
            return
        raise AssertionError("a ledger without an executor call was journaled")
    journal = dca.record_aiops_scenario(document)
    assert dcp.canonical_json(dcj.replay_journal(journal)) == expected
    scenario = dcj.journal_to_scenario(journal)
    assert dcp.canonical_json(dca.replay_aiops(json.loads(json.dumps(scenario)))) == expected


def _edit(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + data.draw(st.integers(1, 3))
    if isinstance(value, str):
        return value + data.draw(st.sampled_from(["x", " ", "0"]))
    if isinstance(value, dict):
        key = data.draw(st.sampled_from(sorted(value)))
        return {**value, key: _edit(value[key], data)}
    if isinstance(value, list) and value:
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], _edit(value[index], data), *value[index + 1 :]]
    return "edited"


@SETTINGS
@given(scenarios(), st.data())
def test_with_a_key_every_single_field_edit_is_refused(
    document: dict[str, Any], data: st.DataObject
) -> None:
    journal, _ = _journaled(document, KEY)
    wire = json.loads(dcj.journal_to_json(journal))
    index = data.draw(st.integers(0, len(wire["entries"]) - 1))
    entry = wire["entries"][index]
    field = data.draw(st.sampled_from(sorted(entry)))
    edited = _edit(entry[field], data)
    note(f"entries[{index}].{field}: {entry[field]!r} -> {edited!r}")
    entry[field] = edited
    try:
        loaded = dcj.AiOpsJournal.load(wire)
    except JournalError as error:  # the form is broken: the loader names the entry
        assert str(error).startswith(f"entries[{index}]"), error
        return
    try:
        dcj.fold_journal(loaded, key=KEY)
    except JournalError as error:  # refused by the edited entry's MAC, not by anything else
        assert str(error).startswith(f"entries[{index}].mac: "), error
        return
    raise AssertionError("an edited signed journal verified")
