"""The positional wire form of a record: ``to_wire_array`` and ``from_wire_array``.

The stores keep every ended run's summary in this form (``stores/_summary.py``);
these are the contract's cases on records of their own, every field type the
form holds, and the errors of everything else.
"""

from __future__ import annotations

import enum
import json
from typing import Literal

import attrs
import pytest

import diagnosis_core as dc


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Leaf:
    name: str
    weight: float


@attrs.frozen
class Tree:
    label: str
    count: int
    ok: bool
    share: float
    kind: Literal["a", "b"]
    colour: Colour
    tags: tuple[str, ...]
    data: dc.JsonValue
    leaf: Leaf
    leaves: tuple[Leaf, ...]
    spare: Leaf | None = None
    note: str | None = None


TREE = Tree("t", 3, True, 0.5, "b", Colour.BLUE, ("x", "y"), {"leaf": ["n", 1.0]},
            Leaf("l", 2.0), (Leaf("m", 1.5),))


def test_a_record_is_the_array_of_its_fields_in_declaration_order() -> None:
    assert dc.to_wire_array(TREE) == [
        "t", 3, True, 0.5, "b", "blue", ["x", "y"], {"leaf": ["n", 1.0]},
        ["l", 2.0], [["m", 1.5]], None, None]


def test_the_array_reads_back_as_the_record_after_a_json_round_trip() -> None:
    text = json.dumps(dc.to_wire_array(TREE))
    assert dc.from_wire_array(Tree, json.loads(text)) == TREE
    with_spare = attrs.evolve(TREE, spare=Leaf("s", 0.0), note="n")
    assert dc.from_wire_array(Tree, dc.to_wire_array(with_spare)) == with_spare


def test_an_integer_where_a_float_is_declared_is_that_float() -> None:
    leaf = dc.from_wire_array(Leaf, ["l", 2])
    assert leaf == Leaf("l", 2.0) and type(leaf.weight) is float


def test_a_json_value_shaped_like_a_record_stays_json() -> None:
    row = dc.to_wire_array(TREE)
    row[7] = ["l", 2.0]
    assert dc.from_wire_array(Tree, row).data == ["l", 2.0]


@pytest.mark.parametrize(("data", "path", "problem"), [
    ({"name": "l", "weight": 1.0}, "Leaf", "expected an array of 2 fields"),
    (["l"], "Leaf", "expected an array of 2 fields"),
    (["l", 1.0, 2.0], "Leaf", "expected an array of 2 fields"),
    ([1, 1.0], "Leaf.name", "a int is not what it holds"),
    (["l", True], "Leaf.weight", "a bool is not what it holds"),
    (["l", "1.0"], "Leaf.weight", "a str is not what it holds"),
])
def test_anything_else_is_a_payload_error_naming_record_and_field(
    data: object, path: str, problem: str
) -> None:
    with pytest.raises(dc.PayloadError) as info:
        dc.from_wire_array(Leaf, data)
    assert (info.value.path, info.value.problem) == (path, problem)


@pytest.mark.parametrize(("index", "value", "path"), [
    (1, True, "Tree.count"),  # a bool is no integer
    (4, "c", "Tree.kind"),
    (5, "green", "Tree.colour"),
    (6, ["x", 1], "Tree.tags"),
    (8, None, "Tree.leaf"),
    (9, [["m"]], "Leaf"),
])
def test_every_field_type_is_checked(index: int, value: object, path: str) -> None:
    row = dc.to_wire_array(TREE)
    row[index] = value  # type: ignore[call-overload]
    with pytest.raises(dc.PayloadError) as info:
        dc.from_wire_array(Tree, row)
    assert info.value.path == path


@attrs.frozen
class Mapped:
    counts: dict[str, int]


@attrs.frozen
class Derived:
    name: str
    size: int = attrs.field(init=False, default=0)


def test_a_type_the_form_does_not_hold_is_a_type_error_at_first_use() -> None:
    with pytest.raises(TypeError, match="positional form does not hold"):
        dc.from_wire_array(Mapped, [{}])
    with pytest.raises(TypeError, match="outside __init__"):
        dc.from_wire_array(Derived, ["n", 0])
    with pytest.raises(TypeError, match="expected an attrs record, got dict"):
        dc.to_wire_array({"name": "l"})
