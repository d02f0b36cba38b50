"""The rules every prompt states, as data: what is enforced, by whom, and its sentence per locale.

Each :class:`PromptRule` names the agents it is told to (``scope``), the
checks of the code it stands for (``enforces``) and one sentence per locale.
An ``enforces`` key is one of:

``parse:<path>: <message>``
    a rule of an agent's payload parser (``_chat/parsing.py``,
    ``_aiops/parsing.py``, ``_kernel/machine/plan.py``), written as the
    :class:`~diagnosis_core.protocol.PayloadError` it raises: its path and
    message with every computed part as ``{}``;
``layer:document`` / ``layer:types``
    the shared layers every parser runs first: the document (one JSON
    object, bare or in one fence, strict JSON) and the shapes and types (the
    converter);
``enum:<Enum>``
    the vocabulary of an enumeration that a payload field takes;
``gatekeeper:<code>``
    a reason the reference gatekeeper fails a binding
    (:class:`~diagnosis_core.tools.BindingFailure`);
``aiops_rule:<id>``
    a rule of the AIOps report evaluator (:data:`~diagnosis_core.aiops.AIOPS_RULES`);
``retry:<constraint>``
    a constraint of the round-2 retry context (spec §6.5).

``tests/test_prompts.py`` derives these keys from the code (the parsers'
raise sites, the enumerations, the gatekeeper's and evaluator's codes) and
fails when one of them is not in this table, so a new rule cannot reach a
parser without a sentence in every prompt that needs it. A rule with no key
states how the workflow uses the reply (spec §5–§7): it is in the prompt too.

Sentences are :meth:`str.format` templates over :func:`vocabulary`, so the
wire values they quote (verdicts, constraint names, limits) come from the
code, not from this file.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

import attrs

__all__ = ["PROMPT_RULES", "PromptRule", "vocabulary"]

_CHAT = "chat"
_AIOPS = "aiops"

ALL_AGENTS: tuple[tuple[str, str], ...] = (
    (_CHAT, "planner"),
    (_CHAT, "executor"),
    (_CHAT, "verifier"),
    (_CHAT, "composer"),
    (_AIOPS, "supervisor"),
    (_AIOPS, "planner"),
    (_AIOPS, "executor"),
    (_AIOPS, "reporter"),
)
"""Every agent of both workflows, as ``(workflow, agent)``, in workflow order."""

_PLANNERS = ((_CHAT, "planner"), (_AIOPS, "planner"))


@attrs.frozen
class PromptRule:
    """One rule a prompt states: who is told, which checks it stands for, its sentences.

    Attributes:
        id: a stable name (``cite_recorded_invocation``).
        scope: the ``(workflow, agent)`` pairs whose prompt states it.
        enforces: the keys of the checks it stands for (see the module doc);
            empty for a rule that says how the reply is used.
        sentences: ``{locale: template}``; :func:`vocabulary` fills the template.
    """

    id: str
    scope: tuple[tuple[str, str], ...]
    enforces: tuple[str, ...]
    sentences: Mapping[str, str]

    def sentence(self, locale: str) -> str:
        """The sentence in ``locale``, with the code's wire values filled in."""
        return self.sentences[locale].format_map(vocabulary(locale))


_SEPARATORS: Mapping[str, str] = {"en": ", ", "zh-CN": "、"}


def _quoted(values: Iterable[object], locale: str) -> str:
    """Wire values (an enumeration's or plain strings) in backticks, as a list in ``locale``."""
    return _SEPARATORS[locale].join(f"`{getattr(value, 'value', value)}`" for value in values)


