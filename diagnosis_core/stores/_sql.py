"""What the SQL stores share: one set of statements over one table layout (spec §16).

SQLite and PostgreSQL hold the same three tables (``diagnosis_runs``,
``diagnosis_entries`` keyed by ``(run_id, seq)``, ``diagnosis_feedback``) and
write them with the same statements; only the driver's parameter marker
(``?`` or ``%s``), the casts a NULL parameter needs in PostgreSQL, how a
consistent read of one run is taken and how writers are locked differ. A
backend says which marker and casts it speaks and implements ``_execute``,
``_get_run`` (with :meth:`SqlStore._read_run`), ``_acquire``, ``_release`` and
``close``; everything else is written here once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ._base import EntryRecord, RawRun, RunSummary, StoreBase, StoreError

__all__ = ["SqlStore"]

_UPSERT = (
    "INSERT INTO diagnosis_entries (run_id, seq, state, payload, duration_ms, token, written_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO UPDATE SET "
    "state = excluded.state, payload = excluded.payload, duration_ms = excluded.duration_ms, "
    "token = excluded.token, written_at = excluded.written_at "
    "WHERE diagnosis_entries.state = 'started'"
)
"""A finished entry replaces its started row; the upsert never matches a finished one."""


class SqlStore(StoreBase):
    """A journal store in a SQL database: the statements both SQL backends run."""

    _marker: ClassVar[str] = "?"
    """The driver's parameter marker; statements below are written with ``?``."""
    _text_cast: ClassVar[str] = ""
    """What makes a NULL text parameter typed (``::text`` in PostgreSQL)."""
    _real_cast: ClassVar[str] = ""
    """What makes a NULL number parameter typed (``::float8`` in PostgreSQL)."""

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> Any:
        raise NotImplementedError  # pragma: no cover - abstract

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._marker)

    def _put_run(
        self, run_id: str, session_id: str, format: str, payload: str, created_at: float
    ) -> None:
        self._execute(
            self._sql(
                "INSERT INTO diagnosis_runs (run_id, session_id, format, created_at, payload) "
                "VALUES (?, ?, ?, ?, ?)"
            ),
            (run_id, session_id, format, created_at, payload),
        )

    def _put_entry(
        self, run_id: str, seq: int, state: str, payload: str, duration_ms: float | None,
        token: str, written_at: float, *, replace: bool,
    ) -> None:
        cursor = self._execute(
            self._sql(_UPSERT), (run_id, seq, state, payload, duration_ms, token, written_at)
        )
        if cursor.rowcount != 1:
            raise StoreError(f"run {run_id!r}: entry {seq} is finished; it is never replaced")

    def _put_feedback(self, run_id: str, payload: str, recorded_at: float) -> None:
        cursor = self._execute(
            self._sql(
                "INSERT INTO diagnosis_feedback (run_id, payload, recorded_at) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM diagnosis_runs WHERE run_id = ?)"
            ),
            (run_id, payload, recorded_at, run_id),
        )
        if cursor.rowcount != 1:
            raise StoreError(f"run {run_id!r}: not in the store")

    def _last_entry(self, run_id: str) -> tuple[int, str] | None:
        row = self._execute(
            self._sql(
                "SELECT seq, state FROM diagnosis_entries WHERE run_id = ? "
                "ORDER BY seq DESC LIMIT 1"
            ),
            (run_id,),
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def _read_run(
        self, execute: Callable[[str, tuple[object, ...]], Any], run_id: str
    ) -> RawRun | None:
        """One run's rows, read through ``execute`` (the backend's consistent read)."""
        run = execute(self._sql(
            "SELECT run_id, session_id, format, created_at, payload "
            "FROM diagnosis_runs WHERE run_id = ?"
        ), (run_id,)).fetchone()
        entries = execute(self._sql(
            "SELECT seq, state, payload, duration_ms, written_at "
            "FROM diagnosis_entries WHERE run_id = ? ORDER BY seq"
        ), (run_id,)).fetchall()
        feedback = execute(self._sql(
            "SELECT payload, recorded_at FROM diagnosis_feedback WHERE run_id = ? ORDER BY id"
        ), (run_id,)).fetchall()
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
            self._sql(
                "SELECT r.run_id, r.session_id, r.format, r.created_at, "
                "(SELECT count(*) FROM diagnosis_entries e "
                "WHERE e.run_id = r.run_id AND e.state <> 'end') "
                f"FROM diagnosis_runs r WHERE (?{self._text_cast} IS NULL OR r.session_id = ?) "
                f"AND (?{self._real_cast} IS NULL OR r.created_at >= ?) ORDER BY r.ord"
            ),
            (session_id, session_id, since, since),
        ).fetchall()
        return [RunSummary(row[0], row[1], row[2], float(row[3]), int(row[4])) for row in rows]
