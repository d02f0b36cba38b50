"""Agent inputs: the exact whitelists of spec §6.6.

Each agent sees one canonical-JSON object built from the typed values below and
nothing else. The input classes *are* the whitelists: a field that is not
declared here cannot reach an agent, and the converter decides the wire form.
Identical state gives byte-identical input; the machine stores the string it
sent so that a technical retry re-sends exactly the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import attrs

from .._kernel.records import share_repr
from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import canonical_json
from .config import DiagnosisConfig
from .enums import AnswerMode, GatekeeperStatus, Verdict
from .gaps import RetryContext
from .payloads import HistoryMessage, PlannerPlan, Skill
from .projection import AllowedClaim, VerifiedClaim, VerifiedEvidence, VerifiedInput

__all__ = [
    "ComposerInput",
    "ExecutorInput",
    "ExecutorRetryInput",
    "GatekeeperSummary",
    "PlannerInput",
    "VerifierInput",
    "build_composer_input",
    "build_executor_input",
    "build_planner_input",
    "build_verifier_input",
    "encode_agent_input",
    "last_items",
]

T = TypeVar("T")


@attrs.frozen(repr=False)
class PlannerInput:
    """Planner whitelist: the question, trimmed history and skill metadata only."""

    query: str
    history: tuple[HistoryMessage, ...]
    skills: tuple[Skill, ...]


@attrs.frozen(repr=False)
class ExecutorInput:
    """Round-1 executor whitelist."""

    query: str
    round: int
    planner_plan: PlannerPlan
    selected_skill: str | None


@attrs.frozen(repr=False)
class ExecutorRetryInput(ExecutorInput):
    """Round-2 executor whitelist: round 1's keys plus the retry context."""

    retry_context: RetryContext


@attrs.frozen(repr=False)
class GatekeeperSummary:
    """What the verifier learns of the gatekeeper: status, ceiling and counts only."""

    status: GatekeeperStatus
    ceiling: Verdict
    checked: int
    passed: int
    failed: int


@attrs.frozen(repr=False)
class VerifierInput:
    """Verifier whitelist: only projected (gatekeeper-trusted) material."""

    query: str
    round: int
    verified_executor_output: tuple[VerifiedClaim, ...]
    verified_evidence: tuple[VerifiedEvidence, ...]
    gatekeeper: GatekeeperSummary
    retry_context: RetryContext | None


@attrs.frozen(repr=False)
class ComposerInput:
    """Composer whitelist: verifier-allowed verified claims and the verifier's advice."""

    query: str
    answer_mode: AnswerMode
    effective_verdict: Verdict
    allowed_claims: tuple[AllowedClaim, ...]
    missing_info: tuple[str, ...]
    recommended_actions: tuple[str, ...]


AgentInput = PlannerInput | ExecutorInput | ExecutorRetryInput | VerifierInput | ComposerInput


def last_items(items: Sequence[T], count: int) -> tuple[T, ...]:
    """The last ``min(len(items), count)`` items, in order (none for ``count`` ≤ 0).

    Spelled out because the slice ``items[len(items) - count:]`` turns negative
    (and keeps too few items) when ``items`` is shorter than ``count``, and
    ``items[-count:]`` keeps everything when ``count`` is 0.
    """
    start = max(len(items) - max(count, 0), 0)
    return tuple(items[start:])


def encode_agent_input(value: AgentInput) -> str:
    """Canonical JSON of an input object: the exact string an agent receives."""
    return canonical_json(to_wire(value))


def build_planner_input(
    question: str,
    history: Sequence[HistoryMessage],
    skills: Sequence[Skill],
    config: DiagnosisConfig,
) -> str:
    """The planner's input: the last ``history_limit`` messages, skill name/description."""
    recent = last_items(history, config.history_limit)
    return encode_agent_input(PlannerInput(question, recent, tuple(skills)))


def build_executor_input(
    question: str, plan: PlannerPlan, round: int, retry_context: RetryContext | None
) -> str:
    """The executor's input; round 2 carries the retry context (spec §6.5)."""
    if retry_context is None:
        return encode_agent_input(ExecutorInput(question, round, plan, plan.selected_skill))
    return encode_agent_input(
        ExecutorRetryInput(question, round, plan, plan.selected_skill, retry_context)
    )


def build_verifier_input(
    question: str,
    round: int,
    verified: VerifiedInput,
    gatekeeper: GatekeeperSummary,
    retry_context: RetryContext | None,
) -> str:
    """The verifier's input: projections, gatekeeper counts, and the retry context."""
    return encode_agent_input(
        VerifierInput(
            question,
            round,
            verified.verified_executor_output,
            verified.verified_evidence,
            gatekeeper,
            retry_context,
        )
    )


def build_composer_input(
    question: str,
    answer_mode: AnswerMode,
    effective_verdict: Verdict,
    allowed_claims: Sequence[AllowedClaim],
    missing_info: Sequence[str],
    recommended_actions: Sequence[str],
) -> str:
    """The composer's input: allowed claims (verified text) and the verifier's advice."""
    return encode_agent_input(
        ComposerInput(
            question,
            answer_mode,
            effective_verdict,
            tuple(allowed_claims),
            tuple(missing_info),
            tuple(recommended_actions),
        )
    )


share_repr(
    PlannerInput,
    ExecutorInput,
    ExecutorRetryInput,
    GatekeeperSummary,
    VerifierInput,
    ComposerInput,
)
