"""A pydantic v2 model of ``executor_evidence_v2``: the peer of the parse benchmark.

It is used only by the benchmarks and is meant to be a *fair* peer: it
validates what pydantic can express of spec §5.2, in strict mode, so both
sides do comparable work on the same text.

Expressed here (as in :func:`diagnosis_core.protocol.parse_executor_evidence`):

* strict types everywhere (``strict=True``: no ``"1"`` → 1, no 1 → ``True``,
  a string is only a string), extra keys ignored, frozen models, arrays
  validated into tuples;
* ``schema_version`` is the literal ``executor_evidence_v2``;
  ``evidence_status`` one of two literals;
* non-empty ``claim_id``, ``text``, the four binding strings, ``tool_name``,
  and ``invocation_id`` when given (``min_length=1``), ≥ 1 binding per claim;
* a model validator: claim ids unique, ``claims`` non-empty exactly when
  ``evidence_found``, no two bindings of a claim with the same
  ``(source_invocation_id, tool_name, raw_path)``.

Not expressible without leaving pydantic (so the core does strictly more):
rejecting duplicate object keys (the JSON parser keeps the last value),
``null`` meaning "absent" for defaulted fields, the one-Markdown-fence
envelope, and error paths in the core's ``claims[3].bindings[0].raw_path``
form. Lone surrogates and ``NaN`` are rejected by pydantic's own JSON parser.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["PeerExecutorEvidence"]

NonEmpty = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class PeerBinding(_Strict):
    source_invocation_id: NonEmpty
    tool_name: NonEmpty
    raw_path: NonEmpty
    evidence_excerpt: NonEmpty


class PeerClaim(_Strict):
    claim_id: NonEmpty
    text: NonEmpty
    bindings: Annotated[tuple[PeerBinding, ...], Field(min_length=1)]
    is_critical: bool = False


class PeerHypothesis(_Strict):
    text: str
    missing_evidence: str | None = None


class PeerToolTraceEntry(_Strict):
    tool_name: NonEmpty
    success: bool
    invocation_id: NonEmpty | None = None


class PeerExecutorEvidence(_Strict):
    schema_version: Literal["executor_evidence_v2"]
    evidence_status: Literal["evidence_found", "no_evidence"]
    claims: tuple[PeerClaim, ...]
    hypotheses: tuple[PeerHypothesis, ...] = ()
    tool_trace_summary: tuple[PeerToolTraceEntry, ...] = ()

    @model_validator(mode="after")
    def _cross_field_rules(self) -> PeerExecutorEvidence:
        if (self.evidence_status == "evidence_found") != bool(self.claims):
            raise ValueError("claims must be non-empty exactly when evidence_found")
        seen: set[str] = set()
        for claim in self.claims:
            if claim.claim_id in seen:
                raise ValueError(f"duplicate claim_id {claim.claim_id!r}")
            seen.add(claim.claim_id)
            keys = {(b.source_invocation_id, b.tool_name, b.raw_path) for b in claim.bindings}
            if len(keys) != len(claim.bindings):
                raise ValueError(f"duplicate binding in claim {claim.claim_id!r}")
        return self
