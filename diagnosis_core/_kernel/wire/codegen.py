"""The converter's code generators: Python source written per ``attrs`` class (spec §5).

cattrs' generated structuring functions are general; these are written for the
package's strict wire rules and measured 1.7x faster on its payloads:

* :func:`compile_fast_structure` writes one structuring function per class for the
  converter's fast pass: the exact-type checks of ``str``/``bool``/``int`` and the
  member lookup of string enums inline, "null means absent" as the field's default,
  every other type through the converter's own hook. It raises :class:`Reject`
  without saying why; the converter's detailed pass then says why.
* :func:`object_builder` writes a JSON ``object_pairs_hook`` that builds a root
  class's small values while the text is parsed, so a large payload skips the
  intermediate dicts and the second walk over them.
* :func:`positional_reader` writes the reader of a record's positional form (the
  JSON array of its fields' values, :func:`~diagnosis_core.from_wire_array`):
  what the stores keep of every ended run, read once per run by every report.

All three build an instance without its generated ``__init__`` where that ``__init__``
only stores its arguments (:func:`slot_setters`). The converter
(:mod:`.converter`) registers the hooks and owns every error message.
"""

from __future__ import annotations

import enum
import functools
import inspect
import itertools
import types
import typing
from collections.abc import Callable, Set
from typing import Any

import attrs
import cattrs

from ..errors import PayloadError
from .json import DuplicateKey, canonical_json, describe_value, is_json_value_type

__all__ = [
    "InstanceAcceptingConverter",
    "ObjectHook",
    "Reject",
    "accepts_none",
    "compile_fast_structure",
    "enum_members",
    "homogeneous_item_type",
    "is_enum",
    "object_builder",
    "positional_plan",
    "positional_reader",
    "strip_none",
]

_StructureHook = Callable[[Any, Any], Any]


@functools.cache
def enum_members(cl: type[enum.Enum]) -> tuple[dict[object, enum.Enum], str]:
    members = {member.value: member for member in cl}
    allowed = ", ".join(describe_value(member.value) for member in cl)
    return members, allowed


def is_enum(cl: object) -> bool:
    return isinstance(cl, type) and issubclass(cl, enum.Enum)


def accepts_none(cl: object) -> bool:
    if cl in (Any, object, None, type(None)) or is_json_value_type(cl):
        return True
    origin = typing.get_origin(cl)
    if origin is typing.Union or origin is types.UnionType:
        return type(None) in typing.get_args(cl)
    return False


class Reject(Exception):
    """The fast pass gives up; the detailed pass will say why."""


_MISSING = object()


_EXACT_SCALARS = (str, bool, int)


class InstanceAcceptingConverter(cattrs.Converter):
    """The fast converter's twin for trees that may already hold finished values.

    Used only on the output of :func:`object_builder` hooks: an instance of
    exactly the expected ``attrs`` class stands for an object the hook
    already structured (JSON never produces one). User data never reaches it.
    """


@functools.cache
def slot_setters(cl: Any) -> tuple[Callable[[Any, Any], None], ...] | None:
    """Slot setters of ``cl`` when its ``__init__`` only stores its arguments, else None.

    Then ``object.__new__`` plus one setter per field builds exactly what
    ``cl(...)`` builds, without the generated ``__init__``'s per-field
    ``object.__setattr__`` calls (about a quarter of the cost of a small
    frozen instance). Any validator, converter, pre/post-init hook, extra slot
    (a cached hash) or hand-written ``__init__`` keeps the normal constructor.
    """
    fields = attrs.fields(cl)
    if any(not f.init or f.validator is not None or f.converter is not None for f in fields):
        return None
    if hasattr(cl, "__attrs_pre_init__") or hasattr(cl, "__attrs_post_init__"):
        return None
    code = getattr(cl.__init__, "__code__", None)
    if code is None or "attrs generated" not in code.co_filename:
        return None
    slots: set[str] = set()
    for klass in cl.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        slots.update((declared,) if isinstance(declared, str) else declared)
    slots.discard("__weakref__")
    if slots != {f.name for f in fields}:
        return None
    setters = []
    for f in fields:
        descriptor = inspect.getattr_static(cl, f.name, None)
        if type(descriptor) is not types.MemberDescriptorType:
            return None
        setters.append(descriptor.__set__)
    return tuple(setters)


