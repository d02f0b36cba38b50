"""A prompt put together: role, input, tool results, reply schema and example, rules (spec §17).

The text is a pure function of the contract: the input keys come from the
input classes, their types from :mod:`.notation`, the schema from the same
generator as ``diagnosis-core schema``, the example from :mod:`.examples`,
the rules from :mod:`.rules`. Nothing depends on the clock, the host or a
dictionary's iteration order, so the golden files under
``tests/fixtures/prompts`` change only when the contract does.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import attrs

from .._kernel.wire.json import JsonValue
from .agents import PROMPT_AGENTS, AgentSpec, agent_spec, describe
from .examples import example
from .notation import field_types, type_notation
from .rules import PROMPT_RULES, PromptRule, vocabulary

__all__ = ["PROMPT_LOCALES", "Prompt", "prompt_rules", "system_prompt"]

PROMPT_LOCALES: tuple[str, ...] = ("en", "zh-CN")
"""The locales every prompt is written in."""

_WORDS: Mapping[str, Mapping[str, str]] = {
    "en": {
        "generated": "This prompt is generated from the diagnosis_core protocol {version} "
        "({workflow} workflow, agent `{agent}`). The rules below are checked by code: a reply "
        "that breaks one is refused, or loses the part that broke it.",
        "input": "## Input",
        "input_intro": "You receive one JSON object (keys sorted, no spaces) with exactly these "
        "keys and nothing else:",
        "round_2": "Round 2 only:",
        "example_input": "Example input:",
        "tools": "## Tool results",
        "tools_intro": "Each tool you call returns one JSON object with exactly the keys {keys}.",
        "tools_chat": "Cite a tool result by its `invocation_id`; a `raw_path` points inside "
        "its `output`.",
        "tools_aiops": "Report its `invocation_id` in `tool_invocation_ids`, and cite it in the "
        "findings it supports.",
        "example_tool": "Example tool result:",
        "reply": "## Reply",
        "reply_intro": "Return one JSON object `{payload}` that this JSON Schema accepts:",
        "example_reply": "Example of a valid reply:",
        "rules": "## Rules",
    },
    "zh-CN": {
        "generated": "本提示词由 diagnosis_core 协议 {version} 生成（{workflow} 工作流，agent `{a"
        "gent}`）。"
        "下列规则由代码检查：违反任何一条的回复会被拒绝，或失去违反规则的部分。",
        "input": "## 输入",
        "input_intro": "你会收到一个 JSON 对象（键已排序，无空格），恰好包含以下键，没有其他内容：",
        "round_2": "仅第 2 轮：",
        "example_input": "输入示例：",
        "tools": "## 工具结果",
        "tools_intro": "你调用的每个工具都返回一个 JSON 对象，恰好包含键 {keys}。",
        "tools_chat": "用 `invocation_id` 引用工具结果；`raw_path` 指向其 `output` 内部。",
        "tools_aiops": "把它的 `invocation_id` 写进 `tool_invocation_ids`，并在它所支持的 finding"
        " 中引用它。",
        "example_tool": "工具结果示例：",
        "reply": "## 回复",
        "reply_intro": "返回一个符合以下 JSON Schema 的 JSON 对象 `{payload}`：",
        "example_reply": "有效回复示例：",
        "rules": "## 规则",
    },
}


@attrs.frozen
class Prompt:
    """One agent's system prompt in one locale (spec §17).

    Attributes:
        workflow: ``chat`` or ``aiops``.
        agent: the agent's name in that workflow.
        locale: ``en`` or ``zh-CN``.
        protocol_version: the protocol the prompt is generated from
            (:data:`diagnosis_core.conformance.PROTOCOL_VERSION`).
        payload: the name of the payload the agent returns (``executor_evidence_v2``),
            as :func:`diagnosis_core.protocol.json_schema` or
            :func:`diagnosis_core.protocol.aiops_json_schema` takes it.
        text: the system prompt.
        example_input: the example's input, exactly as the workflow sends it.
        example_reply: the example's reply, one the payload's parser accepts.
    """

    workflow: str
    agent: str
    locale: str
    protocol_version: str
    payload: str
    text: str
    example_input: str
    example_reply: str

    @property
    def schema(self) -> dict[str, JsonValue]:
        """The reply's JSON Schema (validation profile, spec §5.5), a fresh dict per call."""
        return _schema(self.workflow, self.payload)


