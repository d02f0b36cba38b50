"""JSON Schemas of agent payloads (spec §5, §5.5), generated from the payload types.

Agent prompts and other-language implementations want a machine-readable
contract. Writing it by hand a second time would let it drift from the types,
so the shape comes from introspecting the ``attrs`` classes (fields, type
hints, defaults), and only the rules a type cannot express (non-empty, at
least one item, a score range, the evidence-status condition) are layered on
from a workflow's rule tables (:class:`SchemaRules`). Rules JSON Schema
cannot express at all (uniqueness of ids, the skill catalog, the allowed
claims, "``1.0`` is not an integer") are written in ``$comment`` and enforced
by the workflow's parsers, which remain the authority. This module is the
workflow-free generator; each workflow's ``schema`` module holds its tables.

Conventions: ``required`` lists the fields without a default (plus
``schema_version``, which the spec requires although the type has a default);
an optional field also accepts ``null`` (spec §5: ``null`` means absent);
``additionalProperties`` is true, because unknown fields are ignored.

Profiles (spec §5.5). The *validation* profile above is the default;
``profile=`` gives a schema for a provider's constrained decoding, generated
from the same types and the same rule tables (for both workflows alike). Each
profile follows the provider's documented subset; a rule a profile cannot
express is written into that property's ``description`` in a fixed phrase
("Must have at least 1 character.", "Minimum: 0.", "Maximum: 1.", "Must
have at least 1 item.", "Must match the regular expression `…`."), and
rules between fields go into the object's ``description``. Properties are
listed in the wire order of spec §5 (providers generate in schema order).
No profile carries ``$schema``, ``$comment`` or ``title``.

* ``openai-strict`` — OpenAI Structured Outputs with ``strict: true``
  (OpenAI's "supported schemas"):
  the root is an object, never ``anyOf``; every object has
  ``additionalProperties: false`` and lists every property in ``required``,
  an optional field being a union with ``null`` (``"type": [T, "null"]``,
  ``anyOf`` for objects); ``allOf``, ``not``, ``if``/``then``/``else``,
  ``dependentRequired``, ``dependentSchemas`` are not supported; strings
  support ``pattern`` and ``format`` (not ``minLength``: a non-empty string
  is ``"pattern": "[\\s\\S]"``), numbers ``minimum``/``maximum``, arrays
  ``minItems``/``maxItems``; at most 5000 object properties, 10 levels of
  nesting, 1000 enum values and 120 000 characters of names and enum values.
* ``anthropic-strict`` — Claude structured outputs and strict tool use
  (Anthropic's "JSON Schema limitations"):
  ``additionalProperties: false`` on every object; numeric bounds
  (``minimum``, ``maximum``, ``multipleOf``), string length bounds
  (``minLength``, ``maxLength``) and array bounds other than ``minItems``
  0 or 1 are not supported; no recursive schemas, no external ``$ref``;
  ``anyOf``, ``enum``, ``const`` and simple ``pattern`` regular expressions
  are. Optional fields stay out of ``required`` and are ``anyOf`` with
  ``null``.
* ``gemini`` — Gemini ``responseSchema``, "a select subset of an OpenAPI 3.0
  schema object" (Gemini's structured output guide and its ``Schema``
  reference): the fields ``type`` (one value
  of the ``Type`` enum: ``STRING``, ``NUMBER``, ``INTEGER``, ``BOOLEAN``,
  ``ARRAY``, ``OBJECT``), ``format``, ``description``, ``nullable``,
  ``enum`` (strings), ``minItems``, ``maxItems``, ``properties``,
  ``required``, ``propertyOrdering`` and ``items`` — no
  ``additionalProperties``, no ``$schema``/``$comment``, no composition
  keywords; an optional field is ``nullable: true`` and left out of
  ``required``; ``propertyOrdering`` lists the properties in wire order.
"""


from __future__ import annotations

import copy
import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from ..enums import member_of
from .codegen import homogeneous_item_type, strip_none
from .json import JsonValue, is_json_value_type

__all__ = [
    "DRAFT",
    "NOT_ONLY_WHITESPACE_PATTERN",
    "SCHEMA_PROFILES",
    "SchemaProfile",
    "SchemaRules",
    "class_json_schema_of",
    "class_schema_of",
    "named_schema",
    "profile_of",
]


