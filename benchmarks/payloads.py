"""Deterministic, realistic workloads shared by every benchmark.

An ``executor_evidence_v2`` document as an executor agent writes it (keys in
the order of the spec's example): claims with two bindings each (a log line
and a metric sample), one hypothesis per ten claims and a tool trace with one
entry per cited invocation. Texts vary per claim and include what real model
output contains: non-ASCII characters (units, arrows, a CJK note) and escaped
quotes from log lines. About 620 bytes and five objects per claim: a dense
payload, the hard case for a parser that builds one value per object.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "claim",
    "evidence_document",
    "evidence_text",
    "gatekeeper_result_passing_all",
    "ledger_records",
    "replay_scenario_document",
    "text_of_size",
]

_SERVICES = ("pay-svc", "gateway", "cache-2", "orders-db", "auth", "ledger-api", "notify")
_NOTES = (
    "upstream timeout after 3000ms",
    "connection pool exhausted (max=50)",
    "p99 latency ≈ 850 ms since 14:10",
    'status="504" path="/v1/pay" retry storm → 5xx rate 12%',
    "GC pause 1.2 s on node-7",
    "支付服务超时 (payment timeout)",
)


def _log_message(index: int) -> str:
    service = _SERVICES[index % len(_SERVICES)]
    note = _NOTES[index % len(_NOTES)]
    return f"2024-05-01T14:{index % 60:02d}:07Z ERROR {service} request {index}: {note}"


def claim(index: int) -> dict[str, Any]:
    """Claim ``c{index}`` with one log binding and one metric binding."""
    service = _SERVICES[index % len(_SERVICES)]
    return {
        "claim_id": f"c{index}",
        "text": (
            f"Calls from {service} fail with '{_NOTES[index % len(_NOTES)]}' "
            f"in window {index} (see logs and the latency series)"
        ),
        "is_critical": index % 3 == 0,
        "bindings": [
            {
                "source_invocation_id": f"inv-{2 * index}",
                "tool_name": "query_logs",
                "raw_path": f"$.items[{index % 5}].message",
                "evidence_excerpt": _NOTES[index % len(_NOTES)],
            },
            {
                "source_invocation_id": f"inv-{2 * index + 1}",
                "tool_name": "query_metrics",
                "raw_path": "$.series[0].p99",
                "evidence_excerpt": str(800 + index % 97),
            },
        ],
    }


def evidence_document(claims: int) -> dict[str, Any]:
    """A valid ``executor_evidence_v2`` document with ``claims`` claims."""
    return {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [claim(index) for index in range(claims)],
        "hypotheses": [
            {"text": f"hypothesis {index}: pool of {_SERVICES[index % 7]} too small",
             "missing_evidence": "pool metrics" if index % 2 else None}
            for index in range(max(1, claims // 10))
        ],
        "tool_trace_summary": [
            {"invocation_id": f"inv-{index}",
             "tool_name": "query_logs" if index % 2 == 0 else "query_metrics",
             "success": True}
            for index in range(2 * claims)
        ],
    }


def evidence_text(claims: int) -> str:
    """The document as a model writes it (``json.dumps`` defaults: spaces, ASCII escapes off)."""
    return json.dumps(evidence_document(claims), ensure_ascii=False)


def text_of_size(target_bytes: int) -> tuple[str, int]:
    """The evidence text closest to ``target_bytes`` UTF-8 bytes, and its claim count."""
    per_claim = len(evidence_text(100).encode()) / 100
    claims = max(1, round(target_bytes / per_claim))
    return evidence_text(claims), claims


def ledger_records(claims: int) -> list[dict[str, Any]]:
    """Tool-ledger records that make every binding of :func:`claim` pass."""
    records: list[dict[str, Any]] = []
    for index in range(claims):
        items = [{"message": f"request {index}.{item} ok"} for item in range(5)]
        items[index % 5] = {"message": _log_message(index)}
        records.append({"invocation_id": f"inv-{2 * index}", "tool_name": "query_logs",
                        "success": True, "output": {"items": items}})
        records.append({"invocation_id": f"inv-{2 * index + 1}", "tool_name": "query_metrics",
                        "success": True, "output": {"series": [{"p99": 800 + index % 97}]}})
    return records


def gatekeeper_result_passing_all(document: dict[str, Any]) -> dict[str, Any]:
    """A raw gatekeeper result (spec §6.1) that passes every binding of ``document``."""
    checked = [
        {
            "claim_id": item["claim_id"],
            "source_invocation_id": binding["source_invocation_id"],
            "tool_name": binding["tool_name"],
            "raw_path": binding["raw_path"],
            "status": "pass",
            "matched_text": binding["evidence_excerpt"],
        }
        for item in document["claims"]
        for binding in item["bindings"]
    ]
    return {"status": "pass", "level": None, "checked_bindings": checked, "reason_codes": []}


def _verifier(claim_ids: list[str], *, gap: bool) -> str:
    facts = [
        {"claim_id": claim_id, "fact": f"fact of {claim_id}", "is_critical": index == 0,
         "verification": "indirect_support" if gap and index == 0 else "direct_support"}
        for index, claim_id in enumerate(claim_ids)
    ]
    return json.dumps({
        "verdict": "LOW_CONFID" if gap else "PASS",
        "groundedness_score": 0.6 if gap else 0.9,
        "critical_fact_count": 1,
        "facts_checked": facts,
        "allowed_claim_ids": claim_ids,
        "missing_info": ["pool metrics of pay-svc"] if gap else [],
        "recommended_actions": ["check the pool size of pay-svc"],
        "rationale": "benchmark",
    })


def replay_scenario_document(claims: int, *, evidence_retry: bool = False) -> dict[str, Any]:
    """A replay scenario (spec §9) with ``claims`` claims and scripted passing gatekeeper.

    With ``evidence_retry`` the first verifier answer is LOW_CONFID with a
    critical gap, so the run takes one evidence retry (a second executor,
    gatekeeper and verifier round) before the composer answers.
    """
    document = evidence_document(claims)
    executor_text = json.dumps(document, ensure_ascii=False)
    claim_ids = [item["claim_id"] for item in document["claims"]]
    gatekeeper = {"result": gatekeeper_result_passing_all(document)}
    plan = {"steps": [{"step_id": "s1", "goal": "read gateway logs and latency",
                       "tools": ["query_logs", "query_metrics"]}],
            "selected_skill": None}
    # Round 1 goes to a LOW_CONFID ceiling so that a gap triggers the retry.
    first_gatekeeper = gatekeeper
    if evidence_retry:
        first = dict(gatekeeper["result"])
        first.update(status="fail", level="low_confid")
        first_gatekeeper = {"result": first}
    responses: dict[str, Any] = {
        "planner": [{"text": json.dumps(plan)}],
        "executor": [{"text": executor_text}],
        "verifier": [{"text": _verifier(claim_ids, gap=evidence_retry)}],
        "composer": [{"text": json.dumps({"answer": "The payment API times out because …",
                                          "cited_claim_ids": claim_ids[:3]})}],
    }
    gatekeepers = [first_gatekeeper]
    if evidence_retry:
        responses["executor"].append({"text": executor_text})
        responses["verifier"].append({"text": _verifier(claim_ids, gap=False)})
        gatekeepers.append(gatekeeper)
    return {
        "question": "Payment API times out since 10:00, why?",
        "run": {"run_id": f"bench-{claims}", "session_id": "chat-bench", "metadata": {}},
        "config": {"technical_retry_limit": 1, "evidence_retry_limit": 1, "locale": "en"},
        "responses": responses,
        "gatekeeper": gatekeepers,
    }
