"""Strategies for the *texts* agents return: valid encodings and adversarial ones (spec §5).

A valid text encodes a payload value the way a model might: any key order,
compact or indented, ASCII-escaped or not, bare or in one Markdown fence with
whitespace around it, optional fields omitted or ``null``, unknown extra fields
added. Parsing it gives the value back.

An adversarial text is built to break a parser: a valid document with one
field mutated (deleted, ``null``, wrong type, unknown enum value, out of
range), a duplicate key, a lone surrogate (escaped or raw), ``NaN`` or an
overflowing number, a broken or foreign fence, prose around the JSON, two
documents, a truncation, random character edits, huge or deeply nested input,
a non-object, random text and random bytes decoded. The parsers must answer
every one of them with a :class:`~diagnosis_core.PayloadError` and nothing
else.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from .. import JsonValue, to_wire
from ._values import (
    composer_outputs,
    executor_evidences,
    json_values,
    planner_plans,
    texts,
    verifier_outputs,
)

__all__ = [
    "adversarial_texts",
    "composer_output_texts",
    "executor_evidence_texts",
    "json_document_texts",
    "mutated_documents",
    "payload_documents",
    "payload_texts",
    "planner_plan_texts",
    "random_garbage_texts",
    "verifier_output_texts",
]

# Fields with a default that the parsers must nevertheless see (spec §5.2).
_REQUIRED_DESPITE_DEFAULT = frozenset({"schema_version"})
_WHITESPACE = " \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000"


# No payload field starts with "x-", so these never collide with a real one.
_UNKNOWN_KEYS = texts(max_size=8).map(lambda suffix: "x-" + suffix)
_PRESENCE = st.sampled_from(("keep", "omit", "null"))
_SMALL_JSON: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    texts(max_size=8),
    st.lists(texts(max_size=8), max_size=2),
)
_ANY_EXTRAS = st.dictionaries(_UNKNOWN_KEYS, _SMALL_JSON, min_size=1, max_size=2)


def _document(draw: st.DrawFn, value: object, extras: st.SearchStrategy[Any] | None) -> Any:
    cls: Any = type(value)
    if attrs.has(cls):
        document: dict[str, Any] = {}
        for field in attrs.fields(cls):
            item = getattr(value, field.name)
            if (
                field.default is not attrs.NOTHING
                and field.name not in _REQUIRED_DESPITE_DEFAULT
                and item == field.default
            ):
                presence = draw(_PRESENCE)
                if presence == "omit":
                    continue
                if presence == "null":  # spec §5: null for an optional field means absent
                    document[field.name] = None
                    continue
            document[field.name] = _document(draw, item, extras)
        if extras is not None and draw(st.booleans()):
            document.update(draw(extras))
        return document
    if isinstance(value, tuple):
        return [_document(draw, item, extras) for item in value]
    return to_wire(value)


@st.composite
def payload_documents(
    draw: st.DrawFn,
    value: object,
    *,
    unknown_values: st.SearchStrategy[JsonValue] | None = None,
) -> dict[str, JsonValue]:
    """The wire document of a payload value, as a model might write it.

    Optional fields equal to their default are kept, omitted or ``null``;
    objects may get unknown ``x-…`` fields whose values come from
    ``unknown_values`` (any JSON by default). Structuring the document gives
    ``value`` back.
    """
    extras = (
        _ANY_EXTRAS
        if unknown_values is None
        else st.dictionaries(_UNKNOWN_KEYS, unknown_values, min_size=1, max_size=2)
    )
    document = _document(draw, value, extras)
    assert isinstance(document, dict)
    return document


@st.composite
def json_document_texts(draw: st.DrawFn, document: JsonValue) -> str:
    """Valid message texts for one JSON document (spec §5 "General rules").

    Any key order, indentation and ASCII escaping; bare or in one
    ```` ``` ```` / ```` ```json ```` fence (info string in any case, LF, CR
    or CRLF line ends); ``str.strip`` whitespace around.
    """
    body = json.dumps(
        document,
        indent=draw(_INDENTS),
        ensure_ascii=draw(st.booleans()),
        sort_keys=draw(st.booleans()),
    )
    if draw(st.booleans()):
        newline = draw(_NEWLINES)
        body = f"```{draw(_INFOS)}{newline}{body}{newline}```"
    return draw(_AROUND) + body + draw(_AROUND)


_INDENTS = st.sampled_from([None, 2, 0, "\t"])
_INFOS = st.sampled_from(["", "json", "JSON", " json ", "Json\t"])
_NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])
_AROUND = st.text(_WHITESPACE, max_size=3)


@st.composite
def payload_texts(
    draw: st.DrawFn,
    value: object,
    *,
    unknown_values: st.SearchStrategy[JsonValue] | None = None,
) -> str:
    """A valid message text whose parse is ``value``: :func:`payload_documents` encoded."""
    document = draw(payload_documents(value, unknown_values=unknown_values))
    return draw(json_document_texts(document))


def planner_plan_texts(skill_names: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """Valid planner texts for a catalog with ``skill_names``."""
    return planner_plans(skill_names).flatmap(payload_texts)


def executor_evidence_texts() -> st.SearchStrategy[str]:
    """Valid ``executor_evidence_v2`` texts."""
    return executor_evidences().flatmap(payload_texts)


def verifier_output_texts(
    claim_ids: Sequence[str] = (), *, unknown_ids: bool = False
) -> st.SearchStrategy[str]:
    """Valid verifier texts referring to ``claim_ids``."""
    return verifier_outputs(claim_ids, unknown_ids=unknown_ids).flatmap(payload_texts)


def composer_output_texts(allowed_claim_ids: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """Valid composer texts citing only ``allowed_claim_ids``."""
    return composer_outputs(allowed_claim_ids).flatmap(payload_texts)


# --- adversarial -------------------------------------------------------------------

_WRONG_VALUES: tuple[JsonValue, ...] = (0, 1, -1, 1.0, 0.5, True, False, "", "x", [], {}, None)
_BAD_ENUMS = ("MAYBE", "pass", "Pass ", "low_confid", "PASS\u200b", "evidence", "unknown", "")
_BAD_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1.5", "-0.1", "1" + "0" * 5000)


def _locations(document: JsonValue) -> list[tuple[Any, Any]]:
    """Every (container, key-or-index) pair of a document, iteratively, in document order."""
    found: list[tuple[Any, Any]] = []
    stack: list[JsonValue] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                found.append((node, key))
                stack.append(child)
        elif isinstance(node, list):
            for index, child in enumerate(node):
                found.append((node, index))
                stack.append(child)
    return found


@st.composite
def mutated_documents(draw: st.DrawFn, document: JsonValue) -> JsonValue:
    """``document`` with one field broken: deleted, null, wrong type, bad enum or number.

    The result is usually invalid for its payload, but not always (deleting an
    optional field is fine); either way the parser must not crash.
    """
    mutated = copy.deepcopy(document)
    places = _locations(mutated)
    if not places:
        return draw(json_values())
    container, key = places[draw(st.integers(0, len(places) - 1))]
    operation = draw(
        st.sampled_from(("delete", "null", "wrong_type", "enum", "random", "duplicate_item"))
    )
    if operation == "delete":
        del container[key]
    elif operation == "null":
        container[key] = None
    elif operation == "wrong_type":
        current = container[key]
        choices = [value for value in _WRONG_VALUES if type(value) is not type(current)]
        container[key] = draw(st.sampled_from(choices))
    elif operation == "enum":
        container[key] = draw(st.sampled_from(_BAD_ENUMS))
    elif operation == "random":
        container[key] = draw(json_values(max_leaves=4))
    elif isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
    else:
        container[key] = [container[key], container[key]]
    return mutated


def _dumps(value: JsonValue, duplicate: list[int], marker: str | None = None) -> str:
    """Compact JSON that repeats the first key of the ``duplicate[0]``-th object.

    ``duplicate`` is a one-item countdown shared by the recursion. When
    ``marker`` is given, every string equal to it is replaced by the raw
    JSON text ``"\\ud800"`` (an escaped lone surrogate).
    """
    if isinstance(value, dict):
        parts = [f"{_dumps(key, duplicate, marker)}:{_dumps(item, duplicate, marker)}"
                 for key, item in value.items()]
        duplicate[0] -= 1
        if duplicate[0] == 0 and parts:
            parts.append(parts[0])
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps(item, duplicate, marker) for item in value) + "]"
    if marker is not None and value == marker:
        return '"\\ud800"'
    return json.dumps(value)


def _count_objects(document: JsonValue) -> int:
    return sum(1 for container, _ in _locations(document) if isinstance(container, dict)) + 1


@st.composite
def _string_replaced(draw: st.DrawFn, document: JsonValue, replacement: str) -> JsonValue | None:
    mutated = copy.deepcopy(document)
    strings = [(c, k) for c, k in _locations(mutated) if isinstance(c[k], str)]
    if not strings:
        return None
    container, key = strings[draw(st.integers(0, len(strings) - 1))]
    container[key] = replacement
    return mutated


@st.composite
def _number_replaced(draw: st.DrawFn, document: JsonValue) -> str | None:
    marker = "\x00number-marker\x00"
    mutated = copy.deepcopy(document)
    places = _locations(mutated)
    numbers = [
        (c, k) for c, k in places if isinstance(c[k], int | float) and not isinstance(c[k], bool)
    ]
    if not (numbers or places):
        return None
    candidates = numbers or places
    container, key = candidates[draw(st.integers(0, len(candidates) - 1))]
    container[key] = marker
    return json.dumps(mutated).replace(json.dumps(marker), draw(st.sampled_from(_BAD_NUMBERS)))


_BROKEN_FENCES = (
    "~~~json\n{body}\n~~~",
    "````json\n{body}\n````",
    "```python\n{body}\n```",
    "```json {body}```",
    "```json\n{body}\n    ```",
    "```json\n{body}",
    "```json\n{body}\n```\n```json\n{body}\n```",
    "Here is the JSON:\n{body}",
    "{body}\nHope this helps!",
    "```json\n{body}\n```\nDone.",
    "{body}{body}",
    "{body}\n{body}",
    "`{body}`",
    "```\n```json\n{body}\n```",
)


@st.composite
def _edited(draw: st.DrawFn, text: str) -> str:
    """Random character edits: replace, insert or delete a few characters."""
    chars = list(text)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(chars)))
        action = draw(st.sampled_from(("insert", "replace", "delete")))
        char = draw(st.sampled_from('{}[]",:\\ 0a\u00e9\ud800\n`'))
        if action == "insert" or not chars:
            chars.insert(position, char)
        elif position < len(chars):
            if action == "replace":
                chars[position] = char
            else:
                del chars[position]
    return "".join(chars)


def random_garbage_texts() -> st.SearchStrategy[str]:
    """Text that is (almost surely) no payload: random text, bytes decoded, JSON non-objects,
    blanks, deep nesting and huge input."""
    decoded = st.tuples(
        st.binary(max_size=64), st.sampled_from(("replace", "surrogateescape", "latin-1"))
    ).map(lambda pair: pair[0].decode("latin-1") if pair[1] == "latin-1"
          else pair[0].decode("utf-8", pair[1]))
    return st.one_of(
        st.text(max_size=60),
        st.text(st.characters(), max_size=30),  # surrogates included
        decoded,
        json_values().map(json.dumps),
        st.text(_WHITESPACE, max_size=4),
        st.integers(1, 200_000).map(lambda depth: "[" * depth + "]" * depth),
        st.integers(1, 200_000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
        st.integers(1, 2_000_000).map(lambda size: '{"answer": "' + "x" * size + '"}'),
        st.just("```json\n```"),
        st.just("null"),
    )


@st.composite
def adversarial_texts(draw: st.DrawFn, document: JsonValue) -> str:
    """Hostile variants of the valid ``document`` (see the module docstring).

    Every one of them must be answered by the payload's parser with a
    :class:`~diagnosis_core.PayloadError`, or (rarely, e.g. an optional field
    deleted) with a valid value, never with another exception.
    """
    body = json.dumps(document)
    kind = draw(
        st.sampled_from(
            (
                "mutated", "duplicate_key", "escaped_surrogate", "raw_surrogate", "number",
                "fence", "truncated", "edited", "garbage", "non_object", "huge_field",
            )
        )
    )
    if kind == "mutated":
        return draw(json_document_texts(draw(mutated_documents(document))))
    if kind == "duplicate_key":
        countdown = [draw(st.integers(1, _count_objects(document)))]
        return _dumps(document, countdown)
    if kind in ("escaped_surrogate", "raw_surrogate"):
        marker = "\x00surrogate-marker\x00"
        replacement = marker if kind == "escaped_surrogate" else draw(
            st.sampled_from(["\ud800", "a\udfff", "\udc80x", "\ud83d"])
        )
        replaced = draw(_string_replaced(document, replacement))
        if replaced is None:
            return '{"a": "\\udc00"}'
        if kind == "escaped_surrogate":
            return _dumps(replaced, [0], marker)
        return json.dumps(replaced, ensure_ascii=False)
    if kind == "number":
        return draw(_number_replaced(document)) or "NaN"
    if kind == "fence":
        return draw(st.sampled_from(_BROKEN_FENCES)).replace("{body}", body)
    if kind == "truncated":
        return body[: draw(st.integers(0, max(len(body) - 1, 0)))]
    if kind == "edited":
        return draw(_edited(body))
    if kind == "non_object":
        return json.dumps(draw(st.sampled_from([[document], body, 1, None, True, []])))
    if kind == "huge_field":
        replaced = draw(_string_replaced(document, "x" * draw(st.integers(10_000, 500_000))))
        return json.dumps(replaced)
    return draw(random_garbage_texts())

