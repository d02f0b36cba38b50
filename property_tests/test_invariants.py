"""The invariants of spec §10, one property test each.

Runs are drawn with :mod:`diagnosis_core.testing`: mostly valid replies that
refer to each other (so runs reach every node), scripted failures of every
kind, hostile texts, and gatekeeper results that are consistent, malformed,
contradictory, arbitrary JSON or not JSON at all. Each test re-derives what
it checks from the recorded inputs and outputs instead of trusting the
machine's own summaries.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from collections import defaultdict
from typing import Any

import attrs
from hypothesis import given, settings, target
from hypothesis import strategies as st

from diagnosis_core import (
    AsyncEffects,
    DiagnosisRequest,
    DiagnosisState,
    FailureKind,
    PayloadError,
    RunConfig,
    TraceReport,
    Verdict,
    arun_diagnosis,
    build_trace_report,
    classify_failure,
    default_failure_classifier,
    from_json,
    load_scenario,
    replay,
    run_diagnosis,
    scenario_effects,
    scenario_request,
    to_json,
    to_wire,
)
from diagnosis_core.machine import (
    AgentFailed,
    AgentName,
    Finished,
    NodeName,
    NodeStatus,
    advance,
    next_action,
    perform_effect,
    start_diagnosis,
)
from diagnosis_core.protocol import (
    GatekeeperStatus,
    Verification,
    canonical_json,
    parse_verifier_output,
)
from diagnosis_core.testing import (
    EffectsRecorder,
    composer_outputs,
    effect_scripts,
    executor_evidences,
    gatekeeper_result_values,
    planner_plans,
    planted_scenarios,
    scenarios,
    scripted_effects,
    skill_catalogs,
    unknown_exceptions,
    verifier_outputs,
)
from diagnosis_core.testing._values import host_subclassed

RANK = {Verdict.REJECT: 0, Verdict.LOW_CONFID: 1, Verdict.PASS: 2}
CEILING = {GatekeeperStatus.PASS: Verdict.PASS, GatekeeperStatus.LOW_CONFID: Verdict.LOW_CONFID}
GAPS = {Verification.NO_EVIDENCE, Verification.INDIRECT_SUPPORT}


def round_trips(value: object) -> bool:
    """``to_json`` writes UTF-8-encodable text that the package's own ``from_json`` reads back.

    The package's loader, not ``json.loads``: what it accepts is the guarantee
    (spec §15), including lone surrogates kept from exception messages and
    gatekeeper results.
    """
    text = to_json(value)
    text.encode("utf-8")  # raises if a surrogate was written raw
    return from_json(type(value), text) == value


# --- 1 ----------------------------------------------------------------------------


@given(script=effect_scripts())
def test_every_run_ends_with_a_non_empty_answer_within_the_node_bound(script: Any) -> None:
    state = start_diagnosis(script.request)
    effects = script.effects()
    bound = script.request.config.max_node_executions
    steps = 0
    while not isinstance(action := next_action(state), Finished):
        steps += 1
        # Every effect result executes at least one node, so this cannot hang.
        assert steps <= bound, f"more than {bound} effects performed"
        state = advance(state, perform_effect(action, effects))
    result = action.result
    assert result.answer.strip()
    assert 1 <= len(result.trace) <= bound
    assert result.trace[-1].node in (
        NodeName.COMPOSER, NodeName.PRE_VERIFICATION_FALLBACK, NodeName.POST_VERIFICATION_FALLBACK
    )


# --- 2 ----------------------------------------------------------------------------


@given(planted=planted_scenarios())
def test_planted_canaries_never_reach_an_input_or_fallback_that_must_not_see_them(
    planted: Any,
) -> None:
    state = run_diagnosis(
        scenario_request(load_scenario(planted.document)),
        scenario_effects(load_scenario(planted.document)),
    )
    leaks = planted.leaks(state)
    assert not leaks, "\n".join(f"{leak.plant} -> {leak.sink} ({leak.where})" for leak in leaks)
    # The same check on the JSON a host would get from ``replay``.
    assert not planted.leaks(replay(planted.document))


SUBCLASS_SECRET = "HOST-SUBCLASS-SECRET-\u2af7"


@given(script=effect_scripts(), data=st.data())
def test_host_subclasses_of_inputs_contribute_only_their_whitelisted_fields(
    script: Any, data: st.DataObject
) -> None:
    # Spec §15: whitelisted by field, not by class. Any item of the history or
    # the catalog may be a host subclass whose extra fields hold a secret.
    def maybe_subclassed(item: Any) -> Any:
        return host_subclassed(item, SUBCLASS_SECRET) if data.draw(st.booleans()) else item

    request = script.request
    hostile = attrs.evolve(
        request,
        history=tuple(maybe_subclassed(item) for item in request.history),
        skills=tuple(maybe_subclassed(item) for item in request.skills),
    )
    plain = run_diagnosis(request, script.effects())
    state = run_diagnosis(hostile, script.effects())
    for record in state.invocations:
        assert SUBCLASS_SECRET not in record.input, record.agent
    # The planner input holds exactly {role, content} and {name, description},
    # read from the items themselves (not from the package's own encoding).
    planner = json.loads(state.invocations[0].input)
    assert planner["skills"] == [
        {"name": skill.name, "description": skill.description} for skill in request.skills
    ]
    assert all(set(message) == {"role", "content"} for message in planner["history"])
    assert [r.input for r in state.invocations] == [r.input for r in plain.invocations]


# --- 3 ----------------------------------------------------------------------------


# ``database=None``: with an example database, Hypothesis keeps a Pareto front of every
# targeted example (to save it there) and compares each new one with it by sort keys over
# its whole choice sequence (a whole scenario's texts): three quarters of this test's time.
# The examples, their number and the target phase (hill climbing on ``target``) are the
# same; a failure still prints the blob that reproduces it (``print_blob``, conftest.py).
@settings(database=None)
@given(script=effect_scripts())
def test_effective_verdict_never_exceeds_the_ceiling_or_the_model_verdict(script: Any) -> None:
    state = run_diagnosis(script.request, script.effects())
    excess = -3  # steer the search towards model verdicts above the ceiling
    for evaluation in state.verifier_evaluations:
        audits = [a for a in state.gatekeeper_audits if a.round == evaluation.round]
        ceiling = CEILING[audits[-1].status]  # a REJECT round never reaches the verifier
        excess = max(excess, RANK[evaluation.model_verdict] - RANK[ceiling])
        assert RANK[evaluation.effective_verdict] <= RANK[ceiling]
        assert RANK[evaluation.effective_verdict] <= RANK[evaluation.model_verdict]
    target(float(excess), label="model verdict above the gatekeeper ceiling")
    for record in state.invocations:
        if record.agent is AgentName.COMPOSER:
            sent = json.loads(record.input)
            audits = [a for a in state.gatekeeper_audits if a.round == record.round]
            assert RANK[Verdict(sent["effective_verdict"])] <= RANK[CEILING[audits[-1].status]]
    result = state.result
    if result.effective_verdict is not None:
        assert result.model_verdict is not None
        assert RANK[result.effective_verdict] <= RANK[result.model_verdict]


# --- 4 ----------------------------------------------------------------------------


def _has_critical_gap(verifier_input: str, reply: object) -> bool:
    """Recompute spec §6.4 from what the verifier saw and said."""
    if not isinstance(reply, str):
        return False
    try:
        output = parse_verifier_output(reply)
    except PayloadError:
        return False
    sent = json.loads(verifier_input)
    verified = {claim["claim_id"] for claim in sent["verified_executor_output"]}
    ceiling = Verdict(sent["gatekeeper"]["ceiling"])
    effective = min(output.verdict, ceiling, key=RANK.__getitem__)
    gap = any(
        fact.is_critical and fact.verification in GAPS and fact.claim_id in verified
        for fact in output.facts_checked
    )
    return gap and effective is Verdict.LOW_CONFID


@given(script=effect_scripts())
def test_gatekeeper_once_per_executor_round_executor_never_retried_evidence_retry_needs_gap(
    script: Any,
) -> None:
    recorder = EffectsRecorder(script.effects())
    state = run_diagnosis(script.request, recorder.effects)
    executor_events = [e for e in state.events if e.node is NodeName.EXECUTOR]
    assert all(event.attempt == 1 for event in executor_events)
    assert len(recorder.executor.inputs) == len(executor_events) <= 2
    assert len({event.round for event in executor_events}) == len(executor_events)
    completed_rounds = [e.round for e in executor_events if e.status is NodeStatus.COMPLETED]
    gatekeeper_rounds = [e.round for e in state.events if e.node is NodeName.GATEKEEPER]
    assert gatekeeper_rounds == completed_rounds
    assert len(recorder.gatekeeper.calls) == len(completed_rounds) == state.calls.gatekeeper
    for run_id, _ in recorder.gatekeeper.calls:
        assert run_id == script.request.run.run_id
    # Evidence retry: at most once (and within the limit), and only right after a
    # verifier reply that had a critical gap under an effective LOW_CONFID.
    retries = [e for e in state.events if e.node is NodeName.EVIDENCE_RETRY]
    assert len(retries) <= min(1, script.request.config.evidence_retry_limit)
    for retry in retries:
        before = state.events[retry.seq - 2]
        assert before.node is NodeName.VERIFIER and before.status is NodeStatus.COMPLETED
        call = len([e for e in state.events[: retry.seq] if e.node is NodeName.VERIFIER]) - 1
        assert _has_critical_gap(recorder.verifier.inputs[call], recorder.verifier.outputs[call])


# --- 5 ----------------------------------------------------------------------------


@given(script=effect_scripts())
def test_technical_retry_resends_the_first_attempts_input_byte_for_byte(script: Any) -> None:
    recorder = EffectsRecorder(script.effects())
    state = run_diagnosis(script.request, recorder.effects)
    groups: dict[tuple[AgentName, int], list[str]] = defaultdict(list)
    for record in state.invocations:
        groups[(record.agent, record.round)].append(record.input)
    for (agent, _round), sent in groups.items():
        assert all(text == sent[0] for text in sent), f"{agent} retried with another input"
    # What the effects really received is what the state recorded, call by call.
    for agent in AgentName:
        recorded = [r.input for r in state.invocations if r.agent is agent]
        assert recorder.inputs(agent.value) == recorded
    llm_events = [e for e in state.events if e.node.value in {a.value for a in AgentName}]
    for event, record in zip(llm_events, state.invocations, strict=True):
        assert event.input_sha256 == hashlib.sha256(record.input.encode()).hexdigest()


# --- 6 ----------------------------------------------------------------------------


@given(error=unknown_exceptions(base_exceptions=True))
def test_unknown_exceptions_are_never_classified_retryable(error: BaseException) -> None:
    assert default_failure_classifier(error) is not FailureKind.RETRYABLE
    assert classify_failure(default_failure_classifier, error) is not FailureKind.RETRYABLE
    if not issubclass(type(error), Exception):
        return  # KeyboardInterrupt and friends propagate through the drivers
    request = DiagnosisRequest("why?", RunConfig("run-1", "chat-1"))
    effects = scripted_effects(planner=[error, '{"steps": [{"step_id": "s", "goal": "g"}]}'])
    state = start_diagnosis(request)
    action = next_action(state)
    result = perform_effect(action, effects)  # type: ignore[arg-type]
    assert isinstance(result, AgentFailed)
    assert result.kind is not FailureKind.RETRYABLE
    state = advance(state, result)
    assert state.events[0].status is NodeStatus.NON_RETRYABLE_FAILED
    assert state.finished and state.calls.planner == 1  # never retried


# --- 7 ----------------------------------------------------------------------------


@given(document=scenarios())
def test_same_scenario_replays_to_byte_identical_json(document: dict[str, Any]) -> None:
    first = canonical_json(replay(document))
    assert canonical_json(replay(copy.deepcopy(document))) == first
    reloaded = json.loads(json.dumps(document))
    # A high and a low surrogate written as two code points come back from any JSON
    # decoder as one character: that reloaded document is another scenario (another
    # default run id), not the same one, so it is compared only when JSON kept it.
    if reloaded == document:
        assert canonical_json(replay(reloaded)) == first
    scenario = load_scenario(document)
    effects = AsyncEffects.from_sync(scenario_effects(scenario))
    state = asyncio.run(arun_diagnosis(scenario_request(scenario), effects))
    assert canonical_json(to_wire(state.result)) == first


# --- 8 ----------------------------------------------------------------------------


@given(data=st.data())
def test_payloads_states_and_trace_reports_round_trip_through_canonical_json(
    data: st.DataObject,
) -> None:
    skills = data.draw(skill_catalogs())
    evidence = data.draw(executor_evidences())
    claim_ids = [claim.claim_id for claim in evidence.claims]
    for value in (
        data.draw(planner_plans([skill.name for skill in skills])),
        evidence,
        data.draw(verifier_outputs(claim_ids, unknown_ids=True)),
        data.draw(composer_outputs(claim_ids)),
        data.draw(gatekeeper_result_values()),
        *skills,
    ):
        assert round_trips(value), value
    script = data.draw(effect_scripts())
    effects = script.effects()
    state = start_diagnosis(script.request)
    assert round_trips(state)
    while not isinstance(action := next_action(state), Finished):
        state = advance(state, perform_effect(action, effects))
        assert round_trips(state)
        assert round_trips(build_trace_report(state))
    assert round_trips(action.result)
    report = build_trace_report(state)
    assert from_json(TraceReport, to_json(report).encode("utf-8").decode("utf-8")) == report
    assert from_json(DiagnosisState, to_json(state).encode("utf-8").decode("utf-8")) == state


_VERDICTS = st.sampled_from([Verdict.PASS, Verdict.LOW_CONFID, Verdict.REJECT])


@given(
    model=_VERDICTS,
    low_confid=st.booleans(),
    claims=st.integers(min_value=1, max_value=4),
    failed=st.sets(st.integers(min_value=1, max_value=3)),
)
def test_effective_verdict_is_exactly_the_model_verdict_capped_by_the_ceiling(
    model: Verdict, low_confid: bool, claims: int, failed: set[int]
) -> None:
    """Invariant 3 aimed at its edge: every model verdict under both ceilings."""
    ids = [f"c{index}" for index in range(claims)]
    bindings = {
        claim_id: {"source_invocation_id": f"inv-{claim_id}", "tool_name": "query_logs",
                   "raw_path": "$.m", "evidence_excerpt": "x"}
        for claim_id in ids
    }
    executor = {
        "schema_version": "executor_evidence_v2", "evidence_status": "evidence_found",
        "claims": [{"claim_id": claim_id, "text": f"claim {claim_id}", "bindings": [binding]}
                   for claim_id, binding in bindings.items()],
    }
    checked = []
    for index, claim_id in enumerate(ids):
        passes = not low_confid or index == 0 or index not in failed
        entry = {"claim_id": claim_id, **{k: v for k, v in bindings[claim_id].items()
                                          if k != "evidence_excerpt"},
                 "status": "pass" if passes else "fail"}
        if passes:
            entry["matched_text"] = "x"
        checked.append(entry)
    gatekeeper = (
        {"status": "fail", "level": "low_confid", "checked_bindings": checked}
        if low_confid
        else {"status": "pass", "checked_bindings": checked}
    )
    verifier = {"verdict": model.value, "groundedness_score": 0.5, "facts_checked": [],
                "allowed_claim_ids": ids}
    document = {
        "question": "q",
        "responses": {
            "planner": [{"text": json.dumps({"steps": [{"step_id": "s", "goal": "g"}]})}],
            "executor": [{"text": json.dumps(executor)}],
            "verifier": [{"text": json.dumps(verifier)}],
            "composer": [{"text": json.dumps({"answer": "a"})}],
        },
        "gatekeeper": [{"result": gatekeeper}],
    }
    result = replay(document)
    ceiling = Verdict.LOW_CONFID if low_confid else Verdict.PASS
    expected = min(model, ceiling, key=RANK.__getitem__)
    assert result["model_verdict"] == model.value
    assert result["effective_verdict"] == expected.value
    composer_input = json.loads(result["invocations"][-1]["input"])
    assert composer_input["effective_verdict"] == expected.value
