"""Checks of the run invariants of spec §10 that a finished state can show.

:func:`run_invariant_violations` reads only a :class:`~diagnosis_core.DiagnosisState`
(its trace, invocations, audits and evaluations), so it works for a run
driven by any orchestrator: the built-in drivers, a LangGraph graph, a
Temporal workflow. It recomputes what it checks from the recorded data
instead of trusting the machine's own summaries (the gap count, the ceiling).
The information-flow invariant needs planted content:
see :meth:`~diagnosis_core.testing.PlantedScenario.leaks`.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

from .. import DiagnosisState, TraceEvent, Verdict
from ..machine import AgentName, NodeName, NodeStatus, VerifierEvaluation
from ..protocol import GatekeeperStatus, Verification

__all__ = [
    "assert_run_invariants",
    "run_invariant_violations",
]

_GAP_VERIFICATIONS = frozenset({Verification.NO_EVIDENCE, Verification.INDIRECT_SUPPORT})
_CEILINGS = {
    GatekeeperStatus.PASS: Verdict.PASS,
    GatekeeperStatus.LOW_CONFID: Verdict.LOW_CONFID,
    GatekeeperStatus.REJECT: Verdict.REJECT,
}
_RANK = {Verdict.REJECT: 0, Verdict.LOW_CONFID: 1, Verdict.PASS: 2}
_LLM_NODES = {agent.node: agent for agent in AgentName}


def _termination(state: DiagnosisState) -> list[str]:
    """Invariant 1: END within the node bound of spec §7, with a non-empty answer."""
    problems = []
    if state.outcome is None:
        problems.append("1: the run did not reach END")
    if not (state.answer or "").strip():
        problems.append("1: the final answer is empty")
    bound = state.request.config.max_node_executions
    if len(state.events) > bound:
        problems.append(f"1: {len(state.events)} node executions exceed the bound {bound}")
    if [event.seq for event in state.events] != list(range(1, len(state.events) + 1)):
        problems.append("1: trace seq numbers are not 1..n")
    return problems


def _ceiling_of_round(state: DiagnosisState, round: int) -> Verdict | None:
    audits = [audit for audit in state.gatekeeper_audits if audit.round == round]
    return _CEILINGS[audits[-1].status] if audits else None


def _verdicts(state: DiagnosisState) -> list[str]:
    """Invariant 3: effective verdict ≤ ceiling and ≤ model verdict, always."""
    problems = []
    for evaluation in state.verifier_evaluations:
        where = f"verifier round {evaluation.round} attempt {evaluation.attempt}"
        effective = evaluation.effective_verdict
        ceiling = _ceiling_of_round(state, evaluation.round)
        if ceiling is None:
            problems.append(f"3: {where} ran without a gatekeeper result in its round")
        elif _RANK[effective] > _RANK[ceiling]:
            problems.append(f"3: {where}: effective {effective} above the ceiling {ceiling}")
        if _RANK[effective] > _RANK[evaluation.model_verdict]:
            problems.append(
                f"3: {where}: effective {effective} above the model verdict "
                f"{evaluation.model_verdict}"
            )
    for event in state.events:
        details = event.details
        if event.node is NodeName.VERIFIER and details.effective_verdict is not None:
            for bound in (details.ceiling, details.model_verdict):
                if bound is not None and _RANK[details.effective_verdict] > _RANK[bound]:
                    problems.append(f"3: trace event {event.seq} has effective above {bound}")
    return problems


def _has_gap(evaluation: VerifierEvaluation) -> bool:
    return any(
        fact.is_critical and fact.verification in _GAP_VERIFICATIONS
        for fact in evaluation.output.facts_checked
    )


def _calls(state: DiagnosisState) -> list[str]:
    """Invariant 4: gatekeeper once per completed executor round; no executor retry;
    at most one evidence retry, and only after a critical gap."""
    problems = []
    events = state.events
    executors = [event for event in events if event.node is NodeName.EXECUTOR]
    gatekeepers = [event for event in events if event.node is NodeName.GATEKEEPER]
    for event in executors:
        if event.attempt != 1:
            problems.append(f"4: executor retried (event {event.seq}, attempt {event.attempt})")
    per_round = Counter(event.round for event in executors)
    if any(count > 1 for count in per_round.values()):
        problems.append(f"4: more than one executor call in a round: {dict(per_round)}")
    completed = Counter(event.round for event in executors if event.status is NodeStatus.COMPLETED)
    checked = Counter(event.round for event in gatekeepers)
    if completed != checked:
        problems.append(
            f"4: gatekeeper calls per round {dict(checked)} differ from completed executor "
            f"rounds {dict(completed)}"
        )
    if state.calls.gatekeeper != len(gatekeepers):
        problems.append(
            f"4: calls.gatekeeper {state.calls.gatekeeper} != {len(gatekeepers)} events"
        )
    retries = [event for event in events if event.node is NodeName.EVIDENCE_RETRY]
    limit = state.request.config.evidence_retry_limit
    if len(retries) > limit or state.evidence_retries != len(retries):
        problems.append(f"4: {len(retries)} evidence retries with limit {limit}")
    for event in retries:
        evaluation = _evaluation_before(state, event)
        if evaluation is None:
            problems.append(f"4: evidence retry (event {event.seq}) without a verifier result")
        elif evaluation.effective_verdict is not Verdict.LOW_CONFID or not _has_gap(evaluation):
            problems.append(
                f"4: evidence retry (event {event.seq}) after effective "
                f"{evaluation.effective_verdict} without a critical gap"
            )
    return problems


def _evaluation_before(state: DiagnosisState, event: TraceEvent) -> VerifierEvaluation | None:
    verifier_events = [
        earlier
        for earlier in state.events[: event.seq - 1]
        if earlier.node is NodeName.VERIFIER and earlier.status is NodeStatus.COMPLETED
    ]
    if not verifier_events:
        return None
    last = verifier_events[-1]
    for evaluation in state.verifier_evaluations:
        if (evaluation.round, evaluation.attempt) == (last.round, last.attempt):
            return evaluation
    return None


def _retry_inputs(state: DiagnosisState) -> list[str]:
    """Invariant 5: a technical retry re-sends the first attempt's input, byte for byte."""
    problems = []
    groups: dict[tuple[AgentName, int], list[tuple[int, str]]] = defaultdict(list)
    for record in state.invocations:
        groups[(record.agent, record.round)].append((record.attempt, record.input))
    for (agent, round), calls in groups.items():
        attempts = [attempt for attempt, _ in calls]
        if attempts != list(range(1, len(calls) + 1)):
            problems.append(f"5: {agent} round {round} attempts are {attempts}, not 1..n")
        first = calls[0][1]
        for attempt, text in calls[1:]:
            if text != first:
                problems.append(f"5: {agent} round {round} attempt {attempt} input differs")
    llm_events = [event for event in state.events if event.node in _LLM_NODES]
    if len(llm_events) != len(state.invocations):
        problems.append("5: LLM trace events and invocations do not pair up")
    for event, record in zip(llm_events, state.invocations, strict=False):
        digest = hashlib.sha256(record.input.encode("utf-8", "surrogatepass")).hexdigest()
        if _LLM_NODES[event.node] is not record.agent or event.input_sha256 != digest:
            problems.append(f"5: trace event {event.seq} does not hash its invocation's input")
    counts = Counter(record.agent.value for record in state.invocations)
    for agent in AgentName:
        if getattr(state.calls, agent.value) != counts[agent.value]:
            problems.append(f"5: calls.{agent.value} does not count its invocations")
    return problems


def run_invariant_violations(state: DiagnosisState) -> tuple[str, ...]:
    """Every violation of invariants 1, 3, 4 and 5 of spec §10 in a finished run.

    Each message starts with the invariant's number. An empty tuple means the
    run respects them: it ended within the node bound with a non-empty answer,
    no effective verdict exceeds its ceiling or model verdict, the gatekeeper
    ran once per completed executor round, the executor was never retried,
    an evidence retry happened at most once and only after a critical gap,
    and every technical retry re-sent the identical input.
    """
    return tuple(
        _termination(state) + _verdicts(state) + _calls(state) + _retry_inputs(state)
    )


def assert_run_invariants(state: DiagnosisState) -> None:
    """Raise ``AssertionError`` listing every violation of :func:`run_invariant_violations`."""
    problems = run_invariant_violations(state)
    if problems:
        raise AssertionError("run invariants violated:\n" + "\n".join(problems))
