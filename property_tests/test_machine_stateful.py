"""A stateful model of the sans-IO machine: any result sequence, invariants after every step.

Hypothesis drives :func:`~diagnosis_core.machine.advance` directly with whatever the
pending action may get back: a valid reply for that agent (built from the very
input it was sent), hostile text, a failure of any kind, any gatekeeper result
or a gatekeeper failure. It also feeds results of the wrong type (always a
:class:`~diagnosis_core.MachineError`, state unchanged) and keeps advancing
after the run finished (always a :class:`~diagnosis_core.MachineError`).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from diagnosis_core import (
    DiagnosisRequest,
    DiagnosisState,
    FailureKind,
    MachineError,
    Verdict,
    from_wire,
    to_wire,
)
from diagnosis_core.machine import (
    AgentFailed,
    AgentName,
    AgentReplied,
    CallGatekeeper,
    EffectResult,
    Finished,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
    NodeName,
    advance,
    next_action,
    start_diagnosis,
)
from diagnosis_core.protocol import canonical_json
from diagnosis_core.testing import (
    diagnosis_requests,
    gatekeeper_raw_results,
    hostile_gatekeeper_values,
    random_garbage_texts,
    run_invariant_violations,
    texts,
)
from diagnosis_core.testing._texts import (
    composer_output_texts,
    executor_evidence_texts,
    planner_plan_texts,
    verifier_output_texts,
)

RANK = {Verdict.REJECT: 0, Verdict.LOW_CONFID: 1, Verdict.PASS: 2}


def _valid_reply(action: InvokeAgent, request: DiagnosisRequest) -> st.SearchStrategy[str]:
    """A valid reply for the agent, consistent with the exact input it was sent."""
    sent = json.loads(action.input)
    if action.agent is AgentName.PLANNER:
        return planner_plan_texts([skill.name for skill in request.skills])
    if action.agent is AgentName.EXECUTOR:
        return executor_evidence_texts()
    if action.agent is AgentName.VERIFIER:
        ids = [claim["claim_id"] for claim in sent["verified_executor_output"]]
        return verifier_output_texts(ids, unknown_ids=True)
    return composer_output_texts([claim["claim_id"] for claim in sent["allowed_claims"]])


class DiagnosisMachine(RuleBasedStateMachine):
    """Model: the state the machine returned last; checks after every transition."""

    def __init__(self) -> None:
        super().__init__()
        self.state: DiagnosisState | None = None
        self.results = 0

    # --- helpers -------------------------------------------------------------

    def _current(self) -> DiagnosisState:
        assert self.state is not None
        return self.state

    def _awaits_agent(self) -> bool:
        return self.state is not None and isinstance(next_action(self.state), InvokeAgent)

    def _awaits_gatekeeper(self) -> bool:
        return self.state is not None and isinstance(next_action(self.state), CallGatekeeper)

    def _finished(self) -> bool:
        return self.state is not None and self.state.finished

    def _feed(self, result: EffectResult) -> None:
        self.state = advance(self._current(), result)
        self.results += 1

    # --- rules ---------------------------------------------------------------

    @initialize(request=diagnosis_requests())
    def start(self, request: DiagnosisRequest) -> None:
        self.state = start_diagnosis(request)
        action = next_action(self.state)
        assert isinstance(action, InvokeAgent) and action.agent is AgentName.PLANNER

    @precondition(_awaits_agent)
    @rule(data=st.data())
    def agent_replies_validly(self, data: st.DataObject) -> None:
        action = next_action(self._current())
        assert isinstance(action, InvokeAgent)
        self._feed(AgentReplied(data.draw(_valid_reply(action, self._current().request))))

    @precondition(_awaits_agent)
    @rule(text=random_garbage_texts())
    def agent_replies_garbage(self, text: str) -> None:
        self._feed(AgentReplied(text))

    @precondition(_awaits_agent)
    @rule(kind=st.sampled_from(FailureKind), message=texts())
    def agent_fails(self, kind: FailureKind, message: str) -> None:
        self._feed(AgentFailed(kind, message))

    @precondition(_awaits_gatekeeper)
    @rule(data=st.data())
    def gatekeeper_returns(self, data: st.DataObject) -> None:
        action = next_action(self._current())
        assert isinstance(action, CallGatekeeper)
        raws = gatekeeper_raw_results(action.executor_output) | hostile_gatekeeper_values()
        self._feed(GatekeeperReturned(data.draw(raws)))

    @precondition(_awaits_gatekeeper)
    @rule(message=texts())
    def gatekeeper_fails(self, message: str) -> None:
        self._feed(GatekeeperFailed(message))

    @precondition(lambda self: self.state is not None and not self.state.finished)
    @rule(data=st.data())
    def a_result_of_the_wrong_type_is_a_machine_error(self, data: st.DataObject) -> None:
        before = self._current()
        wrong: list[EffectResult] = (
            [GatekeeperReturned({"status": "pass"}), GatekeeperFailed("down")]
            if self._awaits_agent()
            else [AgentReplied("{}"), AgentFailed(FailureKind.RETRYABLE)]
        )
        result = data.draw(st.sampled_from(wrong))
        with pytest.raises(MachineError):
            advance(before, result)
        assert self.state is before

    @precondition(_finished)
    @rule(
        result=st.sampled_from(
            [AgentReplied("{}"), AgentFailed(FailureKind.RETRYABLE), GatekeeperReturned({}),
             GatekeeperFailed("down")]
        )
    )
    def advancing_a_finished_run_is_a_machine_error(self, result: EffectResult) -> None:
        before = self._current()
        with pytest.raises(MachineError):
            advance(before, result)
        assert isinstance(next_action(before), Finished)

    # --- invariants ----------------------------------------------------------

    @invariant()
    def within_the_node_bound(self) -> None:
        if self.state is not None:
            assert len(self.state.events) <= self.state.request.config.max_node_executions
            assert self.results <= self.state.request.config.max_node_executions

    @invariant()
    def executor_attempts_are_always_one_and_verdicts_respect_the_ceiling(self) -> None:
        if self.state is None:
            return
        for event in self.state.events:
            if event.node is NodeName.EXECUTOR:
                assert event.attempt == 1
        for evaluation in self.state.verifier_evaluations:
            assert RANK[evaluation.effective_verdict] <= RANK[evaluation.ceiling]
            assert RANK[evaluation.effective_verdict] <= RANK[evaluation.model_verdict]

    @invariant()
    def a_pending_retry_resends_the_first_input(self) -> None:
        if self.state is None or self.state.pending is None:
            return
        pending = self.state.pending
        earlier = [
            record.input
            for record in self.state.invocations
            if record.agent is pending.agent and record.round == pending.round
        ]
        assert len(earlier) == pending.attempt - 1
        assert all(text == pending.input for text in earlier)

    @invariant()
    def finished_runs_respect_every_recorded_invariant(self) -> None:
        if self.state is not None and self.state.finished:
            assert run_invariant_violations(self.state) == ()
            assert self.state.pending is None and not self.state.awaiting_gatekeeper

    @invariant()
    def the_state_round_trips_through_json(self) -> None:
        if self.state is not None:
            wire = json.loads(canonical_json(to_wire(self.state)))
            assert from_wire(DiagnosisState, wire) == self.state


TestDiagnosisMachine = DiagnosisMachine.TestCase
