"""Crashes and races on every store (spec §12, §16), with real processes and real SIGKILL.

*Kill matrix*: a forked process runs a run with tools on the store and is
killed with SIGKILL (no cleanup, no flush) either during each effect or during
each store write (the write torn half-way: half a JSON line on disk, or an
uncommitted SQL row). This process then resumes the run from the store and
gets the §12 outcome: the uninterrupted result, or the fail-closed one for an
interrupted executor or gatekeeper call — with the stored journal exactly
the reference's prefix before the resume, no entry torn or doubled after it,
and no executor call ever performed twice.

*Races*: two forked processes released at the same instant both try to
resume one interrupted run; exactly one performs effects, 100 races out of 100.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core.journal import RunClaimedError
from diagnosis_core.stores import open_store
from diagnosis_core.stores._jsonl import JsonlStore
from diagnosis_core.stores._postgres import PostgresStore
from diagnosis_core.stores._sqlite import SqliteStore
from diagnosis_core.tools import ToolRecorder

EFFECTS = ("planner", "executor", "gatekeeper", "verifier", "composer")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _log(side: Path, line: str) -> None:
    fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _doc(run_id: str) -> dict[str, Any]:
    return with_ids(load_example("payment_timeout"), run_id=run_id, session_id="kill")


def _logged(effects: dc.Effects, side: Path, kill_at: str | None) -> dc.Effects:
    """Each effect logs ``begin``/``end``; the one named ``kill_at`` dies in between."""

    def wrap(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            _log(side, f"{os.getpid()} begin {name}")
            if name == kill_at:
                _die()
            result = call(*args)
            _log(side, f"{os.getpid()} end {name}")
            return result
        return run

    return attrs.evolve(effects, **{name: wrap(name, getattr(effects, name)) for name in EFFECTS})


def _tear_writes(store: Any, torn: int) -> None:
    """Make the store's ``torn``-th write die half-way (a real partial write, then SIGKILL)."""
    count = [0]
    if isinstance(store, JsonlStore):
        original = store._write

        def write(record: dict[str, object]) -> None:
            count[0] += 1
            if count[0] != torn:
                original(record)
                return
            from diagnosis_core.stores._jsonl import _line

            data = _line(record)
            os.write(store._fd, data[: len(data) // 2])
            os.fsync(store._fd)
            _die()

        store._write = write
        return
    original_execute = store._execute

    def execute(sql: str, parameters: tuple[object, ...] = ()) -> Any:
        if not sql.startswith("INSERT"):
            return original_execute(sql, parameters)
        count[0] += 1
        if count[0] != torn:
            return original_execute(sql, parameters)
        db = store._db
        db.execute("BEGIN")
        if isinstance(store, SqliteStore):
            db.execute(sql, parameters)
        else:
            db.execute(sql, parameters)
        _die()

    store._execute = execute


def _child(url: str, run_id: str, side: Path, *, kill_at: str | None = None,
           torn: int | None = None) -> None:
    """The doomed process: never returns."""
    try:
        store = open_store(url)
        if torn is not None:
            _tear_writes(store, torn)
        request, effects = scenario_of(_doc(run_id))
        recorder = ToolRecorder()
        dc.run_diagnosis(request, _logged(with_tools(effects, recorder), side, kill_at),
                         store=store, tools=recorder)
        os._exit(0)
    except BaseException:
        os._exit(70)


def _fork(target: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            target()
        finally:
            os._exit(71)
    return pid


class _Writes:
    """A sink that keeps every write in order: entries (started, progress, finished), the end."""

    def __init__(self) -> None:
        self.writes: list[Any] = []

    def write(self, entry: Any, /) -> None:
        self.writes.append(entry)


def _reference_writes(run_id: str) -> tuple[dc.DiagnosisState, dcj.Journal, list[Any]]:
    request, effects = scenario_of(_doc(run_id))
    recorder = ToolRecorder()
    sink = _Writes()
    listed = dcj.ListJournalSink()

    class Both:
        def write(self, entry: Any, /) -> None:
            sink.write(entry)
            listed.write(entry)

    state = dc.run_diagnosis(request, with_tools(effects, recorder), sink=Both(), tools=recorder)
    return state, listed.journal(request), sink.writes


def _reference(run_id: str) -> tuple[dc.DiagnosisState, dcj.Journal]:
    state, journal, _ = _reference_writes(run_id)
    return state, journal


def _entries_after(writes: list[Any], count: int) -> tuple[Any, ...]:
    """The journal's entries once the first ``count`` sink writes are durable (the end aside)."""
    by_seq: dict[int, Any] = {}
    for entry in writes[:count]:
        if isinstance(entry, dcj.JournalEnd):
            continue
        by_seq[entry.seq] = entry
    return tuple(by_seq[seq] for seq in sorted(by_seq))


def _resume_effects(run_id: str, journal: dcj.Journal | None, side: Path) -> dc.Effects:
    """Scripted effects continuing after the outcomes the stored journal has used."""
    scenario = dc.load_scenario(_doc(run_id))
    used: dict[str, int] = {}
    for entry in journal.entries if journal is not None else ():
        consumed = entry.state is dcj.EntryState.FINISHED or entry.call.value in (
            "executor", "gatekeeper")
        used[entry.call.value] = used.get(entry.call.value, 0) + int(consumed)
    responses = {agent: scenario.responses[agent][used.get(agent.value, 0):]
                 for agent in dcm.AgentName}
    effects = dc.scenario_effects(attrs.evolve(scenario, responses=responses))
    return _logged(effects, side, None)


def _side(side: Path) -> list[tuple[int, str, str]]:
    if not side.exists():
        return []
    rows = []
    for line in side.read_text().splitlines():
        pid, what, name = line.split()
        rows.append((int(pid), what, name))
    return rows


def _matrix() -> list[tuple[str, int]]:
    # payment_timeout: 5 effects -> 1 run record, then every sink write (each effect's started
    # and finished entry, the executor's entry again as each tool call finishes, the end marker)
    writes = len(_reference_writes("kill-matrix")[2])
    return [("effect", index) for index in range(len(EFFECTS))] + [
        ("write", number) for number in range(1, writes + 2)
    ]


@pytest.mark.parametrize(("mode", "point"), _matrix(),
                         ids=[f"{m}-{p}" for m, p in _matrix()])
def test_sigkill_then_resume_from_the_store(
    url: str, tmp_path: Path, mode: str, point: int
) -> None:
    run_id = f"kill-{mode}-{point}-{time.monotonic_ns()}"
    side = tmp_path / "side.log"
    reference, journal, writes = _reference_writes(run_id)
    if mode == "effect":
        pid = _fork(lambda: _child(url, run_id, side, kill_at=EFFECTS[point]))
    else:
        pid = _fork(lambda: _child(url, run_id, side, torn=point))
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    store = open_store(url)
    before = store.load(run_id)
    entries = journal.entries
    # what must be durable at the kill, exactly
    if mode == "effect":
        n = point  # entries before the killed effect, then its started entry
        expected: tuple[Any, ...] = (*entries[:n], attrs.evolve(
            entries[n], state=dcj.EntryState.STARTED, outcome=None, tool_invocations=None))
    elif point == 1:
        expected = ()
    else:
        expected = _entries_after(writes, point - 2)  # the torn write and those after it are lost
    if mode == "write" and point == 1:
        assert before is None
    else:
        assert before is not None and before.journal.entries == expected
    recorder = ToolRecorder.from_records(
        dcj.journal_tool_records(before.journal) if before is not None else [])
    request, _ = scenario_of(_doc(run_id))
    state = dc.run_diagnosis(
        request,
        with_tools(_resume_effects(run_id, before.journal if before else None, side), recorder),
        store=store, tools=recorder,
    )
    after = store.load(run_id)
    assert after is not None
    assert [e.seq for e in after.journal.entries] == list(range(1, len(after.journal.entries) + 1))
    assert all(e.state is dcj.EntryState.FINISHED for e in after.journal.entries)
    assert dcj.fold_journal(after.journal) == state
    last = expected[-1] if expected else None
    interrupted = last if last is not None and last.state is dcj.EntryState.STARTED else None
    executor_begins = [row for row in _side(side) if row[1:] == ("begin", "executor")]
    if interrupted is not None and interrupted.call is dcj.JournalCall.EXECUTOR:
        assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
        assert len(executor_begins) == 1  # never re-sent
    elif interrupted is not None and interrupted.call is dcj.JournalCall.GATEKEEPER:
        assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    else:
        assert dc.to_json(state.result) == dc.to_json(reference.result)
        assert after.journal.entries == entries  # nothing torn, nothing doubled
        assert len(executor_begins) == 1
    if isinstance(store, JsonlStore):
        assert store.torn_lines <= 1
    store.close()


def _interrupted_runs(url: str, count: int, prefix: str) -> dcj.Journal:
    """``count`` runs whose planner call was interrupted (a started first entry)."""
    store = open_store(url)
    journal = None
    for index in range(count):
        run_id = f"{prefix}-{index}"
        request, effects = scenario_of(_doc(run_id))
        sink = dcj.ListJournalSink()
        dc.run_diagnosis(request, effects, sink=sink)
        journal = sink.journal(request)
        with store.claim(run_id) as claim:
            store.begin(claim, dcj.Journal(request))
            store.append(claim, attrs.evolve(journal.entries[0], state=dcj.EntryState.STARTED,
                                             outcome=None))
    store.close()
    assert journal is not None
    return journal


def _racer(url: str, run_id: str, side: Path, gate: int, other_end: int) -> None:
    os.close(other_end)
    os.read(gate, 1)  # released when the parent closes its write end
    try:
        store = open_store(url)
        request, _ = scenario_of(_doc(run_id))
        stored = store.load(run_id)
        effects = _resume_effects(run_id, stored.journal if stored else None, side)
        dc.run_diagnosis(request, effects, store=store)
        os._exit(0)
    except RunClaimedError:
        os._exit(3)
    except BaseException:
        os._exit(70)


RACES = 100


def test_two_processes_racing_to_resume_one_run_exactly_one_performs_effects(
    url: str, tmp_path: Path
) -> None:
    prefix = f"race-{time.monotonic_ns()}"
    memory = Path("/dev/shm")
    if not url.startswith("postgresql://") and memory.is_dir():
        # exclusivity, not durability, is under test here: keep the file stores off the disk
        scratch = Path(tempfile.mkdtemp(dir=memory, prefix="store-race-"))
        url = (str(scratch / "runs.jsonl") if url.endswith(".jsonl")
               else f"sqlite:///{scratch / 'runs.db'}")
    try:
        _race(url, tmp_path, prefix)
    finally:
        if not url.startswith("postgresql://") and str(url).find("/dev/shm/") >= 0:
            shutil.rmtree(Path(url.removeprefix("sqlite:///")).parent, ignore_errors=True)


def _race_url(url: str, index: int) -> str:
    """The store of race ``index``: the shared database, or a file of its own."""
    if url.startswith("postgresql://"):
        return url
    if url.endswith(".jsonl"):
        return url.replace("runs.jsonl", f"runs-{index}.jsonl")
    return url.replace("runs.db", f"runs-{index}.db")


def _race(url: str, tmp_path: Path, prefix: str) -> None:
    refused = 0
    for index in range(RACES):
        run_id = f"{prefix}-{index}"
        race_url = _race_url(url, index)
        _interrupted_runs(race_url, 1, run_id)
        run_id = f"{run_id}-0"
        side = tmp_path / f"side-{index}.log"
        read_end, write_end = os.pipe()
        racer = functools.partial(_racer, race_url, run_id, side, read_end, write_end)
        pids = [_fork(racer) for _ in range(2)]
        os.close(read_end)
        os.close(write_end)  # both racers wake at once
        codes = []
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            codes.append(os.waitstatus_to_exitcode(status))
        assert sorted(codes) in ([0, 0], [0, 3]), codes
        refused += codes.count(3)
        performers = {pid for pid, _, _ in _side(side)}
        assert len(performers) == 1, (index, _side(side))
        assert [name for _, what, name in _side(side) if what == "begin"] == list(EFFECTS)
        store = open_store(race_url)
        stored = store.load(run_id)
        store.close()
        assert stored is not None and len(stored.journal.entries) == 5
        assert all(e.state is dcj.EntryState.FINISHED for e in stored.journal.entries)
    assert refused > 0  # the racers did overlap (most races end in a refusal)


def test_a_sqlite_row_is_never_half_written(tmp_path: Path) -> None:
    """The SQL stores' torn write is a rolled-back transaction: the row is not there."""
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    with store.claim("x") as claim:
        request, _ = scenario_of(_doc("x"))
        store.begin(claim, dcj.Journal(request))
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM diagnosis_entries").fetchone() == (0,)
    assert PostgresStore  # the PostgreSQL store is covered by the matrix above
