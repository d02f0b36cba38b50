"""What the SQL stores share: one set of statements over one table layout (spec §16).

SQLite and PostgreSQL hold the same three tables (``diagnosis_runs``,
``diagnosis_entries`` keyed by ``(run_id, seq)``, ``diagnosis_feedback``) and
write them with the same statements; the derived summaries of ended runs are
``diagnosis_summaries`` (one row per run: the digest's payload and, in a plain
store, its columns), ``diagnosis_summary_calls`` (one row per finished call
with a duration) and ``diagnosis_summary_tools`` (one row per run and tool),
which the fleet report aggregates in SQL. Triggers delete a run's summary
when any of its run or entry rows changes (a summary is derived from them).
Only the driver's parameter marker (``?`` or ``%s``), the casts a NULL
parameter needs in PostgreSQL, how a consistent read of one run is taken and
how writers are locked differ. A backend says which marker and casts it speaks
and implements ``_execute``, ``_atomic``, ``_get_run`` (with
:meth:`SqlStore._read_run`), ``_acquire``, ``_release`` and ``close``;
everything else is written here once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ..journal import RunSummary, StoreError
from ._base import EntryRecord, RawRun, StoreBase, SummaryRow
from ._summary import GATEKEEPER_STATUSES, DigestColumns, FleetTally, nearest_rank

__all__ = ["SqlStore"]

_UPSERT = (
    "INSERT INTO diagnosis_entries (run_id, seq, state, payload, duration_ms, token, written_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO UPDATE SET "
    "state = excluded.state, payload = excluded.payload, duration_ms = excluded.duration_ms, "
    "token = excluded.token, written_at = excluded.written_at "
    "WHERE diagnosis_entries.state = 'started'"
)
"""A finished entry replaces its started row; the upsert never matches a finished one."""


# --- summaries ----------------------------------------------------------------------

_WINDOW = "(?{real} IS NULL OR {table}.created_at >= ?)"
"""The rows of a summary table in the ``since`` window (each keeps its run's ``created_at``)."""


class SqlSummaries:
    """The summary statements of :class:`SqlStore` (a mixin: it needs ``_execute``)."""

    _marker: ClassVar[str]
    _real_cast: ClassVar[str]

    def _execute(self, sql: str, parameters: tuple[object, ...] = ()) -> Any:
        raise NotImplementedError  # pragma: no cover - abstract

    def _atomic(self, statements: Sequence[tuple[str, Sequence[tuple[object, ...]]]]) -> int:
        """Run each statement for each of its parameter rows in one transaction.

        Returns the row count of the first statement; when it is 0, nothing else runs.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def _sql(self, statement: str) -> str:
        raise NotImplementedError  # pragma: no cover - abstract

    def _listed(
        self, select: str, order: str, session_id: str | None, since: float | None
    ) -> list[Any]:
        """Every listing's rows: ``select`` over the runs ``r`` the filters keep, by ``order``.

        Only the filters given are written: SQLite cannot answer ``(? IS NULL OR
        r.session_id = ?)`` from an index and reads every run, where ``r.session_id
        = ?`` reads one session's runs, in order, from ``(session_id, ord)``.
        """
        clauses: list[str] = []
        parameters: list[object] = []
        if session_id is not None:
            clauses.append("r.session_id = ?")
            parameters.append(session_id)
        if since is not None:
            clauses.append("r.created_at >= ?")
            parameters.append(since)
        where = "WHERE " + " AND ".join(clauses) if clauses else ""
        statement = self._sql(f"{select} {where} ORDER BY {order}")
        rows: list[Any] = self._execute(statement, tuple(parameters)).fetchall()
        return rows

    def _put_summary(
        self, run_id: str, created_at: float, payload: str, columns: DigestColumns | None,
        last_mac: str | None, fingerprint: str | None,
    ) -> None:
        head: tuple[object, ...]
        if columns is None:
            head = (run_id, created_at, payload, None, None, None, None, None, None, None, None,
                    None)
            calls: list[tuple[object, ...]] = []
            tools: list[tuple[object, ...]] = []
        else:
            head = (run_id, created_at, payload, columns.workflow, columns.outcome,
                    columns.reason_code, int(columns.evidence_retry), int(columns.fallback),
                    *columns.audits, last_mac)
            calls = [(run_id, created_at, call, duration) for call, duration in columns.latencies]
            tools = [(run_id, created_at, name, count, failures)
                     for name, count, failures in columns.tools]
        self._atomic([
            (self._sql(
                "INSERT INTO diagnosis_summaries (run_id, created_at, payload, workflow, outcome, "
                "reason_code, evidence_retry, fallback, audits_pass, audits_low, audits_reject, "
                "last_mac) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM diagnosis_runs WHERE run_id = ? AND created_at = ?) "
                "ON CONFLICT (run_id) DO NOTHING"
            ), [(*head, run_id, created_at)]),
            (self._sql("INSERT INTO diagnosis_summary_calls (run_id, created_at, call, "
                       "duration_ms) VALUES (?, ?, ?, ?)"), calls),
            (self._sql("INSERT INTO diagnosis_summary_tools (run_id, created_at, tool_name, "
                       "calls, failures) VALUES (?, ?, ?, ?, ?)"), tools),
        ])

    def _list_summaries(self, session_id: str | None, since: float | None) -> list[SummaryRow]:
        rows = self._listed(
            "SELECT r.run_id, r.session_id, r.format, r.created_at, s.payload "
            "FROM diagnosis_runs r LEFT JOIN diagnosis_summaries s ON s.run_id = r.run_id",
            "r.ord", session_id, since,
        )
        return [SummaryRow(row[0], row[1], row[2], float(row[3]), row[4]) for row in rows]

    def _list_feedback(
        self, session_id: str | None, since: float | None
    ) -> dict[str, list[tuple[str, float]]]:
        rows = self._listed(
            "SELECT f.run_id, f.payload, f.recorded_at FROM diagnosis_feedback f "
            "JOIN diagnosis_runs r ON r.run_id = f.run_id",
            "f.id", session_id, since,
        )
        found: dict[str, list[tuple[str, float]]] = {}
        for run_id, payload, recorded_at in rows:
            found.setdefault(run_id, []).append((payload, float(recorded_at)))
        return found

    def feedback_of(self, run_id: str) -> list[tuple[str, float]]:
        """One run's feedback records, in the order recorded."""
        rows = self._execute(self._sql(
            "SELECT payload, recorded_at FROM diagnosis_feedback WHERE run_id = ? ORDER BY id"
        ), (run_id,)).fetchall()
        return [(payload, float(at)) for payload, at in rows]

    def summary_columns(self, run_id: str) -> DigestColumns | None:
        """The columns stored for ``run_id``'s summary (None without one, or when sealed)."""
        head = self._execute(self._sql(
            "SELECT workflow, outcome, reason_code, evidence_retry, fallback, audits_pass, "
            "audits_low, audits_reject FROM diagnosis_summaries WHERE run_id = ?"
        ), (run_id,)).fetchone()
        if head is None or head[0] is None:
            return None
        calls = self._execute(self._sql(
            "SELECT call, duration_ms FROM diagnosis_summary_calls WHERE run_id = ?"
        ), (run_id,)).fetchall()
        tools = self._execute(self._sql(
            "SELECT tool_name, calls, failures FROM diagnosis_summary_tools WHERE run_id = ? "
            "ORDER BY tool_name"
        ), (run_id,)).fetchall()
        return DigestColumns(
            workflow=head[0], outcome=head[1], reason_code=head[2],
            evidence_retry=bool(head[3]), fallback=bool(head[4]),
            audits=(int(head[5]), int(head[6]), int(head[7])),
            tools=tuple((str(name), int(count), int(failures)) for name, count, failures in tools),
            latencies=tuple(sorted((str(call), float(duration)) for call, duration in calls)),
        )

    def summary_last_mac(self, run_id: str) -> str | None:
        """The MAC chain head a plain summary keeps in its column."""
        row = self._execute(self._sql(
            "SELECT last_mac FROM diagnosis_summaries WHERE run_id = ?"), (run_id,)).fetchone()
        return None if row is None else row[0]

    def unsummarized(self, since: float | None) -> list[SummaryRow]:
        """The runs in the window whose summary has no columns: none, or sealed."""
        # An anti-join: PostgreSQL hashes the summaries' keys instead of merging every
        # summary row (payloads included) with every run, twice as fast at 100 000 runs.
        rows = self._execute(
            self._sql(
                "SELECT r.run_id, r.session_id, r.format, r.created_at, s.payload "
                "FROM diagnosis_runs r LEFT JOIN diagnosis_summaries s ON s.run_id = r.run_id "
                f"WHERE (?{self._real_cast} IS NULL OR r.created_at >= ?) AND NOT EXISTS ("
                "SELECT 1 FROM diagnosis_summaries x "
                "WHERE x.run_id = r.run_id AND x.workflow IS NOT NULL) "
                "ORDER BY r.ord"
            ),
            (since, since),
        ).fetchall()
        return [SummaryRow(row[0], row[1], row[2], float(row[3]), row[4]) for row in rows]

    def summarized_feedback(
        self, since: float | None
    ) -> dict[str, tuple[str | None, list[tuple[str, float]]]]:
        """The feedback of the runs in the window whose summary has columns, with its MAC head.

        ``{run_id: (last_mac, [(payload, recorded_at), ...])}``, in the order recorded.
        """
        window = _WINDOW.format(real=self._real_cast, table="s")
        rows = self._execute(
            self._sql(
                "SELECT f.run_id, s.last_mac, f.payload, f.recorded_at FROM diagnosis_feedback f "
                "JOIN diagnosis_summaries s ON s.run_id = f.run_id "
                f"WHERE s.workflow IS NOT NULL AND {window} ORDER BY f.id"
            ),
            (since, since),
        ).fetchall()
        found: dict[str, tuple[str | None, list[tuple[str, float]]]] = {}
        for run_id, mac, payload, recorded_at in rows:
            found.setdefault(run_id, (mac, []))[1].append((payload, float(recorded_at)))
        return found

    def tally_columns(
        self, tally: FleetTally, since: float | None, excluded: Sequence[str]
    ) -> dict[str, tuple[int, float | None, float | None]]:
        """Add the summaries with columns in the window (but ``excluded``) to ``tally``, in SQL.

        Returns ``(count, p50, p95)`` per call: the nearest ranks over the
        summaries' durations and any ``tally`` holds already for that call.
        Each statement reads one table through a covering index; the summary
        rows keep their run's ``created_at`` so that no join is needed.
        """

        def where(table: str, *more: str) -> str:
            clauses = [_WINDOW.format(real=self._real_cast, table=table), *more]
            if excluded:
                clauses.append(f"{table}.run_id NOT IN ({', '.join('?' * len(excluded))})")
            return " AND ".join(clauses)

        base = (since, since, *excluded)
        for workflow, outcome, reason, runs, retried, fallbacks, *audits in self._execute(
            self._sql(
                "SELECT s.workflow, s.outcome, s.reason_code, count(*), sum(s.evidence_retry), "
                "sum(s.fallback), sum(s.audits_pass), sum(s.audits_low), sum(s.audits_reject) "
                f"FROM diagnosis_summaries s WHERE {where('s', 's.workflow IS NOT NULL')} "
                "GROUP BY s.workflow, s.outcome, s.reason_code"
            ),
            base,
        ).fetchall():
            runs = int(runs)
            tally.statuses["complete"] += runs
            tally.finished += runs
            tally.outcomes[outcome or ""] += runs
            if reason is not None:
                tally.reasons[reason] += runs
            tally.fallbacks += int(fallbacks)
            if workflow == "chat":
                tally.chat_finished += runs
                tally.retried += int(retried)
            for name, count in zip(GATEKEEPER_STATUSES, audits, strict=True):
                if count:
                    tally.gatekeeper[name] += int(count)
        for name, calls, failures in self._execute(
            self._sql(
                "SELECT t.tool_name, sum(t.calls), sum(t.failures) FROM diagnosis_summary_tools t "
                f"WHERE {where('t')} GROUP BY t.tool_name"
            ),
            base,
        ).fetchall():
            entry = tally.tools.setdefault(name, [0, 0])
            entry[0] += int(calls)
            entry[1] += int(failures)
        counts = {
            call: int(count) for call, count in self._execute(
                self._sql(
                    "SELECT c.call, count(*) FROM diagnosis_summary_calls c "
                    f"WHERE {where('c')} GROUP BY c.call"
                ),
                base,
            ).fetchall()
        }
        result: dict[str, tuple[int, float | None, float | None]] = {}
        for call, count in counts.items():
            extra = tally.latencies.pop(call, None)
            if extra:  # values outside the summaries too: rank them all here
                values = sorted([*extra, *(float(row[0]) for row in self._execute(
                    self._sql(
                        "SELECT c.duration_ms FROM diagnosis_summary_calls c "
                        f"WHERE {where('c')} AND c.call = ?"
                    ),
                    (*base, call),
                ).fetchall())])
                result[call] = (len(values), values[nearest_rank(len(values), 0.5) - 1],
                                values[nearest_rank(len(values), 0.95) - 1])
                continue
            ranked = []
            for fraction in (0.5, 0.95):
                row = self._execute(
                    self._sql(
                        "SELECT c.duration_ms FROM diagnosis_summary_calls c "
                        f"WHERE c.call = ? AND {where('c')} "
                        "ORDER BY c.duration_ms LIMIT 1 OFFSET ?"
                    ),
                    (call, *base, nearest_rank(count, fraction) - 1),
                ).fetchone()
                ranked.append(None if row is None else float(row[0]))
            result[call] = (count, ranked[0], ranked[1])
        return result


class SqlStore(SqlSummaries, StoreBase):
    """A journal store in a SQL database: the statements both SQL backends run."""

    _marker: ClassVar[str] = "?"
    """The driver's parameter marker; statements below are written with ``?``."""
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
        rows = self._listed(
            "SELECT r.run_id, r.session_id, r.format, r.created_at, "
            "(SELECT count(*) FROM diagnosis_entries e "
            "WHERE e.run_id = r.run_id AND e.state <> 'end') FROM diagnosis_runs r",
            "r.ord", session_id, since,
        )
        return [RunSummary(row[0], row[1], row[2], float(row[3]), int(row[4])) for row in rows]

