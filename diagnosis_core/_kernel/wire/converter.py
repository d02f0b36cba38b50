"""The one place that maps package values to wire JSON and back (spec §2, §5).

Every other module calls :func:`to_wire` / :func:`from_wire`; none builds JSON
by hand. Wire names are the attribute names of the frozen ``attrs`` classes;
a class that needs a different wire name gets a ``cattrs`` rename override
here, nowhere else.

Structuring is strict, because the input is an agent's output (spec §5
"General rules"): a string is only a ``str``; an integer is an ``int`` and
never a ``bool`` or ``1.0``; a number is an ``int`` or a finite ``float`` and
never a ``bool``; arrays are JSON arrays, objects JSON objects. ``null`` for a
field that has a default means *absent*. Unknown keys are ignored.

Two converters share the same hooks: a fast one (``detailed_validation``
off) does the work, and only when it fails does a detailed one run again to
produce the path of the first problem (``claims[3].bindings[0].raw_path:
missing``) from ``cattrs``' validation notes. Whatever goes wrong with the
data, :func:`from_wire` raises :class:`PayloadError` and nothing else. The fast
pass and the one-pass parse run functions written per class by :mod:`.codegen`.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, cast

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    IterableValidationError,
    IterableValidationNote,
    StructureHandlerNotFoundError,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..errors import ConfigError, PayloadError
from .codegen import (
    InstanceAcceptingConverter,
    accepts_none,
    compile_fast_structure,
    enum_members,
    is_enum,
    object_builder,
    positional_plan,
    positional_reader,
)
from .json import (
    JsonValue,
    LazyPattern,
    canonical_json,
    describe_value,
    is_json_value_type,
    json_path_index,
    json_path_key,
    json_type_name,
    loads_stored,
    loads_strict_with_objects,
    stored_json,
)

__all__ = [
    "from_json",
    "from_json_object_text",
    "from_wire",
    "from_wire_array",
    "make_converter",
    "register_json_text",
    "to_json",
    "to_wire",
    "to_wire_array",
]

T = TypeVar("T")

_StructureHook = Callable[[Any, Any], Any]


class _WireError(Exception):
    """A hook's verdict on one value; ``inside`` locates it within that value."""

    def __init__(self, problem: str, inside: tuple[str | int, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.inside = inside


# --- scalars ----------------------------------------------------------------------


def _structure_enum(value: object, cl: type[enum.Enum]) -> enum.Enum:
    members, allowed = enum_members(cl)
    try:
        member = members[value]
    except (KeyError, TypeError):
        member = None
    # ``type`` equality keeps ``true`` from matching a member whose value is 1.
    if member is None or type(member.value) is not type(value):
        if isinstance(value, str):
            raise _WireError(f"{describe_value(value)} is not one of {allowed}")
        raise _WireError(f"expected one of {allowed}, got {json_type_name(value)}")
    return member


def _exactly(kind: type, expected: str) -> _StructureHook:
    """The hook of ``str``, ``int`` or ``bool``: that very class (no subclass), or its enum."""

    def structure(value: object, cl: type[Any]) -> Any:
        # ``str`` and ``int`` enums reach this hook too: singledispatch follows the MRO.
        if cl is not kind and is_enum(cl):
            return _structure_enum(value, cl)
        if value.__class__ is not kind:
            raise _WireError(expected)
        return value if cl is kind else cl(value)

    return structure


def _structure_float(value: object, cl: type[Any]) -> Any:
    if cl is not float and is_enum(cl):
        return _structure_enum(value, cl)
    if value.__class__ is not float and value.__class__ is not int:
        raise _WireError("expected a number")
    try:
        number = float(value)
    except OverflowError:
        raise _WireError("expected a finite number") from None
    if not math.isfinite(number):
        raise _WireError("expected a finite number")
    return number


def _structure_literal(value: object, cl: Any) -> Any:
    choices = typing.get_args(cl)
    for choice in choices:
        if type(choice) is type(value) and choice == value:
            return choice
    if len(choices) == 1:
        raise _WireError(f"expected {describe_value(choices[0])}, got {describe_value(value)}")
    allowed = ", ".join(describe_value(choice) for choice in choices)
    raise _WireError(f"{describe_value(value)} is not one of {allowed}")


def _is_literal(cl: object) -> bool:
    return typing.get_origin(cl) is Literal


# --- JsonValue ---------------------------------------------------------------------


def _structure_json_value(value: object, cl: object) -> Any:
    """Accept any JSON value as is, after checking it really is one (iteratively)."""
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, inside = stack.pop()
        if item is None or item.__class__ in (str, bool, int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise _WireError("expected a finite number", inside)
        elif isinstance(item, list):
            stack.extend((child, (*inside, index)) for index, child in enumerate(item))
        elif isinstance(item, dict):
            for key, child in item.items():
                if key.__class__ is not str:
                    raise _WireError("object keys must be strings", inside)
                stack.append((child, (*inside, key)))
        else:
            raise _WireError(f"expected a JSON value, got {type(item).__name__}", inside)
    return value


# --- collections -----------------------------------------------------------------


def _inside(cl: Any, exc: Exception, at: str, where: str | int, item_type: Any) -> Exception:
    """``exc`` raised at ``where`` (an index or key) of a ``cl`` value, as cattrs reports it."""
    note = IterableValidationNote(f"Structuring {cl!r} @ {at} {where}", where, item_type)
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
    return IterableValidationError(f"While structuring {cl!r}", [exc], cl)


def _is_tuple_type(cl: object) -> bool:
    origin = typing.get_origin(cl)
    return cl is tuple or origin is tuple or origin is collections.abc.Sequence


def _tuple_structure_factory(cl: Any, conv: cattrs.Converter) -> _StructureHook:
    """Structure ``tuple[X, ...]``, ``tuple[X, Y]`` and ``Sequence[X]`` from a JSON array."""
    args = typing.get_args(cl)
    homogeneous = typing.get_origin(cl) is collections.abc.Sequence or (
        len(args) == 2 and args[1] is Ellipsis
    )
    item_types: tuple[Any, ...] = (args[0],) if homogeneous else args
    if cl is tuple or not args:
        item_types = (Any,)
        homogeneous = True
    handlers = tuple(conv.get_structure_hook(item) for item in item_types)
    detailed = conv.detailed_validation

    def structure(value: object, _: object) -> tuple[Any, ...]:
        if value.__class__ is not list and not isinstance(value, list | tuple):
            raise _WireError("expected an array")
        items = value
        if not homogeneous and len(items) != len(item_types):
            raise _WireError(f"expected an array of {len(item_types)} items")
        if not detailed:
            if homogeneous:
                handler, item_type = handlers[0], item_types[0]
                return tuple([handler(item, item_type) for item in items])
            return tuple(
                [h(item, t) for h, t, item in zip(handlers, item_types, items, strict=True)]
            )
        result: list[Any] = []
        for index, item in enumerate(items):
            position = 0 if homogeneous else index
            item_type = item_types[position]
            try:
                result.append(handlers[position](item, item_type))
            except Exception as exc:
                raise _inside(cl, exc, "index", index, item_type) from None
        return tuple(result)

    return structure


_MAPPING_ORIGINS = (
    collections.abc.Mapping,
    collections.abc.MutableMapping,
    dict,
)


def _is_mapping_type(cl: object) -> bool:
    return cl in _MAPPING_ORIGINS or typing.get_origin(cl) in _MAPPING_ORIGINS


def _mapping_structure_factory(cl: Any, conv: cattrs.Converter) -> _StructureHook:
    """Structure ``Mapping[K, V]`` / ``dict[K, V]`` from a JSON object.

    ``Mapping`` gives a read-only :class:`types.MappingProxyType` (spec §2:
    no mutable collections inside values); ``dict`` gives a ``dict``.
    """
    args = typing.get_args(cl) or (Any, Any)
    key_type, value_type = args
    key_hook = conv.get_structure_hook(key_type)
    value_hook = conv.get_structure_hook(value_type)
    frozen = (typing.get_origin(cl) or cl) is not dict
    detailed = conv.detailed_validation

    def structure(value: object, _: object) -> Mapping[Any, Any]:
        if not isinstance(value, Mapping):
            raise _WireError("expected an object")
        result: dict[Any, Any] = {}
        for key, item in value.items():
            try:
                result[key_hook(key, key_type)] = value_hook(item, value_type)
            except Exception as exc:
                if not detailed:
                    raise
                label = key if isinstance(key, str) else repr(key)
                raise _inside(cl, exc, "key", label, value_type) from None
        return types.MappingProxyType(result) if frozen else result

    return structure


# --- attrs classes ---------------------------------------------------------------


def _null_is_default(hook: _StructureHook, default: Any) -> _StructureHook:
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory

        def structure_or_factory(value: object, cl: object) -> Any:
            return factory() if value is None else hook(value, cl)

        return structure_or_factory

    def structure_or_default(value: object, cl: object) -> Any:
        return default if value is None else hook(value, cl)

    return structure_or_default


def _cattrs_structure_fn(cl: Any, conv: cattrs.Converter) -> _StructureHook:
    """``cattrs``' generated function, with "null means absent" for defaulted fields."""
    hints = typing.get_type_hints(cl)
    overrides = {}
    for field in attrs.fields(cl):
        field_type = hints.get(field.name, Any)
        if field.init and field.default is not attrs.NOTHING and not accepts_none(field_type):
            if isinstance(field.default, attrs.Factory) and field.default.takes_self:  # type: ignore[arg-type]
                continue  # such a default needs the instance; null stays an error
            hook = conv.get_structure_hook(field_type)
            overrides[field.name] = override(struct_hook=_null_is_default(hook, field.default))
    generate: Any = make_dict_structure_fn  # overrides are keyword arguments named by field
    result: _StructureHook = generate(cl, conv, **overrides)
    return result


def _attrs_structure_factory(cl: Any, conv: cattrs.Converter) -> _StructureHook:
    """Structure an ``attrs`` class from a JSON object.

    ``null`` for a field that has a default (and whose type does not admit
    ``None``) means the field is absent (spec §5 "General rules"). The fast
    converter uses a generated function (:func:`compile_fast_structure`);
    the detailed one uses ``cattrs``' own, whose validation notes carry the
    path, behind a check that the value is an object at all.
    """
    if not conv.detailed_validation:
        fast = compile_fast_structure(cl, conv)
        return fast if fast is not None else _cattrs_structure_fn(cl, conv)
    inner = _cattrs_structure_fn(cl, conv)

    def structure(value: object, _: object) -> Any:
        if not isinstance(value, Mapping):
            raise _WireError("expected an object")
        return inner(value, cl)

    return structure


# --- unstructuring -----------------------------------------------------------------


_PLAIN_SCALARS = frozenset({str, int, float, bool})


def _unstructure_scalar(value: Any) -> Any:
    # ``str``/``int``/``float`` enums dispatch here through the MRO. Plain
    # values, nearly all of them, skip the (slow) isinstance check on Enum.
    if value.__class__ in _PLAIN_SCALARS:
        return value
    return value.value if isinstance(value, enum.Enum) else value


def _tuple_unstructure_factory(cl: Any, conv: cattrs.Converter) -> Callable[[Any], Any]:
    """Unstructure ``tuple[X, ...]`` / ``Sequence[X]`` to a list.

    Every item that is an ``X`` — a subclass instance included — uses the hook
    of the *declared* ``X``, looked up once: a host subclass of ``Skill``,
    ``HistoryMessage`` or ``Alert`` with extra fields contributes exactly
    ``X``'s fields, so nothing outside a whitelist reaches an agent (spec
    §15). Only items that are not an ``X`` at all (and items of
    ``tuple[object, ...]``) are dispatched on their own class.
    """
    args = typing.get_args(cl)
    homogeneous = typing.get_origin(cl) is collections.abc.Sequence or (
        len(args) == 2 and args[1] is Ellipsis
    )
    item_type = args[0] if homogeneous and args else None
    if not isinstance(item_type, type) or item_type is object:
        return lambda value: [conv.unstructure(item) for item in value]
    handler = conv.get_unstructure_hook(item_type)
    return lambda value: [
        handler(item) if isinstance(item, item_type) else conv.unstructure(item)
        for item in value
    ]


def _is_mapping_value_type(cl: object) -> bool:
    origin = typing.get_origin(cl) or cl
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _install_hooks(conv: cattrs.Converter) -> cattrs.Converter:
    """Register every hook on ``conv``; both converters are built by this one function."""
    for scalar, hook in (
        (str, _exactly(str, "expected a string")),
        (int, _exactly(int, "expected an integer")),
        (float, _structure_float),
        (bool, _exactly(bool, "expected a boolean")),
    ):
        conv.register_structure_hook(scalar, hook)
    conv.register_structure_hook_func(lambda cl: cl is Any or cl is object, lambda v, _: v)
    conv.register_structure_hook_func(is_enum, _structure_enum)
    conv.register_structure_hook_func(_is_literal, _structure_literal)
    conv.register_structure_hook_factory(_is_tuple_type, _tuple_structure_factory)
    conv.register_structure_hook_factory(_is_mapping_type, _mapping_structure_factory)
    conv.register_structure_hook_factory(attrs.has, _attrs_structure_factory)
    conv.register_structure_hook_func(is_json_value_type, _structure_json_value)

    for scalar in (str, int, float):
        conv.register_unstructure_hook(scalar, _unstructure_scalar)
    conv.register_unstructure_hook_factory(_is_tuple_type, _tuple_unstructure_factory)
    conv.register_unstructure_hook_func(
        _is_mapping_value_type,
        lambda value: {key: conv.unstructure(item) for key, item in value.items()},
    )
    conv.register_unstructure_hook_func(is_json_value_type, lambda value: value)
    _install_trace_hooks(conv)
    return conv


def _install_trace_hooks(conv: cattrs.Converter) -> None:
    """Wire forms of the trace: sparse event details, raw results as JSON values.

    Event details (every class a workflow passes to :func:`register_sparse_details`)
    omit absent (None) fields so that each node shows only its own details
    (spec §8); a missing field reads back as None. A raw result (every class
    passed to :func:`register_json_text`) keeps an audit copy as canonical
    JSON text in Python and is the JSON value itself on the wire.
    """
    for details_class in _SPARSE_DETAILS:
        conv.register_unstructure_hook(details_class, _sparse_unstructure(conv, details_class))
    for text_class in _JSON_TEXT:
        _install_json_text(conv, text_class)
    conv.register_unstructure_hook_factory(_counts_observer_failures, _omit_zero_failures)


def _install_json_text(conv: cattrs.Converter, cls: type[Any]) -> None:
    def structure(value: object, _: object) -> Any:
        try:
            return cls(canonical_json(value))
        except (TypeError, ValueError, RecursionError) as error:
            raise _WireError(f"expected a JSON value ({error})") from None

    conv.register_unstructure_hook(cls, lambda raw: json.loads(raw.json_text))
    conv.register_structure_hook(cls, structure)


def _counts_observer_failures(cl: object) -> bool:
    """A state or trace report carrying ``observer_failures`` (spec §12.5)."""
    return attrs.has(cl) and any(  # type: ignore[arg-type]
        field.name == "observer_failures" for field in attrs.fields(cl)
    )


def _omit_zero_failures(cl: Any, conv: cattrs.Converter) -> Callable[[Any], dict[str, Any]]:
    """Write ``observer_failures`` only when not 0, so existing bytes stay as they were."""
    base = make_dict_unstructure_fn(cl, conv)

    def unstructure(value: Any) -> dict[str, Any]:
        wire: dict[str, Any] = base(value)
        if not wire.get("observer_failures"):
            wire.pop("observer_failures", None)
        return wire

    return unstructure


_SPARSE_DETAILS: list[type[Any]] = []
"""The event-details classes written sparsely; workflows add theirs at import."""
_JSON_TEXT: list[type[Any]] = []
"""The classes holding canonical JSON text that the wire shows as the JSON value."""


def _built_converters() -> list[cattrs.Converter]:
    built = [_fast_converter, _detailed_converter]
    if _instance_accepting_converter.cache_info().currsize:
        built.append(_instance_accepting_converter())
    return built


def register_sparse_details(cls: type[Any]) -> None:
    """Write ``cls`` (an ``attrs`` event-details class) without its None fields.

    The shared kernel knows no workflow: a workflow package (``_chat``,
    ``diagnosis_core.aiops``) calls this at import for its own details class, so
    that the kernel never imports it. Idempotent; applies to every converter of
    the package, built or still to be built.
    """
    if cls in _SPARSE_DETAILS:
        return
    _SPARSE_DETAILS.append(cls)
    for conv in _built_converters():
        conv.register_unstructure_hook(cls, _sparse_unstructure(conv, cls))


def register_json_text(cls: type[Any]) -> None:
    """Show ``cls`` (built from canonical JSON text, kept in ``json_text``) as the JSON value.

    Like :func:`register_sparse_details`, called by a workflow at import (the chat
    trace's ``RawResult``); idempotent, every converter of the package.
    """
    if cls in _JSON_TEXT:
        return
    _JSON_TEXT.append(cls)
    _array_plan.cache_clear()  # the class is a value of the positional form now, no record
    _array_reader.cache_clear()
    for conv in _built_converters():
        _install_json_text(conv, cls)


def _sparse_unstructure(conv: cattrs.Converter, cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    names = tuple(field.name for field in attrs.fields(cls))

    def unstructure(details: Any) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        for name in names:
            value = getattr(details, name)
            if value is not None:
                wire[name] = conv.unstructure(value)
        return wire

    return unstructure


# Private on purpose (spec §15 "No process-global knob changes a verdict"): a
# hook registered on a shared converter would change what every strict parser
# accepts, process-wide. Hosts get their own copy from make_converter().
_fast_converter: cattrs.Converter = _install_hooks(cattrs.Converter(detailed_validation=False))


def make_converter() -> cattrs.Converter:
    """A fresh converter with the package's hooks, for a host's own use.

    It structures and unstructures package values as :func:`from_wire` /
    :func:`to_wire` do. Each call builds a new one: hooks a host registers on
    it change only that copy. The package's parsers never use it, so nothing
    registered on it can loosen them.
    """
    return _install_hooks(cattrs.Converter(detailed_validation=False))

_detailed_converter = _install_hooks(cattrs.Converter(detailed_validation=True))


# --- one-pass parsing (JSON text straight to values) ------------------------------


@functools.cache
def _instance_accepting_converter() -> cattrs.Converter:
    return _install_hooks(InstanceAcceptingConverter(detailed_validation=False))


# --- public functions ----------------------------------------------------------------


def to_wire(value: object) -> JsonValue:
    """Unstructure any package value to plain JSON data.

    ``attrs`` values become dicts keyed by wire name, enums their ``value``,
    tuples lists, mappings dicts. The result is what :func:`canonical_json`
    serializes; ``from_wire(type(value), json.loads(canonical_json(...)))``
    gives ``value`` back (spec §10.8).
    """
    result: JsonValue = _fast_converter.unstructure(value)
    return result


def _last_note(exc: BaseException) -> str | None:
    for note in reversed(getattr(exc, "__notes__", ())):
        if isinstance(note, AttributeValidationNote | IterableValidationNote):
            return note
    return None


def _append(path: str, step: str | int) -> str:
    return json_path_index(path, step) if isinstance(step, int) else json_path_key(path, step)


def _payload_error(exc: BaseException) -> PayloadError:
    """Walk the detailed error tree to its first leaf, building the path."""
    path = ""
    while isinstance(exc, ClassValidationError | IterableValidationError) and exc.exceptions:
        exc = exc.exceptions[0]
        note = _last_note(exc)
        if isinstance(note, AttributeValidationNote):
            path = json_path_key(path, note.name)
        elif isinstance(note, IterableValidationNote):
            path = _append(path, note.index)
    if isinstance(exc, StructureHandlerNotFoundError):
        raise exc  # a class this converter cannot handle: a programming error
    if isinstance(exc, _WireError):
        for step in exc.inside:
            path = _append(path, step)
        return PayloadError(path or "$", exc.problem)
    if isinstance(exc, PayloadError):
        inner = exc.path if exc.path not in ("", "$") else ""
        joined = f"{path}.{inner}" if path and inner else path or inner
        return PayloadError(joined or "$", exc.problem)
    if isinstance(exc, KeyError):
        return PayloadError(path or "$", "missing")
    if isinstance(exc, RecursionError):
        return PayloadError(path or "$", "nesting too deep")
    if isinstance(exc, ConfigError):
        field, separator, problem = str(exc).partition(": ")
        if separator and field.isidentifier():
            return PayloadError(json_path_key(path, field), problem)
        return PayloadError(path or "$", str(exc))
    if isinstance(exc, ValueError | TypeError):
        # A value validator or converter of a class refused the value.
        return PayloadError(path or "$", f"invalid value ({type(exc).__name__})")
    # Anything else (AttributeError, AssertionError …) is a bug of the package,
    # not bad data: it must surface as itself, not as "the model misbehaved".
    raise exc


# What the detailed pass may raise for bad data: cattrs' wrappers (whose leaves
# _payload_error checks), the hooks' verdicts, a missing key, a class's
# validators (ConfigError, or ValueError / TypeError from attrs validators).
_DATA_ERRORS = (
    ClassValidationError,
    IterableValidationError,
    _WireError,
    PayloadError,
    ConfigError,
    KeyError,
    ValueError,
    TypeError,
)


def from_wire(cls: type[T], data: object) -> T:
    """Structure wire data into ``cls``, strictly (spec §5 "General rules").

    Raises:
        PayloadError: for any problem with ``data``, with the path of the first
            one (``claims[3].bindings[0].raw_path: missing``,
            ``verdict: 'MAYBE' is not one of 'REJECT', 'LOW_CONFID', 'PASS'``).
            Validator errors of the class (:class:`ConfigError`) are reported
            the same way, with the field in the path.
    """
    try:
        result: T = _fast_converter.structure(data, cls)
        return result
    except RecursionError:
        raise PayloadError("$", "nesting too deep") from None
    except MemoryError:
        raise
    except Exception:  # the detailed pass below reports it
        pass
    try:
        # The fast pass may refuse what JSON never produces (a tuple for an
        # array, a Mapping that is not a dict); the detailed pass decides.
        detailed: T = _detailed_converter.structure(data, cls)
    except RecursionError:
        raise PayloadError("$", "nesting too deep") from None
    except _DATA_ERRORS as exc:
        # cattrs wraps whatever a field raised; _payload_error re-raises a leaf
        # that is not a verdict on the data (a bug), so only data errors become
        # a PayloadError.
        raise _key_case_hint(_payload_error(exc), data) from None
    return detailed


# --- the positional form ----------------------------------------------------------


def to_wire_array(value: object) -> list[JsonValue]:
    """``value`` (an ``attrs`` record) as its positional form: the JSON array of its fields.

    Each field's wire value (:func:`to_wire`) stands in the order the class
    declares its fields, with no key; a nested record is an array in its place,
    a tuple of records an array of arrays. A JSON value a record carries (a
    :data:`JsonValue` field, a tool's output) is written as it is: which array
    is a record is decided by the field's type, never by the value's shape.
    The form is for a store that reads many records of one class (the stores
    keep an ended run's summary so): with no keys to parse, the strict parser
    builds few objects, and :func:`from_wire_array` checks and builds the
    instance in one walk.

    Raises:
        TypeError: ``value`` is not an ``attrs`` record.
    """
    cl: Any = type(value)
    if not attrs.has(cl):
        raise TypeError(f"expected an attrs record, got {cl.__name__}")
    return _wire_array(value, cl)


@functools.cache
def _array_plan(cl: Any) -> tuple[tuple[str, tuple[bool, Any] | None], ...]:
    return positional_plan(cl, frozenset(_JSON_TEXT))


@functools.cache
def _array_reader(cl: Any) -> Callable[[object], Any]:
    return positional_reader(cl, frozenset(_JSON_TEXT))


def _wire_array(value: object, cl: Any) -> list[JsonValue]:
    row: list[JsonValue] = []
    for name, records in _array_plan(cl):
        item = getattr(value, name)
        if records is None or item is None:
            row.append(to_wire(item))
        elif records[0]:
            row.append([_wire_array(element, records[1]) for element in item])
        else:
            row.append(_wire_array(item, records[1]))
    return row


def from_wire_array(cls: type[T], data: object) -> T:
    """Read :func:`to_wire_array`'s form of ``cls`` back, strictly.

    Every field is checked as :func:`from_wire` checks it (an integer where a
    float is declared is that float; nothing else is coerced). The reader is
    generated once per class, from its field types: strings, integers, floats,
    booleans, string literals and string enums, tuples of strings, JSON values,
    records, tuples of records, each of them optional.

    Raises:
        PayloadError: ``data`` is not the positional form of ``cls``, naming the
            record and field (``RunStory.effects: a dict is not what it holds``).
        TypeError: ``cls`` declares a field of another type, or a field outside
            its ``__init__``.
    """
    reader: Callable[[object], T] = _array_reader(cast(Any, cls))
    return reader(data)


_PATH_STEP = LazyPattern(r"\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]")


def _key_case_hint(error: PayloadError, data: object) -> PayloadError:
    """A missing key the object holds in another case or spelling says which (error path).

    ``verdict: missing`` for ``{"Verdict": …}`` becomes ``verdict: missing — the object
    has 'Verdict'; keys must match exactly: write 'verdict'``.
    """
    if error.problem != "missing":
        return error
    steps: list[str | int] = []
    position = 0
    while position < len(error.path):
        match = _PATH_STEP.compiled.match(error.path, position)
        if match is None:  # a key written ['…']: no hint
            return error
        steps.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        position = match.end()
    if not steps or not isinstance(steps[-1], str):
        return error
    parent: Any = data
    for step in steps[:-1]:
        at_index = isinstance(step, int) and isinstance(parent, list) and step < len(parent)
        at_key = isinstance(step, str) and isinstance(parent, dict) and step in parent
        if not (at_index or at_key):
            return error
        parent = parent[step]
    if not isinstance(parent, dict):
        return error
    name = steps[-1]

    def loose(key: str) -> str:
        return key.replace("_", "").replace("-", "").casefold()

    near = [key for key in parent if isinstance(key, str) and loose(key) == loose(name)]
    if len(near) != 1:
        return error
    return PayloadError(
        error.path,
        f"missing — the object has {describe_value(near[0])}; keys must match exactly: "
        f"write {name!r}",
    )


def from_json_object_text(
    cls: type[T], json_text: str, *, required_keys: tuple[str, ...] = ()
) -> T | None:
    """``from_wire(cls, loads_strict(json_text))`` in one pass, or None to say "not here".

    When it returns a value, that value is equal to what the two-step path
    returns. When the JSON layer rejects the text it raises the two-step
    path's :class:`PayloadError` (:func:`loads_strict_with_objects`), without
    a second parse. It returns None whenever the two-step path would raise
    for another reason — a document that is not an object, a top-level
    object lacking (or holding null for) one of ``required_keys`` — and for
    shapes it does not handle, so the caller then runs the two-step path, which gives the exact
    error. Every rule of :func:`loads_strict` (duplicate keys included)
    is applied; only the intermediate dicts and the second walk are skipped.
    """
    root: Any = cls
    accepted, data = loads_strict_with_objects(json_text, object_builder(root))
    if not accepted:
        return None
    if not isinstance(data, dict):
        # A small root class may come back already built by the hook.
        return data if type(data) is cls and not required_keys else None
    for key in required_keys:
        if data.get(key) is None:
            return None
    try:
        result: T = _instance_accepting_converter().structure(data, cls)
    except MemoryError:
        raise
    except Exception:
        return None
    return result


def to_json(value: object) -> str:
    """Canonical JSON of any package value: ``canonical_json(to_wire(value))``.

    One call serializes a state, a result or a :class:`TraceReport`. A
    surrogate code point (a state may keep one from an exception message or
    a gatekeeper result, spec §15) is written as its ``\\uXXXX`` escape, so
    the text always encodes as UTF-8; everything else is exactly the
    canonical text. :func:`from_json` reads it back to an equal value.
    """
    return stored_json(to_wire(value))


def from_json(cls: type[T], text: str) -> T:
    """Parse stored JSON text strictly and structure it as ``cls``.

    For text the package wrote (:func:`to_json`): every rule of
    :func:`loads_strict` applies except that escaped lone surrogates are kept
    (:func:`loads_stored`). Agent payloads are parsed by the ``parse_*``
    functions, which reject them. Raises only :class:`PayloadError`.
    """
    return from_wire(cls, loads_stored(text))
