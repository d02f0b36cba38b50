"""Temporal adapter: the pure machine in a workflow, one activity per effect (extra ``temporal``).

:class:`DiagnosisWorkflow` keeps the request and the run journal (spec §12) —
nothing else. Each effect is one activity of :class:`DiagnosisActivities`,
which holds the host's :class:`Effects` (or :class:`AsyncEffects`) on the
worker and returns the *finished entry's facts*: the input hash and the
outcome the journal builder records (:func:`outcome_of` of what
:func:`perform_effect` returns — the agent's text or classified error, the
gatekeeper's raw result or error). The state is always the fold of the
request and those entries (:func:`fold_journal`); Temporal's own replay
re-runs the workflow code over the recorded activity results, and the fold is
pure, so every worker rebuilds the same state. The ``diagnosis_journal``
query returns the journal in its wire form, and it folds like any journal.

Retries belong to the core (spec §6.7, §10.4): it retries an LLM node with the
identical input, never the executor, never the gatekeeper. So every activity
runs with ``RetryPolicy(maximum_attempts=1)`` and never raises for an
effect's failure. What Temporal itself reports follows the resume rule of
§12:

* **a lost worker** — the activity missed its heartbeat timeout (the worker
  died or hung during the effect): a planner, verifier or composer call is
  sent again with the identical input *as the same attempt* (its entry stays
  ``started``; at most :data:`INTERRUPTED_RESENDS` times, then it is a
  ``non_retryable`` failure); an executor call is never sent again — it is a
  ``non_retryable`` failure ``interrupted: outcome unknown``
  (→ ``EXECUTOR_FAILED``), its tools may have run; a gatekeeper call is a
  gatekeeper error with the same message (→ ``GATEKEEPER_UNAVAILABLE``);
* **any other activity failure** (its start-to-close timeout, a cancelled
  activity): a ``non_retryable`` agent failure or a gatekeeper error,
  ``activity failed: …`` — nobody knows whether the call happened, so it
  fails closed.

Activities heartbeat while the effect runs (every ``heartbeat_interval``,
by default a third of the heartbeat timeout), so a SIGKILLed worker is
noticed within the heartbeat timeout (default 30 s), not at the
start-to-close timeout (default 10 minutes for agents).

A request is validated before anything is started
(:func:`start_diagnosis_workflow` raises :class:`PayloadError` /
:class:`ConfigError`), and a workflow whose input cannot be decoded fails
(a non-retryable ``ApplicationError``) instead of retrying its workflow task
forever.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from .. import (
    AsyncEffects,
    ConfigError,
    DiagnosisObserver,
    DiagnosisRequest,
    DiagnosisState,
    Effects,
    PayloadError,
    TraceEvent,
    from_wire,
    to_wire,
)
from ..aiops import AiOpsEffects, AiOpsObserver, AsyncAiOpsEffects
from ..journal import JournalRecorder, expected_call, journal_to_wire
from ..machine import (
    DEFAULT_MAX_QUESTION_CHARS,
    AgentName,
    CallGatekeeper,
    InvokeAgent,
    check_diagnosis_effects,
    check_diagnosis_request,
    start_diagnosis,
)
from ..protocol import describe_value
from ..tools import ToolRecorder, ToolsFactory
from ._engine import CHAT, EffectReport, announce, check_timedeltas, wire_object
from ._temporal_common import (
    DEFAULT_AGENT_TIMEOUT,
    DEFAULT_GATEKEEPER_TIMEOUT,
    DEFAULT_HEARTBEAT_TIMEOUT,
    INTERRUPTED_RESENDS,
    HeartbeatingActivities,
    create_worker,
    executing,
    run_effects,
    sandbox_runner,
    start_run,
)

__all__ = [
    "INTERRUPTED_RESENDS",
    "DiagnosisActivities",
    "DiagnosisWorkflow",
    "DiagnosisWorkflowInput",
    "create_diagnosis_worker",
    "execute_diagnosis",
    "start_diagnosis_workflow",
]

INVOKE_AGENT_ACTIVITY = "diagnosis_core.invoke_agent"
"""The activity name of an agent call."""
CALL_GATEKEEPER_ACTIVITY = "diagnosis_core.call_gatekeeper"
"""The activity name of a gatekeeper call."""
ANNOUNCE_EVENTS_ACTIVITY = "diagnosis_core.announce_events"
"""The local activity that tells a worker's observer of the trace events an effect appended."""
_DEFAULT_AGENT_TIMEOUT = DEFAULT_AGENT_TIMEOUT
_DEFAULT_GATEKEEPER_TIMEOUT = DEFAULT_GATEKEEPER_TIMEOUT
_DEFAULT_HEARTBEAT_TIMEOUT = DEFAULT_HEARTBEAT_TIMEOUT


