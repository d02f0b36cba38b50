"""The SQLite store: the embedded default, stdlib ``sqlite3`` in WAL mode (spec §16).

Three tables (``diagnosis_runs``, ``diagnosis_entries`` keyed by ``(run_id,
seq)``, ``diagnosis_feedback``); every write is one autocommitted statement
with ``synchronous=FULL``, so a write is durable when the call returns and a
process killed during it leaves either the whole row or none — a torn write
is the entry it failed to be. A finished entry replaces its started row
through an upsert that only ever matches a ``started`` row. Appends touch one
row through the primary key: O(1) in the journal's length (well, O(log n) in
the table's size).

Writers are exclusive per run through a byte-range lock in the store's one lock
file, ``<resolved path>.locks/claims.lock`` (``_ownership.py``), which the kernel
releases when the holder dies; so the database must be on a local file system,
like SQLite's own locking requires.

**Opening.** The database is created ``0600`` before SQLite opens it, so its
``-wal`` and ``-shm`` files, which SQLite creates with the database's
permissions, are ``0600`` too. ``mode`` is SQLite's own: ``rwc`` creates the
database when missing, ``rw`` opens an existing one, ``ro`` opens it read-only
(nothing can be claimed or written). ``:memory:`` and the empty path (a
temporary database) are refused: a store must outlive its process.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from ..journal import StoreError
from ._base import PayloadCodec, RawRun
from ._ownership import RunLocks
from ._sql import SqlStore

__all__ = ["SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS diagnosis_runs (
    ord INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    format TEXT NOT NULL,
    created_at REAL NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS diagnosis_runs_session ON diagnosis_runs (session_id, ord);
CREATE INDEX IF NOT EXISTS diagnosis_runs_created ON diagnosis_runs (created_at);
CREATE TABLE IF NOT EXISTS diagnosis_entries (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('started', 'finished', 'end')),
    payload TEXT NOT NULL,
    duration_ms REAL,
    token TEXT NOT NULL,
    written_at REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS diagnosis_feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS diagnosis_feedback_run ON diagnosis_feedback (run_id, id);
CREATE TABLE IF NOT EXISTS diagnosis_summaries (
    run_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    workflow TEXT,
    outcome TEXT,
    reason_code TEXT,
    evidence_retry INTEGER,
    fallback INTEGER,
    audits_pass INTEGER,
    audits_low INTEGER,
    audits_reject INTEGER,
    last_mac TEXT,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS diagnosis_summaries_columns ON diagnosis_summaries (
    workflow, outcome, reason_code, created_at, evidence_retry, fallback, audits_pass,
    audits_low, audits_reject);
CREATE TABLE IF NOT EXISTS diagnosis_summary_calls (
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    call TEXT NOT NULL,
    duration_ms REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS diagnosis_summary_calls_run ON diagnosis_summary_calls (run_id);
CREATE INDEX IF NOT EXISTS diagnosis_summary_calls_call
    ON diagnosis_summary_calls (call, duration_ms, created_at);
CREATE TABLE IF NOT EXISTS diagnosis_summary_tools (
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    tool_name TEXT NOT NULL,
    calls INTEGER NOT NULL,
    failures INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS diagnosis_summary_tools_run ON diagnosis_summary_tools (run_id);
CREATE INDEX IF NOT EXISTS diagnosis_summary_tools_name
    ON diagnosis_summary_tools (tool_name, created_at, calls, failures);
CREATE TRIGGER IF NOT EXISTS diagnosis_summaries_gone AFTER DELETE ON diagnosis_summaries BEGIN
    DELETE FROM diagnosis_summary_calls WHERE run_id = OLD.run_id;
    DELETE FROM diagnosis_summary_tools WHERE run_id = OLD.run_id;
END;
CREATE TRIGGER IF NOT EXISTS diagnosis_entries_added AFTER INSERT ON diagnosis_entries BEGIN
    DELETE FROM diagnosis_summaries WHERE run_id = NEW.run_id;
END;
"""
# A change to a run's entries, or to the run itself, drops the run's summary.
_SCHEMA += "".join(
    f"""CREATE TRIGGER IF NOT EXISTS diagnosis_{rows}_changed AFTER UPDATE ON diagnosis_{rows} BEGIN
    DELETE FROM diagnosis_summaries WHERE run_id IN (OLD.run_id, NEW.run_id);
END;
CREATE TRIGGER IF NOT EXISTS diagnosis_{rows}_removed AFTER DELETE ON diagnosis_{rows} BEGIN
    DELETE FROM diagnosis_summaries WHERE run_id = OLD.run_id;
END;
"""
    for rows in ("entries", "runs")
)

