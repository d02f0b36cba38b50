"""The two built-in drivers: a synchronous loop and an asyncio loop.

A driver only performs the effect the machine asks for and feeds the result
back; it decides nothing. Exceptions of an effect become results here (agents:
classified by the run's :class:`FailureClassifier`; the gatekeeper: always
``GatekeeperFailed``). ``BaseException``s that are not ``Exception`` (task
cancellation, ``KeyboardInterrupt``) propagate untouched.
"""

from __future__ import annotations

from ._classify import classify_failure
from ._effects import AsyncEffects, Effects
from ._machine import (
    AgentFailed,
    AgentReplied,
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisState,
    EffectResult,
    Finished,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
    advance,
    next_action,
    start_diagnosis,
)

__all__ = [
    "arun_diagnosis",
    "describe_error",
    "perform_effect",
    "perform_effect_async",
    "run_diagnosis",
]


def describe_error(error: BaseException) -> str:
    """``TypeName: message`` for the trace; never raises (``__str__`` may)."""
    name = type(error).__name__
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    return f"{name}: {message}" if message else name


def perform_effect(action: InvokeAgent | CallGatekeeper, effects: Effects) -> EffectResult:
    """Perform one effect synchronously and package its outcome as a result."""
    if isinstance(action, InvokeAgent):
        try:
            text = effects.agent(action.agent)(action.input, action.config)
        except Exception as error:
            kind = classify_failure(effects.classifier, error)
            return AgentFailed(kind, describe_error(error))
        return AgentReplied(text)
    try:
        raw = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(describe_error(error))
    return GatekeeperReturned(raw)


async def perform_effect_async(
    action: InvokeAgent | CallGatekeeper, effects: AsyncEffects
) -> EffectResult:
    """Perform one effect on the event loop and package its outcome as a result."""
    if isinstance(action, InvokeAgent):
        try:
            text = await effects.agent(action.agent)(action.input, action.config)
        except Exception as error:
            kind = classify_failure(effects.classifier, error)
            return AgentFailed(kind, describe_error(error))
        return AgentReplied(text)
    try:
        raw = await effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(describe_error(error))
    return GatekeeperReturned(raw)


def run_diagnosis(
    request: DiagnosisRequest, effects: Effects, *, state: DiagnosisState | None = None
) -> DiagnosisState:
    """Run to END synchronously; returns the finished state.

    Pass ``state`` to resume a run saved earlier. ``state.result`` is the
    outcome, :func:`build_trace_report` the audit.
    """
    current = start_diagnosis(request) if state is None else state
    while True:
        action = next_action(current)
        if isinstance(action, Finished):
            return current
        current = advance(current, perform_effect(action, effects))


async def arun_diagnosis(
    request: DiagnosisRequest, effects: AsyncEffects, *, state: DiagnosisState | None = None
) -> DiagnosisState:
    """Run to END on the asyncio event loop; returns the finished state."""
    current = start_diagnosis(request) if state is None else state
    while True:
        action = next_action(current)
        if isinstance(action, Finished):
            return current
        current = advance(current, await perform_effect_async(action, effects))
