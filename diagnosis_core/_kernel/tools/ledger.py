"""The §13 tool ledger: what the tools of a run really returned, as frozen values.

Both workflows check citations against a ledger (the chat gatekeeper, the
AIOps rule evaluator); a tool recorder writes one and a scenario or journal
reads one back. Reading is strict and fails closed.

Decisions where the spec is silent:

* **Immutability.** :class:`ToolInvocation` deep-freezes ``output`` and
  ``input`` (objects become read-only ``MappingProxyType`` views,
  arrays become tuples, key order is kept) and compares/hashes them by their
  canonical JSON text, so invocations and ledgers are hashable values.
  Freezing is iterative (any nesting depth); cycles, non-string keys,
  non-finite floats and non-JSON types are a :class:`LedgerError`; string,
  int and float subclasses are stored as the plain built-in value.
  :meth:`ToolInvocation.to_record` gives back a plain, mutable JSON record.
* **Records.** One record type, :class:`ToolInvocation`, with exactly the
  fields of spec §13 (what a tool recorder writes, what a scenario's
  ``tool_ledger`` holds). :func:`ledger_from_records` is strict like a
  scenario: any other key in a record is an error naming it (the pre-§13
  names ``input_params``, ``output_preview``, ``output_length``,
  ``trace_id`` and a string ``error`` are not read as aliases: fail
  closed); ``null`` for an optional field means absent; ``output`` is
  required (``null`` allowed); ``duration_ms`` is a number ≥ 0.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Final, TypeAlias

import attrs

from ..errors import LedgerError
from ..wire.facts import MAX_JSON_DEPTH, MAX_STORED_CHARS, has_surrogate_pair
from ..wire.json import JsonValue, canonical_json, describe_value, json_type_name

__all__ = [
    "LEDGER_RECORD_KEYS",
    "NAME_SEGMENT",
    "FrozenJson",
    "ToolCallError",
    "ToolInvocation",
    "ToolLedger",
    "canonical_key",
    "freeze_json_field",
    "invocation_from_record",
    "ledger_from_records",
    "thaw_json",
]

FrozenJson: TypeAlias = (
    "bool | int | float | str | tuple[FrozenJson, ...] | Mapping[str, FrozenJson] | None"
)
"""A deep-frozen JSON value: tuples for arrays, read-only mappings for objects."""

PathSegment: TypeAlias = str | int
_Chain: TypeAlias = "tuple[_Chain, PathSegment] | None"


# --- JSON freezing ------------------------------------------------------------

NAME_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")  # a path segment written `.name` (spec §9)
_MAX_INT = 10**4300  # spec §5: an integer literal of more than 4300 digits is invalid


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _render_location(chain: _Chain) -> str:
    """Turn the parent chain ``(parent_chain, segment)`` into ``$.a[0]['b c']``."""
    segments: list[PathSegment] = []
    while chain is not None:
        chain, segment = chain
        segments.append(segment)
    text = "$"
    for segment in reversed(segments):
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif NAME_SEGMENT.fullmatch(segment):
            text += f".{segment}"
        else:
            text += f"[{_short(segment, 30)}]"
    return text


_Slot: TypeAlias = "list[FrozenJson] | dict[str, FrozenJson]"


class _Close:
    """Work item: every child of a container has been frozen; seal it."""

    __slots__ = ("container_id", "items", "parent", "slot")

    def __init__(self, container_id: int, items: _Slot, parent: _Slot, slot: int | str) -> None:
        self.container_id = container_id
        self.items = items
        self.parent = parent
        self.slot = slot


class _NotScalar(enum.Enum):
    CONTAINER = "CONTAINER"


def _scalar(value: object) -> FrozenJson | _NotScalar:
    """A JSON scalar as an exact built-in type, ``CONTAINER`` for objects/arrays.

    Subclasses are converted through the base type's own method, so an
    overridden ``__str__``/``__int__`` cannot change the recorded value.
    Raises ValueError for anything else.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value if type(value) is str else str.__str__(value)
        if has_surrogate_pair(text):  # spec §12.1: JSON would read it back as another text
            raise ValueError("a string holding a surrogate pair JSON cannot store")
        return text
    if isinstance(value, bool):  # before int; bool cannot be subclassed
        return value
    if isinstance(value, int):
        number = value if type(value) is int else int.__int__(value)
        if not -_MAX_INT < number < _MAX_INT:  # spec §5, checked here: no second walk
            raise ValueError("an integer of more than 4300 digits")
        return number
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite number")
        return value if type(value) is float else float.__float__(value)
    if isinstance(value, Mapping | list | tuple):
        return _NotScalar.CONTAINER
    raise ValueError(f"unsupported type {type(value).__name__}")


