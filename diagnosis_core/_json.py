"""Strict JSON in, canonical JSON out (spec §5 "General rules", §6.6).

Agent output is hostile input. Python's :func:`json.loads` accepts things the
protocol forbids (duplicate keys, ``NaN``, lone surrogates, numbers that
overflow to infinity), and different parsers disagree on what those mean, so a
value that one component reads one way could be read another way later. Every
agent text therefore goes through :func:`parse_json_object`, which accepts
exactly the documents of spec §5 and reports anything else as a
:class:`PayloadError` with a path — never another exception.

:func:`canonical_json` is the one serialization of every agent input (§6.6):
identical values give byte-identical text.

Performance: the common case (a valid document) costs one :func:`json.loads`
with a cheap duplicate-key hook plus a few linear scans of the text done in C.
Locating *where* a problem is (the path) is done only after a problem was
found, by a second, slower pass.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, TypeAlias

from ._errors import PayloadError

__all__ = [
    "JsonValue",
    "canonical_json",
    "extract_json_text",
    "loads_strict",
    "loads_strict_stored",
    "loads_strict_with_objects",
    "parse_json_object",
]

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""Any value :func:`json.loads` can return (and :func:`canonical_json` can write)."""


_JSON_SCALARS = frozenset({bool, int, float, str, type(None)})


def is_json_value_type(cl: object) -> bool:
    """Whether a type hint is :data:`JsonValue` (also after ``get_type_hints``).

    Resolving an annotation turns the alias's inner ``"JsonValue"`` strings
    into ``ForwardRef`` objects, so identity is not enough: the union of the
    JSON scalars with a ``list`` and a ``dict`` is recognised by its shape.
    """
    if cl is JsonValue:
        return True
    if typing.get_origin(cl) not in (typing.Union, types.UnionType):
        return False
    args = typing.get_args(cl)
    scalars = {arg for arg in args if typing.get_origin(arg) is None}
    containers = {typing.get_origin(arg) for arg in args} - {None}
    return scalars == _JSON_SCALARS and containers == {list, dict}


def canonical_json(value: object) -> str:
    """Serialize ``value`` exactly as spec §6.6 prescribes.

    Keys sorted, non-ASCII kept, compact separators, no NaN: identical values
    give byte-identical text, which is what makes a technical retry's input
    identical and a trace hash reproducible.

    Raises:
        ValueError: for NaN or an infinite float (``allow_nan=False``), or a
            circular structure.
        TypeError: for a value JSON cannot represent (a set, bytes, a
            non-string key that is not a scalar, an arbitrary object …).
    """
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


# --- paths and messages (shared by the converter and the parsers) ---------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_KEY_IN_PATH = 64


def json_path_key(path: str, key: str) -> str:
    """Append an object key to a readable path (``claims`` → ``claims.text``).

    A key that is not a short identifier is written ``['…']``, shortened and
    escaped like :func:`describe_value`, so a path is always safe to print.
    """
    if len(key) <= _MAX_KEY_IN_PATH and _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path or '$'}[{describe_value(key)}]"


def json_path_index(path: str, index: int) -> str:
    """Append an array index to a readable path (``claims`` → ``claims[3]``)."""
    return f"{path or '$'}[{index}]"


def describe_value(value: object, limit: int = 40) -> str:
    """A short, printable rendering of a wire value for an error message.

    Strings are quoted with :func:`repr` (which escapes control characters
    and surrogates) and cut after ``limit`` characters; other values are
    named by their JSON type, so a 10 MB value never lands in a reason.
    """
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "…")
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int) and abs(value) < 10**15:
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return json_type_name(value)