DRAFT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect of every generated schema."""


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


_SCALARS: Mapping[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


@attrs.frozen
class SchemaRules:
    """The rule tables one workflow's schemas are generated with.

    ``fields``: keywords per ``(class, field)`` (``minLength``, ``pattern``,
    ``minimum``, ``maximum``, ``minItems``, ``items``); ``also_required``:
    fields the wire requires although the type has a default;
    ``class_rules``: keywords merged into a class's validation schema (its
    ``$comment`` also describes it in a provider profile); ``notes``: a
    class's rules between fields in words (replacing the ``$comment``);
    ``wire_order``: the property order where it differs from the fields';
    ``cross_field_text``: the words of the ``allOf`` rules for the provider
    profiles.
    """

    fields: Mapping[tuple[type[Any], str], Mapping[str, JsonValue]] = attrs.field(factory=dict)
    also_required: Mapping[type[Any], tuple[str, ...]] = attrs.field(factory=dict)
    class_rules: Mapping[type[Any], Mapping[str, JsonValue]] = attrs.field(factory=dict)
    notes: Mapping[type[Any], str] = attrs.field(factory=dict)
    wire_order: Mapping[type[Any], tuple[str, ...]] = attrs.field(factory=dict)
    cross_field_text: Mapping[type[Any], str] = attrs.field(factory=dict)

    def field(self, cl: type[Any], name: str) -> Mapping[str, JsonValue]:
        return self.fields.get((cl, name), {})

    def note(self, cl: type[Any]) -> str | None:
        comment = self.class_rules.get(cl, {}).get("$comment")
        return self.notes.get(cl, comment if isinstance(comment, str) else None)


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


def _type_schema(cl: Any, rules: SchemaRules) -> dict[str, JsonValue]:
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
            return {"type": "array", "items": _type_schema(args[0], rules)}
        items: list[JsonValue] = [_type_schema(arg, rules) for arg in args]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    if origin in (Mapping, dict):
        return {"type": "object", "additionalProperties": _type_schema(args[1], rules)}
    if (value_type := strip_none(cl)) is not cl:
        return _nullable(_type_schema(value_type, rules))
    if attrs.has(cl):
        return class_schema_of(cl, rules)
    raise TypeError(f"no JSON Schema for {cl!r}")


def class_schema_of(cl: type[Any], rules: SchemaRules) -> dict[str, JsonValue]:
    """The validation schema of one ``attrs`` payload class under ``rules``."""
    properties: dict[str, JsonValue] = {}
    required: list[JsonValue] = []
    for name, hint, is_required in _fields(cl, rules, wire_order=False):
        schema = _type_schema(hint, rules)
        if is_required:
            required.append(name)
        elif _union_args(hint) is None:
            schema = _nullable(schema)  # null for an optional field means absent
        properties[name] = _merge(schema, rules.field(cl, name))
    schema_: dict[str, JsonValue] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": True,
    }
    description = (cl.__doc__ or "").strip().split("\n", 1)[0]
    if description:
        schema_ = {"description": description, **schema_}
    schema_ = _merge(schema_, rules.class_rules.get(cl, {}))
    note = rules.notes.get(cl)
    if note is not None:
        schema_["$comment"] = note
    return schema_


def named_schema(
    name: str,
    names: type[enum.StrEnum],
    types: Mapping[Any, type[Any]],
    rules: SchemaRules,
    extra: Mapping[str, JsonValue] | None = None,
    *,
    profile: SchemaProfile | str = "validation",
) -> dict[str, JsonValue]:
    """The schema of payload ``name`` of a workflow (``names``: its payload names).

    Shared by both workflows' ``*json_schema`` functions; ``extra`` is merged at
    the top of the ``validation`` profile only (the provider profiles forbid
    annotation keywords such as ``$comment``); ``rules`` are the workflow's
    tables (:class:`SchemaRules`). A fresh dict on every call.

    Raises:
        ValueError: for an unknown name or profile; the message lists the valid ones.
    """
    try:
        payload = names(name)
    except ValueError:
        valid = ", ".join(repr(known.value) for known in names)
        raise ValueError(f"unknown payload schema {name!r}; expected one of {valid}") from None
    chosen = profile_of(profile)
    schema = class_json_schema_of(types[payload], chosen, payload.value, rules)
    if chosen is SchemaProfile.VALIDATION and extra:
        schema.update(copy.deepcopy(dict(extra)))
    return schema


class SchemaProfile(enum.StrEnum):
    """The schema profiles of spec §5.5; the module docstring cites each provider's rules."""

    VALIDATION = "validation"
    OPENAI_STRICT = "openai-strict"
    ANTHROPIC_STRICT = "anthropic-strict"
    GEMINI = "gemini"


