"""The sans-IO state machine of the AIOps flow (spec §11, in the style of §2 and §7).

Rules of this file: everything that changes the state of an AIOps run lives
here, and every routing decision is read from :data:`AIOPS_ROUTING_TABLE`.
The machine never performs an effect: :func:`next_aiops_action` says which
agent to invoke with which exact input (:class:`InvokeAiOpsAgent`) or that
the run is :class:`AiOpsFinished`; :func:`advance_aiops` takes the agent's
:class:`AgentReplied` / :class:`AgentFailed` and returns the next state. The
fallback is a pure node that runs inside :func:`advance_aiops`.

Counters (supervisor steps, attempts, the no-progress streak) are changed
only here. A technical retry re-sends the input string stored in the state,
byte for byte (the kernel's :class:`AgentSteps`, fed this flow's data in
``_STEPS``, takes the steps both machines share). Progress is measured by tool
invocation ids: an executor step makes progress when it reports an id never
reported before in the run.

The rule evaluation is not part of the machine: it needs the tool ledger,
which the host records while the executor calls tools, and user-supplied
rules, which are code and not state. Hosts call :func:`evaluate_aiops_report`
on :attr:`AiOpsResult.report` once the run has finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from .._kernel.enums import NodeStatus
from .._kernel.errors import MachineError
from .._kernel.machine.config import RunConfig
from .._kernel.machine.provenance import mark_built
from .._kernel.machine.results import (
    AgentFailed,
    AgentReplied,
    awaited,
    items_of,
)
from .._kernel.machine.stepping import AgentSteps, Reply, ReplyStep, entered, failure_reasons
from .._kernel.wire.converter import to_wire
from .._kernel.wire.facts import refuse_surrogate_pairs
from .config import AiOpsConfig
from .enums import (
    AiOpsAgent,
    AiOpsMode,
    AiOpsNode,
    AiOpsOutcome,
    AiOpsReasonCode,
    SupervisorChoice,
)
from .inputs import (
    build_aiops_executor_input,
    build_aiops_planner_input,
    build_reporter_input,
    build_supervisor_input,
    select_aiops_mode,
)
from .parsing import (
    parse_aiops_executor_output,
    parse_aiops_plan,
    parse_aiops_report,
    parse_supervisor_decision,
)
from .payloads import AiOpsExecutorFinding, AiOpsExecutorOutput, AiOpsPlan, AiOpsReport, Alert
from .rendering import render_aiops_fallback
from .routing import AiOpsRoute, AiOpsRoutingFacts, choose_aiops_route
from .trace import (
    AiOpsCallCounts,
    AiOpsEventDetails,
    AiOpsInvocationRecord,
    AiOpsTraceEvent,
)

__all__ = [
    "AiOpsAction",
    "AiOpsFinished",
    "AiOpsPendingCall",
    "AiOpsRequest",
    "AiOpsResult",
    "AiOpsState",
    "InvokeAiOpsAgent",
    "advance_aiops",
    "next_aiops_action",
    "start_aiops",
]


# --- inputs and outputs of the machine --------------------------------------------


def _alerts_tuple(value: Iterable[Alert] | None) -> tuple[Alert, ...]:
    return () if value is None else tuple(value)


@attrs.frozen
class AiOpsRequest:
    """One AIOps run: the run config, the alert payload (None or empty: none) and the limits.

    :attr:`mode` follows from ``alerts`` (:func:`select_aiops_mode`).
    """

    run: RunConfig
    alerts: tuple[Alert, ...] = attrs.field(
        default=(), converter=_alerts_tuple, validator=items_of(Alert)
    )
    config: AiOpsConfig = attrs.field(factory=AiOpsConfig)

    def __attrs_post_init__(self) -> None:
        # Request material JSON cannot store would change on reload (spec §12.1).
        refuse_surrogate_pairs(to_wire(self), "request")  # alerts: labels, annotations …

    @property
    def mode(self) -> AiOpsMode:
        """``PAYLOAD_TARGETED`` with at least one alert, else ``AUTO_DISCOVERY``."""
        return select_aiops_mode(self.alerts)


@attrs.frozen
class InvokeAiOpsAgent:
    """Action: invoke ``agent`` with exactly ``input`` and ``config``."""

    agent: AiOpsAgent
    input: str
    config: RunConfig
    step: int
    attempt: int


@attrs.frozen
class AiOpsResult:
    """How an AIOps run ended; with ``aiops_rule_evaluation`` it is the replay output.

    ``report`` is the reporter's parsed report when the outcome is
    ``REPORTED`` (else null); ``fallback`` is the rendered fallback report
    when it is ``FALLBACK`` (else null). ``supervisor_steps`` counts the
    supervisor steps started; ``tool_invocation_ids`` lists every id the
    executor reported, first report first.
    """

    mode: AiOpsMode
    outcome: AiOpsOutcome
    reason_code: AiOpsReasonCode | None
    report: AiOpsReport | None
    fallback: str | None
    supervisor_steps: int
    tool_invocation_ids: tuple[str, ...]
    calls: AiOpsCallCounts
    trace: tuple[AiOpsTraceEvent, ...]
    invocations: tuple[AiOpsInvocationRecord, ...]


@attrs.frozen
class AiOpsFinished:
    """Action: nothing left to do; the run ended with ``result``."""

    result: AiOpsResult


AiOpsAction = InvokeAiOpsAgent | AiOpsFinished
"""What :func:`next_aiops_action` asks for: an agent call, or nothing more."""


@attrs.frozen
class AiOpsPendingCall:
    """The agent invocation the machine waits for, with its exact input."""

    agent: AiOpsAgent
    input: str
    step: int
    attempt: int


@attrs.frozen
class AiOpsState:
    """The whole state of one AIOps run; immutable, JSON round-trippable.

    ``decisions`` are the supervisor's completed choices in order; ``repeats``
    is how many times in a row the last choice has been made with no new tool
    invocation id reported in between (the no-progress guard).
    """

    request: AiOpsRequest
    pending: AiOpsPendingCall | None = None
    step: int = 0
    decisions: tuple[SupervisorChoice, ...] = ()
    repeats: int = 0
    plan: AiOpsPlan | None = None
    findings: tuple[AiOpsExecutorFinding, ...] = ()
    invocation_ids: tuple[str, ...] = ()
    report: AiOpsReport | None = None
    events: tuple[AiOpsTraceEvent, ...] = ()
    invocations: tuple[AiOpsInvocationRecord, ...] = ()
    calls: AiOpsCallCounts = attrs.field(factory=AiOpsCallCounts)
    outcome: AiOpsOutcome | None = None
    reason_code: AiOpsReasonCode | None = None
    fallback: str | None = None

    @property
    def finished(self) -> bool:
        """True once the run reached END."""
        return self.outcome is not None

    @property
    def result(self) -> AiOpsResult:
        """The result of a finished run; :class:`MachineError` before that."""
        if self.outcome is None:
            raise MachineError("the AIOps run has not finished yet")
        return AiOpsResult(
            mode=self.request.mode,
            outcome=self.outcome,
            reason_code=self.reason_code,
            report=self.report,
            fallback=self.fallback,
            supervisor_steps=self.step,
            tool_invocation_ids=self.invocation_ids,
            calls=self.calls,
            trace=self.events,
            invocations=self.invocations,
        )


# --- public entry points ----------------------------------------------------------


def start_aiops(request: AiOpsRequest) -> AiOpsState:
    """The initial state: the start row routes to the supervisor's first step."""
    state = AiOpsState(request=request)
    return mark_built(_follow(state, choose_aiops_route(None, AiOpsRoutingFacts())))