def _set(container: _Slot, slot: int | str, value: FrozenJson) -> None:
    container[slot] = value  # type: ignore[index]


def _freeze_json(value: object) -> FrozenJson:
    """A deep-frozen copy of a JSON value, built iteratively.

    Objects become read-only mappings (key order kept), arrays tuples, and
    scalars their exact built-in type. Raises ValueError with the location of
    anything that is not a storable JSON value (spec §12.1, ``_facts.py``):
    a non-string key, a non-finite float, other types, a cycle, a string
    holding a surrogate pair, nesting deeper than ``MAX_JSON_DEPTH`` or more
    than ``MAX_STORED_CHARS``. Shared sub-values that are not cycles are copied.
    """
    root: list[FrozenJson] = [None]
    open_ids: set[int] = set()
    size = 0
    work: list[_Close | tuple[object, _Slot, int | str, _Chain, int]] = [(value, root, 0, None, 1)]
    while work:
        item = work.pop()
        if isinstance(item, _Close):
            open_ids.discard(item.container_id)
            items = item.items
            frozen = tuple(items) if isinstance(items, list) else MappingProxyType(items)
            _set(item.parent, item.slot, frozen)
            continue
        node, parent, slot, chain, depth = item
        try:
            scalar = _scalar(node)
        except ValueError as error:
            raise ValueError(f"{_render_location(chain)}: {error}") from None
        if scalar is not _NotScalar.CONTAINER:
            _set(parent, slot, scalar)
            continue
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"{_render_location(chain)}: nesting deeper than {MAX_JSON_DEPTH}")
        if id(node) in open_ids:
            raise ValueError(f"{_render_location(chain)}: circular reference")
        open_ids.add(id(node))
        children: list[tuple[int | str, object]]
        container: _Slot
        if isinstance(node, Mapping):
            container = {}
            children = []
            for key, child in node.items():
                if not isinstance(key, str):
                    where = _render_location(chain)
                    raise ValueError(f"{where}: object key of type {type(key).__name__}")
                plain_key = str.__str__(key)
                if has_surrogate_pair(plain_key):
                    where = _render_location(chain)
                    raise ValueError(f"{where}: a key holding a surrogate pair JSON cannot store")
                children.append((plain_key, child))
        else:
            assert isinstance(node, list | tuple)
            container = [None] * len(node)
            children = list(enumerate(node))
        size += len(children) + 1
        work.append(_Close(id(node), container, parent, slot))
        for key, child in children:
            try:
                scalar = _scalar(child)
            except ValueError as error:
                raise ValueError(f"{_render_location((chain, key))}: {error}") from None
            if isinstance(key, str):
                size += len(key)
            if isinstance(scalar, str):
                size += len(scalar)
            if scalar is _NotScalar.CONTAINER:
                # A placeholder now, so the key order of a mapping is kept.
                _set(container, key, None)
                work.append((child, container, key, (chain, key), depth + 1))
            else:
                _set(container, key, scalar)
        if size > MAX_STORED_CHARS:
            raise ValueError(f"$: larger than {MAX_STORED_CHARS} characters")
    return root[0]


def canonical_key(value: FrozenJson) -> str:
    """Equality/hash key of a frozen JSON field: the canonical JSON text of its plain copy."""
    return canonical_json(thaw_json(value))


def thaw_json(value: FrozenJson) -> object:
    """A plain, mutable copy (dicts and lists) of a frozen JSON value, iteratively."""
    if not isinstance(value, Mapping | tuple):
        return value
    root: list[object] = [None]
    work: list[tuple[object, list[object] | dict[str, object], int | str]] = [(value, root, 0)]
    while work:
        node, parent, slot = work.pop()
        copy: object
        if isinstance(node, Mapping):
            mapping: dict[str, object] = {}
            for key, child in node.items():
                mapping[key] = None
                work.append((child, mapping, key))
            copy = mapping
        elif isinstance(node, tuple):
            items: list[object] = [None] * len(node)
            for index, child in enumerate(node):
                work.append((child, items, index))
            copy = items
        else:
            copy = node
        parent[slot] = copy  # type: ignore[index]
    return root[0]


# --- ledger -----------------------------------------------------------------


def _json_type(value: object) -> str:
    """The JSON name of a value's type, for messages; any mapping (a frozen one) is an object."""
    return "object" if isinstance(value, Mapping) else json_type_name(value)


def freeze_json_field(name: str, value: object) -> FrozenJson:
    """Deep-freeze a JSON field, or raise LedgerError naming it (and the location inside)."""
    try:
        frozen = _freeze_json(value)
    except ValueError as error:  # raised by _freeze_json with a location
        raise LedgerError(f"{name}: not a JSON value at {error}") from None
    except Exception as error:
        raise LedgerError(f"{name}: unreadable ({type(error).__name__})") from None
    return frozen


