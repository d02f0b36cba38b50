"""The SQLite store: the embedded default, stdlib ``sqlite3`` in WAL mode (spec §16).

Three tables (``diagnosis_runs``, ``diagnosis_entries`` keyed by ``(run_id,
seq)``, ``diagnosis_feedback``); every write is one autocommitted statement
with ``synchronous=FULL``, so a write is durable when the call returns and a
process killed during it leaves either the whole row or none — a torn write
is the entry it failed to be. A finished entry replaces its started row
through an upsert that only ever matches a ``started`` row. Appends touch one
row through the primary key: O(1) in the journal's length (well, O(log n) in
the table's size).

Writers are exclusive per run through ``flock`` on a per-run lock file next
to the database (``<path>.locks``), which the kernel releases when the holder
dies; so the database must be on a local file system, like SQLite's own
locking requires.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

from ._base import PayloadCodec, RawRun, StoreError
from ._locks import RunLocks
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
"""

class SqliteStore(SqlStore):
    """A journal store in one SQLite database file (``open_store("sqlite:///runs.db")``).

    Single host, many processes. ``codec`` encrypts every payload.
    """

    def __init__(self, path: str | os.PathLike[str], *, codec: PayloadCodec | None = None) -> None:
        super().__init__(codec)
        self.path = Path(path)
        self._locks = RunLocks(Path(f"{self.path}.locks"))
        self._mutex = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the SQLite store {self.path}: {error}") from None

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> sqlite3.Cursor:
        try:
            with self._mutex:
                return self._db.execute(sql, parameters)
        except sqlite3.Error as error:
            raise StoreError(f"SQLite store {self.path}: {error}") from None

    def _acquire(self, run_id: str) -> object:
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
