"""Benchmarks of the journal stores (spec §16), the ``stores`` section of ``run.py``.

1. Per-entry append cost: the ``started`` + ``finished`` writes of the 1st and
   of the 24th entry of a run, in the JSON Lines, SQLite and PostgreSQL
   stores (each write durable: ``fsync`` / ``synchronous=FULL`` / a committed
   row). O(1) in the journal's length means the two are within 1.5×.
2. The reports over a store of 100 000 ended runs (``--quick``: 5 000), in
   SQLite and PostgreSQL: ``fleet_report`` over all of them, and
   ``session_report`` of one session of 10 000 runs (``--quick``: 1 000) and
   of one of 10. The runs are clones with new ids of genuine runs recorded by
   the sync driver: the run row and the summary its end wrote, inserted with
   ``executemany`` in one transaction per store, then PostgreSQL's ``VACUUM
   ANALYZE`` (what autovacuum does for runs stored over time; the filling is
   not what is measured).

PostgreSQL is the throwaway server of the tests (``initdb`` of the Debian
``postgresql`` package, fsync off); without one, its rows say so.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core.stores import open_store, session_report

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def _postgres() -> Iterator[str | None]:
    sys.path.insert(0, str(ROOT / "tests" / "adapters"))
    try:
        import psycopg  # noqa: F401
        from langgraph_support import postgres_server
    except ImportError:
        yield None
        return
    try:
        with postgres_server() as conninfo:
            parts = dict(item.split("=", 1) for item in conninfo.split())
            yield (f"postgresql://{parts['user']}@{parts['host']}:{parts['port']}/"
                   f"{parts['dbname']}")
    except LookupError:
        yield None


def _entries(count: int) -> list[dcj.JournalEntry]:
    """``count`` well-formed finished entries (append checks order, not the fold)."""
    scenario = dc.load_scenario(_document("bench", "bench"))
    request = dc.scenario_request(scenario)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
    template = sink.entries[0]
    return [attrs.evolve(template, seq=seq) for seq in range(1, count + 1)]


def _document(run_id: str, session_id: str) -> dict[str, Any]:
    import json

    doc: dict[str, Any] = json.loads((ROOT / "examples" / "payment_timeout.json").read_text())
    doc["run"] = {**doc.get("run", {}), "run_id": run_id, "session_id": session_id}
    return doc


def _append_costs(url: str, runs: int) -> tuple[float, float]:
    """Median seconds of entry 1's and entry 24's two writes, over ``runs`` runs."""
    entries = _entries(24)
    request = dc.scenario_request(dc.load_scenario(_document("bench", "bench")))
    store = open_store(url)
    first: list[float] = []
    last: list[float] = []
    stamp = time.monotonic_ns()
    try:
        for index in range(runs):
            run_id = f"append-{stamp}-{index}"
            run_request = attrs.evolve(request, run=attrs.evolve(request.run, run_id=run_id))
            with store.claim(run_id) as claim:
                store.begin(claim, dcj.Journal(run_request))
                for entry in entries:
                    started = attrs.evolve(entry, state=dcj.EntryState.STARTED, outcome=None)
                    begin = time.perf_counter()
                    store.append(claim, started)
                    store.append(claim, entry, duration_ms=1.0)
                    spent = time.perf_counter() - begin
                    if entry.seq == 1:
                        first.append(spent)
                    elif entry.seq == 24:
                        last.append(spent)
    finally:
        store.close()
    return statistics.median(first), statistics.median(last)


_TEMPLATES = ("payment_timeout", "composer_fails_twice", "redis_latency_evidence_retry",
              "db_pool_forged_citations", "zh_cn_gatekeeper_unavailable",
              "tool_ledger_reference_gatekeeper")
_SUMMARY_TABLES = (
    ("diagnosis_summaries", ("run_id", "created_at", "payload", "workflow", "outcome",
                             "reason_code", "evidence_retry", "fallback", "audits_pass",
                             "audits_low", "audits_reject", "last_mac")),
    ("diagnosis_summary_calls", ("run_id", "created_at", "call", "duration_ms")),
    ("diagnosis_summary_tools", ("run_id", "created_at", "tool_name", "calls", "failures")),
)


def _recorded_templates(scratch: Path) -> list[dict[str, Any]]:
    """Genuine ended runs recorded by the sync driver (with tool calls): every row they left."""
    import sqlite3
    import sys as _sys

    _sys.path.insert(0, str(ROOT / "tests" / "stores"))
    from store_support import load_example, scenario_of, with_ids, with_tools

    from diagnosis_core.tools import ToolRecorder

    path = scratch / "templates.db"
    store = open_store(f"sqlite:///{path}")
    for index, name in enumerate(_TEMPLATES * 3):
        recorder = ToolRecorder()
        request, effects = scenario_of(with_ids(load_example(name), run_id=f"tmpl{index:03d}x",
                                                session_id=f"tmplsession{index:03d}x"))
        dc.run_diagnosis(request, with_tools(effects, recorder, fail_metrics=index % 3 == 0),
                         store=store, tools=recorder)
    store.close()
    templates: list[dict[str, Any]] = []
    with contextlib.closing(sqlite3.connect(path)) as db:
        for run_id, session_id, format, payload in db.execute(
            "SELECT run_id, session_id, format, payload FROM diagnosis_runs ORDER BY ord"
        ).fetchall():
            rows = {"run": (format, payload), "session": session_id, "run_id": run_id}
            for table, columns in _SUMMARY_TABLES:
                rows[table] = db.execute(
                    f"SELECT {', '.join(columns)} FROM {table} WHERE run_id = ?", (run_id,)
                ).fetchall()
            assert rows["diagnosis_summaries"], f"{run_id}: no summary"
            templates.append(rows)
    return templates


def _fill_ended(url: str, templates: list[dict[str, Any]], runs: int, big: int) -> None:
    """``runs`` ended runs cloned from ``templates`` with new ids: the first ``big`` in one
    session (``big``), the others ten to a session. Only the rows a report reads are written:
    the run row and its summary (with its call and tool rows), as the end of a run leaves them.
    """
    store = open_store(url)
    db: Any = store._db  # type: ignore[attr-defined]
    now = time.time() + 1.0  # after any run stored before (the PostgreSQL server is shared)

    def rows(table: str) -> Iterator[tuple[object, ...]]:
        for index in range(runs):
            template = templates[index % len(templates)]
            run_id = f"r{index:07d}"
            session = "big" if index < big else f"s{index // 10:06d}"
            if table == "diagnosis_runs":
                format, payload = template["run"]
                yield (run_id, session, format, now + index * 1e-6,
                       payload.replace(template["run_id"], run_id)
                       .replace(template["session"], session))
                continue
            for row in template[table]:
                _run_id, _created_at, *rest = row
                if table == "diagnosis_summaries":
                    payload, *columns = rest
                    yield (run_id, now + index * 1e-6, payload.replace(template["run_id"], run_id)
                           .replace(template["session"], session), *columns)
                else:
                    yield (run_id, now + index * 1e-6, *rest)

    marker = "?" if url.startswith("sqlite:") else "%s"
    tables = (("diagnosis_runs", ("run_id", "session_id", "format", "created_at", "payload")),
              *_SUMMARY_TABLES)
    statements = [(table, f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                   f"({', '.join([marker] * len(columns))})") for table, columns in tables]
    if url.startswith("sqlite:"):
        with db:
            db.execute("BEGIN")
            for table, sql in statements:
                db.executemany(sql, rows(table))
    else:
        with db.transaction(), db.cursor() as cursor:
            for table, sql in statements:
                cursor.executemany(sql, rows(table))
        # What autovacuum does for a store filled run by run: the statistics, and the
        # visibility map that lets the fleet report's index-only scans skip the heap.
        db.execute("VACUUM ANALYZE")
    store.close()


def _timed(rounds: int, work: Any) -> tuple[float, float, Any]:
    """Best wall-clock and best CPU seconds of ``rounds`` calls of ``work``, and its result.

    Each round starts from the same state: the previous round's result is
    dropped (and the garbage collector run) before the clock starts, so a
    round does not pay for freeing, or the collector for scanning, the report
    the round before built (300 000 objects for a 10 000-run session).
    """
    wall = cpu = float("inf")
    result = None
    for _ in range(rounds):
        result = None
        gc.collect()
        begin, begin_cpu = time.perf_counter(), time.process_time()
        result = work()
        wall = min(wall, time.perf_counter() - begin)
        cpu = min(cpu, time.process_time() - begin_cpu)
    return wall, cpu, result


def _time_reports(url: str, runs: int, big: int, rounds: int, since: float) -> list[str]:
    from diagnosis_core.stores import fleet_report

    store = open_store(url)
    try:
        fleet_wall, fleet_cpu, fleet = _timed(rounds, lambda: fleet_report(store, since=since))
        assert fleet.runs.total == runs and fleet.runs.complete == runs, fleet.runs
        session_wall, session_cpu, report = _timed(rounds, lambda: session_report(store, "big"))
        assert len(report.runs) == big and all(s.status == "complete" for s in report.runs)
        last = f"s{(runs - 1) // 10:06d}"
        small_wall, _, small = _timed(rounds, lambda: session_report(store, last))
        assert len(small.runs) == 10
    finally:
        store.close()
    return [f"{fleet_wall:.2f} s (CPU {fleet_cpu:.2f} s)",
            f"{big} runs: {session_wall:.2f} s (CPU {session_cpu:.2f} s)",
            f"10 runs: {small_wall * 1000:.1f} ms"]


def bench_stores(quick: bool, table: Any, target: Any, ms: Any, *, appends: bool = True) -> None:
    """Print the store section (``table``, ``target``, ``ms`` are ``run.py``'s helpers).

    ``appends=False`` (``run.py --only stores-reports``): the reports' rows alone.
    """
    print("## 7. Journal stores: per-entry append cost and the reports\n")
    runs_for_append = 5 if quick else 40
    rows = []
    with tempfile.TemporaryDirectory() as scratch, _postgres() as pg:
        urls = {"JSON Lines": str(Path(scratch) / "a.jsonl"),
                "SQLite": f"sqlite:///{Path(scratch) / 'a.db'}"}
        if pg is not None:
            urls["PostgreSQL"] = pg
        for name, url in urls.items() if appends else ():
            first, last = _append_costs(url, runs_for_append)
            verdict = target(f"{name}: appending entry 24 ÷ entry 1 ≤ 1.5×", last / first, 1.5)
            rows.append([name, ms(first), ms(last), f"{last / first:.2f}× ({verdict})"])
        if pg is None and appends:
            rows.append(["PostgreSQL", "no server", "-", "-"])
        if appends:
            print(table(["store", "entry 1 ms (2 writes)", "entry 24 ms (2 writes)", "24 ÷ 1"],
                        rows))
            print(f"\nWall-clock medians over {runs_for_append} runs of 24 entries; each "
                  "write is durable before it returns.\n")
        report_rows = []
        total_runs = 5_000 if quick else 100_000
        big = 1_000 if quick else 10_000
        templates = _recorded_templates(Path(scratch))
        report_urls = {"SQLite": f"sqlite:///{Path(scratch) / 'report.db'}"}
        if pg is not None:
            report_urls["PostgreSQL"] = pg
        for name, url in report_urls.items():
            begin, since = time.perf_counter(), time.time()
            _fill_ended(url, templates, total_runs, big)
            filled = time.perf_counter() - begin
            measured = _time_reports(url, total_runs, big, 1 if quick else 3, since)
            report_rows.append([name, f"{total_runs}", *measured, f"{filled:.0f} s"])
            wall = float(measured[0].split()[0])
            target(f"{name}: fleet_report over {total_runs} ended runs ≤ 2 s", wall, 2.0,
                   shown=f"{wall:.2f} s")
            wall = float(measured[1].split()[2])
            target(f"{name}: session_report of {big} runs ≤ 1 s", wall, 1.0,
                   shown=f"{wall:.2f} s")
        if pg is None:
            report_rows.append(["PostgreSQL", "no server", "-", "-", "-", "-"])
        print(table(["store", "ended runs stored", "fleet_report, every run",
                     "session_report, one large session", "session_report, one session",
                     "filling (not measured)"],
                    report_rows))
        print(f"\nWall-clock seconds, best of {1 if quick else 3} rounds (the process's CPU "
              "time beside it; PostgreSQL's own work is in its server), each round from the "
              "same state (the previous round's report freed and collected before the clock "
              "starts). The runs are clones, "
              "with new ids, of 18 genuine runs recorded by the sync driver (six examples, "
              "with tool calls): each clone is the run row and the summary its end wrote "
              "(digest, columns, call and tool rows). Both reports read the summaries: the "
              "fleet report is SQL over their columns, the session report decodes one digest "
              "per run; no journal is folded.\n")
