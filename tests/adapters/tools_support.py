"""Effects whose executor calls a real recorded tool and cites it honestly (spec §13).

The gatekeeper is the package's reference gatekeeper over the run's ledger
(:class:`RunRecorders`), so a run whose ledger is lost on the way is
``GATEKEEPER_REJECTED`` although its evidence is honest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
from adapter_support import EXAMPLES_DIR, load_doc, scenario_of

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct

PAYMENT = EXAMPLES_DIR / "payment_timeout.json"
EXCERPT = "upstream timeout after 3000ms"


LATENCY = "p99 latency 3400 ms"


def query_logs(service: str) -> dict[str, Any]:
    if service == "gateway":
        return {"items": [{"message": f"{service}: {EXCERPT}"}]}
    return {"items": [{"message": f"{service}: {LATENCY}"}]}


def _claim(claim_id: str, text: str, invocation_id: str, excerpt: str) -> dict[str, Any]:
    binding = {
        "source_invocation_id": invocation_id,
        "tool_name": "query_logs",
        "raw_path": "$.items[0].message",
        "evidence_excerpt": excerpt,
    }
    return {"claim_id": claim_id, "text": text, "is_critical": True, "bindings": [binding]}


def honest_evidence(gateway: str, service: str) -> str:
    """Executor evidence citing exactly what the two recorded calls returned."""
    return json.dumps(
        {
            "schema_version": "executor_evidence_v2",
            "evidence_status": "evidence_found",
            "claims": [
                _claim("c1", "Gateway calls to pay-svc time out after 3000 ms", gateway, EXCERPT),
                _claim("c2", "pay-svc p99 is 3400 ms", service, LATENCY),
            ],
            "hypotheses": [],
            "tool_trace_summary": [
                {"invocation_id": gateway, "tool_name": "query_logs", "success": True},
                {"invocation_id": service, "tool_name": "query_logs", "success": True},
            ],
        }
    )


def tooled_effects(
    recorders: dct.RunRecorders, doc_path: Path = PAYMENT, *, tool_log: Path | None = None
) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """The example's request and effects, with a tool-calling executor and the ledger gatekeeper.

    ``tool_log`` gets one line per tool call actually performed (across processes).
    """
    request, effects = scenario_of(load_doc(doc_path))

    def logged_query(service: str) -> dict[str, Any]:
        if tool_log is not None:
            with tool_log.open("a", encoding="utf-8") as log:
                log.write(f"query_logs {service}\n")
        return query_logs(service)

    def executor(input: str, config: dc.RunConfig, /) -> str:
        tool = recorders.recorder(config.run_id).wrap("query_logs", logged_query)
        gateway, service = tool("gateway"), tool("pay-svc")
        return honest_evidence(gateway["invocation_id"], service["invocation_id"])

    return request, attrs.evolve(effects, executor=executor, gatekeeper=recorders.gatekeeper())


def reference_tooled_state(doc_path: Path = PAYMENT) -> dc.DiagnosisState:
    """The uninterrupted run of the tooled effects through the synchronous driver."""
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders, doc_path)
    recorder = recorders(request.run.run_id, [])
    # tools= puts the calls on the executor entry, so it goes with a journal's sink.
    return dc.run_diagnosis(request, effects, sink=dcj.ListJournalSink(), tools=recorder)
