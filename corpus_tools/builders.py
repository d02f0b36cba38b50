"""Small builders of valid agent replies and §9 scenarios for the generated corpus."""

from __future__ import annotations

import copy
import json
from typing import Any

Doc = dict[str, Any]

SKILLS: list[Doc] = [
    {"name": "payment-timeout", "description": "playbook for payment timeouts"},
    {"name": "db-pool", "description": "playbook for connection pools", "body": "never sent"},
]

PLAN: Doc = {
    "steps": [
        {"step_id": "s1", "goal": "check gateway timeout logs", "tools": ["query_logs"]},
        {"step_id": "s2", "goal": "check pay-svc latency", "tools": ["query_metrics"]},
    ],
    "selected_skill": "payment-timeout",
}


def dumps(value: object) -> str:
    """A reply text: plain ``json.dumps`` (what a model would plausibly write)."""
    return json.dumps(value, ensure_ascii=False)


def binding(
    inv: str = "inv-1",
    tool: str = "query_logs",
    path: str = "$.items[0].message",
    excerpt: str = "upstream timeout after 3000ms",
) -> Doc:
    return {
        "source_invocation_id": inv,
        "tool_name": tool,
        "raw_path": path,
        "evidence_excerpt": excerpt,
    }


C1_TEXT = "Gateway calls to pay-svc time out after 3000 ms"
C2_TEXT = "pay-svc p99 latency rose to 3400 ms"


def claim(cid: str = "c1", text: str = C1_TEXT, critical: bool = True,
          bindings: list[Doc] | None = None) -> Doc:
    return {
        "claim_id": cid,
        "text": text,
        "is_critical": critical,
        "bindings": [binding()] if bindings is None else bindings,
    }


def two_claims() -> list[Doc]:
    return [
        claim("c1", C1_TEXT, True, [binding()]),
        claim("c2", C2_TEXT, False,
              [binding("inv-2", "query_metrics", "$.series[0].summary", "p99 3400ms")]),
    ]


def executor(claims: list[Doc] | None = None, **extra: Any) -> Doc:
    found = two_claims() if claims is None else claims
    doc: Doc = {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found" if found else "no_evidence",
        "claims": found,
        "hypotheses": [{"text": "HYPOTHESIS pool exhausted", "missing_evidence": "pool metrics"}],
        "tool_trace_summary": [
            {"invocation_id": "inv-1", "tool_name": "query_logs", "success": True},
            {"invocation_id": "inv-2", "tool_name": "query_metrics", "success": True},
        ],
    }
    doc.update(extra)
    return doc


def checked(cid: str, b: Doc, status: str = "pass", matched: str | None = None) -> Doc:
    return {
        "claim_id": cid,
        "source_invocation_id": b["source_invocation_id"],
        "tool_name": b["tool_name"],
        "raw_path": b["raw_path"],
        "status": status,
        "matched_text": (matched if matched is not None else "GK:" + b["evidence_excerpt"])
        if status == "pass" else None,
        "reason": None if status == "pass" else "EXCERPT_MISMATCH",
    }


def gatekeeper_for(doc: Doc, failed: frozenset[str] = frozenset(),
                   status: str | None = None, level: str | None = None) -> Doc:
    """A raw result checking every binding of ``doc``; claims in ``failed`` fail."""
    entries = [
        checked(c["claim_id"], b, "fail" if c["claim_id"] in failed else "pass")
        for c in doc["claims"] for b in c["bindings"]
    ]
    any_failed = any(e["status"] == "fail" for e in entries)
    if status is None:
        status = "fail" if any_failed else "pass"
    result: Doc = {"status": status, "checked_bindings": entries}
    if level is not None:
        result["level"] = level
    elif status == "fail":
        passed = any(e["status"] == "pass" for e in entries)
        result["level"] = "low_confid" if passed else "reject"
    return result


def fact(cid: str, critical: bool = True, verification: str = "direct_support",
         text: str | None = None) -> Doc:
    return {"claim_id": cid, "fact": text or f"fact of {cid}", "is_critical": critical,
            "verification": verification}


def verifier(verdict: str = "PASS", facts: list[Doc] | None = None,
             allowed: list[str] | None = None, **extra: Any) -> Doc:
    doc: Doc = {
        "verdict": verdict,
        "groundedness_score": 0.9,
        "facts_checked": [fact("c1"), fact("c2", False)] if facts is None else facts,
        "allowed_claim_ids": ["c1", "c2"] if allowed is None else allowed,
        "missing_info": ["pool metrics of pay-svc"],
        "recommended_actions": ["check the pool size of pay-svc"],
        "rationale": "VERIFIER RATIONALE",
    }
    doc.update(extra)
    return doc


def composer(answer: str = "pay-svc is slow, so the gateway times out.",
             cited: list[str] | None = None) -> Doc:
    return {"answer": answer, "cited_claim_ids": ["c1"] if cited is None else cited}


def text(value: object) -> Doc:
    return {"text": value if isinstance(value, str) else dumps(value)}


def error(kind: str, message: str = "boom") -> Doc:
    return {"error": {"kind": kind, "message": message}}


def scenario(name: str, **overrides: Any) -> Doc:
    """A happy-path scenario (PASS, answered); ``overrides`` replace top-level keys.

    ``planner=``, ``executor=``, ``verifier=``, ``composer=`` replace one
    agent's script (a list of entries), ``limit=`` sets the technical retry
    limit, ``locale=`` the locale.
    """
    ex = executor()
    doc: Doc = {
        "question": "Payment API times out since 10:00 — why?",
        "run": {"run_id": f"run-{name}", "session_id": "chat-conf", "metadata": {}},
        "history": [{"role": "user", "content": "checkouts fail"}],
        "skills": copy.deepcopy(SKILLS),
        "config": {"technical_retry_limit": 1, "evidence_retry_limit": 1, "locale": "en"},
        "responses": {
            "planner": [text(PLAN)],
            "executor": [text(ex)],
            "verifier": [text(verifier())],
            "composer": [text(composer())],
        },
        "gatekeeper": [{"result": gatekeeper_for(ex)}],
    }
    for agent in ("planner", "executor", "verifier", "composer"):
        if agent in overrides:
            doc["responses"][agent] = overrides.pop(agent)
    if "limit" in overrides:
        doc["config"]["technical_retry_limit"] = overrides.pop("limit")
    if "locale" in overrides:
        doc["config"]["locale"] = overrides.pop("locale")
    if "evidence_limit" in overrides:
        doc["config"]["evidence_retry_limit"] = overrides.pop("evidence_limit")
    doc.update(overrides)
    return doc
