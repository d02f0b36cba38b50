"""Every row of the routing table (spec §7), exercised through the machine."""

from __future__ import annotations

from typing import Any

import pytest
from _builders import (
    PLAN,
    claim,
    composer,
    error,
    executor,
    gap_fact,
    gatekeeper_for,
    scenario,
    text,
    verifier,
)

import diagnosis_core as dc
from diagnosis_core import ReasonCode
from diagnosis_core.machine import NodeName
from tests._reach import machine as dcm


def nodes(result: dict[str, Any]) -> list[tuple[str, int, int, str, str | None]]:
    return [
        (e["node"], e["round"], e["attempt"], e["status"], e["reason_code"])
        for e in result["trace"]
    ]


def test_start_routes_to_planner() -> None:
    state = dcm.start_diagnosis(
        dc.DiagnosisRequest("q", dc.RunConfig("r", "s"))
    )
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent)
    assert action.agent is dcm.AgentName.PLANNER
    assert (action.round, action.attempt) == (1, 1)


def test_happy_path_takes_every_completed_row() -> None:
    result = dc.replay(scenario())
    assert nodes(result) == [
        ("planner", 1, 1, "COMPLETED", None),
        ("executor", 1, 1, "COMPLETED", None),
        ("gatekeeper", 1, 1, "COMPLETED", None),
        ("verified_input", 1, 1, "COMPLETED", None),
        ("verifier", 1, 1, "COMPLETED", None),
        ("composer", 1, 1, "COMPLETED", None),
    ]
    assert result["outcome"] == "ANSWERED"
    assert result["answer"] == "The gateway times out calling pay-svc."
    assert result["reason_code"] is None
    assert result["calls"] == {
        "planner": 1, "executor": 1, "gatekeeper": 1, "verifier": 1, "composer": 1
    }


@pytest.mark.parametrize("failure", [error("retryable"), {"text": "not json"}])
def test_planner_retryable_failure_with_retries_left_is_retried(failure: dict[str, Any]) -> None:
    result = dc.replay(scenario(planner=[failure, text(PLAN)]))
    trace = nodes(result)
    assert trace[0][:3] == ("planner", 1, 1)
    assert trace[0][4] == "PLANNER_FAILED"
    assert trace[1] == ("planner", 1, 2, "COMPLETED", None)
    assert result["invocations"][0]["input"] == result["invocations"][1]["input"]
    assert result["outcome"] == "ANSWERED"


@pytest.mark.parametrize(
    ("responses", "config"),
    [
        ([error("non_retryable")], None),
        ([error("unknown")], None),
        ([error("retryable"), error("retryable")], None),
        ([{"text": "x"}, {"text": "y"}], None),
        ([error("retryable")], {"technical_retry_limit": 0}),
        ([], None),  # an exhausted script is non-retryable
    ],
)
def test_planner_other_failures_go_to_pre_verification_fallback(
    responses: list[dict[str, Any]], config: dict[str, Any] | None
) -> None:
    result = dc.replay(scenario(planner=responses, config=config))
    assert result["outcome"] == "PRE_VERIFICATION_FALLBACK"
    assert result["reason_code"] == "PLANNER_FAILED"
    assert result["rounds"] == 0
    last = nodes(result)[-1]
    assert last == ("pre_verification_fallback", 1, 1, "COMPLETED", "PLANNER_FAILED")
    assert result["calls"]["executor"] == 0


