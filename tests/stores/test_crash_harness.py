"""Crash consistency at every byte (JSON Lines) and at every write (SQLite), spec §12, §16.

The anchor is SQLite's own crash tests, which simulate a power loss at every
write. A chat run whose executor calls two recorded tools (its started entry
written again as each finishes, §12.3) and an AIOps run are recorded; then:

* **JSON Lines, every byte offset.** For every offset ``0..len(file)`` the
  file is cut there — a torn last record, or a whole record without its
  newline (the cut just before it) — and the run is resumed in this process
  by a new store object, as a restarted writer would.
* **SQLite, every write.** A child process runs the flow on a real database
  under ``strace``, which delivers SIGKILL on entry to its ``k``-th write to
  the database or its WAL (``write``, ``pwrite64``, ``fsync``,
  ``fdatasync``, ``ftruncate``) for every ``k``; the run is then resumed in
  this process.

After each crash :func:`crash_support.check_resume` asserts: the stored run
is exactly the writes that completed; the resume gives the §12 outcome (the
uninterrupted result, or the fail-closed one of an interrupted executor or
gatekeeper call) and performs nothing whose start is durable a second time;
the run loads afterwards, whole; and a second resume performs nothing and
changes no byte. The whole sweeps are ``slow`` (thousands of resumes);
the record edges (the first byte, the byte before the newline, the newline)
run in the fast lane.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from crash_support import FLOWS, Reference, check_resume, reference, run_flow

from diagnosis_core.stores._jsonl import JsonlStore


@functools.cache
def _recorded(flow: str) -> tuple[Reference, bytes]:
    """The flow's reference and the JSON Lines file its uninterrupted run writes."""
    ref = reference(flow)
    directory = Path(tempfile.mkdtemp(prefix="crash-record-"))
    try:
        path = directory / "whole.jsonl"
        store = JsonlStore(path)
        from crash_support import effects_after, recorder_of

        recorder = recorder_of(flow, None)
        state = run_flow(flow, ref.request, effects_after(flow, ref.run_id, (), [], recorder),
                         store=store, tools=recorder)
        store.close()
        assert state == ref.state
        whole = path.read_bytes()
    finally:
        shutil.rmtree(directory)
    assert whole.count(b"\n") == 1 + len(ref.writes)  # the run record, then one line a write
    return ref, whole


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory for the cut files: in memory when possible (durability is not under test)."""
    memory = Path("/dev/shm")
    if memory.is_dir() and os.access(memory, os.W_OK):
        directory = Path(tempfile.mkdtemp(dir=memory, prefix="crash-cut-"))
        yield directory
        shutil.rmtree(directory, ignore_errors=True)
    else:  # pragma: no cover - a machine without /dev/shm
        yield tmp_path


def _cut_and_resume(flow: str, cut: int, directory: Path) -> None:
    ref, whole = _recorded(flow)
    path = directory / f"cut-{cut}.jsonl"
    path.write_bytes(whole[:cut])
    complete = whole[:cut].count(b"\n")
    durable = None if complete == 0 else complete - 1
    check_resume(ref, lambda: JsonlStore(path), durable, f"{flow}: cut at byte {cut}")
    reader = JsonlStore(path)
    assert reader.load(ref.run_id) is not None
    torn = cut > 0 and whole[cut - 1:cut] != b"\n"
    assert reader.torn_lines == int(torn), f"{flow}: cut at byte {cut}"
    reader.close()
    path.unlink()


def _edges(whole: bytes) -> list[int]:
    """Every record's first byte, second byte, the byte before its newline and its newline."""
    cuts = {0, len(whole)}
    start = 0
    for index, byte in enumerate(whole):
        if byte == 0x0A:
            cuts.update({start + 1, index - 1, index, index + 1})
            start = index + 1
    return sorted(cut for cut in cuts if 0 <= cut <= len(whole))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("flow", FLOWS)
def test_jsonl_cut_at_every_record_edge_resumes_loads_and_stays(
    flow: str, scratch: Path
) -> None:
    _, whole = _recorded(flow)
    for cut in _edges(whole):
        _cut_and_resume(flow, cut, scratch)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("flow", FLOWS)
def test_jsonl_cut_at_every_byte_offset_resumes_loads_and_stays(
    flow: str, scratch: Path
) -> None:
    _, whole = _recorded(flow)
    for cut in range(len(whole) + 1):
        _cut_and_resume(flow, cut, scratch)