# --- activities (worker side) -------------------------------------------------------


class DiagnosisActivities(HeartbeatingActivities[Effects | AsyncEffects, DiagnosisObserver]):
    """The effects of a worker, as the two activities :class:`DiagnosisWorkflow` calls.

    Register :attr:`activities` with the worker (or use
    :func:`create_diagnosis_worker`). Sync :class:`Effects` run in a thread so
    they never block the worker's event loop. While an effect runs, the
    activity heartbeats every ``heartbeat_interval`` — by default a third of
    the activity's heartbeat timeout, and never more than half of it — so a
    dead worker is noticed within the heartbeat timeout.
    """

    performing = CHAT.performing

    @staticmethod
    def check_effects(effects: Any, tools: ToolsFactory | None, where: str) -> None:
        """What the drivers refuse (:func:`~diagnosis_core.machine.check_diagnosis_effects`)."""
        check_diagnosis_effects(effects, where=where, tools=tools)

    @property
    def activities(self) -> Sequence[Callable[..., Any]]:
        """The activity callables to register with a :class:`Worker`."""
        return (self.invoke_agent, self.call_gatekeeper, self.announce_events)

    def _recorder(
        self, action: InvokeAgent | CallGatekeeper, tool_records: object
    ) -> ToolRecorder | None:
        """The run's recorder on this worker, seeded with the ledger of the workflow's journal."""
        if self.tools is None or tool_records is None:
            return None
        if not isinstance(tool_records, list):
            raise ApplicationError(
                f"tool_records: expected an array, got {type(tool_records).__name__}",
                type="JournalError",
                non_retryable=True,
            )
        run_id = action.config.run_id if isinstance(action, InvokeAgent) else action.run_id
        return self.tools(run_id, tool_records)

    async def _perform(
        self, action: InvokeAgent | CallGatekeeper, tool_records: object = None
    ) -> dict[str, Any]:
        """Run the effect in a task, heartbeating until it returns; the entry's facts."""
        recorder = self._recorder(action, tool_records)
        executor = isinstance(action, InvokeAgent) and action.agent is AgentName.EXECUTOR
        report = EffectReport(
            action, expected_call(action).input_sha256, self.observer,
            recorder if executor else None,
        )
        report.open(action.config if isinstance(action, InvokeAgent) else None)
        # outcome_of never raises: a reply that is not text, a gatekeeper result
        # that is not JSON are recorded as the journal records them (see _journal).
        return await self._performed(action, report)

    @activity.defn(name=INVOKE_AGENT_ACTIVITY)
    async def invoke_agent(
        self, action: dict[str, Any], tool_records: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Invoke one agent; the reply text or the classified error, as journal facts.

        ``tool_records`` (executor calls of a worker with ``tools``) are the
        §13 entries the run's journal holds: the recorder continues after them.
        """
        return await self._perform(from_wire(InvokeAgent, action), tool_records)

    @activity.defn(name=CALL_GATEKEEPER_ACTIVITY)
    async def call_gatekeeper(
        self, action: dict[str, Any], tool_records: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Call the gatekeeper once; its raw result or its error, as journal facts.

        ``tool_records`` are the §13 entries the run's journal holds, so the
        gatekeeper reads the run's ledger on whichever worker it runs.
        """
        return await self._perform(from_wire(CallGatekeeper, action), tool_records)

    @activity.defn(name=ANNOUNCE_EVENTS_ACTIVITY)
    async def announce_events(self, run: dict[str, Any], events: list[dict[str, Any]]) -> None:
        """Tell the observer of the trace events the workflow appended (a local activity).

        The workflow code never calls an observer: it runs again on every
        replay. It schedules this local activity after an effect whose
        activity reported an observer; a local activity's completion is
        recorded, so a replay never announces the events again.
        """
        announce(self.observer, run, events, TraceEvent)


# --- workflow ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DiagnosisWorkflowInput:
    """What :class:`DiagnosisWorkflow` runs: a request (wire form) and activity timeouts.

    ``agent_timeout_seconds`` / ``gatekeeper_timeout_seconds`` are the
    start-to-close timeouts of one agent / gatekeeper activity;
    ``heartbeat_timeout_seconds`` is how long an activity may go without a
    heartbeat before its worker counts as lost.
    """

    request: dict[str, Any]
    agent_timeout_seconds: float = _DEFAULT_AGENT_TIMEOUT.total_seconds()
    gatekeeper_timeout_seconds: float = _DEFAULT_GATEKEEPER_TIMEOUT.total_seconds()
    heartbeat_timeout_seconds: float = _DEFAULT_HEARTBEAT_TIMEOUT.total_seconds()

    @classmethod
    def of(
        cls,
        request: DiagnosisRequest | Mapping[str, Any],
        *,
        agent_timeout: timedelta = _DEFAULT_AGENT_TIMEOUT,
        gatekeeper_timeout: timedelta = _DEFAULT_GATEKEEPER_TIMEOUT,
        heartbeat_timeout: timedelta = _DEFAULT_HEARTBEAT_TIMEOUT,
        max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
    ) -> DiagnosisWorkflowInput:
        """The input for ``request``, validated exactly as the workflow will decode it.

        ``request`` is a :class:`DiagnosisRequest` or its wire form
        (:func:`to_wire`). Raises :class:`PayloadError` for a request that
        does not decode (``config.technical_retry_limit: 99 is outside the
        range 0..3``, ``question: missing``, an unknown key), and for what the
        drivers refuse (a question longer than ``max_question_chars``, a lone
        surrogate anywhere: :func:`~diagnosis_core.machine.check_diagnosis_request`),
        and :class:`ConfigError` for a timeout that is not a positive duration.
        """
        seconds = check_timedeltas(
            agent_timeout=agent_timeout,
            gatekeeper_timeout=gatekeeper_timeout,
            heartbeat_timeout=heartbeat_timeout,
        )
        wire = to_wire(request) if isinstance(request, DiagnosisRequest) else request
        check_diagnosis_request(
            _decode_request(wire),
            where="start_diagnosis_workflow",
            max_question_chars=max_question_chars,
        )
        assert isinstance(wire, Mapping)
        return cls(dict(wire), *seconds)


def _decode_request(data: object) -> DiagnosisRequest:
    """The request a workflow input's wire form stands for; strict.

    :func:`from_wire` ignores keys it does not know, so a misspelt
    ``confg`` would silently run with the default configuration; here every
    key of ``data`` must survive the round trip. Raises :class:`PayloadError`.
    """
    request: DiagnosisRequest = from_wire(DiagnosisRequest, data)
    unknown = _unknown_key(data, to_wire(request), "")
    if unknown is not None:
        raise PayloadError(unknown, "unknown key")
    return request


def _unknown_key(data: object, known: object, path: str) -> str | None:
    """The path of the first key of ``data`` that ``known`` (its re-encoding) lacks."""
    if isinstance(data, Mapping) and isinstance(known, Mapping):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in known:
                return where
            found = _unknown_key(value, known[key], where)
            if found is not None:
                return found
    elif isinstance(data, list | tuple) and isinstance(known, list | tuple):
        for index, (item, known_item) in enumerate(zip(data, known, strict=False)):
            found = _unknown_key(item, known_item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _timeouts_of(input: DiagnosisWorkflowInput) -> tuple[float, float, float]:
    values = (
        input.agent_timeout_seconds,
        input.gatekeeper_timeout_seconds,
        input.heartbeat_timeout_seconds,
    )
    for name, value in zip(
        ("agent_timeout_seconds", "gatekeeper_timeout_seconds", "heartbeat_timeout_seconds"),
        values,
        strict=True,
    ):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}: expected a number, got {type(value).__name__}")
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"{name}: expected a positive number, got {describe_value(value)}")
    return values