_MODES = ("rwc", "rw", "ro")


class SqliteStore(SqlStore):
    """A journal store in one SQLite database file (``open_store("sqlite:///runs.db")``).

    Single host, many processes. ``codec`` encrypts every payload. ``mode`` is
    SQLite's: ``"rwc"`` (create when missing), ``"rw"`` (an existing database) or
    ``"ro"`` (read-only: list and load, nothing claimed or written).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, codec: PayloadCodec | None = None,
        mode: str = "rwc",
    ) -> None:
        super().__init__(codec)
        if mode not in _MODES:
            raise StoreError(f"mode: expected 'rwc', 'rw' or 'ro', got {mode!r}")
        if not isinstance(path, str | os.PathLike):
            raise StoreError(f"path: expected a file path, got {type(path).__name__}")
        text = os.fspath(path)
        if not isinstance(text, str) or text in ("", ":memory:"):
            raise StoreError(
                f"SQLite store {text!r}: not a file; a store must outlive its process "
                "(give a file path)"
            )
        self.path = Path(text)
        self.mode = mode
        absolute = os.path.abspath(text)
        self._locks = RunLocks(absolute)
        self._mutex = threading.Lock()
        if mode == "rwc":
            self._create(absolute)
        elif not os.path.exists(absolute):
            raise StoreError(
                f"cannot open the SQLite store {self.path}: no such file "
                f"(mode={mode} opens an existing store, it creates none)"
            )
        if mode != "ro":
            self._locks.check_names()
        try:
            self._db = sqlite3.connect(
                f"{Path(absolute).as_uri()}?mode={mode}", uri=True, timeout=60.0,
                isolation_level=None, check_same_thread=False,
            )
            self._db.execute("PRAGMA busy_timeout=60000")
            if mode != "ro":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.executescript(_SCHEMA)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the SQLite store {self.path}: {error}") from None

    def _create(self, absolute: str) -> None:
        """Create the database file ``0600`` (SQLite gives its WAL and shm files its mode)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            os.close(os.open(absolute, flags, 0o600))
        except FileExistsError:
            return
        except OSError as error:
            raise StoreError(f"cannot open the SQLite store {self.path}: {error}") from None

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> sqlite3.Cursor:
        try:
            with self._mutex:
                return self._db.execute(sql, parameters)
        except sqlite3.Error as error:
            raise StoreError(f"SQLite store {self.path}: {error}") from None

    def _atomic(self, statements: Sequence[tuple[str, Sequence[tuple[object, ...]]]]) -> int:
        with self._mutex:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    first = -1
                    for sql, rows in statements:
                        if not rows:
                            continue
                        cursor = self._db.executemany(sql, rows)
                        if first < 0:
                            first = cursor.rowcount
                            if first == 0:
                                break
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                return max(first, 0)
            except sqlite3.Error as error:
                raise StoreError(f"SQLite store {self.path}: {error}") from None

    def summaries_writable(self) -> bool:
        """Not when opened read-only (``mode=ro``)."""
        return self.mode != "ro"

    def _acquire(self, run_id: str) -> object:
        if self.mode == "ro":
            raise StoreError(
                f"SQLite store {self.path}: opened read-only (mode=ro); nothing is claimed "
                "or written"
            )
        return self._locks.acquire(run_id)

    def _release(self, run_id: str, handle: object) -> None:
        self._locks.release(handle)

    def _get_run(self, run_id: str) -> RawRun | None:
        with self._mutex:
            try:
                self._db.execute("BEGIN")  # one snapshot of the run's rows
                try:
                    return self._read_run(self._db.execute, run_id)
                finally:
                    self._db.execute("COMMIT")
            except sqlite3.Error as error:
                raise StoreError(f"SQLite store {self.path}: {error}") from None

    def close(self) -> None:
        """Release every claim and close the connection."""
        for token, (_, handle) in list(self._held.items()):
            self._held.pop(token, None)
            self._locks.release(handle)
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
