"""The fleet report: how the runs in a store went, for the people who operate them (spec §16).

Everything is derived from the stored journals through the same per-run
story the session report tells (:func:`run_story`): outcome and reason-code
counts, the gatekeeper's PASS / LOW_CONFID / REJECT rates over its audits,
how often a run needed an evidence retry or ended in a fallback, each tool's
failure rate, per-call latency percentiles from the ``duration_ms`` the
drivers measured, and the feedback ratings. It is a :class:`FleetReport`
value (wire form ``diagnosis_fleet_report_v1``, ``docs/stores.md``);
:func:`fleet_report_html` (module ``_pages``) renders it as a self-contained page.
"""

from __future__ import annotations

from .. import JournalError
from ..journal import JournalStore, StoreError
from ._base import check_since
from ._escape import text_line
from ._pages import outcomes_by_workflow, when
from ._reports import FLEET_REPORT_FORMAT, FleetReport
from ._session import _folded, _from_summary, stories
from ._sql import SqlStore
from ._story import checked_feedback
from ._summary import FleetTally, percentile

__all__ = [
    "FLEET_REPORT_FORMAT",
    "fleet_report",
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
        "since: " + ("-" if report.since is None else when(report.since)),
        "",
    ]
    for workflow, counts in outcomes_by_workflow(report).items():
        lines.append(f"{workflow} outcomes:")
        lines += [f"  {text_line(name):<30} {count}" for name, count in counts.items()]
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
