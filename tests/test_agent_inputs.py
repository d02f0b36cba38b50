"""The exact agent-input whitelists of spec §6.6, observed through replays."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from _builders import (
    claim,
    executor,
    gap_fact,
    gatekeeper_for,
    scenario,
    text,
    verifier,
)

import diagnosis_core as dc


def inputs(result: dict[str, Any], agent: str) -> list[dict[str, Any]]:
    return [json.loads(i["input"]) for i in result["invocations"] if i["agent"] == agent]


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)


def test_every_input_is_canonical_json() -> None:
    result = dc.replay(scenario())
    for invocation in result["invocations"]:
        assert invocation["input"] == canonical(json.loads(invocation["input"]))


def test_input_sha256_is_the_hash_of_the_exact_input() -> None:
    result = dc.replay(scenario())
    llm_events = [e for e in result["trace"] if e["input_sha256"] is not None]
    assert [e["node"] for e in llm_events] == [i["agent"] for i in result["invocations"]]
    for event, invocation in zip(llm_events, result["invocations"], strict=True):
        expected = hashlib.sha256(invocation["input"].encode("utf-8")).hexdigest()
        assert event["input_sha256"] == expected
    pure = [e for e in result["trace"] if e["node"] in ("gatekeeper", "verified_input")]
    assert all(e["input_sha256"] is None for e in pure)


def test_planner_input_keys_and_history_and_skills_are_reduced() -> None:
    doc = scenario()
    doc["history"] = [{"role": "user", "content": f"m{i}", "secret": "HIST-CANARY"}
                      for i in range(15)]
    doc["skills"] = [{"name": "payment-timeout", "description": "d", "body": "SKILL-BODY"}]
    result = dc.replay(doc)
    (planner,) = inputs(result, "planner")
    assert set(planner) == {"query", "history", "skills"}
    assert planner["skills"] == [{"name": "payment-timeout", "description": "d"}]
    assert [m["content"] for m in planner["history"]] == [f"m{i}" for i in range(5, 15)]
    assert all(set(m) == {"role", "content"} for m in planner["history"])
    assert "CANARY" not in result["invocations"][0]["input"]
    assert "SKILL-BODY" not in result["invocations"][0]["input"]


def test_history_limit_zero_gives_empty_history() -> None:
    result = dc.replay(scenario(config={"history_limit": 0}))
    assert inputs(result, "planner")[0]["history"] == []


def test_executor_round_one_input_is_the_normalized_plan() -> None:
    plan = {"steps": [{"step_id": "s1", "goal": "g", "extra": "PLAN-CANARY"}],
            "unknown": 1}
    result = dc.replay(scenario(planner=[text(plan)]))
    (first,) = inputs(result, "executor")
    assert set(first) == {"query", "round", "planner_plan", "selected_skill"}
    assert first["round"] == 1
    assert first["planner_plan"] == {
        "selected_skill": None, "steps": [{"goal": "g", "step_id": "s1", "tools": []}]
    }
    assert first["selected_skill"] is None
    assert "PLAN-CANARY" not in result["invocations"][1]["input"]


def _retry_result() -> dict[str, Any]:
    ex = executor(claims=[claim("c1"), claim("c2", bindings=[{
        "source_invocation_id": "inv-9", "tool_name": "query_metrics", "raw_path": "$.p99",
        "evidence_excerpt": "FAILED-EXCERPT"}])])
    low = text(verifier("LOW_CONFID", facts=[gap_fact(), gap_fact()]))
    return dc.replay(scenario(
        executor_=[text(ex), text(ex)],
        verifier_=[low, low],
        gatekeeper=[{"result": gatekeeper_for(ex, failed=frozenset({"c2"}))}] * 2,
    ))


def test_executor_round_two_adds_exactly_the_retry_context() -> None:
    result = _retry_result()
    first, second = inputs(result, "executor")
    assert set(second) == {"query", "round", "planner_plan", "selected_skill", "retry_context"}
    assert second["round"] == 2
    assert {k: v for k, v in second.items() if k not in ("round", "retry_context")} == {
        k: v for k, v in first.items() if k != "round"
    }
    context = second["retry_context"]
    assert set(context) == {
        "prior_verified_executor_output", "prior_verified_evidence", "gaps",
        "completed_query_refs", "constraints",
    }
    assert context["constraints"] == [
        "AT_MOST_ONCE", "NO_REPEAT_SUCCESSFUL_QUERIES", "INCREMENTAL_QUERIES_ONLY",
        "PRESERVE_PRIOR_VERIFIED_CLAIMS", "RETURN_FULL_EXECUTOR_EVIDENCE_V2_SNAPSHOT",
    ]
    assert context["gaps"] == [
        {"claim_id": "c1", "fact": "timeouts after 3000 ms", "verification": "indirect_support"}
    ]
    assert context["completed_query_refs"] == [
        {"source_invocation_id": "inv-7", "tool_name": "query_logs"}
    ]
    assert "FAILED-EXCERPT" not in result["invocations"][-1]["input"]


def test_round_two_verifier_gets_the_same_retry_context_as_the_executor() -> None:
    result = _retry_result()
    executor_two = inputs(result, "executor")[1]
    verifier_one, verifier_two = inputs(result, "verifier")
    assert verifier_one["retry_context"] is None
    assert verifier_two["retry_context"] == executor_two["retry_context"]
    assert verifier_two["round"] == 2


def test_verifier_input_keys_and_projection() -> None:
    result = _retry_result()
    verifier_input = inputs(result, "verifier")[0]
    assert set(verifier_input) == {
        "query", "round", "verified_executor_output", "verified_evidence", "gatekeeper",
        "retry_context",
    }
    assert verifier_input["gatekeeper"] == {
        "status": "LOW_CONFID", "ceiling": "LOW_CONFID", "checked": 2, "passed": 1, "failed": 1
    }
    assert verifier_input["verified_executor_output"] == [{
        "claim_id": "c1", "text": "Gateway calls to pay-svc time out after 3000 ms",
        "is_critical": True,
        "bindings": [{"source_invocation_id": "inv-7", "tool_name": "query_logs",
                      "raw_path": "$.items[0].message"}],
    }]
    assert verifier_input["verified_evidence"] == [{
        "claim_id": "c1", "source_invocation_id": "inv-7", "tool_name": "query_logs",
        "raw_path": "$.items[0].message", "matched_text": "MATCHED:upstream timeout after 3000ms",
    }]
    raw = next(i["input"] for i in result["invocations"] if i["agent"] == "verifier")
    for leaked in ("evidence_excerpt", "connection pool exhausted", "hypotheses",
                   "pool metrics", "EXCERPT_MISMATCH", "FAILED-EXCERPT", "inv-9"):
        assert leaked not in raw


def test_composer_input_keys_and_allowed_claims_are_verified_text_only() -> None:
    ex = executor(claims=[claim("c1"), claim("c2", text="second claim",
                                            bindings=[{"source_invocation_id": "inv-8",
                                                       "tool_name": "query_logs",
                                                       "raw_path": "$.y",
                                                       "evidence_excerpt": "e"}]),
                          claim("c3", text="UNALLOWED-CLAIM",
                                bindings=[{"source_invocation_id": "inv-9",
                                           "tool_name": "query_logs", "raw_path": "$.z",
                                           "evidence_excerpt": "e"}])])
    ver = verifier("PASS", allowed=["c2", "c1", "c404"], extra_field="VER-CANARY")
    result = dc.replay(scenario(executor_=[text(ex)], verifier_=[text(ver)],
                                gatekeeper=[{"result": gatekeeper_for(ex)}]))
    (composer_input,) = inputs(result, "composer")
    assert set(composer_input) == {
        "query", "answer_mode", "effective_verdict", "allowed_claims", "missing_info",
        "recommended_actions",
    }
    assert composer_input["allowed_claims"] == [
        {"claim_id": "c1", "text": "Gateway calls to pay-svc time out after 3000 ms"},
        {"claim_id": "c2", "text": "second claim"},
    ]
    assert composer_input["answer_mode"] == "NORMAL"
    assert composer_input["effective_verdict"] == "PASS"
    assert composer_input["missing_info"] == ["pool metrics of pay-svc"]
    raw = result["invocations"][-1]["input"]
    assert "UNALLOWED-CLAIM" not in raw and "VER-CANARY" not in raw and "c404" not in raw


def test_composer_rejects_citing_a_claim_that_was_not_allowed() -> None:
    ex = executor(claims=[claim("c1"), claim("c2", bindings=[{
        "source_invocation_id": "inv-8", "tool_name": "t", "raw_path": "$.y",
        "evidence_excerpt": "e"}])])
    comp = text({"answer": "a", "cited_claim_ids": ["c2"]})
    result = dc.replay(scenario(executor_=[text(ex)], gatekeeper=[{"result": gatekeeper_for(ex)}],
                                composer_=[comp, comp]))
    assert result["outcome"] == "POST_VERIFICATION_FALLBACK"
    assert "cited_claim_ids[0]" in result["trace"][-2]["details"]["error"]
