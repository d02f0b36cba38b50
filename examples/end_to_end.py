"""A whole diagnosis run, offline: real tools, the tool recorder, the reference gatekeeper.

    python examples/end_to_end.py          # the answer, the trace and the tool ledger
    python examples/end_to_end.py --json   # the full trace report as JSON

What runs:

* two real Python tools reading the bundled fixtures (``fixtures/gateway.log``,
  ``fixtures/pay-svc-metrics.json``), wrapped by a :class:`ToolRecorder`, so
  every call gets an invocation id (``inv-1``, ``inv-2``, …) and a ledger entry;
* an executor whose *scripted model* decides which tools to call from the
  plan, calls them, and writes an ``executor_evidence_v2`` citing the
  envelopes it got back (``source_invocation_id``, ``raw_path`` into
  ``output``, an excerpt of what the tool returned);
* the recorder's reference gatekeeper, which checks every citation against
  the ledger as it is when the gatekeeper is called;
* scripted planner, verifier and composer that read their inputs;
* the whole chat workflow, through :func:`diagnosis_core.run_diagnosis`.

Replace a scripted agent by a real model (for example
``diagnosis_core.adapters.langchain.ChatModelInvoker``) and nothing else changes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import diagnosis_core as dc
import diagnosis_core.tools as dct

FIXTURES = Path(__file__).resolve().parent / "fixtures"
QUESTION = "The payment API times out since 10:00. Why?"


# --- real tools over the bundled fixtures -----------------------------------------------------


def search_logs(pattern: str, file: str = "gateway.log") -> dict[str, Any]:
    """The log lines of ``file`` that contain ``pattern``, with their line numbers."""
    lines = (FIXTURES / file).read_text(encoding="utf-8").splitlines()
    matches = [{"line": n, "text": text} for n, text in enumerate(lines, 1) if pattern in text]
    return {"file": file, "pattern": pattern, "count": len(matches), "matches": matches}


def read_metrics(service: str) -> dict[str, Any]:
    """The metrics snapshot of one service."""
    data: dict[str, Any] = json.loads(
        (FIXTURES / f"{service}-metrics.json").read_text(encoding="utf-8")
    )
    return data


# --- a scripted tool-using model ----------------------------------------------------------------


class ScriptedToolModel:
    """Stands in for an LLM with tools: picks tool calls, then writes evidence from the results."""

    def tool_calls(self, executor_input: str) -> list[tuple[str, dict[str, Any]]]:
        plan = json.loads(executor_input)["planner_plan"]
        wanted = [tool for step in plan["steps"] for tool in step["tools"]]
        calls: list[tuple[str, dict[str, Any]]] = []
        if "search_logs" in wanted:
            calls.append(("search_logs", {"pattern": "status=504"}))
        if "read_metrics" in wanted:
            calls.append(("read_metrics", {"service": "pay-svc"}))
        return calls

    def evidence(self, envelopes: list[dct.ToolEnvelope]) -> str:
        claims: list[dict[str, Any]] = []
        for envelope in envelopes:
            output: Any = envelope["output"]
            cite = {"source_invocation_id": envelope["invocation_id"],
                    "tool_name": envelope["tool_name"]}
            if envelope["tool_name"] == "search_logs" and output["count"]:
                found = re.search(r'error="([^"]+)"', output["matches"][0]["text"])
                if found is not None:
                    claims.append({
                        "claim_id": "c1", "is_critical": True,
                        "text": f"{output['count']} gateway calls to pay-svc failed with 504: "
                                f"{found.group(1)}",
                        "bindings": [{**cite, "raw_path": "$.matches[0].text",
                                      "evidence_excerpt": found.group(1)}],
                    })
            if envelope["tool_name"] == "read_metrics":
                pool = output["db_pool"]
                claims.append({
                    "claim_id": "c2", "is_critical": True,
                    "text": f"pay-svc's database pool is exhausted: {pool['in_use']} of "
                            f"{pool['size']} connections in use, {pool['waiting']} waiting",
                    "bindings": [
                        {**cite, "raw_path": "$.db_pool.in_use",
                         "evidence_excerpt": str(pool["in_use"])},
                        {**cite, "raw_path": "$.db_pool.waiting",
                         "evidence_excerpt": str(pool["waiting"])},
                    ],
                })
        return json.dumps({
            "schema_version": "executor_evidence_v2",
            "evidence_status": "evidence_found" if claims else "no_evidence",
            "claims": claims,
            "tool_trace_summary": [
                {"invocation_id": e["invocation_id"], "tool_name": e["tool_name"], "success": True}
                for e in envelopes
            ],
        })


def make_executor(recorder: dct.ToolRecorder) -> dc.AgentInvoker:
    """The executor agent: the model's tool calls go through the recorder."""
    tools: dict[str, Callable[..., dct.ToolEnvelope]] = {
        "search_logs": recorder.wrap("search_logs", search_logs),
        "read_metrics": recorder.wrap("read_metrics", read_metrics),
    }
    model = ScriptedToolModel()

    def executor(input: str, config: dc.RunConfig, /) -> str:
        envelopes = [tools[name](**arguments) for name, arguments in model.tool_calls(input)]
        return model.evidence(envelopes)

    return executor


