"""JSON Schemas of the AIOps agent payloads, generated from the payload types.

The same generator as the chat payloads' (:func:`diagnosis_core.protocol.json_schema`),
with the same profiles (spec §5.5: ``validation``, ``openai-strict``,
``anthropic-strict``, ``gemini``; the provider rules are cited in
:mod:`diagnosis_core._kernel.wire.schema`): shapes come from the ``attrs`` classes, so the
schema cannot drift from the types, and the table below adds the rules of the
AIOps parsers that a keyword expresses (non-empty ids, non-blank texts, an
evidence item cites at least one invocation). The parsers
(:mod:`diagnosis_core._aiops.parsing`) stay the authority for the rules a
schema cannot express (unique ids, citations of reported tool invocations,
the alert reference given in full or not at all); those are written into the
object's ``description`` in the provider profiles (``$comment`` in
``validation``). Every AIOps payload field is a string, a boolean-free enum, an
array or a nested payload object, so every profile expresses every shape.
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
    named_schema,
)
from .parsing import AiOpsPayloadName
from .payloads import (
    AiOpsEvidence,
    AiOpsExecutorFinding,
    AiOpsExecutorOutput,
    AiOpsFinding,
    AiOpsPlan,
    AiOpsRecommendedAction,
    AiOpsReport,
    SupervisorDecision,
)

__all__ = ["AIOPS_SCHEMA_NAMES", "aiops_json_schema"]

_PAYLOAD_TYPES: Mapping[AiOpsPayloadName, type[Any]] = {
    AiOpsPayloadName.SUPERVISOR_DECISION: SupervisorDecision,
    AiOpsPayloadName.AIOPS_PLAN: AiOpsPlan,
    AiOpsPayloadName.AIOPS_EXECUTOR_OUTPUT: AiOpsExecutorOutput,
    AiOpsPayloadName.AIOPS_REPORT: AiOpsReport,
}

AIOPS_SCHEMA_NAMES: tuple[str, ...] = tuple(name.value for name in AiOpsPayloadName)
"""The names :func:`aiops_json_schema` accepts, in workflow order."""

_AUTHORITY: dict[str, JsonValue] = {
    "$comment": "The AIOps parsers also enforce unique ids, non-blank texts, citations "
    "of reported tool invocations only, and an alert reference given in full or not at all."
}


_NON_EMPTY: dict[str, JsonValue] = {"minLength": 1}
_NON_BLANK: dict[str, JsonValue] = {"minLength": 1, "pattern": NOT_ONLY_WHITESPACE_PATTERN}
_NON_EMPTY_ITEMS: dict[str, JsonValue] = {"items": {"minLength": 1}}

# The parsers' rules that a keyword expresses, per (class, field) (spec §11).
_FIELD_RULES: Mapping[tuple[type[Any], str], Mapping[str, JsonValue]] = {
    (AiOpsPlan, "steps"): {"minItems": 1},
    (PlanStep, "step_id"): _NON_EMPTY,
    (PlanStep, "goal"): _NON_BLANK,  # stricter than the chat plan's "non-empty"
    (AiOpsExecutorOutput, "tool_invocation_ids"): _NON_EMPTY_ITEMS,
    (AiOpsExecutorFinding, "text"): _NON_BLANK,
    (AiOpsExecutorFinding, "alert_name"): _NON_EMPTY,
    (AiOpsExecutorFinding, "service"): _NON_EMPTY,
    (AiOpsExecutorFinding, "cited_invocation_ids"): _NON_EMPTY_ITEMS,
    (AiOpsFinding, "alert_name"): _NON_EMPTY,
    (AiOpsFinding, "service"): _NON_EMPTY,
    (AiOpsFinding, "text"): _NON_BLANK,
    (AiOpsFinding, "cited_invocation_ids"): _NON_EMPTY_ITEMS,
    (AiOpsEvidence, "text"): _NON_BLANK,
    (AiOpsEvidence, "cited_invocation_ids"): {"minItems": 1, "items": {"minLength": 1}},
    (AiOpsRecommendedAction, "text"): _NON_BLANK,
    (AiOpsRecommendedAction, "alert_name"): _NON_EMPTY,
    (AiOpsRecommendedAction, "service"): _NON_EMPTY,
}

_BOTH_OR_NEITHER = "alert_name and service are given together or not at all."

# The parsers' rules between fields or beyond the payload, in words.
_CLASS_NOTES: Mapping[type[Any], str] = {
    AiOpsPlan: "step_id values are unique.",
    AiOpsExecutorOutput: "tool_invocation_ids values are unique; every cited_invocation_ids "
    "item is one of tool_invocation_ids or an id reported by an earlier executor step.",
    AiOpsExecutorFinding: _BOTH_OR_NEITHER,
    AiOpsRecommendedAction: _BOTH_OR_NEITHER,
}


def aiops_json_schema(
    name: str, profile: SchemaProfile | str = "validation"
) -> dict[str, JsonValue]:
    """The JSON Schema of one AIOps agent payload, in one profile (spec §5.5, §11).

    ``name`` is one of :data:`AIOPS_SCHEMA_NAMES`, ``profile`` one of the
    profiles of :func:`diagnosis_core.protocol.json_schema` (``validation``, the
    default, is draft 2020-12 with open objects; ``openai-strict``,
    ``anthropic-strict`` and ``gemini`` follow each provider's documented
    subset). A fresh dict is returned on every call, so callers may change
    it freely.

    Raises:
        ValueError: for an unknown name or profile; the message lists the valid ones.
    """
    return named_schema(name, AiOpsPayloadName, _PAYLOAD_TYPES, _RULES, _AUTHORITY, profile=profile)


_RULES = SchemaRules(fields=_FIELD_RULES, notes=_CLASS_NOTES)