def _freeze_output(value: object) -> FrozenJson:
    return freeze_json_field("output", value)


def _freeze_input(value: object) -> FrozenJson:
    return freeze_json_field("input", value)


def _exact_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise LedgerError(f"{name}: expected a string, got {_json_type(value)}")
    return str.__str__(value)


@attrs.frozen
class ToolCallError:
    """Why a recorded tool call failed: ``{"type", "message"}`` on the wire (spec §13).

    ``type`` is the exception's class (module-qualified, builtins bare) and
    ``message`` its text, both exact strings. Construction raises
    :class:`LedgerError` for anything else.
    """

    type: str
    message: str

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "type", _exact_str(self.type, "error.type"))
        object.__setattr__(self, "message", _exact_str(self.message, "error.message"))


def _check_duration(value: object) -> None:
    """``duration_ms`` is a number >= 0 (spec §9 v1.1): an int, or a finite float."""
    if value is None:
        return
    # An int is compared as is (math.isfinite would overflow on a huge one).
    number = not isinstance(value, bool) and (
        (isinstance(value, int) and 0 <= value < _MAX_INT)
        or (isinstance(value, float) and math.isfinite(value) and value >= 0)
    )
    if not number:
        shown = describe_value(value) if isinstance(value, int | float) else _json_type(value)
        shown = _json_type(value) if isinstance(value, bool) else shown
        raise LedgerError(f"duration_ms: expected a number >= 0, got {shown}")


