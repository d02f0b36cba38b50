"""Regression tests: hostile gatekeeper values, reference-gatekeeper cost, fresh fallback facts.

* hostile raw results are read through one defensive snapshot (spec §15):
  never a crash, a named exception type, one reading for everything;
* the reference gatekeeper folds each cited output once (spec §9 v1.1);
* a round-2 pre-verification fallback reports round 2 (spec §15).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import diagnosis_core as dc
from diagnosis_core import GatekeeperReturned, GatekeeperStatus, NodeName, ReasonCode
from tests.test_decision_details import CHECKED, at_gatekeeper

# --- hostile raw results -------------------------------------------------------------

METHODS = ("get", "items", "__iter__", "__getitem__", "keys", "values", "__len__")


def _raising_dict(method: str) -> type[dict[str, object]]:
    def raise_(self: object, *args: object) -> object:
        raise ZeroDivisionError(method)

    return type(f"Raising_{method.strip('_')}", (dict,), {method: raise_})


class _RaisingIterList(list[object]):
    def __iter__(self) -> Iterator[object]:
        raise OverflowError("no iteration")


class _HostileStr(str):
    __slots__ = ()

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no equality")


def _gatekeeper_event(state: dc.DiagnosisState) -> dc.TraceEvent:
    return [event for event in state.events if event.node is NodeName.GATEKEEPER][-1]


def _assert_unreadable(state: dc.DiagnosisState, error_type: str) -> None:
    assert state.gatekeeper is not None
    assert state.gatekeeper.status is GatekeeperStatus.REJECT
    assert state.gatekeeper.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    detail = _gatekeeper_event(state).details.error
    assert detail is not None and f"({error_type})" in detail
    assert state.finished and state.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    audit = state.gatekeeper_audits[-1].raw_result
    assert audit is not None and "unserializable" in json.loads(audit.json_text)
    assert dc.from_json(dc.DiagnosisState, dc.to_json(state)) == state


@pytest.mark.parametrize("method", METHODS)
def test_a_dict_subclass_with_a_raising_method_is_an_invalid_result(method: str) -> None:
    raw = _raising_dict(method)(status="pass", checked_bindings=[CHECKED])
    _assert_unreadable(dc.advance(at_gatekeeper(), GatekeeperReturned(raw)), "ZeroDivisionError")


@pytest.mark.parametrize("method", METHODS)
def test_a_raising_dict_subclass_inside_checked_bindings_is_an_invalid_result(method: str) -> None:
    raw = {"status": "pass", "checked_bindings": [_raising_dict(method)(CHECKED)]}
    _assert_unreadable(dc.advance(at_gatekeeper(), GatekeeperReturned(raw)), "ZeroDivisionError")


def test_a_list_subclass_whose_iteration_raises_is_an_invalid_result() -> None:
    raw = {"status": "pass", "checked_bindings": _RaisingIterList([CHECKED])}
    _assert_unreadable(dc.advance(at_gatekeeper(), GatekeeperReturned(raw)), "OverflowError")


def test_string_subclasses_reach_the_trace_as_plain_strings() -> None:
    raw = {"status": _HostileStr(" PASS "), "level": _HostileStr("pass"),
           "checked_bindings": [{**CHECKED, "claim_id": _HostileStr("c1")}]}
    state = dc.advance(at_gatekeeper(), GatekeeperReturned(raw))
    details = _gatekeeper_event(state).details
    assert type(details.raw_status) is str and details.raw_status == " PASS "
    assert type(details.raw_level) is str and details.raw_level == "pass"
    assert state.gatekeeper is not None and state.gatekeeper.status is GatekeeperStatus.PASS
    (entry,) = state.gatekeeper.checked_bindings
    assert type(entry.claim_id) is str
    assert dc.from_json(dc.DiagnosisState, dc.to_json(state)) == state


def test_normalization_and_audit_read_the_same_snapshot() -> None:
    """A mapping that answers differently on each read cannot show two faces."""

    class FlipFlop(dict[str, object]):
        reads = 0

        def get(self, key: str, default: object = None) -> object:
            FlipFlop.reads += 1
            return "pass" if FlipFlop.reads == 1 else "fail"

    state = dc.advance(at_gatekeeper(), GatekeeperReturned(FlipFlop(status="fail", level="reject")))
    assert state.gatekeeper is not None
    assert state.gatekeeper.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    assert state.gatekeeper.problem == "$: unreadable result (inconsistent FlipFlop)"


def test_a_host_mapping_is_read_once_per_protocol() -> None:
    """The snapshot is the only reader: each read protocol runs once, not once per consumer."""
    calls: list[str] = []

    class Counting(dict[str, object]):
        def items(self):  # type: ignore[no-untyped-def, override]
            calls.append("items")
            return super().items()

    state = dc.advance(at_gatekeeper(), GatekeeperReturned(Counting(status="pass")))
    assert calls == ["items"]
    assert state.gatekeeper is not None and state.gatekeeper.status is GatekeeperStatus.PASS
