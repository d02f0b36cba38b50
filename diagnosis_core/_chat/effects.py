"""The effects a run needs, as typed protocols (spec §2).

The core performs no I/O: the four LLM agents and the gatekeeper are passed in
by the host. An :class:`AgentInvoker` receives the exact serialized whitelist
and the :class:`RunConfig`, and returns the model's message text; a
:class:`Gatekeeper` receives the run id and the parsed executor output and
returns the raw result mapping of spec §6.1 (or raises).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs

from .._kernel.classify import FailureClassifier, default_failure_classifier
from .._kernel.config import RunConfig
from .enums import AgentName
from .payloads import ExecutorEvidence

__all__ = [
    "AgentInvoker",
    "AsyncAgentInvoker",
    "AsyncEffects",
    "AsyncGatekeeper",
    "Effects",
    "Gatekeeper",
    "check_effects_kind",
    "is_async_callable",
    "reject_awaitable",
    "require_awaitable",
]


class AgentInvoker(Protocol):
    """An LLM agent: exact input string and run config in, message text out."""

    def __call__(self, input: str, config: RunConfig, /) -> str: ...


class AsyncAgentInvoker(Protocol):
    """The asyncio variant of :class:`AgentInvoker`."""

    def __call__(self, input: str, config: RunConfig, /) -> Awaitable[str]: ...


class Gatekeeper(Protocol):
    """The citation checker: returns the raw result of spec §6.1, or raises."""

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object: ...


class AsyncGatekeeper(Protocol):
    """The asyncio variant of :class:`Gatekeeper`."""

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> Awaitable[object]: ...


@attrs.frozen
class Effects:
    """The four agents, the gatekeeper and the failure classifier of a sync run."""

    planner: AgentInvoker
    executor: AgentInvoker
    verifier: AgentInvoker
    composer: AgentInvoker
    gatekeeper: Gatekeeper
    classifier: FailureClassifier = default_failure_classifier

    def agent(self, name: AgentName) -> AgentInvoker:
        """The invoker for ``name``."""
        invoker: AgentInvoker = getattr(self, name.value)
        return invoker


def awaitable_agent(invoker: AgentInvoker) -> AsyncAgentInvoker:
    async def call(input: str, config: RunConfig, /) -> str:
        return invoker(input, config)

    return call


def awaitable_gatekeeper(gatekeeper: Gatekeeper) -> AsyncGatekeeper:
    async def call(run_id: str, executor_output: ExecutorEvidence, /) -> object:
        return gatekeeper(run_id, executor_output)

    return call


@attrs.frozen
class AsyncEffects:
    """The four agents, the gatekeeper and the failure classifier of an asyncio run."""

    planner: AsyncAgentInvoker
    executor: AsyncAgentInvoker
    verifier: AsyncAgentInvoker
    composer: AsyncAgentInvoker
    gatekeeper: AsyncGatekeeper
    classifier: FailureClassifier = default_failure_classifier

    def agent(self, name: AgentName) -> AsyncAgentInvoker:
        """The invoker for ``name``."""
        invoker: AsyncAgentInvoker = getattr(self, name.value)
        return invoker

    @classmethod
    def from_sync(cls, effects: Effects) -> AsyncEffects:
        """Wrap synchronous effects (called inline, on the event loop thread)."""
        wrap: Callable[[AgentInvoker], AsyncAgentInvoker] = awaitable_agent
        return cls(
            planner=wrap(effects.planner),
            executor=wrap(effects.executor),
            verifier=wrap(effects.verifier),
            composer=wrap(effects.composer),
            gatekeeper=awaitable_gatekeeper(effects.gatekeeper),
            classifier=effects.classifier,
        )


# --- the right kind of effects for the driver (spec §15, a local error) ------------


def is_async_callable(value: object) -> bool:
    """True for an ``async def`` function (or partial) or an object with ``async def __call__``.

    Never raises: an object whose attributes cannot be read counts as not async.
    """
    try:
        if inspect.iscoroutinefunction(value):
            return True
        call = getattr(type(value), "__call__", None)  # noqa: B004 - the class's method
        return call is not None and inspect.iscoroutinefunction(call)
    except Exception:
        return False


def check_effects_kind(
    effects: object,
    expected: type[Any],
    names: Sequence[str],
    *,
    asynchronous: bool,
    driver: str,
    other_driver: str,
) -> None:
    """Raise ``TypeError`` before a run starts when ``effects`` suit the other driver.

    Passing ``AsyncEffects`` to the sync driver, sync ``Effects`` to the asyncio
    driver, or a sync callable among async effects (an async one among sync
    effects) is the host's mistake: without this check it ends as a polite
    fallback ("got coroutine", "the evidence check service was unavailable")
    that hides the bug. A sync effect inside async effects must be an
    ``async def`` (wrap it, or use ``AsyncEffects.from_sync``).
    """
    if not isinstance(effects, expected):
        raise TypeError(
            f"{driver} needs {expected.__name__}, got {type(effects).__name__}"
            f" (use {other_driver} for it)"
        )
    for name in names:
        effect = getattr(effects, name)
        if is_async_callable(effect) != asynchronous:
            kind = "a synchronous callable" if asynchronous else "an async callable"
            raise TypeError(
                f"{expected.__name__}.{name} is {kind}; {driver} needs"
                f" {'async def' if asynchronous else 'a plain (sync) callable'} effects"
                f" (use {other_driver} for the other kind)"
            )


def reject_awaitable(value: object, what: str, driver: str) -> None:
    """Raise ``TypeError`` when a sync effect returned an awaitable (never awaited here)."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # no "coroutine was never awaited" warning
        raise TypeError(
            f"{what} returned an awaitable ({type(value).__name__}) to {driver};"
            " an async effect needs the asyncio driver"
        )


def require_awaitable(value: object, what: str, driver: str) -> Awaitable[Any]:
    """``value`` if it is awaitable; ``TypeError`` when an async effect returned a plain value."""
    if not inspect.isawaitable(value):
        raise TypeError(
            f"{what} returned {type(value).__name__}, not an awaitable, to {driver};"
            " a sync effect needs the sync driver (or AsyncEffects.from_sync)"
        )
    return value
