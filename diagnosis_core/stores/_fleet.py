"""The fleet report: how the runs in a store went, for the people who operate them (spec §16).

Everything is derived from the stored journals through the same per-run
story the session report tells (:func:`run_story`): outcome and reason-code
counts, the gatekeeper's PASS / LOW_CONFID / REJECT rates over its audits,
how often a run needed an evidence retry or ended in a fallback, each tool's
failure rate, per-call latency percentiles from the ``duration_ms`` the
drivers measured, and the feedback ratings. It is a :class:`FleetReport`
value (wire form ``diagnosis_fleet_report_v1``, ``docs/stores.md``); :func:`fleet_report_html`
renders one self-contained page (inline SVG, no script, nothing fetched).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._kernel.converter import to_wire
from .._kernel.errors import JournalError
from ._base import JournalStore, StoreError, check_since
from ._escape import html_text, text_line
from ._reports import FLEET_REPORT_FORMAT, FleetReport
from ._session import _folded, _from_summary, stories
from ._sql import SqlStore
from ._story import checked_feedback
from ._summary import FleetTally, percentile

__all__ = [
    "FLEET_REPORT_FORMAT",
    "fleet_report",
    "fleet_report_html",
    "format_fleet_report",
    "percentile",
]

def fleet_report(
    store: JournalStore, *, since: float | None = None, key: bytes | None = None
) -> FleetReport:
    """Sum up every run in ``store`` first stored at or after ``since`` (seconds since the epoch).

    Runs that are incomplete are counted as such and contribute their
    effects' latencies and tool calls; a run the store cannot give back,
    or whose journal does not fold (or verify, with ``key``), is counted as
    ``invalid`` and contributes nothing else. ``since`` must be finite.
    Rates are fractions of the runs (or audits, or calls) they are about,
    null when there are none.

    Ended runs are counted from their derived summaries (spec §16, summaries): in a
    plain SQL store by SQL over the summary columns, elsewhere from the
    stored digests, one per run; only runs without a summary are folded.
    Feedback is read from its records, decoded, and its MAC chain verified
    with ``key``. :func:`verify_summaries` checks the summaries.
    """
    since = check_since(since)
    if not isinstance(store, SqlStore) or store.has_codec():
        tally = FleetTally()
        for story in stories(store, since=since, key=key):
            tally.add(story)
        return tally.report(since)
    return _sql_fleet(store, since, key)


def _sql_fleet(store: SqlStore, since: float | None, key: bytes | None) -> FleetReport:
    tally = FleetTally()
    ended: list[str] = []
    for row in store.unsummarized(since):
        story = _from_summary(store, row, store.feedback_of(row.run_id), key)
        if story is None:
            # summarized after the SQL below, which would count it a second time
            story = _folded(store, row, key, summarize=False)
            if story.status == "complete":
                ended.append(row.run_id)
        tally.add(story)
    excluded: list[str] = []
    for run_id, (link, rows) in store.summarized_feedback(since).items():
        try:
            items = checked_feedback(run_id, store.decode_feedback(run_id, rows), link, key)
        except (StoreError, JournalError):
            excluded.append(run_id)  # told invalid, like the journal's fold would
            tally.statuses["invalid"] += 1
            continue
        tally.add_feedback(item.rating for item in items)
    percentiles = store.tally_columns(tally, since, excluded)
    for run_id in ended:  # a store older than summaries: computed once, here
        store.summarize(run_id)
    return tally.report(since, percentiles)


def _show(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_fleet_report(report: FleetReport) -> str:
    """The fleet report as readable text (``diagnosis-core report``); every name made inert."""
    runs = report.runs
    lines = [
        f"runs: {runs.total} (complete {runs.complete}, incomplete {runs.incomplete}, "
        f"invalid {runs.invalid})",
        "",
        "outcomes:",
    ]
    lines += [f"  {text_line(name):<30} {count}" for name, count in report.outcomes.items()]
    lines.append("reason codes:")
    lines += [f"  {text_line(name):<30} {count}" for name, count in report.reason_codes.items()]
    gate = report.gatekeeper
    lines.append(f"gatekeeper audits: {gate.audits}")
    lines += [f"  {name:<30} {_show(rate)}" for name, rate in gate.rates.items()]
    lines.append(f"evidence retry rate: {_show(report.evidence_retry_rate)}")
    lines.append(f"fallback rate: {_show(report.fallback_rate)}")
    lines.append("tools (calls, failures, failure rate):")
    lines += [
        f"  {text_line(name):<30} {row.calls} {row.failures} {_show(row.failure_rate)}"
        for name, row in report.tools.items()
    ]
    lines.append("latency ms (count, p50, p95):")
    lines += [
        f"  {text_line(name):<30} {row.count} {_show(row.p50)} {_show(row.p95)}"
        for name, row in report.latency_ms.items()
    ]
    feedback = report.feedback
    lines.append(f"feedback: {feedback.count} rating(s), mean {_show(feedback.mean_rating)}")
    lines += [f"  {stars} star(s): {count}" for stars, count in feedback.ratings.items()]
    return "\n".join(lines) + "\n"


def _bar_chart(chart_id: str, title: str, rows: Sequence[tuple[str, float, str]]) -> str:
    """One horizontal bar chart as inline SVG: a ``rect`` per row, scaled to the largest."""
    width, bar, gap, label_width = 640, 22, 8, 240
    height = max(1, len(rows)) * (bar + gap) + 40
    largest = max((value for _, value, _ in rows), default=0.0) or 1.0
    parts = [
        f'<svg class="chart" id="{chart_id}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{html_text(title)}">',
        f'<text x="0" y="18" class="title">{html_text(title)}</text>',
    ]
    if not rows:
        parts.append('<text x="0" y="44" class="empty">no data</text>')
    for index, (label, value, shown) in enumerate(rows):
        y = 30 + index * (bar + gap)
        length = max(1.0, (width - label_width - 90) * value / largest)
        parts.append(
            f'<text x="0" y="{y + 16}" class="label">{html_text(label)}</text>'
            f'<rect class="bar" x="{label_width}" y="{y}" width="{length:.1f}" height="{bar}">'
            f"<title>{html_text(label)}: {html_text(shown)}</title></rect>"
            f'<text x="{label_width + length + 6:.1f}" y="{y + 16}" class="value">'
            f"{html_text(shown)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } section { margin-bottom: 2em; }
svg.chart .bar { fill: #3b6ea5; } svg.chart text { font-size: 13px; fill: #222; }
svg.chart .title { font-weight: bold; } table { border-collapse: collapse; }
td, th { padding: 2px 10px; text-align: left; border-bottom: 1px solid #ddd; }
"""


