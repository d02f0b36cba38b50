"""The executor's tool loop: a tool-calling chat model as an executor effect (issue 33, §13, §18).

The executor is a tool-using agent. :class:`ExecutorAgent` (and
:class:`AsyncExecutorAgent`) is the executor effect — an ``AgentInvoker``:
exact input string and run config in, final text out — that runs a
:class:`~diagnosis_core.tools.ToolCallingModel` in a bounded loop:

1. The model gets the conversation (optional system prompt, the input as the
   user message, then its own turns and the tool messages), the tools'
   specs and the *response schema* of the final answer: the workflow's
   grounding schema of the invocations recorded so far in this call (spec
   §18), so a constrained decoder can cite only what exists.
2. A turn with tool calls: each call, in the order given, runs through the
   run's :class:`ToolRecorder` (``recorder.wrap``), so it is numbered,
   recorded, journaled as it finishes (§12.3) and seen by the gatekeeper
   (§13); the model gets the §13 envelope as the tool message.
3. A turn without tool calls is the answer: its text is returned, unparsed
   (the driver parses it, spec §5).

Limits — each ends the loop with a classified failure (spec §6.7):

* ``max_turns`` (model calls) and ``max_tool_calls`` (tool calls asked for,
  run or not): when either is about to be spent, the next turn offers *no
  tools* — the model must answer. A model that still asks for tools ends the
  loop with :class:`ToolLoopLimitError`, a ``NonRetryableError`` (the same
  input would go the same way). Calls of one turn beyond the tool budget
  are not run; the model is told so in their tool messages.
* ``deadline_s`` (seconds of the host's ``clock`` since the call started):
  checked before each model call and each tool call, and given to the model
  as :attr:`TurnRequest.time_left_s`; an asyncio model call is also
  cancelled when it runs out. Past it: :class:`ToolLoopDeadlineError`, a
  ``TimeoutError`` — ``RETRYABLE`` for the default classifier, like any
  timeout (a host that wants otherwise passes its own classifier).

Errors:

* A model that raises: the exception reaches the driver unchanged, and the
  effects' classifier decides (a transport ``TimeoutError`` is retried, an
  unknown error is not).
* A tool that raises: the recorder has recorded it as failed (§13). The
  loop's ``classifier`` classifies it: ``TOOL_BLOCKED`` is re-raised (the run
  ends ``EXECUTOR_TOOL_BLOCKED``); otherwise, with ``tool_errors="report"``
  (the default) the model gets a tool message ``{"tool_name", "error":
  {"type", "message", "retryable"}}`` and goes on (it may try again or
  answer without that evidence — a binding to the failed invocation is
  ``INVOCATION_FAILED``); with ``tool_errors="raise"`` the exception reaches
  the driver. A call the model makes to an unknown tool, or with arguments
  the recorder cannot store (§12.1), is answered with an error message too
  and never runs.

Resume (spec §12.3, ``resend_executor``): the driver hands the interrupted
call's recorded tool calls to the recorder's ``replay``; a re-sent executor
call whose model asks for the same calls gets the recorded envelopes (or
errors) back and no tool runs again. The loop builds every message from what
the recorder returns, the same whether a call ran or was replayed, so a
deterministic model gives the same evidence.

Host-facing plumbing, like the recorder: it reads the host's clock
(``clock=``, ``time.monotonic`` by default) for the deadline only.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, Literal, Protocol, TypedDict, TypeVar

import attrs

from .._kernel.enums import FailureKind
from .._kernel.errors import NonRetryableError
from .._kernel.machine.classify import (
    FailureClassifier,
    classify_failure,
    default_failure_classifier,
)
from .._kernel.machine.config import RunConfig
from .._kernel.tools.ledger import ToolInvocation
from .._kernel.tools.recorder import ToolEnvelope, ToolRecorder, error_message, error_type
from .._kernel.wire.json import JsonValue, canonical_json
from .grounding import DEFAULT_LIMITS, GroundingLimits, GroundingSchema, positive_int
from .model import (
    AssistantMessage,
    AsyncToolCallingModel,
    ChatMessage,
    ModelTurn,
    SystemMessage,
    Tool,
    ToolCall,
    ToolCallingModel,
    ToolMessage,
    ToolSpec,
    TurnRequest,
    UserMessage,
)

__all__ = [
    "AsyncExecutorAgent",
    "ExecutorAgent",
    "ExecutorOptions",
    "GroundingBuilder",
    "GroundingScope",
    "PerRunRecorders",
    "ToolErrorPolicy",
    "ToolLoopDeadlineError",
    "ToolLoopLimitError",
]

GroundingScope = Literal["call", "run", "off"]
"""What the final answer's schema lets the model cite (spec §18).

