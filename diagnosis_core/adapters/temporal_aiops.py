"""Temporal adapter for the AIOps flow: the machine in a workflow, one activity per agent call.

Needs the extra ``temporal``. The same construction as the chat workflow
(:mod:`diagnosis_core.adapters.temporal`), from public names only:
:class:`AiOpsWorkflow` keeps the request and the ``aiops_journal_v1`` journal
and nothing else; each agent call is one ``diagnosis_core.invoke_aiops_agent``
activity returning the finished entry's facts (input hash, outcome, an
executor's tool calls); every activity runs with ``maximum_attempts=1`` —
retries belong to the core.

**A lost worker** (the activity missed its heartbeat timeout) is settled by the
AIOps resume rule (``AIOPS_WORKFLOW.resent_on_resume``): a supervisor, planner or
reporter call is sent again as the same attempt (at most
:data:`~diagnosis_core.adapters.temporal.INTERRUPTED_RESENDS` times), an
executor call is recorded as failed, ``interrupted: outcome unknown``, and
never sent again. Any other activity failure is a ``non_retryable`` failure
``activity failed: …``.

:func:`create_aiops_worker` registers the workflow and its activities; or
pass ``aiops_effects=`` to
:func:`~diagnosis_core.adapters.temporal.create_diagnosis_worker` so one worker
serves both workflows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from .. import from_wire
from ..aiops import (
    AiOpsEffects,
    AiOpsObserver,
    AiOpsRequest,
    AiOpsState,
    AiOpsTraceEvent,
    AsyncAiOpsEffects,
)
from ..journal import AiOpsJournalRecorder, aiops_expected_call, journal_to_wire
from ..machine import InvokeAiOpsAgent, check_aiops_effects, check_aiops_request, start_aiops
from ..tools import ToolsFactory
from ._engine import AIOPS, EffectReport, announce, check_timedeltas, wire_object
from ._temporal_common import (
    DEFAULT_AGENT_TIMEOUT,
    DEFAULT_HEARTBEAT_TIMEOUT,
    HeartbeatingActivities,
    create_worker,
    executing,
    run_effects,
    start_run,
)

__all__ = [
    "AiOpsActivities",
    "AiOpsWorkflow",
    "AiOpsWorkflowInput",
    "create_aiops_worker",
    "execute_aiops",
    "start_aiops_workflow",
]

INVOKE_AIOPS_AGENT_ACTIVITY = "diagnosis_core.invoke_aiops_agent"
"""The activity name of an AIOps agent call."""
ANNOUNCE_AIOPS_EVENTS_ACTIVITY = "diagnosis_core.announce_aiops_events"
"""The local activity that tells a worker's AIOps observer of the events a call appended."""

_DEFAULT_AGENT_TIMEOUT = DEFAULT_AGENT_TIMEOUT
_DEFAULT_HEARTBEAT_TIMEOUT = DEFAULT_HEARTBEAT_TIMEOUT


