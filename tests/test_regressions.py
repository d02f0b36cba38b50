"""Regression examples for core bugs found by the property tests and the fuzzer."""

from __future__ import annotations

import json

import pytest

import diagnosis_core as dc
from diagnosis_core import FailureKind, PayloadError
from diagnosis_core._chat.trace import RawResult
from diagnosis_core.machine import GatekeeperReturned
from tests._reach import machine as dcm
from tests._reach import protocol as dcp


def test_scenario_without_run_id_whose_agent_text_has_a_lone_surrogate_loads() -> None:
    # Found by the scenarios() strategy: deriving the run id from the content hash
    # raised UnicodeEncodeError, although agent texts may hold anything (spec §9).
    scenario = dc.load_scenario(
        {"question": "why?", "responses": {"composer": [{"text": '{"answer": "\ud800"}'}]}}
    )
    assert scenario.run.run_id.startswith("run-") and scenario.run.session_id == scenario.run.run_id
    assert dc.replay({"question": "why?", "responses": {"planner": [{"text": "\udc00"}]}})


class _PretendsToTimeOut(Exception):
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return TimeoutError


def test_an_exception_whose_class_attribute_lies_is_not_retryable() -> None:
    # Found by the unknown_exceptions() strategy: isinstance() believed ``__class__``.
    error = _PretendsToTimeOut("not really")
    assert isinstance(error, TimeoutError)
    assert dc.default_failure_classifier(error) is FailureKind.NON_RETRYABLE
    assert dc.default_failure_classifier(TimeoutError("really")) is FailureKind.RETRYABLE


def test_a_gatekeeper_that_returned_json_null_round_trips_in_the_state() -> None:
    # Found by the stateful test: the audit copy RawResult("null") came back as None.
    state = dcm.start_diagnosis(dc.DiagnosisRequest("why?", dc.RunConfig("run-1", "chat-1")))
    state = dcm.advance(state, dcm.AgentReplied('{"steps": [{"step_id": "s", "goal": "g"}]}'))
    state = dcm.advance(state, dcm.AgentReplied(
        '{"schema_version": "executor_evidence_v2", "evidence_status": "no_evidence", "claims": []}'
    ))
    state = dcm.advance(state, GatekeeperReturned(None))
    assert state.gatekeeper_audits[0].raw_result == RawResult("null")
    assert dc.from_wire(dc.DiagnosisState, json.loads(dc.to_json(state))) == state
    failed = dcm.GatekeeperAudit(1, None, "down", dcp.GatekeeperStatus.REJECT,
                                dc.ReasonCode.GATEKEEPER_UNAVAILABLE, "down", 0, 0, 0, 0)
    assert failed.raw_result is None  # a raising gatekeeper keeps "no raw result"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": {"k": 1, "k": 2}, "b": }',
        '{"steps": [{"step_id": "s", "step_id": "t"}], "x": [1, 2',
        '{"a": NaN, "b": tru}',
        '[1e400, }',
    ],
)
def test_a_problem_followed_by_a_syntax_error_is_a_payload_error(text: str) -> None:
    # Found by fuzz/run_fuzz.py: the diagnostic second pass leaked JSONDecodeError.
    with pytest.raises(PayloadError, match=r"^\$: (invalid JSON at line 1|the JSON is cut off)"):
        dcp.loads_strict(text)
    with pytest.raises(PayloadError):
        dcp.parse_planner_plan(text, [])
