"""Temporal adapter: the pure machine in a workflow, one activity per effect (extra ``temporal``).

:class:`DiagnosisWorkflow` runs :func:`start_diagnosis`, :func:`next_action`
and :func:`advance` inside the workflow: they are pure, so Temporal's replay
rebuilds the run from history on any worker. Each effect is one activity of
:class:`DiagnosisActivities`, which holds the host's :class:`Effects` (or
:class:`AsyncEffects`) on the worker.

Retries belong to the core (spec §6.7, §10.4): it retries an LLM node with the
identical input, never the executor, never the gatekeeper. So every activity
runs with ``RetryPolicy(maximum_attempts=1)`` and never raises for an effect's
failure: it returns the classified :class:`AgentFailed` /
:class:`GatekeeperFailed` as wire data, exactly as :func:`perform_effect`
builds it. An activity that Temporal itself reports failed (a timeout, a
worker that died mid-call) is handed to the core as a failure too — an agent
failure of kind ``NON_RETRYABLE`` (nobody knows whether the call happened, so
it fails closed), or a gatekeeper failure — and never re-run behind its back.

Actions, results, the request and the final state cross the Temporal
boundary as the package's wire JSON (:func:`to_wire` / :func:`from_wire`).
An effect result that is not JSON data (a reply that is not a string, a
gatekeeper result holding a set, NaN or a non-dict mapping) cannot cross
unchanged; it is reported as if the effect had raised, so it fails closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from .._classify import classify_failure
from .._converter import from_wire, to_wire
from .._drivers import describe_error, perform_effect, perform_effect_async
from .._effects import AsyncEffects, Effects
from .._enums import FailureKind
from .._errors import MachineError
from .._json import canonical_json
from .._machine import (
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
    "CALL_GATEKEEPER_ACTIVITY",
    "INVOKE_AGENT_ACTIVITY",
    "PASSTHROUGH_MODULES",
    "DiagnosisActivities",
    "DiagnosisWorkflow",
    "DiagnosisWorkflowInput",
    "create_diagnosis_worker",
    "diagnosis_workflow_runner",
    "execute_diagnosis",
    "start_diagnosis_workflow",
]

INVOKE_AGENT_ACTIVITY = "diagnosis_core.invoke_agent"
"""The activity name of an agent call."""
CALL_GATEKEEPER_ACTIVITY = "diagnosis_core.call_gatekeeper"
"""The activity name of a gatekeeper call."""

# The core is pure and deterministic; passing it through the sandbox keeps one
# copy of its classes (and of cattrs' generated hooks) for every workflow run.
PASSTHROUGH_MODULES = ("diagnosis_core", "attrs", "cattrs")
"""Modules the workflow sandbox passes through: the core is pure and deterministic."""

_NO_TEMPORAL_RETRY = RetryPolicy(maximum_attempts=1)

# Effect results cross the activity boundary as {"result": tag, "wire": to_wire(result)}.
_RESULT_TAGS: dict[type[Any], str] = {
    AgentReplied: "agent_replied",
    AgentFailed: "agent_failed",
    GatekeeperReturned: "gatekeeper_returned",
    GatekeeperFailed: "gatekeeper_failed",
}
_RESULT_TYPES = {tag: cls for cls, tag in _RESULT_TAGS.items()}


def _encode_result(result: EffectResult) -> dict[str, Any]:
    return {"result": _RESULT_TAGS[type(result)], "wire": to_wire(result)}


def _decode_result(data: object) -> EffectResult:
    """An activity's result; a malformed one is a deployment bug and fails the workflow task."""
    if not isinstance(data, dict) or data.get("result") not in _RESULT_TYPES:
        raise MachineError(f"not a diagnosis activity result: {data!r:.200}")
    decoded: EffectResult = from_wire(_RESULT_TYPES[data["result"]], data.get("wire"))
    return decoded


# --- activities (worker side) -------------------------------------------------------


class DiagnosisActivities:
    """The effects of a worker, as the two activities :class:`DiagnosisWorkflow` calls.

    Register :attr:`activities` with the worker (or use
    :func:`create_diagnosis_worker`). Sync :class:`Effects` run in a thread so
    they never block the worker's event loop.
    """

    def __init__(self, effects: Effects | AsyncEffects) -> None:
        self.effects = effects

    @property
    def activities(self) -> Sequence[Callable[..., Any]]:
        """The activity callables to register with a :class:`Worker`."""
        return (self.invoke_agent, self.call_gatekeeper)

    async def _perform(self, action: InvokeAgent | CallGatekeeper) -> EffectResult:
        if isinstance(self.effects, AsyncEffects):
            return await perform_effect_async(action, self.effects)
        return await asyncio.to_thread(perform_effect, action, self.effects)

    def _deliverable(self, result: EffectResult) -> dict[str, Any]:
        """The wire form of ``result``, or — if it cannot cross the boundary — a failure.

        A reply that is not text, or a gatekeeper result that is not JSON,
        cannot be sent to the workflow unchanged; it is reported as if the
        effect had raised (classified by the worker's classifier), so the
        run fails closed instead of the activity failing.
        """
        encoded = _encode_result(result)
        try:
            canonical_json(encoded)
            from_wire(type(result), encoded["wire"])
        except Exception:
            problem = TypeError(
                f"the {type(result).__name__} value cannot be sent as JSON to the workflow"
            )
            if isinstance(result, AgentReplied | AgentFailed):
                kind = classify_failure(self.effects.classifier, problem)
                return _encode_result(AgentFailed(kind, describe_error(problem)))
            return _encode_result(GatekeeperFailed(describe_error(problem)))
        return encoded

    @activity.defn(name=INVOKE_AGENT_ACTIVITY)
    async def invoke_agent(self, action: dict[str, Any]) -> dict[str, Any]:
        """Invoke one agent; returns ``AgentReplied`` or the classified ``AgentFailed``."""
        return self._deliverable(await self._perform(from_wire(InvokeAgent, action)))

    @activity.defn(name=CALL_GATEKEEPER_ACTIVITY)
    async def call_gatekeeper(self, action: dict[str, Any]) -> dict[str, Any]:
        """Call the gatekeeper once; returns ``GatekeeperReturned`` or ``GatekeeperFailed``."""
        return self._deliverable(await self._perform(from_wire(CallGatekeeper, action)))


