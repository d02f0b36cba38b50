"""Parsing and normalization of the raw gatekeeper result (spec §6.1).

The gatekeeper is an effect: its raw result is whatever the callable returned.
The router must only ever see one of three normalized statuses, and anything
it cannot read with certainty is ``REJECT`` (fail closed). So:

* :func:`parse_gatekeeper_result` reads the shape and raises only
  :class:`PayloadError` naming the offending path;
* :func:`normalize_gatekeeper_result` applies the table of §6.1 and never
  raises, whatever the input (non-string keys, cycles, huge sizes, hostile
  ``Mapping`` implementations).

Nothing here recurses into the raw value: it is read at fixed depths (top
level, ``checked_bindings``, each entry's fields), so a dict that contains
itself is just a malformed entry. Problems name types, never echo values.

Decisions where the spec is silent:

* ``checked_bindings`` and ``reason_codes`` accept a ``list`` or ``tuple``
  (what a JSON array is in Python); any other type — a string included — is
  not an array.
* the four key fields of an entry are ids (§5 general rules) and must be
  non-empty strings; any string field containing an unpaired surrogate is
  malformed (it could not be encoded as UTF-8 later).
* ``matched_text`` must be a string or null whenever present, also on a
  failed entry; it is kept on failed entries for audit (the projector never
  uses it).
* ``reason_codes`` is audit-only: a value that is not an array is treated as
  empty, and non-string items (or strings with surrogates) are dropped.
  Malformed audit data never changes the verdict.
* ``status=fail`` with ``level`` absent, null or ``pass`` is invalid, not
  ``REJECT``/``GATEKEEPER_REJECTED``: the gatekeeper did not say what it
  meant, so the result is treated as unreadable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from .._kernel.errors import PayloadError
from .._kernel.records import share_repr
from .._kernel.wire.json import SURROGATE as _SURROGATE
from .enums import BindingCheckStatus, GatekeeperStatus, ReasonCode
from .payloads import CheckedBinding, GatekeeperResult

__all__ = [
    "NormalizedGatekeeperResult",
    "RawSnapshot",
    "capped_trace_text",
    "gatekeeper_unavailable",
    "normalize_gatekeeper_result",
    "normalize_snapshot",
    "parse_gatekeeper_result",
    "snapshot_raw_result",
    "unstorable_description",
]

_MISSING = object()
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")

_PROBLEM_LIMIT = 1000

_STATUSES = ("pass", "fail")
_LEVELS = ("pass", "low_confid", "reject")
_ID_FIELDS = ("claim_id", "source_invocation_id", "tool_name", "raw_path")


# --- the one defensive snapshot of a raw result ----------------------------------


def unstorable_description(raw: object) -> str:
    """``repr(raw)``, at most 2 000 characters, without memory addresses; never raises.

    It is what a result JSON cannot hold is recorded as (``{"unserializable": ...}``).
    A default repr says where the object lives (``<object object at 0x7f…>``), which
    differs from one run to the next: the address is left out, so two runs fed equal
    results record equal facts.
    """
    try:
        description = repr(raw)[:2000]
    except Exception:  # a broken __repr__ (or a value too deep to render)
        return f"<unrepresentable {_host_type_name(raw)}>"
    return _ADDRESS.sub("", description)


class _Opaque:
    """Stands in a snapshot for a value that is neither a JSON scalar nor a container.

    Normalization sees only its type name; the audit's last-resort ``repr``
    still shows the original value (its ``repr`` is host code, and the audit
    guards it).
    """

    __slots__ = ("type_name", "value")

    def __init__(self, value: object, type_name: str) -> None:
        self.value = value
        self.type_name = type_name

    def __repr__(self) -> str:
        return repr(self.value)


class _Unreadable(Exception):
    """Internal: the host value cannot be read; ``problem`` says why (no value echoed)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@attrs.frozen(repr=False)
