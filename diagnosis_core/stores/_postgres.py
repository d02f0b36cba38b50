"""The PostgreSQL store, for several workers on one database (``psycopg``, extra ``postgres``).

The tables are the SQLite store's (``diagnosis_runs``, ``diagnosis_entries``
with primary key ``(run_id, seq)``, ``diagnosis_feedback``), created when
missing. Every write is one autocommitted statement: a row is there whole or
not at all.

Writers are exclusive per run through a *session* advisory lock
(``pg_try_advisory_lock`` on 64 bits of the SHA-256 of the run id), held by
the store's connection: the server releases it when the connection ends, so
a killed worker's runs are free again as soon as its socket closes, and of
several workers racing to resume one, exactly one gets the lock. A session's
advisory locks are re-entrant, so the threads sharing a store are told apart
by the process's claim registry first (``_ownership.SessionClaims``): of two
threads claiming one run through one store, one is refused. Appends go
through the same connection; a connection that broke is a
:class:`StoreError`, never a silent reconnect that would have lost the lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from ..journal import StoreError
from ._base import PayloadCodec, RawRun
from ._ownership import RUN_NAMESPACE, SessionClaims, claim_refused
from ._sql import SqlStore

__all__ = ["PostgresStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS diagnosis_runs ("
    " ord BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,"
    " format TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, payload TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS diagnosis_runs_session ON diagnosis_runs (session_id, ord)",
    "CREATE INDEX IF NOT EXISTS diagnosis_runs_created ON diagnosis_runs (created_at)",
    "CREATE TABLE IF NOT EXISTS diagnosis_entries ("
    " run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('started', 'finished', 'end')), payload TEXT NOT NULL,"
    " duration_ms DOUBLE PRECISION, token TEXT NOT NULL, written_at DOUBLE PRECISION NOT NULL,"
    " PRIMARY KEY (run_id, seq))",
    "CREATE TABLE IF NOT EXISTS diagnosis_feedback ("
    " id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL, payload TEXT NOT NULL,"
    " recorded_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS diagnosis_feedback_run ON diagnosis_feedback (run_id, id)",
    "CREATE TABLE IF NOT EXISTS diagnosis_summaries ("
    " run_id TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL,"
    " workflow TEXT, outcome TEXT, reason_code TEXT, evidence_retry INTEGER, fallback INTEGER,"
    " audits_pass INTEGER, audits_low INTEGER, audits_reject INTEGER, last_mac TEXT,"
    " payload TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS diagnosis_summaries_columns ON diagnosis_summaries ("
    " workflow, outcome, reason_code, created_at, evidence_retry, fallback, audits_pass,"
    " audits_low, audits_reject)",
    "CREATE TABLE IF NOT EXISTS diagnosis_summary_calls ("
    " run_id TEXT NOT NULL REFERENCES diagnosis_summaries (run_id) ON DELETE CASCADE,"
    " created_at DOUBLE PRECISION NOT NULL, call TEXT NOT NULL,"
    " duration_ms DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS diagnosis_summary_calls_run ON diagnosis_summary_calls (run_id)",
    "CREATE INDEX IF NOT EXISTS diagnosis_summary_calls_call"
    " ON diagnosis_summary_calls (call, duration_ms, created_at)",
    "CREATE TABLE IF NOT EXISTS diagnosis_summary_tools ("
    " run_id TEXT NOT NULL REFERENCES diagnosis_summaries (run_id) ON DELETE CASCADE,"
    " created_at DOUBLE PRECISION NOT NULL, tool_name TEXT NOT NULL, calls INTEGER NOT NULL,"
    " failures INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS diagnosis_summary_tools_run ON diagnosis_summary_tools (run_id)",
    "CREATE INDEX IF NOT EXISTS diagnosis_summary_tools_name"
    " ON diagnosis_summary_tools (tool_name, created_at, calls, failures)",
)
_TRIGGERS = (
    "CREATE OR REPLACE FUNCTION diagnosis_forget_summary() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    " IF TG_OP <> 'INSERT' THEN DELETE FROM diagnosis_summaries WHERE run_id = OLD.run_id; END IF;"
    " IF TG_OP <> 'DELETE' THEN DELETE FROM diagnosis_summaries WHERE run_id = NEW.run_id; END IF;"
    " RETURN NULL; END $$",
    "CREATE OR REPLACE TRIGGER diagnosis_entries_changed AFTER INSERT OR UPDATE OR DELETE"
    " ON diagnosis_entries FOR EACH ROW EXECUTE FUNCTION diagnosis_forget_summary()",
    "CREATE OR REPLACE TRIGGER diagnosis_runs_changed AFTER UPDATE OR DELETE"
    " ON diagnosis_runs FOR EACH ROW EXECUTE FUNCTION diagnosis_forget_summary()",
)

class PostgresStore(SqlStore):
    """A journal store in a PostgreSQL database (``open_store("postgresql://...")``).

    ``conninfo`` is a libpq connection string or URL. Needs the ``postgres``
    extra (``psycopg``). ``codec`` encrypts every payload.
    """

    _marker = "%s"
    _real_cast = "::float8"

    def __init__(self, conninfo: str, *, codec: PayloadCodec | None = None) -> None:
        super().__init__(codec)
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "the PostgreSQL store needs psycopg: install the postgres extra "
                "(in the diagnosis_core checkout: pip install -e '.[postgres]')"
            ) from None
        self._psycopg: Any = psycopg
        self._mutex = threading.Lock()
        try:
            self._db: Any = psycopg.connect(conninfo, autocommit=True)
            with self._db.transaction():
                # one creator at a time: CREATE ... IF NOT EXISTS races with itself
                self._db.execute("SELECT pg_advisory_xact_lock(7318052917)")
                for statement in _SCHEMA:
                    self._db.execute(statement)
                # the triggers once: replacing them locks the tables other writers use
                if self._db.execute("SELECT 1 FROM pg_trigger "
                                    "WHERE tgname = 'diagnosis_runs_changed'").fetchone() is None:
                    for statement in _TRIGGERS:
                        self._db.execute(statement)
        except psycopg.Error as error:
            raise StoreError(f"cannot open the PostgreSQL store: {error}") from None
        self._claims = SessionClaims(self._execute, RUN_NAMESPACE)

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> Any:
        try:
            with self._mutex:
                return self._db.execute(sql, parameters)
        except self._psycopg.Error as error:
            raise StoreError(f"PostgreSQL store: {error}") from None

    def _atomic(self, statements: Sequence[tuple[str, Sequence[tuple[object, ...]]]]) -> int:
        try:
            with self._mutex, self._db.transaction():
                first = -1
                for sql, rows in statements:
                    if not rows:
                        continue
                    with self._db.cursor() as cursor:
                        cursor.executemany(sql, rows)
                        if first < 0:
                            first = cursor.rowcount
                    if first == 0:
                        break
                return max(first, 0)
        except self._psycopg.Error as error:
            raise StoreError(f"PostgreSQL store: {error}") from None

    def _acquire(self, run_id: str) -> object:
        held, holder = self._claims.try_acquire(run_id)
        if held is None:
            raise claim_refused(run_id, holder)
        return held

    def _release(self, run_id: str, handle: object) -> None:
        self._claims.release(handle, connected=not self._db.closed)

    def _get_run(self, run_id: str) -> RawRun | None:
        try:
            with self._mutex, self._db.transaction():
                self._db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                return self._read_run(self._db.execute, run_id)
        except self._psycopg.Error as error:
            raise StoreError(f"PostgreSQL store: {error}") from None

    def close(self) -> None:
        """Close the connection (the server releases every claim with it)."""
        self._held.clear()
        with contextlib.suppress(self._psycopg.Error):
            self._db.close()
        self._claims.forget_all()