def json_type_name(value: object) -> str:
    """The JSON name of a value's type, for messages (``array``, ``null`` …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# --- strict loading -----------------------------------------------------------


class _Problem(Exception):
    """Raised by the fast-path hooks; the diagnostic pass then finds the path."""


def _strict_pairs(pairs: list[tuple[str, JsonValue]]) -> dict[str, JsonValue]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Problem
    return obj


def _reject_constant(literal: str) -> float:
    raise _Problem


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _Problem
    return value


# A ``\uD8xx``..``\uDFxx`` escape somewhere in the text. Cheap (literal prefix);
# it may also hit an escaped backslash followed by ``ud800`` or a valid pair,
# which the exact check below tells apart.
_SURROGATE_ESCAPE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPED_BACKSLASH = re.compile(r"\\\\")
_LONE_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")


def _has_raw_surrogate(text: str) -> bool:
    # ASCII strings cannot hold one (``isascii`` is O(1) in CPython). The
    # UTF-16 encoder refuses every surrogate code point, paired or not, and
    # is several times faster than the UTF-8 one on 1- and 2-byte strings.
    if text.isascii():
        return False
    try:
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return True
    return False


def _has_lone_surrogate_escape(text: str) -> bool:
    """Exact check for an escape the decoder leaves as an unpaired surrogate.

    ``\\\\`` pairs are blanked first (left to right, exactly as JSON tokenizes
    them), so every remaining backslash starts a real escape; the decoder joins
    a high escape immediately followed by a low escape, and keeps any other
    surrogate escape as a lone code point.
    """
    if "\\" not in text or _SURROGATE_ESCAPE_HINT.search(text) is None:
        return False
    blanked = _ESCAPED_BACKSLASH.sub("__", text)
    return _LONE_SURROGATE_ESCAPE.search(blanked) is not None


class _Pairs(list[tuple[str, object]]):
    """An object as the diagnostic pass keeps it: its pairs, in document order."""


class _Constant(str):
    """A ``NaN`` / ``Infinity`` / ``-Infinity`` literal seen by the diagnostic pass."""


class _Overflow(str):
    """A number literal that overflows a double, seen by the diagnostic pass."""


def _diag_float(literal: str) -> object:
    value = float(literal)
    return _Overflow(literal) if math.isinf(value) else value


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _diagnose(text: str) -> PayloadError:
    """Find the first problem in document order and say where it is.

    Only runs after the fast path rejected the text, so it may be slow; it is
    iterative, because a document may nest as deep as the parser allows.
    """
    try:
        document = json.loads(text, object_pairs_hook=_Pairs, parse_constant=_Constant,
                              parse_float=_diag_float)
    except RecursionError:
        return PayloadError("$", "nesting too deep")
    except json.JSONDecodeError as exc:
        # The fast path stopped at a problem (a duplicate key …) before reaching
        # a syntax error further on; the document is not JSON at all.
        return PayloadError("$", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except ValueError:
        return PayloadError("$", "invalid JSON: a number has too many digits")
    stack: list[tuple[object, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Pairs):
            seen: set[str] = set()
            for key, _ in value:
                if _SURROGATE_CHAR.search(key):
                    return PayloadError(path or "$", "object key contains an unpaired surrogate")
                if key in seen:
                    return PayloadError(path or "$", f"duplicate key {describe_value(key)}")
                seen.add(key)
            stack.extend((item, json_path_key(path, key)) for key, item in reversed(value))
        elif isinstance(value, list):
            stack.extend(
                (item, json_path_index(path, index))
                for index, item in reversed(list(enumerate(value)))
            )
        elif isinstance(value, _Constant):
            return PayloadError(path or "$", f"{value} is not a JSON number")
        elif isinstance(value, _Overflow):
            return PayloadError(path or "$", f"number {_shorten(str(value))} is out of range")
        elif isinstance(value, str) and _SURROGATE_CHAR.search(value):
            return PayloadError(path or "$", "string contains an unpaired surrogate")
    return PayloadError("$", "invalid JSON")  # pragma: no cover - the fast path found something


def loads_strict(text: str) -> JsonValue:
    """Parse one JSON document under the protocol's rules (spec §5).

    Rejected, each as a :class:`PayloadError` whose path locates the problem
    where that is known: invalid JSON (with line and column), a duplicate key
    in any object, ``NaN`` / ``Infinity`` / ``-Infinity``, a number that
    overflows a double, a lone surrogate in any string or key (escaped or
    raw), an integer too long to convert, and nesting deeper than the parser
    allows. :class:`MemoryError` is not caught.

    Guarantee: a returned value contains no surrogates and no non-finite float,
    so :func:`canonical_json` can always serialize it.
    """
    if not isinstance(text, str):
        raise PayloadError("$", f"expected text, got {type(text).__name__}")
    try:
        value: JsonValue = json.loads(
            text,
            object_pairs_hook=_strict_pairs,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        raise PayloadError(
            "$", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _Problem:
        raise _diagnose(text) from None
    except RecursionError:
        raise PayloadError("$", "nesting too deep") from None
    except ValueError:
        # int() refuses more digits than sys.get_int_max_str_digits().
        raise PayloadError("$", "invalid JSON: a number has too many digits") from None
    if _has_raw_surrogate(text) or _has_lone_surrogate_escape(text):
        raise _diagnose(text)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def loads_strict_stored(text: str) -> JsonValue:
    """:func:`loads_strict` for *stored facts* (a run journal, spec §12): lone surrogates kept.

    A journal records what an effect really returned, and an exception
    message may hold a lone surrogate; it is stored as a ``\\uXXXX`` escape
    and must come back unchanged. Every other rule of :func:`loads_strict`
    holds: invalid JSON, duplicate keys, ``NaN``/``Infinity``, overflowing
    numbers, integers too long to convert and nesting deeper than the parser
    allows are each a :class:`PayloadError` with a path where one is known.
    """
    if not isinstance(text, str):
        raise PayloadError("$", f"expected text, got {type(text).__name__}")
    try:
        value: JsonValue = json.loads(
            text,
            object_pairs_hook=_strict_pairs,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        raise PayloadError(
            "$", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _Problem:
        # Surrogates are allowed here: hide them from the diagnostic pass, which
        # would otherwise report one before the real problem.
        blanked = _SURROGATE_CHAR.sub("?", text)
        if "\\" in blanked:
            blanked = _ESCAPED_BACKSLASH.sub("__", blanked)
            blanked = _SURROGATE_ESCAPE.sub("?", blanked)
        raise _diagnose(blanked) from None
    except RecursionError:
        raise PayloadError("$", "nesting too deep") from None
    except ValueError:
        raise PayloadError("$", "invalid JSON: a number has too many digits") from None
    return value


def loads_strict_with_objects(
    text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], object]
) -> tuple[bool, object]:
    """:func:`loads_strict` with a custom object constructor, for one-pass parsing.

    Returns ``(True, value)`` when :func:`loads_strict` would accept ``text``
    and the hook raised nothing, else ``(False, None)``: the caller then runs
    :func:`loads_strict` for the error and its path. The hook receives each
    object's key/value pairs, as ``object_pairs_hook`` of :func:`json.loads`,
    and must raise on a duplicate key; every other rule (constants, overflow,
    surrogates, depth) is applied here. :class:`MemoryError` is not caught.
    """
    if not isinstance(text, str):
        return False, None
    try:
        value = json.loads(
            text,
            object_pairs_hook=object_pairs_hook,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except MemoryError:
        raise
    except Exception:
        return False, None
    if _has_raw_surrogate(text) or _has_lone_surrogate_escape(text):
        return False, None
    return True, value


# --- Markdown fence -------------------------------------------------------------

_FENCE = "```"


def _split_first_line(text: str) -> tuple[str, str] | None:
    """Split at the first line ending (LF, CR or CRLF, as in CommonMark)."""
    newline = text.find("\n")
    carriage = text.find("\r", 0, newline if newline >= 0 else len(text))
    index = carriage if carriage >= 0 else newline
    if index < 0:
        return None
    width = 2 if text.startswith("\r\n", index) else 1
    return text[:index], text[index + width :]


def _strip_last_line_ending(text: str) -> str | None:
    if text.endswith("\r\n"):
        return text[:-2]
    if text.endswith(("\n", "\r")):
        return text[:-1]
    return None


_INNER_FENCE = re.compile(r"(?:\A|[\r\n])[^\S\r\n]*(?:```|~~~)")


def extract_json_text(text: str) -> str:
    """Return the JSON text of an agent message (spec §5 "General rules").

    Accepted: the JSON alone, or one Markdown fence — an opening line of
    exactly three backticks and an optional info string that is empty or
    ``json`` in any case (whitespace around it allowed), the JSON, and a
    closing line of exactly three backticks — with whitespace (as
    :meth:`str.strip` defines it) around either form.

    Line endings are LF, CR or CRLF (CommonMark's definition); other
    characters that :meth:`str.splitlines` treats as breaks (``\\u2028``, form
    feed …) do not end a fence line. Tildes, longer fences, another info
    string, an indented closing fence or any text outside the fence are
    rejected with path ``$``. The JSON itself is not checked here.
    """
    if not isinstance(text, str):
        raise PayloadError("$", f"expected text, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise PayloadError("$", "empty output")
    if stripped.startswith("~~~"):
        raise PayloadError("$", "only a ``` code fence is accepted, not ~~~")
    if not stripped.startswith(_FENCE):
        return stripped
    if stripped.startswith(_FENCE + "`"):
        raise PayloadError("$", "code fences longer than three backticks are not accepted")
    split = _split_first_line(stripped)
    if split is None:
        raise PayloadError("$", "code fence has no closing line")
    opening, rest = split
    info = opening[len(_FENCE) :].strip()
    if not (info == "" or (info.isascii() and info.lower() == "json")):
        raise PayloadError(
            "$", f"code fence info string must be empty or 'json', got {describe_value(info)}"
        )
    if not rest.endswith(_FENCE):
        if _FENCE in rest:
            raise PayloadError("$", "text after the code fence")
        raise PayloadError("$", "code fence has no closing line")
    body = _strip_last_line_ending(rest[: -len(_FENCE)])
    if body is None:
        if rest[: -len(_FENCE)].endswith("`"):
            raise PayloadError("$", "code fences longer than three backticks are not accepted")
        raise PayloadError("$", "closing code fence must be a line of exactly three backticks")
    if (_FENCE in body or "~~~" in body) and _INNER_FENCE.search(body):
        raise PayloadError("$", "only one code fence is accepted")
    if not body.strip():
        raise PayloadError("$", "empty code fence")
    return body


def parse_json_object(text: str) -> dict[str, JsonValue]:
    """Extract, strictly parse and require a JSON object: every payload's first step."""
    value = loads_strict(extract_json_text(text))
    if not isinstance(value, dict):
        raise PayloadError("$", f"expected a JSON object, got {json_type_name(value)}")
    return value