def _construct_lines(
    cl: Any, values: list[str], namespace: dict[str, Any], prefix: str, indent: str
) -> list[str]:
    """Source lines that return ``cl`` built from ``values`` (source expressions, field order)."""
    setters = slot_setters(cl)
    if setters is None:
        namespace[f"{prefix}cl"] = cl
        init_fields = [field for field in attrs.fields(cl) if field.init]
        positional = [
            value for field, value in zip(init_fields, values, strict=True) if not field.kw_only
        ]
        keywords = [
            f"{field.alias}={value}"
            for field, value in zip(init_fields, values, strict=True)
            if field.kw_only
        ]
        return [f"{indent}return {prefix}cl({', '.join(positional + keywords)})"]
    namespace["_new"] = object.__new__
    namespace[f"{prefix}cl"] = cl
    lines = [f"{indent}_o = _new({prefix}cl)"]
    for position, (setter, value) in enumerate(zip(setters, values, strict=True)):
        namespace[f"{prefix}s{position}"] = setter
        lines.append(f"{indent}{prefix}s{position}(_o, {value})")
    lines.append(f"{indent}return _o")
    return lines


def compile_fast_structure(cl: Any, conv: cattrs.Converter) -> _StructureHook | None:
    """Generate a fast structuring function for ``cl``, or ``None`` if unsupported.

    It applies the same rules as the detailed pass: the exact-type checks of
    the ``str``/``bool``/``int`` hooks and the member lookup of string enums
    are written inline (they are the bulk of every payload), every other type
    calls the converter's own hook, and "null means absent" gives the field's
    default. It raises without saying why; :func:`from_wire` then asks the
    detailed converter, so the fast pass may be stricter than the detailed one
    but never more lenient (a property test checks that they agree).

    For an :class:`InstanceAcceptingConverter` the function also passes an
    instance of exactly ``cl`` through unchanged (see :func:`object_builder`).
    """
    hints = typing.get_type_hints(cl)
    accept_instances = isinstance(conv, InstanceAcceptingConverter)
    namespace: dict[str, Any] = {
        "_cl": cl,
        "Reject": Reject,
        "_MISSING": _MISSING,
    }
    lines: list[str] = []
    if accept_instances:
        lines.append("    if o.__class__ is _cl: return o")
    lines.append("    if o.__class__ is not dict: raise Reject")
    values: list[str] = []

    def check(var: str, field_type: Any, index: int, indent: str) -> None:
        inline = _inline_check(field_type, f"_i{index}", namespace)
        if inline is not None:
            condition, value = (part.format(v=var) for part in inline)
            lines.append(f"{indent}if not ({condition}): raise Reject")
            if value != var:
                lines.append(f"{indent}{var} = {value}")
            return
        item_type = homogeneous_item_type(field_type)
        if item_type is not None and attrs.has(item_type):
            namespace[f"_h{index}"] = conv.get_structure_hook(item_type)
            namespace[f"_t{index}"] = item_type
            lines.append(f"{indent}if {var}.__class__ is not list: raise Reject")
            if accept_instances:
                namespace[f"_only{index}"] = frozenset({item_type})
                lines.append(f"{indent}if _only{index}.issuperset(map(type, {var})):")
                lines.append(f"{indent}    {var} = tuple({var})")
                lines.append(f"{indent}else:")
                item = f"x if x.__class__ is _t{index} else _h{index}(x, _t{index})"
                lines.append(f"{indent}    {var} = tuple([{item} for x in {var}])")
            else:
                lines.append(f"{indent}{var} = tuple([_h{index}(x, _t{index}) for x in {var}])")
            return
        if field_type in (Any, object):
            lines.append(f"{indent}pass")
            return
        namespace[f"_h{index}"] = conv.get_structure_hook(field_type)
        namespace[f"_t{index}"] = field_type
        lines.append(f"{indent}{var} = _h{index}({var}, _t{index})")

    for index, field in enumerate(attrs.fields(cl)):
        if not field.init:
            continue
        field_type = hints.get(field.name, Any)
        nullable = accepts_none(field_type)
        value_type = strip_none(field_type) if nullable else field_type
        var = f"v{index}"
        key = field.name
        if field.default is attrs.NOTHING:
            lines.append(f"    {var} = o[{key!r}]")
            if nullable:
                lines.append(f"    if {var} is not None:")
                check(var, value_type, index, "        ")
            else:
                check(var, value_type, index, "    ")
        else:
            default_expr = _default_source(field.default, f"_v{index}", namespace)
            if default_expr is None:
                return None
            if nullable:
                lines.append(f"    {var} = o.get({key!r}, _MISSING)")
                lines.append(f"    if {var} is _MISSING: {var} = {default_expr}")
                lines.append(f"    elif {var} is not None:")
            else:
                lines.append(f"    {var} = o.get({key!r})")
                lines.append(f"    if {var} is None: {var} = {default_expr}")
                lines.append("    else:")
            check(var, value_type, index, "        ")
        values.append(var)
    lines.extend(_construct_lines(cl, values, namespace, "_", "    "))
    source = "def structure(o, _=None):\n" + "\n".join(lines) + "\n"
    exec(compile(source, f"<fast structure {cl.__module__}.{cl.__qualname__}>", "exec"), namespace)
    function: _StructureHook = namespace["structure"]
    return function


