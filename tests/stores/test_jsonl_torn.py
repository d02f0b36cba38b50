"""Torn writes in the JSON Lines store (spec §16): a partial line is never a fact."""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_support import failing_effects, load_example, scenario_of, with_ids

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core.journal import entry_to_json
from diagnosis_core.stores import JsonlStore


def _journal() -> tuple[dc.DiagnosisRequest, dcj.Journal, dc.DiagnosisState]:
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="torn"))
    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(request, effects, sink=sink)
    return request, sink.journal(request), state


def test_a_torn_finished_line_leaves_the_started_entry_and_the_run_resumes(
    tmp_path: Path,
) -> None:
    request, journal, expected = _journal()
    path = tmp_path / "runs.jsonl"
    store = JsonlStore(path)
    with store.claim("torn") as claim:
        store.begin(claim, dcj.Journal(request))
        store.append(claim, journal.entries[0])
        started = dcj.JournalEntry(2, dcj.JournalCall.EXECUTOR, 1, 1,
                                   journal.entries[1].input_sha256, dcj.EntryState.STARTED)
        store.append(claim, started)
        size = path.stat().st_size
        store.append(claim, journal.entries[1])  # the finished executor entry...
    data = path.read_bytes()
    path.write_bytes(data[: size + (len(data) - size) // 2])  # ...torn in the middle
    reader = JsonlStore(path)
    stored = reader.load("torn")
    assert stored is not None and stored.journal.entries == (journal.entries[0], started)
    assert reader.torn_lines == 0  # an unterminated tail is not read at all
    _, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="torn"))
    state = dc.run_diagnosis(request, effects, store=reader)
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED  # §12: never re-sent
    again = JsonlStore(path)
    stored = again.load("torn")
    assert stored is not None and dcj.fold_journal(stored.journal) == state
    assert again.torn_lines == 1  # the fragment, ended by the next writer, is skipped
    assert path.read_bytes().count(b"\n") == len(path.read_bytes().splitlines())
    assert expected.result.reason_code is None


def test_a_torn_started_line_is_a_missing_entry(tmp_path: Path) -> None:
    request, journal, expected = _journal()
    path = tmp_path / "runs.jsonl"
    store = JsonlStore(path)
    with store.claim("torn") as claim:
        store.begin(claim, dcj.Journal(request))
        store.append(claim, journal.entries[0])
    line = entry_to_json(journal.entries[1]).encode()
    with open(path, "ab") as handle:
        handle.write(b'{"kind":"entry","run_id":"torn","seq":2,"payload":' + line[:40])
    _, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="torn"))
    state = dc.run_diagnosis(request, effects, store=JsonlStore(path))
    assert dc.to_json(state.result) == dc.to_json(expected.result)
    stored = JsonlStore(path).load("torn")
    assert stored is not None and stored.journal == journal


@functools.cache
def _recorded_file() -> tuple[bytes, dcj.Journal]:
    """One run recorded into a JSON Lines file by the driver: its bytes and its journal."""
    request, journal, _ = _journal()
    path = Path(tempfile.mkdtemp(prefix="torn-")) / "whole.jsonl"
    effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="torn"))[1]
    dc.run_diagnosis(request, effects, store=JsonlStore(path))
    data = path.read_bytes()
    shutil.rmtree(path.parent)
    return data, journal


@settings(max_examples=60)
@given(where=st.integers(0, 1_000_000))
def test_a_file_cut_anywhere_loads_as_the_writes_that_completed(
    tmp_path_factory: pytest.TempPathFactory, where: int
) -> None:
    """Oracle: the writes were run, s1, f1, s2, f2, …, end, one per line; a cut keeps lines."""
    whole, journal = _recorded_file()
    cut = where * len(whole) // 1_000_000
    path = tmp_path_factory.mktemp("cut") / "cut.jsonl"
    path.write_bytes(whole[:cut])
    complete = whole[:cut].count(b"\n")
    stored = JsonlStore(path).load("torn")
    if complete == 0:
        assert stored is None
        return
    writes = min(complete - 1, 2 * len(journal.entries))  # the last line may be the end marker
    count, started = (writes + 1) // 2, writes % 2 == 1
    expected = list(journal.entries[:count])
    if started:
        expected[-1] = attrs.evolve(expected[-1], state=dcj.EntryState.STARTED, outcome=None,
                                    tool_invocations=None)
    assert stored is not None and list(stored.journal.entries) == expected
    status = dcj.journal_status(stored.journal)  # a torn file always folds
    assert status.complete == (count == len(journal.entries) and not started)


def test_a_record_cut_just_before_its_newline_never_comes_back(tmp_path: Path) -> None:
    """A finished record torn just before its newline stays torn after the next write.

    Regression: the resume performed the planner call again and the next writer ended
    the fragment with ``\\n``, which made it a whole line: two finished records for
    ``seq`` 1 and a run that never loaded again ("the store file is inconsistent").
    """
    request, journal, _ = _journal()
    path = tmp_path / "runs.jsonl"
    store = JsonlStore(path)
    with store.claim("torn") as claim:
        store.begin(claim, dcj.Journal(request))
        started = attrs.evolve(journal.entries[0], state=dcj.EntryState.STARTED, outcome=None)
        store.append(claim, started)
        store.append(claim, journal.entries[0])
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[:-1])  # the finished planner line, all but its newline
    resumer = JsonlStore(path)
    stored = resumer.load("torn")
    assert stored is not None and stored.journal.entries == (started,)
    _, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="torn"))
    state = dc.run_diagnosis(request, effects, store=resumer)  # the planner is called again
    resumer.close()
    reader = JsonlStore(path)
    stored = reader.load("torn")  # was: "the store file is inconsistent"
    assert stored is not None and dcj.fold_journal(stored.journal) == state
    assert stored.journal.entries == journal.entries
    assert reader.torn_lines == 1
    finished = [json.loads(line)["seq"] for line in path.read_bytes().splitlines()
                if b"\x00" not in line and b'"state":"finished"' in line]
    assert finished == [entry.seq for entry in journal.entries]  # one finished record per seq
    reader.close()
    before = path.read_bytes()
    again = JsonlStore(path)
    assert dc.run_diagnosis(request, failing_effects(), store=again) == state
    again.close()
    assert path.read_bytes() == before  # a second resume changes nothing
