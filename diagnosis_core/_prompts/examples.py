"""Each agent's example: an input the workflow really builds, a tool result, a valid reply.

The examples of one workflow are one consistent run, built with the
package's own functions rather than typed by hand: the chat executor's tool
call goes through a :class:`ToolRecorder`, the reference gatekeeper checks its
reply, the projector builds the verifier's input from what passed, and the
composer's input holds the claims the example verdict allows. So an example
input is byte for byte what the machine would send, and an example reply is
one the parser (and the gatekeeper, or the AIOps rule evaluator) accepts —
``tests/test_prompts.py`` checks both. The free texts are per locale; tool
outputs (and so excerpts) are the same in both.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from .._kernel.tools.ledger import ToolLedger
from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import JsonValue

if TYPE_CHECKING:
    from .._kernel.tools.recorder import ToolEnvelope, ToolRecorder

__all__ = ["Example", "example", "example_ledger"]


@attrs.frozen
class Example:
    """One agent's example.

    Attributes:
        input: the exact input string (canonical JSON) the agent receives.
        tool_results: tool-result envelopes the agent received during the call
            (tool-calling agents only), as JSON texts.
        reply: a valid reply text.
        context: what the reply's parser needs besides the text (the skill
            names, the allowed claim ids, the known invocation ids), by name.
    """

    input: str
    tool_results: tuple[str, ...]
    reply: str
    context: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)


_TEXTS: Mapping[str, Mapping[str, str]] = {
    "en": {
        "query": "Why do payments fail with a gateway timeout since 10:00?",
        "history_user": "Checkout is failing for some customers.",
        "history_assistant": "Which error do they see?",
        "skill": "Diagnose payment gateway timeouts",
        "goal_logs": "check the gateway logs for timeouts to pay-svc",
        "claim": "Gateway calls to pay-svc time out after 3000 ms",
        "hypothesis": "the pay-svc connection pool is exhausted",
        "missing_evidence": "pay-svc connection pool metrics",
        "fact": "gateway calls to pay-svc time out after 3000 ms",
        "missing": "pay-svc connection pool metrics",
        "action": "check the connection pool size of pay-svc",
        "rationale": "The timeout is shown by the gateway logs; its cause is not.",
        "answer": "Payments fail because gateway calls to **pay-svc** time out after "
        "3000 ms (c1). The cause of the timeouts is not verified yet: check the connection "
        "pool size of pay-svc.",
        "aiops_goal": "check the p99 latency of pay-svc",
        "aiops_finding": "pay-svc p99 latency is 2.4 s, above the 1 s objective",
        "aiops_reason_plan": "There is no plan yet.",
        "summary": "pay-svc is slow: its p99 latency is 2.4 s, above the 1 s objective.",
        "evidence": "The latency query shows a p99 of 2.4 s for pay-svc.",
        "report_action": "Scale out pay-svc and check its database connection pool.",
    },
    "zh-CN": {
        "query": "为什么从 10:00 起支付因网关超时而失败？",
        "history_user": "部分客户结账失败。",
        "history_assistant": "他们看到的是什么错误？",
        "skill": "诊断支付网关超时",
        "goal_logs": "检查网关日志中调用 pay-svc 的超时",
        "claim": "网关调用 pay-svc 在 3000 毫秒后超时",
        "hypothesis": "pay-svc 的连接池已耗尽",
        "missing_evidence": "pay-svc 连接池指标",
        "fact": "网关调用 pay-svc 在 3000 毫秒后超时",
        "missing": "pay-svc 连接池指标",
        "action": "检查 pay-svc 的连接池大小",
        "rationale": "网关日志证实了超时，但尚未证实其原因。",
        "answer": "支付失败是因为网关调用 **pay-svc** 在 3000 毫秒后超时（c1）。"
        "超时的原因尚未证实：请检查 pay-svc 的连接池大小。",
        "aiops_goal": "检查 pay-svc 的 p99 延迟",
        "aiops_finding": "pay-svc 的 p99 延迟为 2.4 秒，超过 1 秒的目标",
        "aiops_reason_plan": "目前还没有计划。",
        "summary": "pay-svc 响应缓慢：p99 延迟为 2.4 秒，超过 1 秒的目标。",
        "evidence": "延迟查询显示 pay-svc 的 p99 为 2.4 秒。",
        "report_action": "扩容 pay-svc 并检查其数据库连接池。",
    },
}

_LOG_OUTPUT: JsonValue = {
    "items": [
        {
            "time": "2026-01-05T10:02:11Z",
            "service": "gateway",
            "message": "POST /pay: upstream timeout after 3000ms (pay-svc)",
        }
    ],
    "total": 1,
}
_METRICS_OUTPUT: JsonValue = {
    "service": "pay-svc",
    "metric": "latency_p99_seconds",
    "value": 2.4,
    "objective": 1.0,
}
_TOOL_CALLS: Mapping[str, tuple[str, JsonValue, str]] = {
    "chat": ("query_logs", _LOG_OUTPUT, "service:gateway AND timeout"),
    "aiops": ("query_metrics", _METRICS_OUTPUT, "latency_p99_seconds{service='pay-svc'}"),
}
"""Each workflow's one example tool call: the tool's name, its output and the query."""


def _call_tool(recorder: ToolRecorder, workflow: str) -> ToolEnvelope:
    """Record ``workflow``'s example call: the examples cite it, :func:`example_ledger` holds it."""
    name, output, query = _TOOL_CALLS[workflow]
    return recorder.wrap(name, lambda _query: output)(query)