``"call"`` (default): the invocations recorded in this executor call;
``"run"``: every invocation of the run's ledger (a round-2 executor may cite
round 1); ``"off"``: no response schema.
"""

ToolErrorPolicy = Literal["report", "raise"]
"""What a tool's exception does: told to the model (``"report"``) or raised to the driver."""


class ToolLoopLimitError(NonRetryableError):
    """The model asked for tools after ``max_turns`` or ``max_tool_calls`` was spent.

    ``limit`` names it (``"max_turns"`` or ``"max_tool_calls"``) and
    ``value`` is its value. ``NON_RETRYABLE`` (spec §6.7).
    """

    def __init__(self, limit: str, value: int) -> None:
        super().__init__(
            f"{limit}: the model asked for tools after the limit of {value} was spent"
        )
        self.limit = limit
        self.value = value


class ToolLoopDeadlineError(TimeoutError):
    """The executor call ran past ``deadline_s``; ``RETRYABLE`` by default (a timeout, §6.7)."""

    def __init__(self, deadline_s: float, where: str) -> None:
        super().__init__(f"deadline_s: {deadline_s:g} s spent {where}")
        self.deadline_s = deadline_s


class PerRunRecorders(Protocol):
    """Recorders found by run id (``diagnosis_core.tools.RunRecorders`` is one)."""

    def recorder(self, run_id: str, /) -> ToolRecorder: ...


class GroundingBuilder(Protocol):
    """A workflow's grounding schema: the citable invocations, a profile and the limits."""

    def __call__(
        self, invocations: Sequence[ToolInvocation], /, *, profile: str, limits: GroundingLimits
    ) -> GroundingSchema: ...


def _deadline(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"deadline_s: expected seconds > 0 or None, got {value!r}")
    return float(value)


@attrs.frozen
class _Settings:
    """What both loops are built from, validated once at construction."""

    tools: Mapping[str, Tool]
    recorder: ToolRecorder | PerRunRecorders
    system_prompt: str | None
    max_tool_calls: int
    max_turns: int
    deadline_s: float | None
    grounding: GroundingScope
    profile: str
    limits: GroundingLimits
    build: GroundingBuilder
    classifier: FailureClassifier
    tool_errors: ToolErrorPolicy
    clock: Callable[[], float]

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self.tools.values())


class ExecutorOptions(TypedDict, total=False):
    """The keyword options of every executor-agent constructor (limits: ``docs/executor.md``).

    Defaults: no system prompt, 8 tool calls, 10 turns, a 120 s deadline, the
    workflow's ``grounding``, the ``"openai-strict"`` profile, the default
    limits and classifier, tool errors reported to the model, and
    :func:`time.monotonic`.
    """

    system_prompt: str | None
    max_tool_calls: int
    max_turns: int
    deadline_s: float | None
    grounding: GroundingScope
    profile: str
    limits: GroundingLimits
    classifier: FailureClassifier
    tool_errors: ToolErrorPolicy
    clock: Callable[[], float]


