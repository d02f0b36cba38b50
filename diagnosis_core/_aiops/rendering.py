"""Deterministic texts of the AIOps flow: the fallback report and the report view.

Every interpolated string goes through :func:`sanitize_item` (spec §6.8), so
no text can turn into HTML, a link, an image, any other Markdown construct or
an extra line.

The fallback report is the answer when no report was produced (a failed
agent, the step budget, the no-progress guard). Like the chat
pre-verification fallback it is built from deterministic facts only — the
reason code, the mode, counters, the caller's own alert payload and the run
id — and never shows agent text: no finding, no plan, no supervisor reason,
no invocation id. Templates are data, one :class:`_Templates` per locale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from types import MappingProxyType

import attrs

from .._kernel.enums import Locale
from .._kernel.machine.text import (
    SHARED_TEXTS,
    SharedTexts,
    sanitize_item,
    titled_section,
    trace_pointer,
)
from .config import AiOpsConfig
from .enums import AiOpsMode, AiOpsReasonCode
from .payloads import AiOpsReport, Alert
from .trace import AiOpsCallCounts

__all__ = ["render_aiops_fallback", "render_aiops_report"]


@attrs.frozen
class _Templates:
    """Every fixed text of the AIOps renderings for one locale (no ``&``, ``<``, ``>``).

    The lines the chat fallbacks say too are in ``shared``
    (:data:`~diagnosis_core._kernel.machine.text.SHARED_TEXTS`).
    """

    shared: SharedTexts

    fallback_title: str
    reasons: Mapping[AiOpsReasonCode, str]
    mode_line: str
    steps_line: str
    calls_line: str
    invocations_line: str
    alerts_title: str
    alert_line: str
    discovery_line: str
    fallback_note: str
    report_title: str
    summary_title: str
    findings_title: str
    finding_line: str
    evidence_title: str
    evidence_line: str
    action_line: str
    targeted_action_line: str
    empty_item: str


_EN = _Templates(
    shared=SHARED_TEXTS[Locale.EN],
    fallback_title="## AIOps diagnosis could not be completed",
    reasons=MappingProxyType(
        {
            AiOpsReasonCode.SUPERVISOR_FAILED: (
                "The supervisor could not produce a valid routing decision."
            ),
            AiOpsReasonCode.PLANNER_FAILED: "The planner could not produce a valid plan.",
            AiOpsReasonCode.EXECUTOR_FAILED: "The executor failed while investigating.",
            AiOpsReasonCode.EXECUTOR_TOOL_BLOCKED: (
                "A tool call needed for the investigation was blocked by policy."
            ),
            AiOpsReasonCode.EXECUTOR_INVALID_OUTPUT: (
                "The executor returned output in an invalid format."
            ),
            AiOpsReasonCode.REPORTER_FAILED: "The final alert report could not be written.",
            AiOpsReasonCode.STEP_BUDGET_EXHAUSTED: (
                "The supervisor did not finish within its step budget."
            ),
            AiOpsReasonCode.NO_PROGRESS: (
                "The supervisor chose the same agent three times in a row without any new"
                " tool invocation."
            ),
        }
    ),
    mode_line="- Mode: {mode}",
    steps_line="- Supervisor steps: {steps} of {max_steps}",
    calls_line=(
        "- Agent calls: supervisor {supervisor}, planner {planner}, executor {executor},"
        " reporter {reporter}"
    ),
    invocations_line="- Tool invocations reported: {count}",
    alerts_title="### Input alerts",
    alert_line="- {name} on {service}, severity {severity}, since {started_at}",
    discovery_line="- No alert payload was given; the active alerts were to be discovered.",
    fallback_note="No report was produced, so this answer contains no diagnosis.",
    report_title="## AIOps alert report",
    summary_title="### Summary",
    findings_title="### Findings",
    finding_line="- {name} on {service}: {text}{cites}",
    evidence_title="### Evidence",
    evidence_line="- {text}{cites}",
    action_line="- {text}",
    targeted_action_line="- {text} (for {name} on {service})",
    empty_item="(empty)",
)

_ZH_CN = _Templates(
    shared=SHARED_TEXTS[Locale.ZH_CN],
    fallback_title="## AIOps 诊断未能完成",
    reasons=MappingProxyType(
        {
            AiOpsReasonCode.SUPERVISOR_FAILED: "调度（Supervisor）未能给出有效的路由决策。",
            AiOpsReasonCode.PLANNER_FAILED: "规划步骤未能生成有效的排查计划。",
            AiOpsReasonCode.EXECUTOR_FAILED: "执行步骤在排查过程中失败。",
            AiOpsReasonCode.EXECUTOR_TOOL_BLOCKED: "排查所需的工具调用被策略拦截。",
            AiOpsReasonCode.EXECUTOR_INVALID_OUTPUT: "执行步骤返回的输出格式无效。",
            AiOpsReasonCode.REPORTER_FAILED: "未能生成最终告警报告。",
            AiOpsReasonCode.STEP_BUDGET_EXHAUSTED: "调度在步数预算内未能结束。",
            AiOpsReasonCode.NO_PROGRESS: "调度连续三次选择同一个 Agent，且没有任何新的工具调用。",
        }
    ),
    mode_line="- 模式：{mode}",
    steps_line="- 调度步数：{steps} / {max_steps}",
    calls_line=(
        "- Agent 调用：supervisor {supervisor} 次，planner {planner} 次，executor {executor} 次，"
        "reporter {reporter} 次"
    ),
    invocations_line="- 已报告的工具调用：{count} 次",
    alerts_title="### 输入告警",
    alert_line="- {name}（{service}），级别 {severity}，开始于 {started_at}",
    discovery_line="- 未提供告警 payload；应先发现当前活跃告警。",
    fallback_note="未能生成报告，因此本回答不包含诊断结论。",
    report_title="## AIOps 告警报告",
    summary_title="### 摘要",
    findings_title="### 发现",
    finding_line="- {name}（{service}）：{text}{cites}",
    evidence_title="### 证据",
    evidence_line="- {text}{cites}",
    action_line="- {text}",
    targeted_action_line="- {text}（针对 {name}，{service}）",
    empty_item="（空）",
)

_TEMPLATES: Mapping[Locale, _Templates] = MappingProxyType({Locale.EN: _EN, Locale.ZH_CN: _ZH_CN})
_CITES = MappingProxyType({Locale.EN: " (cites: {ids})", Locale.ZH_CN: "（引用：{ids}）"})


def _item(templates: _Templates, value: object, cap: int) -> str:
    """One sanitized item; a value that sanitizes to nothing shows a placeholder."""
    return sanitize_item(str(value), cap) or templates.empty_item


def render_aiops_fallback(
    *,
    reason_code: AiOpsReasonCode,
    run_id: str,
    mode: AiOpsMode,
    alerts: Sequence[Alert],
    supervisor_steps: int,
    calls: AiOpsCallCounts,
    tool_invocation_count: int,
    config: AiOpsConfig,
) -> str:
    """The fallback report when no report was produced.

    Shows only the reason, the mode, the counters, the input alerts (name,
    service, severity, start time — the caller's own payload, sanitized) and
    the run id. It receives no agent text, so it cannot show any. The result
    is non-empty Markdown; an error while rendering propagates.
    """
    templates = _TEMPLATES[config.locale]
    cap = config.max_item_chars
    item = partial(_item, templates, cap=cap)
    lines = [
        templates.fallback_title,
        "",
        templates.reasons[reason_code],
        "",
        templates.shared.reason_code_line.format(code=item(reason_code.value)),
        templates.mode_line.format(mode=item(mode.value)),
        templates.steps_line.format(
            steps=item(supervisor_steps), max_steps=item(config.max_supervisor_steps)
        ),
        templates.calls_line.format(
            supervisor=item(calls.supervisor),
            planner=item(calls.planner),
            executor=item(calls.executor),
            reporter=item(calls.reporter),
        ),
        templates.invocations_line.format(count=item(tool_invocation_count)),
        "",
        templates.alerts_title,
        "",
    ]
    if alerts:
        lines += [
            templates.alert_line.format(
                name=item(alert.name),
                service=item(alert.service),
                severity=item(alert.severity),
                started_at=item(alert.started_at),
            )
            for alert in alerts
        ]
    else:
        lines.append(templates.discovery_line)
    lines += ["", templates.fallback_note, "", trace_pointer(templates.shared, run_id, cap)]
    return "\n".join(lines)


def render_aiops_report(report: AiOpsReport, config: AiOpsConfig) -> str:
    """A readable, sanitized Markdown view of a report (for people; the JSON is the data).

    Every section is always present; an empty one reads "none". Cited
    invocation ids are shown after each finding and evidence item.
    """
    templates = _TEMPLATES[config.locale]
    cap = config.max_item_chars
    cites = _CITES[config.locale]
    item = partial(_item, templates, cap=cap)

    def cited(ids: Sequence[str]) -> str:
        return cites.format(ids=", ".join(item(value) for value in ids)) if ids else ""

    summary = sanitize_item(report.summary, cap)
    findings = [
        templates.finding_line.format(
            name=item(finding.alert_name),
            service=item(finding.service),
            text=item(finding.text),
            cites=cited(finding.cited_invocation_ids),
        )
        for finding in report.findings
    ]
    evidence = [
        templates.evidence_line.format(
            text=item(entry.text), cites=cited(entry.cited_invocation_ids)
        )
        for entry in report.evidence
    ]
    actions = [
        templates.action_line.format(text=item(action.text))
        if (key := action.alert_key) is None
        else templates.targeted_action_line.format(
            text=item(action.text), name=item(key[0]), service=item(key[1])
        )
        for action in report.recommended_actions
    ]
    none = templates.shared.none_line
    lines = [
        templates.report_title,
        "",
        *titled_section(templates.summary_title, [summary] if summary else [], none),
        "",
        *titled_section(templates.findings_title, findings, none),
        "",
        *titled_section(templates.evidence_title, evidence, none),
        "",
        *titled_section(templates.shared.actions_title, actions, none),
    ]
    return "\n".join(lines)
