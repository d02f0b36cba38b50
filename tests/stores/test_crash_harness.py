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
changes no byte. The whole sweeps are ``slow`` (thousands of resumes) and live in
``test_crash_sweeps_jsonl.py`` and ``test_crash_sweeps_sqlite.py``, in shards that
parallel workers share; the record edges (the first byte, the byte before the newline,
the newline) and three kill points run here, in the fast lane.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs
import pytest
from crash_support import FLOWS, Reference, check_resume, entries_after, reference, run_flow

from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._jsonl import JsonlStore
from diagnosis_core.stores._sqlite import SqliteStore


@functools.cache
def recorded(flow: str) -> tuple[Reference, bytes]:
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


def cut_and_resume(flow: str, cut: int, directory: Path) -> None:
    ref, whole = recorded(flow)
    path = directory / f"cut-{cut}.jsonl"
    path.write_bytes(whole[:cut])
    complete = whole[:cut].count(b"\n")
    durable = None if complete == 0 else complete - 1
    where = f"{flow}: cut at byte {cut}"
    torn = cut > 0 and whole[cut - 1:cut] != b"\n"

    def torn_kept(reader: StoreBase) -> None:  # the torn tail is skipped, counted, not lost
        assert isinstance(reader, JsonlStore) and reader.torn_lines == int(torn), where

    check_resume(ref, lambda: JsonlStore(path), durable, where, torn_kept)
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
    _, whole = recorded(flow)
    for cut in _edges(whole):
        cut_and_resume(flow, cut, scratch)


# --- SQLite: a real writer process killed at each write it makes --------------------------

_CHILD = Path(__file__).resolve().parent / "crash_child.py"
_SYSCALLS = ("write", "pwrite64", "pwritev", "pwritev2", "fsync", "fdatasync", "ftruncate")


def strace_binary() -> str:
    """The ``strace`` binary, or skip: it must be able to trace and kill a child it starts."""
    binary = shutil.which("strace")
    if binary is None:
        pytest.skip("strace is not installed (it kills the writer at each write)")
    probe = subprocess.run([binary, "-qq", "-e", "trace=none", "true"], capture_output=True,
                           timeout=60, check=False)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode(errors='replace')[:200]}")
    return binary


@attrs.frozen
class _Syscall:
    name: str
    killed: bool


def _parse_trace(text: str) -> list[_Syscall]:
    """The traced calls in order (``strace -o`` lines, ``-f`` pid prefix)."""
    calls = []
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2 or "(" not in parts[1] or parts[1].startswith(("+++", "---")):
            continue
        name = parts[1].split("(", 1)[0]
        if name in _SYSCALLS:
            calls.append(_Syscall(name, parts[1].rstrip().endswith("= ?")))
    return calls


def _run_child(strace: str, directory: Path, flow: str, kill_at: tuple[str, int] | None,
               *, forked: bool = True) -> tuple[int, list[_Syscall], int]:
    """Run the child on ``directory/runs.db`` under strace: (exit code, writes, writes returned).

    The child is forked by this process's writer server (``crash_child.py --serve``) and
    strace attaches to it; where strace cannot attach (or ``forked`` is False), strace
    starts the child itself.
    """
    db = directory / "runs.db"
    trace, side = directory / "trace.txt", directory / "side.log"
    command = [strace, "-f", "-qq", "-o", str(trace), "-e", f"trace={','.join(_SYSCALLS)}"]
    for suffix in ("", "-wal", "-shm", "-journal"):
        command += ["-P", f"{db}{suffix}"]
    if kill_at is not None:
        command += ["-e", f"inject={kill_at[0]}:signal=KILL:when={kill_at[1]}"]
    code = _WRITERS.run(command, db, flow, side) if forked and _WRITERS.attaching else None
    if code is None:
        command += [sys.executable, str(_CHILD), str(db), flow, str(side)]
        completed = subprocess.run(command, capture_output=True, timeout=300, check=False,
                                   env={**os.environ, "PYTHONPATH": _child_path()})
        code = completed.returncode
    returned = side.read_text().count("\n") if side.exists() else 0
    return code, _parse_trace(trace.read_text()), returned


def _child_path() -> str:
    return os.environ.get("PYTHONPATH", "")


