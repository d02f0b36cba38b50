"""JSON Schemas of the chat agent payloads (spec §5, §5.5): the chat rule tables.

The shape comes from the payload types; the rules a type cannot express
(non-empty, at least one item, a score range, the evidence-status condition)
come from the tables below, and the kernel's generator
(``_kernel/wire/schema.py``, whose docstring describes the conventions and the
profiles) writes both. Rules JSON Schema cannot express at all are written in
``$comment`` and enforced by :mod:`diagnosis_core._chat.parsing`, which
remains the authority.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._kernel.machine.plan import PlanStep
from .._kernel.wire.json import JsonValue
from .._kernel.wire.schema import (
    NOT_ONLY_WHITESPACE_PATTERN,
    SchemaProfile,
    SchemaRules,
    class_json_schema_of,
    named_schema,
    profile_of,
)
from .parsing import PayloadName
from .payloads import (
    Claim,
    ComposerOutput,
    EvidenceBinding,
    ExecutorEvidence,
    FactCheck,
    PlannerPlan,
    ToolTraceEntry,
    VerifierOutput,
)

__all__ = [
    "SCHEMA_NAMES",
    "class_json_schema",
    "json_schema",
]

_PAYLOAD_TYPES: Mapping[PayloadName, type[Any]] = {
    PayloadName.PLANNER_PLAN: PlannerPlan,
    PayloadName.EXECUTOR_EVIDENCE_V2: ExecutorEvidence,
    PayloadName.VERIFIER_OUTPUT: VerifierOutput,
    PayloadName.COMPOSER_OUTPUT: ComposerOutput,
}

SCHEMA_NAMES: tuple[str, ...] = tuple(name.value for name in PayloadName)
"""The names :func:`json_schema` accepts, in workflow order."""

_NON_EMPTY: dict[str, JsonValue] = {"minLength": 1}
_NON_EMPTY_ITEMS: dict[str, JsonValue] = {"items": {"minLength": 1}}
_AT_LEAST_ONE: dict[str, JsonValue] = {"minItems": 1}

# The spec's rules beyond the types, per (class, field): merged into the
# field's generated schema.
_FIELD_RULES: Mapping[tuple[type[Any], str], dict[str, JsonValue]] = {
    (PlannerPlan, "steps"): _AT_LEAST_ONE,
    (PlanStep, "step_id"): _NON_EMPTY,
    (PlanStep, "goal"): _NON_EMPTY,
    (Claim, "claim_id"): _NON_EMPTY,
    (Claim, "text"): _NON_EMPTY,
    (Claim, "bindings"): _AT_LEAST_ONE,
    (EvidenceBinding, "source_invocation_id"): _NON_EMPTY,
    (EvidenceBinding, "tool_name"): _NON_EMPTY,
    (EvidenceBinding, "raw_path"): _NON_EMPTY,
    (EvidenceBinding, "evidence_excerpt"): _NON_EMPTY,
    (ToolTraceEntry, "invocation_id"): _NON_EMPTY,
    (ToolTraceEntry, "tool_name"): _NON_EMPTY,
    (VerifierOutput, "groundedness_score"): {"minimum": 0, "maximum": 1},
    (VerifierOutput, "allowed_claim_ids"): _NON_EMPTY_ITEMS,
    (VerifierOutput, "critical_fact_count"): {"minimum": 0},
    (FactCheck, "claim_id"): _NON_EMPTY,
    (ComposerOutput, "answer"): {"minLength": 1, "pattern": NOT_ONLY_WHITESPACE_PATTERN},
    (ComposerOutput, "cited_claim_ids"): _NON_EMPTY_ITEMS,
}

# Fields the wire requires although the Python type gives them a default.
_ALSO_REQUIRED: Mapping[type[Any], tuple[str, ...]] = {ExecutorEvidence: ("schema_version",)}

# Rules between fields, and rules no schema keyword expresses.
_CLASS_RULES: Mapping[type[Any], dict[str, JsonValue]] = {
    PlannerPlan: {
        "$comment": "step_id values are unique; selected_skill, when present, is the name "
        "of a skill in the catalog given to the planner."
    },
    ExecutorEvidence: {
        "allOf": [
            {
                "if": {"properties": {"evidence_status": {"const": "evidence_found"}}},
                "then": {"properties": {"claims": {"minItems": 1}}},
            },
            {
                "if": {"properties": {"evidence_status": {"const": "no_evidence"}}},
                "then": {"properties": {"claims": {"maxItems": 0}}},
            },
        ],
        "$comment": "claim_id values are unique; within one claim no two bindings share "
        "(source_invocation_id, tool_name, raw_path).",
    },
    VerifierOutput: {
        "$comment": "Integers are JSON integers: 1.0 is not accepted where an integer is "
        "expected. Ids unknown to the verified input are dropped by the workflow."
    },
    ComposerOutput: {
        "$comment": "Every cited_claim_ids item is one of the claims given to the composer; "
        "answer has a character that is not whitespace in Python's sense."
    },
}


def json_schema(name: str, profile: str = "validation") -> dict[str, JsonValue]:
    """The JSON Schema of one agent payload, in one profile (spec §5, §5.5).

    ``name`` is one of :data:`SCHEMA_NAMES`, ``profile`` one of
    :data:`SCHEMA_PROFILES`: ``validation`` (the default: draft 2020-12, open
    objects, what the parser accepts), ``openai-strict``,
    ``anthropic-strict`` or ``gemini`` (each provider's rules are in
    :mod:`diagnosis_core._kernel.wire.schema`). A fresh dict is returned on every call, so callers
    may change it freely.

    Raises:
        ValueError: for an unknown name or profile; the message lists the valid ones.
    """
    return named_schema(name, PayloadName, _PAYLOAD_TYPES, _CHAT_RULES, profile=profile)


# --- provider profiles (spec §5.5) ------------------------------------------------------------


# The wire order of spec §5 (the examples' key order), where it differs from the
# attrs field order. Providers generate properties in schema order.
_WIRE_ORDER: Mapping[type[Any], tuple[str, ...]] = {
    ExecutorEvidence: (
        "schema_version", "evidence_status", "claims", "hypotheses", "tool_trace_summary",
    ),
    Claim: ("claim_id", "text", "is_critical", "bindings"),
    ToolTraceEntry: ("invocation_id", "tool_name", "success"),
    VerifierOutput: (
        "verdict", "groundedness_score", "critical_fact_count", "facts_checked",
        "allowed_claim_ids", "missing_info", "recommended_actions", "rationale",
    ),
}

# Rules between fields that the validation profile writes as ``allOf``: their words.
_CROSS_FIELD_TEXT: Mapping[type[Any], str] = {
    ExecutorEvidence: "claims has at least one item when evidence_status is evidence_found, "
    "and no item when it is no_evidence.",
}


def class_json_schema(
    cl: type[Any],
    profile: SchemaProfile | str = SchemaProfile.VALIDATION,
    *,
    title: str | None = None,
) -> dict[str, JsonValue]:
    """The schema of any payload ``attrs`` class in one profile (spec §5.5).

    The generic form of :func:`json_schema`: the shape comes from the class's
    fields and type hints, the rules from this module's rule table. The
    ``validation`` profile carries ``$schema`` and ``title`` (when given).
    A fresh dict is returned on every call.

    Raises:
        ValueError: for an unknown profile.
        TypeError: for a type the profile cannot express (for example an
            arbitrary JSON value in a closed-object profile).
    """
    return class_json_schema_of(cl, profile_of(profile), title, _CHAT_RULES)


_CHAT_RULES = SchemaRules(
    fields=_FIELD_RULES,
    also_required=_ALSO_REQUIRED,
    class_rules=_CLASS_RULES,
    wire_order=_WIRE_ORDER,
    cross_field_text=_CROSS_FIELD_TEXT,
)
