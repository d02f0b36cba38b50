"""A tool-calling chat model, as the executor loop sees it (issue 33, spec §13, §18).

The executor is a tool-using agent: a model reads the conversation, calls
tools, reads their envelopes and finally answers. The package drives that
loop (``loop.py``); the model is one small callable a host plugs
in — a LangChain chat model through
``diagnosis_core.adapters.langchain.tool_calling_model``, an SDK client or a
local runtime through a class of its own. It is called once per turn with a
:class:`TurnRequest` and returns one :class:`ModelTurn`: tool calls, or the
final text.

These are plain values: frozen, slotted, validated on construction (a wrong
type is a ``TypeError``, an empty id or name a ``ValueError``, naming the
field), so an adapter that builds them from a provider's reply fails at the
boundary, not three turns later. Nothing here performs I/O or reads a clock.

Messages are the four roles every tool-calling API has: :class:`SystemMessage`,
:class:`UserMessage`, :class:`AssistantMessage` (its text and the tool calls
it made) and :class:`ToolMessage` (the answer to one tool call, by the call's
id). The loop only ever appends to the conversation, so a model may cache
the prefix it has already seen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias

import attrs

from .._kernel.machine.config import RunConfig
from .._kernel.wire.json import JsonValue

__all__ = [
    "AssistantMessage",
    "AsyncToolCallingModel",
    "ChatMessage",
    "ModelTurn",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolCallingModel",
    "ToolMessage",
    "ToolSpec",
    "TurnRequest",
    "UserMessage",
]


def _text(field: str, *, empty: bool = True) -> Callable[[Any, Any, Any], None]:
    """An attrs validator: an exact ``str``; ``empty=False`` also refuses ``""``."""

    def check(instance: object, attribute: object, value: object) -> None:
        if not isinstance(value, str):
            raise TypeError(f"{field}: expected a string, got {type(value).__name__}")
        if not empty and not value:
            raise ValueError(f"{field}: expected a non-empty string")

    return check


def _frozen_object(field: str, value: object) -> Mapping[str, JsonValue]:
    """A ``Mapping`` with string keys, as a read-only copy; ``TypeError`` naming ``field``."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{field}: expected a JSON object, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{field}: keys must be strings, got {type(key).__name__}")
    return MappingProxyType(dict(value))


def _tuple_of(field: str, kind: type | tuple[type, ...], value: object) -> tuple[Any, ...]:
    """Any sequence (not a string) of ``kind`` items, as a tuple; ``TypeError`` naming ``field``."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"{field}: expected a sequence, got {type(value).__name__}")
    items = tuple(value)
    for position, item in enumerate(items):
        if not isinstance(item, kind):
            raise TypeError(
                f"{field}[{position}]: expected {_kind_name(kind)}, got {type(item).__name__}"
            )
    return items


def _optional_seconds(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{attribute.name}: expected seconds >= 0 or None, got {value!r}")


def _parameters(value: object) -> Mapping[str, JsonValue]:
    return _frozen_object("parameters", value)


def _arguments(value: object) -> Mapping[str, JsonValue]:
    return _frozen_object("arguments", value)


def _response_schema(value: object) -> Mapping[str, JsonValue] | None:
    return None if value is None else _frozen_object("response_schema", value)


def _tool_calls(value: object) -> tuple[ToolCall, ...]:
    return _tuple_of("tool_calls", ToolCall, value)


def _tool_specs(value: object) -> tuple[ToolSpec, ...]:
    return _tuple_of("tools", ToolSpec, value)


def _messages(value: object) -> tuple[ChatMessage, ...]:
    return _tuple_of("messages", _MESSAGE_KINDS, value)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(item.__name__ for item in kind)
    return kind.__name__


@attrs.frozen(eq=True, hash=False)
class ToolSpec:
    """A tool as the model is shown it: name, description, JSON Schema of its arguments.

    ``parameters`` is the JSON Schema of the arguments object (``{"type":
    "object", "properties": …}``), given to the provider as is; the loop
    calls the tool with the model's arguments as keyword arguments.
    """

    name: str = attrs.field(validator=_text("name", empty=False))
    description: str = attrs.field(validator=_text("description"))
    parameters: Mapping[str, JsonValue] = attrs.field(
        factory=lambda: MappingProxyType({"type": "object", "properties": {}}),
        converter=_parameters,
    )


@attrs.frozen(eq=True, hash=False)
class ToolCall:
    """One tool call a model asked for: its id (unique in the turn), the tool, the arguments.

    ``id`` is the model's own call id (OpenAI ``call_…``, Anthropic
    ``toolu_…``, or any string a local runtime makes up); the
    :class:`ToolMessage` answering it carries the same id. It is not the
    §13 invocation id: that one is assigned by the run's recorder and is in
    the envelope the tool message holds.
    """

    id: str = attrs.field(validator=_text("id", empty=False))
    name: str = attrs.field(validator=_text("name", empty=False))
    arguments: Mapping[str, JsonValue] = attrs.field(
        factory=lambda: MappingProxyType({}),
        converter=_arguments,
    )


@attrs.frozen
class SystemMessage:
    """The system prompt (first message, at most one)."""

    text: str = attrs.field(validator=_text("text"))


@attrs.frozen
class UserMessage:
    """The agent's input: for the executor, the exact canonical-JSON input string (§6.6)."""

    text: str = attrs.field(validator=_text("text"))


