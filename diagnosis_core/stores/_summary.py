"""Derived summaries: what a report needs of an ended run, kept beside its journal (spec §16).

When a run reaches its end, its store keeps a :class:`RunDigest`: the run's
story (:class:`RunStory`, without feedback) and the head of its MAC chain,
computed by :func:`run_digest` — a pure function of the stored journal, so
any reader can compute it again from the journal and compare
(:func:`verify_summaries`). From the digest, :func:`digest_columns` derives
the flat values the SQL stores keep in columns so that SQL can aggregate
them (outcome, reason code, gatekeeper statuses, evidence retry, fallback,
tool calls and failures, the latency of every finished call).

A summary is derived, never trusted: the session and fleet reports read
it instead of folding the journal, and ``--verify`` folds every journal and
lists every run whose summary disagrees. Feedback is not in the summary: it
is read, decoded and checked (its MAC chain, with a key) from its own records
each time, so a feedback recorded after the summary is always counted.

:class:`FleetTally` is the fleet report's arithmetic over stories; the SQL
stores fill the same tally from their columns.

A report reads one digest per ended run, so reading one is its cost: a
digest is stored in a positional form (records as arrays, no keys), which
the strict parser reads with few objects and a reader generated from the
digest's classes checks and builds in one walk; a large report is built
with the cyclic collector paused (:func:`paused_gc`).
"""

from __future__ import annotations

import contextlib
import gc
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

import attrs

from .. import JsonValue, PayloadError, from_wire, from_wire_array, to_wire_array
from ..journal import stored_json
from ..protocol import loads_stored
from ._reports import (
    FeedbackTally,
    FleetReport,
    GatekeeperRates,
    LatencyTally,
    RunCounts,
    RunStory,
    ToolTally,
)

__all__ = [
    "DigestColumns",
    "FleetTally",
    "RunDigest",
    "SummaryMismatch",
    "digest_columns",
    "digest_from_json",
    "digest_to_json",
    "percentile",
]

GATEKEEPER_STATUSES = ("PASS", "LOW_CONFID", "REJECT")


@attrs.frozen
class RunDigest:
    """The summary of an ended run: its story without feedback, and its MAC chain's head.

    ``last_mac`` is the end marker's ``mac`` (or the last entry's): the link
    the run's first feedback is signed over, so feedback is verified with a
    key without loading the journal.
    """

    story: RunStory
    last_mac: str | None = None


@attrs.frozen
class DigestColumns:
    """The flat values of a digest that the SQL stores keep in columns and tables."""

    workflow: str
    outcome: str | None
    reason_code: str | None
    evidence_retry: bool
    fallback: bool
    audits: tuple[int, int, int]
    """Gatekeeper audits with status ``PASS``, ``LOW_CONFID``, ``REJECT``."""
    tools: tuple[tuple[str, int, int], ...]
    """``(tool_name, calls, failures)`` per tool, sorted by name."""
    latencies: tuple[tuple[str, float], ...]
    """``(call, duration_ms)`` per finished effect with a duration (AIOps calls ``aiops.``)."""


@attrs.frozen
class SummaryMismatch:
    """A run whose stored summary is not what its journal gives (``--verify``)."""

    run_id: str
    problem: str


def digest_to_json(digest: RunDigest) -> str:
    """The digest's stored text: its positional form (below), as canonical JSON.

    Raises :class:`PayloadError` for a digest holding a string with a
    surrogate pair (a high surrogate directly before a low one), which JSON
    would read back as another text (spec §12.1). A journal never holds one
    (its facts are repaired or refused at the door), so neither does a digest
    derived from it; one built by hand is refused rather than stored changed.
    """
    text = stored_json(to_wire_array(digest))
    if "\\u" in text and _ESCAPED_PAIR.search(text) is not None:
        raise PayloadError("summary", "a string holding a surrogate pair JSON cannot store")
    return text


