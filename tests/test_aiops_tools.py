"""The AIOps flow records its tools through the same recorder as the chat flow (spec §13, §11).

The executor agent calls tools wrapped by a :class:`ToolRecorder`, reports the
envelope ids it got, and the reporter cites them; the rule "every cited
invocation id exists in the ledger" reads the recorder's ledger at evaluation
time — never a copy taken when the run started.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import diagnosis_core as dc
import diagnosis_core.tools as dct
from tests._reach import aiops as dca
from tests._reach import protocol as dcp

RUN = dc.RunConfig("aiops-tools-1", "ops-1")
ALERTS = (dcp.Alert("HighLatency", "pay-svc", "critical", "2024-05-01T10:00:00Z"),)
CITATION_RULE = "cited_invocations_succeeded"


def query_metrics(service: str, metric: str) -> dict[str, Any]:
    return {"service": service, "metric": metric, "p99_seconds": 2.4}


def query_logs(service: str) -> dict[str, Any]:
    return {"items": [{"message": f"{service}: connection pool exhausted (20/20)"}]}


class RecordingExecutor:
    """An executor agent that really calls its (recorded) tools and cites their envelopes."""

    def __init__(self, recorder: dct.ToolRecorder) -> None:
        self.metrics = recorder.wrap("query_metrics", query_metrics)
        self.logs = recorder.wrap("query_logs", query_logs)
        self.envelopes: list[dct.ToolEnvelope] = []

    def __call__(self, input: str, config: dc.RunConfig, /) -> str:
        metrics = self.metrics("pay-svc", "latency_p99")
        logs = self.logs("pay-svc")
        self.envelopes += [metrics, logs]
        ids = [metrics["invocation_id"], logs["invocation_id"]]
        finding = {"alert_name": "HighLatency", "service": "pay-svc",
                   "text": "the db pool is exhausted", "cited_invocation_ids": ids}
        return json.dumps({"findings": [finding], "tool_invocation_ids": ids})


def scripted(replies: list[str]) -> Any:
    def agent(input: str, config: dc.RunConfig, /) -> str:
        return replies.pop(0)

    return agent


def decision(choice: str) -> str:
    return json.dumps({"next": choice, "reason": "next step"})


def report(cited: list[str]) -> str:
    return json.dumps({
        "summary": "pay-svc latency comes from an exhausted db pool",
        "findings": [{"alert_name": "HighLatency", "service": "pay-svc",
                      "text": "the pool is exhausted", "cited_invocation_ids": cited}],
        "evidence": [{"text": "pool 20/20 in the logs", "cited_invocation_ids": cited}],
        "recommended_actions": [{"text": "raise the pool size", "alert_name": "HighLatency",
                                 "service": "pay-svc"}],
    })


def run_with(recorder: dct.ToolRecorder, cited: list[str]) -> dca.AiOpsState:
    effects = dca.AiOpsEffects(
        supervisor=scripted([decision("planner_agent"), decision("executor_agent"),
                             decision("FINISH")]),
        planner=scripted([json.dumps({"steps": [{"step_id": "s1", "goal": "check the pool"}]})]),
        executor=RecordingExecutor(recorder),
        reporter=scripted([report(cited)]),
    )
    return dca.run_aiops(dca.AiOpsRequest(RUN, ALERTS), effects)


def test_an_aiops_run_with_recorded_tools_passes_the_citation_rule_read_from_the_recorder() -> None:
    recorder = dct.ToolRecorder()
    stale = recorder.ledger()  # taken before any tool ran: what a frozen copy would hold
    state = run_with(recorder, ["inv-1", "inv-2"])
    assert state.result.outcome is dca.AiOpsOutcome.REPORTED
    assert state.result.tool_invocation_ids == ("inv-1", "inv-2")
    assert [record.tool_name for record in recorder.records()] == ["query_metrics", "query_logs"]

    evaluation = dca.evaluate_aiops_run(state, recorder)
    assert evaluation is not None
    assert evaluation.passed, evaluation.violations
    # The same verdict as the recorder's ledger given explicitly, and as its wire records.
    assert dca.evaluate_aiops_run(state, recorder.ledger()) == evaluation
    reloaded = dct.ledger_from_records(recorder.to_records())
    assert dca.evaluate_aiops_run(state, reloaded) == evaluation
    # A snapshot taken at start-up knows none of the calls: every citation fails.
    frozen = dca.evaluate_aiops_run(state, stale)
    assert frozen is not None and not frozen.passed
    assert {violation.rule_id for violation in frozen.violations} == {CITATION_RULE}


def test_a_citation_the_recorder_never_recorded_is_a_violation() -> None:
    recorder = dct.ToolRecorder()
    state = run_with(recorder, ["inv-1", "inv-7"])  # inv-7 was reported by no tool call
    evaluation = dca.evaluate_aiops_run(state, recorder)
    assert evaluation is not None and not evaluation.passed
    messages = [v.message for v in evaluation.violations if v.rule_id == CITATION_RULE]
    assert messages and all("'inv-7' is not in the tool ledger" in m for m in messages)


def test_a_failed_recorded_tool_call_cannot_be_cited() -> None:
    recorder = dct.ToolRecorder()

    def broken(service: str) -> object:
        raise TimeoutError("trace backend timeout")

    with pytest.raises(TimeoutError):
        recorder.wrap("query_traces", broken)("pay-svc")
    evaluation = dca.evaluate_aiops_report(
        json.loads(report(["inv-1"])), mode=dca.AiOpsMode.PAYLOAD_TARGETED, alerts=ALERTS,
        ledger=recorder,
    )
    assert [v.rule_id for v in evaluation.violations] == [CITATION_RULE, CITATION_RULE]


class NotALedger:
    def ledger(self) -> object:
        return {"inv-1": "ok"}


@pytest.mark.parametrize("source", [None, {"inv-1": {}}, NotALedger()])
def test_anything_but_a_ledger_or_a_recorder_is_a_type_error(source: Any) -> None:
    with pytest.raises(TypeError, match=r"^ledger: "):
        dca.evaluate_aiops_report(
            json.loads(report(["inv-1"])), mode=dca.AiOpsMode.PAYLOAD_TARGETED, alerts=ALERTS,
            ledger=source,
        )
