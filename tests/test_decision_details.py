"""Exact behaviours of the decision modules that mutation testing showed were unchecked.

Each test pins one observable detail: the exact Mermaid graph and fallback
layout, the trace details of a gatekeeper call, what an agent input carries,
and what the verifier evaluation keeps.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import diagnosis_core.protocol as dcp
from diagnosis_core import DiagnosisRequest, FailureKind, RunConfig
from diagnosis_core._chat.trace import RawResult
from diagnosis_core.machine import (
    AgentFailed,
    AgentReplied,
    GatekeeperFailed,
    GatekeeperReturned,
    NodeName,
)
from tests._reach import diagnosis_core as dc
from tests._reach import machine as dcm

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
CHECKED = {"claim_id": "c1", "source_invocation_id": "inv-1", "tool_name": "query_logs",
           "raw_path": "$.items[0].message", "status": "pass", "matched_text": "timeout"}
PASSED = {"status": "pass", "checked_bindings": [CHECKED]}
QUESTION = "Why does the payment API time out?"


def at_gatekeeper() -> dc.DiagnosisState:
    state = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    state = dcm.advance(state, AgentReplied(PLAN))
    return dcm.advance(state, AgentReplied(EVIDENCE))


def at_verifier() -> dc.DiagnosisState:
    return dcm.advance(at_gatekeeper(), GatekeeperReturned(PASSED))


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
    assert dcm.routing_mermaid() == MERMAID


def test_a_custom_table_is_drawn_and_routed_from_its_own_rows() -> None:
    table = (
        dcm.Route(None, dcm.Condition.ALWAYS, NodeName.PLANNER),
        dcm.Route(NodeName.PLANNER, dcm.Condition.RETRY_LEFT, NodeName.PLANNER, same_input=True),
        dcm.Route(NodeName.PLANNER, dcm.Condition.OTHERWISE, None),
    )
    assert dcm.routing_mermaid(table).splitlines()[3:] == [
        '    START -->|"always"| planner',
        '    planner -->|"retryable failure, retries left / same input"| planner',
        '    planner -->|"otherwise"| END',
    ]
    retry = dcm.RoutingFacts(status=dcm.NodeStatus.RETRYABLE_FAILED, retries_left=True)
    assert dcm.choose_route(NodeName.PLANNER, retry, table) is table[1]
    assert dcm.choose_route(NodeName.PLANNER, dcm.RoutingFacts(), table) is table[2]
    assert dcm.choose_route(None, dcm.RoutingFacts(), table) is table[0]


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
    text = dcm.render_post_verification_fallback(
        run_id="run-7",
        answer_mode=dc.AnswerMode.LOW_CONFIDENCE,
        allowed_claims=(dcm.AllowedClaim("c1", "Gateway <times> out"),),
        missing_info=("pool metrics",),
        recommended_actions=(),
        config=dc.DiagnosisConfig(),
    )
    assert text == POST_FALLBACK


# --- the gatekeeper node ------------------------------------------------------------------


def test_a_returned_result_is_traced_with_its_raw_status_and_level() -> None:
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned({"status": " FAIL", "level": "Reject"}))
    details = state.events[-2].details
    assert (details.raw_status, details.raw_level) == (" FAIL", "Reject")
    assert state.events[-2].reason_code is dc.ReasonCode.GATEKEEPER_REJECTED


def test_a_raising_gatekeeper_is_traced_with_its_message_and_no_raw_fields() -> None:
    state = dcm.advance(at_gatekeeper(), GatekeeperFailed("TimeoutError: 5 s"))
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
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned(long))
    audit = state.gatekeeper_audits[-1]
    assert audit.raw_result == RawResult(dcp.canonical_json({"unserializable": repr(long)[:2000]}))
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned({"x": _NoRepr()}))
    raw = state.gatekeeper_audits[-1].raw_result
    assert raw is not None and json.loads(raw.json_text) == {
        "unserializable": "<unrepresentable dict>"
    }


def test_an_unreadable_result_names_the_type_it_got() -> None:
    assert dcm.normalize_gatekeeper_result([PASSED]).problem == "$: expected an object, got list"


def test_an_exception_without_message_is_described_by_its_type_alone() -> None:
    assert dcm.gatekeeper_unavailable(TimeoutError()).problem == "TimeoutError"
    assert dcm.gatekeeper_unavailable(TimeoutError("5 s")).problem == "TimeoutError: 5 s"


# --- verifier and composer ------------------------------------------------------------------


def test_every_agent_input_carries_the_question_as_query() -> None:
    state = at_verifier()
    verifier_action = dcm.next_action(state)
    assert isinstance(verifier_action, dcm.InvokeAgent)
    assert json.loads(verifier_action.input)["query"] == QUESTION
    verdict = {"verdict": "PASS", "groundedness_score": 1, "facts_checked": [],
               "allowed_claim_ids": ["c1"]}
    state = dcm.advance(state, AgentReplied(json.dumps(verdict)))
    composer_action = dcm.next_action(state)
    assert isinstance(composer_action, dcm.InvokeAgent)
    assert json.loads(composer_action.input)["query"] == QUESTION


def test_unknown_allowed_ids_are_dropped_from_the_kept_evaluation_and_recorded() -> None:
    verdict = {"verdict": "PASS", "groundedness_score": 1, "allowed_claim_ids": ["ghost", "c1"],
               "facts_checked": [{"claim_id": "phantom", "fact": "f", "is_critical": True,
                                  "verification": "no_evidence"}]}
    state = dcm.advance(at_verifier(), AgentReplied(json.dumps(verdict)))
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
        state = dcm.advance(state, AgentReplied(json.dumps(verdict)))
    state = dcm.advance(state, AgentFailed(FailureKind.RETRYABLE, "TimeoutError: slow"))
    assert state.events[-1].details.error == "TimeoutError: slow"
    state = dcm.advance(state, AgentReplied("not json"))
    assert state.events[-2].details.error == (
        '$: expected JSON; the text is prose: "not json" — send only the JSON'
    )


def test_the_trace_report_carries_the_reason_code_of_the_run() -> None:
    state = dcm.advance(at_gatekeeper(), GatekeeperFailed("down"))
    report = dc.build_trace_report(state)
    assert report.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert report.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert report.answer == state.answer


# --- the pre-verification fallback as the machine renders it ---------------------------------

PRE_FALLBACK = """## Diagnosis could not be completed

