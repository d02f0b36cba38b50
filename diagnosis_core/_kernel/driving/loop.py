"""The driver loop both workflows share: ask the machine, perform, feed back.

A workflow's driver is three choices: which machine (``next_action`` /
``advance``), which action class means "finished", and how to perform one
effect. The loop itself, and what performing an *agent* effect means (call the
invoker; an ``Exception`` becomes :class:`AgentFailed` classified by the run's
:class:`FailureClassifier`, described by :func:`describe_error`), live here
once. ``BaseException``s that are not ``Exception`` (task cancellation,
``KeyboardInterrupt``) propagate untouched.

One loop serves every host: :func:`drive_steps` / :func:`adrive_steps` yield
each trace event as the machine appends it and then :class:`Done`; a
blocking driver only consumes them. Around each effect
the loop calls an optional :class:`StepRecorder` (a journal: ``begin`` before
the effect runs, ``end`` after, and the machine is fed what ``end`` returns —
the recorded fact) and an optional observer (through a :class:`Watcher`, so
a raising hook is logged and counted and never changes the run, and a hook is
shown a copy of a mutable result; spec §12.5, §14).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

import attrs

from ..enums import FailureKind
from ..machine.classify import FailureClassifier, classify_failure
from ..machine.config import RunConfig
from ..machine.results import AgentFailed, AgentReplied
from ..records import share_repr
from ..wire.facts import not_text_message, repair_text
from .effects import (
    AgentInvoker,
    AgentTable,
    AsyncAgentInvoker,
    reject_awaitable,
    require_awaitable,
)
from .observe import Watcher, new_events, observed_result

__all__ = [
    "AgentAction",
    "Done",
    "StepRecorder",
    "Steps",
    "adrive_steps",
    "ainvoke_agent",
    "describe_error",
    "drive_steps",
    "failed_agent",
    "invoke_agent",
    "reply_fact",
]

S = TypeVar("S")
A = TypeVar("A")
R = TypeVar("R")
E = TypeVar("E")
A_contra = TypeVar("A_contra", contravariant=True)


class StepRecorder(Protocol[A_contra, R]):
    """What the loop tells a journal around one effect.

    ``begin(action)`` runs before the effect is performed (a journal hands its
    ``started`` entry to the host's sink here; if it raises, the effect is not
    performed); ``end(action, result)`` runs after, and returns the result the
    machine is fed — the recorded fact, so that the live state and the fold of
    the journal are equal by construction.
    """

    def begin(self, action: A_contra, /) -> None: ...

    def end(self, action: A_contra, result: R, /) -> R: ...

    def close(self) -> None:
        """The machine said finished: a journal writes its end marker (spec §12.2)."""


@attrs.frozen(repr=False)
class Done(Generic[S]):
    """The last item a step loop yields: the finished state.

    ``observer_failures`` counts the observer hooks that raised during the
    loop (logged, never raised; spec §12.5).
    """

    state: S
    observer_failures: int = 0


def describe_error(error: BaseException) -> str:
    """``TypeName: message`` for the trace; never raises (``__str__`` may)."""
    name = type(error).__name__
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    return f"{name}: {message}" if message else name


def failed_agent(classifier: FailureClassifier, error: Exception) -> AgentFailed:
    """The fact an agent's exception is: its classified kind and its message as stored.

    The message is what the journal keeps (spec §12.1, :func:`repair_text`),
    so a live run and the fold of its journal see the same text.
    """
    return AgentFailed(classify_failure(classifier, error), repair_text(describe_error(error)))


def reply_fact(text: object) -> AgentReplied | AgentFailed:
    """What an agent's return value is as a fact (spec §12.1): its text as stored,
    or — for anything that is not text — the non-retryable ``TypeError`` the
    journal records, so a live run and the fold of its journal agree."""
    if isinstance(text, str):
        return AgentReplied(repair_text(text))
    return AgentFailed(FailureKind.NON_RETRYABLE, not_text_message(text))


class AgentAction(Protocol):
    """An action invoking one agent: the agent (its value names the effect), input, config."""

    @property
    def agent(self) -> Enum: ...

    @property
    def input(self) -> str: ...

    @property
    def config(self) -> RunConfig: ...


def invoke_agent(
    effects: AgentTable[Any, AgentInvoker], action: AgentAction, effects_name: str
) -> AgentReplied | AgentFailed:
    """Call the agent ``action`` names synchronously; its exception becomes a classified failure.

    Both workflows' sync drivers perform their agent actions here. An agent
    that returns an awaitable is an async effect given to the sync driver:
    ``TypeError`` naming ``effects_name.<agent>``, never a result (spec §15).
    """
    try:
        text = effects.agent(action.agent)(action.input, action.config)
    except Exception as error:
        return failed_agent(effects.classifier, error)
    reject_awaitable(text, f"{effects_name}.{action.agent.value}", "the sync driver")
    return reply_fact(text)


async def ainvoke_agent(
    effects: AgentTable[Any, AsyncAgentInvoker], action: AgentAction, effects_name: str
) -> AgentReplied | AgentFailed:
    """Await the agent ``action`` names on the event loop; its exception becomes a failure.

    An agent that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError`` naming ``effects_name.<agent>``, never a
    result (spec §15).
    """
    try:
        pending = effects.agent(action.agent)(action.input, action.config)
    except Exception as error:
        return failed_agent(effects.classifier, error)
    reply = require_awaitable(pending, f"{effects_name}.{action.agent.value}", "the asyncio driver")
    try:
        text = await reply
    except Exception as error:
        return failed_agent(effects.classifier, error)
    return reply_fact(text)


def _trace(events: Callable[[S], Sequence[E]] | None) -> Callable[[S], Sequence[E]]:
    return (lambda _state: ()) if events is None else events


@attrs.define(eq=False, repr=False, on_setattr=attrs.setters.NO_OP)
class Steps(Generic[S, A, R, E]):
    """One step loop, all but performing the effects: the sync and async loops share it.

    It starts from ``state``; ``next_action`` and ``advance`` are the
    machine's, and an action of the class ``finished`` ends it. ``recorder``
    is told around each effect, ``watcher`` calls the observer's hooks, and
    ``trace`` reads a state's trace events (None: no event is yielded).
    :meth:`ask` returns the next effect (after ``effect_started`` and
    ``recorder.begin``) or :data:`_FINISHED` (after ``recorder.close``);
    :meth:`feed` records the performed effect's result, advances the state
    and yields each new trace event, announcing it as it is yielded.
    """

    state: S
    next_action: Callable[[S], object]
    finished: type
    advance: Callable[[S, R], S]
    recorder: StepRecorder[A, R] | None
    watcher: Watcher
    trace: Callable[[S], Sequence[E]] = attrs.field(converter=_trace)

    def ask(self) -> A | object:
        action = self.next_action(self.state)
        if isinstance(action, self.finished):
            if self.recorder is not None:
                self.recorder.close()
            return _FINISHED
        # The hook runs before the started entry, never between it and the effect:
        # a BaseException it raises (Ctrl-C) leaves the journal as if the effect had
        # not started, and nothing can come between the entry and the call (§12.5).
        self.watcher.notify("effect_started", action)
        if self.recorder is not None:
            self.recorder.begin(action)  # type: ignore[arg-type]
        return action

    def feed(self, action: A, result: R) -> Iterator[E]:
        if self.recorder is not None:
            result = self.recorder.end(action, result)
        if self.watcher.observer is not None:
            self.watcher.notify("effect_finished", action, observed_result(result))
        before = self.state
        self.state = self.advance(before, result)
        for event in new_events(self.trace(before), self.trace(self.state)):
            self.watcher.notify("event_appended", event)
            yield event

    def done(self) -> Done[S]:
        return Done(self.state, self.watcher.failures)


_FINISHED = object()
"""What :meth:`Steps.ask` returns once the machine says finished."""


def drive_steps(steps: Steps[S, A, R, E], perform: Callable[[A], R]) -> Iterator[E | Done[S]]:
    """Advance ``steps`` with performed effects until the machine says finished.

    Yields every trace event ``advance`` appends (none without ``trace``),
    then ``Done(state)``. Per effect, in this order: the observer's
    ``effect_started``, ``recorder.begin``, ``perform``, ``recorder.end``,
    ``effect_finished`` (with the recorded result), ``advance``, and
    ``event_appended`` for each new event as it is yielded. No hook runs
    between ``recorder.begin`` (a journal's ``started`` entry) and the effect,
    so a ``BaseException`` a hook raises (``KeyboardInterrupt``,
    ``SystemExit``) stops the run with no effect recorded as started that was
    never performed (spec §12.5).

    Every action of the machine that is not ``finished`` is an effect ``perform``
    accepts: that is the machine's contract, which its own types state.
    """
    while (action := steps.ask()) is not _FINISHED:
        yield from steps.feed(action, perform(action))  # type: ignore[arg-type]
    yield steps.done()


async def adrive_steps(
    steps: Steps[S, A, R, E], perform: Callable[[A], Awaitable[R]]
) -> AsyncIterator[E | Done[S]]:
    """:func:`drive_steps` on the asyncio event loop: each effect is awaited in turn."""
    while (action := steps.ask()) is not _FINISHED:
        for event in steps.feed(action, await perform(action)):  # type: ignore[arg-type]
            yield event
    yield steps.done()


share_repr(Done, Steps)
