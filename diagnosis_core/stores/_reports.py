"""Reports as values: the session report, a run's story and the fleet report (spec §16).

Every report a store gives is a frozen ``attrs`` value, nested values all the
way down, serialized by the package's one converter (:func:`to_wire` /
:func:`from_wire`, :func:`to_json` / :func:`from_json`): nothing is read back
by string keys. The wire forms (``diagnosis_session_report_v2``,
``diagnosis_fleet_report_v1``) are documented in ``docs/stores.md``; their
bytes are pinned by ``tests/stores/test_report_values.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

import attrs

from .. import JsonValue
from ..machine import GatekeeperAudit

__all__ = [
    "FLEET_REPORT_FORMAT",
    "SESSION_REPORT_FORMAT",
    "AgentStep",
    "EffectTiming",
    "FeedbackItem",
    "FeedbackTally",
    "FleetReport",
    "GatekeeperRates",
    "LatencyTally",
    "RunCounts",
    "RunStory",
    "SessionReport",
    "StoryStatus",
    "StoryToolCall",
    "StoryToolError",
    "ToolTally",
    "VerifierRow",
    "WorkflowName",
]

SESSION_REPORT_FORMAT: Final = "diagnosis_session_report_v2"
"""The ``format`` of a session report's JSON form."""

FLEET_REPORT_FORMAT: Final = "diagnosis_fleet_report_v1"
"""The ``format`` of a fleet report's JSON form."""

WorkflowName = Literal["chat", "aiops"]
"""Which workflow a run belongs to: the chat diagnosis (spec §3) or AIOps."""

StoryStatus = Literal["complete", "incomplete", "invalid"]
"""A run as a report tells it: ended, waiting for a call, or unreadable (then ``problem``)."""


# --- one run's story ----------------------------------------------------------------


@attrs.frozen
class EffectTiming:
    """One journal entry: which call, its place, its state and the driver's ``duration_ms``."""

    seq: int
    call: str
    round: int
    attempt: int
    state: str
    duration_ms: float | None


@attrs.frozen
class StoryToolError:
    """Why a tool call failed (§13 ``error``): the exception's type and message."""

    type: str
    message: str


@attrs.frozen
class StoryToolCall:
    """One tool invocation of the run (a §13 ledger entry), ``input`` null when not recorded."""

    invocation_id: str
    tool_name: str
    success: bool
    input: JsonValue
    output: JsonValue
    error: StoryToolError | None
    duration_ms: float | None


@attrs.frozen
class AgentStep:
    """One executed node (the §8 trace event; an AIOps step's supervisor ``step`` as ``round``).

    ``message`` is the event's ``error`` detail — the parse error or the
    exception of a failed attempt, null otherwise: a failure reason of the run.
    """

    seq: int
    node: str
    round: int
    attempt: int
    status: str
    reason_code: str | None
    message: str | None = None


@attrs.frozen
class VerifierRow:
    """One verifier event; the verdicts are null for an attempt that did not complete."""

    round: int
    attempt: int
    status: str
    reason_code: str | None
    model_verdict: str | None
    effective_verdict: str | None
    ceiling: str | None
    groundedness_score: float | None
    unknown_claim_ids: tuple[str, ...]


@attrs.frozen
class FeedbackItem:
    """A user's feedback on the run (its MAC, when signed, is checked, not shown)."""

    rating: int
    comment: str | None
    after_seq: int
    recorded_at: float | None


@attrs.frozen
class RunStory:
    """One run of a session report, everything derived from its journal and its feedback.

    ``status`` ``invalid`` (the journal or a feedback MAC does not verify, or
    the store cannot give the run back) comes with ``problem`` naming why and
    nothing else: every list empty, every other optional field null — never a
    partial story. ``next_call`` says which call an ``incomplete`` run waits for.
    """

    run_id: str
    session_id: str
    workflow: WorkflowName
    created_at: float
    status: StoryStatus
    problem: str | None = None
    next_call: str | None = None
    effects: tuple[EffectTiming, ...] = ()
    tool_invocations: tuple[StoryToolCall, ...] = ()
    question: str | None = None
    agent_steps: tuple[AgentStep, ...] = ()
    gatekeeper_audits: tuple[GatekeeperAudit, ...] = ()
    verifier_evaluations: tuple[VerifierRow, ...] = ()
    outcome: str | None = None
    reason_code: str | None = None
    answer: str | None = None
    feedback: tuple[FeedbackItem, ...] = ()


@attrs.frozen
class SessionReport:
    """Every run of a session, in the order the store first saw them (spec §16)."""

    session_id: str
    runs: tuple[RunStory, ...]
    format: Literal["diagnosis_session_report_v2"] = SESSION_REPORT_FORMAT


# --- the fleet ----------------------------------------------------------------------


@attrs.frozen
class RunCounts:
    """How many runs a fleet report covers, by status."""

    total: int = 0
    complete: int = 0
    incomplete: int = 0
    invalid: int = 0


@attrs.frozen
class GatekeeperRates:
    """The gatekeeper's audits, and the fraction of them with each status.

    ``rates`` is keyed ``PASS``, ``LOW_CONFID`` and ``REJECT`` (null when no audit).
    """

    audits: int
    rates: Mapping[str, float | None]


@attrs.frozen
class ToolTally:
    """One tool's calls, failures and failure rate (null when never called)."""

    calls: int
    failures: int
    failure_rate: float | None


@attrs.frozen
class LatencyTally:
    """One call's finished effects: how many, and their nearest-rank p50 / p95 in ms."""

    count: int
    p50: float | None
    p95: float | None


@attrs.frozen
class FeedbackTally:
    """The feedback ratings: how many, their mean, and the count per rating ``"1"`` … ``"5"``."""

    count: int
    mean_rating: float | None
    ratings: Mapping[str, int]


@attrs.frozen
class FleetReport:
    """How the runs of a store went, for the people who operate them (spec §16).

    ``outcomes`` and ``reason_codes`` count complete runs; a rate is null
    when there is nothing to divide by; ``latency_ms`` is keyed by call
    (AIOps calls prefixed ``aiops.``), ``tools`` by tool name.
    """

    runs: RunCounts
    outcomes: Mapping[str, int]
    reason_codes: Mapping[str, int]
    gatekeeper: GatekeeperRates
    evidence_retry_rate: float | None
    fallback_rate: float | None
    tools: Mapping[str, ToolTally]
    latency_ms: Mapping[str, LatencyTally]
    feedback: FeedbackTally
    since: float | None = None
    """The report's window: runs first stored at or after it (seconds since the epoch)."""
    format: Literal["diagnosis_fleet_report_v1"] = FLEET_REPORT_FORMAT