def next_aiops_action(state: AiOpsState) -> AiOpsAction:
    """Which agent the run needs next, or :class:`AiOpsFinished` with the result."""
    if state.outcome is not None:
        return AiOpsFinished(state.result)
    pending = awaited(state.pending)
    return InvokeAiOpsAgent(
        pending.agent, pending.input, state.request.run, pending.step, pending.attempt
    )


def advance_aiops(state: AiOpsState, result: AgentReplied | AgentFailed) -> AiOpsState:
    """Feed the result of the pending invocation; returns the next state.

    Raises :class:`MachineError` when the run has finished or ``result`` is
    not an agent result. Agent misbehaviour is never an exception: it
    becomes a node status with a reason.
    """
    return mark_built(_advance_aiops(state, result))


def _advance_aiops(state: AiOpsState, result: AgentReplied | AgentFailed) -> AiOpsState:
    if state.outcome is not None:
        raise MachineError("the AIOps run has finished; there is nothing to advance")
    return _STEPS.answered(state, result)


# --- helpers ----------------------------------------------------------------------


def _follow(
    state: AiOpsState, route: AiOpsRoute, *, reason: AiOpsReasonCode | None = None
) -> AiOpsState:
    """Enter the node ``route`` leads to: schedule an agent or run the fallback."""
    target = entered(route)
    state = attrs.evolve(state, pending=None)
    if target is None:
        return state
    request = state.request
    if target is AiOpsNode.SUPERVISOR:
        step = state.step + 1
        text = build_supervisor_input(
            request.alerts,
            step=step,
            max_steps=request.config.max_supervisor_steps,
            decisions=state.decisions,
            plan=state.plan,
            findings=state.findings,
            tool_invocation_count=len(state.invocation_ids),
        )
        return _STEPS.scheduled(attrs.evolve(state, step=step), AiOpsAgent.SUPERVISOR, text, step)
    if target is AiOpsNode.PLANNER:
        text = build_aiops_planner_input(request.alerts, state.findings)
        return _STEPS.scheduled(state, AiOpsAgent.PLANNER, text, state.step)
    if target is AiOpsNode.EXECUTOR:
        text = build_aiops_executor_input(request.alerts, state.plan, state.invocation_ids)
        return _STEPS.scheduled(state, AiOpsAgent.EXECUTOR, text, state.step)
    if target is AiOpsNode.REPORTER:
        text = build_reporter_input(
            request.alerts, state.plan, state.findings, state.invocation_ids
        )
        return _STEPS.scheduled(state, AiOpsAgent.REPORTER, text, state.step)
    assert target is AiOpsNode.FALLBACK and reason is not None
    return _fallback(state, reason)


