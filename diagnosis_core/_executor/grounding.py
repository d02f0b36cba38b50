"""Grounding by construction: the citable paths of recorded tool outputs (spec §18).

A constrained decoder can only emit what a schema allows. If the executor's
final answer is decoded against a schema whose ``raw_path`` is an enum of the
paths that exist in a recorded output, an ungrounded path cannot be written.
This module computes those paths, under limits, and the value that says what
was constrained and what was not (:class:`GroundingSchema`); each workflow
builds its own payload's schema from them (``chat.py``,
``aiops.py``).

Which paths. Exactly the paths the reference gatekeeper resolves to a value
it can match an excerpt against: those that end at a string, a number or a
boolean (a path to ``null``, an object or an array is
``RAW_PATH_UNRESOLVED``, spec §9). Each is written once, in its canonical
spelling: ``.name`` when the key is a name segment (``[A-Za-z_][A-Za-z0-9_-]*``),
``['key']`` otherwise, ``[i]`` for an index. A key holding ``'`` or ``\\``
has no spelling in the path grammar, so nothing below it can be cited by any
binding; it is skipped. Order: document order (depth first), so the enum
reads like the output.

Limits (:class:`GroundingLimits`), and what happens beyond them — the schema
never refuses a path that exists because of a limit, it stops constraining:

* ``max_depth`` — a scalar more than ``max_depth`` segments deep;
* ``max_paths`` — more than ``max_paths`` scalar paths in one output;
* ``max_path_chars`` — a path longer than ``max_path_chars`` characters;
* ``max_total_paths`` — the enum values of all invocations together (OpenAI
  strict mode allows 1000 enum values in a schema, spec §5.5);
* ``max_invocations`` — invocations listed one by one.

An output that hits one of the first four has its ``raw_path`` left
unconstrained (the profile's plain non-empty string) in its branch — its
invocation id and tool name still fixed; invocations beyond
``max_invocations`` share one branch per tool, whose id is an enum of that
tool's later ids and whose path is unconstrained. Each such fallback is a line of
:attr:`GroundingSchema.notes` and the schema's ``description`` says so.
Cost: linear in the size of the outputs walked, and a walk stops as soon as
its output is over a limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._kernel.tools.ledger import NAME_SEGMENT, ToolInvocation
from .._kernel.wire.json import JsonValue

__all__ = [
    "DEFAULT_LIMITS",
    "GroundingLimits",
    "GroundingSchema",
    "OutputPaths",
    "citable_invocations",
    "citable_paths",
    "for_local_decoder",
    "positive_int",
    "schema_object",
]


def positive_int(name: str, value: object) -> int:
    """``value`` when it is an int >= 1 (not a bool): a limit; else a ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return value


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    positive_int(attribute.name, value)


@attrs.frozen
class GroundingLimits:
    """How much of the recorded outputs a grounding schema lists (spec §18).

    The defaults keep the schema inside OpenAI strict mode's documented
    limits (1000 enum values, 120 000 characters of names and enum values,
    spec §5.5) with room for the payload's own enums, and a llama.cpp grammar
    small enough to compile in milliseconds. Beyond a limit the schema stops
    constraining that part (module docstring); it never refuses a real path.
    """

    max_invocations: int = attrs.field(default=32, validator=_positive)
    max_paths: int = attrs.field(default=200, validator=_positive)
    max_depth: int = attrs.field(default=16, validator=_positive)
    max_path_chars: int = attrs.field(default=200, validator=_positive)
    max_total_paths: int = attrs.field(default=800, validator=_positive)


DEFAULT_LIMITS: GroundingLimits = GroundingLimits()
"""The limits used when none are given."""


@attrs.frozen
class OutputPaths:
    """The citable paths of one output, or why they are not all listed.

    ``paths`` are canonical raw paths to scalars, in document order;
    ``complete`` is false when a limit stopped the walk (``reason`` names
    it), and then ``paths`` holds only those found before it.
    """

    paths: tuple[str, ...]
    complete: bool
    reason: str | None = None


def _key_segment(key: str) -> str | None:
    if NAME_SEGMENT.fullmatch(key):
        return f".{key}"
    if "'" in key or "\\" in key:
        return None  # no spelling in the §9 path grammar: not citable
    return f"['{key}']"


def _is_scalar(value: object) -> bool:
    return isinstance(value, str | bool | int | float)


