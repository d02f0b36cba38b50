"""The deterministic fallback renderers and their safe item rendering (spec §6.8).

A fallback is the answer of last resort, so it must be safe for any input:
every string interpolated into a template goes through :func:`sanitize_item`,
which no text can turn into HTML, a link, an image, any other Markdown
construct or an extra line.

The pre-verification fallback runs when *nothing* was verified. Its signature
is the information-flow guarantee of spec §10 invariant 2: it cannot receive
claim text, excerpts, hypotheses or verifier text, so it cannot show them. The
only executor-provided strings it shows are tool names that pass
:func:`is_valid_tool_name`; anything else collapses into one "unnamed" entry.

Templates are data, one :class:`_Templates` per :class:`Locale`, so adding a
locale cannot forget a sentence (mypy checks the fields, a test checks the
per-code and per-mode mappings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
from .config import DiagnosisConfig
from .enums import AnswerMode, GatekeeperStatus, ReasonCode
from .payloads import ToolTraceEntry
from .projection import AllowedClaim

__all__ = [
    "ToolUsage",
    "is_valid_tool_name",
    "render_post_verification_fallback",
    "render_pre_verification_fallback",
    "summarize_tool_usage",
]


# --- tool names ----------------------------------------------------------------

# Explicit ASCII classes and fullmatch: `\w`/`\d` match Unicode, `$` matches
# before a trailing newline.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")

# --- tool overview ----------------------------------------------------------------


def is_valid_tool_name(name: str) -> bool:
    """True when ``name`` fully matches ``[A-Za-z0-9_.:-]{1,64}`` (ASCII only, spec §6.8).

    Only such names may appear in a pre-verification fallback: they cannot
    carry a sentence of claim text.
    """
    return _TOOL_NAME.fullmatch(name) is not None


@attrs.frozen
class ToolUsage:
    """Calls and failures of one tool in the executor's trace summary.

    ``name`` is ``None`` for the single bucket of every invalid tool name.
    """

    name: str | None
    calls: int
    failures: int


def summarize_tool_usage(trace: Sequence[ToolTraceEntry]) -> tuple[ToolUsage, ...]:
    """Count calls and failures (``success`` false) per tool, for the fallback overview.

    Invalid names (see :func:`is_valid_tool_name`) are grouped under one
    ``name=None`` entry, so no invalid text reaches the output. Order is
    deterministic: valid names sorted by code point, the unnamed entry last.
    """
    calls: dict[str | None, int] = {}
    failures: dict[str | None, int] = {}
    for entry in trace:
        key = entry.tool_name if is_valid_tool_name(entry.tool_name) else None
        calls[key] = calls.get(key, 0) + 1
        failures[key] = failures.get(key, 0) + (0 if entry.success else 1)
    named = sorted(key for key in calls if key is not None)
    order: list[str | None] = [*named, *([None] if None in calls else [])]
    return tuple(ToolUsage(key, calls[key], failures[key]) for key in order)


# --- templates --------------------------------------------------------------------


@attrs.frozen
class _Templates:
    """Every fixed text of the fallbacks for one locale.

    Placeholders are filled with ``str.format`` after each value went
    through :func:`sanitize_item`. No template contains ``&``, ``<`` or ``>``.
    The lines the AIOps renderings say too are in ``shared``
    (:data:`~diagnosis_core._kernel.machine.text.SHARED_TEXTS`).
    """

    shared: SharedTexts

    pre_title: str
    gatekeeper_line: str
    bindings_line: str
    tools_title: str
    tool_line: str
    no_tools: str
    unnamed_tool: str
    pre_note: str
    pre_note_earlier_round: str
    reasons: Mapping[ReasonCode, str]
    post_title: str
    post_intro: str
    answer_mode_line: str
    answer_modes: Mapping[AnswerMode, str]
    claims_title: str
    missing_title: str


_EN = _Templates(
    shared=SHARED_TEXTS[Locale.EN],
    pre_title="## Diagnosis could not be completed",
    gatekeeper_line="- Evidence check status: {status}",
    bindings_line="- Evidence bindings: {checked} checked, {passed} passed, {failed} failed",
    tools_title="### Tool calls",
    tool_line="- {name}: calls {calls}, failed {failures}",
    no_tools="- No tool calls were reported.",
    unnamed_tool="(unnamed tool)",
    pre_note="No finding was verified, so this answer contains no diagnosis.",
    pre_note_earlier_round=(
        "An earlier round verified findings, but the evidence retry failed,"
        " so this answer contains no diagnosis."
    ),
    reasons=MappingProxyType(
        {
            ReasonCode.PLANNER_FAILED: "The planner could not produce a valid investigation plan.",
            ReasonCode.EXECUTOR_FAILED: "Evidence collection failed before returning any evidence.",
            ReasonCode.EXECUTOR_TOOL_BLOCKED: (
                "A tool call needed for evidence collection was blocked by policy."
            ),
            ReasonCode.EXECUTOR_INVALID_OUTPUT: (
                "Evidence collection returned output in an invalid format."
            ),
            ReasonCode.GATEKEEPER_REJECTED: "The evidence check rejected the collected evidence.",
            ReasonCode.GATEKEEPER_UNAVAILABLE: "The evidence check service was unavailable.",
            ReasonCode.GATEKEEPER_INVALID_RESULT: (
                "The evidence check returned a result that could not be used."
            ),
            ReasonCode.NO_TRUSTED_EVIDENCE: (
                "None of the collected evidence could be confirmed against the recorded"
                " tool results."
            ),
            ReasonCode.VERIFIER_FAILED: "The verification step could not produce a valid result.",
            ReasonCode.COMPOSER_FAILED: "The final answer could not be written.",
        }
    ),
    post_title="## Diagnosis summary (fallback)",
    post_intro="The final answer could not be written, so the verified material is listed below.",
    answer_mode_line="- Answer mode: {mode} — {description}",
    answer_modes=MappingProxyType(
        {
            AnswerMode.NORMAL: "the findings below are supported by verified evidence.",
            AnswerMode.LOW_CONFIDENCE: (
                "low confidence; the findings below are only partly supported by evidence."
            ),
            AnswerMode.DEGRADED: "degraded; the evidence did not support a conclusion.",
        }
    ),
    claims_title="### Verified findings",
    missing_title="### Missing information",
)

_ZH_CN = _Templates(
    shared=SHARED_TEXTS[Locale.ZH_CN],
    pre_title="## 诊断未能完成",
    gatekeeper_line="- 证据校验状态：{status}",
    bindings_line="- 证据绑定：已检查 {checked}，通过 {passed}，失败 {failed}",
    tools_title="### 工具调用",
    tool_line="- {name}：调用 {calls} 次，失败 {failures} 次",
    no_tools="- 未报告任何工具调用。",
    unnamed_tool="（未命名工具）",
    pre_note="没有任何结论通过验证，因此本回答不包含诊断结论。",
    pre_note_earlier_round="较早的一轮已验证了部分结论，但证据重试失败，因此本回答不包含诊断结论。",
    reasons=MappingProxyType(
        {
            ReasonCode.PLANNER_FAILED: "规划步骤未能生成有效的排查计划。",
            ReasonCode.EXECUTOR_FAILED: "证据收集步骤在返回证据之前失败。",
            ReasonCode.EXECUTOR_TOOL_BLOCKED: "证据收集所需的工具调用被策略拦截。",
            ReasonCode.EXECUTOR_INVALID_OUTPUT: "证据收集步骤返回的输出格式无效。",
            ReasonCode.GATEKEEPER_REJECTED: "证据校验拒绝了收集到的证据。",
            ReasonCode.GATEKEEPER_UNAVAILABLE: "证据校验服务不可用。",
            ReasonCode.GATEKEEPER_INVALID_RESULT: "证据校验返回的结果无法使用。",
            ReasonCode.NO_TRUSTED_EVIDENCE: "收集到的证据均无法与已记录的工具结果核对一致。",
            ReasonCode.VERIFIER_FAILED: "验证步骤未能给出有效结果。",
            ReasonCode.COMPOSER_FAILED: "未能生成最终回答。",
        }
    ),
    post_title="## 诊断摘要（兜底回答）",
    post_intro="未能生成最终回答，以下列出已通过验证的内容。",
    answer_mode_line="- 回答模式：{mode} — {description}",
    answer_modes=MappingProxyType(
        {
            AnswerMode.NORMAL: "以下结论有已验证的证据支持。",
            AnswerMode.LOW_CONFIDENCE: "低置信度；以下结论仅有部分证据支持。",
            AnswerMode.DEGRADED: "降级；现有证据不足以得出结论。",
        }
    ),
    claims_title="### 已验证的结论",
    missing_title="### 缺失的信息",
)

_TEMPLATES: Mapping[Locale, _Templates] = MappingProxyType({Locale.EN: _EN, Locale.ZH_CN: _ZH_CN})


# --- renderers --------------------------------------------------------------------


def _bullets(items: Sequence[str], max_chars: int) -> list[str]:
    """One bullet per item that is not empty once sanitized."""
    return [f"- {safe}" for safe in (sanitize_item(item, max_chars) for item in items) if safe]


def render_pre_verification_fallback(
    *,
    reason_code: ReasonCode,
    run_id: str,
    gatekeeper_status: GatekeeperStatus | None,
    binding_counts: tuple[int, int, int] | None,
    tool_trace: Sequence[ToolTraceEntry],
    config: DiagnosisConfig,
    earlier_round_verified: bool = False,
) -> str:
    """The answer when nothing was verified (spec §6.8, §10 invariant 2).

    It receives no claim, excerpt, hypothesis or verifier text, so it cannot
    leak them; from the tool trace only valid tool names and counts are shown
    (never invocation ids). ``binding_counts`` is ``(checked, passed,
    failed)``. The gatekeeper and binding lines are omitted when ``None``.
    ``earlier_round_verified`` (an evidence retry failed after an earlier
    round verified findings) replaces the "nothing was verified" note by one
    saying so (spec §15); it still shows no claim text.
    The result is non-empty Markdown; an error while rendering propagates.
    """
    templates = _TEMPLATES[config.locale]
    cap = config.max_item_chars

    def item(value: object) -> str:
        return sanitize_item(str(value), cap)

    lines = [
        templates.pre_title,
        "",
        templates.reasons[reason_code],
        "",
        templates.shared.reason_code_line.format(code=item(reason_code.value)),
    ]
    if gatekeeper_status is not None:
        lines.append(templates.gatekeeper_line.format(status=item(gatekeeper_status.value)))
    if binding_counts is not None:
        checked, passed, failed = binding_counts
        lines.append(
            templates.bindings_line.format(
                checked=item(checked), passed=item(passed), failed=item(failed)
            )
        )
    tools = [
        templates.tool_line.format(
            name=templates.unnamed_tool if tool.name is None else item(tool.name),
            calls=item(tool.calls),
            failures=item(tool.failures),
        )
        for tool in summarize_tool_usage(tool_trace)
    ]
    lines += ["", *titled_section(templates.tools_title, tools, templates.no_tools)]
    note = templates.pre_note_earlier_round if earlier_round_verified else templates.pre_note
    lines += ["", note, "", trace_pointer(templates.shared, run_id, cap)]
    return "\n".join(lines)


def render_post_verification_fallback(
    *,
    run_id: str,
    answer_mode: AnswerMode,
    allowed_claims: Sequence[AllowedClaim],
    missing_info: Sequence[str],
    recommended_actions: Sequence[str],
    config: DiagnosisConfig,
) -> str:
    """The answer when the composer failed after verification (spec §6.8).

    Shows only the allowed claims' verified text (not their ids), the
    verifier's ``missing_info`` and ``recommended_actions`` and the answer
    mode. Every section is always present; an empty one (or one whose items
    all sanitize to nothing) reads "none". The result is non-empty Markdown;
    an error while rendering propagates.
    """
    templates = _TEMPLATES[config.locale]
    shared = templates.shared
    none = shared.none_line
    cap = config.max_item_chars
    claims = _bullets([claim.text for claim in allowed_claims], cap)
    lines = [
        templates.post_title,
        "",
        templates.post_intro,
        "",
        templates.answer_mode_line.format(
            mode=sanitize_item(answer_mode.value, cap),
            description=templates.answer_modes[answer_mode],
        ),
        "",
        *titled_section(templates.claims_title, claims, none),
        "",
        *titled_section(templates.missing_title, _bullets(missing_info, cap), none),
        "",
        *titled_section(shared.actions_title, _bullets(recommended_actions, cap), none),
        "",
        trace_pointer(shared, run_id, cap),
    ]
    return "\n".join(lines)