@pytest.mark.parametrize(
    ("response", "status", "reason"),
    [
        (error("retryable"), "RETRYABLE_FAILED", "EXECUTOR_FAILED"),
        (error("non_retryable"), "NON_RETRYABLE_FAILED", "EXECUTOR_FAILED"),
        (error("unknown"), "NON_RETRYABLE_FAILED", "EXECUTOR_FAILED"),
        (error("tool_blocked"), "NON_RETRYABLE_FAILED", "EXECUTOR_TOOL_BLOCKED"),
        ({"text": "{}"}, "INVALID_OUTPUT", "EXECUTOR_INVALID_OUTPUT"),
    ],
)
def test_executor_failures_are_never_retried(
    response: dict[str, Any], status: str, reason: str
) -> None:
    result = dc.replay(scenario(executor_=[response, text(executor())]))
    assert nodes(result)[1] == ("executor", 1, 1, status, reason)
    assert nodes(result)[2] == ("pre_verification_fallback", 1, 1, "COMPLETED", reason)
    assert result["calls"]["executor"] == 1
    assert result["calls"]["gatekeeper"] == 0
    assert result["reason_code"] == reason


def test_valid_no_evidence_output_is_completed_and_checked() -> None:
    empty = executor(claims=[])
    result = dc.replay(
        scenario(
            executor_=[text(empty)],
            gatekeeper=[{"result": {"status": "pass"}}],
            verifier_=[text(verifier("REJECT", allowed=[], facts=[]))],
            composer_=[text(composer("Nothing was found.", cited=[]))],
        )
    )
    assert nodes(result)[1] == ("executor", 1, 1, "COMPLETED", None)
    assert result["outcome"] == "ANSWERED"
    assert result["effective_verdict"] == "REJECT"
    composer_input = result["invocations"][-1]["input"]
    assert '"answer_mode":"DEGRADED"' in composer_input


def test_gatekeeper_low_confid_with_trusted_binding_goes_to_verified_input() -> None:
    ex = executor(claims=[claim("c1"), claim("c2", bindings=[{
        "source_invocation_id": "inv-8", "tool_name": "query_logs", "raw_path": "$.x",
        "evidence_excerpt": "forged"}])])
    result = dc.replay(
        scenario(
            executor_=[text(ex)],
            gatekeeper=[{"result": gatekeeper_for(ex, failed=frozenset({"c2"}))}],
            verifier_=[text(verifier("PASS"))],
        )
    )
    assert nodes(result)[2] == ("gatekeeper", 1, 1, "COMPLETED", None)
    assert nodes(result)[3][0] == "verified_input"
    assert result["gatekeeper_status"] == "LOW_CONFID"
    assert result["model_verdict"] == "PASS"
    assert result["effective_verdict"] == "LOW_CONFID"


def test_low_confid_without_trusted_binding_goes_to_fallback() -> None:
    ex = executor()
    raw = gatekeeper_for(ex, failed=frozenset({"c1"}), status="fail", level="low_confid")
    result = dc.replay(scenario(gatekeeper=[{"result": raw}]))
    assert nodes(result)[2] == ("gatekeeper", 1, 1, "COMPLETED", "NO_TRUSTED_EVIDENCE")
    assert nodes(result)[3] == (
        "pre_verification_fallback", 1, 1, "COMPLETED", "NO_TRUSTED_EVIDENCE"
    )
    assert result["calls"]["verifier"] == 0


def test_low_confid_pass_entries_that_match_no_executor_binding_are_not_trusted() -> None:
    raw = {"status": "fail", "level": "low_confid", "checked_bindings": [
        {"claim_id": "c1", "source_invocation_id": "inv-7", "tool_name": "query_logs",
         "raw_path": "$.items[0].message ", "status": "pass", "matched_text": "x"}]}
    result = dc.replay(scenario(gatekeeper=[{"result": raw}]))
    assert result["reason_code"] == "NO_TRUSTED_EVIDENCE"