def _reply(value: object) -> str:
    return json.dumps(to_wire(value), ensure_ascii=False, indent=2)


def _envelope(envelope: Mapping[str, object]) -> str:
    return json.dumps(dict(envelope), ensure_ascii=False, sort_keys=True)


@functools.cache
def _chat_examples(locale: str) -> Mapping[str, Example]:
    from .._chat.config import DiagnosisConfig
    from .._chat.enums import EvidenceStatus, Verdict, Verification
    from .._chat.gatekeeper import normalize_gatekeeper_result
    from .._chat.inputs import (
        GatekeeperSummary,
        build_composer_input,
        build_executor_input,
        build_planner_input,
        build_verifier_input,
    )
    from .._chat.payloads import (
        Claim,
        ComposerOutput,
        EvidenceBinding,
        ExecutorEvidence,
        FactCheck,
        HistoryMessage,
        Hypothesis,
        PlannerPlan,
        Skill,
        ToolTraceEntry,
        VerifierOutput,
    )
    from .._chat.projection import project_verified_input, select_allowed_claims
    from .._chat.reference_gatekeeper import ToolRecorder
    from .._chat.verdict import answer_mode_for, apply_verdict_ceiling, verdict_ceiling
    from .._kernel.machine.plan import PlanStep

    text = _TEXTS[locale]
    skills = (Skill("payment-timeout", text["skill"]),)
    history = (
        HistoryMessage("user", text["history_user"]),
        HistoryMessage("assistant", text["history_assistant"]),
    )
    plan = PlannerPlan(
        (PlanStep("s1", text["goal_logs"], ("query_logs",)),), selected_skill="payment-timeout"
    )
    planner = Example(
        build_planner_input(text["query"], history, skills, DiagnosisConfig()),
        (),
        _reply(plan),
        {"skill_names": tuple(skill.name for skill in skills)},
    )

    recorder = ToolRecorder()
    envelope = _call_tool(recorder, "chat")
    evidence = ExecutorEvidence(
        evidence_status=EvidenceStatus.EVIDENCE_FOUND,
        claims=(
            Claim(
                "c1",
                text["claim"],
                (
                    EvidenceBinding(
                        envelope["invocation_id"],
                        envelope["tool_name"],
                        "$.items[0].message",
                        "upstream timeout after 3000ms",
                    ),
                ),
                is_critical=True,
            ),
        ),
        hypotheses=(Hypothesis(text["hypothesis"], text["missing_evidence"]),),
        tool_trace_summary=(
            ToolTraceEntry(envelope["tool_name"], True, envelope["invocation_id"]),
        ),
    )
    executor = Example(
        build_executor_input(text["query"], plan, 1, None),
        (_envelope(envelope),),
        _reply(evidence),
        {"invocation_ids": (envelope["invocation_id"],)},
    )

    raw = recorder.gatekeeper()("example", evidence)
    normalized = normalize_gatekeeper_result(raw)
    verified = project_verified_input(evidence, normalized.checked_bindings)
    ceiling = verdict_ceiling(normalized.status)
    summary = GatekeeperSummary(
        normalized.status, ceiling, normalized.checked, normalized.passed, normalized.failed
    )
    verdict = VerifierOutput(
        verdict=Verdict.LOW_CONFID,
        groundedness_score=0.6,
        facts_checked=(FactCheck("c1", text["fact"], True, Verification.DIRECT_SUPPORT),),
        allowed_claim_ids=("c1",),
        critical_fact_count=1,
        missing_info=(text["missing"],),
        recommended_actions=(text["action"],),
        rationale=text["rationale"],
    )
    verifier = Example(
        build_verifier_input(text["query"], 1, verified, summary, None),
        (),
        _reply(verdict),
        {"claim_ids": tuple(claim.claim_id for claim in verified.verified_executor_output)},
    )

    effective = apply_verdict_ceiling(verdict.verdict, ceiling)
    allowed = select_allowed_claims(verified, verdict.allowed_claim_ids)
    composer = Example(
        build_composer_input(
            text["query"],
            answer_mode_for(effective),
            effective,
            allowed,
            verdict.missing_info,
            verdict.recommended_actions,
        ),
        (),
        _reply(ComposerOutput(text["answer"], ("c1",))),
        {"allowed_claim_ids": tuple(claim.claim_id for claim in allowed)},
    )
    return {"planner": planner, "executor": executor, "verifier": verifier, "composer": composer}


