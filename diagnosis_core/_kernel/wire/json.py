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

import collections.abc
import itertools
import json
import math
import operator
import re
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import PayloadError

__all__ = [
    "MAX_INT_DIGITS",
    "DuplicateKey",
    "JsonValue",
    "canonical_json",
    "extract_json_text",
    "has_surrogate",
    "int_from_literal",
    "int_to_text",
    "int_too_long",
    "loads_stored",
    "loads_strict",
    "loads_strict_with_objects",
    "parse_json_object",
]

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""Any value :func:`json.loads` can return (and :func:`canonical_json` can write)."""

if not TYPE_CHECKING:
    # At run time the inner references name this module, so they resolve here
    # whichever module ``get_type_hints`` reads a class's annotations in (its
    # public namespace, see ``_kernel/public.py``), not only where it is defined.
    _SELF = typing.ForwardRef("JsonValue", module=__name__)
    JsonValue = bool | int | float | str | list[_SELF] | dict[str, _SELF] | None


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


# Built once: ``json.dumps`` with options builds a new encoder at every call, which
# costs as much as encoding a small document (an agent input, an input hash).
_CANONICAL_ENCODER = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
)


def canonical_json(value: object) -> str:
    """Serialize ``value`` exactly as spec §6.6 prescribes.

    Keys sorted, non-ASCII kept, compact separators, no NaN: identical values
    give byte-identical text, which is what makes a technical retry's input
    identical and a trace hash reproducible.

    Integers follow the fixed digit limit of spec §5 (:data:`MAX_INT_DIGITS`),
    whatever the interpreter's own ``int_max_str_digits`` is: an integer of
    up to 4300 digits is written even when the interpreter would refuse it,
    and a longer one is refused even when the interpreter would write it.

    Raises:
        ValueError: for NaN or an infinite float (``allow_nan=False``), a
            circular structure, or an integer of more than 4300 digits.
        TypeError: for a value JSON cannot represent (a set, bytes, a
            non-string key that is not a scalar, an arbitrary object …).
    """
    try:
        text = _CANONICAL_ENCODER.encode(value)
    except (ValueError, RecursionError):
        # NaN, a cycle, an integer the interpreter will not convert, or nesting
        # deeper than the C encoder recurses: the exact encoder below (iterative)
        # says which, or writes the same text.
        return _canonical_json_exact(value)
    if (
        _may_hold_digit_run(text, MAX_INT_DIGITS)
        and (
            _LONG_INTEGER_TOKEN.compiled.search(text) is not None
            or _LONG_INTEGER_START.compiled.match(text) is not None
        )
        and _holds_long_integer(value)
    ):
        raise ValueError(f"an integer has more than {MAX_INT_DIGITS} digits")
    return text


# --- patterns of the rare paths ------------------------------------------------------


class LazyPattern:
    """A regular expression compiled when it is first used.

    For the patterns only rare paths need (a long integer, a surrogate
    escape, a syntax error's message, a second code fence): compiling them
    all at import would be a measurable part of ``import diagnosis_core``,
    which must stay cheap.
    """

    __slots__ = ("_compiled", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled once; a race compiles it twice, harmlessly)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source)
        return compiled


# --- the digit limit (spec §5, v1.1) ---------------------------------------------

MAX_INT_DIGITS = 4300
"""The longest integer literal (digits, sign excluded) any JSON text may hold (spec §5)."""

# Every interpreter converts at least 640 digits (the lowest setting allowed).
_SAFE_DIGITS = 600
_SAFE_POWER: int = 10**_SAFE_DIGITS
_TOO_LONG: int = 10**MAX_INT_DIGITS  # the smallest magnitude with 4301 digits
# In canonical text a number starts the document or follows ``[``, ``,`` or ``:``.
# A hit may also be inside a string; the exact walk over the value decides.
_LONG_INTEGER_TOKEN = LazyPattern(r"[\[,:]-?[0-9]{" + str(MAX_INT_DIGITS + 1) + "}")
_LONG_INTEGER_START = LazyPattern(r"-?[0-9]{" + str(MAX_INT_DIGITS + 1) + "}")
# A run of more digits than every interpreter converts. Without one, no literal
# can reach either limit and the C conversion is used (no Python hook per
# number); the lookbehind makes the scan linear (one try per run of digits), and
# coming after the first digit it leaves the engine its fast scan for a digit.
_UNSAFE_DIGIT_RUN = LazyPattern(r"[0-9](?<![0-9][0-9])[0-9]{" + str(_SAFE_DIGITS) + "}")
_ASCII_DIGIT = re.compile("[0-9]")


def _may_hold_digit_run(text: str, longer_than: int) -> bool:
    """False only when ``text`` has no run of more than ``longer_than`` ASCII digits.

    A run of ``longer_than + 1`` digits covers at least one whole aligned
    block of ``(longer_than + 1) // 2`` characters, and a block can only be
    all digits if its first character is one: so only the blocks whose first
    character (sampled by a strided slice, at C speed) is a digit are looked
    at. True means such a block is all digits; the caller's exact scan then
    decides. A text of mostly digits costs one Python step per block more.
    """
    if len(text) <= longer_than:
        return False
    block = (longer_than + 1) // 2
    for match in _ASCII_DIGIT.finditer(text[::block]):
        start = match.start() * block
        piece = text[start : start + block]
        if len(piece) == block and piece.isascii() and piece.isdigit():
            return True
    return False


def _has_long_digit_run(text: str) -> bool:
    """Whether ``text`` holds a run of more than ``_SAFE_DIGITS`` ASCII digits (exact)."""
    return (
        _may_hold_digit_run(text, _SAFE_DIGITS)
        and _UNSAFE_DIGIT_RUN.compiled.search(text) is not None
    )



def int_too_long(value: int) -> bool:
    """Whether ``value`` has more than :data:`MAX_INT_DIGITS` decimal digits.

    Decided on the value (a bit-length bound, then one comparison), never by
    converting it to text, so neither its size nor the interpreter's digit
    limit matters.
    """
    if value.bit_length() <= 14_280:  # < 2**14280 < 10**4299: at most 4299 digits
        return False
    return abs(value) >= _TOO_LONG


def int_from_literal(literal: str) -> int:
    """The value of a JSON integer literal, under the fixed digit limit of spec §5.

    Converts in chunks that every interpreter accepts, so the result does not
    depend on ``sys.get_int_max_str_digits()``; the cost is at most a few
    multiplications for 4300 digits.

    Raises:
        PayloadError: for a literal of more than :data:`MAX_INT_DIGITS` digits.
    """
    if len(literal) <= _SAFE_DIGITS:
        return int(literal)
    negative = literal.startswith("-")
    digits = literal[1:] if negative else literal
    if len(digits) > MAX_INT_DIGITS:
        raise PayloadError("$", f"an integer literal has more than {MAX_INT_DIGITS} digits")
    value = 0
    for start in range(0, len(digits), _SAFE_DIGITS):
        chunk = digits[start : start + _SAFE_DIGITS]
        value = value * 10 ** len(chunk) + int(chunk)
    return -value if negative else value


def int_to_text(value: int) -> str:
    """Decimal text of ``value``, whatever the interpreter's digit limit.

    Raises:
        ValueError: for more than :data:`MAX_INT_DIGITS` digits.
    """
    if int_too_long(value):
        raise ValueError(f"an integer has more than {MAX_INT_DIGITS} digits")
    magnitude = abs(value)
    if magnitude < _SAFE_POWER:
        return int.__repr__(value)
    chunks: list[str] = []
    while magnitude >= _SAFE_POWER:
        magnitude, chunk = divmod(magnitude, _SAFE_POWER)
        chunks.append(int.__repr__(chunk).zfill(_SAFE_DIGITS))
    chunks.append(int.__repr__(magnitude))
    return ("-" if value < 0 else "") + "".join(reversed(chunks))


def _holds_long_integer(value: object) -> bool:
    """Whether an integer of more than 4300 digits is anywhere in ``value`` (keys too)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if int_too_long(item):
                return True
        elif isinstance(item, list | tuple | dict):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            else:
                stack.extend(item)
    return False


class _Text:
    """Already-encoded output of :func:`_canonical_json_exact`; ``done`` ends a container."""

    __slots__ = ("done", "text")

    def __init__(self, text: str, done: int | None = None) -> None:
        self.text = text
        self.done = done


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int_to_text(key)
    if isinstance(key, float):
        return _float_text(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _float_text(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError("Out of range float values are not JSON compliant: " + repr(value))
    return float.__repr__(value)


def _canonical_json_exact(value: object) -> str:
    """:func:`canonical_json`'s text, built without the interpreter's digit limit.

    The slow twin of ``json.dumps`` with the same options (iterative, so
    depth is not a problem): used only when the fast call raised.
    """
    parts: list[str] = []
    active: set[int] = set()
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            parts.append(item.text)
            if item.done is not None:
                active.discard(item.done)
        elif isinstance(item, str):
            parts.append(json.dumps(item, ensure_ascii=False))
        elif item is None or item is True or item is False:
            parts.append(json.dumps(item))
        elif isinstance(item, int):
            parts.append(int_to_text(item))
        elif isinstance(item, float):
            parts.append(_float_text(item))
        elif isinstance(item, list | tuple | dict):
            if id(item) in active:
                raise ValueError("Circular reference detected")
            active.add(id(item))
            if isinstance(item, dict):
                pairs = sorted(item.items())
                stack.append(_Text("}", id(item)))
                for index in range(len(pairs) - 1, -1, -1):
                    key, child = pairs[index]
                    stack.append(child)
                    head = json.dumps(_key_text(key), ensure_ascii=False) + ":"
                    stack.append(_Text(head if index == 0 else "," + head))
                parts.append("{")
            else:
                stack.append(_Text("]", id(item)))
                for index in range(len(item) - 1, -1, -1):
                    stack.append(item[index])
                    if index:
                        stack.append(_Text(","))
                parts.append("[")
        else:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
    return "".join(parts)


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
    Never raises, whatever ``value`` is (a subclass overriding ``__repr__``,
    an integer the interpreter will not convert to text): a message that
    embeds a value must not fail itself.
    """
    try:
        if isinstance(value, str):
            text = str.__str__(value)
            return str.__repr__(text if len(text) <= limit else text[:limit] + "…")
        if isinstance(value, bool) or value is None:
            return "true" if value is True else "false" if value is False else "null"
        if isinstance(value, int) and -(10**15) < int.__int__(value) < 10**15:
            return int.__repr__(int.__int__(value))
        if isinstance(value, float) and math.isfinite(value):
            return float.__repr__(float.__float__(value))
        return json_type_name(value)
    except Exception:
        return "a value"


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


class DuplicateKey(_Problem):
    """What an ``object_pairs_hook`` of :func:`loads_strict_with_objects` raises for
    a duplicate key, so that the diagnostic pass locates it at once."""


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


def _strict_int(literal: str) -> int:
    try:
        return int_from_literal(literal)
    except PayloadError:
        raise _Problem from None


# A ``\uD8xx``..``\uDFxx`` escape somewhere in the text. Cheap (literal prefix);
# it may also hit an escaped backslash followed by ``ud800`` or a valid pair,
# which the exact check below tells apart.
_SURROGATE_ESCAPE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPED_BACKSLASH = LazyPattern(r"\\\\")
# A high escape not followed by a low one, or a low escape not preceded by a
# high one. Both branches start with the literal ``\\u[dD]`` (the lookbehind
# of the low branch covers it), so the engine scans for ``\\u`` at C speed.
_LONE_SURROGATE_ESCAPE = LazyPattern(
    r"\\u[dD](?:[89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD])[c-fC-F][0-9a-fA-F]{2})"
)
SURROGATE = re.compile("[\ud800-\udfff]")
"""The pattern of one surrogate code point, for the writers that escape them."""


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point, paired or not (the one shared check)."""
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
    if "\\" not in text:
        return False
    hint = _SURROGATE_ESCAPE_HINT.search(text)
    if hint is None:
        return False
    # Blanking keeps every offset, so no real escape starts before the first hint.
    blanked = _ESCAPED_BACKSLASH.compiled.sub("__", text) if "\\\\" in text else text
    return _LONE_SURROGATE_ESCAPE.compiled.search(blanked, hint.start()) is not None


class _Pairs(list[tuple[str, object]]):
    """An object as the diagnostic pass keeps it: its pairs, in document order."""


class _Constant(str):
    """A ``NaN`` / ``Infinity`` / ``-Infinity`` literal seen by the diagnostic pass."""


class _Overflow(str):
    """A number literal that overflows a double, seen by the diagnostic pass."""


class _LongInteger(str):
    """An integer literal of more than 4300 digits, seen by the diagnostic pass."""


def _diag_float(literal: str) -> object:
    value = float(literal)
    return _Overflow(literal) if math.isinf(value) else value


def _diag_int(literal: str) -> object:
    try:
        return int_from_literal(literal)
    except PayloadError:
        return _LongInteger(literal)


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# --- messages for text json.loads rejects (the error path only) --------------------
#
# What a prompt engineer reads all day: the problem, where it is, and — when there
# is only one way to read it — the fix. The stdlib's wording ("Expecting value",
# "Unterminated string starting at") never reaches the message.

_SEND_ONLY_JSON = "send only the JSON"


def _excerpt(text: str, limit: int = 20) -> str:
    """A short quoted excerpt of the text at a position, on one line."""
    head = text.lstrip()[: limit + 1]
    line = head.splitlines()[0] if head.splitlines() else ""
    cut = "".join(char if char.isprintable() else "?" for char in line[:limit].rstrip())
    more = len(line) > limit or len(line) < len(head.rstrip())
    return f'"{cut}…"' if more else f'"{cut}"'


def _line_column(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - text.rfind("\n", 0, position)
    return f"line {line} column {column}"


def _unclosed(text: str) -> str:
    """The brackets an unfinished document still has to close, innermost first."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    return "".join(reversed(stack))


_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
# The start of a literal or a number that the end of the text cut short.
_CUT_LITERAL = LazyPattern(
    r"t(?:r(?:u)?)?|f(?:a(?:l(?:s)?)?)?|n(?:u(?:l)?)?|-?[0-9]*\.?[0-9]*[eE]?[-+]?"
)


def _syntax_error(text: str, exc: json.JSONDecodeError) -> PayloadError:
    """One message for a text :func:`json.loads` rejected: problem, position, fix."""
    message, position = exc.msg, exc.pos
    where = f"line {exc.lineno} column {exc.colno}"
    rest = text[position:]
    end = len(text.rstrip())
    if (
        message.startswith("Unterminated string")
        or (position >= end and end > 0)
        or _CUT_LITERAL.compiled.fullmatch(text, position, end) is not None
        or (message.startswith("Invalid \\u") and end - text.rfind("\\", 0, end) <= 6)
    ):
        closers = _unclosed(text)
        inside = "inside a string" if message.startswith("Unterminated string") else "early"
        missing = f", with {closers!r} still to close" if closers else ""
        return PayloadError(
            "$",
            f"the JSON is cut off: the text ends {inside} at {_line_column(text, end)}"
            f"{missing} — the reply looks truncated (the model's output limit?); "
            "send the whole JSON",
        )
    if not text.strip():
        return PayloadError("$", "expected JSON, got empty text")
    if message == "Expecting value" and position == len(text) - len(text.lstrip()):
        word = rest[:5].rstrip(",]} \n")
        if word in _PYTHON_LITERALS or rest.startswith("'"):
            pass  # Python syntax, reported below
        else:
            opening = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
            if opening < 0:
                return PayloadError(
                    "$", f"expected JSON; the text is prose: {_excerpt(rest)} — {_SEND_ONLY_JSON}"
                )
            return PayloadError(
                "$",
                f"expected JSON; the text starts with prose {_excerpt(text[position:opening])} "
                f"(the JSON starts "
                f"at {_line_column(text, opening)}) — {_SEND_ONLY_JSON}",
            )
    if message == "Extra data":
        what = "a code fence" if rest.startswith("`") else "more text"
        return PayloadError(
            "$", f"{what} after the JSON, at {where}: {_excerpt(rest)} — {_SEND_ONLY_JSON}"
        )
    return PayloadError("$", f"invalid JSON at {where}: {_invalid(text, message, position)}")


def _invalid(text: str, message: str, position: int) -> str:
    """What is wrong at ``position`` of a text :func:`json.loads` rejected, and the fix."""
    rest = text[position:]
    for python, literal in _PYTHON_LITERALS.items():
        if rest.startswith(python):
            return f"{python} is Python; JSON writes {literal}"
    if rest.startswith("'"):
        return "single quotes; JSON strings and keys take double quotes"
    if rest[:1] in ("}", "]") and text[:position].rstrip()[-1:] == ",":
        return f"a comma before {rest[0]!r}; remove the trailing comma"
    if message == "Expecting ',' delimiter":
        if rest[:1] in ('"', "{", "[") or rest[:1].isdigit():
            return "a comma is missing between two values"
        return f"expected ',' or a closing bracket, found {_excerpt(rest)}"
    if message == "Expecting ':' delimiter":
        return f"expected ':' after the key, found {_excerpt(rest)}"
    if message.startswith("Expecting property name"):
        return f"expected a key in double quotes, found {_excerpt(rest)}"
    if message.startswith("Invalid control character"):
        return (
            f"a raw control character U+{ord(rest[0]):04X} in a string; "
            "escape it (\\n, \\t, \\u00XX)"
        )
    if message.startswith("Invalid \\"):
        start = text.rfind("\\", 0, position + 1)
        escape = text[start : start + 6] if message.startswith("Invalid \\u") else rest[:2]
        return f"an invalid escape {escape} in a string"
    if message == "Expecting value":
        return f"expected a value, found {_excerpt(rest)}"
    plain = message.removesuffix(" at").removesuffix(" starting")  # the stdlib's dangling words
    return f"{plain[:1].lower()}{plain[1:]}"


# The types a parse can give that may hold a problem (mapped to True); the
# others (int, float, bool, None) never do. ``dict`` is a value the fast path
# already accepted, ``_Pairs`` one the diagnostic parse built.
_MAY_HOLD_PROBLEM: dict[type, bool] = dict.fromkeys(
    (list, dict, _Pairs, _Constant, _Overflow, _LongInteger), True
)
_first = operator.itemgetter(0)
_second = operator.itemgetter(1)
_UNPARSED = object()


def _path_of(steps: list[str | int | None]) -> str:
    path = ""
    for step in steps:
        if isinstance(step, int):
            path = json_path_index(path, step)
        elif step is not None:
            path = json_path_key(path, step)
    return path or "$"


def _scalar_problem(value: object, surrogates_allowed: bool) -> str | None:
    if isinstance(value, _Constant):
        return f"{value} is not a JSON number"
    if isinstance(value, _Overflow):
        return f"number {_shorten(str(value))} is out of range"
    if isinstance(value, _LongInteger):
        return f"integer literal of {len(value.lstrip('-'))} digits (at most {MAX_INT_DIGITS})"
    if (
        isinstance(value, str)
        and not surrogates_allowed
        and not value.isascii()
        and SURROGATE.search(value)
    ):
        return "string contains an unpaired surrogate"
    return None


def _key_problem(keys: collections.abc.Iterable[str], surrogates_allowed: bool) -> str | None:
    """The first problem among an object's keys, in document order (None: none)."""
    seen: set[str] = set()
    for key in keys:
        if not surrogates_allowed and not key.isascii() and SURROGATE.search(key):
            return "object key contains an unpaired surrogate"
        if key in seen:
            return f"duplicate key {describe_value(key)}"
        seen.add(key)
    return None


def _diagnose(
    text: str,
    *,
    surrogates_allowed: bool = False,
    document: object = _UNPARSED,
    long_digits: bool | None = None,
) -> PayloadError:
    """Find the first problem in document order and say where it is.

    Only runs after the fast path rejected the text. When the fast path
    could not build the value (a duplicate key, ``NaN`` …) it costs one more
    parse; when it built it and only a surrogate check failed, the caller
    passes that value as ``document`` and there is no second parse. Then one
    walk, linear in the text: it keeps one iterator per open container and
    the steps that lead to it, builds a path string only for the problem it
    reports (a path per visited value would be quadratic in a deep and wide
    document), and skips the values that cannot hold a problem — numbers,
    and ASCII strings and keys — at C speed. It is iterative, because a
    document may nest as deep as the parser allows.
    """
    if document is _UNPARSED:
        if long_digits is None:  # the caller's scan of the text, when it made one
            long_digits = _has_long_digit_run(text)
        try:
            document = json.loads(text, object_pairs_hook=_Pairs, parse_constant=_Constant,
                                  parse_float=_diag_float,
                                  parse_int=_diag_int if long_digits else None)
        except RecursionError:
            return PayloadError("$", "nesting too deep")
        except json.JSONDecodeError as exc:
            # The fast path stopped at a problem (a duplicate key …) before reaching
            # a syntax error further on; the document is not JSON at all.
            return _syntax_error(text, exc)
    frames: list[collections.abc.Iterator[tuple[str | int | None, Any]]] = [
        iter(((None, document),))
    ]
    steps: list[str | int | None] = []  # steps[k] leads into the container of frames[k + 1]
    if not surrogates_allowed and not has_surrogate(text) and (
        "\\" not in text or _SURROGATE_ESCAPE_HINT.search(text) is None
    ):
        surrogates_allowed = True  # no string can hold one: skip the per-string checks
    visit = _MAY_HOLD_PROBLEM if surrogates_allowed else {**_MAY_HOLD_PROBLEM, str: True}
    may_hold = visit.get
    while frames:
        for step, value in frames[-1]:
            kind = type(value)
            if kind is list:
                # A container whose values cannot be wrong (numbers, and strings when
                # no surrogate is possible) gets no frame: the common case of a wide
                # document of small containers.
                if not any(map(may_hold, map(type, value))):
                    continue
                steps.append(step)
                frames.append(itertools.compress(
                    enumerate(value), map(may_hold, map(type, value))
                ))
                break
            if kind is _Pairs or kind is dict:
                # Keys first (a key problem is at the object itself), decided at C
                # speed for ASCII keys without duplicates (a ``dict`` has none).
                if kind is dict:
                    pairs = value.items()
                    clear = surrogates_allowed or all(map(str.isascii, value))
                else:
                    pairs = value
                    clear = (
                        surrogates_allowed or all(map(str.isascii, map(_first, value)))
                    ) and len(dict(value)) == len(value)
                if not clear:
                    problem = _key_problem(map(_first, pairs), surrogates_allowed)
                    if problem is not None:
                        return PayloadError(_path_of([*steps, step]), problem)
                if not any(map(may_hold, map(type, map(_second, pairs)))):
                    continue
                steps.append(step)
                frames.append(itertools.compress(
                    pairs, map(may_hold, map(type, map(_second, pairs)))
                ))
                break
            problem = _scalar_problem(value, surrogates_allowed)
            if problem is not None:
                return PayloadError(_path_of([*steps, step]), problem)
        else:
            frames.pop()
            if steps:
                steps.pop()
    return PayloadError("$", "invalid JSON")  # pragma: no cover - the fast path found something


def loads_strict(text: str) -> JsonValue:
    """Parse one JSON document under the protocol's rules (spec §5).

    Rejected, each as a :class:`PayloadError` whose path locates the problem
    where that is known: invalid JSON (with line and column), a duplicate key
    in any object, ``NaN`` / ``Infinity`` / ``-Infinity``, a number that
    overflows a double, a lone surrogate in any string or key (escaped or
    raw), an integer literal of more than 4300 digits (whatever the
    interpreter's own limit), and nesting deeper than the parser allows.
    Time and memory are linear in the text, rejected or not.
    :class:`MemoryError` is not caught.

    This is the parser of *agent output* (hostile input). Text the package
    wrote itself (states, trace reports) is read with :func:`loads_stored`.

    Guarantee: a returned value contains no surrogates and no non-finite float,
    so :func:`canonical_json` can always serialize it.
    """
    return _loads(text, stored=False)


def loads_stored(text: str) -> JsonValue:
    """Parse JSON text of *stored facts*: what :func:`to_json` and the run journal write.

    Exactly :func:`loads_strict`, except that an escaped unpaired surrogate
    (``"\\ud800"``) is accepted and kept as that one code point. The core
    keeps such strings on purpose: an exception message or a gatekeeper
    result may hold one, and a state, a trace or a journal must record it
    exactly (spec §15). Every other rule holds, and a duplicate key, ``NaN``
    or a bad number is reported at its path (a key or path holding a lone
    surrogate is named as it is). Agent payloads never go through this
    function, so for them a lone surrogate stays invalid (spec §5). A *raw*
    surrogate code point in the text is still rejected: the package never
    writes one (its stored text always encodes as UTF-8).
    """
    return _loads(text, stored=True)


_DECODERS: dict[Callable[[list[tuple[str, Any]]], object], json.JSONDecoder] = {}
_MAX_DECODERS = 32


def _strict_decode(
    text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], object], long_digits: bool
) -> Any:
    """``json.loads`` of ``text`` with the strict hooks and ``object_pairs_hook``.

    Exactly that call, without building a decoder each time: in the common
    case (no long digit run, no byte order mark, which ``json.loads`` refuses
    before decoding) a decoder kept per hook decodes the text. That is a few
    microseconds of every small payload.
    """
    if long_digits or text.startswith("\ufeff"):
        return json.loads(
            text,
            object_pairs_hook=object_pairs_hook,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_strict_int if long_digits else None,
        )
    function = type(object_pairs_hook) is types.FunctionType  # hashable by identity
    decoder = _DECODERS.get(object_pairs_hook) if function else None
    if decoder is None:
        decoder = json.JSONDecoder(
            object_pairs_hook=object_pairs_hook,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
        if function and len(_DECODERS) < _MAX_DECODERS:  # a fresh hook per call is not kept
            _DECODERS[object_pairs_hook] = decoder
    return decoder.decode(text)


def _loads(text: str, *, stored: bool) -> JsonValue:
    if not isinstance(text, str):
        raise PayloadError("$", f"expected text, got {type(text).__name__}")
    long_digits = _has_long_digit_run(text)
    try:
        value: JsonValue = _strict_decode(text, _strict_pairs, long_digits)
    except json.JSONDecodeError as exc:
        raise _syntax_error(text, exc) from None
    except _Problem:
        raise _diagnose(text, surrogates_allowed=stored, long_digits=long_digits) from None
    except RecursionError:
        raise PayloadError("$", "nesting too deep") from None
    if stored:
        if has_surrogate(text):
            raise PayloadError(
                "$", "text contains a raw surrogate code point (stored JSON escapes them)"
            )
    elif has_surrogate(text) or _has_lone_surrogate_escape(text):
        # The value was built (no duplicate key, no bad number): walk it, no second parse.
        raise _diagnose(text, document=value)
    return value


def loads_strict_with_objects(
    text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], object]
) -> tuple[bool, object]:
    """:func:`loads_strict` with a custom object constructor, for one-pass parsing.

    Returns ``(True, value)`` when :func:`loads_strict` would accept ``text``
    and the hook raised nothing. When this pass already shows that
    :func:`loads_strict` rejects ``text`` — invalid JSON, a bad number, a
    lone surrogate, or a :class:`DuplicateKey` from the hook — it raises the
    :class:`PayloadError` :func:`loads_strict` would raise (same path, same
    message) without parsing the text again. Otherwise (the hook raised
    something else, nesting too deep) it returns ``(False, None)``: the caller
    then runs :func:`loads_strict` for the error and its path. The hook
    receives each object's key/value pairs, as ``object_pairs_hook`` of
    :func:`json.loads`, and must raise :class:`DuplicateKey` on a duplicate
    key; every other rule (constants, overflow, surrogates, depth) is applied
    here. :class:`MemoryError` is not caught.
    """
    if not isinstance(text, str):
        return False, None
    long_digits = _has_long_digit_run(text)
    try:
        value = _strict_decode(text, object_pairs_hook, long_digits)
    except MemoryError:
        raise
    except json.JSONDecodeError as exc:
        # No hook raised before the syntax error, so the strict hooks would not either.
        raise _syntax_error(text, exc) from None
    except _Problem:
        # A bad number or a duplicate key: the strict pass stops at the same event.
        raise _diagnose(text, long_digits=long_digits) from None
    except Exception:
        return False, None
    if has_surrogate(text) or _has_lone_surrogate_escape(text):
        # Every other rule held (the hook raises on a duplicate key), so the plain
        # parse builds the value the strict one would: walk it for the surrogate.
        document = json.loads(text, parse_int=int_from_literal if long_digits else None)
        raise _diagnose(text, document=document)
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


_INNER_FENCE = LazyPattern(r"(?:\A|[\r\n])[^\S\r\n]*(?:```|~~~)")


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
            "$",
            f"a code fence labelled {describe_value(info)} at line 1: only a ```json fence "
            "(or the bare JSON) is accepted — label the fence json",
        )
    if not rest.endswith(_FENCE):
        if _FENCE in rest:
            after = _excerpt(rest[rest.rfind(_FENCE) + len(_FENCE) :])
            raise PayloadError("$", f"text after the code fence: {after} — {_SEND_ONLY_JSON}")
        raise PayloadError("$", "code fence has no closing line")
    body = _strip_last_line_ending(rest[: -len(_FENCE)])
    if body is None:
        if rest[: -len(_FENCE)].endswith("`"):
            raise PayloadError("$", "code fences longer than three backticks are not accepted")
        raise PayloadError("$", "closing code fence must be a line of exactly three backticks")
    if (_FENCE in body or "~~~" in body) and _INNER_FENCE.compiled.search(body):
        raise PayloadError("$", "only one code fence is accepted")
    if not body.strip():
        raise PayloadError("$", "empty code fence")
    return body