SCHEMA_PROFILES: tuple[str, ...] = tuple(member.value for member in SchemaProfile)
"""The profile names :func:`diagnosis_core.protocol.json_schema` accepts."""


def profile_of(profile: object) -> SchemaProfile:
    """``profile`` as a :class:`SchemaProfile`; ``ValueError`` naming the valid ones."""
    member = member_of(SchemaProfile, profile)
    if member is None:
        valid = ", ".join(repr(known) for known in SCHEMA_PROFILES)
        raise ValueError(f"unknown schema profile {profile!r}; expected one of {valid}")
    return member


# A string with at least one character, in a regular expression both ECMA-262 and
# Python read the same way (the union of \s and \S is every character).
_ANY_CHARACTER = "[\\s\\S]"


_GEMINI_TYPES: Mapping[str, str] = {
    "string": "STRING", "number": "NUMBER", "integer": "INTEGER", "boolean": "BOOLEAN",
    "array": "ARRAY", "object": "OBJECT",
}


def _plural(count: object, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _apply_rules(
    schema: dict[str, JsonValue], rules: Mapping[str, JsonValue], profile: SchemaProfile
) -> tuple[dict[str, JsonValue], list[str]]:
    """Merge the rule keywords a profile can express; the others become notes."""
    result = dict(schema)
    notes: list[str] = []
    strict = profile in (SchemaProfile.OPENAI_STRICT, SchemaProfile.ANTHROPIC_STRICT)
    for keyword, value in rules.items():
        if keyword == "items" and isinstance(value, dict) and isinstance(result.get("items"), dict):
            inner, inner_notes = _apply_rules(result["items"], value, profile)  # type: ignore[arg-type]
            result["items"] = inner
            notes.extend(f"Each item: {note[0].lower()}{note[1:]}" for note in inner_notes)
        elif keyword == "minLength":
            if strict and value == 1:
                if "pattern" not in rules:  # a pattern rule implies a character already
                    result["pattern"] = _ANY_CHARACTER
            else:
                notes.append(f"Must have at least {_plural(value, 'character')}.")
        elif keyword == "pattern":
            if strict:
                result["pattern"] = value
            else:
                notes.append(f"Must match the regular expression `{value}`.")
        elif keyword in ("minimum", "maximum"):
            if profile is SchemaProfile.OPENAI_STRICT:
                result[keyword] = value
            else:
                notes.append(f"{keyword.capitalize()}: {value}.")
        elif keyword == "minItems":
            if profile is SchemaProfile.ANTHROPIC_STRICT and value not in (0, 1):
                notes.append(f"Must have at least {_plural(value, 'item')}.")
            else:
                result[keyword] = value
        else:
            raise TypeError(f"no {profile.value} rendering of the rule {keyword!r}")
    return result, notes


def _nullable_profile(schema: dict[str, JsonValue], profile: SchemaProfile) -> dict[str, JsonValue]:
    """Also accept ``null``, the way the profile writes it."""
    if profile is SchemaProfile.GEMINI:
        return {**schema, "nullable": True}
    kind = schema.get("type")
    if profile is SchemaProfile.OPENAI_STRICT and isinstance(kind, str) and kind != "object":
        result: dict[str, JsonValue] = {**schema, "type": [kind, "null"]}
        values = schema.get("enum")
        if isinstance(values, list):
            result["enum"] = [*values, None]
        return result
    description = schema.get("description")
    inner = {key: value for key, value in schema.items() if key != "description"}
    union: dict[str, JsonValue] = {"anyOf": [inner, {"type": "null"}]}
    return union if description is None else {"description": description, **union}


def _describe(schema: dict[str, JsonValue], notes: Sequence[str]) -> dict[str, JsonValue]:
    if not notes:
        return schema
    text = " ".join(notes)
    current = schema.get("description")
    described = f"{current} {text}" if isinstance(current, str) and current else text
    return {"description": described, **{k: v for k, v in schema.items() if k != "description"}}


def _profile_type(cl: Any, profile: SchemaProfile, rules: SchemaRules) -> dict[str, JsonValue]:
    """The non-null schema of one type in a provider profile."""
    if attrs.has(cl):
        return _profile_class(cl, profile, rules)
    item_type = homogeneous_item_type(cl)
    if item_type is not None:
        items = _profile_type(item_type, profile, rules)
        return _gemini_types({"type": "array", "items": items}, profile)
    if (value_type := strip_none(cl)) is not cl:
        return _profile_type(value_type, profile, rules)
    schema = _type_schema(cl, rules)
    if "const" in schema:
        value = schema["const"]
        if not isinstance(value, str):
            raise TypeError(f"no {profile.value} schema for the constant {value!r}")
        schema = {"type": "string", "enum": [value]}
        if profile is not SchemaProfile.GEMINI:
            schema = {"type": "string", "const": value}
    if not isinstance(schema.get("type"), str) or set(schema) - {"type", "enum", "const"}:
        raise TypeError(f"no {profile.value} schema for {cl!r}")  # e.g. any JSON value, mappings
    return _gemini_types(schema, profile)


def _gemini_types(schema: dict[str, JsonValue], profile: SchemaProfile) -> dict[str, JsonValue]:
    if profile is SchemaProfile.GEMINI and isinstance(schema.get("type"), str):
        return {**schema, "type": _GEMINI_TYPES[schema["type"]]}  # type: ignore[index]
    return schema


def _fields(cl: type[Any], rules: SchemaRules, wire_order: bool) -> list[tuple[str, Any, bool]]:
    """``cl``'s init fields (in wire order if asked): name, type hint, required on the wire."""
    hints = typing.get_type_hints(cl)
    required = rules.also_required.get(cl, ())  # besides the fields without a default
    fields = [field for field in attrs.fields(cl) if field.init]
    order = rules.wire_order.get(cl) if wire_order else None
    if order is not None:
        by_name = {field.name: field for field in fields}
        if set(order) != set(by_name):
            raise TypeError(f"the wire order of {cl.__name__} does not list its fields")
        fields = [by_name[name] for name in order]
    return [
        (field.name, hints[field.name], field.default is attrs.NOTHING or field.name in required)
        for field in fields
    ]


def _profile_class(
    cl: type[Any], profile: SchemaProfile, rules: SchemaRules
) -> dict[str, JsonValue]:
    properties: dict[str, JsonValue] = {}
    required: list[JsonValue] = []
    for name, hint, is_required in _fields(cl, rules, wire_order=True):
        schema, notes = _apply_rules(
            _profile_type(hint, profile, rules), rules.field(cl, name), profile
        )
        schema = _describe(schema, notes)
        if is_required and _union_args(hint) is None:
            required.append(name)
        else:
            schema = _nullable_profile(schema, profile)  # null for an optional field means absent
        properties[name] = schema
    if profile is SchemaProfile.OPENAI_STRICT:
        required = list(properties)
    notes = [text for text in ((cl.__doc__ or "").strip().split("\n", 1)[0],) if text]
    notes += [text for text in (rules.note(cl), rules.cross_field_text.get(cl)) if text is not None]
    result: dict[str, JsonValue] = {
        "type": "object",
        "properties": properties,
        "required": required,
    }
    if profile is SchemaProfile.GEMINI:
        result = {**_gemini_types(result, profile), "propertyOrdering": list(properties)}
    else:
        result["additionalProperties"] = False
    return _describe(result, notes)


def class_json_schema_of(
    cl: type[Any], profile: SchemaProfile, title: str | None, rules: SchemaRules
) -> dict[str, JsonValue]:
    """The schema of ``cl`` in ``profile`` under ``rules``; a fresh dict."""
    if profile is SchemaProfile.VALIDATION:
        head: dict[str, JsonValue] = {"$schema": DRAFT}
        if title is not None:
            head["title"] = title
        return copy.deepcopy({**head, **class_schema_of(cl, rules)})
    return copy.deepcopy(_profile_class(cl, profile, rules))