def _default_source(default: Any, name: str, namespace: dict[str, Any]) -> str | None:
    """Source of a field's default, bound in ``namespace``; None for one that needs the instance."""
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            return None
        namespace[f"{name}_f"] = default.factory
        return f"{name}_f()"
    namespace[f"{name}_d"] = default
    return f"{name}_d"


def homogeneous_item_type(cl: object) -> Any:
    """``X`` for ``tuple[X, ...]``, else ``None``."""
    if typing.get_origin(cl) is tuple:
        args = typing.get_args(cl)
        if len(args) == 2 and args[1] is Ellipsis:
            return args[0]
    return None


def strip_none(cl: Any) -> Any:
    """``X`` for ``X | None``; other types unchanged."""
    origin = typing.get_origin(cl)
    if origin is typing.Union or origin is types.UnionType:
        rest = tuple(arg for arg in typing.get_args(cl) if arg is not type(None))
        if len(rest) == 1:
            return rest[0]
    return cl


_MAX_LAYOUT_KEYS = 4


ObjectHook = Callable[[list[tuple[str, Any]]], object]


def _reachable_classes(root: Any, json_text: frozenset[type[Any]] = frozenset()) -> list[Any]:
    """``root`` and every record reachable through its fields, in discovery order.

    A record is what :func:`positional_records` says: an ``attrs`` class held
    directly or as tuple items (``X | None`` too), except the ``json_text`` classes.
    """
    found: list[Any] = [root]
    for cl in found:
        for _name, records in positional_plan(cl, json_text):
            if records is not None and records[1] not in found:
                found.append(records[1])
    return found


class _LayoutField:
    """How a builder checks and converts one field, as source expressions over ``{v}``."""

    def __init__(self, condition: str, value: str, default: str | None) -> None:
        self.condition = condition
        self.value = value
        self.default = default


def _inline_check(
    value_type: Any, name: str, namespace: dict[str, Any], eligible: Set[Any] = frozenset()
) -> tuple[str, str] | None:
    """``(condition, value)`` over ``{v}`` for the types every builder checks inline, or None.

    An exact ``str``/``bool``/``int``, a string enum's member lookup, a tuple of
    exact scalars: the bulk of every payload, checked as the converter's hooks do.
    For :func:`object_builder`, also an ``eligible`` class or a tuple of one: the
    value is an instance it has built already.
    """
    if value_type in _EXACT_SCALARS or (isinstance(value_type, type) and value_type in eligible):
        namespace[f"{name}_t"] = value_type
        return f"{{v}}.__class__ is {name}_t", "{v}"
    if is_enum(value_type) and all(type(member.value) is str for member in value_type):
        namespace[f"{name}_m"] = enum_members(value_type)[0]
        return f"{{v}}.__class__ is str and {{v}} in {name}_m", f"{name}_m[{{v}}]"
    item_type = homogeneous_item_type(value_type)
    if item_type in _EXACT_SCALARS or (isinstance(item_type, type) and item_type in eligible):
        namespace[f"{name}_only"] = frozenset({item_type})
        return (f"{{v}}.__class__ is list and {name}_only.issuperset(map(type, {{v}}))",
                "tuple({v})")
    return None


