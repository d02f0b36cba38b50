"""The shared ``__repr__`` prints exactly what attrs would have generated for the class."""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType
from typing import Any

import attrs
import pytest

import diagnosis_core
from diagnosis_core import RunConfig
from diagnosis_core._chat.projection import (
    AllowedClaim,
    VerifiedBinding,
    VerifiedClaim,
    VerifiedEvidence,
    VerifiedInput,
)
from diagnosis_core._kernel.records import attrs_repr, share_repr


def _attrs_generated(cls: type[Any]) -> type[Any]:
    """The same fields, named alike, with the repr attrs generates (the oracle)."""
    return attrs.make_class(
        cls.__name__,
        {field.name: attrs.field(repr=field.repr, init=field.init, default=field.default)
         for field in attrs.fields(cls)},
        frozen=True,
    )


def _same_values(value: Any, oracle: type[Any]) -> object:
    return oracle(**{field.name: getattr(value, field.name)
                     for field in attrs.fields(type(value)) if field.init})


binding = VerifiedBinding("inv-1", "query_logs", "$.log")
SAMPLES: list[object] = [
    binding,
    VerifiedClaim("c1", "the pod 'api' restarted\n", True, (binding,)),
    VerifiedEvidence("c1", "inv-1", "query_logs", "$.log", 'matched "text"'),
    VerifiedInput(),
    VerifiedInput((VerifiedClaim("c1", "t", False, (binding,)),),
                  (VerifiedEvidence("c1", "inv-1", "query_logs", "$.log", "m"),)),
    AllowedClaim("c1", "é 中"),
    RunConfig("run-1", "session-1"),
    RunConfig("run-1", "session-1", {"b": "2", "a": "1"}),
]


@pytest.mark.parametrize("value", SAMPLES, ids=lambda value: type(value).__name__)
def test_the_shared_repr_prints_what_attrs_generates(value: object) -> None:
    assert type(value).__repr__ is attrs_repr
    assert repr(value) == repr(_same_values(value, _attrs_generated(type(value))))


def test_run_config_repr_names_every_field() -> None:
    assert repr(RunConfig("r", "s", {"k": "v"})) == (
        f"RunConfig(run_id='r', session_id='s', metadata={MappingProxyType({'k': 'v'})!r})"
    )


def test_every_class_of_the_package_using_it_prints_what_attrs_generates() -> None:
    """Classes adopt the shared repr one by one; each one's output is checked the same way."""
    users = []
    for info in pkgutil.walk_packages(diagnosis_core.__path__, "diagnosis_core."):
        if ".adapters." in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__dict__.get("__repr__") is attrs_repr:
                users.append(value)
    assert {cls.__name__ for cls in users} >= {
        "AllowedClaim", "RunConfig", "VerifiedBinding", "VerifiedClaim", "VerifiedEvidence",
        "VerifiedInput", "TraceEvent", "DiagnosisState", "RunOptions", "PlannerPlan",
    }
    for cls in users:
        assert attrs.has(cls), cls


@attrs.frozen
class _Shown:
    __repr__ = attrs_repr

    plain: object
    hidden: str = attrs.field(repr=False, default="secret")
    custom: int = attrs.field(repr=lambda value: f"<{value}>", default=7)
    derived: str = attrs.field(init=False, default="d")


@attrs.define
class _Holder:
    __repr__ = attrs_repr

    items: list[object]


def test_field_repr_settings_are_honoured_as_attrs_honours_them() -> None:
    shown = _Shown([1, "x"])
    assert repr(shown) == "_Shown(plain=[1, 'x'], custom=<7>, derived='d')"
    oracle = _attrs_generated(_Shown)
    oracle_instance = oracle(plain=[1, "x"], hidden="secret", custom=7)
    assert repr(shown) == repr(oracle_instance)


def test_a_value_that_contains_itself_prints_dots_like_attrs() -> None:
    holder = _Holder([])
    holder.items.append(holder)
    assert repr(holder) == "_Holder(items=[...])"

    @attrs.define
    class _Generated:
        items: list[object]

    generated = _Generated([])
    generated.items.append(generated)
    assert repr(generated).replace(_Generated.__qualname__.rsplit(">.", 1)[-1], "_Holder") == (
        repr(holder)
    )
    # The guard is released: the same object prints in full again afterwards.
    holder.items.clear()
    assert repr(holder) == "_Holder(items=[])"


def test_a_repr_that_raises_releases_the_guard() -> None:
    class Boom:
        def __repr__(self) -> str:
            raise RuntimeError("boom")

    shown = _Shown(Boom())
    with pytest.raises(RuntimeError, match="boom"):
        repr(shown)
    shown_again = attrs.evolve(shown, plain=1)
    assert repr(shown_again) == "_Shown(plain=1, custom=<7>, derived='d')"
    holder = _Holder([Boom()])
    with pytest.raises(RuntimeError, match="boom"):
        repr(holder)
    holder.items.clear()
    assert repr(holder) == "_Holder(items=[])"


def test_share_repr_refuses_a_class_with_its_own_repr() -> None:
    with pytest.raises(TypeError, match=r"^_Shown: already has a __repr__; declare it repr=False"):
        share_repr(_Shown)
