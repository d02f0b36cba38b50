"""Frozen value types for every payload of the protocol (spec §5, §6.1).

These are the *parsed* forms: a value of one of these classes has passed every
rule of its section (the parsers in :mod:`diagnosis_core._chat.parsing` guarantee
it). Collections are tuples so nobody can mutate a payload after parsing.
Python attribute names equal the wire names; :mod:`diagnosis_core._kernel.wire.converter`
is the one place that maps them to JSON.
"""

from __future__ import annotations

from typing import Literal

import attrs

from .._kernel.machine.plan import PlanStep
from .._kernel.records import share_repr
from .enums import BindingCheckStatus, EvidenceStatus, Verdict, Verification

__all__ = [
    "EXECUTOR_SCHEMA_VERSION",
    "CheckedBinding",
    "Claim",
    "ComposerOutput",
    "EvidenceBinding",
    "ExecutorEvidence",
    "FactCheck",
    "GatekeeperResult",
    "HistoryMessage",
    "Hypothesis",
    "PlannerPlan",
    "Skill",
    "ToolTraceEntry",
    "VerifierOutput",
]

EXECUTOR_SCHEMA_VERSION: Literal["executor_evidence_v2"] = "executor_evidence_v2"
"""The only ``schema_version`` the executor payload may carry."""


# --- request material -------------------------------------------------------


@attrs.frozen(repr=False)
class HistoryMessage:
    """One chat history message; only ``role`` and ``content`` ever reach the planner."""

    role: str
    content: str


@attrs.frozen(repr=False)
class Skill:
    """A playbook in the catalog. The planner sees ``name`` and ``description`` only."""

    name: str
    description: str


# --- planner_plan (§5.1) ------------------------------------------------------


@attrs.frozen(repr=False)
class PlannerPlan:
    """The planner's output: non-empty steps with unique ids, optional skill."""

    steps: tuple[PlanStep, ...]
    selected_skill: str | None = None


# --- executor_evidence_v2 (§5.2) ----------------------------------------------


@attrs.frozen(repr=False)
class EvidenceBinding:
    """Points a claim at the exact tool result that supports it."""

    source_invocation_id: str
    tool_name: str
    raw_path: str
    evidence_excerpt: str


@attrs.frozen(repr=False)
class Claim:
    """One executor claim with at least one binding."""

    claim_id: str
    text: str
    bindings: tuple[EvidenceBinding, ...]
    is_critical: bool = False


@attrs.frozen(repr=False)
class Hypothesis:
    """An unconfirmed idea of the executor; kept for the trace only."""

    text: str
    missing_evidence: str | None = None


@attrs.frozen(repr=False)
class ToolTraceEntry:
    """One tool call as the executor reports it; feeds the fallback's tool overview."""

    tool_name: str
    success: bool
    invocation_id: str | None = None


@attrs.frozen(repr=False)
class ExecutorEvidence:
    """The executor's ``executor_evidence_v2`` snapshot.

    ``claims`` is non-empty exactly when ``evidence_status`` is
    ``evidence_found``; claim ids are unique.
    """

    evidence_status: EvidenceStatus
    claims: tuple[Claim, ...]
    hypotheses: tuple[Hypothesis, ...] = ()
    tool_trace_summary: tuple[ToolTraceEntry, ...] = ()
    schema_version: Literal["executor_evidence_v2"] = EXECUTOR_SCHEMA_VERSION


# --- verifier_output (§5.3) ---------------------------------------------------


@attrs.frozen(repr=False)
class FactCheck:
    """The verifier's judgement of one fact of one claim."""

    claim_id: str
    fact: str
    is_critical: bool
    verification: Verification


@attrs.frozen(repr=False)
class VerifierOutput:
    """The verifier's output. ``verdict`` is the *model* verdict, before the ceiling."""

    verdict: Verdict
    groundedness_score: float
    facts_checked: tuple[FactCheck, ...]
    allowed_claim_ids: tuple[str, ...]
    critical_fact_count: int | None = None
    missing_info: tuple[str, ...] = ()
    recommended_actions: tuple[str, ...] = ()
    rationale: str = ""


# --- composer_output (§5.4) ---------------------------------------------------


@attrs.frozen(repr=False)
class ComposerOutput:
    """The user-facing answer; cited ids are a subset of the allowed claims."""

    answer: str
    cited_claim_ids: tuple[str, ...] = ()


# --- gatekeeper result (§6.1) -------------------------------------------------


@attrs.frozen(repr=False)
class CheckedBinding:
    """One binding as the gatekeeper checked it.

    Its key ``(claim_id, source_invocation_id, tool_name, raw_path)`` is matched
    exactly against the executor's bindings by the projector.
    """

    claim_id: str
    source_invocation_id: str
    tool_name: str
    raw_path: str
    status: BindingCheckStatus
    matched_text: str | None = None
    reason: str | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The exact 4-tuple matching key."""
        return (self.claim_id, self.source_invocation_id, self.tool_name, self.raw_path)

    @property
    def passed(self) -> bool:
        """True when the gatekeeper accepted this binding."""
        return self.status is BindingCheckStatus.PASS


@attrs.frozen(repr=False)
class GatekeeperResult:
    """The gatekeeper's raw result shape, once well-formed (spec §6.1).

    ``status`` and ``level`` are kept lower-cased and stripped; a result that
    cannot be read into this shape is ``GATEKEEPER_INVALID_RESULT``.
    """

    status: str
    level: str | None = None
    checked_bindings: tuple[CheckedBinding, ...] = ()
    reason_codes: tuple[str, ...] = ()


share_repr(
    HistoryMessage,
    Skill,
    PlannerPlan,
    EvidenceBinding,
    Claim,
    Hypothesis,
    ToolTraceEntry,
    ExecutorEvidence,
    FactCheck,
    VerifierOutput,
    ComposerOutput,
    CheckedBinding,
    GatekeeperResult,
)