def _layout_field(
    cl: Any, field: Any, field_type: Any, prefix: str, namespace: dict[str, Any], eligible: set[Any]
) -> _LayoutField | None:
    """The builder's version of one field of :func:`compile_fast_structure`, or None."""
    nullable = accepts_none(field_type)
    value_type = strip_none(field_type) if nullable else field_type
    name = f"{prefix}{field.name}"
    inline = _inline_check(value_type, name, namespace, eligible)
    if inline is None:
        return None
    condition, value = inline
    default: str | None = None
    if field.default is not attrs.NOTHING:
        default = _default_source(field.default, name, namespace)
        if default is None:
            return None
    if nullable:
        # Present null stays None (as in the fast structure), absent means the default.
        condition = f"({{v}} is None or {condition})"
        value = value if value == "{v}" else f"(None if {{v}} is None else {value})"
    elif default is not None:
        condition = f"({{v}} is None or {condition})"
        value = f"({default} if {{v}} is None else {value})"
    return _LayoutField(condition, value, default)


def _layout_fields(
    cl: Any, prefix: str, namespace: dict[str, Any], eligible: set[Any]
) -> dict[str, _LayoutField] | None:
    """Every init field of ``cl`` as the builder handles it, or None if one is unsupported."""
    hints = typing.get_type_hints(cl)
    specs: dict[str, _LayoutField] = {}
    for field in attrs.fields(cl):
        if not field.init:
            continue
        spec = _layout_field(cl, field, hints.get(field.name, Any), prefix, namespace, eligible)
        if spec is None:
            return None
        specs[field.name] = spec
    return specs


def _class_layouts(
    cl: Any, specs: dict[str, _LayoutField], prefix: str, namespace: dict[str, Any]
) -> list[tuple[tuple[str, ...], list[str]]]:
    """Every key order the builder recognises for ``cl``, with the leaf source of each.

    The keys are all init fields, or only the required ones, in any order,
    when that is at most :data:`_MAX_LAYOUT_KEYS` keys.
    """
    every = tuple(specs)
    required = tuple(name for name in every if specs[name].default is None)
    layouts = []
    for subset in dict.fromkeys((every, required)):
        if not subset or len(subset) > _MAX_LAYOUT_KEYS:
            continue
        for order in itertools.permutations(subset):
            position = {name: index for index, name in enumerate(order)}
            conditions = [
                specs[name].condition.format(v=f"v{index}") for index, name in enumerate(order)
            ]
            values = []
            for name in every:
                if name in position:
                    values.append(specs[name].value.format(v=f"v{position[name]}"))
                else:
                    default = specs[name].default
                    assert default is not None
                    values.append(default)
            leaf = [f"if {' and '.join(conditions)}:"]
            leaf.extend(_construct_lines(cl, values, namespace, prefix, "    "))
            layouts.append((order, leaf))
    return layouts


def _emit_trie(
    layouts: list[tuple[tuple[str, ...], list[str]]], depth: int, indent: str, out: list[str]
) -> None:
    """Nested ``if kN == 'key'`` tests over the key tuples, leaves at full depth."""
    if len(layouts[0][0]) == depth:
        (_, leaf), = layouts
        out.extend(indent + line for line in leaf)
        return
    groups: dict[str, list[tuple[tuple[str, ...], list[str]]]] = {}
    for layout in layouts:
        groups.setdefault(layout[0][depth], []).append(layout)
    keyword = "if"
    for key, group in groups.items():
        out.append(f"{indent}{keyword} k{depth} == {key!r}:")
        _emit_trie(group, depth + 1, indent + "    ", out)
        keyword = "elif"


