"""Tool records in the JSON Lines store: each finished tool call is appended, never rewritten.

While an executor call runs, the driver writes its ``started`` entry again as
each tool call finishes, with every call so far (spec §12.3). The store keeps
each such write as one ``tools`` record holding only the calls it adds (and
the entry's new ``mac``), and rebuilds the entry on load byte for byte. The
journal's wire form is unchanged: the oracle here is the driver's own sink.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import load_example, scenario_of, with_ids

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core.journal import StoreError, entry_to_json
from diagnosis_core.stores._jsonl import JsonlStore
from diagnosis_core.tools import ToolRecorder

KEY = b"tool records key"


def _many_tools(effects: dc.Effects, recorder: ToolRecorder, calls: int, size: int) -> dc.Effects:
    """``effects`` whose executor first calls a tool ``calls`` times, each giving ``size`` bytes."""

    def fetch(index: int) -> object:
        return {"index": index, "blob": "x" * size}

    tool = recorder.wrap("fetch", fetch)
    executor = effects.executor

    def run_tools(input: str, config: dc.RunConfig, /) -> str:
        for index in range(calls):
            tool(index)
        return executor(input, config)

    return attrs.evolve(effects, executor=run_tools)


class _Spy(JsonlStore):
    """A JSON Lines store that also keeps every entry the driver hands it, in order."""

    writes: list[Any]

    def append(self, claim: Any, entry: Any, *, duration_ms: float | None = None) -> None:
        super().append(claim, entry, duration_ms=duration_ms)
        self.writes.append(entry)


def _record(path: Path, calls: int, size: int, *, key: bytes | None = None,
            ) -> tuple[dcj.Journal, list[Any], dc.DiagnosisState]:
    doc = with_ids(load_example("payment_timeout"), run_id="tools", session_id="tools")
    request, effects = scenario_of(doc)
    recorder = ToolRecorder()
    store = _Spy(path)
    store.writes = []
    state = dc.run_diagnosis(request, _many_tools(effects, recorder, calls, size), store=store,
                             tools=recorder, key=key)
    store.close()
    listed = dcj.ListJournalSink()
    for entry in store.writes:
        listed.write(entry)
    return listed.journal(request), store.writes, state


@pytest.mark.timeout(300)
def test_two_hundred_tool_calls_of_5_kb_take_at_most_2_mb(tmp_path: Path) -> None:
    """Regression: the started executor entry was written whole at each call (105 MB here)."""
    path = tmp_path / "runs.jsonl"
    journal, _, state = _record(path, 200, 5000, key=KEY)
    size = path.stat().st_size
    assert size <= 2_000_000, size
    lines = path.read_bytes().splitlines()
    assert sum(b'"kind":"tools"' in line for line in lines) == 201  # the finished entry too
    assert max(len(line) for line in lines if b'"kind":"tools"' in line) < 6_000
    stored = JsonlStore(path).load("tools")
    assert stored is not None and stored.journal == journal
    assert dcj.fold_journal(stored.journal, key=KEY) == state
    executor = stored.journal.entries[1]
    assert executor.call is dcj.JournalCall.EXECUTOR and len(executor.tool_invocations) == 200
    # the finished record's measured duration and time, as for an entry written whole
    assert stored.durations[1] is not None and stored.written_at[1] >= stored.written_at[0]


def test_a_run_cut_after_each_tool_record_loads_the_started_entry_exactly(
    tmp_path: Path,
) -> None:
    """Each prefix of the file holds the started entry the last durable write gave, exactly."""
    path = tmp_path / "runs.jsonl"
    _, writes, _ = _record(path, 5, 50, key=KEY)
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    assert len(lines) == 1 + len(writes)
    cut = tmp_path / "cut.jsonl"
    for count in range(1, len(lines) + 1):
        cut.write_bytes(b"".join(lines[:count]))
        stored = JsonlStore(cut).load("tools")
        assert stored is not None
        by_seq = {entry.seq: entry for entry in writes[:count - 1]
                  if not isinstance(entry, dcj.JournalEnd)}
        expected = [by_seq[seq] for seq in sorted(by_seq)]
        assert [entry_to_json(entry) for entry in stored.journal.entries] == [
            entry_to_json(entry) for entry in expected]
        assert stored.durations is not None and len(stored.durations) == len(expected)
        dcj.journal_status(stored.journal, key=KEY)  # every mac verifies
        assert JsonlStore(cut).runs()[0].entry_count == len(expected)


def _tools_lines(path: Path) -> list[int]:
    return [index for index, line in enumerate(path.read_bytes().splitlines(keepends=True))
            if b'"kind":"tools"' in line]


def test_a_tool_record_out_of_place_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    _record(path, 3, 10)
    lines = path.read_bytes().splitlines(keepends=True)
    first, second = _tools_lines(path)[:2]
    swapped = list(lines)
    swapped[first], swapped[second] = lines[second], lines[first]
    cut = tmp_path / "swapped.jsonl"
    cut.write_bytes(b"".join(swapped[: second + 1]))
    with pytest.raises(StoreError, match="the tool record follows 1 tool calls, the entry has 0"):
        JsonlStore(cut).load("tools")
    doubled = tmp_path / "doubled.jsonl"
    doubled.write_bytes(b"".join([*lines[: first + 1], lines[first]]))
    with pytest.raises(StoreError, match="the tool record follows 0 tool calls, the entry has 1"):
        JsonlStore(doubled).load("tools")
    after = tmp_path / "after.jsonl"  # a tool record after the entry finished
    finished = next(index for index in range(second, len(lines))
                    if b'"state":"finished"' in lines[index])
    after.write_bytes(b"".join([*lines[: finished + 1], lines[first]]))
    with pytest.raises(StoreError, match="tool calls for entry 2, which is not the started"):
        JsonlStore(after).load("tools")


def test_a_started_entry_written_whole_after_tool_records_replaces_them(tmp_path: Path) -> None:
    """A file whose started entry was written whole again (older files) still loads."""
    path = tmp_path / "runs.jsonl"
    _, writes, _ = _record(path, 3, 10)
    lines = path.read_bytes().splitlines(keepends=True)
    last = [index for index in _tools_lines(path) if b'"state":"started"' in lines[index]][-1]
    progress = writes[last - 1]  # the write this tool record stands for
    record = json.loads(lines[last])
    whole = {"kind": "entry", "run_id": "tools", "seq": progress.seq, "state": "started",
             "payload": entry_to_json(progress), "duration_ms": None,
             "token": record["token"], "written_at": record["written_at"]}
    rewritten = tmp_path / "rewritten.jsonl"
    rewritten.write_bytes(b"".join([*lines[:last], (json.dumps(whole) + "\n").encode()]))
    stored = JsonlStore(rewritten).load("tools")
    assert stored is not None and stored.journal.entries[-1] == progress


def test_sealed_tool_records_hold_no_plaintext_and_do_not_move(tmp_path: Path) -> None:
    """With a codec a tool record is sealed, bound to its run and ``seq`` (facts at rest)."""
    pytest.importorskip("cryptography")
    from diagnosis_core.stores import AesGcmCodec

    codec = AesGcmCodec(bytes(range(32)))
    path = tmp_path / "runs.jsonl"
    doc = with_ids(load_example("payment_timeout"), run_id="tools", session_id="tools")
    request, effects = scenario_of(doc)
    recorder = ToolRecorder()
    store = JsonlStore(path, codec=codec)
    state = dc.run_diagnosis(request, _many_tools(effects, recorder, 3, 10), store=store,
                             tools=recorder)
    store.close()
    lines = path.read_bytes().splitlines(keepends=True)
    tools = _tools_lines(path)
    assert len(tools) == 4 and b"xxxxxxxxxx" not in path.read_bytes()
    assert all(json.loads(lines[index])["payload"].startswith("sealed:") for index in tools)
    stored = JsonlStore(path, codec=codec).load("tools")
    assert stored is not None and dcj.fold_journal(stored.journal) == state
    moved = json.loads(lines[tools[0]])
    moved["seq"] = 1  # the planner's seq: the sealed payload is bound to seq 2
    planner_started = next(index for index, line in enumerate(lines)
                           if b'"seq":1,"state":"started"' in line)
    forged = tmp_path / "moved.jsonl"
    forged.write_bytes(b"".join([*lines[: planner_started + 1],
                                 (json.dumps(moved) + "\n").encode()]))
    with pytest.raises(StoreError, match="does not decode"):
        JsonlStore(forged, codec=codec).load("tools")