# The writer writes a surrogate code point as an escape (``\ud800``); an escaped high
# surrogate directly before an escaped low one is what JSON reads back as one character.
# The backslash opening the first escape is preceded by an even number of backslashes.
_ESCAPED_PAIR = re.compile(
    r"(?<!\\)(?:\\\\)*\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def digest_from_json(text: str) -> RunDigest:
    """A stored digest read back strictly; :class:`PayloadError` for anything else.

    The text is parsed as stored facts (:func:`loads_stored`: every rule of
    the strict parser, duplicate keys refused anywhere, an escaped lone
    surrogate kept). A JSON array is the positional form this module writes;
    an object is the converter's keyed form of a :class:`RunDigest` (what the
    stores wrote before), structured by the converter.
    """
    value = loads_stored(text)
    if type(value) is list:
        digest = from_wire_array(RunDigest, value)
    elif type(value) is dict:
        digest = from_wire(RunDigest, value)
    else:
        raise PayloadError("summary", "expected a JSON array (a stored digest)")
    if digest.story.status != "complete" or digest.story.feedback:
        raise PayloadError("story", "a summary tells a complete run, without feedback")
    return digest


# --- building a large report -----------------------------------------------------------

_PAUSES = threading.Lock()
_paused = 0  # calls inside paused_gc(), every thread
_resume = False  # whether the collector was enabled when the first of them began


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector held off while a report builds its values.

    A session report of 10 000 runs builds some 300 000 objects that all
    live on (the report): each time a generation fills up the collector
    scans them again, a quarter to a third of the report's CPU time, for
    nothing (they hold no garbage cycle; reference counting frees what the
    build drops). The collector is process-wide, so the pause is counted
    across threads: the first call to begin disables it (when enabled), the
    last to end enables it again, on every way out (an error too); a host
    that had disabled it keeps it disabled. Only what a bounded build
    creates waits, and a collection runs as usual after it.
    """
    global _paused, _resume
    with _PAUSES:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _PAUSES:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()


def digest_columns(story: RunStory) -> DigestColumns:
    """The columns of a story, as the fleet report counts it (pure)."""
    prefix = "" if story.workflow == "chat" else "aiops."
    statuses = Counter(audit.status.value for audit in story.gatekeeper_audits)
    tools: dict[str, list[int]] = {}
    for tool in story.tool_invocations:
        tally = tools.setdefault(tool.tool_name, [0, 0])
        tally[0] += 1
        tally[1] += 0 if tool.success else 1
    outcome = story.outcome
    return DigestColumns(
        workflow=story.workflow,
        outcome=outcome,
        reason_code=story.reason_code,
        evidence_retry=story.workflow == "chat" and story.status == "complete" and any(
            step.node == "evidence_retry" for step in story.agent_steps),
        fallback=outcome is not None and "FALLBACK" in outcome,
        audits=(statuses["PASS"], statuses["LOW_CONFID"], statuses["REJECT"]),
        tools=tuple((name, calls, failures) for name, (calls, failures) in sorted(tools.items())),
        latencies=tuple(
            (prefix + effect.call, float(effect.duration_ms)) for effect in story.effects
            if effect.duration_ms is not None and effect.state == "finished"
        ),
    )


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[nearest_rank(len(ordered), fraction) - 1]


def nearest_rank(count: int, fraction: float) -> int:
    """The 1-based rank of the nearest-rank percentile among ``count`` values."""
    return max(1, math.ceil(fraction * count))


def _rate(count: int, total: int) -> float | None:
    return None if total == 0 else round(count / total, 6)


@attrs.define
class FleetTally:
    """The fleet report's counters; stories are added one by one, or a SQL store fills them."""

    statuses: Counter[str] = attrs.Factory(Counter)
    outcomes: Counter[str] = attrs.Factory(Counter)
    reasons: Counter[str] = attrs.Factory(Counter)
    gatekeeper: Counter[str] = attrs.Factory(Counter)
    tools: dict[str, list[int]] = attrs.Factory(dict)
    latencies: dict[str, list[float]] = attrs.Factory(dict)
    ratings: Counter[str] = attrs.Factory(Counter)
    rating_sum: int = 0
    retried: int = 0
    fallbacks: int = 0
    finished: int = 0
    chat_finished: int = 0

    def add(self, story: RunStory) -> None:
        """Count one run as the fleet report does."""
        self.statuses[story.status] += 1
        if story.status == "invalid":
            return
        columns = digest_columns(story)
        for call, duration in columns.latencies:
            self.latencies.setdefault(call, []).append(duration)
        for name, calls, failures in columns.tools:
            tally = self.tools.setdefault(name, [0, 0])
            tally[0] += calls
            tally[1] += failures
        for name, count in zip(GATEKEEPER_STATUSES, columns.audits, strict=True):
            if count:
                self.gatekeeper[name] += count
        self.add_feedback(item.rating for item in story.feedback)
        if story.status != "complete":
            return
        self.finished += 1
        self.outcomes[story.outcome or ""] += 1
        if story.reason_code is not None:
            self.reasons[story.reason_code] += 1
        self.fallbacks += columns.fallback
        if story.workflow == "chat":
            self.chat_finished += 1
            self.retried += columns.evidence_retry

    def add_feedback(self, ratings: Iterable[int]) -> None:
        """Count feedback ratings."""
        for rating in ratings:
            self.ratings[str(rating)] += 1
            self.rating_sum += rating

    def report(
        self, since: float | None,
        percentiles: Mapping[str, tuple[int, float | None, float | None]] | None = None,
    ) -> FleetReport:
        """The fleet report of what was counted.

        ``percentiles`` gives ``(count, p50, p95)`` of calls whose values are
        not all in :attr:`latencies` (a SQL store ranked them); it wins.
        """
        audits = sum(self.gatekeeper.values())
        feedback_count = sum(self.ratings.values())
        latency = {
            call: LatencyTally(len(values), percentile(values, 0.5), percentile(values, 0.95))
            for call, values in self.latencies.items()
        }
        for call, (count, p50, p95) in (percentiles or {}).items():
            latency[call] = LatencyTally(count, p50, p95)
        return FleetReport(
            since=since,
            runs=RunCounts(total=sum(self.statuses.values()), complete=self.statuses["complete"],
                           incomplete=self.statuses["incomplete"],
                           invalid=self.statuses["invalid"]),
            outcomes={name: self.outcomes[name] for name in sorted(self.outcomes)},
            reason_codes={name: self.reasons[name] for name in sorted(self.reasons)},
            gatekeeper=GatekeeperRates(
                audits=audits,
                rates={name: _rate(self.gatekeeper[name], audits)
                       for name in GATEKEEPER_STATUSES},
            ),
            evidence_retry_rate=_rate(self.retried, self.chat_finished),
            fallback_rate=_rate(self.fallbacks, self.finished),
            tools={name: ToolTally(calls, failures, _rate(failures, calls))
                   for name, (calls, failures) in sorted(self.tools.items())},
            latency_ms={call: latency[call] for call in sorted(latency)},
            feedback=FeedbackTally(
                count=feedback_count,
                mean_rating=(None if not feedback_count
                             else round(self.rating_sum / feedback_count, 6)),
                ratings={str(value): self.ratings[str(value)] for value in range(1, 6)},
            ),
        )


def describe_difference(stored: JsonValue, expected: JsonValue, path: str = "") -> str:
    """The first place two wire values differ (``story.outcome``), for a mismatch's problem."""
    if isinstance(stored, dict) and isinstance(expected, dict):
        for name in sorted(set(stored) | set(expected)):
            if stored.get(name) != expected.get(name):
                return describe_difference(stored.get(name), expected.get(name),
                                           f"{path}.{name}" if path else name)
    if isinstance(stored, list) and isinstance(expected, list) and len(stored) == len(expected):
        for index, (left, right) in enumerate(zip(stored, expected, strict=True)):
            if left != right:
                return describe_difference(left, right, f"{path}[{index}]")
    return path or "$"
