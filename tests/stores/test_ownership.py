"""Who owns a run (spec §16): one holder per claim, whatever the thread, the spelling, the platform.

* A claim belongs to its holder object: two threads sharing one store (one
  PostgreSQL session) never both resume a run, so an interrupted verifier call is
  sent once.
* A file store's claims are keyed by the resolved file: a symlink, a relative
  spelling or ``a/../b`` meets the same claim; a file with a second name (a hard
  link) is refused; the LangGraph thread owner follows the same rule.
* One lock file per store, whatever the number of runs; every file a store creates
  is private (0600, its lock directory 0700).
* Without ``fcntl`` (as on Windows) the stores and every adapter import, and claims
  work through the portable lock, excluding and excluded by a process that has it.
* A forked child holds none of its parent's claims and cannot release them.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from ownership_support import file_of, respelled
from store_support import EXAMPLES_DIR, ROOT, load_example, scenario_of, with_ids

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core.journal import RunClaimedError, StoreError
from diagnosis_core.stores import open_store
from diagnosis_core.stores._base import StoreBase

FILE_KINDS = ("jsonl", "sqlite")


@pytest.fixture(params=FILE_KINDS)
def file_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A file store URL under ``tmp_path/data``."""
    (tmp_path / "data").mkdir()
    if request.param == "jsonl":
        return str(tmp_path / "data" / "runs.jsonl")
    return f"sqlite:///{tmp_path / 'data' / 'runs.db'}"


# --- one holder per claim, not per process -------------------------------------------------


def _interrupted_at_the_verifier(store: StoreBase, doc: dict[str, Any]) -> dcj.Journal:
    request, effects = scenario_of(doc)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink)
    journal = sink.journal(request)
    assert [entry.call.value for entry in journal.entries][:4] == [
        "planner", "executor", "gatekeeper", "verifier"]
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        for entry in journal.entries[:3]:
            store.append(claim, entry)
        store.append(claim, attrs.evolve(journal.entries[3], state=dcj.EntryState.STARTED,
                                         outcome=None))
    return journal


def _resume_effects(doc: dict[str, Any], journal: dcj.Journal) -> dc.Effects:
    scenario = dc.load_scenario(doc)
    used: dict[str, int] = {}
    for entry in journal.entries[:3]:
        used[entry.call.value] = used.get(entry.call.value, 0) + 1
    responses = {agent: scenario.responses[agent][used.get(agent.value, 0):]
                 for agent in dcm.AgentName}
    return dc.scenario_effects(attrs.evolve(scenario, responses=responses))