@attrs.frozen
class ToolInvocation:
    """One recorded tool call: a §13 ledger entry, the one record type of every ledger.

    The fields are exactly those of spec §13 (= the ``tool_ledger`` entries of
    §9 v1.1): ``invocation_id``, ``tool_name``, ``success``, ``output``, and
    the audit fields a recorder writes, ``input`` (any JSON value; ``None``
    means absent), ``error`` (a :class:`ToolCallError`) and ``duration_ms``
    (a number ≥ 0, only when the host gave a clock). The reference
    gatekeeper reads ``invocation_id``, ``tool_name``, ``success`` and
    ``output`` only; the audit fields are kept so that a ledger, a scenario
    and a journal carry the same facts.

    ``output`` and ``input`` accept any JSON value and are deep-frozen on
    construction (the caller's objects are copied, never kept); they are
    compared and hashed by their canonical JSON text, so the value is
    immutable and hashable. ``error`` on a successful call is a
    contradiction and refused; a failed call may omit it (a hand-written
    scenario may not know why a tool failed; a recorder always writes it).
    Construction raises :class:`LedgerError` naming the field for anything
    malformed, an integer of more than 4300 digits included (spec §5).
    """

    invocation_id: str
    tool_name: str
    success: bool
    output: FrozenJson = attrs.field(converter=_freeze_output, eq=canonical_key, repr=False)
    input: FrozenJson = attrs.field(
        default=None, converter=_freeze_input, eq=canonical_key, repr=False
    )
    error: ToolCallError | None = None
    duration_ms: int | float | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("invocation_id", "tool_name"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise LedgerError(f"{name}: expected a non-empty string, got {_json_type(value)}")
            object.__setattr__(self, name, str.__str__(value))
        if not isinstance(self.success, bool):
            raise LedgerError(f"success: expected a boolean, got {_json_type(self.success)}")
        if self.error is not None:
            if type(self.error) is not ToolCallError:
                raise LedgerError(
                    f"error: expected a ToolCallError, got {type(self.error).__name__}"
                )
            if self.success:
                raise LedgerError("error: present on a successful call")
        _check_duration(self.duration_ms)

    def to_record(self) -> dict[str, JsonValue]:
        """The §13 wire entry, the inverse of one :func:`ledger_from_records` entry.

        ``input``, ``error`` and ``duration_ms`` appear only when present;
        ``output`` always (``null`` included). A fresh, plain JSON value.
        """
        record: dict[str, JsonValue] = {
            "invocation_id": self.invocation_id,
            "tool_name": self.tool_name,
            "success": self.success,
            "output": thaw_json(self.output),  # type: ignore[dict-item]
        }
        if self.input is not None:
            record["input"] = thaw_json(self.input)  # type: ignore[assignment]
        if self.error is not None:
            record["error"] = {"type": self.error.type, "message": self.error.message}
        if self.duration_ms is not None:
            record["duration_ms"] = self.duration_ms
        return record


LEDGER_RECORD_KEYS: Final = frozenset(
    ("invocation_id", "tool_name", "success", "output", "input", "error", "duration_ms")
)
"""Exactly the keys of a §13 ledger entry; any other key is refused."""


def _invocations(value: Iterable[ToolInvocation]) -> tuple[ToolInvocation, ...]:
    return tuple(value)


@attrs.frozen
class ToolLedger:
    """The recorded invocations of one run, indexed by their unique ids (spec §9).

    A duplicate id is a :class:`LedgerError` naming it: two records for one id
    would make "what did the tool return" ambiguous. :meth:`get` is O(1).
    """

    invocations: tuple[ToolInvocation, ...] = attrs.field(default=(), converter=_invocations)
    _index: Mapping[str, ToolInvocation] = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        index: dict[str, ToolInvocation] = {}
        for position, invocation in enumerate(self.invocations):
            if not isinstance(invocation, ToolInvocation):
                raise LedgerError(
                    f"invocations[{position}]: expected a ToolInvocation, "
                    f"got {type(invocation).__name__}"
                )
            if invocation.invocation_id in index:
                raise LedgerError(
                    f"invocations[{position}].invocation_id: "
                    f"duplicate {_short(invocation.invocation_id)}"
                )
            index[invocation.invocation_id] = invocation
        object.__setattr__(self, "_index", MappingProxyType(index))

    def get(self, invocation_id: str) -> ToolInvocation | None:
        """The invocation with this id, or None (also for a non-string id)."""
        if not isinstance(invocation_id, str):
            return None
        return self._index.get(invocation_id)


def _check_keys(
    record: Mapping[object, object], allowed: Container[object], required: Sequence[str], where: str
) -> None:
    """Refuse a key outside ``allowed``, then a ``required`` one that is absent or null."""
    for key in record:
        if key not in allowed:
            shown = key if isinstance(key, str) else type(key).__name__
            raise LedgerError(f"{where}.{shown}: unknown key")
    for name in required:
        if record.get(name) is None:
            raise LedgerError(f"{where}.{name}: missing")


def _error_from_record(value: object) -> ToolCallError:
    if not isinstance(value, Mapping):
        raise LedgerError(f".error: expected an object, got {_json_type(value)}")
    _check_keys(value, ("type", "message"), ("type", "message"), ".error")
    try:
        return ToolCallError(value["type"], value["message"])
    except LedgerError as problem:
        raise LedgerError(f".{problem}") from None


def invocation_from_record(record: object) -> ToolInvocation:
    """One §13 wire entry as a :class:`ToolInvocation`, by the module docstring's **Records** rules.

    Messages start with ``.field`` or ``:`` so the caller prefixes the entry's path.
    """
    if not isinstance(record, Mapping):
        raise LedgerError(f": expected an object, got {_json_type(record)}")
    _check_keys(record, LEDGER_RECORD_KEYS, ("invocation_id", "tool_name", "success"), "")
    if "output" not in record:
        raise LedgerError(".output: missing")
    raw_error = record.get("error")
    error = None if raw_error is None else _error_from_record(raw_error)
    try:
        return ToolInvocation(
            invocation_id=record["invocation_id"],
            tool_name=record["tool_name"],
            success=record["success"],
            output=record["output"],
            input=record.get("input"),
            error=error,
            duration_ms=record.get("duration_ms"),
        )
    except LedgerError as problem:
        raise LedgerError(f".{problem}") from None


def ledger_from_records(records: Sequence[object]) -> ToolLedger:
    """Build a ledger from §13 wire entries (a scenario's ``tool_ledger``, spec §9 v1.1).

    Each record has exactly the keys of :data:`LEDGER_RECORD_KEYS`, so what
    :meth:`ToolRecorder.to_records` writes loads unchanged, audit fields
    included. Raises :class:`LedgerError` with a path, e.g.
    ``tool_ledger[2].invocation_id: missing`` or
    ``tool_ledger[3].invocation_id: duplicate 'inv-1'``.
    """
    if not isinstance(records, list | tuple):
        raise LedgerError(f"tool_ledger: expected an array, got {type(records).__name__}")
    invocations: list[ToolInvocation] = []
    seen: set[str] = set()
    for position, record in enumerate(records):
        where = f"tool_ledger[{position}]"
        try:
            invocation = invocation_from_record(record)
        except LedgerError as error:
            raise LedgerError(f"{where}{error}") from None
        except Exception as error:
            raise LedgerError(f"{where}: unreadable ({type(error).__name__})") from None
        if invocation.invocation_id in seen:
            raise LedgerError(
                f"{where}.invocation_id: duplicate {_short(invocation.invocation_id)}"
            )
        seen.add(invocation.invocation_id)
        invocations.append(invocation)
    return ToolLedger(tuple(invocations))