def build_settings(
    tools: Sequence[Tool],
    recorder: ToolRecorder | PerRunRecorders,
    options: ExecutorOptions,
    *,
    name: str,
    build: GroundingBuilder,
    grounding: GroundingScope,
    asynchronous: bool = False,
) -> _Settings:
    """The validated settings of the executor agent ``name`` (its constructors call this).

    ``grounding`` is the workflow's default scope; ``options`` are the
    caller's keywords, checked as Python checks a signature's.
    """
    for key in options:  # in the caller's order, as Python names the first unknown one
        if key not in ExecutorOptions.__optional_keys__:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
    system_prompt = options.get("system_prompt")
    grounding = options.get("grounding", grounding)
    profile = options.get("profile", "openai-strict")
    limits = options.get("limits", DEFAULT_LIMITS)
    tool_errors = options.get("tool_errors", "report")
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise TypeError(f"tools: expected a sequence of Tool, got {type(tools).__name__}")
    table: dict[str, Tool] = {}
    for position, tool in enumerate(tools):
        if not isinstance(tool, Tool):
            raise TypeError(f"tools[{position}]: expected a Tool, got {type(tool).__name__}")
        if tool.spec.name in table:
            raise ValueError(f"tools[{position}]: duplicate tool name {tool.spec.name!r}")
        if not asynchronous and inspect.iscoroutinefunction(tool.function):
            raise TypeError(
                f"tools[{position}]: {tool.spec.name!r} is a coroutine function; "
                "use the async executor"
            )
        table[tool.spec.name] = tool
    if not isinstance(recorder, ToolRecorder) and not callable(getattr(recorder, "recorder", None)):
        raise TypeError(
            "recorder: expected a ToolRecorder or RunRecorders, got "
            f"{type(recorder).__name__}"
        )
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise TypeError("system_prompt: expected a string or None")
    if grounding not in ("call", "run", "off"):
        raise ValueError(f"grounding: expected 'call', 'run' or 'off', got {grounding!r}")
    if tool_errors not in ("report", "raise"):
        raise ValueError(f"tool_errors: expected 'report' or 'raise', got {tool_errors!r}")
    if not isinstance(limits, GroundingLimits):
        raise TypeError("limits: expected a GroundingLimits")
    if grounding != "off":  # an unknown profile fails here, not at the first call
        build((), profile=profile, limits=limits)
    return _Settings(
        tools=table,
        recorder=recorder,
        system_prompt=system_prompt,
        max_tool_calls=positive_int("max_tool_calls", options.get("max_tool_calls", 8)),
        max_turns=positive_int("max_turns", options.get("max_turns", 10)),
        deadline_s=_deadline(options.get("deadline_s", 120.0)),
        grounding=grounding,
        profile=profile,
        limits=limits,
        build=build,
        classifier=options.get("classifier", default_failure_classifier),
        tool_errors=tool_errors,
        clock=options.get("clock", time.monotonic),
    )


