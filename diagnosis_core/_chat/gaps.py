"""Evidence gaps (spec §6.4) and the evidence-retry context (spec §6.5).

One extractor serves both the router's guard and the ``evidence_retry`` node,
so the decision to retry and the payload of the retry cannot drift apart.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from .._kernel.records import share_repr
from .enums import Verification
from .payloads import FactCheck
from .projection import VerifiedClaim, VerifiedEvidence, VerifiedInput

__all__ = [
    "EvidenceGap",
    "QueryRef",
    "RetryConstraint",
    "RetryContext",
    "build_retry_context",
    "extract_evidence_gaps",
]

_GAP_VERIFICATIONS = frozenset({Verification.NO_EVIDENCE, Verification.INDIRECT_SUPPORT})


class RetryConstraint(enum.StrEnum):
    """The fixed constraints every evidence retry carries, in this order."""

    AT_MOST_ONCE = "AT_MOST_ONCE"
    NO_REPEAT_SUCCESSFUL_QUERIES = "NO_REPEAT_SUCCESSFUL_QUERIES"
    INCREMENTAL_QUERIES_ONLY = "INCREMENTAL_QUERIES_ONLY"
    PRESERVE_PRIOR_VERIFIED_CLAIMS = "PRESERVE_PRIOR_VERIFIED_CLAIMS"
    RETURN_FULL_EXECUTOR_EVIDENCE_V2_SNAPSHOT = "RETURN_FULL_EXECUTOR_EVIDENCE_V2_SNAPSHOT"


@attrs.frozen(repr=False)
class EvidenceGap:
    """A critical fact the verifier could not support directly."""

    claim_id: str
    fact: str
    verification: Verification


@attrs.frozen(repr=False)
class QueryRef:
    """A tool query that already produced verified evidence; not to be repeated."""

    tool_name: str
    source_invocation_id: str


@attrs.frozen(repr=False)
class RetryContext:
    """What the round-2 executor (and the round-2 verifier) are told (spec §6.5)."""

    prior_verified_executor_output: tuple[VerifiedClaim, ...]
    prior_verified_evidence: tuple[VerifiedEvidence, ...]
    gaps: tuple[EvidenceGap, ...]
    completed_query_refs: tuple[QueryRef, ...]
    constraints: tuple[RetryConstraint, ...] = tuple(RetryConstraint)


def extract_evidence_gaps(facts_checked: Iterable[FactCheck]) -> tuple[EvidenceGap, ...]:
    """Critical facts with ``no_evidence`` or ``indirect_support`` (spec §6.4).

    Guarantees: ``facts_checked`` order; exact duplicates removed; a
    non-critical fact, or one with ``direct_support``/``contradicted``, is
    never a gap.
    """
    gaps = (
        EvidenceGap(fact.claim_id, fact.fact, fact.verification)
        for fact in facts_checked
        if fact.is_critical and fact.verification in _GAP_VERIFICATIONS
    )
    return tuple(dict.fromkeys(gaps))


def build_retry_context(verified: VerifiedInput, gaps: Iterable[EvidenceGap]) -> RetryContext:
    """Build the evidence-retry context from state only (spec §6.5).

    ``completed_query_refs`` are the unique ``(tool_name,
    source_invocation_id)`` pairs of the prior verified evidence, sorted by
    tool name, then id; the constraints are the fixed list.
    """
    refs = sorted(
        {(item.tool_name, item.source_invocation_id) for item in verified.verified_evidence}
    )
    return RetryContext(
        prior_verified_executor_output=verified.verified_executor_output,
        prior_verified_evidence=verified.verified_evidence,
        gaps=tuple(dict.fromkeys(gaps)),
        completed_query_refs=tuple(QueryRef(tool, inv) for tool, inv in refs),
    )


share_repr(EvidenceGap, QueryRef, RetryContext)
