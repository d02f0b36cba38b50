"""The binding projector of the ``verified_input`` node (spec §6.2).

This is the security boundary of the workflow: only an executor binding whose
exact key equals a gatekeeper-passed key survives, and only the fields listed
here reach the verifier. A claim with no trusted binding is dropped. Matching
is a hash join, so the cost is linear in claims + bindings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from .._kernel.records import attrs_repr
from .enums import BindingCheckStatus
from .payloads import CheckedBinding, ExecutorEvidence

__all__ = [
    "AllowedClaim",
    "VerifiedBinding",
    "VerifiedClaim",
    "VerifiedEvidence",
    "VerifiedInput",
    "count_trusted_bindings",
    "project_verified_input",
    "select_allowed_claims",
]

BindingKey = tuple[str, str, str, str]


@attrs.frozen
class VerifiedBinding:
    """A trusted binding as the verifier sees it: no excerpt."""

    __repr__ = attrs_repr

    source_invocation_id: str
    tool_name: str
    raw_path: str


@attrs.frozen
class VerifiedClaim:
    """A claim with at least one trusted binding, and only those bindings."""

    __repr__ = attrs_repr

    claim_id: str
    text: str
    is_critical: bool
    bindings: tuple[VerifiedBinding, ...]


@attrs.frozen
class VerifiedEvidence:
    """One trusted binding with the *gatekeeper's* matched text."""

    __repr__ = attrs_repr

    claim_id: str
    source_invocation_id: str
    tool_name: str
    raw_path: str
    matched_text: str


@attrs.frozen
class VerifiedInput:
    """Output of the projector: the only executor material the verifier may see."""

    __repr__ = attrs_repr

    verified_executor_output: tuple[VerifiedClaim, ...] = ()
    verified_evidence: tuple[VerifiedEvidence, ...] = ()

    @property
    def claim_ids(self) -> tuple[str, ...]:
        """Ids of the verified claims, in order."""
        return tuple(claim.claim_id for claim in self.verified_executor_output)


@attrs.frozen
class AllowedClaim:
    """A claim the composer may express: its id and its *verified* text."""

    __repr__ = attrs_repr

    claim_id: str
    text: str


def _passed_matches(checked: Iterable[CheckedBinding]) -> dict[BindingKey, str]:
    """Map each gatekeeper-passed key to its matched text (first one wins)."""
    passed: dict[BindingKey, str] = {}
    passing = BindingCheckStatus.PASS  # what CheckedBinding.passed tests, looked up once
    for entry in checked:
        matched = entry.matched_text
        if entry.status is passing and matched is not None:
            key = (entry.claim_id, entry.source_invocation_id, entry.tool_name, entry.raw_path)
            passed.setdefault(key, matched)
    return passed


def project_verified_input(
    executor_output: ExecutorEvidence, checked_bindings: Iterable[CheckedBinding]
) -> VerifiedInput:
    """Keep only trusted bindings and the claims that have one (spec §6.2).

    Guarantees: exact 4-tuple string equality (no trimming or case folding);
    executor claim order, then binding order; duplicates removed;
    ``matched_text`` comes from the gatekeeper, never from the executor excerpt.
    """
    passed = _passed_matches(checked_bindings)
    claims: list[VerifiedClaim] = []
    evidence: list[VerifiedEvidence] = []
    seen_claims: set[str] = set()
    for claim in executor_output.claims:
        claim_id = claim.claim_id
        if claim_id in seen_claims:
            continue
        # Duplicate keys can only come from this claim: every key starts with the
        # claim id, and a claim id whose claim kept a binding is skipped above.
        # So a small per-claim set removes them, not one set over the whole run.
        taken: set[BindingKey] = set()
        bindings: list[VerifiedBinding] = []
        for binding in claim.bindings:
            key = (claim_id, binding.source_invocation_id, binding.tool_name, binding.raw_path)
            matched = passed.get(key)
            if matched is None or key in taken:
                continue
            taken.add(key)
            bindings.append(
                VerifiedBinding(binding.source_invocation_id, binding.tool_name, binding.raw_path)
            )
            evidence.append(VerifiedEvidence(*key, matched_text=matched))
        if bindings:
            seen_claims.add(claim_id)
            claims.append(VerifiedClaim(claim_id, claim.text, claim.is_critical, tuple(bindings)))
    return VerifiedInput(tuple(claims), tuple(evidence))


def count_trusted_bindings(
    executor_output: ExecutorEvidence, checked_bindings: Iterable[CheckedBinding]
) -> int:
    """How many executor bindings the projector would keep; the router's guard (§7)."""
    return len(project_verified_input(executor_output, checked_bindings).verified_evidence)


def select_allowed_claims(
    verified: VerifiedInput, allowed_claim_ids: Sequence[str]
) -> tuple[AllowedClaim, ...]:
    """The composer's claims: verifier-allowed ids ∩ verified ids, in verified order.

    The text is the *verified executor* text; nothing the verifier wrote about a
    claim is used.
    """
    allowed = set(allowed_claim_ids)
    return tuple(
        AllowedClaim(claim.claim_id, claim.text)
        for claim in verified.verified_executor_output
        if claim.claim_id in allowed
    )