def _two_resumers(store: StoreBase) -> tuple[list[int], list[Any], dcj.Journal]:
    """Two threads sharing ``store`` resume one run interrupted at its verifier call."""
    doc = with_ids(load_example("payment_timeout"), run_id=f"verifier-{time.monotonic_ns()}")
    request, _ = scenario_of(doc)
    journal = _interrupted_at_the_verifier(store, doc)
    start = threading.Barrier(2)
    finished = [threading.Event(), threading.Event()]
    calls: list[int] = []
    outcomes: list[Any] = [None, None]

    def resume(index: int) -> None:
        effects = _resume_effects(doc, journal)
        verifier = effects.verifier

        def verify(input: str, config: dc.RunConfig, /) -> str:
            calls.append(index)
            finished[1 - index].wait(timeout=3)  # the other resumer has given up by now
            return verifier(input, config)

        try:
            start.wait(timeout=60)
            outcomes[index] = dc.run_diagnosis(
                request, attrs.evolve(effects, verifier=verify), store=store)
        except RunClaimedError:
            outcomes[index] = "refused"
        except BaseException as error:
            outcomes[index] = repr(error)
        finally:
            finished[index].set()

    threads = [threading.Thread(target=resume, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    stored = store.load(request.run.run_id)
    assert stored is not None
    return calls, outcomes, stored.journal


def test_two_threads_sharing_a_store_send_an_interrupted_verifier_call_once(
    store: StoreBase,
) -> None:
    for trial in range(10):
        calls, outcomes, journal = _two_resumers(store)
        assert calls in ([0], [1]), (trial, calls)
        assert "refused" in outcomes, (trial, outcomes)
        state = next(outcome for outcome in outcomes if outcome != "refused")
        assert dcj.fold_journal(journal) == state


# --- the resolved file, not the spelling ---------------------------------------------------


def test_every_spelling_of_a_store_file_meets_the_same_claim(
    file_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = file_of(file_url)
    assert real is not None
    first = open_store(file_url)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / f"link-{real.name}").symlink_to(real)
    (tmp_path / "linked-dir").symlink_to(real.parent, target_is_directory=True)
    monkeypatch.chdir(tmp_path / "elsewhere")
    spellings = [
        tmp_path / "elsewhere" / f"link-{real.name}",  # a symlink to the file
        Path(f"link-{real.name}"),  # the same, relative
        tmp_path / "linked-dir" / real.name,  # through a symlinked directory
        Path("..") / "data" / ".." / "data" / real.name,  # dots
        Path(str(real.parent) + "//" + real.name),  # a doubled slash
    ]
    try:
        with first.claim("run-1"):
            for spelling in spellings:
                other = open_store(respelled(file_url, spelling))
                try:
                    with pytest.raises(RunClaimedError, match="another live writer holds it"):
                        other.claim("run-1")
                    other.release(other.claim("run-2"))
                finally:
                    other.close()
    finally:
        first.close()
    assert sorted(os.listdir(tmp_path / "elsewhere")) == [f"link-{real.name}"]


def test_a_store_file_with_a_second_name_is_refused(file_url: str, tmp_path: Path) -> None:
    real = file_of(file_url)
    assert real is not None
    open_store(file_url).close()
    second = tmp_path / f"second-{real.name}"
    os.link(real, second)
    with pytest.raises(StoreError, match=r"has 2 names \(hard links\); open it by one name"):
        store = open_store(respelled(file_url, second))
        try:
            store.claim("run-1")
        finally:
            store.close()


def test_the_langgraph_owner_meets_the_same_claim_through_a_symlinked_database(
    tmp_path: Path,
) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    from langgraph.checkpoint.sqlite import SqliteSaver

    from diagnosis_core.adapters._langgraph_owner import owner
    from diagnosis_core.adapters.langgraph import ThreadBusyError

    (tmp_path / "data").mkdir()
    real = tmp_path / "data" / "c.sqlite"
    link = tmp_path / "c-link.sqlite"
    with SqliteSaver.from_conn_string(str(real)) as first:
        first.setup()
        link.symlink_to(real)
        busy = pytest.raises(ThreadBusyError, match=rf"thread 't'.*pid {os.getpid()} on ")
        with SqliteSaver.from_conn_string(str(link)) as second, owner(first, "t", None):
            with busy, owner(second, "t", None):
                pass
            with owner(second, "other", None):
                pass
    assert not (tmp_path / "c-link.sqlite.locks").exists()


# --- bounded, private files ----------------------------------------------------------------


def test_ten_thousand_runs_leave_one_lock_file(file_url: str) -> None:
    store = open_store(file_url)
    real = file_of(file_url)
    assert real is not None
    try:
        for index in range(10_000):
            store.release(store.claim(f"run-{index}"))
    finally:
        store.close()
    locks = real.parent / f"{real.name}.locks"
    assert [path.name for path in locks.iterdir()] == ["claims.lock"]
    assert (locks / "claims.lock").stat().st_size == 0


def test_every_file_a_store_creates_is_private(file_url: str) -> None:
    real = file_of(file_url)
    assert real is not None
    previous = os.umask(0o022)
    try:
        store = open_store(file_url)
        request, effects = scenario_of(with_ids(load_example("payment_timeout")))
        with store.claim("held"):
            dc.run_diagnosis(request, effects, store=store)
            created = sorted(path for path in real.parent.rglob("*"))
            modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in created}
        store.close()
    finally:
        os.umask(previous)
    expected = {real.name: 0o600, f"{real.name}.locks": 0o700, "claims.lock": 0o600}
    if file_url.startswith("sqlite:"):
        expected |= {f"{real.name}-wal": 0o600, f"{real.name}-shm": 0o600}
    else:  # the derived summaries' index, beside the store (docs/stores.md)
        expected |= {f"{real.name}.summaries": 0o600}
    assert modes == expected


# --- without fcntl -----------------------------------------------------------------------------

_WITHOUT_FCNTL = r"""
import importlib, json, pkgutil, sys
sys.modules["fcntl"] = None  # as on Windows: importing it fails

import diagnosis_core as dc
import diagnosis_core.adapters
import diagnosis_core.journal as journal
import diagnosis_core.stores as stores
for package in (diagnosis_core.adapters, stores):
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
from diagnosis_core.stores._ownership import lock_primitive

jsonl_url, sqlite_url, example = sys.argv[1:4]
print(lock_primitive(), sys.modules["fcntl"], flush=True)
scenario = dc.load_scenario(json.load(open(example, encoding="utf-8")))
opened = [stores.open_store(jsonl_url), stores.open_store(sqlite_url)]
for store in opened:  # a whole run: claims and (JSON Lines) the append lock
    dc.run_diagnosis(dc.scenario_request(scenario), dc.scenario_effects(scenario), store=store)
held = [store.claim("held") for store in opened]
for url in (jsonl_url, sqlite_url):
    other = stores.open_store(url)
    try:
        other.claim("held")
    except journal.RunClaimedError:
        pass
    else:
        raise SystemExit("claimed twice")
    other.close()
threads = stores.Claims.in_file(sqlite_url.removeprefix("sqlite:///"), b"langgraph-thread:")
thread, _ = threads.try_acquire("t")
assert thread is not None and threads.try_acquire("t")[0] is None
print("held", flush=True)
sys.stdin.readline()
for store, claim in zip(opened, held):
    store.release(claim)
threads.release(thread)
print("released", flush=True)
sys.stdin.readline()
"""


def test_without_fcntl_the_stores_and_adapters_import_and_claims_hold(tmp_path: Path) -> None:
    from diagnosis_core.stores import Claims

    jsonl_url = str(tmp_path / "runs.jsonl")
    sqlite_url = f"sqlite:///{tmp_path / 'runs.db'}"
    child = subprocess.Popen(
        [sys.executable, "-c", _WITHOUT_FCNTL, jsonl_url, sqlite_url,
         str(EXAMPLES_DIR / "payment_timeout.json")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "os.lockf None\n", child.stderr
        assert child.stdout.readline() == "held\n"
        for url in (jsonl_url, sqlite_url):  # this process locks with fcntl: the same locks
            store = open_store(url)
            with pytest.raises(RunClaimedError, match=f"pid {child.pid} on "):
                store.claim("held")
            store.close()
        threads = Claims.in_file(tmp_path / "runs.db", b"langgraph-thread:")
        assert threads.try_acquire("t") == (None, f"pid {child.pid} on {os.uname().nodename}")
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline() == "released\n"
        for url in (jsonl_url, sqlite_url):
            store = open_store(url)
            store.release(store.claim("held"))
            stored = store.load("run-payment-001")
            assert stored is not None and len(stored.journal.entries) == 5
            store.close()
        child.stdin.close()
        assert child.wait(60) == 0, child.stderr.read() if child.stderr else ""
    finally:
        child.kill()
        child.wait(60)


# --- fork -------------------------------------------------------------------------------------


def test_a_forked_child_holds_none_of_its_parents_claims(file_url: str) -> None:
    store = open_store(file_url)
    claim = store.claim("parent's")
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            store.release(claim)  # a copy of the parent's claim: releases nothing
            mine = open_store(file_url)
            try:
                mine.claim("parent's")
            except RunClaimedError as error:
                if f"pid {parent} on " in str(error):
                    mine.release(mine.claim("child's"))
                    code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    other = open_store(file_url)
    with pytest.raises(RunClaimedError):
        other.claim("parent's")
    store.release(claim)
    other.release(other.claim("parent's"))
    other.close()
    store.close()


def _claimed_elsewhere(url: str, run_id: str) -> bool:
    """Whether a forked process is refused ``run_id`` (held by another process)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            store = open_store(url)
            try:
                store.claim(run_id)
                code = 0
            except RunClaimedError:
                code = 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 3), code
    return code == 3


def test_a_lock_file_reached_by_a_second_path_is_not_opened_twice(file_url: str) -> None:
    real = file_of(file_url)
    assert real is not None
    first = open_store(file_url)
    claim = first.claim("run-1")
    other = real.with_name(f"other-{real.name}")  # another store whose lock directory is
    other.with_name(f"{other.name}.locks").symlink_to(  # the first one's, by a second path
        real.with_name(f"{real.name}.locks"), target_is_directory=True)
    second = open_store(respelled(file_url, other))
    second.release(second.claim("run-2"))
    second.close()  # closing a second descriptor of the lock file would drop run-1's lock
    assert _claimed_elsewhere(file_url, "run-1")
    first.release(claim)
    assert not _claimed_elsewhere(file_url, "run-1")
    first.close()


def test_the_portable_lockf_primitive_excludes_another_process_and_releases(
    tmp_path: Path,
) -> None:
    # The primitive a platform without fcntl uses, taken here in this process (the
    # fcntl-absent test above runs it in a child): one byte locked, another process is
    # refused that byte but not the next, and the byte is free once unlocked.
    from diagnosis_core.stores._ownership import _LockfLocks

    path = tmp_path / "claims.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    probe = (
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "os.lseek(fd, int(sys.argv[2]), os.SEEK_SET)\n"
        "try:\n"
        "    os.lockf(fd, os.F_TLOCK, 1)\n"
        "except OSError:\n"
        "    print('refused')\n"
        "else:\n"
        "    print('locked')\n"
    )

    def other_process(offset: int) -> str:
        done = subprocess.run([sys.executable, "-c", probe, str(path), str(offset)],
                              capture_output=True, text=True, timeout=60, check=True)
        return done.stdout.strip()

    locks = _LockfLocks()
    try:
        assert locks.name == "os.lockf" and not locks.positional
        assert locks.try_lock(fd, 7)
        assert locks.holder_pid(fd, 7) is None  # lockf cannot tell who holds a byte
        assert not locks.wait_lock(fd, 7)  # no blocking wait: callers poll try_lock
        assert other_process(7) == "refused"
        assert other_process(8) == "locked"
        locks.unlock(fd, 7)
        assert other_process(7) == "locked"
    finally:
        os.close(fd)


# --- the public face: a host's own names ----------------------------------------------------


def test_a_hosts_names_are_held_once_per_namespace_and_place(tmp_path: Path) -> None:
    from diagnosis_core.stores import Claims

    jobs, other = object(), object()
    claims = Claims.in_process(jobs, b"jobs:")
    handle, holder = claims.try_acquire("j1")
    assert handle is not None and holder is None
    refused, by = Claims.in_process(jobs, b"jobs:").try_acquire("j1")
    assert refused is None and by is not None and by.startswith(f"pid {os.getpid()} on ")
    for free in (Claims.in_process(other, b"jobs:"), Claims.in_process(jobs, b"reports:")):
        held, _ = free.try_acquire("j1")  # another object, another namespace: another name
        assert held is not None
        free.release(held)
    claims.release(handle)
    claims.release(handle)  # idempotent
    again, _ = Claims.in_process(jobs, b"jobs:").try_acquire("j1")
    assert again is not None

    in_file = Claims.in_file(tmp_path / "jobs.db", b"jobs:")
    first, _ = in_file.try_acquire("j1")
    assert first is not None
    assert Claims.in_file(tmp_path / "." / "jobs.db", b"jobs:").try_acquire("j1")[0] is None
    in_file.release(first)
    assert (tmp_path / "jobs.db.locks" / "claims.lock").exists()


class _ScriptedSession:
    """A PostgreSQL session whose statements answer from a script, in order."""

    def __init__(self, rows: list[tuple[object, ...] | None]) -> None:
        self.rows = rows
        self.sent: list[str] = []

    def execute(self, sql: str, parameters: tuple[object, ...]) -> _ScriptedSession:
        self.sent.append(sql.split()[1])
        return self

    def fetchone(self) -> tuple[object, ...] | None:
        return self.rows.pop(0)


def test_a_holder_that_lets_go_between_the_lock_and_the_lookup_is_not_reported() -> None:
    # The lock is refused, then the holder's session ends before the claimant asks who
    # held it: the claimant asks for the lock again and gets it (a race seen under load).
    from diagnosis_core.stores._ownership import ConnectionClaims

    session = _ScriptedSession([(False,), None, (True,)])
    assert ConnectionClaims._holder_while_held(session, 7) is None
    assert session.sent == ["pg_try_advisory_lock(%s)", "a.application_name,",
                            "pg_try_advisory_lock(%s)"]
    nobody = _ScriptedSession([(False,), None] * 4)
    assert ConnectionClaims._holder_while_held(nobody, 7) == ""  # never seen: unknown
