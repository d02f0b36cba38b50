"""Exact behaviours of the decision modules that mutation testing showed were unchecked.

Each test pins one observable detail: the exact Mermaid graph and fallback
layout, the trace details of a gatekeeper call, what an agent input carries,
and what the verifier evaluation keeps.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import diagnosis_core as dc
from diagnosis_core import (
    AgentFailed,
    AgentReplied,
    DiagnosisRequest,
    FailureKind,
    GatekeeperFailed,
    GatekeeperReturned,
    NodeName,
    RawResult,
    RunConfig,
)

PLAN = '{"steps": [{"step_id": "s1", "goal": "read the gateway logs"}]}'
EVIDENCE = json.dumps(
    {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [
            {"claim_id": "c1", "text": "gateway times out", "is_critical": True,
             "bindings": [{"source_invocation_id": "inv-1", "tool_name": "query_logs",
                           "raw_path": "$.items[0].message", "evidence_excerpt": "timeout"}]}
        ],
    }
)
PASSED = {
    "status": "pass",
    "checked_bindings": [
        {"claim_id": "c1", "source_invocation_id": "inv-1", "tool_name": "query_logs",
         "raw_path": "$.items[0].message", "status": "pass", "matched_text": "timeout"}
    ],
}
QUESTION = "Why does the payment API time out?"


def at_gatekeeper() -> dc.DiagnosisState:
    state = dc.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    state = dc.advance(state, AgentReplied(PLAN))
    return dc.advance(state, AgentReplied(EVIDENCE))


def at_verifier() -> dc.DiagnosisState:
    return dc.advance(at_gatekeeper(), GatekeeperReturned(PASSED))


# --- the routing graph and the fallback layout -------------------------------------------

MERMAID = """flowchart TD
    START([start])
    END([END])
    START -->|"always"| planner
    planner -->|"COMPLETED"| executor
    planner -->|"retryable failure, retries left / same input"| planner
    planner -->|"otherwise / PLANNER_FAILED"| pre_verification_fallback
    executor -->|"COMPLETED"| gatekeeper
    executor -->|"any failure / node reason"| pre_verification_fallback
    gatekeeper -->|"PASS"| verified_input
    gatekeeper -->|"LOW_CONFID, trusted bindings"| verified_input
    gatekeeper -->|"LOW_CONFID, no trusted binding / NO_TRUSTED_EVIDENCE"| pre_verification_fallback
    gatekeeper -->|"REJECT / node reason"| pre_verification_fallback
    verified_input -->|"always"| verifier
    verifier -->|"retryable failure, retries left / same input"| verifier
    verifier -->|"other failure / VERIFIER_FAILED"| pre_verification_fallback
    verifier -->|"effective LOW_CONFID, critical gap, retry left"| evidence_retry
    verifier -->|"otherwise COMPLETED"| composer
    evidence_retry -->|"always"| executor
    composer -->|"COMPLETED"| END
    composer -->|"retryable failure, retries left / same input"| composer
    composer -->|"otherwise / COMPOSER_FAILED"| post_verification_fallback
    pre_verification_fallback -->|"always"| END
    post_verification_fallback -->|"always"| END
"""


def test_the_mermaid_graph_of_the_table_is_exactly_the_specified_flowchart() -> None:
    assert dc.routing_mermaid() == MERMAID


def test_a_custom_table_is_drawn_and_routed_from_its_own_rows() -> None:
    table = (
        dc.Route(None, dc.Condition.ALWAYS, NodeName.PLANNER),
        dc.Route(NodeName.PLANNER, dc.Condition.RETRY_LEFT, NodeName.PLANNER, same_input=True),
        dc.Route(NodeName.PLANNER, dc.Condition.OTHERWISE, None),
    )
    assert dc.routing_mermaid(table).splitlines()[3:] == [
        '    START -->|"always"| planner',
        '    planner -->|"retryable failure, retries left / same input"| planner',
        '    planner -->|"otherwise"| END',
    ]
    retry = dc.RoutingFacts(status=dc.NodeStatus.RETRYABLE_FAILED, retries_left=True)
    assert dc.choose_route(NodeName.PLANNER, retry, table) is table[1]
    assert dc.choose_route(NodeName.PLANNER, dc.RoutingFacts(), table) is table[2]
    assert dc.choose_route(None, dc.RoutingFacts(), table) is table[0]


POST_FALLBACK = """## Diagnosis summary (fallback)

The final answer could not be written, so the verified material is listed below.

- Answer mode: LOW_CONFIDENCE — low confidence; the findings below are only partly supported by evidence.

### Verified findings

- Gateway &lt;times&gt; out

### Missing information

- pool metrics

### Recommended actions

- None.