# --- workflow ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DiagnosisWorkflowInput:
    """What :class:`DiagnosisWorkflow` runs: a request (wire form) and activity timeouts."""

    request: dict[str, Any]
    agent_timeout_seconds: float = 600.0
    gatekeeper_timeout_seconds: float = 120.0

    @classmethod
    def of(
        cls,
        request: DiagnosisRequest,
        *,
        agent_timeout: timedelta = timedelta(minutes=10),
        gatekeeper_timeout: timedelta = timedelta(minutes=2),
    ) -> DiagnosisWorkflowInput:
        """The input for ``request``; the timeouts bound one activity attempt each."""
        wire = to_wire(request)
        assert isinstance(wire, dict)
        return cls(wire, agent_timeout.total_seconds(), gatekeeper_timeout.total_seconds())


@workflow.defn(name="DiagnosisWorkflow")
class DiagnosisWorkflow:
    """One diagnosis run; returns the finished :class:`DiagnosisState` in wire form."""

    @workflow.init
    def __init__(self, input: DiagnosisWorkflowInput) -> None:
        self._state = start_diagnosis(from_wire(DiagnosisRequest, input.request))

    @workflow.run
    async def run(self, input: DiagnosisWorkflowInput) -> dict[str, Any]:
        """Perform what the core asks for until it says :class:`Finished`."""
        state = self._state
        while not isinstance(action := next_action(state), Finished):
            state = advance(state, await self._perform(action, input))
            self._state = state
        wire = to_wire(state)
        assert isinstance(wire, dict)
        return wire

    @workflow.query(name="diagnosis_state")
    def diagnosis_state(self) -> dict[str, Any]:
        """The run's current state in wire form, for dashboards and debugging."""
        wire = to_wire(self._state)
        assert isinstance(wire, dict)
        return wire

    async def _perform(
        self, action: InvokeAgent | CallGatekeeper, input: DiagnosisWorkflowInput
    ) -> EffectResult:
        if isinstance(action, InvokeAgent):
            name, seconds = INVOKE_AGENT_ACTIVITY, input.agent_timeout_seconds
        else:
            name, seconds = CALL_GATEKEEPER_ACTIVITY, input.gatekeeper_timeout_seconds
        try:
            data = await workflow.execute_activity(
                name,
                to_wire(action),
                start_to_close_timeout=timedelta(seconds=seconds),
                retry_policy=_NO_TEMPORAL_RETRY,
                result_type=dict,
            )
        except ActivityError as error:
            message = f"activity failed: {describe_error(error.cause or error)}"
            if isinstance(action, InvokeAgent):
                return AgentFailed(FailureKind.NON_RETRYABLE, message)
            return GatekeeperFailed(message)
        return _decode_result(data)


# --- worker and client helpers -------------------------------------------------------


def diagnosis_workflow_runner() -> SandboxedWorkflowRunner:
    """The default sandbox, with the core and its libraries passed through."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    return SandboxedWorkflowRunner(restrictions=restrictions)


def create_diagnosis_worker(
    client: Client,
    effects: Effects | AsyncEffects,
    *,
    task_queue: str,
    **worker_options: Any,
) -> Worker:
    """A worker running :class:`DiagnosisWorkflow` and the activities of ``effects``.

    ``worker_options`` go to :class:`temporalio.worker.Worker` unchanged
    (``identity``, ``graceful_shutdown_timeout``, ``max_concurrent_activities`` …).
    """
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[DiagnosisWorkflow],
        activities=DiagnosisActivities(effects).activities,
        workflow_runner=diagnosis_workflow_runner(),
        **worker_options,
    )


async def start_diagnosis_workflow(
    client: Client,
    request: DiagnosisRequest,
    *,
    task_queue: str,
    workflow_id: str | None = None,
    agent_timeout: timedelta = timedelta(minutes=10),
    gatekeeper_timeout: timedelta = timedelta(minutes=2),
) -> WorkflowHandle[DiagnosisWorkflow, dict[str, Any]]:
    """Start a run; ``workflow_id`` defaults to ``diagnosis-<run id>``."""
    workflow_input = DiagnosisWorkflowInput.of(
        request, agent_timeout=agent_timeout, gatekeeper_timeout=gatekeeper_timeout
    )
    return await client.start_workflow(
        DiagnosisWorkflow.run,
        workflow_input,
        id=workflow_id if workflow_id is not None else f"diagnosis-{request.run.run_id}",
        task_queue=task_queue,
    )


async def execute_diagnosis(
    client: Client,
    request: DiagnosisRequest,
    *,
    task_queue: str,
    workflow_id: str | None = None,
    agent_timeout: timedelta = timedelta(minutes=10),
    gatekeeper_timeout: timedelta = timedelta(minutes=2),
) -> DiagnosisState:
    """Run ``request`` as a workflow and wait; the finished :class:`DiagnosisState`."""
    handle = await start_diagnosis_workflow(
        client,
        request,
        task_queue=task_queue,
        workflow_id=workflow_id,
        agent_timeout=agent_timeout,
        gatekeeper_timeout=gatekeeper_timeout,
    )
    return from_wire(DiagnosisState, await handle.result())
