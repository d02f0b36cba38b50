r"""LangChain adapter: any ``BaseChatModel`` as an agent effect (extra ``langchain``).

:class:`ChatModelInvoker` is an :class:`AgentInvoker` and
:class:`AsyncChatModelInvoker` an :class:`AsyncAgentInvoker`. The core's
input string — the exact serialized whitelist — is sent as the only human
message, after an optional system prompt fixed at construction; nothing else
of the run reaches the model. The :class:`RunConfig` becomes the LangChain run
config, so callbacks and tracers see the run: ``metadata`` is the run's
metadata plus ``run_id`` and ``session_id`` (LangSmith groups a chat's traces
by ``session_id``), ``tags`` are ``["diagnosis_core", <agent>]``.

The reply is the message text. A reply without text — empty, whitespace
only, or only tool calls (``AIMessage(content="", tool_calls=[…])``, or list
content with tool-use blocks only) — and content that is not text (an image,
an unknown shape) raise :class:`ChatModelOutputError`, so the run records a
failure instead of parsing something the model did not write as its answer.

Tools (spec §13): :func:`recorded_tools` wraps LangChain ``BaseTool`` objects so
that a LangChain tool-calling executor records every call through the run's
:class:`~diagnosis_core.tools.ToolRecorder`: each wrapped tool keeps its
name, description and argument schema (what the model is bound to), calls
the original tool through ``recorder.wrap`` / ``recorder.wrap_async``, and
returns the envelope ``{"invocation_id", "tool_name", "output"}`` as the
tool message content (canonical JSON), so the model can cite
``source_invocation_id`` and write ``raw_path`` relative to ``output``.

The executor's tool loop (``diagnosis_core.tools.executor_agent``, spec §13,
§18) runs any :class:`~diagnosis_core.tools.ToolCallingModel`;
:func:`tool_calling_model` makes one of any LangChain chat model that
implements ``bind_tools`` (:class:`LangChainToolModel`, and
:class:`AsyncLangChainToolModel` over ``ainvoke``), and :func:`loop_tools`
turns LangChain tools into the loop's :class:`~diagnosis_core.tools.Tool`\\ s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages import ToolMessage as LangChainToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic_core import to_jsonable_python

from .. import (
    AsyncEffects,
    AsyncGatekeeper,
    Effects,
    FailureClassifier,
    Gatekeeper,
    JsonValue,
    NonRetryableError,
    RunConfig,
    default_failure_classifier,
)
from ..machine import AgentName
from ..protocol import canonical_json
from ..tools import (
    AssistantMessage,
    ChatMessage,
    ModelTurn,
    Tool,
    ToolCall,
    ToolMessage,
    ToolRecorder,
    ToolSpec,
    TurnRequest,
    UserMessage,
)
from ..tools import SystemMessage as ChatSystemMessage

__all__ = [
    "AsyncChatModelInvoker",
    "AsyncLangChainToolModel",
    "ChatModelInvoker",
    "ChatModelOutputError",
    "LangChainToolModel",
    "ResponseFormat",
    "async_chat_model_effects",
    "chat_model_effects",
    "loop_tools",
    "recorded_tools",
    "tool_calling_model",
]

TAG = "diagnosis_core"

_T = TypeVar("_T")


class ChatModelOutputError(NonRetryableError, TypeError):
    """The chat model's reply carries no usable text; the agent invocation fails.

    A :class:`NonRetryableError`: the same input to the same model setup (for
    example one with tools bound) would answer the same way.
    """


def message_text(message: object) -> str:
    """The text of a chat model reply: ``str`` content, or its text parts joined.

    Parts of a list content that are strings or ``{"type": "text", "text": str}``
    are joined without separator (as LangChain's ``.text`` does); other typed
    blocks (reasoning, tool calls, images) are skipped. A reply whose text is
    empty or whitespace only (a tool-call-only reply included) and anything
    else raise :class:`ChatModelOutputError`.
    """
    text = _joined_text(message)
    if not text.strip():
        tool_calls = getattr(message, "tool_calls", None)
        if isinstance(tool_calls, list) and tool_calls:
            names = ", ".join(
                repr(call.get("name")) if isinstance(call, dict) else "?" for call in tool_calls
            )
            raise ChatModelOutputError(f"the reply has no text, only tool calls: {names}")
        raise ChatModelOutputError("the reply has no text")
    return text


def _joined_text(message: object) -> str:
    if not isinstance(message, BaseMessage):
        raise ChatModelOutputError(f"expected a chat message, got {type(message).__name__}")
    content: object = message.content
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ChatModelOutputError(f"unsupported message content: {type(content).__name__}")
    parts: list[str] = []
    for index, block in enumerate(content):
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("type"), str):
            if block["type"] != "text":
                continue
            text = block.get("text")
            if not isinstance(text, str):
                raise ChatModelOutputError(f"content[{index}].text: expected a string")
            parts.append(text)
        else:
            raise ChatModelOutputError(
                f"content[{index}]: unsupported content block {type(block).__name__}"
            )
    return "".join(parts)


class _ChatModelAgent:
    """What both invokers share: the messages and the run config they send."""

    def __init__(
        self,
        model: BaseChatModel,
        *,
        agent: AgentName | str | None = None,
        system_prompt: str | None = None,
        config: RunnableConfig | None = None,
    ) -> None:
        self.model = model
        self.agent = None if agent is None else str(agent)
        self.system_prompt = system_prompt
        self.config = config

    @property
    def provider_name(self) -> str | None:
        """The model's provider as LangChain names it (``openai``, ``anthropic`` …), or None.

        LangChain's tracing parameter ``ls_provider``; the OpenTelemetry
        observer takes it as ``gen_ai.provider.name`` of this agent's spans
        (``provider_names(effects)`` in :mod:`diagnosis_core.adapters.otel`).
        """
        try:
            params = self.model._get_ls_params()
        except Exception:  # a model that cannot say: the observer's default applies
            return None
        provider = params.get("ls_provider") if isinstance(params, Mapping) else None
        return provider if isinstance(provider, str) and provider else None

    def messages(self, input: str) -> list[BaseMessage]:
        """The system prompt (if any), then the input string as the human message."""
        human = HumanMessage(content=input)
        if self.system_prompt is None:
            return [human]
        return [SystemMessage(content=self.system_prompt), human]

    def run_config(self, config: RunConfig) -> RunnableConfig:
        """The LangChain run config for ``config``, merged over the one given at construction."""
        metadata: dict[str, Any] = {
            **config.metadata,
            "run_id": config.run_id,
            "session_id": config.session_id,
        }
        tags = [TAG] if self.agent is None else [TAG, self.agent]
        ours: RunnableConfig = {"metadata": metadata, "tags": tags}
        if self.agent is not None:
            ours["run_name"] = f"{TAG}.{self.agent}"
        return merge_configs(self.config, ours)


class ChatModelInvoker(_ChatModelAgent):
    """An :class:`AgentInvoker` backed by ``model.invoke``."""

    def __call__(self, input: str, config: RunConfig, /) -> str:
        return message_text(self.model.invoke(self.messages(input), self.run_config(config)))


class AsyncChatModelInvoker(_ChatModelAgent):
    """An :class:`AsyncAgentInvoker` backed by ``model.ainvoke``."""

    async def __call__(self, input: str, config: RunConfig, /) -> str:
        reply = await self.model.ainvoke(self.messages(input), self.run_config(config))
        return message_text(reply)


def _per_agent(value: _T | Mapping[AgentName, _T], agent: AgentName) -> _T:
    if isinstance(value, Mapping):
        chosen: _T = value[agent]
        return chosen
    return value


_A = TypeVar("_A", ChatModelInvoker, AsyncChatModelInvoker)


def _agents(
    kind: type[_A],
    models: BaseChatModel | Mapping[AgentName, BaseChatModel],
    system_prompts: Mapping[AgentName, str] | None,
    config: RunnableConfig | None,
) -> dict[AgentName, _A]:
    """One invoker of ``kind`` per agent: its model, its system prompt, the shared config."""
    prompts = system_prompts or {}
    return {
        agent: kind(
            _per_agent(models, agent),
            agent=agent,
            system_prompt=prompts.get(agent),
            config=config,
        )
        for agent in AgentName
    }


def _roles(agents: Mapping[AgentName, Any]) -> dict[str, Any]:
    """The ``Effects`` keyword arguments of the four agents: ``planner=…, executor=…``."""
    return {agent.value: agents[agent] for agent in AgentName}


def chat_model_effects(
    models: BaseChatModel | Mapping[AgentName, BaseChatModel],
    gatekeeper: Gatekeeper,
    *,
    system_prompts: Mapping[AgentName, str] | None = None,
    config: RunnableConfig | None = None,
    classifier: FailureClassifier = default_failure_classifier,
) -> Effects:
    """:class:`Effects` whose four agents are chat models (one for all, or one each)."""
    agents = _agents(ChatModelInvoker, models, system_prompts, config)
    return Effects(**_roles(agents), gatekeeper=gatekeeper, classifier=classifier)


def async_chat_model_effects(
    models: BaseChatModel | Mapping[AgentName, BaseChatModel],
    gatekeeper: AsyncGatekeeper,
    *,
    system_prompts: Mapping[AgentName, str] | None = None,
    config: RunnableConfig | None = None,
    classifier: FailureClassifier = default_failure_classifier,
) -> AsyncEffects:
    """The asyncio variant of :func:`chat_model_effects`."""
    agents = _agents(AsyncChatModelInvoker, models, system_prompts, config)
    return AsyncEffects(**_roles(agents), gatekeeper=gatekeeper, classifier=classifier)


# --- tools (spec §13) ----------------------------------------------------------------------------


def _arguments(kwargs: Mapping[str, object]) -> dict[str, object]:
    """The validated tool arguments as plain JSON (pydantic models become objects).

    The original tool receives exactly this, so what is recorded as
    ``input`` is what the tool was called with.
    """
    return {name: to_jsonable_python(value) for name, value in kwargs.items()}


def recorded_tool(recorder: ToolRecorder, tool: BaseTool) -> BaseTool:
    """``tool`` as a tool whose every call is recorded by ``recorder`` (spec §13).

    The result is a ``StructuredTool`` with the same ``name``, ``description``
    and argument schema (so ``model.bind_tools`` shows the model the same
    tool). Invoking it calls ``tool.invoke`` (``tool.ainvoke`` when awaited)
    with the validated arguments through ``recorder.wrap`` /
    ``recorder.wrap_async`` under ``tool.name``: the call gets the next
    invocation id, the ledger entry holds the arguments as ``input`` and the
    tool's output, and the tool message content is the envelope
    ``{"invocation_id", "tool_name", "output"}`` as canonical JSON. A tool
    that raises is recorded as failed and the exception propagates unchanged
    (``handle_tool_error`` of the original tool still applies inside it; its
    handled text is then the recorded output). An output that is not JSON
    is recorded as failed and raises :class:`LedgerError`.

    Raises:
        TypeError: for something that is not a ``BaseTool``.
    """
    if not isinstance(tool, BaseTool):
        raise TypeError(f"expected a LangChain BaseTool, got {type(tool).__name__}")
    inner = tool

    def call(**kwargs: object) -> object:
        return inner.invoke(kwargs)

    async def acall(**kwargs: object) -> object:
        return await inner.ainvoke(kwargs)

    sync = recorder.wrap(inner.name, call)
    asynchronous = recorder.wrap_async(inner.name, acall)

    def run(**kwargs: object) -> str:
        return canonical_json(sync(**_arguments(kwargs)))

    async def arun(**kwargs: object) -> str:
        return canonical_json(await asynchronous(**_arguments(kwargs)))

    schema = inner.args_schema if inner.args_schema is not None else inner.tool_call_schema
    return StructuredTool(
        name=inner.name,
        description=inner.description,
        args_schema=schema,
        func=run,
        coroutine=arun,
        return_direct=inner.return_direct,
    )


def recorded_tools(recorder: ToolRecorder, tools: Sequence[BaseTool]) -> list[BaseTool]:
    """:func:`recorded_tool` of each tool, in order: bind these to the executor model.

    Raises:
        TypeError: for an item that is not a ``BaseTool``.
        ValueError: for two tools with the same name (a tool call names its
            tool, so the ledger could not tell them apart).
    """
    checked = list(_distinct_tools(tools))
    return [recorded_tool(recorder, tool) for tool in checked]


def _distinct_tools(tools: Sequence[BaseTool]) -> Iterator[BaseTool]:
    """``tools`` one by one, each a ``BaseTool`` with a name of its own (a call names its tool)."""
    names: set[str] = set()
    for position, tool in enumerate(tools):
        if not isinstance(tool, BaseTool):
            raise TypeError(f"tools[{position}]: expected a BaseTool, got {type(tool).__name__}")
        if tool.name in names:
            raise ValueError(f"tools[{position}]: duplicate tool name {tool.name!r}")
        names.add(tool.name)
        yield tool


# --- the executor's tool loop (issue 33, spec §13, §18) ---------------------------------------

ResponseFormat: TypeAlias = (
    Literal["openai"] | Callable[[Mapping[str, JsonValue]], Mapping[str, Any]] | None
)
"""How :class:`LangChainToolModel` gives a turn's response schema to the model.

``None``: not at all (the parser and the gatekeeper still check the reply).
``"openai"``: the OpenAI Structured Outputs parameter, bound next to the tools
(``response_format={"type": "json_schema", "json_schema": {"name":
"final_answer", "schema": …, "strict": true}}``) — ``ChatOpenAI`` and
OpenAI-compatible servers (vLLM, llama.cpp's server) read it; the schema
should be built with ``profile="openai-strict"``. A callable: given the
schema, returns the keyword arguments to bind (any other provider's
parameter).
"""


def _openai_format(schema: Mapping[str, JsonValue]) -> Mapping[str, Any]:
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": dict(schema), "strict": True},
        }
    }


def _langchain_message(message: ChatMessage) -> BaseMessage:
    if isinstance(message, ChatSystemMessage):
        return SystemMessage(content=message.text)
    if isinstance(message, UserMessage):
        return HumanMessage(content=message.text)
    if isinstance(message, AssistantMessage):
        calls = [
            {"id": call.id, "name": call.name, "args": dict(call.arguments), "type": "tool_call"}
            for call in message.tool_calls
        ]
        return AIMessage(content=message.text, tool_calls=calls)
    assert isinstance(message, ToolMessage)
    return LangChainToolMessage(
        content=message.content,
        tool_call_id=message.tool_call_id,
        name=message.name,
        status="error" if message.is_error else "success",
    )


def _openai_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


def model_turn(reply: object, turn: int = 0) -> ModelTurn:
    """A LangChain reply as a :class:`ModelTurn`: its tool calls, or its text.

    A tool call without an id gets ``lc-<turn>-<position>`` (the loop sends
    it back with the answer). A reply with tool calls whose arguments did not
    parse (``invalid_tool_calls``) and a reply with neither tool calls nor
    text raise :class:`ChatModelOutputError`.
    """
    if not isinstance(reply, BaseMessage):
        raise ChatModelOutputError(f"expected a chat message, got {type(reply).__name__}")
    invalid = getattr(reply, "invalid_tool_calls", None)
    if isinstance(invalid, list) and invalid:
        names = ", ".join(repr(call.get("name")) for call in invalid if isinstance(call, dict))
        raise ChatModelOutputError(
            f"the reply has tool calls whose arguments do not parse: {names}"
        )
    raw_calls = getattr(reply, "tool_calls", None)
    if not isinstance(raw_calls, list) or not raw_calls:
        return ModelTurn(text=message_text(reply))
    calls: list[ToolCall] = []
    for position, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            raise ChatModelOutputError(f"tool_calls[{position}]: expected a dict")
        call_id = raw.get("id") or f"lc-{turn}-{position}"
        arguments = raw.get("args")
        name: Any = raw.get("name")
        try:
            calls.append(ToolCall(call_id, name, arguments if arguments else {}))
        except (TypeError, ValueError) as error:
            raise ChatModelOutputError(f"tool_calls[{position}].{error}") from None
    return ModelTurn(text=_joined_text(reply), tool_calls=calls)


class _ToolModel:
    """What both tool models share: the chat model, how it is bound, the run config."""

    def __init__(
        self,
        model: BaseChatModel,
        *,
        response_format: ResponseFormat = None,
        config: RunnableConfig | None = None,
        bind_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise TypeError(f"expected a LangChain BaseChatModel, got {type(model).__name__}")
        if response_format not in (None, "openai") and not callable(response_format):
            raise ValueError(
                f"response_format: expected None, 'openai' or a callable, got {response_format!r}"
            )
        self.model = model
        self.response_format = response_format
        self.config = config
        self.bind_kwargs = dict(bind_kwargs or {})

    def bound(self, request: TurnRequest) -> Any:
        """The model bound to this turn's tools (and response schema, if asked)."""
        extra: dict[str, Any] = dict(self.bind_kwargs)
        if request.response_schema is not None and self.response_format is not None:
            make = _openai_format if self.response_format == "openai" else self.response_format
            assert callable(make)
            extra.update(make(request.response_schema))
        if request.tools:
            return self.model.bind_tools([_openai_tool(spec) for spec in request.tools], **extra)
        return self.model.bind(**extra) if extra else self.model

    def run_config(self, request: TurnRequest) -> RunnableConfig | None:
        if request.config is None:
            return self.config
        ours: RunnableConfig = {
            "metadata": {
                **request.config.metadata,
                "run_id": request.config.run_id,
                "session_id": request.config.session_id,
            },
            "tags": [TAG, "executor"],
        }
        return merge_configs(self.config, ours)

    @staticmethod
    def messages(request: TurnRequest) -> list[BaseMessage]:
        return [_langchain_message(message) for message in request.messages]

    @staticmethod
    def turn_number(request: TurnRequest) -> int:
        return sum(1 for message in request.messages if isinstance(message, AssistantMessage))


class LangChainToolModel(_ToolModel):
    """A :class:`~diagnosis_core.tools.ToolCallingModel` over a LangChain chat model.

    Each turn binds the request's tools (``model.bind_tools``, OpenAI function
    format, which every LangChain provider converts) — or none on the loop's
    last turn — converts the conversation to LangChain messages and calls
    ``invoke``; the reply becomes a :class:`ModelTurn` (:func:`model_turn`).
    The turn's response schema is given as ``response_format`` says.
    """

    def __call__(self, request: TurnRequest, /) -> ModelTurn:
        reply = self.bound(request).invoke(self.messages(request), self.run_config(request))
        return model_turn(reply, self.turn_number(request))


class AsyncLangChainToolModel(_ToolModel):
    """The asyncio variant of :class:`LangChainToolModel` (``ainvoke``)."""

    async def __call__(self, request: TurnRequest, /) -> ModelTurn:
        bound = self.bound(request)
        reply = await bound.ainvoke(self.messages(request), self.run_config(request))
        return model_turn(reply, self.turn_number(request))


def tool_calling_model(
    model: BaseChatModel,
    *,
    response_format: ResponseFormat = None,
    config: RunnableConfig | None = None,
    bind_kwargs: Mapping[str, Any] | None = None,
) -> LangChainToolModel:
    """``model`` (any LangChain chat model with ``bind_tools``) as a ``ToolCallingModel``.

    Give the result to ``diagnosis_core.tools.executor_agent``. ``bind_kwargs``
    are bound on every turn (``tool_choice``, ``strict=True`` for OpenAI
    strict tool arguments …); ``response_format``: :data:`ResponseFormat`.

    Raises:
        TypeError: for something that is not a ``BaseChatModel``.
    """
    return LangChainToolModel(
        model, response_format=response_format, config=config, bind_kwargs=bind_kwargs
    )


def loop_tools(tools: Sequence[BaseTool]) -> list[Tool]:
    """LangChain tools as the executor loop's :class:`~diagnosis_core.tools.Tool`\\ s.

    Each keeps its name, description and argument schema (as LangChain gives
    it to OpenAI); the loop calls ``tool.invoke(arguments)`` through the run's
    recorder, so the call is recorded like any other (spec §13). The tool's
    output must be a JSON value (a non-JSON output is recorded as failed).

    Raises:
        TypeError: for an item that is not a ``BaseTool``.
        ValueError: for two tools with the same name.
    """
    converted: list[Tool] = []
    for tool in _distinct_tools(tools):
        function = convert_to_openai_tool(tool)["function"]
        spec = ToolSpec(
            tool.name,
            function.get("description") or "",
            function.get("parameters") or {"type": "object", "properties": {}},
        )
        converted.append(Tool(spec, _invoker(tool)))
    return converted


def _invoker(tool: BaseTool) -> Callable[..., object]:
    def call(**arguments: object) -> object:
        return tool.invoke(arguments)

    call.__name__ = tool.name
    return call
