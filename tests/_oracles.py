"""Independent oracles for the parser properties: what a rejection or an acceptance must imply.

* :func:`reference_accepts` — the protocol's JSON rules (spec §5) applied with the
  standard library alone: ``json.loads`` with hooks that refuse duplicate keys,
  ``NaN``/``Infinity`` and numbers that overflow a double, then a walk for lone
  surrogates and integers longer than 4300 digits. Not the package's code.
* :func:`accepted_payload_is_sound` — a payload a parser accepted is a JSON object
  that the payload's JSON Schema (checked by ``jsonschema``, another engine) accepts,
  and it parses back to itself from its wire form.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from typing import Any

import diagnosis_core as dc
from tests._reach import protocol as dcp

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_DIGITS = 4300


class _Refused(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Refused("duplicate key")
    return dict(pairs)


def _constant(literal: str) -> float:
    raise _Refused(literal)


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused("overflow")
    return value


def _int(literal: str) -> int:
    if len(literal.lstrip("-")) > _MAX_DIGITS:
        raise _Refused("digits")
    return int(literal)


def _lone_surrogate(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
    return False


def reference_accepts(text: str) -> tuple[bool, object]:
    """Whether the protocol's JSON rules accept ``text``, and the value if so."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except (_Refused, ValueError, RecursionError):
        return False, None
    if _lone_surrogate(value):
        return False, None
    return True, value


SCHEMA_NAMES = ("planner_plan", "executor_evidence_v2", "verifier_output", "composer_output")


@functools.cache
def validators() -> dict[str, Callable[[object], bool]]:
    """``name -> is_valid`` of each chat payload's JSON Schema, by ``jsonschema``."""
    import jsonschema

    return {
        name: jsonschema.Draft202012Validator(dcp.json_schema(name)).is_valid
        for name in SCHEMA_NAMES
    }


def accepted_payload_is_sound(
    name: str, parse: Callable[[str], object], text: str, value: object
) -> None:
    """``parse(text)`` returned ``value``: check it against the oracles above."""
    document = json.loads(dcp.extract_json_text(text))
    assert isinstance(document, dict), text
    assert validators()[name](document), (name, text)
    assert parse(dc.to_json(value)) == value