# TypeError is what Temporal's converter raises for an input it cannot decode
# into DiagnosisWorkflowInput (not an object, a missing request, a timeout that
# is not a number): retrying the workflow task could only repeat it, so it
# fails the workflow. The rest of the input is checked by the workflow itself.
_FAILURE_TYPES: Sequence[type[BaseException]] = (TypeError,)


@workflow.defn(name="DiagnosisWorkflow", failure_exception_types=_FAILURE_TYPES)
class DiagnosisWorkflow:
    """One diagnosis run; returns the finished :class:`DiagnosisState` in wire form.

    The workflow holds the request and the journal entries only; the state
    is their fold. An input that does not decode fails the workflow with a
    non-retryable ``ApplicationError`` of type ``DiagnosisInputError``.
    """

    @workflow.init
    def __init__(self, input: DiagnosisWorkflowInput) -> None:
        self._problem: str | None = None
        self._recorder: JournalRecorder | None = None
        self._state: DiagnosisState | None = None
        try:
            self._timeouts = _timeouts_of(input)
            request = _decode_request(input.request)
        except Exception as error:  # whatever the input is, the run is refused, never retried
            self._problem = f"{type(error).__name__}: {error}"
            return
        self._recorder = CHAT.recorder(request)
        self._state = start_diagnosis(request)

    def _refuse(self) -> ApplicationError:
        return ApplicationError(
            f"the workflow input is not a valid diagnosis input: {self._problem}",
            type="DiagnosisInputError",
            non_retryable=True,
        )

    @workflow.run
    async def run(self, input: DiagnosisWorkflowInput) -> dict[str, Any]:
        """Perform what the core asks for until it says :class:`Finished`."""
        if self._recorder is None or self._state is None:
            raise self._refuse()
        agent_seconds, gatekeeper_seconds, heartbeat_seconds = self._timeouts

        def activity_of(action: InvokeAgent | CallGatekeeper) -> tuple[str, float]:
            if isinstance(action, InvokeAgent):
                return INVOKE_AGENT_ACTIVITY, agent_seconds
            return CALL_GATEKEEPER_ACTIVITY, gatekeeper_seconds

        def on_state(state: DiagnosisState) -> None:
            self._state = state

        state = await run_effects(
            CHAT,
            self._recorder,
            self._state,
            activity_of=activity_of,
            heartbeat_seconds=heartbeat_seconds,
            announce_activity=ANNOUNCE_EVENTS_ACTIVITY,
            on_state=on_state,
        )
        return wire_object(state)

    @workflow.query(name="diagnosis_journal")
    def diagnosis_journal(self) -> dict[str, Any]:
        """The run's journal in wire form (:func:`journal_to_wire`); it folds to the state."""
        if self._recorder is None:
            raise self._refuse()
        return dict(journal_to_wire(self._recorder.journal))

    @workflow.query(name="diagnosis_state")
    def diagnosis_state(self) -> dict[str, Any]:
        """The run's current state (the journal's fold) in wire form, for dashboards."""
        if self._state is None:
            raise self._refuse()
        return wire_object(self._state)


