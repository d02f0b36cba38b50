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

from .._kernel.classify import FailureClassifier, default_failure_classifier
from .._kernel.effects import AgentInvoker, AgentTable, AsyncAgentInvoker, AsyncAgentTable
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


@attrs.frozen(repr=False)
class Effects(AgentTable[AgentName, AgentInvoker]):
    """The four agents, the gatekeeper and the failure classifier of a sync run."""

    planner: AgentInvoker
    executor: AgentInvoker
    verifier: AgentInvoker
    composer: AgentInvoker
    gatekeeper: Gatekeeper
    classifier: FailureClassifier = default_failure_classifier


@attrs.frozen(repr=False)
class AsyncEffects(AsyncAgentTable[AgentName, Effects]):
    """The four agents, the gatekeeper and the failure classifier of an asyncio run.

    ``AsyncEffects.from_sync(effects)`` wraps sync :class:`Effects` (inherited from
    the kernel's ``AsyncAgentTable``: each effect then runs inline, on the event loop thread).
    """

    planner: AsyncAgentInvoker
    executor: AsyncAgentInvoker
    verifier: AsyncAgentInvoker
    composer: AsyncAgentInvoker
    gatekeeper: AsyncGatekeeper
    classifier: FailureClassifier = default_failure_classifier


# --- the right kind of effects for the driver (spec §15, a local error) ------------


share_repr(Effects, AsyncEffects)
