"""A type as a prompt shows it: a short JSON-like notation, the same in every locale.

``string``, ``integer``, ``number``, ``boolean``, ``null``; ``[T]`` an array of
``T``; ``{"a": T, "b": U}`` an object with exactly those keys (sorted, as the
canonical JSON the agent receives writes them); ``{string: T}`` an object with
any keys; ``"A" | "B"`` the values of an enumeration; ``T | null`` an optional
value. Written from the ``attrs`` classes the inputs and payloads are built
from, so a field added to a class shows up in the prompt.
"""

from __future__ import annotations

import enum
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs

from .._kernel.public import defined_in

__all__ = ["field_types", "type_notation"]

_SCALARS: Mapping[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def field_types(cls: type[Any]) -> dict[str, object]:
    """The resolved type of every ``attrs`` field of ``cls``, in field order.

    Resolved in the module that defines each class of the MRO (the public
    namespace a class is published in does not hold its private imports).
    """
    hints: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        own = klass.__dict__.get("__annotations__")  # noqa: RUF063 - its own, never inherited
        if not own:
            continue
        module = sys.modules.get(defined_in(klass))
        namespace = dict(vars(module)) if module is not None else {}
        holder = type("holder", (), {"__annotations__": dict(own)})
        hints.update(typing.get_type_hints(holder, namespace, dict(vars(klass))))
    return {field.name: hints[field.name] for field in attrs.fields(cls)}


def type_notation(tp: object) -> str:
    """The notation of ``tp`` (see the module doc)."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " | ".join(f'"{member.value}"' for member in tp)
    if isinstance(tp, type) and attrs.has(tp):
        fields = field_types(tp)
        inner = ", ".join(f'"{name}": {type_notation(fields[name])}' for name in sorted(fields))
        return "{" + inner + "}"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return " | ".join(f'"{arg}"' for arg in args)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        parts = [type_notation(arg) for arg in present]
        if len(present) < len(args):
            parts.append("null")
        return " | ".join(parts)
    if origin in (tuple, list) and args:
        return f"[{type_notation(args[0])}]"
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return f"{{{type_notation(args[0])}: {type_notation(args[1])}}}"
    raise TypeError(f"no notation for {tp!r}")
