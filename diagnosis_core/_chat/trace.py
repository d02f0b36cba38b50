"""The pure trace (spec §8): one event per executed node, and the report.

Events carry no timestamps or durations: the pure core has no clock. A driver
that has one may wrap the events in its own envelope. Everything here
round-trips through the converter to plain JSON and back unchanged.
"""

from __future__ import annotations

import attrs

from .._kernel.enums import NodeStatus
from .._kernel.records import share_repr
from .._kernel.wire.converter import register_json_text, register_sparse_details
from .enums import AgentName, GatekeeperStatus, NodeName, Outcome, ReasonCode, Verdict
from .payloads import VerifierOutput

__all__ = [
    "CallCounts",
    "EventDetails",
    "GatekeeperAudit",
    "InvocationRecord",
    "RawResult",
    "TraceEvent",
    "TraceReport",
    "VerifierEvaluation",
]


@attrs.frozen(repr=False)
class EventDetails:
    """Node-specific details of a trace event; absent fields are omitted on the wire.

    gatekeeper: ``raw_status``, ``raw_level``, ``status``, ``checked``,
    ``passed``, ``failed``, ``trusted_bindings``; verifier: ``model_verdict``,
    ``effective_verdict``, ``ceiling``, ``groundedness_score``,
    ``unknown_claim_ids``; evidence_retry: ``gap_count``; failed attempts:
    ``error`` (the parse error or the exception, for debugging).
    """

    raw_status: str | None = None
    raw_level: str | None = None
    status: GatekeeperStatus | None = None
    checked: int | None = None
    passed: int | None = None
    failed: int | None = None
    trusted_bindings: int | None = None
    model_verdict: Verdict | None = None
    effective_verdict: Verdict | None = None
    ceiling: Verdict | None = None
    groundedness_score: float | None = None
    unknown_claim_ids: tuple[str, ...] | None = None
    gap_count: int | None = None
    error: str | None = None


@attrs.frozen(repr=False)
class TraceEvent:
    """One executed node (spec §8). ``input_sha256`` is set for LLM nodes only."""

    seq: int
    node: NodeName
    round: int
    attempt: int
    status: NodeStatus
    reason_code: ReasonCode | None
    input_sha256: str | None
    details: EventDetails = attrs.field(factory=EventDetails)


@attrs.frozen(repr=False)
class InvocationRecord:
    """One LLM invocation with the exact input string it was sent."""

    agent: AgentName
    round: int
    attempt: int
    input: str


@attrs.frozen(repr=False)
class CallCounts:
    """Effect invocations per agent and for the gatekeeper (all five keys, zeros too)."""

    planner: int = 0
    executor: int = 0
    gatekeeper: int = 0
    verifier: int = 0
    composer: int = 0

    def incremented(self, name: str) -> CallCounts:
        """A copy with one more call of ``name`` (an agent name or ``gatekeeper``)."""
        return attrs.evolve(self, **{name: getattr(self, name) + 1})


@attrs.frozen(repr=False)
class RawResult:
    """A raw gatekeeper result kept as-is for audit, as canonical JSON text.

    Values that are not JSON (a Python object, NaN, a cycle) are recorded as
    ``{"unserializable": "<repr>"}``; the normalization never looks at this copy.
    On the wire it is the JSON value itself, not a string.
    """

    json_text: str


@attrs.frozen(repr=False)
class GatekeeperAudit:
    """The gatekeeper of one round: its raw result and how it was normalized.

    ``raw_result`` is None exactly when the gatekeeper raised; ``error`` then
    says why.
    """

    round: int
    raw_result: RawResult | None
    error: str | None
    status: GatekeeperStatus
    reason_code: ReasonCode | None
    problem: str | None
    checked: int
    passed: int
    failed: int
    trusted_bindings: int

    def __attrs_post_init__(self) -> None:
        # ``error`` is set exactly when the gatekeeper raised; otherwise it returned,
        # and a raw result of JSON null is on the wire as ``null`` as well, so it
        # must read back as ``RawResult("null")``, not as "no result" (spec §10.8).
        if self.error is None and self.raw_result is None:
            object.__setattr__(self, "raw_result", RawResult("null"))


@attrs.frozen(repr=False)
class VerifierEvaluation:
    """A completed verifier attempt: output (unknown ids dropped) and the three verdict fields."""

    round: int
    attempt: int
    output: VerifierOutput
    model_verdict: Verdict
    ceiling: Verdict
    effective_verdict: Verdict
    unknown_claim_ids: tuple[str, ...]
    gap_count: int


@attrs.frozen(repr=False)
class TraceReport:
    """Everything a person needs to audit one run (spec §8, seed 003 §8)."""

    run_id: str
    session_id: str
    question: str
    events: tuple[TraceEvent, ...]
    gatekeeper_audits: tuple[GatekeeperAudit, ...]
    verifier_evaluations: tuple[VerifierEvaluation, ...]
    invocations: tuple[InvocationRecord, ...]
    outcome: Outcome | None
    reason_code: ReasonCode | None
    answer: str | None
    observer_failures: int = 0
    """Observer hooks that raised while the run was driven (spec §12.5); the
    key is written only when not 0, so a report without failures keeps its
    exact §8 bytes."""


register_sparse_details(EventDetails)
register_json_text(RawResult)


share_repr(
    EventDetails,
    TraceEvent,
    InvocationRecord,
    CallCounts,
    RawResult,
    GatekeeperAudit,
    VerifierEvaluation,
    TraceReport,
)
