"""The effects a run needs, as typed protocols (spec §2).

The core performs no I/O: the four LLM agents and the gatekeeper are passed in
by the host. An :class:`AgentInvoker` receives the exact serialized whitelist
and the :class:`RunConfig`, and returns the model's message text; a
:class:`Gatekeeper` receives the run id and the parsed executor output and
returns the raw result mapping of spec §6.1 (or raises).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

import attrs

from .._kernel.driving.effects import (
    AGENT_FIELD,
    ASYNC_AGENT_FIELD,
    AgentInvoker,
    AgentTable,
    AsyncAgentInvoker,
    AsyncAgentTable,
    classifier_field,
    effect_field,
)
from .._kernel.machine.classify import FailureClassifier
from .._kernel.records import share_repr
from .enums import AgentName
from .payloads import ExecutorEvidence

__all__ = [
    "AsyncEffects",
    "AsyncGatekeeper",
    "Effects",
    "Gatekeeper",
]


class Gatekeeper(Protocol):
    """The citation checker: returns the raw result of spec §6.1, or raises."""

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object: ...


class AsyncGatekeeper(Protocol):
    """The asyncio variant of :class:`Gatekeeper`."""

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> Awaitable[object]: ...


_GATEKEEPER = effect_field("(run_id: str, executor_output: ExecutorEvidence) -> object")
_ASYNC_GATEKEEPER = effect_field(
    "(run_id: str, executor_output: ExecutorEvidence) -> Awaitable[object]"
)


@attrs.frozen(repr=False)
class Effects(AgentTable[AgentName, AgentInvoker]):
    """The four agents, the gatekeeper and the failure classifier of a sync run.

    Each effect is checked when the effects are built: a missing or ``None``
    effect, one that is not callable or cannot take the positional arguments
    it will be called with is a ``TypeError`` naming the field and the
    expected signature (a callable whose signature cannot be read is
    accepted). Which kind (sync or ``async def``) is checked by the driver.
    """

    planner: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    executor: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    verifier: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    composer: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    gatekeeper: Gatekeeper = attrs.field(validator=_GATEKEEPER)
    classifier: FailureClassifier = classifier_field()  # noqa: RUF009 - an attrs field


@attrs.frozen(repr=False)
class AsyncEffects(AsyncAgentTable[AgentName, Effects]):
    """The four agents, the gatekeeper and the failure classifier of an asyncio run.

    ``AsyncEffects.from_sync(effects)`` wraps sync :class:`Effects` (inherited from
    the kernel's ``AsyncAgentTable``: each effect then runs inline, on the event loop thread).
    Each effect is checked when built, as :class:`Effects` checks its own.
    """

    planner: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    executor: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    verifier: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    composer: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    gatekeeper: AsyncGatekeeper = attrs.field(validator=_ASYNC_GATEKEEPER)
    classifier: FailureClassifier = classifier_field()  # noqa: RUF009 - an attrs field


share_repr(Effects, AsyncEffects)
