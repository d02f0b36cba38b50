"""One parser per agent payload (spec §5.1–§5.4).

Each parser takes the model's message text and returns a frozen payload value
that satisfies every rule of its section, or raises :class:`PayloadError`
naming the offending path. Nothing else escapes, whatever the text: 10 MB,
deep nesting, lone surrogates and the like all end as a ``PayloadError``
(the node then records ``INVALID_OUTPUT``). Unknown extra fields are ignored
and, since the result is an ``attrs`` value with fixed fields, never kept.

The three layers are always applied in this order, so the reported problem is
the first one of the first layer that fails: the document (:mod:`._json`),
the shapes and types (:mod:`._converter`), then the rules below that a type
cannot express (non-empty, unique, in range, in a catalog).
"""

from __future__ import annotations

import enum
from collections.abc import Collection

from .._kernel.errors import PayloadError
from .._kernel.machine.plan import check_plan_steps, duplicate_error
from .._kernel.wire.converter import from_json_object_text, from_wire
from .._kernel.wire.json import describe_value, extract_json_text, parse_json_object
from .enums import EvidenceStatus
from .payloads import (
    EXECUTOR_SCHEMA_VERSION,
    ComposerOutput,
    EvidenceBinding,
    ExecutorEvidence,
    PlannerPlan,
    VerifierOutput,
)

__all__ = [
    "PayloadName",
    "parse_composer_output",
    "parse_executor_evidence",
    "parse_planner_plan",
    "parse_verifier_output",
]

_EMPTY = "must not be empty"


class PayloadName(enum.StrEnum):
    """The wire name of each agent payload (spec §5), as used for schemas."""

    PLANNER_PLAN = "planner_plan"
    EXECUTOR_EVIDENCE_V2 = "executor_evidence_v2"
    VERIFIER_OUTPUT = "verifier_output"
    COMPOSER_OUTPUT = "composer_output"


# --- §5.1 planner_plan --------------------------------------------------------------


def parse_planner_plan(text: str, skill_names: Collection[str]) -> PlannerPlan:
    """Parse the planner's plan (spec §5.1).

    Guarantees: at least one step; every ``step_id`` non-empty and unique;
    every ``goal`` non-empty; ``tools`` an array of strings (default empty);
    ``selected_skill`` absent/null or the name of a skill in ``skill_names``.
    """
    plan = from_wire(PlannerPlan, parse_json_object(text))
    check_plan_steps(plan.steps, blank_goals=True)
    skill = plan.selected_skill
    if skill is not None and skill not in skill_names:
        raise PayloadError(
            "selected_skill", f"{describe_value(skill)} is not in the skill catalog"
        )
    return plan


# --- §5.2 executor_evidence_v2 --------------------------------------------------------

_BINDING_FIELDS = ("source_invocation_id", "tool_name", "raw_path", "evidence_excerpt")


def _empty_binding_field(path: str, binding: EvidenceBinding) -> PayloadError:
    empty = next(name for name in _BINDING_FIELDS if not getattr(binding, name))
    return PayloadError(f"{path}.{empty}", _EMPTY)


def _check_bindings(claim_index: int, bindings: tuple[EvidenceBinding, ...]) -> None:
    """At least one binding; four non-empty strings each; no duplicate key in one claim."""
    if not bindings:
        raise PayloadError(f"claims[{claim_index}].bindings", _EMPTY)
    keys: set[tuple[str, str, str]] = set()
    for position, binding in enumerate(bindings):
        key = (binding.source_invocation_id, binding.tool_name, binding.raw_path)
        if not (key[0] and key[1] and key[2] and binding.evidence_excerpt):
            raise _empty_binding_field(f"claims[{claim_index}].bindings[{position}]", binding)
        if key in keys:
            shown = ", ".join(describe_value(part) for part in key)
            raise PayloadError(
                f"claims[{claim_index}].bindings[{position}]",
                f"duplicate binding ({shown}) in this claim",
            )
        keys.add(key)


