"""Store URLs and files (spec §16): a query means what SQLite means or is refused.

* ``sqlite:///PATH?mode=ro`` opens the database read-only (no file named
  ``PATH?mode=ro``); ``mode=rw`` opens an existing one; any other query,
  ``mode=memory`` and ``:memory:`` (not durable) are refused naming the problem.
* The path is taken as written up to the ``?``.
* Listing, showing a session or reporting on a store that does not exist is an
  error (exit status 2), never a new empty store.
* A store's files and locks land next to the resolved store, never in the
  working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from store_support import load_example, scenario_of, with_ids

import diagnosis_core as dc
from diagnosis_core.cli import main
from diagnosis_core.journal import Feedback, StoreError
from diagnosis_core.stores import SqliteStore, open_store


def _stored(url: str, run_id: str = "run-1") -> None:
    store = open_store(url)
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                            session_id="s"))
    dc.run_diagnosis(request, effects, store=store)
    store.close()


def test_mode_ro_opens_the_database_read_only(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _stored(f"sqlite:///{path}")
    before = os.listdir(tmp_path)
    store = open_store(f"sqlite:///{path}?mode=ro")
    try:
        assert isinstance(store, SqliteStore) and store.mode == "ro"
        assert [run.run_id for run in store.runs()] == ["run-1"]
        stored = store.load("run-1")
        assert stored is not None and len(stored.journal.entries) == 5
        with pytest.raises(StoreError, match=r"opened read-only \(mode=ro\)"):
            store.claim("run-2")
        # feedback is written under the run's claim, which a read-only store never takes
        with pytest.raises(StoreError, match=r"opened read-only \(mode=ro\)"):
            store.add_feedback("run-1", Feedback(4, None, 5))
    finally:
        store.close()
    assert not (tmp_path / "runs.db?mode=ro").exists()
    # a WAL database read by SQLite has its -wal and -shm files; nothing else appears
    assert set(os.listdir(tmp_path)) - set(before) <= {"runs.db-wal", "runs.db-shm"}
    rw = open_store(f"sqlite:///{path}?mode=rw")
    rw.release(rw.claim("run-2"))
    rw.close()


@pytest.mark.parametrize("mode", ["ro", "rw"])
def test_mode_ro_or_rw_never_creates_a_database(tmp_path: Path, mode: str) -> None:
    with pytest.raises(StoreError, match=rf"no such file \(mode={mode} opens an existing"):
        open_store(f"sqlite:///{tmp_path / 'runs.db'}?mode={mode}")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("tail", "problem"), [
    (":memory:", r"sqlite:///:memory: is not durable"),
    ("runs.db?mode=memory", "mode=memory is not durable"),
    ("runs.db?cache=shared", "the SQLite parameter 'cache' is not supported"),
    ("runs.db?immutable=1", "the SQLite parameter 'immutable' is not supported"),
    ("runs.db?nolock=1", "the SQLite parameter 'nolock' is not supported"),
    ("runs.db?vfs=unix-none", "the SQLite parameter 'vfs' is not supported"),
    ("runs.db?mode=ro&mode=rw", "mode is given twice"),
    ("runs.db?mode=wal", "mode='wal' is not a SQLite mode"),
    ("runs.db?ro", "the query 'ro' is not name=value pairs"),
    ("?mode=ro", r"sqlite:/// needs a path"),
])
def test_what_sqlite_would_not_mean_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match=problem):
        open_store(f"sqlite:///{tail}")
    assert os.listdir(tmp_path) == []


def test_a_memory_or_temporary_database_is_not_a_store(tmp_path: Path) -> None:
    for path in (":memory:", ""):
        with pytest.raises(StoreError, match="not a file; a store must outlive its process"):
            SqliteStore(path)
    with pytest.raises(StoreError, match="mode: expected 'rwc', 'rw' or 'ro', got 'memory'"):
        SqliteStore(tmp_path / "runs.db", mode="memory")
    assert os.listdir(tmp_path) == []


def test_the_path_is_taken_as_written_up_to_the_query(tmp_path: Path) -> None:
    name = "my runs #1 100%25.db"
    _stored(f"sqlite:///{tmp_path / name}")
    store = open_store(f"sqlite:///{tmp_path / name}?mode=ro")
    assert [run.run_id for run in store.runs()] == ["run-1"]
    store.close()
    assert set(os.listdir(tmp_path)) - {f"{name}-wal", f"{name}-shm"} == {
        name, f"{name}.locks"}


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
@pytest.mark.parametrize("command", [
    ["runs", "ls"], ["sessions", "show", "s"], ["report"],
])
def test_reading_a_store_that_does_not_exist_is_an_error_not_a_new_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, command: list[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}" if kind == "sqlite" else str(tmp_path / "r.jsonl")
    assert main([*command, "--store", url]) == 2
    assert "no such file" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []
    with pytest.raises(StoreError, match="no such file"):
        open_store(url, create=False)
    assert os.listdir(tmp_path) == []
    _stored(url)
    capsys.readouterr()
    assert main([*command, "--store", url]) == 0


def test_files_and_locks_land_next_to_the_resolved_store_not_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, work = tmp_path / "data", tmp_path / "work"
    data.mkdir()
    work.mkdir()
    for name in ("runs.db", "runs.jsonl"):
        (work / name).symlink_to(data / name)
    monkeypatch.chdir(work)
    _stored("sqlite:///runs.db")
    _stored("runs.jsonl")
    assert sorted(os.listdir(work)) == ["runs.db", "runs.jsonl"]
    assert {"runs.db", "runs.db.locks", "runs.jsonl", "runs.jsonl.locks"} <= set(
        os.listdir(data))