# --- worker and client helpers -------------------------------------------------------


def diagnosis_workflow_runner() -> SandboxedWorkflowRunner:
    """The default sandbox, with the core and its libraries passed through."""
    return sandbox_runner()


def create_diagnosis_worker(
    client: Client,
    effects: Effects | AsyncEffects,
    *,
    task_queue: str,
    heartbeat_interval: timedelta | None = None,
    tools: ToolsFactory | None = None,
    observer: DiagnosisObserver | None = None,
    aiops_effects: AiOpsEffects | AsyncAiOpsEffects | None = None,
    aiops_observer: AiOpsObserver | None = None,
    **worker_options: Any,
) -> Worker:
    """A worker running :class:`DiagnosisWorkflow` and the activities of ``effects``.

    ``heartbeat_interval`` is how often a running effect heartbeats (see
    :class:`DiagnosisActivities`). ``tools`` (a
    :data:`~diagnosis_core.tools.ToolsFactory`, e.g. a
    :class:`~diagnosis_core.tools.RunRecorders`) gives each executor and
    gatekeeper activity the run's recorder, rebuilt from the ledger the
    workflow's journal holds: the executor's entry carries the tool calls
    of its call (spec §13) and a gatekeeper on any worker checks citations
    against the run's whole ledger. ``observer`` is told of each effect by
    the activity that performs it (see :class:`DiagnosisActivities`).
    ``aiops_effects`` makes the same worker serve the AIOps workflow too
    (:class:`~diagnosis_core.adapters.temporal_aiops.AiOpsWorkflow`, with
    the same ``tools`` and ``aiops_observer``). ``worker_options`` go to
    :class:`temporalio.worker.Worker` unchanged (``identity``,
    ``graceful_shutdown_timeout``, ``max_concurrent_activities`` …).
    """
    workflows: list[type] = [DiagnosisWorkflow]
    activities = list(
        DiagnosisActivities(
            effects, heartbeat_interval=heartbeat_interval, tools=tools, observer=observer
        ).activities
    )
    if aiops_effects is not None:
        from .temporal_aiops import AiOpsActivities, AiOpsWorkflow

        workflows.append(AiOpsWorkflow)
        activities.extend(
            AiOpsActivities(
                aiops_effects,
                heartbeat_interval=heartbeat_interval,
                tools=tools,
                observer=aiops_observer,
            ).activities
        )
    return create_worker(client, task_queue, workflows, activities, worker_options)