# --- scripted planner, verifier and composer ----------------------------------------------------


def planner(input: str, config: dc.RunConfig, /) -> str:
    return json.dumps({"steps": [
        {"step_id": "s1", "goal": "Find gateway errors for /api/pay", "tools": ["search_logs"]},
        {"step_id": "s2", "goal": "Check pay-svc latency and pool", "tools": ["read_metrics"]},
    ]})


def verifier(input: str, config: dc.RunConfig, /) -> str:
    verified = json.loads(input)["verified_evidence"]
    claim_ids = list(dict.fromkeys(item["claim_id"] for item in verified))
    return json.dumps({
        "verdict": "PASS", "groundedness_score": 0.9,
        "facts_checked": [
            {"claim_id": cid, "fact": cid, "is_critical": True, "verification": "direct_support"}
            for cid in claim_ids
        ],
        "allowed_claim_ids": claim_ids,
    })


def composer(input: str, config: dc.RunConfig, /) -> str:
    allowed = json.loads(input)["allowed_claims"]
    lines = ["The payment API times out because pay-svc cannot get database connections:"]
    lines += [f"- {claim['text']}" for claim in allowed]
    return json.dumps({"answer": "\n".join(lines),
                       "cited_claim_ids": [claim["claim_id"] for claim in allowed]})


# --- the run -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the trace report as JSON")
    args = parser.parse_args(argv)

    recorder = dct.ToolRecorder()  # one per run
    effects = dc.Effects(
        planner=planner,
        executor=make_executor(recorder),
        verifier=verifier,
        composer=composer,
        gatekeeper=recorder.gatekeeper(),  # reads the ledger at call time
    )
    request = dc.DiagnosisRequest(QUESTION, dc.RunConfig("end-to-end-1", "example"))
    state = dc.run_diagnosis(request, effects)
    result = state.result

    if args.json:
        print(dc.to_json(dc.build_trace_report(state)))
        return 0 if result.outcome is dc.Outcome.ANSWERED else 1
    gatekeeper = result.gatekeeper_status.value if result.gatekeeper_status else "-"
    print(f"Outcome: {result.outcome.value} (gatekeeper {gatekeeper})")
    print(result.answer)
    print("\nTrace:")
    for event in result.trace:
        reason = f"  {event.reason_code.value}" if event.reason_code else ""
        print(f"  {event.seq:>2}. {event.node.value:<16} round {event.round} "
              f"attempt {event.attempt}  {event.status.value}{reason}")
    print("\nTool ledger:")
    for record in recorder.to_records():
        print(f"  {record['invocation_id']}  {record['tool_name']:<13} "
              f"success={record['success']}  input={json.dumps(record['input'])}")
    return 0 if result.outcome is dc.Outcome.ANSWERED else 1


if __name__ == "__main__":
    sys.exit(main())