@functools.cache
def object_builder(root: Any) -> ObjectHook:
    """A JSON ``object_pairs_hook`` that builds ``root``'s small ``attrs`` values directly.

    Objects whose keys are exactly the fields of one class reachable from
    ``root`` (all init fields or only the required ones, any order, at most
    :data:`_MAX_LAYOUT_KEYS` keys) and whose values pass the fast structure's
    exact checks become instances as they are parsed; nested values must
    already be instances. Everything else becomes a ``dict``, and a duplicate
    key raises :class:`DuplicateKey`. A layout that two classes share is left to the dict path.
    Skipping the intermediate dicts and the second walk over them roughly
    halves the structuring cost of a large payload.
    """
    namespace: dict[str, Any] = {"_Duplicate": DuplicateKey}
    classes = [cl for cl in _reachable_classes(root) if slot_setters(cl) is not None]
    eligible = set(classes)
    while True:  # a class whose nested class cannot be prebuilt cannot be prebuilt either
        scratch: dict[str, Any] = {}
        dropped = {cl for cl in eligible if _layout_fields(cl, "_x_", scratch, eligible) is None}
        if not dropped:
            break
        eligible -= dropped
    by_keys: dict[tuple[str, ...], tuple[Any, list[str]] | None] = {}
    # The most deeply nested classes are tested first: collections multiply them.
    for number, cl in enumerate(cl for cl in reversed(classes) if cl in eligible):
        prefix = f"_c{number}_"
        specs = _layout_fields(cl, prefix, namespace, eligible)
        assert specs is not None
        for keys, leaf in _class_layouts(cl, specs, prefix, namespace):
            earlier = by_keys.get(keys, (cl, leaf))
            by_keys[keys] = (cl, leaf) if earlier is not None and earlier[0] is cl else None
    lines = ["def build(pairs):", "    n = len(pairs)"]
    keyword = "if"
    for size in range(_MAX_LAYOUT_KEYS, 0, -1):  # widest first: a payload's many records
        layouts = [(keys, entry[1]) for keys, entry in by_keys.items()
                   if entry is not None and len(keys) == size]
        if not layouts:
            continue
        targets = ", ".join(f"(k{index}, v{index})" for index in range(size))
        lines.append(f"    {keyword} n == {size}:")
        lines.append(f"        ({targets},) = pairs")
        _emit_trie(layouts, 0, "        ", lines)
        keyword = "elif"
    lines += [
        "    obj = dict(pairs)",
        "    if len(obj) != n: raise _Duplicate",
        "    return obj",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<object builder {root.__module__}.{root.__qualname__}>", "exec"),
         namespace)
    builder: ObjectHook = namespace["build"]
    return builder


# --- the positional form: a record as the JSON array of its fields' values -----------------


def positional_records(field_type: Any, json_text: frozenset[type[Any]]) -> tuple[bool, Any] | None:
    """``(many, record class)`` when a field holds records (``X``, ``X | None``, ``tuple[X, ...]``).

    A record is an ``attrs`` class, except the classes shown on the wire as a JSON
    value (``json_text``, the chat trace's ``RawResult``): those are values.
    """
    value_type = strip_none(field_type)
    item_type = homogeneous_item_type(value_type)
    candidate = value_type if item_type is None else item_type
    if isinstance(candidate, type) and attrs.has(candidate) and candidate not in json_text:
        return item_type is not None, candidate
    return None


@functools.cache
def positional_plan(
    cl: Any, json_text: frozenset[type[Any]]
) -> tuple[tuple[str, tuple[bool, Any] | None], ...]:
    """``(field name, the records it holds or None)`` for every field of ``cl``, in order."""
    hints = typing.get_type_hints(cl)
    return tuple((field.name, positional_records(hints[field.name], json_text))
                 for field in attrs.fields(cl))


