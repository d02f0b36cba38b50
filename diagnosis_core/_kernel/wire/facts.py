"""One fact codec and one definition of a storable JSON value (spec §12.1, v1.2).

A *fact* is what an effect returned: an agent's text or error, the
gatekeeper's result or error, a tool invocation. The journal stores facts as
JSON, and the state is the fold of the journal; so the machine must be fed
exactly the value that the stored bytes decode to — live, replayed, resumed
and in every adapter — never the host object the fact came from. The
functions here turn a host value into that value; the drivers call them the
moment an effect returns, so the live run, the journal and its fold see one
value by construction.

**Storable JSON value.** One definition serves the tool recorder, the
journal, the converters and the stores (:func:`storable_problem`):

* types: ``None``, ``bool``, ``int``, finite ``float``, ``str``, a ``dict``
  with ``str`` keys, a ``list`` (``tuple`` is written as an array);
* integers of at most 4300 digits (spec §5, whatever the interpreter allows);
* nesting at most :data:`MAX_JSON_DEPTH` containers deep, so that the
  stored text can be read back by every reader of the package (the
  standard decoder recurses once per level);
* at most :data:`MAX_STORED_CHARS` characters of strings and keys plus one
  per value (a bound on the stored text);
* no string or key holding a high surrogate directly followed by a low
  surrogate as two code points: JSON escapes are UTF-16 units, so that pair
  is written ``\\ud83d\\ude00`` and read back as the one character U+1F600 —
  a different value.

**Decisions (fail closed).**

* A string holding such a pair is never stored as is. For the facts whose
  text the core keeps (an agent's reply or error message, a gatekeeper
  error message, a tool's error message, the strings of a gatekeeper
  result), :func:`repair_text` puts U+FFFD REPLACEMENT CHARACTER between
  the two code points: both stay lone surrogates, which JSON stores and
  reloads exactly (as ``\\ud83d`` and ``\\ude00``), and which every parser
  of the core treats as invalid, as it treated the pair (an agent reply
  stays ``INVALID_OUTPUT``, a gatekeeper result ``GATEKEEPER_INVALID_RESULT``).
  The value the machine sees is the repaired one, live and reloaded.
* A tool output or input outside the definition is refused by the tool
  recorder when the tool returns (or before it runs, for the input): see
  ``_tools.py``.
* A gatekeeper result outside the definition (a non-JSON type, a non-string
  key, ``NaN``, a too-long integer, a cycle, nesting or size over the
  limits, or a host mapping that cannot be read) is fed — and stored — as
  ``{"unserializable": "<description>"}``, which the gatekeeper
  normalization reports as ``GATEKEEPER_INVALID_RESULT``.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from ..errors import ConfigError
from .json import has_surrogate, int_too_long

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_STORED_CHARS",
    "has_surrogate_pair",
    "not_text_message",
    "pair_location",
    "plain_json_copy",
    "refuse_surrogate_pairs",
    "repair_text",
    "storable",
    "storable_problem",
]

MAX_JSON_DEPTH: Final = 512
"""The deepest nesting of arrays and objects a stored value may have (spec §12.1)."""

MAX_STORED_CHARS: Final = 64 * 1024 * 1024
"""The size bound of a stored value: characters of its strings and keys plus one per value."""

_PAIR = re.compile("([\ud800-\udbff])(?=[\udc00-\udfff])")


def has_surrogate_pair(text: str) -> bool:
    """Whether a high surrogate is directly followed by a low one (not storable as is)."""
    return has_surrogate(text) and _PAIR.search(text) is not None


def repair_text(text: str) -> str:
    """``text`` as it is stored: U+FFFD between a high surrogate and the low one after it.

    The identity for every text JSON stores faithfully (all text without
    such a pair, lone surrogates included), so existing facts keep their
    exact bytes. Idempotent. A ``str`` subclass becomes the plain string.
    """
    plain = text if type(text) is str else str.__str__(text)
    return _PAIR.sub("\\1\ufffd", plain) if has_surrogate(plain) else plain


def not_text_message(value: object) -> str:
    """The recorded error of an agent that returned something other than text.

    A journal holds text only, so such a reply is the fact "a non-retryable
    ``TypeError``" — live, journaled and folded alike (spec §12.1).
    """
    return f"TypeError: the agent returned {type(value).__name__}, not message text"


class _Exit:
    """Work item: leave a container (its id is no longer on the current path)."""

    __slots__ = ("container_id",)

    def __init__(self, container_id: int) -> None:
        self.container_id = container_id


def _scalar_problem(value: object) -> str | None:
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return None
    if kind is int:
        return "an integer of more than 4300 digits" if int_too_long(value) else None  # type: ignore[arg-type]
    if kind is float:
        return None if math.isfinite(value) else "a non-finite number"  # type: ignore[arg-type]
    return f"a value of type {type(value).__name__}"


_Work: TypeAlias = "_Exit | tuple[Any, Any, Any, int]"


def _store(parent: Any, slot: Any, value: Any, root: Any) -> Any:
    """Put a repaired value in place of the old one; returns the (new) root."""
    if parent is None:
        return value
    parent[slot] = value
    return root


def storable(value: object, repair: bool) -> tuple[object, str | None]:
    """Walk a plain value (exact built-ins) once: its problem, repairing strings if asked.

    With ``repair``, strings and keys holding a surrogate pair are repaired in
    place (the value must be a private copy); without it, such a string is a
    problem. Iterative: any depth is walked without recursion.
    """
    size = 0
    active: set[int] = set()
    work: list[_Work] = [(value, None, None, 1)]
    root: Any = value
    while work:
        item = work.pop()
        if isinstance(item, _Exit):
            active.discard(item.container_id)
            continue
        node, parent, slot, depth = item
        kind = type(node)
        if kind is str:
            size += len(node) + 1
            if has_surrogate_pair(node):
                if not repair:
                    return root, "a string holding a surrogate pair JSON cannot store"
                root = _store(parent, slot, repair_text(node), root)
        elif kind is dict or kind is list or kind is tuple:
            if depth > MAX_JSON_DEPTH:
                return root, f"nesting deeper than {MAX_JSON_DEPTH}"
            if id(node) in active:
                return root, "a circular reference"
            active.add(id(node))
            work.append(_Exit(id(node)))
            size += 1
            if kind is dict:
                pairs = list(node.items())
                for key, _child in pairs:
                    if type(key) is not str:
                        return root, f"an object key of type {type(key).__name__}"
                    size += len(key)
                if any(has_surrogate_pair(key) for key, _child in pairs):
                    if not repair:
                        return root, "a key holding a surrogate pair JSON cannot store"
                    fixed = {repair_text(key): child for key, child in pairs}
                    if len(fixed) != len(pairs):
                        return root, "two keys that are stored as one"
                    root = _store(parent, slot, fixed, root)
                    node = fixed
                work.extend((child, node, key, depth + 1) for key, child in pairs)
            elif kind is tuple:
                if repair:  # pragma: no cover - a snapshot holds lists only
                    return root, "an array given as a tuple"
                work.extend((child, None, None, depth + 1) for child in node)
            else:
                work.extend((child, node, index, depth + 1) for index, child in enumerate(node))
        else:
            size += 1
            problem = _scalar_problem(node)
            if problem is not None:
                return root, problem
        if size > MAX_STORED_CHARS:
            return root, f"larger than {MAX_STORED_CHARS} characters"
    return root, None


def plain_json_copy(value: object) -> object:
    """A deep copy of a plain JSON value (dicts, lists, scalars), iteratively.

    Containers of other types are copied as they are read (a ``tuple`` stays
    a ``tuple`` of copies); scalars are shared (they are immutable).
    """
    if type(value) is not dict and type(value) is not list:
        return value
    root: list[object] = [None]
    copies: dict[int, object] = {}  # shared and circular sub-values keep their shape
    work: list[tuple[object, Any, Any]] = [(value, root, 0)]
    while work:
        node, parent, slot = work.pop()
        copy: object
        if type(node) is dict or type(node) is list:
            known = copies.get(id(node))
            if known is not None:
                parent[slot] = known
                continue
            if type(node) is dict:
                mapping: dict[object, object] = dict(node)
                work.extend((child, mapping, key) for key, child in mapping.items())
                copy = mapping
            else:
                items = list(node)
                work.extend((child, items, index) for index, child in enumerate(items))
                copy = items
            copies[id(node)] = copy
        else:
            copy = node
        parent[slot] = copy
    return root[0]


def pair_location(
    value: object, holds: Callable[[str], bool] = has_surrogate_pair
) -> str | None:
    """The path of the first string or key holding a surrogate pair in plain JSON, or None.

    For request material (spec §12.1): a question, a history message or a run
    id JSON would read back as another text is refused where it is built.
    Iterative; containers other than ``dict``/``list`` are not entered.
    ``holds`` is the test (``has_surrogate``: any surrogate, lone ones too).
    """
    work: list[tuple[object, str]] = [(value, "$")]
    while work:
        node, path = work.pop()
        if type(node) is str:
            if holds(node):
                return path
        elif type(node) is dict:
            for key, child in node.items():
                where = f"{path}.{key}" if type(key) is str and key.isidentifier() else path
                if type(key) is str and holds(key):
                    return where
                work.append((child, where))
        elif type(node) is list:
            work.extend((child, f"{path}[{index}]") for index, child in enumerate(node))
    return None


def refuse_surrogate_pairs(wire: object, what: str) -> None:
    """:class:`ConfigError` naming the place of a surrogate pair in ``wire`` (request material)."""
    where = pair_location(wire)
    if where is not None:
        raise ConfigError(
            f"{what}{where[1:]}: holds a high surrogate directly followed by a low one, "
            "which JSON reads back as another character (spec §12.1)"
        )


def storable_problem(value: object) -> str | None:
    """Why ``value`` is not a storable JSON value (see the module docstring), or None.

    Reads exact built-ins only: a subclass of ``dict``, ``list``, ``str``,
    ``int`` or ``float`` is a problem here (callers that accept host values
    copy them to plain built-ins first). Linear in the value; never raises.
    """
    _, problem = storable(value, repair=False)
    return problem
