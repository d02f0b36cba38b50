"""What the chat and AIOps Temporal adapters share (extra ``temporal``).

The activities' heartbeating, the one way an effect activity is called from
workflow code and what Temporal's failures of it mean (spec §12's resume
rule), the local activity that announces trace events, the workflow sandbox
and the worker's recovery options. Public ``diagnosis_core`` names only.

Determinism: the workflow-side helpers issue exactly the commands the two
workflows issued before they were shared (same activity names, arguments,
timeouts and retry policy), so existing histories replay unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, ClassVar, Generic, ParamSpec, TypeVar

import attrs
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from .. import ConfigError, JournalError, from_wire
from ..journal import INTERRUPTED_MESSAGE
from ..machine import describe_error
from ..tools import ToolsFactory
from ._engine import EffectReport, Flow, Performing, check_timedeltas, new_events, wire_object

T = TypeVar("T")
P = ParamSpec("P")
W = TypeVar("W")
I = TypeVar("I")  # noqa: E741 - a workflow's input type
EffectsT = TypeVar("EffectsT")
ObserverT = TypeVar("ObserverT")

INTERRUPTED_RESENDS = 3
"""How often an LLM call whose worker was lost is sent again (same attempt) before it fails."""

# The core is pure and deterministic; passing it through the sandbox keeps one
# copy of its classes (and of cattrs' generated hooks) for every workflow run.
PASSTHROUGH_MODULES = ("diagnosis_core", "attrs", "cattrs")
"""Modules the workflow sandbox passes through: the core is pure and deterministic."""

NO_TEMPORAL_RETRY = RetryPolicy(maximum_attempts=1)
DEFAULT_AGENT_TIMEOUT = timedelta(minutes=10)
DEFAULT_GATEKEEPER_TIMEOUT = timedelta(minutes=2)
DEFAULT_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
ANNOUNCE_TIMEOUT = timedelta(seconds=30)
# How long a workflow task waits on a worker's sticky queue before any worker
# of the task queue may take it (Temporal's default is 10 s). When a worker
# dies, the workflow task that reports its lost activity first goes to that
# worker's sticky queue; this bounds how long it waits there.
DEFAULT_STICKY_QUEUE_TIMEOUT = timedelta(seconds=3)
# Heartbeat interval when the activity has no heartbeat timeout (heartbeats
# still deliver cancellation to the activity).
FALLBACK_HEARTBEAT_SECONDS = 10.0


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The default sandbox, with the core and its libraries passed through."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    return SandboxedWorkflowRunner(restrictions=restrictions)


def recovery_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A worker's options with the sticky-queue timeout set (unless the host set it).

    Spec §12 asks that a run whose worker died goes on elsewhere; on
    Temporal that takes the activity's heartbeat timeout *plus* the time
    the next workflow task waits on the dead worker's sticky queue.
    """
    chosen = dict(options)
    timeout = chosen.setdefault(
        "sticky_queue_schedule_to_start_timeout", DEFAULT_STICKY_QUEUE_TIMEOUT
    )
    if not isinstance(timeout, timedelta) or not timeout > timedelta(0):
        raise ConfigError(
            f"sticky_queue_schedule_to_start_timeout: expected a positive timedelta, "
            f"got {timeout!r:.80}"
        )
    return chosen


def create_worker(
    client: Client,
    task_queue: str,
    workflows: list[type],
    activities: Sequence[Callable[..., Any]],
    options: Mapping[str, Any],
) -> Worker:
    """A worker of ``workflows`` and ``activities`` in the core's sandbox, with recovery options.

    ``options`` go to :class:`temporalio.worker.Worker` unchanged, but for the
    sticky-queue timeout this sets unless the host did (:func:`recovery_options`).
    """
    return Worker(
        client,
        task_queue=task_queue,
        workflows=workflows,
        activities=activities,
        workflow_runner=sandbox_runner(),
        **recovery_options(options),
    )


