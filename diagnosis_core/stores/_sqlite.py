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
from collections.abc import Sequence
from pathlib import Path

from ._base import EntryRecord, PayloadCodec, RawRun, RunSummary, StoreBase, StoreError
from ._locks import RunLocks

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

_UPSERT = (
    "INSERT INTO diagnosis_entries (run_id, seq, state, payload, duration_ms, token, written_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO UPDATE SET "
    "state = excluded.state, payload = excluded.payload, duration_ms = excluded.duration_ms, "
    "token = excluded.token, written_at = excluded.written_at "
    "WHERE diagnosis_entries.state = 'started'"
)


class SqliteStore(StoreBase):
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

    def _put_run(
        self, run_id: str, session_id: str, format: str, payload: str, created_at: float
    ) -> None:
        self._execute(
            "INSERT INTO diagnosis_runs (run_id, session_id, format, created_at, payload) "
            "VALUES (?, ?, ?, ?, ?)",
            (run_id, session_id, format, created_at, payload),
        )

    def _put_entry(
        self, run_id: str, seq: int, state: str, payload: str, duration_ms: float | None,
        token: str, written_at: float, *, replace: bool,
    ) -> None:
        cursor = self._execute(
            _UPSERT, (run_id, seq, state, payload, duration_ms, token, written_at)
        )
        if cursor.rowcount != 1:
            raise StoreError(f"run {run_id!r}: entry {seq} is finished; it is never replaced")

    def _put_feedback(self, run_id: str, payload: str, recorded_at: float) -> None:
        cursor = self._execute(
            "INSERT INTO diagnosis_feedback (run_id, payload, recorded_at) "
            "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM diagnosis_runs WHERE run_id = ?)",
            (run_id, payload, recorded_at, run_id),
        )
        if cursor.rowcount != 1:
            raise StoreError(f"run {run_id!r}: not in the store")

    def _last_entry(self, run_id: str) -> tuple[int, str] | None:
        row = self._execute(
            "SELECT seq, state FROM diagnosis_entries WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def _get_run(self, run_id: str) -> RawRun | None:
        with self._mutex:
            try:
                self._db.execute("BEGIN")
                try:
                    run = self._db.execute(
                        "SELECT run_id, session_id, format, created_at, payload "
                        "FROM diagnosis_runs WHERE run_id = ?", (run_id,),
                    ).fetchone()
                    entries = self._db.execute(
                        "SELECT seq, state, payload, duration_ms, written_at "
                        "FROM diagnosis_entries WHERE run_id = ? ORDER BY seq", (run_id,),
                    ).fetchall()
                    feedback = self._db.execute(
                        "SELECT payload, recorded_at FROM diagnosis_feedback "
                        "WHERE run_id = ? ORDER BY id", (run_id,),
                    ).fetchall()
                finally:
                    self._db.execute("COMMIT")
            except sqlite3.Error as error:
                raise StoreError(f"SQLite store {self.path}: {error}") from None
        if run is None:
            return None
        return RawRun(
            run[0], run[1], run[2], float(run[3]), run[4],
            tuple(EntryRecord(int(seq), state, payload,
                              None if duration is None else float(duration), float(at))
                  for seq, state, payload, duration, at in entries),
            tuple((payload, float(at)) for payload, at in feedback),
        )

    def _list_runs(self, session_id: str | None, since: float | None) -> Sequence[RunSummary]:
        rows = self._execute(
            "SELECT r.run_id, r.session_id, r.format, r.created_at, "
            "(SELECT count(*) FROM diagnosis_entries e "
            "WHERE e.run_id = r.run_id AND e.state <> 'end') "
            "FROM diagnosis_runs r WHERE (? IS NULL OR r.session_id = ?) "
            "AND (? IS NULL OR r.created_at >= ?) ORDER BY r.ord",
            (session_id, session_id, since, since),
        ).fetchall()
        return [RunSummary(row[0], row[1], row[2], float(row[3]), int(row[4])) for row in rows]

    def close(self) -> None:
        """Release every claim and close the connection."""
        for token, (_, handle) in list(self._held.items()):
            self._held.pop(token, None)
            self._locks.release(handle)
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