def parse_executor_evidence(text: str) -> ExecutorEvidence:
    """Parse the executor's ``executor_evidence_v2`` snapshot (spec §5.2).

    Guarantees, beyond the types: ``schema_version`` present and equal to
    ``executor_evidence_v2``; ``claims`` non-empty exactly when
    ``evidence_status`` is ``evidence_found``; claim ids non-empty and unique;
    claim text non-empty; every claim has at least one binding, each with four
    non-empty strings, and no two bindings of one claim share
    ``(source_invocation_id, tool_name, raw_path)``; in ``tool_trace_summary``
    an ``invocation_id`` is absent/null or non-empty and ``tool_name`` is
    non-empty (fail closed: an empty name would only show up, unnamed, in a
    fallback's tool overview). Hypothesis texts may be any string: they never
    leave the trace.
    """
    # One pass from text to values for the common case (large snapshots are
    # the hot path); anything it does not accept takes the layered path below,
    # which reports the first problem exactly.
    evidence = from_json_object_text(
        ExecutorEvidence, extract_json_text(text), required_keys=("schema_version",)
    )
    if evidence is None:
        data = parse_json_object(text)
        if "schema_version" not in data:
            raise PayloadError("schema_version", "missing")
        if data["schema_version"] is None:
            raise PayloadError(
                "schema_version", f"expected {EXECUTOR_SCHEMA_VERSION!r}, got null"
            )
        evidence = from_wire(ExecutorEvidence, data)
    claims = evidence.claims
    if evidence.evidence_status is EvidenceStatus.EVIDENCE_FOUND and not claims:
        raise PayloadError("claims", "must not be empty when evidence_status is 'evidence_found'")
    if evidence.evidence_status is EvidenceStatus.NO_EVIDENCE and claims:
        raise PayloadError("claims", "must be empty when evidence_status is 'no_evidence'")
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        claim_id = claim.claim_id
        if not claim_id:
            raise PayloadError(f"claims[{index}].claim_id", _EMPTY)
        if claim_id in seen:
            raise duplicate_error(f"claims[{index}].claim_id", claim_id)
        seen.add(claim_id)
        if not claim.text:
            raise PayloadError(f"claims[{index}].text", _EMPTY)
        bindings = claim.bindings
        # One and two bindings are the common cases, checked inline; anything
        # doubtful goes to _check_bindings, which names the first problem.
        if len(bindings) == 1:
            only = bindings[0]
            if not (
                only.source_invocation_id and only.tool_name and only.raw_path
                and only.evidence_excerpt
            ):
                raise _empty_binding_field(f"claims[{index}].bindings[0]", only)
        elif len(bindings) == 2:
            first, second = bindings
            if not (
                first.source_invocation_id and first.tool_name and first.raw_path
                and first.evidence_excerpt and second.source_invocation_id
                and second.tool_name and second.raw_path and second.evidence_excerpt
            ) or (
                first.source_invocation_id == second.source_invocation_id
                and first.tool_name == second.tool_name
                and first.raw_path == second.raw_path
            ):
                _check_bindings(index, bindings)
        else:
            _check_bindings(index, bindings)
    for index, entry in enumerate(evidence.tool_trace_summary):
        if entry.invocation_id == "":
            raise PayloadError(f"tool_trace_summary[{index}].invocation_id", _EMPTY)
        if not entry.tool_name:
            raise PayloadError(f"tool_trace_summary[{index}].tool_name", _EMPTY)
    return evidence


# --- §5.3 verifier_output -------------------------------------------------------------


def parse_verifier_output(text: str) -> VerifierOutput:
    """Parse the verifier's output (spec §5.3).

    Guarantees, beyond the types: ``groundedness_score`` in [0, 1]; every
    ``facts_checked[].claim_id`` and ``allowed_claim_ids[]`` non-empty;
    ``critical_fact_count`` absent/null or ≥ 0. Ids unknown to the verified
    input are *not* rejected here: the workflow drops and records them.
    """
    output = from_wire(VerifierOutput, parse_json_object(text))
    score = output.groundedness_score
    if not 0.0 <= score <= 1.0:
        raise PayloadError("groundedness_score", f"{describe_value(score)} is outside [0, 1]")
    for index, fact in enumerate(output.facts_checked):
        if not fact.claim_id:
            raise PayloadError(f"facts_checked[{index}].claim_id", _EMPTY)
    for index, claim_id in enumerate(output.allowed_claim_ids):
        if not claim_id:
            raise PayloadError(f"allowed_claim_ids[{index}]", _EMPTY)
    count = output.critical_fact_count
    if count is not None and count < 0:
        raise PayloadError("critical_fact_count", f"{count} is negative")
    return output


# --- §5.4 composer_output ---------------------------------------------------------------


def parse_composer_output(text: str, allowed_claim_ids: Collection[str]) -> ComposerOutput:
    """Parse the composer's answer (spec §5.4).

    Guarantees: ``answer`` has a non-whitespace character (it is kept
    verbatim, not stripped); every cited id is non-empty and one of
    ``allowed_claim_ids``.
    """
    output = from_wire(ComposerOutput, parse_json_object(text))
    if not output.answer.strip():
        raise PayloadError("answer", "must not be blank")
    allowed = allowed_claim_ids if isinstance(allowed_claim_ids, set | frozenset) else (
        frozenset(allowed_claim_ids)
    )
    for index, claim_id in enumerate(output.cited_claim_ids):
        if not claim_id:
            raise PayloadError(f"cited_claim_ids[{index}]", _EMPTY)
        if claim_id not in allowed:
            raise PayloadError(
                f"cited_claim_ids[{index}]", f"{describe_value(claim_id)} is not an allowed claim"
            )
    return output