class HeartbeatingActivities(Generic[EffectsT, ObserverT]):
    """The common part of an effect-activity class: the worker's effects, tools and
    observer, and a running effect's heartbeat.

    Generic in the effects ``EffectsT`` and observer ``ObserverT`` of one workflow, so the
    chat and AIOps activity classes share this constructor and still type
    their ``effects`` and ``observer`` exactly.

    While an effect runs, the activity heartbeats every ``heartbeat_interval``
    — by default a third of the activity's heartbeat timeout, and never more
    than half of it — so a dead worker is noticed within the heartbeat timeout.
    """

    effects: EffectsT
    observer: ObserverT | None
    performing: ClassVar[Performing]
    """How the workflow performs an action (each subclass names its own)."""

    def __init__(
        self,
        effects: EffectsT,
        *,
        heartbeat_interval: timedelta | None = None,
        tools: ToolsFactory | None = None,
        observer: ObserverT | None = None,
    ) -> None:
        if heartbeat_interval is not None and not heartbeat_interval > timedelta(0):
            raise ConfigError(f"heartbeat_interval: expected > 0, got {heartbeat_interval}")
        # The drivers' own checks, before a worker exists or any activity runs.
        self.check_effects(effects, tools, type(self).__name__)
        self.effects = effects
        self.heartbeat_interval = heartbeat_interval
        self.tools = tools
        self.observer = observer

    @staticmethod
    def check_effects(effects: Any, tools: ToolsFactory | None, where: str) -> None:
        """Refuse what the workflow's drivers refuse in ``effects`` (``TypeError``).

        Each subclass calls its workflow's public check
        (:func:`~diagnosis_core.machine.check_diagnosis_effects`,
        :func:`~diagnosis_core.machine.check_aiops_effects`).
        """
        raise NotImplementedError

    def _interval(self) -> float:
        timeout = activity.info().heartbeat_timeout
        limit = timeout.total_seconds() / 2 if timeout else None
        if self.heartbeat_interval is not None:
            chosen = self.heartbeat_interval.total_seconds()
            return min(chosen, limit) if limit else chosen
        return limit * 2 / 3 if limit else FALLBACK_HEARTBEAT_SECONDS

    async def _performed(self, action: Any, report: EffectReport) -> dict[str, Any]:
        """Perform ``action`` with the worker's effects, heartbeating; ``report`` closed with it.

        ``observed`` is recorded in the history: the workflow then has
        this worker's observer told of the effect's trace events, on every
        replay alike.
        """
        result = await self._heartbeating(self.performing.awaitable(action, self.effects))
        return report.close(result, observed=True if self.observer is not None else None)

    async def _heartbeating(self, work: Awaitable[T]) -> T:
        """``work``'s result, heartbeating while it runs; cancelled with the activity."""
        effect = asyncio.ensure_future(work)
        interval = self._interval()
        try:
            while not (await asyncio.wait({effect}, timeout=interval))[0]:
                activity.heartbeat()
        except BaseException:  # cancelled: the effect goes with the activity
            effect.cancel()
            raise
        return effect.result()


def lost(error: ActivityError) -> bool:
    """True when the activity missed its heartbeat timeout: its worker is gone or hung."""
    cause = error.cause
    return isinstance(cause, TimeoutError) and cause.type is TimeoutType.HEARTBEAT


@attrs.frozen
class ActivityFailed:
    """What Temporal reported instead of an effect activity's facts: the §12 message."""

    message: str


async def call_effect_activity(
    name: str,
    arguments: list[Any],
    *,
    timeout_seconds: float,
    heartbeat_seconds: float,
    resendable: bool,
) -> dict[str, Any] | ActivityFailed:
    """Workflow code: the facts of one effect activity, or why there are none.

    A lost worker (heartbeat timeout) gets the call sent again with the
    identical input, as the same attempt, when ``resendable`` (spec §12: an
    LLM call), at most :data:`INTERRUPTED_RESENDS` times; otherwise the
    effect is ``interrupted: outcome unknown``. Any other failure is
    ``activity failed: …`` — nobody knows whether the call happened.
    """
    resends = 0
    while True:
        try:
            data: dict[str, Any] = await workflow.execute_activity(
                name,
                args=arguments,
                start_to_close_timeout=timedelta(seconds=timeout_seconds),
                heartbeat_timeout=timedelta(seconds=heartbeat_seconds),
                retry_policy=NO_TEMPORAL_RETRY,
                result_type=dict,
            )
        except ActivityError as error:
            if not lost(error):
                return ActivityFailed(f"activity failed: {describe_error(error.cause or error)}")
            if resendable and resends < INTERRUPTED_RESENDS:
                resends += 1  # the same attempt, the identical input
                continue
            return ActivityFailed(INTERRUPTED_MESSAGE)
        return data


