"""The driver loop both workflows share: ask the machine, perform, feed back.

A workflow's driver is three choices: which machine (``next_action`` /
``advance``), which action class means "finished", and how to perform one
effect. The loop itself, and what performing an *agent* effect means (call the
invoker; an ``Exception`` becomes :class:`AgentFailed` classified by the run's
:class:`FailureClassifier`, described by :func:`describe_error`), live here
once. ``BaseException``s that are not ``Exception`` (task cancellation,
``KeyboardInterrupt``) propagate untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from ._classify import FailureClassifier, classify_failure
from ._config import RunConfig
from ._effects import AgentInvoker, AsyncAgentInvoker, reject_awaitable, require_awaitable
from ._machine import AgentFailed, AgentReplied

__all__ = ["adrive", "ainvoke_agent", "describe_error", "drive", "invoke_agent"]

S = TypeVar("S")
A = TypeVar("A")
R = TypeVar("R")


def describe_error(error: BaseException) -> str:
    """``TypeName: message`` for the trace; never raises (``__str__`` may)."""
    name = type(error).__name__
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    return f"{name}: {message}" if message else name


def invoke_agent(
    invoker: AgentInvoker,
    input: str,
    config: RunConfig,
    classifier: FailureClassifier,
    *,
    what: str,
) -> AgentReplied | AgentFailed:
    """Call one agent synchronously; its exception becomes a classified failure.

    An agent that returns an awaitable is an async effect given to the sync
    driver: ``TypeError`` naming ``what``, never a result (spec §15).
    """
    try:
        text = invoker(input, config)
    except Exception as error:
        return AgentFailed(classify_failure(classifier, error), describe_error(error))
    reject_awaitable(text, what, "the sync driver")
    return AgentReplied(text)


async def ainvoke_agent(
    invoker: AsyncAgentInvoker,
    input: str,
    config: RunConfig,
    classifier: FailureClassifier,
    *,
    what: str,
) -> AgentReplied | AgentFailed:
    """Await one agent on the event loop; its exception becomes a classified failure.

    An agent that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError`` naming ``what``, never a result (spec §15).
    """
    try:
        pending = invoker(input, config)
    except Exception as error:
        return AgentFailed(classify_failure(classifier, error), describe_error(error))
    reply = require_awaitable(pending, what, "the asyncio driver")
    try:
        text = await reply
    except Exception as error:
        return AgentFailed(classify_failure(classifier, error), describe_error(error))
    return AgentReplied(text)


def drive(
    state: S,
    next_action: Callable[[S], object],
    finished: type,
    perform: Callable[[A], R],
    advance: Callable[[S, R], S],
) -> S:
    """Advance ``state`` with performed effects until the machine says ``finished``.

    Every action of the machine that is not ``finished`` is an effect ``perform``
    accepts: that is the machine's contract, which its own types state.
    """
    while True:
        action = next_action(state)
        if isinstance(action, finished):
            return state
        state = advance(state, perform(action))  # type: ignore[arg-type]


async def adrive(
    state: S,
    next_action: Callable[[S], object],
    finished: type,
    perform: Callable[[A], Awaitable[R]],
    advance: Callable[[S, R], S],
) -> S:
    """:func:`drive` on the asyncio event loop: each effect is awaited in turn."""
    while True:
        action = next_action(state)
        if isinstance(action, finished):
            return state
        state = advance(state, await perform(action))  # type: ignore[arg-type]