class _Run:
    """One executor call in progress: the conversation, the counts, the cited invocations.

    Every decision of the loop is here; the sync and async agents only
    perform the model and tool calls it asks for.
    """

    def __init__(self, settings: _Settings, input: str, config: RunConfig) -> None:
        self.settings = settings
        self.config = config
        source = settings.recorder
        self.recorder = (
            source if isinstance(source, ToolRecorder) else source.recorder(config.run_id)
        )
        self.messages: list[ChatMessage] = []
        if settings.system_prompt is not None:
            self.messages.append(SystemMessage(settings.system_prompt))
        self.messages.append(UserMessage(input))
        self.turns = 0
        self.calls = 0
        self.invocations: list[str] = []  # ids the recorder returned in this call
        self.started = settings.clock()

    # --- deadline ------------------------------------------------------------------

    def time_left(self) -> float | None:
        deadline = self.settings.deadline_s
        if deadline is None:
            return None
        return deadline - (self.settings.clock() - self.started)

    def check_deadline(self, where: str) -> float | None:
        left = self.time_left()
        if left is not None and left <= 0:
            assert self.settings.deadline_s is not None
            raise ToolLoopDeadlineError(self.settings.deadline_s, where)
        return left

    # --- turns -----------------------------------------------------------------------

    def request(self) -> TurnRequest:
        """The next turn's request; the last one allowed offers no tools."""
        left = self.check_deadline(f"before turn {self.turns + 1}")
        final = (
            self.turns + 1 >= self.settings.max_turns
            or self.calls >= self.settings.max_tool_calls
        )
        return TurnRequest(
            messages=self.messages,
            tools=() if final else self.settings.specs,
            response_schema=self.response_schema(),
            config=self.config,
            time_left_s=left,
        )

    def response_schema(self) -> Mapping[str, JsonValue] | None:
        settings = self.settings
        if settings.grounding == "off":
            return None
        ledger = self.recorder.ledger()
        if settings.grounding == "run":
            records: Sequence[ToolInvocation] = ledger.invocations
        else:
            found = (ledger.get(invocation_id) for invocation_id in self.invocations)
            records = [record for record in found if record is not None]
        return settings.build(records, profile=settings.profile, limits=settings.limits).schema

    def take(self, request: TurnRequest, turn: object) -> str | tuple[ToolCall, ...]:
        """The final text, or the tool calls to perform."""
        if not isinstance(turn, ModelTurn):
            raise TypeError(f"the model returned {type(turn).__name__}, not a ModelTurn")
        self.turns += 1
        if turn.is_final:
            return turn.text
        if not request.tools:
            if self.calls >= self.settings.max_tool_calls:
                raise ToolLoopLimitError("max_tool_calls", self.settings.max_tool_calls)
            raise ToolLoopLimitError("max_turns", self.settings.max_turns)
        self.messages.append(AssistantMessage(turn.text, turn.tool_calls))
        return turn.tool_calls

    # --- tool calls --------------------------------------------------------------------

    def refused(self, call: ToolCall) -> ToolMessage | None:
        """The answer to a call that must not run (unknown tool, budget spent), or None."""
        self.calls += 1
        if self.calls > self.settings.max_tool_calls:
            return self.error(
                call, "ToolCallLimit",
                f"not run: the limit of {self.settings.max_tool_calls} tool calls is spent; "
                "answer now",
                retryable=False,
            )
        if call.name not in self.settings.tools:
            names = ", ".join(sorted(self.settings.tools)) or "none"
            return self.error(
                call, "UnknownTool", f"no tool named {call.name!r} (tools: {names})",
                retryable=False,
            )
        self.check_deadline(f"before tool call {call.name!r}")
        return None

    def answered(self, call: ToolCall, envelope: ToolEnvelope) -> ToolMessage:
        self.invocations.append(envelope["invocation_id"])
        message = ToolMessage(call.id, call.name, canonical_json(envelope))
        self.messages.append(message)
        return message

    def failed(self, call: ToolCall, error: Exception) -> ToolMessage:
        """A tool's exception: re-raised (blocked, or policy ``raise``) or told to the model."""
        kind = classify_failure(self.settings.classifier, error)  # fails closed (§6.7)
        if kind is FailureKind.TOOL_BLOCKED or self.settings.tool_errors == "raise":
            raise error
        return self.error(
            call, error_type(error), error_message(error),
            retryable=kind is FailureKind.RETRYABLE,
        )

    def error(self, call: ToolCall, kind: str, message: str, *, retryable: bool) -> ToolMessage:
        error = {"type": kind, "message": message, "retryable": retryable}
        content = canonical_json({"tool_name": call.name, "error": error})
        answer = ToolMessage(call.id, call.name, content, is_error=True)
        self.messages.append(answer)
        return answer

    def arguments(self, call: ToolCall) -> dict[str, Any]:
        return dict(call.arguments)


M = TypeVar("M", ToolCallingModel, AsyncToolCallingModel)  # the model kind of an agent