@pytest.mark.parametrize(
    ("entry", "reason", "status"),
    [
        ({"result": {"status": "fail", "level": "reject"}}, "GATEKEEPER_REJECTED", "COMPLETED"),
        ({"result": {"status": "maybe"}}, "GATEKEEPER_INVALID_RESULT", "COMPLETED"),
        ({"result": None}, "GATEKEEPER_INVALID_RESULT", "COMPLETED"),
        ({"result": [1, 2]}, "GATEKEEPER_INVALID_RESULT", "COMPLETED"),
        ({"error": {"message": "503"}}, "GATEKEEPER_UNAVAILABLE", "NON_RETRYABLE_FAILED"),
        ({"error": {"kind": "retryable"}}, "GATEKEEPER_UNAVAILABLE", "NON_RETRYABLE_FAILED"),
    ],
)
def test_gatekeeper_reject_goes_to_fallback_with_its_reason(
    entry: dict[str, Any], reason: str, status: str
) -> None:
    result = dc.replay(scenario(gatekeeper=[entry, {"result": {"status": "pass"}}]))
    assert nodes(result)[2] == ("gatekeeper", 1, 1, status, reason)
    assert result["outcome"] == "PRE_VERIFICATION_FALLBACK"
    assert result["reason_code"] == reason
    assert result["gatekeeper_status"] == "REJECT"
    assert result["calls"]["gatekeeper"] == 1


def test_gatekeeper_with_no_scripted_entry_is_unavailable() -> None:
    result = dc.replay(scenario(gatekeeper=[]))
    assert result["reason_code"] == "GATEKEEPER_UNAVAILABLE"


@pytest.mark.parametrize("failure", [error("retryable"), {"text": "{\"verdict\": \"PASS\"}"}])
def test_verifier_retryable_failure_is_retried_with_the_same_input(
    failure: dict[str, Any],
) -> None:
    result = dc.replay(scenario(verifier_=[failure, text(verifier())]))
    trace = nodes(result)
    assert trace[4][:3] == ("verifier", 1, 1) and trace[4][4] == "VERIFIER_FAILED"
    assert trace[5] == ("verifier", 1, 2, "COMPLETED", None)
    inputs = [i["input"] for i in result["invocations"] if i["agent"] == "verifier"]
    assert inputs[0] == inputs[1]
    assert result["outcome"] == "ANSWERED"


@pytest.mark.parametrize(
    "responses",
    [[error("non_retryable")], [error("retryable"), error("retryable")],
     [error("tool_blocked")], [{"text": ""}, {"text": "[]"}]],
)
def test_verifier_other_failure_goes_to_fallback(responses: list[dict[str, Any]]) -> None:
    result = dc.replay(scenario(verifier_=responses))
    assert result["reason_code"] == "VERIFIER_FAILED"
    assert result["outcome"] == "PRE_VERIFICATION_FALLBACK"
    assert result["model_verdict"] is None and result["effective_verdict"] is None
    assert nodes(result)[-1][0] == "pre_verification_fallback"


def _retry_scenario(**overrides: Any) -> dict[str, Any]:
    ex = executor()
    low = text(verifier("LOW_CONFID", facts=[gap_fact()]))
    parts: dict[str, Any] = {
        "executor_": [text(ex), text(ex)],
        "verifier_": [low, low],
        "gatekeeper": [{"result": gatekeeper_for(ex)}, {"result": gatekeeper_for(ex)}],
    }
    parts.update(overrides)
    return scenario(**parts)


def test_effective_low_confid_with_a_gap_goes_to_evidence_retry_once() -> None:
    result = dc.replay(_retry_scenario())
    trace = nodes(result)
    assert [t[0] for t in trace] == [
        "planner", "executor", "gatekeeper", "verified_input", "verifier", "evidence_retry",
        "executor", "gatekeeper", "verified_input", "verifier", "composer",
    ]
    assert trace[5] == ("evidence_retry", 1, 1, "COMPLETED", None)
    assert trace[6][:2] == ("executor", 2)
    assert trace[-1][:2] == ("composer", 2)
    assert result["rounds"] == 2 and result["evidence_retries"] == 1
    assert result["answer"] == "The gateway times out calling pay-svc."
    retry_detail = result["trace"][5]["details"]
    assert retry_detail == {"gap_count": 1}


