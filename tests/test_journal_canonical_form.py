"""A journal's canonical texts are written once by the codec and are the journal's own bytes.

The fold takes them all at once (``canonical_form``) and the MAC module signs
them as given; each text must be what the journal's written line holds
without its ``mac``, checked here with :mod:`json` and :mod:`hashlib`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
from diagnosis_core import JournalError
from diagnosis_core._kernel.journal.codec import canonical_form, end_text, entry_text
from diagnosis_core._kernel.wire.json import stored_json, stored_json_with
from tests._reach import journal as dcj

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = b"canonical-form-test-key"


def canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def signed_journal() -> Any:
    data = json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
    scenario = dc.load_scenario(data)
    request, effects = dc.scenario_request(scenario), dc.scenario_effects(scenario)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink, key=KEY)
    return sink.journal(request)


def test_the_canonical_form_holds_each_text_the_journal_is_written_with() -> None:
    journal = signed_journal()
    wire = json.loads(dcj.journal_to_json(journal))
    form = canonical_form(journal, signed=True, head_entries=len(journal.entries))
    assert form.request == canonical(wire["request"])
    assert form.request_sha256 == hashlib.sha256(form.request.encode("utf-8")).hexdigest()
    bare = [{k: v for k, v in entry.items() if k != "mac"} for entry in wire["entries"]]
    assert list(form.entries) == [canonical(entry) for entry in bare]
    assert list(form.entries) == [entry_text(entry) for entry in journal.entries]
    assert form.end == canonical({"entries": len(journal.entries)}) == end_text(journal.end)
    last = {**bare[-1], "state": "started"}
    del last["outcome"]
    assert form.started[0] == canonical(last)
    unsigned = canonical_form(journal, signed=False)
    assert (unsigned.request_sha256, unsigned.entries, unsigned.end) == (
        form.request_sha256, (), None
    )


@pytest.mark.parametrize("result", ['{"a":1}', '"\\ud800"', '"\ud800"', '["\U0001f600"]'])
def test_a_spliced_text_is_the_stored_json_of_the_value_it_stands_for(result: str) -> None:
    value = json.loads(result)
    wire = {"outcome": {"result": "\x00slot\x00"}, "seq": 1}
    assert stored_json_with(wire, "\x00slot\x00", result) == stored_json(
        {"outcome": {"result": value}, "seq": 1}
    )


def test_the_chain_checked_first_still_refuses_a_journal_for_its_first_problem() -> None:
    # The fold checks the whole chain before it walks the entries; an entry that is
    # not the call the run expects, before a broken link, is still what it names.
    journal = signed_journal()
    first, second, *rest = journal.entries
    wrong = attrs.evolve(journal, entries=(attrs.evolve(first, input_sha256="0" * 64),
                                           second, *rest))
    wrong = dcj.sign_journal(wrong, KEY)
    broken = attrs.evolve(wrong, entries=(wrong.entries[0],
                                          attrs.evolve(wrong.entries[1], mac="1" * 64),
                                          *wrong.entries[2:]))
    with pytest.raises(JournalError, match=r"^entries\[0\]\.input_sha256: "):
        dcj.fold_journal(broken, key=KEY)
    unsigned_first = attrs.evolve(broken, entries=(attrs.evolve(broken.entries[0], mac=None),
                                                   *broken.entries[1:]))
    with pytest.raises(JournalError, match=r"^entries\[0\]\.mac: missing "):
        dcj.fold_journal(unsigned_first, key=KEY)