async def start_diagnosis_workflow(
    client: Client,
    request: DiagnosisRequest | Mapping[str, Any],
    *,
    task_queue: str,
    workflow_id: str | None = None,
    agent_timeout: timedelta = _DEFAULT_AGENT_TIMEOUT,
    gatekeeper_timeout: timedelta = _DEFAULT_GATEKEEPER_TIMEOUT,
    heartbeat_timeout: timedelta = _DEFAULT_HEARTBEAT_TIMEOUT,
    workflow_task_timeout: timedelta | None = None,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> WorkflowHandle[DiagnosisWorkflow, dict[str, Any]]:
    """Start a run; ``workflow_id`` defaults to ``diagnosis-<run id>``.

    ``request`` is a :class:`DiagnosisRequest` or its wire form. It is
    validated before anything reaches the server: :class:`PayloadError` for
    a request that does not decode, :class:`ConfigError` for a timeout that
    is not positive — and then no workflow is started. The timeouts are the
    start-to-close timeouts of one agent / gatekeeper activity, the
    heartbeat timeout of every activity, and Temporal's workflow task
    timeout (``None``: Temporal's default, 10 s) — how long a run waits for
    a workflow task its dead worker had taken before another worker gets it.
    A question longer than ``max_question_chars`` (default 100 000, as the
    drivers') or a lone surrogate anywhere in the request is a
    :class:`PayloadError`, and no workflow is started.
    """
    workflow_input = DiagnosisWorkflowInput.of(
        request,
        agent_timeout=agent_timeout,
        gatekeeper_timeout=gatekeeper_timeout,
        heartbeat_timeout=heartbeat_timeout,
        max_question_chars=max_question_chars,
    )
    return await start_run(
        client,
        DiagnosisWorkflow.run,
        workflow_input,
        run_id=workflow_input.request["run"]["run_id"],  # the request decoded: it is there
        prefix="diagnosis",
        task_queue=task_queue,
        workflow_id=workflow_id,
        workflow_task_timeout=workflow_task_timeout,
    )


execute_diagnosis = executing(
    start_diagnosis_workflow,
    DiagnosisState,
    "execute_diagnosis",
)
"""Run a request as a workflow and wait; the finished :class:`DiagnosisState`.

Takes exactly the arguments of :func:`start_diagnosis_workflow` and validates
like it (nothing is started for a request that is not valid).
"""
