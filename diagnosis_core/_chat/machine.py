"""The sans-IO state machine of the chat diagnosis workflow (spec §2, §7).

Rules of this file: everything that changes the state of a run lives here,
and every routing decision is read from :data:`ROUTING_TABLE`. The machine
never performs an effect. :func:`next_action` says which effect is needed
(:class:`InvokeAgent`, :class:`CallGatekeeper`) or that the run is
:class:`Finished`; :func:`advance` takes the effect's result and returns the
next state. Pure nodes (``verified_input``, ``evidence_retry`` and the two
fallbacks) run inside :func:`advance`. Counters (round, attempt, evidence
retries) are changed only here, and a technical retry re-sends the input
string stored in the state, byte for byte. The steps of an agent call that
both workflows take alike (event, invocation record, retry, failed attempt,
refused reply) are the kernel's :class:`AgentSteps`, fed this workflow's data
in ``_STEPS``; the table and the handlers stay here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import attrs

from .._kernel.enums import NodeStatus
from .._kernel.errors import MachineError
from .._kernel.machine.config import RunConfig
from .._kernel.machine.provenance import mark_built
from .._kernel.machine.results import AgentFailed, AgentReplied, awaited, items_of
from .._kernel.machine.stepping import AgentSteps, Reply, ReplyStep, entered, failure_reasons
from .._kernel.machine.tables import leaving_reason
from .._kernel.records import share_repr
from .._kernel.wire.facts import refuse_surrogate_pairs
from .._kernel.wire.json import canonical_json
from .config import DiagnosisConfig
from .enums import AgentName, AnswerMode, GatekeeperStatus, NodeName, Outcome, ReasonCode, Verdict
from .gaps import RetryContext, build_retry_context, extract_evidence_gaps
from .gatekeeper import (
    NormalizedGatekeeperResult,
    RawSnapshot,
    capped_trace_text,
    gatekeeper_unavailable,
    normalize_snapshot,
    snapshot_raw_result,
    unstorable_description,
)
from .inputs import (
    GatekeeperSummary,
    build_composer_input,
    build_executor_input,
    build_planner_input,
    build_verifier_input,
)
from .parsing import (
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from .payloads import (
    ComposerOutput,
    ExecutorEvidence,
    HistoryMessage,
    PlannerPlan,
    Skill,
    VerifierOutput,
)
from .projection import (
    AllowedClaim,
    VerifiedInput,
    project_verified_input,
    select_allowed_claims,
)
from .routing import Route, RoutingFacts, choose_route
from .trace import (
    CallCounts,
    EventDetails,
    GatekeeperAudit,
    InvocationRecord,
    RawResult,
    TraceEvent,
    TraceReport,
    VerifierEvaluation,
)
from .verdict import answer_mode_for, apply_verdict_ceiling, verdict_ceiling

__all__ = [
    "Action",
    "CallGatekeeper",
    "DiagnosisRequest",
    "DiagnosisResult",
    "DiagnosisState",
    "EffectResult",
    "Finished",
    "GatekeeperFailed",
    "GatekeeperReturned",
    "InvokeAgent",
    "PendingCall",
    "advance",
    "build_trace_report",
    "next_action",
    "start_diagnosis",
]


# --- inputs and outputs of the machine ----------------------------------------


# Typed converters: the constructor takes what the validator accepts, so mypy
# rejects what the runtime rejects (a history of strings, a skill of another type).
def _history(value: Iterable[HistoryMessage]) -> tuple[HistoryMessage, ...]:
    return tuple(value)


def _skills(value: Iterable[Skill]) -> tuple[Skill, ...]:
    return tuple(value)


def _request_strings(request: DiagnosisRequest) -> object:
    """Every string of a request, as plain JSON (the fields a journal stores)."""
    run = request.run
    return {
        "question": request.question,
        "run": {"run_id": run.run_id, "session_id": run.session_id, "metadata": dict(run.metadata)},
        "history": [[item.role, item.content] for item in request.history],
        "skills": [[item.name, item.description] for item in request.skills],
    }


@attrs.frozen(repr=False)
class DiagnosisRequest:
    """One chat question and everything the run may use to answer it."""

    question: str = attrs.field(validator=attrs.validators.instance_of(str))
    run: RunConfig = attrs.field(validator=attrs.validators.instance_of(RunConfig))
    history: tuple[HistoryMessage, ...] = attrs.field(
        default=(), converter=_history, validator=items_of(HistoryMessage)
    )
    skills: tuple[Skill, ...] = attrs.field(
        default=(), converter=_skills, validator=items_of(Skill)
    )
    config: DiagnosisConfig = attrs.field(
        factory=DiagnosisConfig, validator=attrs.validators.instance_of(DiagnosisConfig)
    )

    def __attrs_post_init__(self) -> None:
        # Request material JSON cannot store would change on reload (spec §12.1).
        refuse_surrogate_pairs(_request_strings(self), "request")


@attrs.frozen(repr=False)
class InvokeAgent:
    """Action: invoke ``agent`` with exactly ``input`` and ``config``."""

    agent: AgentName
    input: str
    config: RunConfig
    round: int
    attempt: int


@attrs.frozen(repr=False)
class CallGatekeeper:
    """Action: call the gatekeeper once with the run id and the executor output."""

    run_id: str
    executor_output: ExecutorEvidence
    round: int


PLAIN_FACT: Final = object()
"""Package-private marker: a :class:`GatekeeperReturned` whose ``raw`` is a fresh copy
the fact codec (or the journal) decoded from stored JSON — plain built-ins the machine
owns — so the defensive snapshot of a host object is not needed (spec §12.1)."""


@attrs.frozen(repr=False)
class GatekeeperReturned:
    """Result: the gatekeeper returned ``raw`` (any value; normalized by the machine).

    The drivers hand the machine the fact as it is stored (spec §12.1); ``origin``
    is internal (it lets the machine skip a second defensive copy of that value)
    and never part of equality.
    """

    raw: object
    origin: object = attrs.field(default=None, eq=False, repr=False, kw_only=True)


@attrs.frozen(repr=False)
class GatekeeperFailed:
    """Result: the gatekeeper callable raised."""

    message: str = ""


EffectResult = AgentReplied | AgentFailed | GatekeeperReturned | GatekeeperFailed
"""The outcome of one performed effect, fed back to :func:`advance`."""


@attrs.frozen(repr=False)
class DiagnosisResult:
    """How a run ended; its wire form is the replay output of spec §9."""

    outcome: Outcome
    answer: str
    reason_code: ReasonCode | None
    gatekeeper_status: GatekeeperStatus | None
    model_verdict: Verdict | None
    effective_verdict: Verdict | None
    rounds: int
    evidence_retries: int
    calls: CallCounts
    trace: tuple[TraceEvent, ...]
    invocations: tuple[InvocationRecord, ...]


@attrs.frozen(repr=False)
class Finished:
    """Action: nothing left to do; the run ended with ``result``."""

    result: DiagnosisResult


Action = InvokeAgent | CallGatekeeper | Finished
"""What :func:`next_action` asks for: an agent call, a gatekeeper call, or nothing more."""


@attrs.frozen(repr=False)
class PendingCall:
    """The agent invocation the machine waits for, with its exact input."""

    agent: AgentName
    input: str
    round: int
    attempt: int


@attrs.frozen(repr=False)
class DiagnosisState:
    """The whole state of one run; immutable, JSON round-trippable.

    Drivers keep it, pass it to :func:`next_action` and :func:`advance`, and
    never change it themselves. A state read back with ``from_json`` is for
    display only (spec §12: no stored state is a source of truth): it is not
    checked against the machine's invariants, and every driver's ``state=``
    refuses it — only a state object the machine built in this process is
    accepted; a run moves between processes as its journal.
    """

    request: DiagnosisRequest
    pending: PendingCall | None = None
    awaiting_gatekeeper: bool = False
    round: int = 0
    evidence_retries: int = 0
    plan: PlannerPlan | None = None
    executor_output: ExecutorEvidence | None = None
    gatekeeper: NormalizedGatekeeperResult | None = None
    verified: VerifiedInput | None = None
    retry_context: RetryContext | None = None
    evaluation: VerifierEvaluation | None = None
    composer_output: ComposerOutput | None = None
    events: tuple[TraceEvent, ...] = ()
    invocations: tuple[InvocationRecord, ...] = ()
    calls: CallCounts = attrs.field(factory=CallCounts)
    gatekeeper_audits: tuple[GatekeeperAudit, ...] = ()
    verifier_evaluations: tuple[VerifierEvaluation, ...] = ()
    outcome: Outcome | None = None
    answer: str | None = None
    reason_code: ReasonCode | None = None
    observer_failures: int = attrs.field(default=0, eq=False)
    """Observer hooks that raised while a driver ran (logged; spec §12.5). Not a
    fact of the run: excluded from equality, written only when not 0."""

    @property
    def finished(self) -> bool:
        """True once the run reached END."""
        return self.outcome is not None

    @property
    def result(self) -> DiagnosisResult:
        """The result of a finished run; :class:`MachineError` before that."""
        if self.outcome is None or self.answer is None:
            raise MachineError("the run has not finished yet")
        return DiagnosisResult(
            outcome=self.outcome,
            answer=self.answer,
            reason_code=self.reason_code,
            gatekeeper_status=self.gatekeeper.status if self.gatekeeper else None,
            model_verdict=self.evaluation.model_verdict if self.evaluation else None,
            effective_verdict=self.evaluation.effective_verdict if self.evaluation else None,
            rounds=self.round,
            evidence_retries=self.evidence_retries,
            calls=self.calls,
            trace=self.events,
            invocations=self.invocations,
        )


# --- public entry points --------------------------------------------------------


def start_diagnosis(request: DiagnosisRequest) -> DiagnosisState:
    """The initial state: the start row routes to the planner (spec §7)."""
    state = DiagnosisState(request=request)
    return mark_built(_follow(state, choose_route(None, RoutingFacts()), round=1))


def next_action(state: DiagnosisState) -> Action:
    """Which effect the run needs next, or :class:`Finished` with the result."""
    if state.outcome is not None:
        return Finished(state.result)
    if state.awaiting_gatekeeper and state.executor_output is not None:
        return CallGatekeeper(state.request.run.run_id, state.executor_output, state.round)
    pending = awaited(state.pending)
    return InvokeAgent(
        pending.agent, pending.input, state.request.run, pending.round, pending.attempt
    )


def advance(state: DiagnosisState, result: EffectResult) -> DiagnosisState:
    """Feed the result of the pending effect; returns the next state.

    Raises :class:`MachineError` when the run has finished or ``result`` does
    not answer the pending action. Agent and gatekeeper misbehaviour is never
    an exception: it becomes a node status with a reason.
    """
    return mark_built(_advance(state, result))


def _advance(state: DiagnosisState, result: EffectResult) -> DiagnosisState:
    if state.outcome is not None:
        raise MachineError("the run has finished; there is nothing to advance")
    if state.awaiting_gatekeeper:
        if isinstance(result, GatekeeperReturned | GatekeeperFailed):
            return _gatekeeper_done(state, result)
        raise MachineError(f"the pending action is a gatekeeper call; got {type(result).__name__}")
    return _STEPS.answered(state, result)


def build_trace_report(state: DiagnosisState) -> TraceReport:
    """The trace report aggregate of a run (spec §8), finished or not."""
    request = state.request
    return TraceReport(
        run_id=request.run.run_id,
        session_id=request.run.session_id,
        question=request.question,
        events=state.events,
        gatekeeper_audits=state.gatekeeper_audits,
        verifier_evaluations=state.verifier_evaluations,
        invocations=state.invocations,
        outcome=state.outcome,
        reason_code=state.reason_code,
        answer=state.answer,
        observer_failures=state.observer_failures,
    )


# --- helpers ---------------------------------------------------------------------


def _follow(
    state: DiagnosisState, route: Route, *, round: int, reason: ReasonCode | None = None
) -> DiagnosisState:
    """Enter the node ``route`` leads to: schedule an effect or run a pure node."""
    target = entered(route)
    state = attrs.evolve(state, pending=None, awaiting_gatekeeper=False)
    if target is None:
        return state
    request = state.request
    if target is NodeName.PLANNER:
        text = build_planner_input(
            request.question, request.history, request.skills, request.config
        )
        return _STEPS.scheduled(state, AgentName.PLANNER, text, 1)
    if target is NodeName.EXECUTOR:
        assert state.plan is not None
        text = build_executor_input(request.question, state.plan, round, state.retry_context)
        return _STEPS.scheduled(attrs.evolve(state, round=round), AgentName.EXECUTOR, text, round)
    if target is NodeName.GATEKEEPER:
        return attrs.evolve(state, awaiting_gatekeeper=True)
    if target is NodeName.VERIFIED_INPUT:
        return _verified_input(state)
    if target is NodeName.VERIFIER:
        return _schedule_verifier(state)
    if target is NodeName.EVIDENCE_RETRY:
        return _evidence_retry(state)
    if target is NodeName.COMPOSER:
        return _schedule_composer(state)
    if target is NodeName.PRE_VERIFICATION_FALLBACK:
        assert reason is not None
        return _pre_verification_fallback(state, reason)
    assert target is NodeName.POST_VERIFICATION_FALLBACK
    return _post_verification_fallback(state)


_COMPLETED: Final = RoutingFacts(status=NodeStatus.COMPLETED)


# --- planner ---------------------------------------------------------------------


def _parse_plan(state: DiagnosisState, text: str) -> PlannerPlan:
    return parse_planner_plan(text, [skill.name for skill in state.request.skills])


def _planner_replied(
    state: DiagnosisState, pending: PendingCall, plan: PlannerPlan
) -> DiagnosisState:
    state, route = _STEPS.completed(attrs.evolve(state, plan=plan), pending, _COMPLETED)
    return _follow(state, route, round=1)


# --- executor --------------------------------------------------------------------


def _executor_replied(
    state: DiagnosisState, pending: PendingCall, output: ExecutorEvidence
) -> DiagnosisState:
    state = attrs.evolve(state, executor_output=output, verified=None)
    state, route = _STEPS.completed(state, pending, _COMPLETED)
    return _follow(state, route, round=pending.round)


# --- gatekeeper ------------------------------------------------------------------


def _raw_result_copy(snapshot: RawSnapshot) -> RawResult:
    """The raw result as canonical JSON for audit, read from the snapshot; never raises.

    The snapshot holds only plain built-ins and opaque stand-ins, so
    serializing it runs no host code; only the last-resort ``repr`` of an
    opaque value does, and it is guarded.
    """
    if snapshot.problem is not None:
        return RawResult(canonical_json({"unserializable": f"<{snapshot.problem}>"}))
    raw = snapshot.value
    try:
        return RawResult(canonical_json(raw))
    except (TypeError, ValueError, RecursionError):
        return RawResult(canonical_json({"unserializable": unstorable_description(raw)}))


def _raw_field(snapshot: RawSnapshot, key: str) -> str | None:
    raw = snapshot.value
    if isinstance(raw, dict):
        value = raw.get(key)
        if isinstance(value, str):
            return value
    return None


def _gatekeeper_done(
    state: DiagnosisState, result: GatekeeperReturned | GatekeeperFailed
) -> DiagnosisState:
    executor_output = state.executor_output
    assert executor_output is not None
    round = state.round
    state = attrs.evolve(state, calls=state.calls.incremented("gatekeeper"))
    raw_copy: RawResult | None = None
    error: str | None = None
    if isinstance(result, GatekeeperReturned):
        if result.origin is PLAIN_FACT:  # decoded from stored JSON: plain and private
            snapshot = RawSnapshot(result.raw)
        else:
            snapshot = snapshot_raw_result(result.raw)  # the only read of the host object
        normalized = normalize_snapshot(snapshot)
        raw_copy = _raw_result_copy(snapshot)
        status = NodeStatus.COMPLETED
        raw_status, raw_level = _raw_field(snapshot, "status"), _raw_field(snapshot, "level")
    else:
        error = result.message
        normalized = gatekeeper_unavailable(result.message)
        status = NodeStatus.NON_RETRYABLE_FAILED
        raw_status = raw_level = None
    verified = project_verified_input(executor_output, normalized.checked_bindings)
    trusted = len(verified.verified_evidence)
    facts = RoutingFacts(
        status=status, gatekeeper_status=normalized.status, trusted_bindings=trusted
    )
    route = choose_route(NodeName.GATEKEEPER, facts)
    leaving = route.next is NodeName.PRE_VERIFICATION_FALLBACK
    reason = leaving_reason(route, normalized.reason_code) if leaving else None
    if leaving and reason is None:  # fail closed: a REJECT always names its reason
        reason = ReasonCode.GATEKEEPER_INVALID_RESULT
    audit = GatekeeperAudit(
        round=round,
        raw_result=raw_copy,
        error=error,
        status=normalized.status,
        reason_code=normalized.reason_code,
        problem=normalized.problem,
        checked=normalized.checked,
        passed=normalized.passed,
        failed=normalized.failed,
        trusted_bindings=trusted,
    )
    details = EventDetails(
        raw_status=capped_trace_text(raw_status),
        raw_level=capped_trace_text(raw_level),
        status=normalized.status,
        checked=normalized.checked,
        passed=normalized.passed,
        failed=normalized.failed,
        trusted_bindings=trusted,
        error=error if error is not None else normalized.problem,
    )
    state = attrs.evolve(
        state,
        gatekeeper=normalized,
        verified=verified if not leaving else None,
        gatekeeper_audits=(*state.gatekeeper_audits, audit),
    )
    state = _STEPS.traced(state, NodeName.GATEKEEPER, status, reason, round, details=details)
    return _follow(state, route, round=round, reason=reason)


# --- verified input and verifier -------------------------------------------------


def _verified_input(state: DiagnosisState) -> DiagnosisState:
    """The projection was computed with the gatekeeper result; record the node."""
    assert state.verified is not None
    state = _STEPS.traced(state, NodeName.VERIFIED_INPUT, NodeStatus.COMPLETED, None, state.round)
    route = choose_route(NodeName.VERIFIED_INPUT, _COMPLETED)
    return _follow(state, route, round=state.round)


def _gatekeeper_summary(gatekeeper: NormalizedGatekeeperResult) -> GatekeeperSummary:
    return GatekeeperSummary(
        status=gatekeeper.status,
        ceiling=verdict_ceiling(gatekeeper.status),
        checked=gatekeeper.checked,
        passed=gatekeeper.passed,
        failed=gatekeeper.failed,
    )


def _schedule_verifier(state: DiagnosisState) -> DiagnosisState:
    assert state.verified is not None and state.gatekeeper is not None
    text = build_verifier_input(
        state.request.question,
        state.round,
        state.verified,
        _gatekeeper_summary(state.gatekeeper),
        state.retry_context,
    )
    return _STEPS.scheduled(state, AgentName.VERIFIER, text, state.round)


def _drop_unknown_claim_ids(
    output: VerifierOutput, known: Sequence[str]
) -> tuple[VerifierOutput, tuple[str, ...]]:
    """Spec §5.3: ids not in the verified input are dropped and reported."""
    known_ids = set(known)
    ids = (*(fact.claim_id for fact in output.facts_checked), *output.allowed_claim_ids)
    filtered = attrs.evolve(
        output,
        facts_checked=tuple(f for f in output.facts_checked if f.claim_id in known_ids),
        allowed_claim_ids=tuple(i for i in output.allowed_claim_ids if i in known_ids),
    )
    return filtered, tuple(dict.fromkeys(i for i in ids if i not in known_ids))


def _verifier_replied(
    state: DiagnosisState, pending: PendingCall, parsed: VerifierOutput
) -> DiagnosisState:
    assert state.verified is not None and state.gatekeeper is not None
    output, unknown = _drop_unknown_claim_ids(parsed, state.verified.claim_ids)
    ceiling = verdict_ceiling(state.gatekeeper.status)
    effective = apply_verdict_ceiling(output.verdict, ceiling)
    gaps = extract_evidence_gaps(output.facts_checked)
    evaluation = VerifierEvaluation(
        round=pending.round,
        attempt=pending.attempt,
        output=output,
        model_verdict=output.verdict,
        ceiling=ceiling,
        effective_verdict=effective,
        unknown_claim_ids=unknown,
        gap_count=len(gaps),
    )
    facts = RoutingFacts(
        status=NodeStatus.COMPLETED,
        effective_verdict=effective,
        gap_count=len(gaps),
        evidence_retry_left=state.evidence_retries < state.request.config.evidence_retry_limit,
    )
    details = EventDetails(
        model_verdict=output.verdict,
        effective_verdict=effective,
        ceiling=ceiling,
        groundedness_score=output.groundedness_score,
        unknown_claim_ids=unknown,
    )
    state = attrs.evolve(
        state,
        evaluation=evaluation,
        verifier_evaluations=(*state.verifier_evaluations, evaluation),
    )
    state, route = _STEPS.completed(state, pending, facts, details)
    return _follow(state, route, round=pending.round)


# --- evidence retry --------------------------------------------------------------


def _evidence_retry(state: DiagnosisState) -> DiagnosisState:
    assert state.verified is not None and state.evaluation is not None
    gaps = extract_evidence_gaps(state.evaluation.output.facts_checked)
    context = build_retry_context(state.verified, gaps)
    details = EventDetails(gap_count=len(context.gaps))
    state = _STEPS.traced(
        state, NodeName.EVIDENCE_RETRY, NodeStatus.COMPLETED, None, state.round, details=details
    )
    state = attrs.evolve(state, retry_context=context, evidence_retries=state.evidence_retries + 1)
    route = choose_route(NodeName.EVIDENCE_RETRY, _COMPLETED)
    return _follow(state, route, round=state.round + 1)


# --- composer --------------------------------------------------------------------


def _allowed_claims(state: DiagnosisState) -> tuple[AllowedClaim, ...]:
    assert state.verified is not None and state.evaluation is not None
    return select_allowed_claims(state.verified, state.evaluation.output.allowed_claim_ids)


def _answer_mode(state: DiagnosisState) -> AnswerMode:
    assert state.evaluation is not None
    return answer_mode_for(state.evaluation.effective_verdict)


def _schedule_composer(state: DiagnosisState) -> DiagnosisState:
    assert state.evaluation is not None
    output = state.evaluation.output
    text = build_composer_input(
        state.request.question,
        _answer_mode(state),
        state.evaluation.effective_verdict,
        _allowed_claims(state),
        output.missing_info,
        output.recommended_actions,
    )
    return _STEPS.scheduled(state, AgentName.COMPOSER, text, state.round)


def _parse_composer_output(state: DiagnosisState, text: str) -> ComposerOutput:
    return parse_composer_output(text, [claim.claim_id for claim in _allowed_claims(state)])


def _composer_replied(
    state: DiagnosisState, pending: PendingCall, output: ComposerOutput
) -> DiagnosisState:
    state, route = _STEPS.completed(state, pending, _COMPLETED)
    state = attrs.evolve(
        state,
        composer_output=output,
        outcome=Outcome.ANSWERED,
        answer=output.answer,
        reason_code=None,
    )
    return _follow(state, route, round=pending.round)


# --- fallbacks -------------------------------------------------------------------


def _finish_fallback(
    state: DiagnosisState, node: NodeName, reason: ReasonCode, outcome: Outcome, answer: str
) -> DiagnosisState:
    round = max(state.round, 1)
    state = _STEPS.traced(state, node, NodeStatus.COMPLETED, reason, round)
    state = attrs.evolve(state, outcome=outcome, answer=answer, reason_code=reason)
    route = choose_route(node, _COMPLETED)
    return _follow(state, route, round=round)


def _binding_counts(gatekeeper: NormalizedGatekeeperResult | None) -> tuple[int, int, int] | None:
    """Counts are shown only when the gatekeeper gave a readable result."""
    unreadable = (ReasonCode.GATEKEEPER_UNAVAILABLE, ReasonCode.GATEKEEPER_INVALID_RESULT)
    if gatekeeper is None or gatekeeper.reason_code in unreadable:
        return None
    return (gatekeeper.checked, gatekeeper.passed, gatekeeper.failed)


def _executor_completed_in(state: DiagnosisState, round: int) -> bool:
    """Whether the executor output in the state is this round's (its node COMPLETED)."""
    return any(
        event.node is NodeName.EXECUTOR
        and event.round == round
        and event.status is NodeStatus.COMPLETED
        for event in state.events
    )


