"""What each agent is, receives and returns: the part of a prompt that is not a rule.

An :class:`AgentSpec` ties an agent to its input classes (the whitelists of
spec §6.6 and of :mod:`diagnosis_core._aiops.inputs`: the classes *are* the
whitelists, so the key list a prompt shows is read from them), its payload
(the name the JSON Schema generators take) and its parser. What is written
here is what the code cannot say: the agent's task and what each input key
means, per locale. ``tests/test_prompts.py`` checks that every key of every
input class has a description, so a key added to a whitelist cannot reach a
prompt unexplained.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["FIELD_DESCRIPTIONS", "PROMPT_AGENTS", "AgentSpec", "agent_spec"]


@attrs.frozen
class AgentSpec:
    """One agent of one workflow.

    Attributes:
        workflow: ``chat`` or ``aiops``.
        agent: the agent's wire name.
        payload: the payload it returns (a name of the schema generator).
        inputs: its input classes; for the chat executor, round 1's and round 2's.
        role: ``{locale: paragraph}``, the agent's task.
        calls_tools: whether it calls tools (its prompt explains the tool results).
    """

    workflow: str
    agent: str
    payload: str
    inputs: tuple[type[Any], ...]
    role: Mapping[str, str]
    calls_tools: bool = False


def _chat_specs() -> tuple[AgentSpec, ...]:
    from .._chat.inputs import (
        ComposerInput,
        ExecutorInput,
        ExecutorRetryInput,
        PlannerInput,
        VerifierInput,
    )

    return (
        AgentSpec(
            "chat", "planner", "planner_plan", (PlannerInput,),
            {
                "en": "You are the planner of a diagnosis: read the user's question and plan "
                "the investigation as a few short steps, each with a goal an executor can "
                "check with tools, and pick the skill of the catalog that fits, if one does.",
                "zh-CN": "你是诊断流程中的 planner：阅读用户的问题，把排查规划为几个简短的步骤，"
                "每个步骤都有一个 executor 可以用工具核实的目标；如果技能目录中有合适的技能，就选"
                "择它。",
            },
        ),
        AgentSpec(
            "chat", "executor", "executor_evidence_v2", (ExecutorInput, ExecutorRetryInput),
            {
                "en": "You are the executor of a diagnosis: carry out the plan with the tools "
                "you are given, then report what the tool results show as claims, each bound "
                "to the exact place in a tool result that supports it.",
                "zh-CN": "你是诊断流程中的 executor：使用提供给你的工具执行计划，然后把工具结果显"
                "示的内容写成 "
                "claim，每条 claim 都绑定到工具结果中支持它的确切位置。",
            },
            calls_tools=True,
        ),
        AgentSpec(
            "chat", "verifier", "verifier_output", (VerifierInput,),
            {
                "en": "You are the verifier of a diagnosis: judge how well the verified claims "
                "and their evidence answer the question, fact by fact, decide which claims the "
                "answer may use, and say what is still missing.",
                "zh-CN": "你是诊断流程中的 verifier：逐个事实判断已验证的 claim 及其证据能在多大"
                "程度上回答问题，"
                "决定答案可以使用哪些 claim，并指出仍然缺少的信息。",
            },
        ),
        AgentSpec(
            "chat", "composer", "composer_output", (ComposerInput,),
            {
                "en": "You are the composer of a diagnosis: write the answer to the user's "
                "question from the allowed claims and the verifier's advice only.",
                "zh-CN": "你是诊断流程中的 composer：只根据允许使用的 claim 和 verifier 的建议，"
                "撰写对用户问题的回答。",
            },
        ),
    )


def _aiops_specs() -> tuple[AgentSpec, ...]:
    from .._aiops.inputs import (
        AiOpsExecutorInput,
        AiOpsPlannerInput,
        ReporterInput,
        SupervisorInput,
    )

    return (
        AgentSpec(
            "aiops", "supervisor", "supervisor_decision", (SupervisorInput,),
            {
                "en": "You are the supervisor of an alert diagnosis: at each step decide who "
                "works next, the planner (to plan or re-plan) or the executor (to run the "
                "next tool calls), or finish when the findings cover the task.",
                "zh-CN": "你是告警诊断流程中的 supervisor：每一步决定下一个工作者——planner（制定"
                "或调整计划）"
                "或 executor（执行下一批工具调用），或者在 findings 已覆盖任务时结束。",
            },
        ),
        AgentSpec(
            "aiops", "planner", "aiops_plan", (AiOpsPlannerInput,),
            {
                "en": "You are the planner of an alert diagnosis: plan the investigation of "
                "the task's alerts as a few short steps, each with a goal the executor can "
                "check with tools, taking the findings so far into account.",
                "zh-CN": "你是告警诊断流程中的 planner：结合已有的 findings，把对任务中告警的排查"
                "规划为几个简短步骤，"
                "每个步骤都有一个 executor 可以用工具核实的目标。",
            },
        ),
        AgentSpec(
            "aiops", "executor", "aiops_executor_output", (AiOpsExecutorInput,),
            {
                "en": "You are the executor of an alert diagnosis: run the tool calls the plan "
                "needs (in discovery mode, first find the active alerts), then report the "
                "ids of the calls you made and what they show as findings.",
                "zh-CN": "你是告警诊断流程中的 executor：执行计划所需的工具调用（在自动发现模式下"
                "先找出当前的告警），"
                "然后报告你发起的调用的 id，以及调用结果显示的 findings。",
            },
            calls_tools=True,
        ),
        AgentSpec(
            "aiops", "reporter", "aiops_report", (ReporterInput,),
            {
                "en": "You are the reporter of an alert diagnosis: write the final alert "
                "report from the findings, with a summary, a finding per alert, the evidence "
                "and the recommended actions, citing the tool invocations.",
                "zh-CN": "你是告警诊断流程中的 reporter：根据 findings 撰写最终的告警报告，包括摘"
                "要、每个告警的 "
                "finding、证据和建议操作，并引用工具调用。",
            },
        ),
    )


_SPECS: dict[tuple[str, str], AgentSpec] = {}


def agent_spec(workflow: str, agent: str) -> AgentSpec:
    """The spec of one agent (the AIOps package is imported for an AIOps agent only)."""
    key = (workflow, agent)
    if key not in _SPECS:
        specs = _chat_specs() if workflow == "chat" else _aiops_specs()
        _SPECS.update({(spec.workflow, spec.agent): spec for spec in specs})
    return _SPECS[key]


PROMPT_AGENTS: Mapping[str, tuple[str, ...]] = {
    "chat": ("planner", "executor", "verifier", "composer"),
    "aiops": ("supervisor", "planner", "executor", "reporter"),
}
"""The agents of each workflow, in workflow order."""


def _d(en: str, zh: str) -> Mapping[str, str]:
    return {"en": en, "zh-CN": zh}


FIELD_DESCRIPTIONS: Mapping[tuple[str, str], Mapping[str, str]] = {
    # chat (spec §6.6)
    ("chat", "query"): _d("the user's question.", "用户的问题。"),
    ("chat", "history"): _d(
        "the last messages of the conversation, oldest first, each only `role` and `content`.",
        "对话中最近的消息（从旧到新），每条只有 `role` 和 `content`。",
    ),
    ("chat", "skills"): _d(
        "the skill catalog: each skill's `name` and `description` only.",
        "技能目录：每个技能只有 `name` 和 `description`。",
    ),
    ("chat", "round"): _d(
        "1, or 2 when the verifier found evidence gaps and asked for one more round.",
        "1；当 verifier 发现证据缺口并要求再执行一轮时为 2。",
    ),
    ("chat", "planner_plan"): _d(
        "the planner's plan, with defaults filled in.",
        "planner 的计划（默认值已补全）。",
    ),
    ("chat", "selected_skill"): _d(
        "the skill the planner chose, or `null`.",
        "planner 选择的技能，或 `null`。",
    ),
    ("chat", "retry_context"): _d(
        "round 2 only (absent or `null` in round 1): what round 1 verified, the evidence "
        "`gaps` to close, the queries already done (`completed_query_refs`) and the "
        "`constraints` of the retry.",
        "仅第 2 轮提供（第 1 轮缺省或为 `null`）：第 1 轮已验证的内容、需要补齐的证据缺口 `gaps`、"
        "已完成的查询 `completed_query_refs`，以及重试的约束 `constraints`。",
    ),
    ("chat", "verified_executor_output"): _d(
        "the executor's claims that passed the gatekeeper, each with only its passing bindings.",
        "通过 gatekeeper 核对的 executor claim，每条只保留通过核对的 binding。",
    ),
    ("chat", "verified_evidence"): _d(
        "one item per passing binding, with `matched_text`: the text found in the recorded "
        "tool output.",
        "每个通过核对的 binding 一项，`matched_text` 是在已记录的工具输出中找到的文本。",
    ),
    ("chat", "gatekeeper"): _d(
        "the gatekeeper's normalized `status`, the verdict `ceiling` it allows, and how many "
        "bindings it `checked`, `passed` and `failed`.",
        "gatekeeper 归一化后的 `status`、它允许的 verdict 上限 `ceiling`，以及核对（`checked`）、"
        "通过（`passed`）和未通过（`failed`）的 binding 数量。",
    ),
    ("chat", "answer_mode"): _d(
        "how to present the answer, from the effective verdict.",
        "根据最终 verdict 确定的回答方式。",
    ),
    ("chat", "effective_verdict"): _d(
        "the verifier's verdict after the gatekeeper's ceiling.",
        "经 gatekeeper 上限约束后的 verifier verdict。",
    ),
    ("chat", "allowed_claims"): _d(
        "the claims the answer may use: `claim_id` and the verified `text`.",
        "答案可以使用的 claim：`claim_id` 和已验证的 `text`。",
    ),
    ("chat", "missing_info"): _d(
        "what the verifier found missing.", "verifier 认为仍缺少的信息。"
    ),
    ("chat", "recommended_actions"): _d(
        "the actions the verifier recommends.", "verifier 建议的操作。"
    ),
    # aiops (diagnosis_core._aiops.inputs)
    ("aiops", "mode"): _d(
        "{payload_targeted} when alerts were given (focus on exactly those), "
        "{auto_discovery} when the active alerts must be discovered first.",
        "给出了告警时为 {payload_targeted}（只关注这些告警）；需要先发现当前告警时为 {auto_discov"
        "ery}。",
    ),
    ("aiops", "task"): _d(
        "the alerts to diagnose (`alerts`), or the discovery `instruction`.",
        "需要诊断的告警（`alerts`），或自动发现的说明 `instruction`。",
    ),
    ("aiops", "step"): _d(
        "the number of this decision, from 1.", "本次决定的序号，从 1 开始。"
    ),
    ("aiops", "max_steps"): _d("the decision budget.", "决定次数的上限。"),
    ("aiops", "decisions"): _d(
        "the earlier decisions, in order.", "之前的决定，按顺序排列。"
    ),
    ("aiops", "plan"): _d(
        "the latest plan, or `null` when there is none yet.", "最新的计划；尚无计划时为 `null`。"
    ),
    ("aiops", "findings"): _d(
        "every finding the executor reported so far.", "executor 至今报告的所有 finding。"
    ),
    ("aiops", "tool_invocation_count"): _d(
        "how many tool invocations were reported so far.", "至今已报告的工具调用数量。"
    ),
    ("aiops", "known_invocation_ids"): _d(
        "the invocation ids reported by earlier executor steps.",
        "之前的 executor 步骤已报告的调用 id。",
    ),
    ("aiops", "tool_invocation_ids"): _d(
        "every invocation id reported in the run: the only ids a report may cite.",
        "本次运行中报告的所有调用 id：报告只能引用这些 id。",
    ),
}
"""What each input key means, per ``(workflow, key)`` and locale (templates over the vocabulary)."""


def describe(workflow: str, key: str, locale: str, fill: Callable[[str], str]) -> str:
    """The description of input ``key``, filled with ``fill``."""
    return fill(FIELD_DESCRIPTIONS[(workflow, key)][locale])
