"""Benchmarks of the journal stores (spec §16), the ``stores`` section of ``run.py``.

1. Per-entry append cost: the ``started`` + ``finished`` writes of the 1st and
   of the 24th entry of a run, in the JSON Lines, SQLite and PostgreSQL
   stores (each write durable: ``fsync`` / ``synchronous=FULL`` / a committed
   row). O(1) in the journal's length means the two are within 1.5×.
2. ``session_report`` over a store holding 10 000 runs (``--quick``: 1 000):
   one session of 10 runs among them, and one session holding all of them,
   in SQLite and PostgreSQL. The runs are genuine journals recorded by the
   sync driver; the store is filled with one transaction per store (the
   filling is not what is measured).

PostgreSQL is the throwaway server of the tests (``initdb`` of the Debian
``postgresql`` package, fsync off); without one, its rows say so.
"""

from __future__ import annotations

import contextlib
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


def _fill(url: str, runs: int, small_session: str) -> None:
    """``runs`` recorded runs: the first 10 in ``small_session``, the others in ``fill``."""
    store = open_store(url)
    db: Any = store._db  # type: ignore[attr-defined]
    rows_runs, rows_entries = [], []
    now = time.time()
    for index in range(runs):
        session = small_session if index < 10 else "fill"
        scenario = dc.load_scenario(_document(f"{small_session}-{index}", session))
        request = dc.scenario_request(scenario)
        sink = dcj.ListJournalSink()
        dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
        header = dcj.journal_to_json(dcj.Journal(request))
        rows_runs.append((request.run.run_id, session, dcj.JOURNAL_FORMAT, now + index * 1e-6,
                          header))
        for entry in sink.entries:
            rows_entries.append((request.run.run_id, entry.seq, entry.state.value,
                                 dcj.entry_to_json(entry), 1.0, "fill", now))
    sql_runs = ("INSERT INTO diagnosis_runs (run_id, session_id, format, created_at, payload) "
                "VALUES ({0}, {0}, {0}, {0}, {0})")
    sql_entries = ("INSERT INTO diagnosis_entries (run_id, seq, state, payload, duration_ms, "
                   "token, written_at) VALUES ({0}, {0}, {0}, {0}, {0}, {0}, {0})")
    if url.startswith("sqlite:"):
        with db:
            db.execute("BEGIN")
            db.executemany(sql_runs.format("?"), rows_runs)
            db.executemany(sql_entries.format("?"), rows_entries)
    else:
        with db.transaction(), db.cursor() as cursor:
            cursor.executemany(sql_runs.format("%s"), rows_runs)
            cursor.executemany(sql_entries.format("%s"), rows_entries)
    store.close()


def _time_report(url: str, session: str, rounds: int) -> tuple[float, int]:
    store = open_store(url)
    try:
        best = float("inf")
        count = 0
        for _ in range(rounds):
            begin = time.perf_counter()
            report = session_report(store, session)
            best = min(best, time.perf_counter() - begin)
            assert all(story.status == "complete" for story in report.runs)
            count = len(report.runs)
        return best, count
    finally:
        store.close()


def bench_stores(quick: bool, table: Any, target: Any, ms: Any) -> None:
    """Print the store section (``table``, ``target``, ``ms`` are ``run.py``'s helpers)."""
    print("## 7. Journal stores: per-entry append cost and the session report\n")
    runs_for_append = 5 if quick else 40
    total_runs = 1000 if quick else 10_000
    rows = []
    with tempfile.TemporaryDirectory() as scratch, _postgres() as pg:
        urls = {"JSON Lines": str(Path(scratch) / "a.jsonl"),
                "SQLite": f"sqlite:///{Path(scratch) / 'a.db'}"}
        if pg is not None:
            urls["PostgreSQL"] = pg
        for name, url in urls.items():
            first, last = _append_costs(url, runs_for_append)
            verdict = target(f"{name}: appending entry 24 ÷ entry 1 ≤ 1.5×", last / first, 1.5)
            rows.append([name, ms(first), ms(last), f"{last / first:.2f}× ({verdict})"])
        if pg is None:
            rows.append(["PostgreSQL", "no server", "-", "-"])
        print(table(["store", "entry 1 ms (2 writes)", "entry 24 ms (2 writes)", "24 ÷ 1"], rows))
        print(f"\nWall-clock medians over {runs_for_append} runs of 24 entries; each write "
              "is durable before it returns.\n")
        report_rows = []
        report_urls = {"SQLite": f"sqlite:///{Path(scratch) / 'report.db'}"}
        if pg is not None:
            report_urls["PostgreSQL"] = pg
        for name, url in report_urls.items():
            session = f"small-{time.monotonic_ns()}"
            begin = time.perf_counter()
            _fill(url, total_runs, session)
            filled = time.perf_counter() - begin
            small, small_count = _time_report(url, session, 3 if quick else 11)
            large, large_count = _time_report(url, "fill", 1)
            report_rows.append([name, f"{total_runs}", f"{small_count} runs: {ms(small)}",
                                f"{large_count} runs: {ms(large)}", f"{filled:.1f} s"])
        print(table(["store", "runs stored", "session_report, one session",
                     "session_report, one huge session", "filling (not measured)"],
                    report_rows))
        print("\nWall-clock ms (best of rounds). Each run is a genuine 5-entry journal; the "
              "report folds every run of the session and derives its story.\n")
