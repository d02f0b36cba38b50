"""The gatekeeper fact's stored text, written directly, is the text of its plain copy (§12.1).

A journal stores ``canonical_json(gatekeeper_fact(raw))``. The recorder writes
it without making the plain copy first when ``raw`` is storable as it is;
these properties check that shortcut against the composition it replaces, on
plain JSON values, on values JSON holds differently (tuples, floats, lone
surrogates, surrogate pairs), on values it cannot hold (non-string keys,
non-finite numbers, over-long integers, subclasses of the built-ins, cycles)
and on the hostile host objects of ``diagnosis_core.testing``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from diagnosis_core._chat.facts import gatekeeper_fact, gatekeeper_fact_json
from diagnosis_core.protocol import canonical_json
from tests._reach import testing as dt


class _Text(str):
    """A subclass of ``str``: stored as a plain string, never as the subclass."""


class _Number(int):
    """A subclass of ``int`` (``bool`` is one too)."""


def _scalars() -> st.SearchStrategy[object]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),  # NaN and the infinities included
        dt.fact_texts(max_size=12),
        st.builds(lambda: 10**5000),  # more digits than spec §5 allows
        st.builds(_Text, dt.fact_texts(max_size=6)),
        st.builds(_Number, st.integers(-5, 5)),
    )


def _containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    keys = st.one_of(dt.fact_texts(max_size=6), st.integers(0, 3), st.none())
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(dt.fact_texts(max_size=6), children, max_size=4),
        st.dictionaries(keys, children, max_size=3),
    )


_RAW_VALUES = st.recursive(_scalars(), _containers, max_leaves=10)


def _composed(raw: object) -> str:
    return canonical_json(gatekeeper_fact(raw))


def _addresses_hidden(text: str) -> str:
    """A description's ``0x…`` object addresses, which differ between two fresh objects."""
    return re.sub(r"0x[0-9a-f]+", "0x…", text)


@given(dt.json_values())
def test_a_plain_json_value_is_stored_as_its_canonical_text(raw: Any) -> None:
    assert gatekeeper_fact_json(raw) == _composed(raw) == canonical_json(raw)


@given(_RAW_VALUES)
def test_any_value_is_stored_as_the_text_of_its_fact(raw: object) -> None:
    assert gatekeeper_fact_json(raw) == _composed(raw)


@given(st.sampled_from(dt.hostile_gatekeeper_factories()))
def test_a_hostile_host_object_is_stored_as_the_text_of_its_fact(make: Any) -> None:
    # Some count their reads: each side is given its own fresh object.
    assert _addresses_hidden(gatekeeper_fact_json(make())) == _addresses_hidden(_composed(make()))


def test_values_that_are_stored_alike_either_way() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    deep: object = 0
    for _ in range(2000):
        deep = [deep]
    cases: list[object] = [
        cyclic, deep, (1, [2.5, -0.0]), {"a": "\ud800", "b": "\ud83d\ude00"},
        {"k": math.inf}, {1: "x"}, _Text("t"), [_Number(3), True], 10**4300, -(10**4301),
        {"z": 1, "a": {"y": (), "b": []}}, 1e308, 5e-324,
    ]
    for raw in cases:
        assert gatekeeper_fact_json(raw) == _composed(raw), repr(raw)[:80]