class RawSnapshot:
    """A plain copy of a raw gatekeeper result, taken once at the boundary (spec §15).

    ``value`` is built only of exact ``dict``/``list``/``str``/``int``/
    ``float``/``bool``/``None`` (anything else is an opaque stand-in that
    exposes only its type name), so reading it can run no host code: the
    normalization, the audit copy and the trace fields all read this copy and
    never the host object. ``problem`` is set (and ``value`` is None) when the
    host object could not be read: one of its methods raised (the exception
    type is named) or its read protocols disagreed.
    """

    value: object = attrs.field(eq=False)
    problem: str | None = None


_PROBE = object()
_EXACT_SCALARS = (str, int, float, bool, type(None))


def _is_exact_scalar(kind: type) -> bool:
    """Identity tests only: a host metaclass's ``__eq__`` is never consulted."""
    return any(kind is scalar for scalar in _EXACT_SCALARS)


def _host_type_name(value: object) -> str:
    try:
        name = type(value).__name__
    except Exception:  # a metaclass with a hostile __name__
        return "object"
    return str.__str__(name) if isinstance(name, str) else "object"


def _same(left: object, right: object) -> bool:
    """Identity, or equality of two exact scalars (never calls host ``__eq__``)."""
    if left is right:
        return True
    kind = type(left)
    return kind is type(right) and _is_exact_scalar(kind) and left == right


def _plain_scalar(value: object) -> object:
    """An exact built-in copy of a scalar, or ``_PROBE`` when ``value`` is not one.

    Subclasses are converted through the base type's own method, so an
    overridden ``__str__``/``__eq__``/``__hash__`` is never called.
    """
    if _is_exact_scalar(type(value)):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):  # bool cannot be subclassed
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return _PROBE


def _mapping_pairs(node: object) -> list[tuple[object, object]]:
    """The pairs of a host mapping; every read protocol must work and agree."""
    if type(node) is dict:
        return list(dict.items(node))
    try:
        assert isinstance(node, Mapping)
        size = len(node)
        pairs = [(key, value) for key, value in node.items()]
        keys = list(node.keys())
        values = list(node.values())
        iterated = list(iter(node))
        consistent = (
            len(pairs) == size == len(keys) == len(values) == len(iterated)
            and node.get(_PROBE, _MISSING) is _MISSING
            and all(
                _same(keys[index], key)
                and _same(iterated[index], key)
                and _same(values[index], value)
                and _same(node[key], value)
                and _same(node.get(key, _MISSING), value)
                for index, (key, value) in enumerate(pairs)
            )
        )
    except Exception as error:  # hostile host object: its type is recorded
        raise _Unreadable(_host_type_name(error)) from None
    if not consistent:
        raise _Unreadable(f"inconsistent {_host_type_name(node)}")
    return pairs


def _array_items(node: object) -> list[object]:
    """The items of a list/tuple; a subclass must iterate, index and count alike."""
    if type(node) is list or type(node) is tuple:
        return list(node)
    try:
        assert isinstance(node, list | tuple)
        size = len(node)
        items = list(iter(node))
        consistent = len(items) == size and all(
            _same(node[index], item) for index, item in enumerate(items)
        )
    except Exception as error:  # hostile host object: its type is recorded
        raise _Unreadable(_host_type_name(error)) from None
    if not consistent:
        raise _Unreadable(f"inconsistent {_host_type_name(node)}")
    return items


def _kind(node: object) -> str:
    """``scalar``, ``mapping``, ``array`` or ``other``; an ``isinstance`` may run host code."""
    if _is_exact_scalar(type(node)):
        return "scalar"
    if type(node) is dict:
        return "mapping"
    if type(node) is list or type(node) is tuple:
        return "array"
    try:
        if isinstance(node, str | int | float):
            return "scalar"
        if isinstance(node, Mapping):
            return "mapping"
        if isinstance(node, list | tuple):
            return "array"
    except Exception as error:  # hostile host object: its type is recorded
        raise _Unreadable(_host_type_name(error)) from None
    return "other"


