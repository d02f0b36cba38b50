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

import math
from collections import Counter
from collections.abc import Sequence

from ._base import JournalStore
from ._escape import text_line
from ._pages import outcomes_by_workflow, when
from ._reports import (
    FLEET_REPORT_FORMAT,
    FeedbackTally,
    FleetReport,
    GatekeeperRates,
    LatencyTally,
    RunCounts,
    ToolTally,
)
from ._session import listed_runs, run_story, unreadable_story

__all__ = [
    "FLEET_REPORT_FORMAT",
    "fleet_report",
    "format_fleet_report",
]

_GATEKEEPER_STATUSES = ("PASS", "LOW_CONFID", "REJECT")


def _rate(count: int, total: int) -> float | None:
    return None if total == 0 else round(count / total, 6)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def _counts(counter: Counter[str]) -> dict[str, int]:
    return {name: counter[name] for name in sorted(counter)}


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
    """
    statuses: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    gatekeeper: Counter[str] = Counter()
    tools: dict[str, list[int]] = {}
    latencies: dict[str, list[float]] = {}
    ratings: Counter[str] = Counter()
    rating_sum = 0
    retried = fallbacks = finished = chat_finished = 0
    for summary, stored, problem in listed_runs(store, since=since):
        story = (
            unreadable_story(summary, problem or "") if stored is None
            else run_story(stored, key=key)
        )
        statuses[story.status] += 1
        if story.status == "invalid":
            continue
        prefix = "" if story.workflow == "chat" else "aiops."
        for effect in story.effects:
            if effect.duration_ms is not None and effect.state == "finished":
                latencies.setdefault(prefix + effect.call, []).append(effect.duration_ms)
        for tool in story.tool_invocations:
            tally = tools.setdefault(tool.tool_name, [0, 0])
            tally[0] += 1
            tally[1] += 0 if tool.success else 1
        for audit in story.gatekeeper_audits:
            gatekeeper[audit.status.value] += 1
        for item in story.feedback:
            ratings[str(item.rating)] += 1
            rating_sum += item.rating
        if story.status != "complete":
            continue
        finished += 1
        outcome = story.outcome or ""
        outcomes[outcome] += 1
        if story.reason_code is not None:
            reasons[story.reason_code] += 1
        if "FALLBACK" in outcome:
            fallbacks += 1
        if story.workflow == "chat":
            chat_finished += 1
            if any(step.node == "evidence_retry" for step in story.agent_steps):
                retried += 1
    audits = sum(gatekeeper.values())
    feedback_count = sum(ratings.values())
    return FleetReport(
        since=since,
        runs=RunCounts(total=sum(statuses.values()), complete=statuses["complete"],
                       incomplete=statuses["incomplete"], invalid=statuses["invalid"]),
        outcomes=_counts(outcomes),
        reason_codes=_counts(reasons),
        gatekeeper=GatekeeperRates(
            audits=audits,
            rates={name: _rate(gatekeeper[name], audits) for name in _GATEKEEPER_STATUSES},
        ),
        evidence_retry_rate=_rate(retried, chat_finished),
        fallback_rate=_rate(fallbacks, finished),
        tools={
            name: ToolTally(calls, failures, _rate(failures, calls))
            for name, (calls, failures) in sorted(tools.items())
        },
        latency_ms={
            call: LatencyTally(len(values), percentile(values, 0.5), percentile(values, 0.95))
            for call, values in sorted(latencies.items())
        },
        feedback=FeedbackTally(
            count=feedback_count,
            mean_rating=None if not feedback_count else round(rating_sum / feedback_count, 6),
            ratings={str(value): ratings[str(value)] for value in range(1, 6)},
        ),
    )


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
