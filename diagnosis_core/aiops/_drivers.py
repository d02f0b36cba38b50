"""Effects and the two built-in drivers of the AIOps flow (sync and asyncio).

The four agents are :class:`AgentInvoker` callables (exact input string and
:class:`RunConfig` in, message text out), exactly like the chat agents. A
driver only performs the invocation the machine asks for and feeds the
result back; it decides nothing. An exception of an agent becomes
:class:`AgentFailed`, classified by the run's :class:`FailureClassifier`
(failing closed, spec §6.7). ``BaseException``s that are not ``Exception``
propagate untouched.

:func:`evaluate_aiops_run` applies the rule evaluator to a finished run with
the tool ledger the host recorded.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import attrs

from .._classify import FailureClassifier, default_failure_classifier
from .._effects import AgentInvoker, AsyncAgentInvoker, awaitable_agent, check_effects_kind
from .._loop import adrive, ainvoke_agent, drive, invoke_agent
from .._machine import AgentFailed, AgentReplied
from .._reference_gatekeeper import ToolLedger
from ._enums import AiOpsAgent
from ._machine import (
    AiOpsFinished,
    AiOpsRequest,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from ._rules import (
    AIOPS_RULES,
    AiOpsRule,
    AiOpsRuleEvaluation,
    LedgerSource,
    evaluate_aiops_report,
)

__all__ = [
    "AiOpsEffects",
    "AsyncAiOpsEffects",
    "arun_aiops",
    "evaluate_aiops_run",
    "perform_aiops_effect",
    "perform_aiops_effect_async",
    "run_aiops",
]


@attrs.frozen
class AiOpsEffects:
    """The four agents and the failure classifier of a synchronous AIOps run."""

    supervisor: AgentInvoker
    planner: AgentInvoker
    executor: AgentInvoker
    reporter: AgentInvoker
    classifier: FailureClassifier = default_failure_classifier

    def agent(self, name: AiOpsAgent) -> AgentInvoker:
        """The invoker for ``name``."""
        invoker: AgentInvoker = getattr(self, name.value)
        return invoker


@attrs.frozen
class AsyncAiOpsEffects:
    """The four agents and the failure classifier of an asyncio AIOps run."""

    supervisor: AsyncAgentInvoker
    planner: AsyncAgentInvoker
    executor: AsyncAgentInvoker
    reporter: AsyncAgentInvoker
    classifier: FailureClassifier = default_failure_classifier

    def agent(self, name: AiOpsAgent) -> AsyncAgentInvoker:
        """The invoker for ``name``."""
        invoker: AsyncAgentInvoker = getattr(self, name.value)
        return invoker

    @classmethod
    def from_sync(cls, effects: AiOpsEffects) -> AsyncAiOpsEffects:
        """Wrap synchronous effects (called inline, on the event loop thread)."""
        return cls(
            supervisor=awaitable_agent(effects.supervisor),
            planner=awaitable_agent(effects.planner),
            executor=awaitable_agent(effects.executor),
            reporter=awaitable_agent(effects.reporter),
            classifier=effects.classifier,
        )


_AGENT_NAMES = tuple(agent.value for agent in AiOpsAgent)


def perform_aiops_effect(
    action: InvokeAiOpsAgent, effects: AiOpsEffects
) -> AgentReplied | AgentFailed:
    """Invoke one agent synchronously and package its outcome as a result.

    An agent that returns an awaitable is an async effect given to the sync
    driver: ``TypeError``, never a result (spec §15).
    """
    invoker = effects.agent(action.agent)
    return invoke_agent(
        invoker,
        action.input,
        action.config,
        effects.classifier,
        what=f"AiOpsEffects.{action.agent.value}",
    )


async def perform_aiops_effect_async(
    action: InvokeAiOpsAgent, effects: AsyncAiOpsEffects
) -> AgentReplied | AgentFailed:
    """Invoke one agent on the event loop and package its outcome as a result.

    An agent that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError``, never a result (spec §15).
    """
    return await ainvoke_agent(
        effects.agent(action.agent),
        action.input,
        action.config,
        effects.classifier,
        what=f"AsyncAiOpsEffects.{action.agent.value}",
    )


def run_aiops(
    request: AiOpsRequest, effects: AiOpsEffects, *, state: AiOpsState | None = None
) -> AiOpsState:
    """Run an AIOps request to END synchronously; returns the finished state.

    Pass ``state`` to resume a run saved earlier. ``state.result`` is the
    outcome; judge its report with :func:`evaluate_aiops_report`. Raises
    ``TypeError`` before the run starts when ``effects`` are not sync
    :class:`AiOpsEffects` of sync callables (spec §15).
    """
    check_effects_kind(
        effects,
        AiOpsEffects,
        _AGENT_NAMES,
        asynchronous=False,
        driver="run_aiops",
        other_driver="arun_aiops",
    )
    current = start_aiops(request) if state is None else state
    return drive(
        current,
        next_aiops_action,
        AiOpsFinished,
        functools.partial(perform_aiops_effect, effects=effects),
        advance_aiops,
    )


async def arun_aiops(
    request: AiOpsRequest, effects: AsyncAiOpsEffects, *, state: AiOpsState | None = None
) -> AiOpsState:
    """Run an AIOps request to END on the asyncio event loop; returns the finished state.

    Raises ``TypeError`` before the run starts when ``effects`` are not
    :class:`AsyncAiOpsEffects` of ``async`` callables (spec §15).
    """
    check_effects_kind(
        effects,
        AsyncAiOpsEffects,
        _AGENT_NAMES,
        asynchronous=True,
        driver="arun_aiops",
        other_driver="run_aiops",
    )
    current = start_aiops(request) if state is None else state
    return await adrive(
        current,
        next_aiops_action,
        AiOpsFinished,
        functools.partial(perform_aiops_effect_async, effects=effects),
        advance_aiops,
    )


def evaluate_aiops_run(
    state: AiOpsState,
    ledger: ToolLedger | LedgerSource,
    *,
    rules: Sequence[AiOpsRule] = AIOPS_RULES,
) -> AiOpsRuleEvaluation | None:
    """``aiops_rule_evaluation`` of a finished run's report; None for a fallback.

    ``ledger`` may be the run's :class:`ToolRecorder` (its ledger is read
    now, at evaluation time, spec §13) or a :class:`ToolLedger`.

    The fallback report is deterministic text built from facts only; there
    is no agent report to judge. Raises :class:`MachineError` before END.
    """
    result = state.result
    if result.report is None:
        return None
    return evaluate_aiops_report(
        result.report, mode=result.mode, alerts=state.request.alerts, ledger=ledger, rules=rules
    )