class _Agent(Generic[M]):
    """What both agents share: the model, the settings and the public view of them."""

    def __init__(self, model: M, settings: _Settings) -> None:
        if not callable(model):
            raise TypeError(f"model: expected a ToolCallingModel, got {type(model).__name__}")
        self._settings = settings
        self.model: M = model

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tools the model is offered, in order."""
        return self._settings.specs

    @property
    def max_tool_calls(self) -> int:
        return self._settings.max_tool_calls

    @property
    def max_turns(self) -> int:
        return self._settings.max_turns

    @property
    def deadline_s(self) -> float | None:
        return self._settings.deadline_s

    def __repr__(self) -> str:
        names = ", ".join(self._settings.tools)
        return (
            f"{type(self).__name__}(tools=[{names}], max_tool_calls={self.max_tool_calls}, "
            f"max_turns={self.max_turns}, deadline_s={self.deadline_s})"
        )


class ExecutorAgent(_Agent[ToolCallingModel]):
    """An executor effect (``AgentInvoker``) running a :class:`ToolCallingModel` in a bounded loop.

    Built by ``diagnosis_core.tools.executor_agent`` (chat) or
    ``diagnosis_core.tools.aiops_executor_agent``; the loop, its limits and
    its errors are described in the module docstring and ``docs/executor.md``.
    """

    def __call__(self, input: str, config: RunConfig, /) -> str:
        run = _Run(self._settings, input, config)
        while True:
            request = run.request()
            outcome = run.take(request, self.model(request))
            if isinstance(outcome, str):
                return outcome
            for call in outcome:
                if run.refused(call) is not None:
                    continue
                tool = self._settings.tools[call.name]
                wrapped = run.recorder.wrap(call.name, tool.function)
                try:
                    envelope = wrapped(**run.arguments(call))
                except Exception as error:
                    run.failed(call, error)
                    continue
                run.answered(call, envelope)


class AsyncExecutorAgent(_Agent[AsyncToolCallingModel]):
    """The asyncio variant of :class:`ExecutorAgent` (an ``AsyncAgentInvoker``).

    Coroutine-function tools are awaited (``recorder.wrap_async``), plain
    ones called directly; a model call still running at the deadline is
    cancelled. A synchronous model is accepted too (its turn is not awaited).
    """

    async def _call_model(self, request: TurnRequest) -> object:
        reply: object = self.model(request)
        if inspect.isawaitable(reply):  # a plain ToolCallingModel is accepted too
            reply = await reply
        return reply

    async def _turn(self, run: _Run, request: TurnRequest) -> object:
        left = request.time_left_s
        if left is None:
            return await self._call_model(request)
        try:
            async with asyncio.timeout(left):
                return await self._call_model(request)
        except TimeoutError:
            if run.time_left() is not None and (run.time_left() or 0.0) <= 0:
                assert self._settings.deadline_s is not None
                raise ToolLoopDeadlineError(
                    self._settings.deadline_s, f"in turn {run.turns + 1}"
                ) from None
            raise

    async def __call__(self, input: str, config: RunConfig, /) -> str:
        run = _Run(self._settings, input, config)
        while True:
            request = run.request()
            outcome = run.take(request, await self._turn(run, request))
            if isinstance(outcome, str):
                return outcome
            for call in outcome:
                if run.refused(call) is not None:
                    continue
                tool = self._settings.tools[call.name]
                try:
                    envelope = await _call_tool(run.recorder, call.name, tool, run.arguments(call))
                except Exception as error:
                    run.failed(call, error)
                    continue
                run.answered(call, envelope)


async def _call_tool(
    recorder: ToolRecorder, name: str, tool: Tool, arguments: dict[str, Any]
) -> ToolEnvelope:
    if inspect.iscoroutinefunction(tool.function):
        function: Callable[..., Awaitable[object]] = tool.function
        return await recorder.wrap_async(name, function)(**arguments)
    return recorder.wrap(name, tool.function)(**arguments)