Inspect the trace of run run-7 for details."""  # noqa: E501


def test_the_post_verification_fallback_has_exactly_the_specified_layout() -> None:
    text = dc.render_post_verification_fallback(
        run_id="run-7",
        answer_mode=dc.AnswerMode.LOW_CONFIDENCE,
        allowed_claims=(dc.AllowedClaim("c1", "Gateway <times> out"),),
        missing_info=("pool metrics",),
        recommended_actions=(),
        config=dc.DiagnosisConfig(),
    )
    assert text == POST_FALLBACK


# --- the gatekeeper node ------------------------------------------------------------------


def test_a_returned_result_is_traced_with_its_raw_status_and_level() -> None:
    state = dc.advance(at_gatekeeper(), GatekeeperReturned({"status": " FAIL", "level": "Reject"}))
    details = state.events[-2].details
    assert (details.raw_status, details.raw_level) == (" FAIL", "Reject")
    assert state.events[-2].reason_code is dc.ReasonCode.GATEKEEPER_REJECTED


def test_a_raising_gatekeeper_is_traced_with_its_message_and_no_raw_fields() -> None:
    state = dc.advance(at_gatekeeper(), GatekeeperFailed("TimeoutError: 5 s"))
    event = state.events[-2]
    assert event.node is NodeName.GATEKEEPER
    assert event.details.raw_status is None and event.details.raw_level is None
    assert event.details.error == "TimeoutError: 5 s"
    audit = state.gatekeeper_audits[-1]
    assert (audit.error, audit.problem, audit.raw_result) == (
        "TimeoutError: 5 s", "TimeoutError: 5 s", None
    )
    wire: Any = dc.to_wire(state.result)
    assert wire["trace"][-2]["details"] == {
        "status": "REJECT", "checked": 0, "passed": 0, "failed": 0, "trusted_bindings": 0,
        "error": "TimeoutError: 5 s",
    }


class _NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_an_unserializable_raw_result_is_audited_by_its_capped_repr() -> None:
    long = {"values": {"x" * 3000}}  # a set: not JSON
    state = dc.advance(at_gatekeeper(), GatekeeperReturned(long))
    audit = state.gatekeeper_audits[-1]
    assert audit.raw_result == RawResult(dc.canonical_json({"unserializable": repr(long)[:2000]}))
    state = dc.advance(at_gatekeeper(), GatekeeperReturned({"x": _NoRepr()}))
    raw = state.gatekeeper_audits[-1].raw_result
    assert raw is not None and json.loads(raw.json_text) == {
        "unserializable": "<unrepresentable dict>"
    }


def test_an_unreadable_result_names_the_type_it_got() -> None:
    assert dc.normalize_gatekeeper_result([PASSED]).problem == "$: expected an object, got list"


def test_an_exception_without_message_is_described_by_its_type_alone() -> None:
    assert dc.gatekeeper_unavailable(TimeoutError()).problem == "TimeoutError"
    assert dc.gatekeeper_unavailable(TimeoutError("5 s")).problem == "TimeoutError: 5 s"


# --- verifier and composer ------------------------------------------------------------------


def test_every_agent_input_carries_the_question_as_query() -> None:
    state = at_verifier()
    verifier_action = dc.next_action(state)
    assert isinstance(verifier_action, dc.InvokeAgent)
    assert json.loads(verifier_action.input)["query"] == QUESTION
    verdict = {"verdict": "PASS", "groundedness_score": 1, "facts_checked": [],
               "allowed_claim_ids": ["c1"]}
    state = dc.advance(state, AgentReplied(json.dumps(verdict)))
    composer_action = dc.next_action(state)
    assert isinstance(composer_action, dc.InvokeAgent)
    assert json.loads(composer_action.input)["query"] == QUESTION


def test_unknown_allowed_ids_are_dropped_from_the_kept_evaluation_and_recorded() -> None:
    verdict = {"verdict": "PASS", "groundedness_score": 1, "allowed_claim_ids": ["ghost", "c1"],
               "facts_checked": [{"claim_id": "phantom", "fact": "f", "is_critical": True,
                                  "verification": "no_evidence"}]}
    state = dc.advance(at_verifier(), AgentReplied(json.dumps(verdict)))
    evaluation = state.verifier_evaluations[-1]
    assert evaluation.output.allowed_claim_ids == ("c1",)
    assert evaluation.output.facts_checked == ()
    assert evaluation.unknown_claim_ids == ("phantom", "ghost")
    assert state.events[-1].details.unknown_claim_ids == ("phantom", "ghost")


@pytest.mark.parametrize("agent", ["verifier", "composer"])
def test_a_failed_attempt_is_traced_with_its_error(agent: str) -> None:
    state = at_verifier()
    if agent == "composer":
        verdict = {"verdict": "PASS", "groundedness_score": 1, "facts_checked": [],
                   "allowed_claim_ids": ["c1"]}
        state = dc.advance(state, AgentReplied(json.dumps(verdict)))
    state = dc.advance(state, AgentFailed(FailureKind.RETRYABLE, "TimeoutError: slow"))
    assert state.events[-1].details.error == "TimeoutError: slow"
    state = dc.advance(state, AgentReplied("not json"))
    assert state.events[-2].details.error == (
        "$: invalid JSON: Expecting value at line 1 column 1"
    )


def test_the_trace_report_carries_the_reason_code_of_the_run() -> None:
    state = dc.advance(at_gatekeeper(), GatekeeperFailed("down"))
    report = dc.build_trace_report(state)
    assert report.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert report.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert report.answer == state.answer