def _positional_source(
    field_type: Any, var: str, tag: str, namespace: dict[str, Any],
    builders: dict[Any, str], json_text: frozenset[type[Any]],
) -> tuple[str, str]:
    """``(condition, value)`` source over ``var`` for one field of the positional form."""
    records = positional_records(field_type, json_text)
    nullable = type(None) in typing.get_args(field_type)
    if records is not None:
        many, cl = records
        condition = f"{var}.__class__ is list"
        value = f"tuple([{builders[cl]}(x) for x in {var}])" if many else f"{builders[cl]}({var})"
    elif is_json_value_type(field_type):
        return "True", var  # any JSON value, as the strict parser gives it
    else:
        condition, value = _positional_scalar(strip_none(field_type), var, tag, namespace,
                                              json_text)
    if nullable:
        condition = f"({var} is None or {condition})"
        value = var if value == var else f"(None if {var} is None else {value})"
    return condition, value


def _positional_scalar(
    field_type: Any, var: str, tag: str, namespace: dict[str, Any],
    json_text: frozenset[type[Any]],
) -> tuple[str, str]:
    """The check and value of a field that holds no record, as the converter reads it."""
    inline = _inline_check(field_type, f"_p{tag}", namespace)
    if inline is not None:
        return inline[0].format(v=var), inline[1].format(v=var)
    if field_type is float:  # the converter's rule: an integer is that float
        return (f"({var}.__class__ is float or {var}.__class__ is int)",
                f"({var} if {var}.__class__ is float else float({var}))")
    if field_type in json_text:  # shown as the JSON value, kept as its canonical text
        namespace[f"_j{tag}"], namespace["_canonical"] = field_type, canonical_json
        return "True", f"_j{tag}(_canonical({var}))"
    if typing.get_origin(field_type) is typing.Literal and all(
            type(arg) is str for arg in typing.get_args(field_type)):
        namespace[f"_l{tag}"] = frozenset(typing.get_args(field_type))
        return f"{var}.__class__ is str and {var} in _l{tag}", var
    raise TypeError(f"{field_type!r}: a type the positional form does not hold")


def _bad_position(record: str, field: str | None, value: object) -> typing.NoReturn:
    """The :class:`PayloadError` of an array that is not the positional form of ``record``."""
    if field is None:
        raise PayloadError(record, f"expected an array of {value} fields")
    raise PayloadError(f"{record}.{field}", f"a {type(value).__name__} is not what it holds")


@functools.cache
def positional_reader(root: Any, json_text: frozenset[type[Any]]) -> Callable[[object], Any]:
    """The strict reader of ``root``'s positional form: one function per record class.

    Each function checks its array's length and every field exactly as the
    converter does (an integer where a float is declared is that float; nothing
    else is coerced), then builds the instance, without its generated
    ``__init__`` where that only stores its arguments (:func:`slot_setters`).
    Anything else raises :class:`PayloadError` naming the record and field.
    """
    classes = _reachable_classes(root, json_text)
    builders = {cl: f"_build{number}" for number, cl in enumerate(classes)}
    namespace: dict[str, Any] = {"_Bad": _bad_position, "_new": object.__new__}
    lines: list[str] = []
    for number, cl in enumerate(classes):
        hints = typing.get_type_hints(cl)
        fields = attrs.fields(cl)
        if not all(field.init for field in fields):
            raise TypeError(f"{cl!r}: a field outside __init__ has no place in the positional form")
        names = ", ".join(f"v{index}" for index in range(len(fields)))
        lines += [f"def {builders[cl]}(row):",
                  f"    if row.__class__ is not list or len(row) != {len(fields)}:",
                  f"        _Bad({cl.__name__!r}, None, {len(fields)})",
                  f"    {names}{',' if len(fields) == 1 else ''} = row"]
        values = []
        for index, field in enumerate(fields):
            condition, value = _positional_source(hints[field.name], f"v{index}",
                                                  f"{number}_{index}", namespace, builders,
                                                  json_text)
            if condition != "True":
                lines += [f"    if not ({condition}):",
                          f"        _Bad({cl.__name__!r}, {field.name!r}, v{index})"]
            values.append(value)
        lines += _construct_lines(cl, values, namespace, f"_c{number}_", "    ")
        lines.append("")
    exec(compile("\n".join(lines), f"<positional reader {root.__module__}.{root.__qualname__}>",
                 "exec"), namespace)
    reader: Callable[[object], Any] = namespace["_build0"]
    return reader