@attrs.frozen(eq=True, hash=False)
class AssistantMessage:
    """A turn the model took: its text (may be empty) and the tool calls it made."""

    text: str = attrs.field(default="", validator=_text("text"))
    tool_calls: tuple[ToolCall, ...] = attrs.field(
        default=(), converter=_tool_calls
    )


@attrs.frozen
class ToolMessage:
    """The answer to one tool call: the call's id, the tool's name and the content shown.

    ``content`` is canonical JSON: the §13 envelope ``{"invocation_id",
    "tool_name", "output"}`` of a recorded call, or ``{"error": {…}}`` for a
    call that failed or could not be made; ``is_error`` says which (providers
    that mark tool errors, Anthropic's ``is_error``, get it).
    """

    tool_call_id: str = attrs.field(validator=_text("tool_call_id", empty=False))
    name: str = attrs.field(validator=_text("name", empty=False))
    content: str = attrs.field(validator=_text("content"))
    is_error: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


ChatMessage: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage
"""One message of the conversation a :class:`TurnRequest` carries."""

_MESSAGE_KINDS = (SystemMessage, UserMessage, AssistantMessage, ToolMessage)


@attrs.frozen(eq=True, hash=False)
class TurnRequest:
    """Everything a model needs for one turn.

    * ``messages`` — the conversation so far, oldest first (system prompt,
      the input, then assistant turns and tool messages).
    * ``tools`` — the tools the model may call in this turn. Empty means the
      model must answer now (the loop's last turn, or a budget spent): a
      model that still returns tool calls ends the loop with a failure.
    * ``response_schema`` — the JSON Schema of the final answer, or None.
      For the executor it is the grounding schema of this call (spec §18):
      ids and paths only of the invocations recorded so far. An adapter
      gives it to the provider's structured output (strict mode) or to a
      local constrained decoder; a model that cannot use it may ignore it
      (the parser and the gatekeeper still check the reply).
    * ``config`` — the run's :class:`RunConfig` (for tracing), or None.
    * ``time_left_s`` — seconds left before the loop's deadline, or None
      (no deadline): give it to the client as its request timeout, since a
      synchronous call cannot be interrupted from outside.
    """

    messages: tuple[ChatMessage, ...] = attrs.field(
        converter=_messages
    )
    tools: tuple[ToolSpec, ...] = attrs.field(
        default=(), converter=_tool_specs
    )
    response_schema: Mapping[str, JsonValue] | None = attrs.field(
        default=None,
        converter=_response_schema,
    )
    config: RunConfig | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(RunConfig))
    )
    time_left_s: float | None = attrs.field(default=None, validator=_optional_seconds)


@attrs.frozen(eq=True, hash=False)
class ModelTurn:
    """What a model returns for one turn: tool calls, or its final text.

    With ``tool_calls`` non-empty the turn is a tool turn (``text``, if any,
    is the model's commentary and stays in the conversation); without, it
    is the final answer and ``text`` is what the executor returns. Tool call
    ids are unique within a turn (``ValueError`` otherwise: the answers could
    not be told apart).
    """

    text: str = attrs.field(default="", validator=_text("text"))
    tool_calls: tuple[ToolCall, ...] = attrs.field(
        default=(), converter=_tool_calls
    )

    def __attrs_post_init__(self) -> None:
        seen: set[str] = set()
        for position, call in enumerate(self.tool_calls):
            if call.id in seen:
                raise ValueError(f"tool_calls[{position}].id: duplicate {call.id!r}")
            seen.add(call.id)

    @property
    def is_final(self) -> bool:
        """True for the final answer (no tool calls)."""
        return not self.tool_calls


class ToolCallingModel(Protocol):
    """A chat model that can call tools: one :class:`TurnRequest` in, one :class:`ModelTurn` out.

    Raise on failure (a transport error, a refusal): the executor loop lets
    the exception reach the driver, whose failure classifier decides whether
    the executor call is retried (spec §6.7), so raise ``TimeoutError`` /
    ``ConnectionError`` or set ``retryable`` for what a retry can fix.
    """

    def __call__(self, request: TurnRequest, /) -> ModelTurn: ...


class AsyncToolCallingModel(Protocol):
    """The asyncio variant of :class:`ToolCallingModel`."""

    def __call__(self, request: TurnRequest, /) -> Awaitable[ModelTurn]: ...


def _function(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not callable(value):
        raise TypeError(f"function: expected a callable, got {type(value).__name__}")


@attrs.frozen
class Tool:
    """One executor tool: what the model is shown (:class:`ToolSpec`) and what runs.

    ``function`` is called with the model's arguments as keyword arguments,
    through the run's :class:`~diagnosis_core.tools.ToolRecorder` under
    ``spec.name`` (so the call is numbered, recorded, journaled and
    replayed like any recorded tool, spec §13, §12.3). It returns a JSON
    value (the recorded ``output``); an async executor also accepts a
    coroutine function.
    """

    spec: ToolSpec = attrs.field(validator=attrs.validators.instance_of(ToolSpec))
    function: Callable[..., object] = attrs.field(validator=_function)