None of the collected evidence could be confirmed against the recorded tool results.

- Reason code: NO_TRUSTED_EVIDENCE
- Evidence check status: LOW_CONFID
- Evidence bindings: 2 checked, 1 passed, 1 failed

### Tool calls

- query_logs: calls 2, failed 1
- (unnamed tool): calls 1, failed 0

No finding was verified, so this answer contains no diagnosis.

Inspect the trace of run run-1 for details."""

TRACED_EVIDENCE = json.dumps(
    {**json.loads(EVIDENCE),
     "tool_trace_summary": [{"tool_name": "query_logs", "success": True},
                            {"tool_name": "query_logs", "success": False},
                            {"tool_name": "bad name", "success": True}]}
)


def test_the_pre_verification_fallback_shows_status_counts_and_tools_of_the_run() -> None:
    state = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    state = dcm.advance(state, AgentReplied(PLAN))
    state = dcm.advance(state, AgentReplied(TRACED_EVIDENCE))
    entry: dict[str, Any] = dict(CHECKED)
    unmatched = {"status": "fail", "level": "low_confid", "checked_bindings": [
        {**entry, "raw_path": "$.other"}, {**entry, "status": "fail"},
    ]}
    state = dcm.advance(state, GatekeeperReturned(unmatched))
    assert state.answer == PRE_FALLBACK
    assert state.verified is None  # nothing was verified, nothing is kept as if it were


def test_an_unreadable_gatekeeper_result_shows_no_binding_counts() -> None:
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned({"status": "maybe"}))
    assert state.answer is not None
    assert "- Evidence check status: REJECT" in state.answer
    assert "Evidence bindings" not in state.answer
    audit = state.gatekeeper_audits[-1]
    assert audit.reason_code is dc.ReasonCode.GATEKEEPER_INVALID_RESULT
    assert audit.problem == "status: expected one of pass, fail"
    assert state.events[-2].details.error == "status: expected one of pass, fail"
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned({"status": "fail", "level": "reject",
                                                            "checked_bindings": []}))
    assert state.answer is not None and "- Evidence bindings: 0 checked" in state.answer


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"status": 1}, "status: expected a string, got int"),
        ({"status": "fail", "level": 2}, "level: expected a string, got int"),
        ({"status": "pass", "checked_bindings": [1]},
         "checked_bindings[0]: expected an object, got int"),
        ({"status": "pass", "checked_bindings": "x"},
         "checked_bindings: expected an array, got str"),
        ({"status": "pass", "checked_bindings": [{"claim_id": 5}]},
         "checked_bindings[0].claim_id: expected a string, got int"),
        ({"status": "fail"},
         "level: missing does not say how the failure ranks (low_confid or reject)"),
        ({"status": "fail", "level": "pass"},
         "level: pass does not say how the failure ranks (low_confid or reject)"),
    ],
)
def test_an_invalid_result_names_its_path_and_what_it_got(raw: object, problem: str) -> None:
    assert dcm.normalize_gatekeeper_result(raw).problem == problem


class _Exploding(dict):  # type: ignore[type-arg]
    def get(self, key: object, default: object = None) -> object:
        raise RuntimeError("broken client")


def test_a_result_whose_methods_raise_is_an_unreadable_result_at_the_top() -> None:
    with pytest.raises(dc.PayloadError) as error:
        dcp.parse_gatekeeper_result(_Exploding())
    assert (error.value.path, str(error.value)) == ("", "$: unreadable result (RuntimeError)")


def test_problem_texts_are_capped_at_a_thousand_characters() -> None:
    assert dcm.gatekeeper_unavailable("x" * 1000).problem == "x" * 1000
    assert dcm.gatekeeper_unavailable("x" * 1001).problem == "x" * 999 + "…"


# --- inputs, attempts and the state ------------------------------------------------------------


def test_planner_and_executor_inputs_carry_the_question_in_both_rounds() -> None:
    state = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    planner = dcm.next_action(state)
    assert isinstance(planner, dcm.InvokeAgent)
    assert json.loads(planner.input)["query"] == QUESTION
    state = dcm.advance(state, AgentReplied(PLAN))
    executor = dcm.next_action(state)
    assert isinstance(executor, dcm.InvokeAgent)
    assert json.loads(executor.input)["query"] == QUESTION
    state = dcm.advance(state, AgentReplied(EVIDENCE))
    low = {**PASSED, "status": "fail", "level": "low_confid"}
    state = dcm.advance(state, GatekeeperReturned(low))
    gap = {"verdict": "PASS", "groundedness_score": 0.5, "allowed_claim_ids": ["c1"],
           "facts_checked": [{"claim_id": "c1", "fact": "f", "is_critical": True,
                              "verification": "no_evidence"}]}
    state = dcm.advance(state, AgentReplied(json.dumps(gap)))
    second = dcm.next_action(state)
    assert isinstance(second, dcm.InvokeAgent) and second.round == 2
    assert json.loads(second.input)["query"] == QUESTION
    state = dcm.advance(state, AgentReplied(EVIDENCE))
    assert state.verified is None  # round 1's projection is not carried into round 2
    call = dcm.next_action(state)
    assert isinstance(call, dcm.CallGatekeeper) and call.round == 2


def test_the_gatekeeper_call_names_its_round() -> None:
    call = dcm.next_action(at_gatekeeper())
    assert isinstance(call, dcm.CallGatekeeper)
    assert (call.run_id, call.round) == ("run-1", 1)


@pytest.mark.parametrize("agent", ["planner", "executor"])
def test_failed_planner_and_executor_attempts_are_traced_with_their_error(agent: str) -> None:
    state = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    if agent == "executor":
        state = dcm.advance(state, AgentReplied(PLAN))
    state = dcm.advance(state, AgentReplied("[]"))
    assert state.events[-2 if agent == "executor" else -1].details.error == (
        "$: expected a JSON object, got an array of 0 items — send one object"
    )
    if agent == "executor":
        return
    state = dcm.advance(state, AgentFailed(FailureKind.NON_RETRYABLE, "ValueError: no"))
    assert state.events[-2].details.error == "ValueError: no"


def test_an_executor_that_raises_is_traced_with_its_error() -> None:
    state = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    state = dcm.advance(state, AgentReplied(PLAN))
    state = dcm.advance(state, AgentFailed(FailureKind.TOOL_BLOCKED, "ToolBlockedError: denied"))
    assert state.events[-2].details.error == "ToolBlockedError: denied"
    assert state.reason_code is dc.ReasonCode.EXECUTOR_TOOL_BLOCKED


def test_a_reply_that_is_not_text_is_a_machine_error_naming_its_type() -> None:
    state = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    problem = r"expected the agent's message text \(a str\), got int"
    with pytest.raises(dc.MachineError, match=problem):
        dcm.advance(state, AgentReplied(7))  # type: ignore[arg-type]


def test_inputs_of_a_question_with_a_lone_surrogate_are_hashed_as_sent() -> None:
    import hashlib

    state = dcm.start_diagnosis(DiagnosisRequest("why \ud800?", RunConfig("run-1", "chat-1")))
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent)
    state = dcm.advance(state, AgentReplied(PLAN))
    digest = hashlib.sha256(action.input.encode("utf-8", "surrogatepass")).hexdigest()
    assert state.events[0].input_sha256 == digest


def test_the_composer_output_is_kept_in_the_state() -> None:
    verdict = {"verdict": "PASS", "groundedness_score": 1, "facts_checked": [],
               "allowed_claim_ids": ["c1"]}
    state = dcm.advance(at_verifier(), AgentReplied(json.dumps(verdict)))
    reply = '{"answer": "It times out.", "cited_claim_ids": ["c1"]}'
    state = dcm.advance(state, AgentReplied(reply))
    assert state.composer_output == dcp.ComposerOutput("It times out.", ("c1",))
    assert (state.outcome, state.answer, state.reason_code) == (
        dc.Outcome.ANSWERED, "It times out.", None
    )


def test_misusing_the_machine_says_what_went_wrong() -> None:
    state = at_gatekeeper()
    with pytest.raises(dc.MachineError, match=r"a gatekeeper call; got AgentReplied"):
        dcm.advance(state, AgentReplied("{}"))
    planner = dcm.start_diagnosis(DiagnosisRequest(QUESTION, RunConfig("run-1", "chat-1")))
    with pytest.raises(dc.MachineError,
                       match="pending action is a planner invocation; got GatekeeperFailed"):
        dcm.advance(planner, GatekeeperFailed("x"))
    idle = dc.DiagnosisState(request=planner.request)
    with pytest.raises(dc.MachineError, match=r"^the state awaits nothing; it was not produced"):
        dcm.next_action(idle)
    with pytest.raises(dc.MachineError, match=r"^the state awaits nothing; it was not produced"):
        dcm.advance(idle, AgentReplied("{}"))
    finished = dcm.advance(state, GatekeeperFailed("down"))
    with pytest.raises(dc.MachineError, match=r"^the run has finished; there is nothing to"):
        dcm.advance(finished, GatekeeperFailed("down"))


# --- parsing, projection, routing and rendering edges -------------------------------------------


def test_exactly_two_bindings_with_the_same_key_are_a_duplicate() -> None:
    evidence = json.loads(EVIDENCE)
    binding = evidence["claims"][0]["bindings"][0]
    evidence["claims"][0]["bindings"] = [binding, {**binding, "evidence_excerpt": "other"}]
    with pytest.raises(dc.PayloadError, match=r"claims\[0\]\.bindings\[1\]: duplicate binding"):
        dcp.parse_executor_evidence(json.dumps(evidence))
    for field in ("source_invocation_id", "tool_name", "raw_path"):
        evidence["claims"][0]["bindings"] = [binding, {**binding, field: "different"}]
        assert len(dcp.parse_executor_evidence(json.dumps(evidence)).claims[0].bindings) == 2


def test_the_projector_skips_a_repeated_claim_and_keeps_the_ones_after_it() -> None:
    binding = dcp.EvidenceBinding("inv-1", "q", "$.a", "e")
    evidence = dc.ExecutorEvidence(
        dcp.EvidenceStatus.EVIDENCE_FOUND,
        (dcp.Claim("c1", "one", (binding, binding)), dcp.Claim("c1", "again", (binding,)),
         dcp.Claim("c2", "two", (binding,))),
    )
    checked = [
        dcp.CheckedBinding(claim, "inv-1", "q", "$.a", dcp.BindingCheckStatus.PASS, "m")
        for claim in ("c1", "c2")
    ]
    verified = dcm.project_verified_input(evidence, checked)
    assert [c.claim_id for c in verified.verified_executor_output] == ["c1", "c2"]
    assert [len(c.bindings) for c in verified.verified_executor_output] == [1, 1]
    assert len(verified.verified_evidence) == 2


def test_a_custom_table_without_rows_for_a_node_cannot_route_it() -> None:
    table = (dcm.Route(None, dcm.Condition.ALWAYS, NodeName.PLANNER),)
    with pytest.raises(LookupError, match="no route after"):
        dcm.choose_route(NodeName.COMPOSER, dcm.RoutingFacts(), table)


@pytest.mark.parametrize(
    ("text", "cap", "rendered"),
    [
        ("a\r\n\nb", 100, "a  b"),
        ("a\r\nb\r\n", 100, "a b"),
        ("\nabc", 100, "abc"),
        ("abcd     ", 5, "abcd"),
        ("abcd  e", 5, "abcd…"),
    ],
)
def test_sanitizing_counts_crlf_as_one_break_and_strips_before_capping(
    text: str, cap: int, rendered: str
) -> None:
    assert dcm.sanitize_item(text, cap) == rendered


def test_an_unserializable_result_is_recorded_without_its_memory_address() -> None:
    # Two runs fed a fresh ``object()`` each recorded two different facts (the repr names
    # the object's address), so a run and the same run with a journal sink differed; found
    # by property_tests/test_journal_drivers_properties.py on a fresh clone.
    first, second = object(), object()
    audits = [
        dcm.advance(at_gatekeeper(), GatekeeperReturned(raw)).gatekeeper_audits[-1].raw_result
        for raw in (first, second, {"x": first})
    ]
    assert audits[0] == audits[1] == RawResult(
        dcp.canonical_json({"unserializable": "<object object>"})
    )
    assert audits[2] == RawResult(
        dcp.canonical_json({"unserializable": "{'x': <object object>}"})
    )