_Work = list[tuple[object, object]]


def _copy_node(node: object, copies: dict[int, tuple[object, object]], work: _Work) -> object:
    """The copy of one node; a new container is queued in ``work`` to be filled in."""
    kind = _kind(node)
    if kind == "scalar":
        return _plain_scalar(node)
    if kind == "other":
        return _Opaque(node, _host_type_name(node))
    known = copies.get(id(node))
    if known is not None:  # shared or circular: the copy has the same shape
        return known[1]
    copy: object = {} if kind == "mapping" else []
    copies[id(node)] = (node, copy)  # the node is kept alive, so its id stays unique
    work.append((node, copy))
    return copy


def _snapshot_value(raw: object) -> object:
    """The plain copy of ``raw`` (iterative, any depth, linear in its distinct objects)."""
    copies: dict[int, tuple[object, object]] = {}
    work: _Work = []
    root = _copy_node(raw, copies, work)
    while work:
        node, copy = work.pop()
        if isinstance(copy, dict):
            for key, value in _mapping_pairs(node):
                plain_key = _plain_scalar(key)
                if plain_key is _PROBE:
                    plain_key = _Opaque(key, _host_type_name(key))
                if plain_key in copy:
                    raise _Unreadable(f"two keys of a {_host_type_name(node)} read as one")
                copy[plain_key] = _copy_node(value, copies, work)
        else:
            assert isinstance(copy, list)
            copy.extend(_copy_node(value, copies, work) for value in _array_items(node))
    return root


def snapshot_raw_result(raw: object) -> RawSnapshot:
    """Take the one defensive copy of a raw result (spec §15); never raises.

    Exact built-ins are copied without running any host code; a ``Mapping``
    or ``list``/``tuple`` subclass (or another ``Mapping``) is read through
    ``len``, ``items``, ``keys``, ``values``, iteration, ``[]`` and ``get``,
    which must all work and agree, else the snapshot names the problem — the
    exception type when a method raised. String, int and float subclasses
    become the plain value through the base type's own method. Shared and
    circular sub-values keep their shape (normalization reads fixed depths).
    """
    try:
        return RawSnapshot(_snapshot_value(raw))
    except _Unreadable as error:
        return RawSnapshot(None, _safe_text(f"unreadable result ({error.problem})"))


@attrs.frozen(repr=False)
class NormalizedGatekeeperResult:
    """What the router and the trace need from one gatekeeper call (spec §6.1).

    ``reason_code`` is set exactly when ``status`` is ``REJECT``.
    ``checked_bindings`` and the counts (raw entries / with status pass / with
    status fail) are only filled for a readable result; ``problem`` says why a
    result is invalid or which exception made the gatekeeper unavailable. The
    verdict ceiling is derived elsewhere (:mod:`diagnosis_core._chat.verdict`).
    """

    status: GatekeeperStatus
    reason_code: ReasonCode | None = None
    checked_bindings: tuple[CheckedBinding, ...] = ()
    checked: int = 0
    passed: int = 0
    failed: int = 0
    problem: str | None = None


def _type_name(value: object) -> str:
    if isinstance(value, _Opaque):
        return value.type_name
    return type(value).__name__


def _string(value: object, path: str) -> str:
    """``value`` as an exact ``str`` (subclass overrides cannot interfere); None is missing."""
    if value is None:
        raise PayloadError(path, "missing")
    if not isinstance(value, str):
        raise PayloadError(path, f"expected a string, got {_type_name(value)}")
    return str.__str__(value)


def _plain_string(value: object, path: str, *, non_empty: bool = False) -> str:
    """:func:`_string`, free of unpaired surrogates (and non-empty when asked)."""
    text = _string(value, path)
    if non_empty and not text:
        raise PayloadError(path, "expected a non-empty string")
    if _SURROGATE.search(text):
        raise PayloadError(path, "contains an unpaired surrogate")
    return text