def _pre_verification_fallback(state: DiagnosisState, reason: ReasonCode) -> DiagnosisState:
    """The freshest facts win (spec §15): only the failing round's own facts are shown.

    ``state.gatekeeper`` and ``state.executor_output`` may still hold round 1
    when round 2 fails before its gatekeeper (or executor) completed; then the
    fallback shows no gatekeeper status/counts (or no tool overview) rather
    than round 1's, and says that an earlier round verified findings when one
    did, instead of "nothing was verified".
    """
    round = state.round
    gatekeeper = state.gatekeeper
    audits = state.gatekeeper_audits
    if gatekeeper is not None and (not audits or audits[-1].round != round):
        gatekeeper = None
    executor_output = state.executor_output
    if executor_output is not None and not _executor_completed_in(state, round):
        executor_output = None
    earlier_verified = any(audit.round < round and audit.trusted_bindings > 0 for audit in audits)
    from .rendering import render_pre_verification_fallback  # fallback runs only

    answer = render_pre_verification_fallback(
        reason_code=reason,
        run_id=state.request.run.run_id,
        gatekeeper_status=gatekeeper.status if gatekeeper else None,
        binding_counts=_binding_counts(gatekeeper),
        tool_trace=executor_output.tool_trace_summary if executor_output else (),
        config=state.request.config,
        earlier_round_verified=earlier_verified,
    )
    return _finish_fallback(
        state,
        NodeName.PRE_VERIFICATION_FALLBACK,
        reason,
        Outcome.PRE_VERIFICATION_FALLBACK,
        answer,
    )


