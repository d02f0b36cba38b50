"""Enumerations and reason codes of the protocol (spec §3).

Every wire value is fixed by the spec: other programs compare them byte for
byte, so the ``value`` of each member is the wire string and never changes.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable
from typing import cast

__all__ = [
    "AgentName",
    "AnswerMode",
    "BindingCheckStatus",
    "EvidenceStatus",
    "GatekeeperStatus",
    "NodeName",
    "Outcome",
    "ReasonCode",
    "Verdict",
    "Verification",
]


class NodeName(enum.StrEnum):
    """Every node of the chat diagnosis workflow (spec §1, §3)."""

    PLANNER = "planner"
    EXECUTOR = "executor"
    GATEKEEPER = "gatekeeper"
    VERIFIED_INPUT = "verified_input"
    VERIFIER = "verifier"
    EVIDENCE_RETRY = "evidence_retry"
    COMPOSER = "composer"
    PRE_VERIFICATION_FALLBACK = "pre_verification_fallback"
    POST_VERIFICATION_FALLBACK = "post_verification_fallback"


class AgentName(enum.StrEnum):
    """The four LLM agents; each is an :class:`AgentInvoker` effect."""

    PLANNER = "planner"
    EXECUTOR = "executor"
    VERIFIER = "verifier"
    COMPOSER = "composer"

    @property
    def node(self) -> NodeName:
        """The workflow node this agent runs as."""
        return NodeName(self.value)


_VERDICT_RANK = {"REJECT": 0, "LOW_CONFID": 1, "PASS": 2}


def _by_rank(compare: Callable[[int, int], bool]) -> Callable[[Verdict, object], bool]:
    """A comparison of verdicts by rank (a ``str`` subclass would compare the wire strings)."""

    def method(self: Verdict, other: object) -> bool:
        if not isinstance(other, Verdict):
            return cast(bool, NotImplemented)  # mypy takes it bare only in a dunder
        return compare(self.rank, other.rank)

    return method


class Verdict(enum.StrEnum):
    """A diagnosis verdict, totally ordered ``REJECT < LOW_CONFID < PASS``.

    The order is what makes the ceiling (spec §6.3) a plain ``min``.
    """

    REJECT = "REJECT"
    LOW_CONFID = "LOW_CONFID"
    PASS = "PASS"

    @property
    def rank(self) -> int:
        """0 for REJECT, 1 for LOW_CONFID, 2 for PASS."""
        return _VERDICT_RANK[self.value]

    __lt__ = _by_rank(operator.lt)
    __le__ = _by_rank(operator.le)
    __gt__ = _by_rank(operator.gt)
    __ge__ = _by_rank(operator.ge)


class GatekeeperStatus(enum.StrEnum):
    """The normalized gatekeeper status (spec §6.1)."""

    PASS = "PASS"
    LOW_CONFID = "LOW_CONFID"
    REJECT = "REJECT"


class BindingCheckStatus(enum.StrEnum):
    """Status of one gatekeeper-checked binding (lower case on the wire)."""

    PASS = "pass"
    FAIL = "fail"


class Verification(enum.StrEnum):
    """How the verifier judged one fact (spec §5.3)."""

    DIRECT_SUPPORT = "direct_support"
    INDIRECT_SUPPORT = "indirect_support"
    NO_EVIDENCE = "no_evidence"
    CONTRADICTED = "contradicted"


class EvidenceStatus(enum.StrEnum):
    """Whether the executor found evidence (spec §5.2)."""

    EVIDENCE_FOUND = "evidence_found"
    NO_EVIDENCE = "no_evidence"


class AnswerMode(enum.StrEnum):
    """How the composer must present the answer, from the effective verdict."""

    NORMAL = "NORMAL"
    LOW_CONFIDENCE = "LOW_CONFIDENCE"
    DEGRADED = "DEGRADED"


class Outcome(enum.StrEnum):
    """How a run ended (spec §3)."""

    ANSWERED = "ANSWERED"
    PRE_VERIFICATION_FALLBACK = "PRE_VERIFICATION_FALLBACK"
    POST_VERIFICATION_FALLBACK = "POST_VERIFICATION_FALLBACK"


class ReasonCode(enum.StrEnum):
    """Why a node failed or a run left for a fallback (spec §3)."""

    PLANNER_FAILED = "PLANNER_FAILED"
    EXECUTOR_FAILED = "EXECUTOR_FAILED"
    EXECUTOR_TOOL_BLOCKED = "EXECUTOR_TOOL_BLOCKED"
    EXECUTOR_INVALID_OUTPUT = "EXECUTOR_INVALID_OUTPUT"
    GATEKEEPER_REJECTED = "GATEKEEPER_REJECTED"
    GATEKEEPER_UNAVAILABLE = "GATEKEEPER_UNAVAILABLE"
    GATEKEEPER_INVALID_RESULT = "GATEKEEPER_INVALID_RESULT"
    NO_TRUSTED_EVIDENCE = "NO_TRUSTED_EVIDENCE"
    VERIFIER_FAILED = "VERIFIER_FAILED"
    COMPOSER_FAILED = "COMPOSER_FAILED"