class _Vocabulary(dict[str, str]):
    """The chat workflow's values; the AIOps values are read on first use only.

    So a chat prompt never imports the AIOps package.
    """

    def __init__(self, locale: str, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.locale = locale

    def __missing__(self, key: str) -> str:
        from .._aiops.config import NO_PROGRESS_REPEATS
        from .._aiops.enums import AiOpsMode, AiOpsReasonCode, SupervisorChoice

        self.update(
            {
                "choices": _quoted(SupervisorChoice, self.locale),
                "finish": f"`{SupervisorChoice.FINISH.value}`",
                "no_progress_repeats": str(NO_PROGRESS_REPEATS),
                "step_budget": f"`{AiOpsReasonCode.STEP_BUDGET_EXHAUSTED.value}`",
                "no_progress": f"`{AiOpsReasonCode.NO_PROGRESS.value}`",
                "payload_targeted": f"`{AiOpsMode.PAYLOAD_TARGETED.value}`",
                "auto_discovery": f"`{AiOpsMode.AUTO_DISCOVERY.value}`",
            }
        )
        return self[key]


@functools.cache
def vocabulary(locale: str = "en") -> Mapping[str, str]:
    """The wire values the sentences quote, read from the code (AIOps ones on first use).

    Lists are written with ``locale``'s separator (``, `` or ``、``).
    """
    from .._chat.enums import AnswerMode, EvidenceStatus, Verdict, Verification
    from .._chat.gaps import _GAP_VERIFICATIONS, RetryConstraint
    from .._chat.payloads import EXECUTOR_SCHEMA_VERSION
    from .._kernel.wire.json import MAX_INT_DIGITS

    gaps = [value for value in Verification if value in _GAP_VERIFICATIONS]
    return _Vocabulary(
        locale,
        {
            "verdicts": _quoted(Verdict, locale),
            "verdict_order": " < ".join(f"`{v.value}`" for v in Verdict),
            "verifications": _quoted(Verification, locale),
            "gap_verifications": _quoted(gaps, locale),
            "evidence_found": f"`{EvidenceStatus.EVIDENCE_FOUND.value}`",
            "no_evidence": f"`{EvidenceStatus.NO_EVIDENCE.value}`",
            "schema_version": f"`{EXECUTOR_SCHEMA_VERSION}`",
            "answer_modes": _quoted(AnswerMode, locale),
            "normal": f"`{AnswerMode.NORMAL.value}`",
            "low_confidence": f"`{AnswerMode.LOW_CONFIDENCE.value}`",
            "degraded": f"`{AnswerMode.DEGRADED.value}`",
            "constraints": _quoted(RetryConstraint, locale),
            "max_int_digits": str(MAX_INT_DIGITS),
        },
    )


def _rule(
    id: str,
    scope: tuple[tuple[str, str], ...],
    enforces: tuple[str, ...],
    en: str,
    zh: str,
) -> PromptRule:
    return PromptRule(id, scope, enforces, {"en": en, "zh-CN": zh})


_EXECUTOR = ((_CHAT, "executor"),)
_VERIFIER = ((_CHAT, "verifier"),)
_COMPOSER = ((_CHAT, "composer"),)
_SUPERVISOR = ((_AIOPS, "supervisor"),)
_AIOPS_EXECUTOR = ((_AIOPS, "executor"),)
_REPORTER = ((_AIOPS, "reporter"),)
_ALERT_REFERENCE = (
    "parse:{}.alert_name: must not be empty",
    "parse:{}.service: must not be empty",
    "parse:{}.service: missing (required with alert_name)",
    "parse:{}.alert_name: missing (required with service)",
)

PROMPT_RULES: tuple[PromptRule, ...] = (
    # --- every agent: the document and the types (spec §5) ---------------------------
    _rule(
        "json_only", ALL_AGENTS, ("layer:document",),
        "Reply with exactly one JSON object and nothing else: no prose, greeting or "
        "explanation before or after it, no second object. Send the object alone, or inside "
        "one Markdown fence: a line of exactly three backticks (optionally followed by "
        "`json`), the JSON, and a closing line of exactly three backticks. No `~~~` fence, "
        "no longer fence, no text outside the fence, no empty fence.",
        "只回复一个 JSON 对象，不要任何其他内容：对象前后不能有说明、问候或解释文字，也不能有第二"
        "个对象。"
        "直接发送该对象，或把它放在一个 Markdown 代码块中：开头一行恰好是三个反引号（后面可以写 `"
        "json`），"
        "然后是 JSON，最后一行恰好是三个反引号。不接受 `~~~` 代码块、更长的代码块、代码块外的文字"
        "或空代码块。",
    ),
    _rule(
        "strict_json", ALL_AGENTS, ("layer:document",),
        "Write strict JSON: double-quoted keys and strings, no comments, no trailing comma, "
        "no `NaN` or `Infinity`, `true`/`false`/`null` in lower case, no key twice in one "
        "object, no unpaired surrogate escape such as `\\ud800`, no integer of more than "
        "{max_int_digits} digits.",
        "使用严格的 JSON：键和字符串都用双引号，不要注释，不要尾随逗号，不要 `NaN` 或 `Infinity`，"
        "`true`/`false`/`null` 用小写，同一对象中的键不能重复，不能有不成对的代理项转义（如 `\\ud"
        "800`），"
        "整数不能超过 {max_int_digits} 位。",
    ),
    _rule(
        "schema_shape", ALL_AGENTS, ("layer:types",),
        "Follow the schema exactly: every required key present and spelled exactly as "
        "written (case matters), every value of the stated type (an integer has no "
        "fraction: `1`, not `1.0`; a boolean is `true` or `false`, never a number or a "
        "string), enumeration values spelled exactly. `null` for an optional key means it "
        "is absent. Keys that the schema does not name are ignored and never passed on.",
        "严格遵守 schema：所有必填键都要出现，拼写与 schema 完全一致（区分大小写）；每个值的类型"
        "都要正确"
        "（整数不带小数：写 `1`，不写 `1.0`；布尔值只能是 `true` 或 `false`，不能是数字或字符串）；"
        "枚举值按原样拼写。可选键的值为 `null` 表示该键不存在。schema 中没有的键会被忽略，也不会"
        "传给后续环节。",
    ),
    # --- planners (spec §5.1) -----------------------------------------------------------
    _rule(
        "plan_has_steps", _PLANNERS, ("parse:steps: must not be empty",),
        "`steps` has at least one step.",
        "`steps` 至少包含一个步骤。",
    ),
    _rule(
        "plan_step_ids", _PLANNERS,
        ("parse:steps[{}].step_id: must not be empty", "parse:{}: duplicate {}"),
        "Every `step_id` is a non-empty string, and no two steps share one.",
        "每个 `step_id` 都是非空字符串，且各步骤的 `step_id` 互不相同。",
    ),
    _rule(
        "plan_goals", _PLANNERS,
        ("parse:steps[{}].goal: must not be empty", "parse:steps[{}].goal: must not be blank"),
        "Every `goal` says what to check: a string with at least one character that is not "
        "whitespace.",
        "每个 `goal` 都要说明要检查什么：至少包含一个非空白字符的字符串。",
    ),
    _rule(
        "plan_tools", _PLANNERS, (),
        "`tools` lists the names of the tools the step should use (an array of strings, "
        "may be empty or omitted).",
        "`tools` 列出该步骤应使用的工具名称（字符串数组，可以为空或省略）。",
    ),
    _rule(
        "planner_skill_from_catalog", ((_CHAT, "planner"),),
        ("parse:selected_skill: {} is not in the skill catalog",),
        "`selected_skill` is `null` (or omitted), or exactly the `name` of one of the input's "
        "`skills`; any other name makes the reply invalid.",
        "`selected_skill` 为 `null`（或省略），或者恰好等于输入 `skills` 中某个技能的 `name`；"
        "其他任何名称都会使回复无效。",
    ),
    # --- chat executor (spec §5.2, §6.1, §9, §13) -------------------------------------
    _rule(
        "executor_schema_version", _EXECUTOR,
        ("parse:schema_version: missing", "parse:schema_version: expected {}, got null"),
        "`schema_version` is required and is exactly {schema_version}.",
        "`schema_version` 必填，且必须恰好是 {schema_version}。",
    ),
    _rule(
        "executor_evidence_status", _EXECUTOR,
        (
            "enum:EvidenceStatus",
            "parse:claims: must not be empty when evidence_status is 'evidence_found'",
            "parse:claims: must be empty when evidence_status is 'no_evidence'",
        ),
        "`evidence_status` is {evidence_found} with at least one claim, or {no_evidence} "
        "with `claims` an empty array. `claims` is always present. When the tools show "
        "nothing relevant, answer {no_evidence}: that is a valid reply, not a failure.",
        "`evidence_status` 为 {evidence_found} 时至少要有一条 claim；为 {no_evidence} 时 `claims` "
        "必须是空数组。`claims` 必须始终出现。工具结果中没有相关内容时，回复 {no_evidence}：这是"
        "有效回复，不是失败。",
    ),
    _rule(
        "executor_claim_ids", _EXECUTOR,
        ("parse:claims[{}].claim_id: must not be empty", "parse:{}: duplicate {}"),
        "Every `claim_id` is a non-empty string, unique in the reply (e.g. `c1`, `c2`).",
        "每个 `claim_id` 都是非空字符串，在回复中唯一（例如 `c1`、`c2`）。",
    ),
    _rule(
        "executor_claim_text", _EXECUTOR, ("parse:claims[{}].text: must not be empty",),
        "Every claim's `text` is a non-empty statement of one fact the tools showed; "
        "`is_critical` is `true` for a fact the answer depends on (default `false`).",
        "每条 claim 的 `text` 都是非空的陈述，只说明工具结果显示的一个事实；答案所依赖的事实 `is_"
        "critical` "
        "设为 `true`（默认 `false`）。",
    ),
    _rule(
        "executor_bindings_complete", _EXECUTOR,
        ("parse:claims[{}].bindings: must not be empty", "parse:{}.{}: must not be empty"),
        "Every claim has at least one binding, and every binding has four non-empty "
        "strings: `source_invocation_id`, `tool_name`, `raw_path`, `evidence_excerpt`.",
        "每条 claim 至少有一个 binding，每个 binding 的四个字段都是非空字符串："
        "`source_invocation_id`、`tool_name`、`raw_path`、`evidence_excerpt`。",
    ),
    _rule(
        "executor_bindings_distinct", _EXECUTOR,
        ("parse:claims[{}].bindings[{}]: duplicate binding ({}) in this claim",),
        "Within one claim, no two bindings have the same `source_invocation_id`, "
        "`tool_name` and `raw_path`.",
        "同一条 claim 中，任意两个 binding 的 `source_invocation_id`、`tool_name`、`raw_path` 不"
        "能完全相同。",
    ),
    _rule(
        "executor_cite_recorded_invocation", _EXECUTOR, ("gatekeeper:INVOCATION_NOT_FOUND",),
        "Cite only tool calls you made in this turn: `source_invocation_id` is the "
        "`invocation_id` of a tool result you received. Never invent an id and never cite "
        "an id from anywhere else.",
        "只能引用你在本轮中实际发起的工具调用：`source_invocation_id` 必须是你收到的某个工具结果的 "
        "`invocation_id`。不要编造 id，也不要引用其他来源的 id。",
    ),
    _rule(
        "executor_cite_successful_invocation", _EXECUTOR, ("gatekeeper:INVOCATION_FAILED",),
        "Cite only tool calls that succeeded: a call that returned an error is no evidence.",
        "只能引用成功的工具调用：返回错误的调用不能作为证据。",
    ),
    _rule(
        "executor_tool_name_matches", _EXECUTOR, ("gatekeeper:TOOL_MISMATCH",),
        "`tool_name` is exactly the `tool_name` of that invocation.",
        "`tool_name` 必须与该调用的 `tool_name` 完全一致。",
    ),
    _rule(
        "executor_raw_path_resolves", _EXECUTOR, ("gatekeeper:RAW_PATH_UNRESOLVED",),
        "`raw_path` points into that invocation's `output` (not into the whole tool "
        "result): `$` followed by `.name`, `['name']` or `[index]` steps, such as "
        "`$.items[0].message`, and it must lead to a string, number or boolean, not to an "
        "object, an array or `null`. No wildcards, no `..`, no negative or leading-zero index.",
        "`raw_path` 指向该调用的 `output` 内部（不是整个工具结果）：以 `$` 开头，后接 `.name`、`["
        "'name']` "
        "或 `[index]`，例如 `$.items[0].message`；它必须指向一个字符串、数字或布尔值，而不是对象"
        "、数组或 "
        "`null`。不支持通配符、`..`、负数下标或以 0 开头的下标。",
    ),
    _rule(
        "executor_excerpt_occurs", _EXECUTOR, ("gatekeeper:EXCERPT_MISMATCH",),
        "`evidence_excerpt` is copied from the value at `raw_path` and must occur in it "
        "exactly (case-sensitive; a run of whitespace counts as one space). Do not "
        "paraphrase, translate, shorten with `...` or add words.",
        "`evidence_excerpt` 从 `raw_path` 所指的值中复制，必须原样出现在该值中（区分大小写；"
        "连续空白视为一个空格）。不要改写、翻译、用 `...` 省略或添加文字。",
    ),
    _rule(
        "executor_gatekeeper_outcome", _EXECUTOR, (),
        "Every binding is checked against the recorded tool calls before anyone reads your "
        "claims: a claim keeps only its bindings that pass, a claim with none is dropped, "
        "and when no binding passes the run ends without an answer.",
        "在任何人读取你的 claim 之前，每个 binding 都会与已记录的工具调用逐一核对：claim 只保留通"
        "过核对的 "
        "binding，没有通过的 claim 会被丢弃；如果所有 binding 都未通过，本次运行将没有答案。",
    ),
    _rule(
        "executor_trace_summary", _EXECUTOR,
        (
            "parse:tool_trace_summary[{}].invocation_id: must not be empty",
            "parse:tool_trace_summary[{}].tool_name: must not be empty",
        ),
        "`hypotheses` and `tool_trace_summary` are optional; in `tool_trace_summary` an "
        "`invocation_id` is omitted, `null` or non-empty, and `tool_name` is non-empty. "
        "They stay in the trace and never reach the verifier or the composer: put what "
        "you found in `claims`.",
        "`hypotheses` 和 `tool_trace_summary` 可选；`tool_trace_summary` 中的 `invocation_id` "
        "可以省略、为 `null` 或为非空字符串，`tool_name` 必须非空。它们只保留在 trace 中，不会传"
        "给 verifier "
        "或 composer：发现的内容请写进 `claims`。",
    ),
    _rule(
        "executor_retry_round", _EXECUTOR,
        tuple(
            f"retry:{name}"
            for name in (
                "AT_MOST_ONCE",
                "NO_REPEAT_SUCCESSFUL_QUERIES",
                "INCREMENTAL_QUERIES_ONLY",
                "PRESERVE_PRIOR_VERIFIED_CLAIMS",
                "RETURN_FULL_EXECUTOR_EVIDENCE_V2_SNAPSHOT",
            )
        ),
        "In round 2 (`round` is 2 and `retry_context` is given) the constraints are "
        "{constraints}: this retry happens at most once; do not repeat the successful "
        "queries of `completed_query_refs`; query only what the `gaps` need; keep the claims "
        "of `prior_verified_executor_output`; and return a complete {schema_version} "
        "snapshot, which replaces round 1 (claims of round 1 you leave out are lost).",
        "第 2 轮（`round` 为 2 且给出了 `retry_context`）的约束为 {constraints}：重试最多一次；"
        "不要重复 `completed_query_refs` 中已成功的查询；只查询 `gaps` 所需的内容；保留 "
        "`prior_verified_executor_output` 中的 claim；并返回完整的 {schema_version} 快照，它会替"
        "换第 1 轮"
        "（未写入的第 1 轮 claim 将丢失）。",
    ),
    # --- chat verifier (spec §5.3, §6.3, §6.4) ----------------------------------------
    _rule(
        "verifier_verdict_vocabulary", _VERIFIER, ("enum:Verdict",),
        "`verdict` is one of {verdicts} (exact case).",
        "`verdict` 只能是 {verdicts} 之一（大小写一致）。",
    ),
    _rule(
        "verifier_verification_vocabulary", _VERIFIER, ("enum:Verification",),
        "Each `facts_checked` item has `claim_id`, `fact`, `is_critical` and `verification`, "
        "one of {verifications}.",
        "`facts_checked` 的每一项都包含 `claim_id`、`fact`、`is_critical` 和 `verification`，"
        "`verification` 只能是 {verifications} 之一。",
    ),
    _rule(
        "verifier_score_range", _VERIFIER, ("parse:groundedness_score: {} is outside [0, 1]",),
        "`groundedness_score` is a number from 0 to 1 inclusive.",
        "`groundedness_score` 是 0 到 1 之间（含两端）的数字。",
    ),
    _rule(
        "verifier_claim_ids", _VERIFIER,
        (
            "parse:facts_checked[{}].claim_id: must not be empty",
            "parse:allowed_claim_ids[{}]: must not be empty",
        ),
        "Every `facts_checked[].claim_id` and every `allowed_claim_ids` item is the "
        "non-empty `claim_id` of a claim in `verified_executor_output`; any other id is "
        "dropped and recorded in the trace as unknown.",
        "每个 `facts_checked[].claim_id` 和 `allowed_claim_ids` 中的每一项，都必须是 "
        "`verified_executor_output` 中某条 claim 的非空 `claim_id`；其他 id 会被丢弃，并在 trace "
        "中记为未知。",
    ),
    _rule(
        "verifier_critical_count", _VERIFIER, ("parse:critical_fact_count: {} is negative",),
        "`critical_fact_count`, if given, is an integer of at least 0; `missing_info` and "
        "`recommended_actions` are arrays of strings and `rationale` a string (all optional).",
        "`critical_fact_count` 如果给出，必须是不小于 0 的整数；`missing_info` 和 `recommended_ac"
        "tions` "
        "是字符串数组，`rationale` 是字符串（均可选）。",
    ),
    _rule(
        "verifier_ceiling", _VERIFIER, (),
        "Judge only the verified material you are given. Your verdict is capped by "
        "`gatekeeper.ceiling` in the order {verdict_order}: a higher verdict is lowered to it.",
        "只根据提供给你的已验证材料作判断。你的 verdict 会被 `gatekeeper.ceiling` 封顶，顺序为 "
        "{verdict_order}：高于上限的 verdict 会被降到上限。",
    ),
    _rule(
        "verifier_gaps", _VERIFIER, (),
        "A fact with `is_critical` `true` whose `verification` is one of {gap_verifications} is an "
        "evidence gap: in round 1 it sends the run back to the executor once.",
        "`is_critical` 为 `true` 且 `verification` 为 {gap_verifications} 之一的事实是证据缺口："
        "在第 1 轮它会让运行回到 executor 再执行一次。",
    ),
    _rule(
        "verifier_allowed_claims", _VERIFIER, (),
        "`allowed_claim_ids` lists the claims the final answer may use; only their "
        "verified text, `missing_info` and `recommended_actions` reach the composer.",
        "`allowed_claim_ids` 列出最终答案可以使用的 claim；只有这些 claim 的已验证文本、`missing_"
        "info` "
        "和 `recommended_actions` 会传给 composer。",
    ),
    # --- chat composer (spec §5.4) ----------------------------------------------------
    _rule(
        "composer_answer", _COMPOSER, ("parse:answer: must not be blank",),
        "`answer` is the answer to `query` in Markdown, with at least one character that "
        "is not whitespace.",
        "`answer` 是对 `query` 的 Markdown 格式回答，至少包含一个非空白字符。",
    ),
    _rule(
        "composer_cite_allowed", _COMPOSER,
        (
            "parse:cited_claim_ids[{}]: must not be empty",
            "parse:cited_claim_ids[{}]: {} is not an allowed claim",
        ),
        "`cited_claim_ids` (optional) lists only `claim_id` values of the input's "
        "`allowed_claims`; citing any other id makes the reply invalid.",
        "`cited_claim_ids`（可选）只能列出输入 `allowed_claims` 中的 `claim_id`；引用其他 id 会使"
        "回复无效。",
    ),
    _rule(
        "composer_only_allowed_material", _COMPOSER, (),
        "Use only `allowed_claims`, `missing_info` and `recommended_actions`; add no fact "
        "of your own. `answer_mode` is one of {answer_modes}: {normal} states the findings, "
        "{low_confidence} says that they are only partly supported, {degraded} says that "
        "the evidence did not support a conclusion.",
        "只使用 `allowed_claims`、`missing_info` 和 `recommended_actions`，不要添加你自己的事实。"
        "`answer_mode` 为 {answer_modes} 之一：{normal} 直接陈述结论，{low_confidence} 说明结论只"
        "有部分证据支持，"
        "{degraded} 说明现有证据不足以得出结论。",
    ),
    # --- AIOps supervisor (spec §11) --------------------------------------------------
    _rule(
        "supervisor_choice", _SUPERVISOR, ("enum:SupervisorChoice",),
        "`next` is one of {choices} (exact case); `reason` is a string that says why (it "
        "may be empty and is kept for the trace only).",
        "`next` 只能是 {choices} 之一（大小写一致）；`reason` 是说明原因的字符串（可以为空，只保"
        "留在 trace 中）。",
    ),
    _rule(
        "supervisor_budget", _SUPERVISOR, (),
        "You decide once per step, up to `max_steps`; at the budget the run ends with the "
        "fallback report ({step_budget}). The same agent {no_progress_repeats} times in a "
        "row without new tool invocations also ends it ({no_progress}). Say {finish} once "
        "the findings cover the task.",
        "你每一步做一次决定，最多 `max_steps` 步；用完预算后运行以兜底报告结束（{step_budget}）。"
        "连续 {no_progress_repeats} 次选择同一个 agent 且没有新的工具调用，运行也会结束（{no_prog"
        "ress}）。"
        "当 findings 已覆盖任务时，回复 {finish}。",
    ),
    # --- AIOps executor ---------------------------------------------------------------
    _rule(
        "aiops_executor_invocation_ids", _AIOPS_EXECUTOR,
        ("parse:{}: must not be empty", "parse:{}: duplicate {}"),
        "`tool_invocation_ids` is required: the `invocation_id` of every tool call you made "
        "in this step (an array, empty if you made none), each non-empty and listed once. "
        "New ids are what counts as progress.",
        "`tool_invocation_ids` 必填：列出你在本步骤中发起的每个工具调用的 `invocation_id`"
        "（数组；没有调用时为空），每个都非空且只列一次。新的 id 才算作进展。",
    ),
    _rule(
        "aiops_finding_text", _AIOPS_EXECUTOR, ("parse:{}.text: must not be blank",),
        "Every finding has a `text` with at least one character that is not whitespace.",
        "每个 finding 的 `text` 都至少包含一个非空白字符。",
    ),
    _rule(
        "aiops_finding_alert", _AIOPS_EXECUTOR, _ALERT_REFERENCE,
        "A finding about one alert gives both `alert_name` and `service`, non-empty and "
        "spelled as in the task's alert (its `name` and `service`); a finding about no "
        "particular alert gives neither.",
        "针对某个告警的 finding 要同时给出非空的 `alert_name` 和 `service`，拼写与任务中该告警的 "
        "`name`、`service` 一致；不针对特定告警的 finding 两者都不给。",
    ),
    _rule(
        "aiops_executor_cite_reported", _AIOPS_EXECUTOR,
        ("parse:{}.cited_invocation_ids[{}]: {} is not a reported tool invocation",),
        "A finding's `cited_invocation_ids` name only ids of this reply's "
        "`tool_invocation_ids` or of the input's `known_invocation_ids`; never invent one.",
        "finding 的 `cited_invocation_ids` 只能引用本回复 `tool_invocation_ids` 或输入 "
        "`known_invocation_ids` 中的 id；不要编造 id。",
    ),
    # --- AIOps reporter ---------------------------------------------------------------
    _rule(
        "report_texts", _REPORTER, ("parse:{}.text: must not be blank",),
        "Every finding, evidence item and recommended action has a `text` with at least one "
        "character that is not whitespace.",
        "每个 finding、evidence 条目和 recommended action 的 `text` 都至少包含一个非空白字符。",
    ),
    _rule(
        "report_action_alert", _REPORTER, _ALERT_REFERENCE,
        "A recommended action aimed at one alert gives both `alert_name` and `service`, "
        "non-empty and spelled as in the task's alert (its `name` and `service`); a general "
        "action gives neither.",
        "针对某个告警的 recommended action 要同时给出非空的 `alert_name` 和 `service`，拼写与任务中"
        "该告警的 `name`、`service` 一致；通用的 action 两者都不给。",
    ),
    _rule(
        "report_finding_subject", _REPORTER,
        ("parse:{}: must not be empty", "parse:{}: duplicate {}"),
        "Every finding names its alert (`alert_name` and `service`, both required and "
        "non-empty) and cites non-empty invocation ids.",
        "每个 finding 都要指明其告警（`alert_name` 和 `service` 均必填且非空），并引用非空的调用 "
        "id。",
    ),
    _rule(
        "report_evidence_cites", _REPORTER, ("parse:{}.cited_invocation_ids: must not be empty",),
        "Every evidence item cites at least one invocation id.",
        "每个 evidence 条目至少引用一个调用 id。",
    ),
    _rule(
        "report_well_formed", _REPORTER, ("aiops_rule:report_well_formed",),
        "`summary`, `findings`, `evidence` and `recommended_actions` are all required "
        "(never `null`).",
        "`summary`、`findings`、`evidence` 和 `recommended_actions` 全部必填（不能为 `null`）。",
    ),
    _rule(
        "report_summary", _REPORTER, ("aiops_rule:summary_present",),
        "`summary` is a non-blank overview of the diagnosis.",
        "`summary` 是对诊断的非空概述。",
    ),
    _rule(
        "report_sections", _REPORTER,
        ("aiops_rule:evidence_present", "aiops_rule:recommended_actions_present"),
        "The report has at least one evidence item and at least one recommended action.",
        "报告至少包含一个 evidence 条目和一个 recommended action。",
    ),
    _rule(
        "report_alerts_addressed", _REPORTER,
        ("aiops_rule:payload_alerts_addressed", "aiops_rule:no_foreign_alert_subject"),
        "In {payload_targeted} mode every alert of `task.alerts` is the subject of at least "
        "one finding, and no finding or action is about an alert outside `task.alerts`.",
        "在 {payload_targeted} 模式下，`task.alerts` 中的每个告警都至少是一个 finding 的主题，"
        "且任何 finding 或 action 都不能针对 `task.alerts` 之外的告警。",
    ),
    _rule(
        "report_cite_recorded", _REPORTER,
        ("aiops_rule:cited_invocations_succeeded", "aiops_rule:findings_cite_invocations"),
        "Every finding cites at least one invocation, and every cited id is one of the "
        "input's `tool_invocation_ids` whose tool call succeeded; never invent an id.",
        "每个 finding 至少引用一个调用；每个被引用的 id 都必须是输入 `tool_invocation_ids` 中"
        "工具调用成功的 id；不要编造 id。",
    ),
    _rule(
        "report_critical_actions", _REPORTER, ("aiops_rule:critical_alerts_have_actions",),
        "In {payload_targeted} mode every alert of `task.alerts` whose `severity` is "
        "`critical` has a recommended action aimed at it (its `alert_name` and `service`).",
        "在 {payload_targeted} 模式下，`task.alerts` 中 `severity` 为 `critical` 的每个告警，"
        "都要有一个针对它的 recommended action（写明其 `alert_name` 和 `service`）。",
    ),
)
"""Every rule a prompt states, in the order prompts list them."""