_COMPLETED: Final = AiOpsRoutingFacts(status=NodeStatus.COMPLETED)
"""Only the supervisor's facts say more than the status (its choice, the budget, the
repeats); the other agents route on COMPLETED alone."""


# --- agents -----------------------------------------------------------------------


def _supervisor_replied(
    state: AiOpsState, pending: AiOpsPendingCall, choice: SupervisorChoice
) -> AiOpsState:
    if choice is SupervisorChoice.FINISH:
        repeats = 0
    elif state.decisions and state.decisions[-1] is choice:
        repeats = state.repeats + 1
    else:
        repeats = 1
    facts = AiOpsRoutingFacts(
        status=NodeStatus.COMPLETED,
        choice=choice,
        last_step=state.step >= state.request.config.max_supervisor_steps,
        repeats=repeats,
    )
    details = AiOpsEventDetails(
        next=choice, repeats=None if choice is SupervisorChoice.FINISH else repeats
    )
    state, route = _STEPS.completed(state, pending, facts, details)
    state = attrs.evolve(state, decisions=(*state.decisions, choice), repeats=repeats)
    return _follow(state, route, reason=route.reason)


def _planner_replied(state: AiOpsState, pending: AiOpsPendingCall, plan: AiOpsPlan) -> AiOpsState:
    details = AiOpsEventDetails(plan_steps=len(plan.steps))
    state, route = _STEPS.completed(state, pending, _COMPLETED, details)
    return _follow(attrs.evolve(state, plan=plan), route)


def _executor_replied(
    state: AiOpsState, pending: AiOpsPendingCall, output: AiOpsExecutorOutput
) -> AiOpsState:
    seen = set(state.invocation_ids)
    new_ids = tuple(value for value in output.tool_invocation_ids if value not in seen)
    details = AiOpsEventDetails(
        findings=len(output.findings),
        tool_invocations=len(output.tool_invocation_ids),
        new_tool_invocations=len(new_ids),
    )
    state, route = _STEPS.completed(state, pending, _COMPLETED, details)
    state = attrs.evolve(
        state,
        findings=(*state.findings, *output.findings),
        invocation_ids=(*state.invocation_ids, *new_ids),
        repeats=0 if new_ids else state.repeats,
    )
    return _follow(state, route)


def _reporter_replied(
    state: AiOpsState, pending: AiOpsPendingCall, report: AiOpsReport
) -> AiOpsState:
    details = AiOpsEventDetails(findings=len(report.findings))
    state, route = _STEPS.completed(state, pending, _COMPLETED, details)
    state = attrs.evolve(state, report=report, outcome=AiOpsOutcome.REPORTED, reason_code=None)
    return _follow(state, route)


_REPLIES: Final[Mapping[AiOpsAgent, ReplyStep[AiOpsState, AiOpsPendingCall]]] = {
    AiOpsAgent.SUPERVISOR: Reply(
        lambda _, text: parse_supervisor_decision(text).next, _supervisor_replied
    ),
    AiOpsAgent.PLANNER: Reply(lambda _, text: parse_aiops_plan(text), _planner_replied),
    AiOpsAgent.EXECUTOR: Reply(
        lambda state, text: parse_aiops_executor_output(text, state.invocation_ids),
        _executor_replied,
    ),
    AiOpsAgent.REPORTER: Reply(lambda _, text: parse_aiops_report(text), _reporter_replied),
}


# --- fallback ---------------------------------------------------------------------


def _fallback(state: AiOpsState, reason: AiOpsReasonCode) -> AiOpsState:
    request = state.request
    text = render_aiops_fallback(
        reason_code=reason,
        run_id=request.run.run_id,
        mode=request.mode,
        alerts=request.alerts,
        supervisor_steps=state.step,
        calls=state.calls,
        tool_invocation_count=len(state.invocation_ids),
        config=request.config,
    )
    step = max(state.step, 1)
    state = _STEPS.traced(state, AiOpsNode.FALLBACK, NodeStatus.COMPLETED, reason, step)
    state = attrs.evolve(
        state, outcome=AiOpsOutcome.FALLBACK, reason_code=reason, fallback=text, report=None
    )
    route = choose_aiops_route(AiOpsNode.FALLBACK, _COMPLETED)
    return _follow(state, route)


_REASONS: Final = failure_reasons(AiOpsAgent, AiOpsReasonCode)

_STEPS: Final = AgentSteps(
    event=AiOpsTraceEvent,
    details=AiOpsEventDetails,
    pending=AiOpsPendingCall,
    record=AiOpsInvocationRecord,
    position=lambda pending: pending.step,
    reasons=_REASONS,
    choose=lambda node, facts: choose_aiops_route(node, facts),  # the module's, read per call
    facts=AiOpsRoutingFacts,
    leave=lambda state, route, pending, reason: _follow(state, route, reason=reason),
    replies=_REPLIES,
)
"""The AIOps data for the agent steps both machines share (``_kernel/machine/stepping``)."""