def parse_json_object(text: str) -> dict[str, JsonValue]:
    """Extract, strictly parse and require a JSON object: every payload's first step."""
    value = loads_strict(extract_json_text(text))
    if not isinstance(value, dict):
        raise _not_an_object(value)
    return value


# --- the one writer of stored text (spec §6.6, §12) ------------------------------------


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def stored_json(value: object) -> str:
    """Canonical JSON (§6.6) in which every surrogate code point is a ``\\uXXXX`` escape.

    Identical to :func:`canonical_json` for text without surrogates; with
    them, still valid JSON and encodable as UTF-8. This is the text a journal
    is written as, and the text its MACs are computed over.
    """
    return escape_surrogates(canonical_json(value))


def stored_json_with(value: object, slot: str, text: str) -> str:
    """:func:`stored_json` of ``value`` in which the string ``slot`` stands for ``text``.

    ``text`` is canonical JSON written already (a recorded gatekeeper result):
    it is spliced in, its surrogates escaped as :func:`stored_json` escapes
    them, instead of being decoded and encoded again. ``slot`` must be a string
    that occurs nowhere else in ``value``; its first occurrence is replaced.
    """
    return stored_json(value).replace(stored_json(slot), escape_surrogates(text), 1)


def escape_surrogates(text: str) -> str:
    """``text`` with every surrogate code point written as a ``\\uXXXX`` escape (JSON text).

    Text without one (nearly all) is returned as it is, after the same cheap
    test the parser makes (:func:`has_surrogate`).
    """
    if has_surrogate(text):
        return SURROGATE.sub(_escape_surrogate, text)
    return text


def sha256_text(text: str) -> str:
    """SHA-256 hex of ``text`` as UTF-8, a lone surrogate encoded as is (the trace's hashes).

    ``hashlib`` is imported here, not at the top: loading it loads OpenSSL, a
    noticeable share of ``import diagnosis_core`` for a host that never hashes
    before its first run (issue floor: import ≤ 2× ``import cattrs``).
    """
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _not_an_object(value: JsonValue) -> PayloadError:
    """The message for a document that is not an object (the error path only)."""
    problem = f"expected a JSON object, got {json_type_name(value)}"
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict):
            problem = (
                "expected a JSON object, got an array holding one object — "
                "send that object without the [ ] around it"
            )
        else:
            problem = (
                f"expected a JSON object, got an array of {len(value)} "
                f"item{'' if len(value) == 1 else 's'} — send one object"
            )
    return PayloadError("$", problem)