def _schema(workflow: str, payload: str, profile: str = "validation") -> dict[str, JsonValue]:
    if workflow == "chat":
        from .._chat.schema import json_schema

        return json_schema(payload, profile)
    from .._aiops.schema import aiops_json_schema

    return aiops_json_schema(payload, profile)


def prompt_rules(workflow: str, agent: str) -> tuple[PromptRule, ...]:
    """The rules the prompt of one agent states, in table order."""
    return tuple(rule for rule in PROMPT_RULES if (workflow, agent) in rule.scope)


def _input_lines(spec: AgentSpec, locale: str, fill: Any) -> list[str]:
    def described(fields: Mapping[str, object]) -> list[str]:
        return [
            f"- `{name}`: {type_notation(tp)} — {describe(spec.workflow, name, locale, fill)}"
            for name, tp in fields.items()
        ]

    first = field_types(spec.inputs[0])
    lines = described(first)
    for later in spec.inputs[1:]:
        extra = {k: v for k, v in field_types(later).items() if k not in first}
        if extra:
            lines += [_WORDS[locale]["round_2"], *described(extra)]
    return lines


def _fenced(text: str) -> str:
    return f"```json\n{text}\n```"


def _render(spec: AgentSpec, locale: str, version: str) -> tuple[str, str, str]:
    """The prompt as paragraphs (a key list or a fenced block is one) joined by one blank line."""
    words = _WORDS[locale]
    values = vocabulary(locale)

    def fill(template: str) -> str:
        return template.format_map(values)

    sample = example(spec.workflow, spec.agent, locale)
    paragraphs = [
        spec.role[locale],
        words["generated"].format(version=version, workflow=spec.workflow, agent=spec.agent),
        words["input"],
        words["input_intro"],
        "\n".join(_input_lines(spec, locale, fill)),
        words["example_input"],
        _fenced(sample.input),
    ]
    if spec.calls_tools:
        from .._kernel.tools.recorder import ToolEnvelope

        keys = ", ".join(f"`{key}`" for key in ToolEnvelope.__annotations__)
        space = " " if locale == "en" else ""
        intro = words["tools_intro"].format(keys=keys) + space + words[f"tools_{spec.workflow}"]
        paragraphs += [words["tools"], intro]
        for result in sample.tool_results:
            paragraphs += [words["example_tool"], _fenced(result)]
    schema = json.dumps(_schema(spec.workflow, spec.payload), ensure_ascii=False)
    rules = prompt_rules(spec.workflow, spec.agent)
    paragraphs += [
        words["reply"],
        words["reply_intro"].format(payload=spec.payload),
        _fenced(schema),
        words["example_reply"],
        _fenced(sample.reply),
        words["rules"],
        "\n".join(f"{number}. {rule.sentence(locale)}" for number, rule in enumerate(rules, 1)),
    ]
    return "\n\n".join(paragraphs) + "\n", sample.input, sample.reply


def _protocol_version() -> str:
    from ..conformance._corpus import PROTOCOL_VERSION

    return PROTOCOL_VERSION


def _choice(kind: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        shown = ", ".join(repr(choice) for choice in choices)
        raise ValueError(f"unknown {kind} {value!r}; expected one of {shown}")


@functools.cache
def _prompt(agent: str, workflow: str, locale: str) -> Prompt:
    spec = agent_spec(workflow, agent)
    version = _protocol_version()
    text, example_input, example_reply = _render(spec, locale, version)
    return Prompt(
        workflow, agent, locale, version, spec.payload, text, example_input, example_reply
    )


def system_prompt(agent: str, *, workflow: str = "chat", locale: str = "en") -> Prompt:
    """The system prompt of ``agent`` of ``workflow`` in ``locale`` (spec §17).

    ``workflow`` is ``chat`` (agents ``planner``, ``executor``, ``verifier``,
    ``composer``) or ``aiops`` (``supervisor``, ``planner``, ``executor``,
    ``reporter``); ``locale`` is ``en`` or ``zh-CN`` (a :class:`Locale` works
    too). The prompt states the agent's exact input, its reply's schema with
    a valid example, and every rule the parsers and gatekeeper enforce; the
    same arguments always give the same text.

    Raises:
        ValueError: for an unknown workflow, agent or locale; the message
            lists the valid ones.
    """
    _choice("workflow", workflow, tuple(PROMPT_AGENTS))
    _choice(f"{workflow} agent", agent, PROMPT_AGENTS[workflow])
    locale = str(getattr(locale, "value", locale))
    _choice("locale", locale, PROMPT_LOCALES)
    return _prompt(agent, workflow, locale)