def citable_paths(output: object, limits: GroundingLimits = DEFAULT_LIMITS) -> OutputPaths:
    """The canonical raw paths of ``output``'s strings, numbers and booleans (spec §9, §18).

    Iterative (any nesting), never raises for a JSON value (plain or the
    ledger's frozen form); stops at the first limit of ``limits`` that the
    output exceeds.
    """
    found: list[str] = []
    # (path, value, depth) in reverse document order, so pop() walks forward
    stack: list[tuple[str, object, int]] = [("$", output, 0)]
    while stack:
        path, value, depth = stack.pop()
        if _is_scalar(value):
            if len(path) > limits.max_path_chars:
                reason = f"a path longer than {limits.max_path_chars} characters"
                return OutputPaths(tuple(found), False, reason)
            if len(found) == limits.max_paths:
                return OutputPaths(tuple(found), False, f"more than {limits.max_paths} paths")
            found.append(path)
            continue
        children: list[tuple[str, object, int]] = []
        if isinstance(value, Mapping):
            for key, child in value.items():
                if not isinstance(key, str):
                    continue
                segment = _key_segment(key)
                if segment is not None and (_is_scalar(child) or _is_container(child)):
                    children.append((path + segment, child, depth + 1))
        elif isinstance(value, list | tuple):
            for index, child in enumerate(value):
                if _is_scalar(child) or _is_container(child):
                    children.append((f"{path}[{index}]", child, depth + 1))
        else:
            continue  # null
        if children and depth == limits.max_depth:
            return OutputPaths(tuple(found), False, f"values deeper than {limits.max_depth} levels")
        stack.extend(reversed(children))
    return OutputPaths(tuple(found), True)


def _is_container(value: object) -> bool:
    return isinstance(value, Mapping | list | tuple)


@attrs.frozen
class GroundingSchema:
    """A final answer's JSON Schema built from the invocations of one call (spec §18).

    * ``schema`` — the payload's schema in the chosen profile, with the
      citation fields restricted to what was recorded; give it to the
      provider's strict mode or to a local constrained decoder.
    * ``invocation_ids`` — the invocations it lets the answer cite, in id order.
    * ``constrained`` — the ids whose ``raw_path`` is an enum of their
      paths (the others have an unconstrained path: see ``notes``).
    * ``notes`` — one line per fallback (a limit reached, a profile that
      cannot couple an id to its paths); empty when everything is constrained.
    """

    schema: Mapping[str, JsonValue]
    invocation_ids: tuple[str, ...]
    constrained: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """True when every citable invocation and every path of it is constrained."""
        return not self.notes


def citable_invocations(records: Sequence[ToolInvocation]) -> tuple[ToolInvocation, ...]:
    """The records a binding can cite: successful ones, first of each id, in id order.

    A failed invocation is ``INVOCATION_FAILED`` whatever is cited (spec §9),
    so it has no branch.
    """
    seen: dict[str, ToolInvocation] = {}
    for record in records:
        if record.success is True and record.invocation_id not in seen:
            seen[record.invocation_id] = record
    return tuple(sorted(seen.values(), key=lambda record: _number(record.invocation_id)))


def _number(invocation_id: str) -> tuple[int, str]:
    tail = invocation_id.rpartition("-")[2]
    return (int(tail) if tail.isdigit() and len(tail) < 19 else 0, invocation_id)


def schema_object(value: JsonValue) -> dict[str, JsonValue]:
    """A part of a schema this package wrote, known to be an object, typed as one for editing."""
    assert isinstance(value, dict)
    return value


def for_local_decoder(schema: JsonValue) -> JsonValue:
    """A draft 2020-12 schema in the form llama.cpp's JSON-schema converter keeps whole.

    Two rewrites, everywhere: ``{"type": [T, "null"], …}`` becomes ``{"anyOf":
    [{"type": T, …}, {"type": "null"}]}`` — the same instances; the converter
    turns a type list into bare types and drops the other keywords (the
    ``items`` of a nullable array, an ``enum``); and a ``pattern`` moves into
    the ``description`` ("Must match the regular expression `…`.", the
    profiles' phrase) — the converter accepts only ``^…$`` patterns and writes
    them into the grammar unescaped. The parser still enforces the pattern.
    Used for the ``validation`` profile, the one a local decoder reads.
    """
    if isinstance(schema, list):
        return [for_local_decoder(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: for_local_decoder(value) for key, value in schema.items()}
    pattern = converted.pop("pattern", None)
    if isinstance(pattern, str):
        note = f"Must match the regular expression `{pattern}`."
        described = converted.get("description")
        converted["description"] = f"{described} {note}" if isinstance(described, str) else note
    kinds = converted.get("type")
    if not isinstance(kinds, list):
        return converted
    rest = {key: value for key, value in converted.items() if key not in ("type", "description")}
    branches: list[JsonValue] = [{"type": kind, **rest} for kind in kinds if kind != "null"]
    if "null" in kinds:
        branches.append({"type": "null"})
    split: dict[str, JsonValue] = {"anyOf": branches}
    if "description" in converted:
        split["description"] = converted["description"]
    return split
