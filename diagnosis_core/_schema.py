"""JSON Schemas of the agent payloads (spec §5), generated from the payload types.

Agent prompts and other-language implementations want a machine-readable
contract. Writing it by hand a second time would let it drift from the types,
so the shape comes from introspecting the ``attrs`` classes (fields, type
hints, defaults), and only the rules a type cannot express (non-empty, at
least one item, a score range, the evidence-status condition) are layered on
from one table below. Rules JSON Schema cannot express at all (uniqueness of
ids, the skill catalog, the allowed claims, "``1.0`` is not an integer") are
written in ``$comment`` and enforced by :mod:`diagnosis_core._parsing`, which
remains the authority.

Conventions: ``required`` lists the fields without a default (plus
``schema_version``, which the spec requires although the type has a default);
an optional field also accepts ``null`` (spec §5: ``null`` means absent);
``additionalProperties`` is true, because unknown fields are ignored.
"""

from __future__ import annotations

import copy
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from ._json import JsonValue, is_json_value_type
from ._parsing import PayloadName
from ._payloads import (
    Claim,
    ComposerOutput,
    EvidenceBinding,
    ExecutorEvidence,
    FactCheck,
    PlannerPlan,
    PlanStep,
    ToolTraceEntry,
    VerifierOutput,
)

__all__ = ["NOT_ONLY_WHITESPACE_PATTERN", "SCHEMA_NAMES", "json_schema"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect of every generated schema."""

_PAYLOAD_TYPES: Mapping[PayloadName, type[Any]] = {
    PayloadName.PLANNER_PLAN: PlannerPlan,
    PayloadName.EXECUTOR_EVIDENCE_V2: ExecutorEvidence,
    PayloadName.VERIFIER_OUTPUT: VerifierOutput,
    PayloadName.COMPOSER_OUTPUT: ComposerOutput,
}

SCHEMA_NAMES: tuple[str, ...] = tuple(name.value for name in PayloadName)
"""The names :func:`json_schema` accepts, in workflow order."""

def _not_whitespace_class() -> str:
    """A regex character class of every code point that is not ``str.isspace``.

    Written as a negated class of explicit ``\\uXXXX`` ranges, computed from
    ``str.isspace`` itself, so that Python ``re`` and ECMA-262 engines (which
    disagree on ``\\S``: ``\\u001c``–``\\u001f``, ``\\u0085``, ``\\ufeff``)
    read it the same way and exactly as the parser's "whitespace" (spec §5).
    """
    ranges: list[tuple[int, int]] = []
    # The BMP suffices (no whitespace lies beyond it, which a test checks over
    # every code point) and keeps the import cheap.
    for code in range(0x10000):
        if chr(code).isspace():
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    parts = [
        f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}" for low, high in ranges
    ]
    return "[^" + "".join(parts) + "]"


NOT_ONLY_WHITESPACE_PATTERN = _not_whitespace_class()
"""The composer ``answer`` pattern: "holds a character that is not whitespace" (spec §5.4)."""

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

_SCALARS: Mapping[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _nullable(schema: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Also accept ``null``."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    values = schema.get("enum")
    if isinstance(values, list):
        return {**schema, "enum": [*values, None]}
    if "const" in schema:
        rest = {key: value for key, value in schema.items() if key != "const"}
        return {**rest, "enum": [schema["const"], None]}
    return {"anyOf": [schema, {"type": "null"}]}


def _merge(base: dict[str, JsonValue], extra: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    merged = dict(base)
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            merged[key] = _merge(current, value)
        else:
            merged[key] = value
    return merged


def _union_args(cl: object) -> tuple[Any, ...] | None:
    origin = typing.get_origin(cl)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(cl)
    return None


def _type_schema(cl: Any) -> dict[str, JsonValue]:
    """The schema of one Python type as the converter reads it."""
    if cl in _SCALARS:
        return {"type": _SCALARS[cl]}
    if is_json_value_type(cl) or cl in (Any, object):
        return {}
    if isinstance(cl, type) and issubclass(cl, enum.Enum):
        values: list[JsonValue] = [member.value for member in cl]
        if all(isinstance(value, str) for value in values):
            return {"type": "string", "enum": values}
        return {"enum": values}
    origin = typing.get_origin(cl)
    args = typing.get_args(cl)
    if origin is Literal:
        choices: list[JsonValue] = list(args)
        return {"const": choices[0]} if len(choices) == 1 else {"enum": choices}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0])}
        items: list[JsonValue] = [_type_schema(arg) for arg in args]
        return {
            "type": "array",
            "prefixItems": items,
            "items": False,
            "minItems": len(items),
        }
    if origin in (Mapping, dict):
        return {"type": "object", "additionalProperties": _type_schema(args[1])}
    members = _union_args(cl)
    if members is not None and type(None) in members:
        rest = [member for member in members if member is not type(None)]
        if len(rest) == 1:
            return _nullable(_type_schema(rest[0]))
    if attrs.has(cl):
        return class_schema(cl)
    raise TypeError(f"no JSON Schema for {cl!r}")


def class_schema(cl: type[Any]) -> dict[str, JsonValue]:
    """The schema of one ``attrs`` payload class (fields, defaults, the rules above)."""
    hints = typing.get_type_hints(cl)
    also_required = _ALSO_REQUIRED.get(cl, ())
    properties: dict[str, JsonValue] = {}
    required: list[JsonValue] = []
    for field in attrs.fields(cl):
        if not field.init:
            continue
        schema = _type_schema(hints[field.name])
        if field.default is attrs.NOTHING or field.name in also_required:
            required.append(field.name)
        elif _union_args(hints[field.name]) is None:
            schema = _nullable(schema)  # null for an optional field means absent
        properties[field.name] = _merge(schema, _FIELD_RULES.get((cl, field.name), {}))
    schema_: dict[str, JsonValue] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": True,
    }
    description = (cl.__doc__ or "").strip().split("\n", 1)[0]
    if description:
        schema_ = {"description": description, **schema_}
    return _merge(schema_, _CLASS_RULES.get(cl, {}))


def json_schema(name: str) -> dict[str, JsonValue]:
    """The JSON Schema (draft 2020-12) of one agent payload.

    ``name`` is one of :data:`SCHEMA_NAMES`. A fresh dict is returned on every
    call, so callers may change it freely.

    Raises:
        ValueError: for an unknown name; the message lists the valid ones.
    """
    return named_schema(name, PayloadName, _PAYLOAD_TYPES)


def named_schema(
    name: str,
    names: type[enum.StrEnum],
    types: Mapping[Any, type[Any]],
    extra: Mapping[str, JsonValue] | None = None,
) -> dict[str, JsonValue]:
    """The schema of payload ``name`` of a workflow (``names``: its payload names).

    Shared by both workflows' ``*json_schema`` functions; ``extra`` is merged at
    the top. A fresh dict on every call.

    Raises:
        ValueError: for an unknown name; the message lists the valid ones.
    """
    try:
        payload = names(name)
    except ValueError:
        valid = ", ".join(repr(known.value) for known in names)
        raise ValueError(f"unknown payload schema {name!r}; expected one of {valid}") from None
    body = class_schema(types[payload])
    return copy.deepcopy({"$schema": DRAFT, "title": payload.value, **body, **(extra or {})})