def _post_verification_fallback(state: DiagnosisState) -> DiagnosisState:
    assert state.evaluation is not None
    output = state.evaluation.output
    from .rendering import render_post_verification_fallback  # fallback runs only

    answer = render_post_verification_fallback(
        run_id=state.request.run.run_id,
        answer_mode=_answer_mode(state),
        allowed_claims=_allowed_claims(state),
        missing_info=output.missing_info,
        recommended_actions=output.recommended_actions,
        config=state.request.config,
    )
    return _finish_fallback(
        state,
        NodeName.POST_VERIFICATION_FALLBACK,
        ReasonCode.COMPOSER_FAILED,
        Outcome.POST_VERIFICATION_FALLBACK,
        answer,
    )


_REPLIES: Final[Mapping[AgentName, ReplyStep[DiagnosisState, PendingCall]]] = {
    AgentName.PLANNER: Reply(_parse_plan, _planner_replied),
    AgentName.EXECUTOR: Reply(lambda _, text: parse_executor_evidence(text), _executor_replied),
    AgentName.VERIFIER: Reply(lambda _, text: parse_verifier_output(text), _verifier_replied),
    AgentName.COMPOSER: Reply(_parse_composer_output, _composer_replied),
}

_REASONS: Final = failure_reasons(AgentName, ReasonCode)

_STEPS: Final = AgentSteps(
    event=TraceEvent,
    details=EventDetails,
    pending=PendingCall,
    record=InvocationRecord,
    position=lambda pending: pending.round,
    reasons=_REASONS,
    choose=lambda node, facts: choose_route(node, facts),  # the module's, read per call
    facts=RoutingFacts,
    leave=lambda state, route, pending, reason: _follow(
        state, route, round=pending.round, reason=reason
    ),
    replies=_REPLIES,
)
"""The chat workflow's data for the agent steps both machines share (``machine/stepping``)."""


share_repr(
    DiagnosisRequest,
    InvokeAgent,
    CallGatekeeper,
    GatekeeperReturned,
    GatekeeperFailed,
    DiagnosisResult,
    Finished,
    PendingCall,
    DiagnosisState,
)