def _keyword(value: object, path: str, allowed: tuple[str, ...]) -> str:
    """A case- and whitespace-insensitive keyword, returned stripped and lower-cased."""
    value = _string(value, path)
    word = str.lower(str.strip(value))
    if word not in allowed:
        raise PayloadError(path, f"expected one of {', '.join(allowed)}")
    return word


def _parse_entry(entry: object, path: str) -> CheckedBinding:
    if not isinstance(entry, Mapping):
        raise PayloadError(path, f"expected an object, got {_type_name(entry)}")
    claim_id, source_id, tool, raw_path = (
        _plain_string(entry.get(name), f"{path}.{name}", non_empty=True) for name in _ID_FIELDS
    )
    status = BindingCheckStatus(_keyword(entry.get("status"), f"{path}.status", _STATUSES))
    matched = entry.get("matched_text")
    matched_text = None if matched is None else _plain_string(matched, f"{path}.matched_text")
    if status is BindingCheckStatus.PASS and not matched_text:
        problem = "missing" if matched_text is None else "expected a non-empty string"
        raise PayloadError(f"{path}.matched_text", problem)
    raw_reason = entry.get("reason")
    reason = None if raw_reason is None else _plain_string(raw_reason, f"{path}.reason")
    return CheckedBinding(
        claim_id, source_id, tool, raw_path, status, matched_text=matched_text, reason=reason
    )