def fleet_report_html(fleet: FleetReport) -> str:
    """One self-contained HTML page of the fleet report: inline SVG charts, no network at all.

    Every stored string (a tool name, a call, an outcome) is inert HTML text
    (:func:`html_text`), and the page always encodes as UTF-8.
    """
    report: Any = to_wire(fleet)
    runs = report["runs"]
    charts = [
        _bar_chart("chart-outcomes", "Outcomes",
                   [(name, float(count), str(count))
                    for name, count in report["outcomes"].items()]),
        _bar_chart("chart-reasons", "Reason codes",
                   [(name, float(count), str(count))
                    for name, count in report["reason_codes"].items()]),
        _bar_chart("chart-gatekeeper", "Gatekeeper status rate",
                   [(name, rate or 0.0, _show(rate))
                    for name, rate in report["gatekeeper"]["rates"].items()]),
        _bar_chart("chart-tools", "Tool failure rate",
                   [(name, row["failure_rate"] or 0.0,
                     f"{_show(row['failure_rate'])} of {row['calls']}")
                    for name, row in report["tools"].items()]),
        _bar_chart("chart-latency", "Latency p95 (ms) per call",
                   [(name, row["p95"] or 0.0, f"p50 {_show(row['p50'])} p95 {_show(row['p95'])}")
                    for name, row in report["latency_ms"].items()]),
        _bar_chart("chart-feedback", "Feedback ratings",
                   [(f"{stars} star(s)", float(count), str(count))
                    for stars, count in report["feedback"]["ratings"].items()]),
    ]
    summary = (
        f"<table><tr><th>runs</th><td>{runs['total']}</td></tr>"
        f"<tr><th>complete</th><td>{runs['complete']}</td></tr>"
        f"<tr><th>incomplete</th><td>{runs['incomplete']}</td></tr>"
        f"<tr><th>invalid</th><td>{runs['invalid']}</td></tr>"
        f"<tr><th>evidence retry rate</th><td>{_show(report['evidence_retry_rate'])}</td></tr>"
        f"<tr><th>fallback rate</th><td>{_show(report['fallback_rate'])}</td></tr>"
        f"<tr><th>mean rating</th><td>{_show(report['feedback']['mean_rating'])}</td></tr>"
        "</table>"
    )
    body = "".join(f"<section>{chart}</section>" for chart in charts)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">"
        "<title>diagnosis fleet report</title>"
        f"<style>{_STYLE}</style></head><body><h1>Diagnosis fleet report</h1>"
        f"<section>{summary}</section>{body}</body></html>\n"
    )