def test_no_evidence_retry_when_limit_is_zero() -> None:
    result = dc.replay(_retry_scenario(config={"evidence_retry_limit": 0}))
    assert "evidence_retry" not in [t[0] for t in nodes(result)]
    assert result["outcome"] == "ANSWERED" and result["rounds"] == 1


@pytest.mark.parametrize(
    "facts",
    [
        [gap_fact(verification="direct_support")],
        [gap_fact(verification="contradicted")],
        [{**gap_fact(), "is_critical": False}],
        [],
    ],
)
def test_low_confid_without_a_critical_gap_goes_to_composer(facts: list[Any]) -> None:
    result = dc.replay(
        _retry_scenario(verifier_=[text(verifier("LOW_CONFID", facts=facts))])
    )
    assert result["evidence_retries"] == 0
    assert nodes(result)[-1][0] == "composer"
    assert '"answer_mode":"LOW_CONFIDENCE"' in result["invocations"][-1]["input"]


def test_gap_on_a_claim_unknown_to_the_verified_input_never_triggers_a_retry() -> None:
    facts = [gap_fact("c404")]
    result = dc.replay(_retry_scenario(verifier_=[text(verifier("LOW_CONFID", facts=facts))]))
    assert result["evidence_retries"] == 0
    assert result["trace"][4]["details"]["unknown_claim_ids"] == ["c404"]


def test_pass_verdict_with_gap_does_not_retry() -> None:
    result = dc.replay(_retry_scenario(verifier_=[text(verifier("PASS", facts=[gap_fact()]))]))
    assert result["evidence_retries"] == 0


def test_second_round_low_confid_with_gap_goes_to_composer() -> None:
    result = dc.replay(_retry_scenario())
    assert result["calls"]["verifier"] == 2
    assert result["effective_verdict"] == "LOW_CONFID"


def test_round_two_executor_failure_goes_to_fallback_in_round_two() -> None:
    result = dc.replay(_retry_scenario(executor_=[text(executor()), error("non_retryable")]))
    assert nodes(result)[-2] == ("executor", 2, 1, "NON_RETRYABLE_FAILED", "EXECUTOR_FAILED")
    assert nodes(result)[-1] == (
        "pre_verification_fallback", 2, 1, "COMPLETED", "EXECUTOR_FAILED"
    )
    assert result["rounds"] == 2


@pytest.mark.parametrize("failure", [error("retryable"), {"text": "{}"}])
def test_composer_retryable_failure_is_retried(failure: dict[str, Any]) -> None:
    result = dc.replay(scenario(composer_=[failure, text(composer())]))
    trace = nodes(result)
    assert trace[-2][:3] == ("composer", 1, 1) and trace[-2][4] == "COMPOSER_FAILED"
    assert trace[-1] == ("composer", 1, 2, "COMPLETED", None)
    inputs = [i["input"] for i in result["invocations"] if i["agent"] == "composer"]
    assert inputs[0] == inputs[1]


@pytest.mark.parametrize(
    "responses",
    [[error("non_retryable")], [error("retryable"), {"text": "  "}],
     [text(composer(cited=["c9"])), text(composer(cited=["c9"]))]],
)
def test_composer_other_failure_goes_to_post_verification_fallback(
    responses: list[dict[str, Any]],
) -> None:
    result = dc.replay(scenario(composer_=responses))
    assert result["outcome"] == "POST_VERIFICATION_FALLBACK"
    assert result["reason_code"] == "COMPOSER_FAILED"
    assert nodes(result)[-1] == (
        "post_verification_fallback", 1, 1, "COMPLETED", "COMPOSER_FAILED"
    )
    assert "Gateway calls to pay-svc time out after 3000 ms" in result["answer"]
    assert result["model_verdict"] == "PASS"