class _WriterServer:
    """``crash_child.py --serve``, started at the first kill, one per test process.

    A writer process costs a Python start and the package's imports (most of its CPU
    time) when strace starts it; forked from the server, a millisecond. The server exits
    when its standard input closes (at this process's exit, or with it).
    """

    def __init__(self) -> None:
        self.attaching = True  # False once strace could not attach: then strace starts each
        self._process: subprocess.Popen[str] | None = None

    def _server(self) -> subprocess.Popen[str]:
        if self._process is None:
            self._process = subprocess.Popen(
                [sys.executable, str(_CHILD), "--serve"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": _child_path()})
            atexit.register(self.close)
            assert self._answer() == {"ready": True}
        return self._process

    def _answer(self) -> dict[str, int]:
        assert self._process is not None and self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the writer server exited with {self._process.wait(timeout=30)}")
        answer: dict[str, int] = json.loads(line)
        return answer

    def run(self, command: list[str], db: Path, flow: str, side: Path) -> int | None:
        """Fork a writer, attach ``command`` (strace) to it: its exit code; None if no attach."""
        server = self._server()
        assert server.stdin is not None
        server.stdin.write(json.dumps({"db": str(db), "flow": flow, "side": str(side)}) + "\n")
        server.stdin.flush()
        pid = self._answer()["pid"]
        tracer = subprocess.run([*command, "-p", str(pid)], capture_output=True, timeout=300,
                                check=False)
        if tracer.returncode != 0 and b"attach" in tracer.stderr:
            os.kill(pid, signal.SIGKILL)  # waiting for a tracer that will not come
            self._answer()
            self.attaching = False
            return None
        return self._answer()["code"]

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck server
            process.kill()
            process.wait(timeout=30)


_WRITERS = _WriterServer()


@functools.cache
def _sqlite_writes(flow: str) -> tuple[_Syscall, ...]:
    """The writes an uninterrupted child makes to a fresh database, in order."""
    strace = strace_binary()
    directory = Path(tempfile.mkdtemp(prefix="crash-sqlite-"))
    try:
        _fresh_database(directory)
        code, calls, returned = _run_child(strace, directory, flow, None)
        ref = reference(flow)
        assert code == 0 and returned == 1 + len(ref.writes), (code, returned)
        assert calls and not any(call.killed for call in calls)
    finally:
        shutil.rmtree(directory)
    return tuple(calls)


def _fresh_database(directory: Path) -> None:
    SqliteStore(directory / "runs.db").close()  # the schema: the child's writes are the run's


def kill_and_resume(flow: str, k: int, strace: str, directory: Path) -> None:
    """Kill the child on entry to its ``k``-th write, then resume here and check."""
    writes = _sqlite_writes(flow)
    name = writes[k - 1].name
    ordinal = sum(call.name == name for call in writes[:k])
    run = directory / f"kill-{k}"
    run.mkdir()
    _fresh_database(run)
    code, calls, returned = _run_child(strace, run, flow, (name, ordinal))
    where = f"{flow}: SIGKILL at write {k} of {len(writes)} ({name} #{ordinal})"
    assert code != 0, where
    # the kill happened exactly there: the same writes before it, and this one never made
    assert [call.name for call in calls] == [call.name for call in writes[:k]], where
    assert calls[-1].killed and not any(call.killed for call in calls[:-1]), where
    ref = reference(flow)
    # the write in progress may have committed (killed after its commit frame) or not
    peek = SqliteStore(run / "runs.db")
    stored = peek.load(ref.run_id)
    peek.close()
    if stored is None:
        assert returned == 0, where
        durable = None
    else:
        candidates = [n for n in (returned - 1, returned) if 0 <= n <= len(ref.writes)
                      and entries_after(ref.writes, n) == stored.journal.entries]
        assert candidates, (where, returned)
        durable = candidates[-1]
    check_resume(ref, lambda: SqliteStore(run / "runs.db"), durable, where)
    shutil.rmtree(run)


SHARDS = range(6)
"""The whole sweeps (``test_crash_sweeps_*.py``) are split into shards, every
``len(SHARDS)``-th point each, so that parallel workers share them; together the shards
cover every point."""


def sqlite_points(flow: str, shard: int | None) -> list[int]:
    """Every write of the shard's (``shard`` given), else the first, a middle and the last."""
    count = len(_sqlite_writes(flow))
    if shard is not None:
        return list(range(1 + shard, count + 1, len(SHARDS)))
    return sorted({1, count // 2, count})


@pytest.mark.timeout(600)
@pytest.mark.parametrize("flow", FLOWS)
def test_sqlite_writer_killed_at_some_writes_resumes_loads_and_stays(
    flow: str, tmp_path: Path
) -> None:
    strace = strace_binary()
    for k in sqlite_points(flow, None):
        kill_and_resume(flow, k, strace, tmp_path)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("flow", FLOWS)
def test_a_forked_writer_makes_the_writes_of_a_writer_strace_starts(
    flow: str, tmp_path: Path
) -> None:
    """The sweeps' writers are forked from a server: the same writes, in the same order."""
    strace = strace_binary()
    _fresh_database(tmp_path)
    code, calls, returned = _run_child(strace, tmp_path, flow, None, forked=False)
    assert code == 0 and returned == 1 + len(reference(flow).writes)
    assert tuple(calls) == _sqlite_writes(flow)