async def run_effects(
    flow: Flow,
    recorder: Any,
    state: Any,
    *,
    activity_of: Callable[[Any], tuple[str, float]],
    heartbeat_seconds: float,
    announce_activity: str,
    on_state: Callable[[Any], None],
) -> Any:
    """Workflow code: perform what ``flow``'s machine asks for until it has finished.

    Each effect is the activity ``activity_of(action)`` names (with its
    start-to-close timeout in seconds); its facts, or the §12 outcome of
    what Temporal reported instead, finish the recorder's started entry and
    advance ``state`` by that one entry. ``on_state`` sees each new state
    (for the workflow's queries); an effect whose worker has an observer has
    its trace events announced by ``announce_activity``. Returns the final state.
    """
    machine = flow.machine
    run_wire = wire_object(recorder.journal.request.run)
    while not isinstance(action := machine.next_action(state), machine.finished_type):
        recorder.begin(action)
        expected = machine.expected_call(action)
        name, seconds = activity_of(action)
        arguments: list[Any] = [wire_object(action)]
        ledger = flow.ledger(expected.call, recorder.journal.entries)
        if ledger is not None:
            arguments.append(ledger)
        data = await call_effect_activity(
            name,
            arguments,
            timeout_seconds=seconds,
            heartbeat_seconds=heartbeat_seconds,
            resendable=machine.resent_on_resume(expected.call),
        )
        if isinstance(data, ActivityFailed):
            outcome, invocations, observed = flow.failed(expected.call, data.message), None, False
        else:
            try:
                outcome, invocations, observed = flow.recorded(data, expected)
            except JournalError as error:
                raise ApplicationError(
                    f"an activity returned what no worker of this core returns: {error}",
                    type="JournalError",
                    non_retryable=True,
                ) from None
        before = state
        state = flow.fold(recorder, state, outcome, invocations)
        on_state(state)
        if observed:
            await announce_events(announce_activity, run_wire, new_events(before, state))
    return state


async def announce_events(name: str, run: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Workflow code: have the worker's observer told of ``events`` (never raises).

    A local activity's completion is recorded, so a replay never announces
    the events again; an observer only watches, so whatever happens to it,
    the run goes on unchanged.
    """
    if not events:
        return
    with contextlib.suppress(ActivityError):
        await workflow.execute_local_activity(
            name,
            args=[run, events],
            start_to_close_timeout=ANNOUNCE_TIMEOUT,
            retry_policy=NO_TEMPORAL_RETRY,
        )


@contextlib.contextmanager
def in_run_trace(run_id: str) -> Iterator[None]:
    """Client code: start a run with the run's trace as the current context (spec §14).

    Temporal's ``TracingInterceptor`` parents its ``StartWorkflow`` span on
    the current context and carries it to every workflow and activity span;
    under the run's remote root (:func:`~diagnosis_core.adapters.otel.run_trace_context`,
    trace id derived from the run id) they land in the trace the observer's
    spans are in, on any worker. Without ``opentelemetry-api`` nothing is done.
    """
    try:
        from opentelemetry import context

        from .otel import run_trace_context
    except ImportError:
        yield
        return
    token = context.attach(run_trace_context(run_id))
    try:
        yield
    finally:
        context.detach(token)


async def start_run(
    client: Client,
    run: Callable[[W, I], Awaitable[dict[str, Any]]],
    workflow_input: I,
    *,
    run_id: str,
    prefix: str,
    task_queue: str,
    workflow_id: str | None,
    workflow_task_timeout: timedelta | None,
) -> WorkflowHandle[W, dict[str, Any]]:
    """Client code: start a validated run (id ``<prefix>-<run id>`` unless ``workflow_id``).

    ``workflow_task_timeout`` is Temporal's workflow task timeout (its
    default, 10 s, when ``None``): how long a workflow task a worker has
    taken may go unanswered before another worker gets it — what a run
    waits for when its worker died in the middle of one (spec §12: the run
    goes on elsewhere). Checked before anything reaches the server.
    """
    task_timeout = None
    if workflow_task_timeout is not None:
        check_timedeltas(workflow_task_timeout=workflow_task_timeout)
        task_timeout = workflow_task_timeout
    with in_run_trace(run_id):
        return await client.start_workflow(
            run,
            workflow_input,
            id=workflow_id if workflow_id is not None else f"{prefix}-{run_id}",
            task_queue=task_queue,
            task_timeout=task_timeout,
        )


def executing(
    start: Callable[P, Awaitable[WorkflowHandle[Any, dict[str, Any]]]],
    state_type: type[T],
    name: str,
) -> Callable[P, Coroutine[Any, Any, T]]:
    """The ``execute_…`` twin of a ``start_…`` function: same arguments, waits for the state.

    One signature, stated once (on ``start``): the waiting variant cannot
    drift from it, and validates exactly as it does.
    """

    async def execute(*args: P.args, **kwargs: P.kwargs) -> T:
        handle = await start(*args, **kwargs)
        state: T = from_wire(state_type, await handle.result())
        return state

    execute.__name__ = execute.__qualname__ = name
    execute.__doc__ = (
        f"Run a request as a workflow and wait; the finished :class:`{state_type.__name__}`.\n\n"
        f"Takes exactly the arguments of :func:`{start.__name__}` and validates like it "
        "(nothing is started for a request that is not valid)."
    )
    execute.__module__ = start.__module__
    # What help() and inspect show: start's parameters, returning the state.
    signature = inspect.signature(start).replace(return_annotation=state_type.__name__)
    vars(execute)["__signature__"] = signature
    return execute
