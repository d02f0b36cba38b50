"""Small builders of valid payloads and scenarios for the example tests."""

from __future__ import annotations

import copy
import json
from typing import Any

PLAN: dict[str, Any] = {
    "steps": [{"step_id": "s1", "goal": "check gateway timeout logs", "tools": ["query_logs"]}],
    "selected_skill": "payment-timeout",
}

SKILLS = [{"name": "payment-timeout", "description": "playbook for payment timeouts"}]


def binding(inv: str = "inv-7", tool: str = "query_logs", path: str = "$.items[0].message",
            excerpt: str = "upstream timeout after 3000ms") -> dict[str, Any]:
    return {"source_invocation_id": inv, "tool_name": tool, "raw_path": path,
            "evidence_excerpt": excerpt}


def claim(cid: str = "c1", text: str = "Gateway calls to pay-svc time out after 3000 ms",
          critical: bool = True, bindings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"claim_id": cid, "text": text, "is_critical": critical,
            "bindings": bindings if bindings is not None else [binding()]}


def executor(claims: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    found = [claim()] if claims is None else claims
    doc: dict[str, Any] = {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found" if found else "no_evidence",
        "claims": found,
        "hypotheses": [{"text": "connection pool exhausted", "missing_evidence": "pool metrics"}],
        "tool_trace_summary": [{"invocation_id": "inv-7", "tool_name": "query_logs",
                                "success": True}],
    }
    doc.update(extra)
    return doc


def checked(cid: str = "c1", inv: str = "inv-7", tool: str = "query_logs",
            path: str = "$.items[0].message", status: str = "pass",
            matched: str | None = "upstream timeout after 3000ms",
            reason: str | None = None) -> dict[str, Any]:
    return {"claim_id": cid, "source_invocation_id": inv, "tool_name": tool, "raw_path": path,
            "status": status, "matched_text": matched, "reason": reason}


def gatekeeper_for(executor_doc: dict[str, Any], failed: frozenset[str] = frozenset(),
                   status: str | None = None, level: str | None = None) -> dict[str, Any]:
    """A raw gatekeeper result checking every binding; ``failed`` lists claim ids to fail."""
    entries = []
    for c in executor_doc["claims"]:
        for b in c["bindings"]:
            ok = c["claim_id"] not in failed
            entries.append(checked(c["claim_id"], b["source_invocation_id"], b["tool_name"],
                                   b["raw_path"], "pass" if ok else "fail",
                                   "MATCHED:" + b["evidence_excerpt"] if ok else None,
                                   None if ok else "EXCERPT_MISMATCH"))
    passed = sum(e["status"] == "pass" for e in entries)
    if status is None:
        if passed == len(entries):
            status, level = "pass", None
        elif passed:
            status, level = "fail", "low_confid"
        else:
            status, level = "fail", "reject"
    return {"status": status, "level": level, "checked_bindings": entries, "reason_codes": []}


def verifier(verdict: str = "PASS", allowed: list[str] | None = None,
             facts: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "verdict": verdict,
        "groundedness_score": 0.9,
        "critical_fact_count": 1,
        "facts_checked": facts if facts is not None else [
            {"claim_id": "c1", "fact": "timeouts after 3000 ms", "is_critical": True,
             "verification": "direct_support"}],
        "allowed_claim_ids": ["c1"] if allowed is None else allowed,
        "missing_info": ["pool metrics of pay-svc"],
        "recommended_actions": ["check pool size of pay-svc"],
        "rationale": "quoted directly",
    }
    doc.update(extra)
    return doc


def gap_fact(cid: str = "c1", verification: str = "indirect_support") -> dict[str, Any]:
    return {"claim_id": cid, "fact": "timeouts after 3000 ms", "is_critical": True,
            "verification": verification}


def composer(answer: str = "The gateway times out calling pay-svc.",
             cited: list[str] | None = None) -> dict[str, Any]:
    return {"answer": answer, "cited_claim_ids": ["c1"] if cited is None else cited}


def text(doc: Any) -> dict[str, str]:
    return {"text": json.dumps(doc, ensure_ascii=False)}


def error(kind: str, message: str = "boom") -> dict[str, Any]:
    return {"error": {"kind": kind, "message": message}}


def scenario(*, planner: list[Any] | None = None, executor_: list[Any] | None = None,
             verifier_: list[Any] | None = None, composer_: list[Any] | None = None,
             gatekeeper: list[Any] | None = None, config: dict[str, Any] | None = None,
             **extra: Any) -> dict[str, Any]:
    """A complete PASS scenario; every part can be replaced."""
    ex = executor()
    doc: dict[str, Any] = {
        "question": "Payment API times out since 10:00, why?",
        "run": {"run_id": "run-1", "session_id": "chat-42", "metadata": {}},
        "history": [{"role": "user", "content": "hi"}],
        "skills": copy.deepcopy(SKILLS),
        "responses": {
            "planner": planner if planner is not None else [text(PLAN)],
            "executor": executor_ if executor_ is not None else [text(ex)],
            "verifier": verifier_ if verifier_ is not None else [text(verifier())],
            "composer": composer_ if composer_ is not None else [text(composer())],
        },
        "gatekeeper": gatekeeper if gatekeeper is not None else [{"result": gatekeeper_for(ex)}],
    }
    if config is not None:
        doc["config"] = config
    doc.update(extra)
    return doc
