"""The two built-in drivers: a synchronous loop and an asyncio loop.

A driver only performs the effect the machine asks for and feeds the result
back; it decides nothing. Exceptions of an effect become results here (agents:
classified by the run's :class:`FailureClassifier`; the gatekeeper: always
``GatekeeperFailed``). ``BaseException``s that are not ``Exception`` (task
cancellation, ``KeyboardInterrupt``) propagate untouched.
"""

from __future__ import annotations

import functools

from ._effects import (
    AsyncEffects,
    Effects,
    check_effects_kind,
    reject_awaitable,
    require_awaitable,
)
from ._loop import adrive, ainvoke_agent, describe_error, drive, invoke_agent
from ._machine import (
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


_SYNC = "the sync driver"
_ASYNC = "the asyncio driver"
_EFFECT_NAMES = ("planner", "executor", "verifier", "composer", "gatekeeper")


def perform_effect(action: InvokeAgent | CallGatekeeper, effects: Effects) -> EffectResult:
    """Perform one effect synchronously and package its outcome as a result.

    An effect that returns an awaitable is an async effect given to the sync
    driver: ``TypeError``, never a result (spec §15).
    """
    if isinstance(action, InvokeAgent):
        return invoke_agent(
            effects.agent(action.agent),
            action.input,
            action.config,
            effects.classifier,
            what=f"Effects.{action.agent.value}",
        )
    try:
        raw = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(describe_error(error))
    reject_awaitable(raw, "Effects.gatekeeper", _SYNC)
    return GatekeeperReturned(raw)


async def perform_effect_async(
    action: InvokeAgent | CallGatekeeper, effects: AsyncEffects
) -> EffectResult:
    """Perform one effect on the event loop and package its outcome as a result.

    An effect that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError``, never a result (spec §15).
    """
    if isinstance(action, InvokeAgent):
        return await ainvoke_agent(
            effects.agent(action.agent),
            action.input,
            action.config,
            effects.classifier,
            what=f"AsyncEffects.{action.agent.value}",
        )
    try:
        called = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(describe_error(error))
    result = require_awaitable(called, "AsyncEffects.gatekeeper", _ASYNC)
    try:
        raw = await result
    except Exception as error:
        return GatekeeperFailed(describe_error(error))
    return GatekeeperReturned(raw)


def run_diagnosis(
    request: DiagnosisRequest, effects: Effects, *, state: DiagnosisState | None = None
) -> DiagnosisState:
    """Run to END synchronously; returns the finished state.

    Pass ``state`` to resume a run saved earlier. ``state.result`` is the
    outcome, :func:`build_trace_report` the audit. Raises ``TypeError`` before
    the run starts when ``effects`` are not sync :class:`Effects` of sync
    callables (spec §15).
    """
    check_effects_kind(
        effects,
        Effects,
        _EFFECT_NAMES,
        asynchronous=False,
        driver="run_diagnosis",
        other_driver="arun_diagnosis",
    )
    current = start_diagnosis(request) if state is None else state
    perform = functools.partial(perform_effect, effects=effects)
    return drive(current, next_action, Finished, perform, advance)


async def arun_diagnosis(
    request: DiagnosisRequest, effects: AsyncEffects, *, state: DiagnosisState | None = None
) -> DiagnosisState:
    """Run to END on the asyncio event loop; returns the finished state.

    Raises ``TypeError`` before the run starts when ``effects`` are not
    :class:`AsyncEffects` of ``async`` callables (spec §15).
    """
    check_effects_kind(
        effects,
        AsyncEffects,
        _EFFECT_NAMES,
        asynchronous=True,
        driver="arun_diagnosis",
        other_driver="run_diagnosis",
    )
    current = start_diagnosis(request) if state is None else state
    perform = functools.partial(perform_effect_async, effects=effects)
    return await adrive(current, next_action, Finished, perform, advance)