class AiOpsActivities(HeartbeatingActivities[AiOpsEffects | AsyncAiOpsEffects, AiOpsObserver]):
    """The AIOps effects of a worker, as the activities :class:`AiOpsWorkflow` calls.

    Sync effects run in a thread; while an agent runs, the activity
    heartbeats every ``heartbeat_interval`` (default: a third of the
    heartbeat timeout). ``tools`` and ``observer`` are as for the chat
    workflow's :class:`~diagnosis_core.adapters.temporal.DiagnosisActivities`.
    """

    performing = AIOPS.performing

    @staticmethod
    def check_effects(effects: Any, tools: ToolsFactory | None, where: str) -> None:
        """What the drivers refuse (:func:`~diagnosis_core.machine.check_aiops_effects`)."""
        check_aiops_effects(effects, where=where, tools=tools)

    @property
    def activities(self) -> Sequence[Callable[..., Any]]:
        """The activity callables to register with a :class:`Worker`."""
        return (self.invoke_aiops_agent, self.announce_aiops_events)

    @activity.defn(name=INVOKE_AIOPS_AGENT_ACTIVITY)
    async def invoke_aiops_agent(
        self, action_wire: dict[str, Any], tool_records: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Invoke one AIOps agent; its reply or classified error, as journal facts."""
        action: InvokeAiOpsAgent = from_wire(InvokeAiOpsAgent, action_wire)
        recorder = None
        if self.tools is not None and tool_records is not None:
            recorder = self.tools(action.config.run_id, tool_records)
        report = EffectReport(
            action, aiops_expected_call(action).input_sha256, self.observer, recorder
        )
        report.open(action.config)
        return await self._performed(action, report)

    @activity.defn(name=ANNOUNCE_AIOPS_EVENTS_ACTIVITY)
    async def announce_aiops_events(
        self, run: dict[str, Any], events: list[dict[str, Any]]
    ) -> None:
        """Tell the observer of the trace events the workflow appended (a local activity)."""
        announce(self.observer, run, events, AiOpsTraceEvent)


@dataclasses.dataclass(frozen=True)
class AiOpsWorkflowInput:
    """What :class:`AiOpsWorkflow` runs: an AIOps request (wire form) and activity timeouts."""

    request: dict[str, Any]
    agent_timeout_seconds: float = _DEFAULT_AGENT_TIMEOUT.total_seconds()
    heartbeat_timeout_seconds: float = _DEFAULT_HEARTBEAT_TIMEOUT.total_seconds()


def _decode_request(data: object) -> AiOpsRequest:
    request: AiOpsRequest = from_wire(AiOpsRequest, data)
    return request


@workflow.defn(name="AiOpsWorkflow", failure_exception_types=(TypeError,))
class AiOpsWorkflow:
    """One AIOps run; returns the finished :class:`AiOpsState` in wire form."""

    @workflow.init
    def __init__(self, input: AiOpsWorkflowInput) -> None:
        self._problem: str | None = None
        self._recorder: AiOpsJournalRecorder | None = None
        try:
            self._request = _decode_request(input.request)
        except Exception as error:  # refused, never retried
            self._problem = f"{type(error).__name__}: {error}"
            return
        self._recorder = AIOPS.recorder(self._request)

    @workflow.run
    async def run(self, input: AiOpsWorkflowInput) -> dict[str, Any]:
        """Call the agent the core asks for until it says :class:`AiOpsFinished`."""
        recorder = self._recorder
        if recorder is None:
            raise ApplicationError(
                f"the workflow input is not a valid AIOps input: {self._problem}",
                type="DiagnosisInputError",
                non_retryable=True,
            )
        # The AIOps resume rule says whether a call whose worker was lost is
        # sent again (never the executor: its tools may have run).
        state = await run_effects(
            AIOPS,
            recorder,
            start_aiops(self._request),
            activity_of=lambda action: (INVOKE_AIOPS_AGENT_ACTIVITY, input.agent_timeout_seconds),
            heartbeat_seconds=input.heartbeat_timeout_seconds,
            announce_activity=ANNOUNCE_AIOPS_EVENTS_ACTIVITY,
            on_state=lambda state: None,
        )
        return wire_object(state)

    @workflow.query(name="aiops_journal")
    def aiops_journal(self) -> dict[str, Any]:
        """The run's journal in wire form (``aiops_journal_v1``)."""
        if self._recorder is None:
            raise ApplicationError("no run", type="DiagnosisInputError", non_retryable=True)
        return dict(journal_to_wire(self._recorder.journal))


def create_aiops_worker(
    client: Client,
    effects: AiOpsEffects | AsyncAiOpsEffects,
    *,
    task_queue: str,
    heartbeat_interval: timedelta | None = None,
    tools: ToolsFactory | None = None,
    observer: AiOpsObserver | None = None,
    **worker_options: Any,
) -> Worker:
    """A worker running :class:`AiOpsWorkflow` and the activities of ``effects``."""
    activities = AiOpsActivities(
        effects, heartbeat_interval=heartbeat_interval, tools=tools, observer=observer
    ).activities
    return create_worker(client, task_queue, [AiOpsWorkflow], activities, worker_options)


async def start_aiops_workflow(
    client: Client,
    request: AiOpsRequest,
    *,
    task_queue: str,
    workflow_id: str | None = None,
    agent_timeout: timedelta = _DEFAULT_AGENT_TIMEOUT,
    heartbeat_timeout: timedelta = _DEFAULT_HEARTBEAT_TIMEOUT,
    workflow_task_timeout: timedelta | None = None,
) -> WorkflowHandle[AiOpsWorkflow, dict[str, Any]]:
    """Start an AIOps run; ``workflow_id`` defaults to ``aiops-<run id>``.

    ``request`` is validated before anything reaches the server (``TypeError``
    for something that is not an :class:`AiOpsRequest`, :class:`ConfigError`
    for a timeout that is not positive, :class:`PayloadError` for a lone
    surrogate anywhere in the request). ``workflow_task_timeout`` is as for
    :func:`~diagnosis_core.adapters.temporal.start_diagnosis_workflow`.
    """
    if not isinstance(request, AiOpsRequest):
        raise TypeError(f"request: expected an AiOpsRequest, got {type(request).__name__}")
    check_aiops_request(request, where="start_aiops_workflow")
    agent_seconds, heartbeat_seconds = check_timedeltas(
        agent_timeout=agent_timeout, heartbeat_timeout=heartbeat_timeout
    )
    return await start_run(
        client,
        AiOpsWorkflow.run,
        AiOpsWorkflowInput(wire_object(request), agent_seconds, heartbeat_seconds),
        run_id=request.run.run_id,
        prefix="aiops",
        task_queue=task_queue,
        workflow_id=workflow_id,
        workflow_task_timeout=workflow_task_timeout,
    )


execute_aiops = executing(
    start_aiops_workflow,
    AiOpsState,
    "execute_aiops",
)
"""Run an AIOps request as a workflow and wait; the finished :class:`AiOpsState`.

Takes exactly the arguments of :func:`start_aiops_workflow`.
"""