def _parse_checked_bindings(value: object) -> tuple[CheckedBinding, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise PayloadError("checked_bindings", f"expected an array, got {_type_name(value)}")
    entries: list[CheckedBinding] = []
    first_seen: dict[tuple[str, str, str, str], int] = {}
    for index, raw_entry in enumerate(value):
        path = f"checked_bindings[{index}]"
        entry = _parse_entry(raw_entry, path)
        earlier = first_seen.setdefault(entry.key, index)
        if earlier != index:
            raise PayloadError(path, f"duplicate key of checked_bindings[{earlier}]")
        entries.append(entry)
    return tuple(entries)


def _parse_reason_codes(value: object) -> tuple[str, ...]:
    """Audit-only codes: unreadable parts are dropped, never an error."""
    if not isinstance(value, list | tuple):
        return ()
    return tuple(
        str.__str__(code) for code in value if isinstance(code, str) and not _SURROGATE.search(code)
    )


def _parse_snapshot(snapshot: RawSnapshot) -> GatekeeperResult:
    if snapshot.problem is not None:
        raise PayloadError("", snapshot.problem)
    raw = snapshot.value
    if not isinstance(raw, Mapping):
        raise PayloadError("", f"expected an object, got {_type_name(raw)}")
    status = _keyword(raw.get("status"), "status", _STATUSES)
    raw_level = raw.get("level")
    level = None if raw_level is None else _keyword(raw_level, "level", _LEVELS)
    return GatekeeperResult(
        status=status,
        level=level,
        checked_bindings=_parse_checked_bindings(raw.get("checked_bindings")),
        reason_codes=_parse_reason_codes(raw.get("reason_codes")),
    )


def parse_gatekeeper_result(raw: object) -> GatekeeperResult:
    """Read the raw result's shape (spec §6.1), or raise :class:`PayloadError`.

    ``status``/``level`` come back stripped and lower-cased; extra keys are
    ignored. It checks shape only: a self-contradictory result parses, and
    :func:`normalize_gatekeeper_result` rejects it. The result is read through
    one defensive snapshot (:func:`snapshot_raw_result`): a host object whose
    methods raise or disagree is a PayloadError naming the exception type, so
    callers catch one type; any other exception is a bug of this package.
    """
    return _parse_snapshot(snapshot_raw_result(raw))


def _invalid(problem: str) -> NormalizedGatekeeperResult:
    return NormalizedGatekeeperResult(
        status=GatekeeperStatus.REJECT,
        reason_code=ReasonCode.GATEKEEPER_INVALID_RESULT,
        problem=problem,
    )


def _contradiction(result: GatekeeperResult) -> str | None:
    """Why a well-shaped result cannot be believed, or None."""
    if result.status == "pass":
        if result.level not in (None, "pass"):
            return f"status: pass contradicts level {result.level}"
        for index, entry in enumerate(result.checked_bindings):
            if not entry.passed:
                return f"status: pass contradicts failed checked_bindings[{index}]"
        return None
    if result.level not in ("low_confid", "reject"):
        shown = "missing" if result.level is None else result.level
        return f"level: {shown} does not say how the failure ranks (low_confid or reject)"
    return None


def normalize_gatekeeper_result(raw: object) -> NormalizedGatekeeperResult:
    """Apply the normalization table of spec §6.1; never raises.

    ``pass`` (level absent/null/pass, no failed binding) → ``PASS``;
    ``fail``+``low_confid`` → ``LOW_CONFID``; ``fail``+``reject`` →
    ``REJECT``/``GATEKEEPER_REJECTED``; anything unreadable or
    self-contradictory → ``REJECT``/``GATEKEEPER_INVALID_RESULT``.
    """
    return normalize_snapshot(snapshot_raw_result(raw))


def normalize_snapshot(snapshot: RawSnapshot) -> NormalizedGatekeeperResult:
    """:func:`normalize_gatekeeper_result` of an already taken snapshot; never raises."""
    try:
        result = _parse_snapshot(snapshot)
    except PayloadError as error:
        return _invalid(_safe_text(error.reason))
    problem = _contradiction(result)
    if problem is not None:
        return _invalid(problem)
    bindings = result.checked_bindings
    passed = sum(1 for entry in bindings if entry.passed)
    if result.status == "pass":
        status, reason_code = GatekeeperStatus.PASS, None
    elif result.level == "low_confid":
        status, reason_code = GatekeeperStatus.LOW_CONFID, None
    else:
        status, reason_code = GatekeeperStatus.REJECT, ReasonCode.GATEKEEPER_REJECTED
    return NormalizedGatekeeperResult(
        status=status,
        reason_code=reason_code,
        checked_bindings=bindings,
        checked=len(bindings),
        passed=passed,
        failed=len(bindings) - passed,
    )


def capped_trace_text(text: str | None) -> str | None:
    """A host-supplied text for the trace, capped and encodable like ``problem``.

    The gatekeeper's raw ``status``/``level`` strings are copied into the trace
    details; a 10 MB status must not make every event that large.
    """
    return None if text is None else _safe_text(text)


def _safe_text(text: str) -> str:
    """Cap a problem text and replace surrogates, so the trace can always encode it."""
    if len(text) > _PROBLEM_LIMIT:
        text = text[: _PROBLEM_LIMIT - 1] + "…"
    return _SURROGATE.sub("\ufffd", text)


def gatekeeper_unavailable(error: BaseException | str) -> NormalizedGatekeeperResult:
    """The normalized result when the gatekeeper callable raised (spec §6.1).

    ``problem`` is ``"TypeName: message"`` for an exception (a plain string is
    used as is), capped at 1000 characters with surrogates replaced; it is
    computed without trusting the exception (its ``__str__`` may raise).
    Never raises.
    """
    if isinstance(error, str):
        problem = str.__str__(error)
    else:
        try:
            name = type(error).__name__
        except Exception:
            name = "BaseException"
        try:
            message = str(error)
        except Exception:
            message = "<unprintable>"
        problem = f"{name}: {message}" if message else name
    return NormalizedGatekeeperResult(
        status=GatekeeperStatus.REJECT,
        reason_code=ReasonCode.GATEKEEPER_UNAVAILABLE,
        problem=_safe_text(problem),
    )


share_repr(RawSnapshot, NormalizedGatekeeperResult)