def test_retry_limit_three_allows_four_attempts() -> None:
    result = dc.replay(
        scenario(planner=[error("retryable")] * 4, config={"technical_retry_limit": 3})
    )
    attempts = [t[2] for t in nodes(result) if t[0] == "planner"]
    assert attempts == [1, 2, 3, 4]


def test_routing_table_rows_are_the_specified_ones() -> None:
    rows = {(r.after, r.condition.name, r.next, r.reason, r.reason_from_node, r.same_input)
            for r in dcm.ROUTING_TABLE}
    n, pre = NodeName, NodeName.PRE_VERIFICATION_FALLBACK
    expected = {
        (None, "ALWAYS", n.PLANNER, None, False, False),
        (n.PLANNER, "COMPLETED", n.EXECUTOR, None, False, False),
        (n.PLANNER, "RETRY_LEFT", n.PLANNER, None, False, True),
        (n.PLANNER, "OTHERWISE", pre, ReasonCode.PLANNER_FAILED, False, False),
        (n.EXECUTOR, "COMPLETED", n.GATEKEEPER, None, False, False),
        (n.EXECUTOR, "ANY_FAILURE", pre, None, True, False),
        (n.GATEKEEPER, "GATEKEEPER_PASS", n.VERIFIED_INPUT, None, False, False),
        (n.GATEKEEPER, "LOW_CONFID_TRUSTED", n.VERIFIED_INPUT, None, False, False),
        (n.GATEKEEPER, "LOW_CONFID_UNTRUSTED", pre, ReasonCode.NO_TRUSTED_EVIDENCE, False, False),
        (n.GATEKEEPER, "GATEKEEPER_REJECT", pre, None, True, False),
        (n.VERIFIED_INPUT, "ALWAYS", n.VERIFIER, None, False, False),
        (n.VERIFIER, "RETRY_LEFT", n.VERIFIER, None, False, True),
        (n.VERIFIER, "NON_RETRYABLE_OR_EXHAUSTED", pre, ReasonCode.VERIFIER_FAILED, False, False),
        (n.VERIFIER, "EVIDENCE_GAP", n.EVIDENCE_RETRY, None, False, False),
        (n.VERIFIER, "COMPLETED_OTHERWISE", n.COMPOSER, None, False, False),
        (n.EVIDENCE_RETRY, "ALWAYS", n.EXECUTOR, None, False, False),
        (n.COMPOSER, "COMPLETED", None, None, False, False),
        (n.COMPOSER, "RETRY_LEFT", n.COMPOSER, None, False, True),
        (n.COMPOSER, "OTHERWISE", n.POST_VERIFICATION_FALLBACK, ReasonCode.COMPOSER_FAILED,
         False, False),
        (pre, "ALWAYS", None, None, False, False),
        (n.POST_VERIFICATION_FALLBACK, "ALWAYS", None, None, False, False),
    }
    assert rows == expected
    assert len(dcm.ROUTING_TABLE) == len(expected)


def test_mermaid_graph_is_drawn_from_the_table() -> None:
    graph = dcm.routing_mermaid()
    assert graph.startswith("flowchart TD\n")
    edges = [line for line in graph.splitlines() if "-->" in line]
    assert len(edges) == len(dcm.ROUTING_TABLE)
    assert 'verifier -->|"effective LOW_CONFID, critical gap, retry left"| evidence_retry' in graph


def test_a_custom_table_without_a_matching_row_raises_lookup_error() -> None:
    table = (dcm.Route(NodeName.PLANNER, dcm.Condition.COMPLETED, NodeName.EXECUTOR),)
    facts = dcm.RoutingFacts(status=dcm.NodeStatus.INVALID_OUTPUT)
    with pytest.raises(LookupError, match="no route after"):
        dcm.choose_route(NodeName.PLANNER, facts, table)
    completed = dcm.RoutingFacts(status=dcm.NodeStatus.COMPLETED)
    assert dcm.choose_route(NodeName.PLANNER, completed, table).next is NodeName.EXECUTOR