@functools.cache
def _aiops_examples(locale: str) -> Mapping[str, Example]:
    from .._aiops import payloads
    from .._aiops.enums import SupervisorChoice
    from .._aiops.inputs import (
        build_aiops_executor_input,
        build_aiops_planner_input,
        build_reporter_input,
        build_supervisor_input,
    )
    from .._kernel.machine.plan import PlanStep
    from .._kernel.tools.recorder import ToolRecorder

    text = _TEXTS[locale]
    alerts = (
        payloads.Alert(
            "HighLatency",
            "pay-svc",
            "critical",
            "2026-01-05T10:00:00Z",
            labels={"alertname": "HighLatency", "service": "pay-svc", "severity": "critical"},
            annotations={"summary": "pay-svc p99 latency above 1s"},
        ),
    )
    supervisor = Example(
        build_supervisor_input(
            alerts,
            step=1,
            max_steps=8,
            decisions=(),
            plan=None,
            findings=(),
            tool_invocation_count=0,
        ),
        (),
        _reply(
            payloads.SupervisorDecision(SupervisorChoice.PLANNER_AGENT, text["aiops_reason_plan"])
        ),
    )
    plan = payloads.AiOpsPlan((PlanStep("s1", text["aiops_goal"], ("query_metrics",)),))
    planner = Example(build_aiops_planner_input(alerts, ()), (), _reply(plan))

    envelope = _call_tool(ToolRecorder(), "aiops")
    invocation = envelope["invocation_id"]
    finding = payloads.AiOpsExecutorFinding(
        text["aiops_finding"], "HighLatency", "pay-svc", cited_invocation_ids=(invocation,)
    )
    executor = Example(
        build_aiops_executor_input(alerts, plan, ()),
        (_envelope(envelope),),
        _reply(payloads.AiOpsExecutorOutput((invocation,), (finding,))),
        {"known_invocation_ids": ()},
    )
    report = payloads.AiOpsReport(
        summary=text["summary"],
        findings=(
            payloads.AiOpsFinding("HighLatency", "pay-svc", text["aiops_finding"], (invocation,)),
        ),
        evidence=(payloads.AiOpsEvidence(text["evidence"], (invocation,)),),
        recommended_actions=(
            payloads.AiOpsRecommendedAction(text["report_action"], "HighLatency", "pay-svc"),
        ),
    )
    reporter = Example(
        build_reporter_input(alerts, plan, (finding,), (invocation,)),
        (),
        _reply(report),
        {"tool_invocation_ids": (invocation,)},
    )
    return {
        "supervisor": supervisor,
        "planner": planner,
        "executor": executor,
        "reporter": reporter,
    }


def example(workflow: str, agent: str, locale: str) -> Example:
    """The example of one agent in one locale."""
    examples = _chat_examples(locale) if workflow == "chat" else _aiops_examples(locale)
    return examples[agent]


def example_ledger(workflow: str) -> ToolLedger:
    """The tool ledger the example tool results were recorded in (for the tests' checks)."""
    from .._kernel.tools.recorder import ToolRecorder

    recorder = ToolRecorder()
    _call_tool(recorder, workflow)
    return recorder.ledger()
