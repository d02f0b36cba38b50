"""``diagnosis_core.testing`` tested: its strategies mean what they say, its doubles behave.

Valid strategies must always parse with the package's own parsers (and give
the value back); adversarial ones must never crash them; gatekeeper results
must normalize as their construction says; ledger cases must be checked as
their expectations say; whole-run strategies must load and run to the end;
the doubles must replay and record exactly; the invariant checks must catch
a doctored run.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from typing import Any

import attrs
import pytest
from _oracles import SCHEMA_NAMES, accepted_payload_is_sound
from hypothesis import given, settings
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.tools as dct
from diagnosis_core import (
    AsyncEffects,
    DiagnosisRequest,
    NonRetryableError,
    PayloadError,
    ReasonCode,
    RunConfig,
    Verdict,
)
from diagnosis_core.machine import AgentName
from diagnosis_core.protocol import GatekeeperStatus
from tests._reach import machine as dcm
from tests._reach import protocol as dcp
from tests._reach import scenarios as dcs
from tests._reach import testing as dt

PARSERS = (
    lambda text: dcp.parse_planner_plan(text, ["payment-timeout"]),
    dcp.parse_executor_evidence,
    dcp.parse_verifier_output,
    lambda text: dcp.parse_composer_output(text, ["c1"]),
)


def only_payload_errors(text: str) -> int:
    """Every parser either parses ``text`` to a sound payload or raises PayloadError.

    Sound (tests/_oracles.py): a JSON object its JSON Schema accepts (``jsonschema``),
    that parses back to itself. Returns how many parsers accepted the text.
    """
    accepted = 0
    for name, parse in zip(SCHEMA_NAMES, PARSERS, strict=True):
        try:
            value = parse(text)
        except PayloadError:
            continue
        accepted += 1
        accepted_payload_is_sound(name, parse, text, value)
    return accepted


# --- valid payloads --------------------------------------------------------------


@given(data=st.data())
def test_valid_planner_texts_parse_back_to_a_plan_of_the_catalog(data: st.DataObject) -> None:
    names = [skill.name for skill in data.draw(dt.skill_catalogs())]
    plan = data.draw(dt.planner_plans(names))
    assert plan.selected_skill is None or plan.selected_skill in names
    assert dcp.parse_planner_plan(data.draw(dt.payload_texts(plan)), names) == plan
    assert dcp.parse_planner_plan(data.draw(dt.planner_plan_texts(names)), names).steps


@given(data=st.data())
def test_valid_executor_texts_parse_back_to_the_evidence(data: st.DataObject) -> None:
    evidence = data.draw(dt.executor_evidences())
    assert dcp.parse_executor_evidence(data.draw(dt.payload_texts(evidence))) == evidence
    assert (evidence.evidence_status is dcp.EvidenceStatus.NO_EVIDENCE) == (not evidence.claims)
    dcp.parse_executor_evidence(data.draw(dt.executor_evidence_texts()))


@given(data=st.data())
def test_valid_verifier_texts_parse_back_and_refer_only_to_the_given_claims(
    data: st.DataObject,
) -> None:
    claim_ids = data.draw(st.lists(dt.identifiers(), max_size=4, unique=True))
    output = data.draw(dt.verifier_outputs(claim_ids))
    referred = {fact.claim_id for fact in output.facts_checked} | set(output.allowed_claim_ids)
    assert referred <= set(claim_ids)
    assert dcp.parse_verifier_output(data.draw(dt.payload_texts(output))) == output
    dcp.parse_verifier_output(data.draw(dt.verifier_output_texts(claim_ids, unknown_ids=True)))


@given(data=st.data())
def test_valid_composer_texts_parse_back_and_cite_only_allowed_claims(
    data: st.DataObject,
) -> None:
    allowed = data.draw(st.lists(dt.identifiers(), max_size=4, unique=True))
    output = data.draw(dt.composer_outputs(allowed))
    assert set(output.cited_claim_ids) <= set(allowed) and output.answer.strip()
    assert dcp.parse_composer_output(data.draw(dt.payload_texts(output)), allowed) == output
    dcp.parse_composer_output(data.draw(dt.composer_output_texts(allowed)), allowed)


@given(value=dt.gatekeeper_result_values() | dt.diagnosis_requests() | dt.diagnosis_configs())
def test_value_strategies_produce_values_that_round_trip(value: object) -> None:
    assert dc.from_wire(type(value), json.loads(dc.to_json(value))) == value


# --- adversarial payloads ---------------------------------------------------------------


_VALID_DOCUMENTS = (
    dt.planner_plans(["payment-timeout"]).map(dc.to_wire)
    | dt.executor_evidences().map(dc.to_wire)
    | dt.verifier_outputs(["c1"]).map(dc.to_wire)
    | dt.composer_outputs(["c1"]).map(dc.to_wire)
)


@given(data=st.data())
def test_adversarial_texts_are_rejected_or_sound_around_an_accepted_document(
    data: st.DataObject,
) -> None:
    document = data.draw(_VALID_DOCUMENTS)
    # The document the hostile variants are made from is accepted (by its own parser) …
    assert only_payload_errors(json.dumps(document)) >= 1
    # … and each variant is rejected, or accepted only as a sound payload.
    only_payload_errors(data.draw(dt.adversarial_texts(document)))


@given(text=dt.random_garbage_texts())
def test_random_garbage_is_rejected_unless_it_happens_to_be_a_sound_payload(text: str) -> None:
    only_payload_errors(text)


@given(data=st.data())
def test_mutated_documents_stay_json_and_are_judged_by_the_parser(data: st.DataObject) -> None:
    evidence = data.draw(dt.executor_evidences(min_claims=1))
    document = data.draw(dt.payload_documents(evidence))
    mutated = data.draw(dt.mutated_documents(document))
    text = data.draw(dt.json_document_texts(mutated))
    assert json.loads(dcp.extract_json_text(text)) == mutated
    only_payload_errors(text)


# --- gatekeeper results ----------------------------------------------------------------


@given(data=st.data())
def test_consistent_gatekeeper_results_normalize_as_their_entries_say(
    data: st.DataObject,
) -> None:
    evidence = data.draw(dt.executor_evidences())
    raw = data.draw(dt.gatekeeper_results(evidence))
    entries: list[Any] = raw.get("checked_bindings") or []  # type: ignore[assignment]
    passes = len([entry for entry in entries if entry["status"].strip().lower() == "pass"])
    normalized = dcm.normalize_gatekeeper_result(raw)
    expected = (
        GatekeeperStatus.PASS
        if passes == len(entries)
        else GatekeeperStatus.LOW_CONFID
        if passes
        else GatekeeperStatus.REJECT
    )
    assert normalized.status is expected, normalized.problem
    assert (normalized.checked, normalized.passed) == (len(entries), passes)
    keys = {key for key, _ in dt.binding_keys(evidence)}
    assert {entry.key for entry in normalized.checked_bindings} == keys


@given(data=st.data())
def test_fixed_passes_are_exactly_the_trusted_bindings(data: st.DataObject) -> None:
    evidence = data.draw(dt.executor_evidences())
    keys = [key for key, _ in dt.binding_keys(evidence)]
    passed = data.draw(st.sets(st.sampled_from(keys))) if keys else set()
    raw = data.draw(dt.gatekeeper_results(evidence, passed=passed))
    normalized = dcm.normalize_gatekeeper_result(raw)
    trusted = dcm.count_trusted_bindings(evidence, normalized.checked_bindings)
    assert trusted == len(passed)


@given(data=st.data())
def test_contradictory_and_malformed_results_are_invalid(data: st.DataObject) -> None:
    evidence = data.draw(dt.executor_evidences())
    raw = data.draw(
        dt.contradictory_gatekeeper_results(evidence) | dt.malformed_gatekeeper_results(evidence)
    )
    normalized = dcm.normalize_gatekeeper_result(raw)
    assert normalized.status is GatekeeperStatus.REJECT
    assert normalized.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT


@given(data=st.data())
def test_any_raw_result_or_hostile_value_normalizes_without_raising(data: st.DataObject) -> None:
    evidence = data.draw(dt.executor_evidences())
    raw = data.draw(dt.gatekeeper_raw_results(evidence) | dt.hostile_gatekeeper_values())
    normalized = dcm.normalize_gatekeeper_result(raw)
    assert (normalized.status is GatekeeperStatus.REJECT) == (normalized.reason_code is not None)
    with contextlib.suppress(PayloadError):
        dcp.parse_gatekeeper_result(raw)


@given(case=dt.ledger_cases())
def test_ledger_cases_are_checked_as_they_expect(case: dt.LedgerCase) -> None:
    raw = dc.ReferenceGatekeeper(case.ledger())("run-1", case.executor_output)
    assert (raw["status"], raw["level"]) == case.expected_status
    entries = raw["checked_bindings"]
    assert isinstance(entries, list)
    assert len(entries) == len(case.expected)
    for entry in entries:
        key = (entry["claim_id"], entry["source_invocation_id"], entry["tool_name"],
               entry["raw_path"])
        failure = case.expected[key]
        if failure is None:
            assert entry["status"] == "pass"
            if key in case.matched:
                assert entry["matched_text"] == case.matched[key]
        else:
            assert (entry["status"], entry["reason"]) == ("fail", failure.value)


@given(data=st.data())
def test_tool_ledger_records_always_form_a_ledger(data: st.DataObject) -> None:
    outputs = [data.draw(dt.executor_evidences()) for _ in range(2)]
    records = data.draw(dt.tool_ledger_records(*outputs))
    ledger = dct.ledger_from_records(records)
    for output in outputs:
        normalized = dcm.normalize_gatekeeper_result(dc.ReferenceGatekeeper(ledger)("r", output))
        assert normalized.reason_code is not ReasonCode.GATEKEEPER_INVALID_RESULT


# --- whole runs --------------------------------------------------------------------------


@given(document=dt.scenarios())
def test_scenarios_load_and_replay_to_the_end(document: dict[str, Any]) -> None:
    scenario = dc.load_scenario(document)
    assert ("tool_ledger" in document) == (scenario.tool_ledger is not None)
    state = dc.replay_scenario(scenario)
    assert dt.run_invariant_violations(state) == ()


@given(document=dt.scenarios(gatekeeper="ledger", adversarial=False))
def test_scenarios_can_be_restricted_to_ledgers_and_valid_replies(document: dict[str, Any]) -> None:
    assert "tool_ledger" in document and "gatekeeper" not in document
    for entries in document["responses"].values():
        for entry in entries:
            if "text" in entry:
                dcp.extract_json_text(entry["text"])  # a valid encoding, never garbage


@given(script=dt.effect_scripts())
def test_effect_scripts_run_alike_on_both_drivers(script: dt.EffectScript) -> None:
    state = dc.run_diagnosis(script.request, script.effects())
    assert dt.run_invariant_violations(state) == ()
    async_state = asyncio.run(dc.arun_diagnosis(script.request, script.async_effects()))
    assert dc.to_json(async_state.result) == dc.to_json(state.result)


@given(script=dt.effect_scripts(adversarial=True))
@settings(max_examples=25)
def test_a_read_counting_gatekeeper_value_is_made_anew_for_every_run(
    script: dt.EffectScript,
) -> None:
    # A hostile mapping that says "pass" to its first reader only: shared between
    # two runs of one script, the second run saw "fail" (a flaky property above).
    from diagnosis_core.testing._results import _FlipFlopMapping
    from diagnosis_core.testing._scenarios import _Fresh

    count = len(script.gatekeeper)
    flip = attrs.evolve(script, gatekeeper=(_Fresh(_FlipFlopMapping),) * count)
    new = attrs.evolve(script, gatekeeper=tuple(_FlipFlopMapping() for _ in range(count)))
    expected = dc.to_json(dc.run_diagnosis(new.request, new.effects()).result)
    first = dc.run_diagnosis(flip.request, flip.effects())
    second = asyncio.run(dc.arun_diagnosis(flip.request, flip.async_effects()))
    third = dc.run_diagnosis(flip.request, flip.effects())
    assert dc.to_json(first.result) == dc.to_json(second.result) == dc.to_json(third.result)
    assert dc.to_json(first.result) == expected


@given(planted=dt.planted_scenarios())
def test_planted_canaries_are_unique_and_none_contains_another(
    planted: dt.PlantedScenario,
) -> None:
    text = json.dumps(planted.document, ensure_ascii=False)
    canaries = [canary for tokens in planted.canaries.values() for canary in tokens]
    assert len(set(canaries)) == len(canaries)
    for canary in canaries:
        assert sum(canary in other for other in canaries) == 1
    found = [canary for canary in canaries if canary in text]
    assert found or not canaries or "error" in json.dumps(planted.document["responses"])
    dc.load_scenario(planted.document)


def test_leaks_are_reported_with_plant_sink_and_place() -> None:
    canary = "QEX1ZabcdQ"
    canaries = {dt.Plant.EXCERPT: (canary,), dt.Plant.TRACE_TOOL: ("QTT2ZabcdQ",)}
    planted = dt.PlantedScenario({}, canaries)
    run = {
        "outcome": "PRE_VERIFICATION_FALLBACK",
        "answer": "tools: QTT2ZabcdQ",
        "invocations": [{"agent": "verifier", "round": 1, "attempt": 2, "input": f"..{canary}.."}],
    }
    assert planted.leaks(run) == (
        dt.Leak(dt.Plant.EXCERPT, canary, dt.Sink.VERIFIER_INPUT, "verifier round 1 attempt 2"),
    )
    run["outcome"] = "POST_VERIFICATION_FALLBACK"
    assert dt.Leak(dt.Plant.TRACE_TOOL, "QTT2ZabcdQ", dt.Sink.POST_VERIFICATION_FALLBACK,
                   "final answer") in planted.leaks(run)


# --- exceptions ---------------------------------------------------------------------------


@given(error=dt.unknown_exceptions(base_exceptions=True))
def test_unknown_exceptions_are_really_unknown(error: BaseException) -> None:
    real = type(error)
    assert not issubclass(real, TimeoutError | ConnectionError | dc.DiagnosisError)
    flag = inspect.getattr_static(error, "retryable", None)
    assert not isinstance(flag, bool) or flag is False


@given(error=dt.agent_exceptions())
def test_agent_exceptions_are_exceptions_the_drivers_catch(error: Exception) -> None:
    assert issubclass(type(error), Exception)
    result = dcm.perform_effect(
        dcm.InvokeAgent(AgentName.PLANNER, "{}", RunConfig("r", "s"), 1, 1),
        dt.scripted_effects(planner=[error]),
    )
    assert isinstance(result, dcm.AgentFailed)


# --- doubles ---------------------------------------------------------------------------------

RUN = RunConfig("run-1", "chat-1")


def test_scripted_invoker_plays_its_script_records_inputs_then_refuses() -> None:
    invoker = dt.ScriptedInvoker(["first", TimeoutError("slow")])
    assert invoker("a", RUN) == "first"
    with pytest.raises(TimeoutError):
        invoker("b", RUN)
    assert invoker.remaining == 0
    with pytest.raises(NonRetryableError):
        invoker("c", RUN)
    assert invoker.inputs == ["a", "b", "c"] and invoker.configs == [RUN] * 3


def test_async_scripted_invoker_plays_like_the_sync_one() -> None:
    invoker = dt.AsyncScriptedInvoker(["only"])
    assert asyncio.run(invoker("a", RUN)) == "only"
    with pytest.raises(NonRetryableError):
        asyncio.run(invoker("b", RUN))
    assert invoker.inputs == ["a", "b"]


def test_fake_gatekeeper_plays_results_and_errors_then_responds() -> None:
    evidence = dcp.parse_executor_evidence(
        '{"schema_version": "executor_evidence_v2", "evidence_status": "evidence_found", "claims":'
        ' [{"claim_id": "c1", "text": "t", "bindings": [{"source_invocation_id": "i",'
        ' "tool_name": "q", "raw_path": "$.a", "evidence_excerpt": "e"}]}]}'
    )
    gatekeeper = dt.FakeGatekeeper([None, ConnectionError("down")], respond=dt.passing_gatekeeper)
    assert gatekeeper("run-1", evidence) is None
    with pytest.raises(ConnectionError):
        gatekeeper("run-1", evidence)
    normalized = dcm.normalize_gatekeeper_result(gatekeeper("run-1", evidence))
    assert normalized.status is GatekeeperStatus.PASS
    assert dcm.count_trusted_bindings(evidence, normalized.checked_bindings) == 1
    assert [call[0] for call in gatekeeper.calls] == ["run-1"] * 3
    with pytest.raises(NonRetryableError):
        dt.FakeGatekeeper()("run-1", evidence)
    async_gatekeeper = dt.AsyncFakeGatekeeper([{"status": "pass"}])
    assert asyncio.run(async_gatekeeper("run-1", evidence)) == {"status": "pass"}


def test_recording_wrappers_keep_every_input_also_when_the_effect_raises() -> None:
    invoker = dt.RecordingInvoker(dt.ScriptedInvoker(["ok", ValueError("bad")]), name="verifier")
    assert invoker("x", RUN) == "ok"
    with pytest.raises(ValueError):
        invoker("y", RUN)
    assert invoker.inputs == ["x", "y"] and invoker.configs == [RUN, RUN]
    assert invoker.outputs[0] == "ok" and isinstance(invoker.outputs[1], ValueError)
    assert invoker.journal == [dt.RecordedCall("verifier", "x"), dt.RecordedCall("verifier", "y")]
    async_invoker = dt.AsyncRecordingInvoker(dt.AsyncScriptedInvoker([KeyError("k")]))
    with pytest.raises(KeyError):
        asyncio.run(async_invoker("z", RUN))
    assert async_invoker.inputs == ["z"] and isinstance(async_invoker.outputs[0], KeyError)
    gatekeeper = dt.RecordingGatekeeper(dt.FakeGatekeeper([RuntimeError("x"), {"status": "pass"}]))
    evidence = dc.ExecutorEvidence(dcp.EvidenceStatus.NO_EVIDENCE, ())
    with pytest.raises(RuntimeError):
        gatekeeper("r", evidence)
    assert gatekeeper("r", evidence) == {"status": "pass"}
    assert gatekeeper.calls == [("r", evidence)] * 2 and len(gatekeeper.results) == 2
    async_gatekeeper = dt.AsyncRecordingGatekeeper(dt.AsyncFakeGatekeeper([OSError("x"), 1]))
    with pytest.raises(OSError):
        asyncio.run(async_gatekeeper("r", evidence))
    assert asyncio.run(async_gatekeeper("r", evidence)) == 1
    assert [call.effect for call in async_gatekeeper.journal] == ["gatekeeper"] * 2


PLAN = '{"steps": [{"step_id": "s1", "goal": "g"}]}'
EVIDENCE = (
    '{"schema_version": "executor_evidence_v2", "evidence_status": "evidence_found", "claims":'
    ' [{"claim_id": "c1", "text": "t", "bindings": [{"source_invocation_id": "i",'
    ' "tool_name": "q", "raw_path": "$.a", "evidence_excerpt": "e"}]}]}'
)
VERIFIER = (
    '{"verdict": "PASS", "groundedness_score": 1, "facts_checked": [],'
    ' "allowed_claim_ids": ["c1"]}'
)
COMPOSER = '{"answer": "done", "cited_claim_ids": ["c1"]}'


def test_effects_recorder_journal_is_the_runs_call_order() -> None:
    recorder = dt.EffectsRecorder(
        dt.scripted_effects(
            planner=[TimeoutError("t"), PLAN], executor=[EVIDENCE], verifier=[VERIFIER],
            composer=[COMPOSER], respond=dt.passing_gatekeeper,
        )
    )
    state = dc.run_diagnosis(DiagnosisRequest("why?", RUN), recorder.effects)
    assert state.answer == "done"
    order = [call.effect for call in recorder.journal]
    assert order == ["planner", "planner", "executor", "gatekeeper", "verifier", "composer"]
    assert recorder.inputs("planner") == [r.input for r in state.invocations[:2]]
    assert recorder.gatekeeper.calls[0][0] == "run-1"
    assert dt.run_invariant_violations(state) == ()


def test_async_effects_recorder_records_an_asyncio_run() -> None:
    sync = dt.scripted_effects(planner=[PLAN], executor=[EVIDENCE], verifier=[VERIFIER],
                               composer=[COMPOSER], respond=dt.passing_gatekeeper)
    recorder = dt.AsyncEffectsRecorder(AsyncEffects.from_sync(sync))
    state = asyncio.run(dc.arun_diagnosis(DiagnosisRequest("why?", RUN), recorder.effects))
    assert state.answer == "done"
    assert [call.effect for call in recorder.journal] == [
        "planner", "executor", "gatekeeper", "verifier", "composer"
    ]
    assert recorder.inputs("composer") == [state.invocations[-1].input]


def test_core_doubles_have_one_home_the_scenarios_namespace() -> None:
    doubles = {"ScriptedAgent", "ScriptedGatekeeper", "ScriptedResponse",
               "ScriptedGatekeeperEntry", "scenario_effects"}
    assert doubles <= set(dcs.__all__)
    assert doubles.isdisjoint(dt.__all__)
    assert dc.scenario_effects is dcs.scenario_effects


def test_public_names_are_exactly_all() -> None:
    public = {name for name in vars(dt) if not name.startswith("_")} - {"annotations"}
    modules = {name for name in public if inspect.ismodule(getattr(dt, name))}
    assert set(dt.__all__) == public - modules
    assert sorted(dt.__all__) == dt.__all__ or len(dt.__all__) == len(set(dt.__all__))


# --- invariant checks catch doctored runs ------------------------------------------------------


def _finished_run() -> dc.DiagnosisState:
    effects = dt.scripted_effects(
        planner=[TimeoutError("t"), PLAN], executor=[EVIDENCE],
        gatekeeper=[{"status": "fail", "level": "low_confid", "checked_bindings": [
            {"claim_id": "c1", "source_invocation_id": "i", "tool_name": "q", "raw_path": "$.a",
             "status": "pass", "matched_text": "e"}]}],
        verifier=[VERIFIER], composer=[COMPOSER],
    )
    return dc.run_diagnosis(DiagnosisRequest("why?", RUN), effects)


def test_invariant_checks_accept_a_correct_run_and_catch_doctored_ones() -> None:
    state = _finished_run()
    dt.assert_run_invariants(state)
    evaluation = state.verifier_evaluations[0]
    assert evaluation.effective_verdict is Verdict.LOW_CONFID
    doctored = {
        "1": attrs.evolve(state, answer=" "),
        "3": attrs.evolve(
            state, verifier_evaluations=(attrs.evolve(evaluation, effective_verdict=Verdict.PASS),)
        ),
        "4": attrs.evolve(state, events=tuple(
            attrs.evolve(e, attempt=2) if e.node is dcm.NodeName.EXECUTOR else e
            for e in state.events)),
        "5": attrs.evolve(state, invocations=(
            state.invocations[0], attrs.evolve(state.invocations[1], input="changed"),
            *state.invocations[2:])),
    }
    for number, broken in doctored.items():
        problems = dt.run_invariant_violations(broken)
        assert problems and all(problem.startswith(number) for problem in problems[:1]), problems
        with pytest.raises(AssertionError):
            dt.assert_run_invariants(broken)


def test_invariant_checks_catch_an_evidence_retry_without_a_gap() -> None:
    state = _finished_run()
    retry = dc.TraceEvent(len(state.events) + 1, dcm.NodeName.EVIDENCE_RETRY, 1, 1,
                          dcm.NodeStatus.COMPLETED, None, None)
    broken = attrs.evolve(state, events=(*state.events, retry), evidence_retries=1)
    assert any("evidence retry" in problem for problem in dt.run_invariant_violations(broken))


def _renumbered(events: list[dc.TraceEvent]) -> tuple[dc.TraceEvent, ...]:
    return tuple(attrs.evolve(event, seq=index) for index, event in enumerate(events, 1))


def _doctorings() -> list[tuple[str, Any]]:
    state = _finished_run()
    events = list(state.events)
    evaluation = state.verifier_evaluations[0]
    verifier_at = next(i for i, e in enumerate(events) if e.node is dcm.NodeName.VERIFIER)
    executor = next(e for e in events if e.node is dcm.NodeName.EXECUTOR)
    retry = dc.TraceEvent(
        0, dcm.NodeName.EVIDENCE_RETRY, 1, 1, dcm.NodeStatus.COMPLETED, None, None
    )
    invocations = list(state.invocations)
    return [
        ("did not reach END", attrs.evolve(state, outcome=None)),
        ("exceed the bound", attrs.evolve(state, events=_renumbered(events * 3))),
        ("seq numbers", attrs.evolve(state, events=(attrs.evolve(events[0], seq=9), *events[1:]))),
        ("without a gatekeeper result", attrs.evolve(state, gatekeeper_audits=())),
        ("above the model verdict", attrs.evolve(state, verifier_evaluations=(
            attrs.evolve(evaluation, model_verdict=Verdict.REJECT),))),
        ("has effective above", attrs.evolve(state, events=tuple(
            attrs.evolve(e, details=attrs.evolve(e.details, effective_verdict=Verdict.PASS))
            if e.node is dcm.NodeName.VERIFIER else e for e in events))),
        ("more than one executor call",
         attrs.evolve(state, events=_renumbered([*events, executor]))),
        ("gatekeeper calls per round", attrs.evolve(state, events=_renumbered(
            [e for e in events if e.node is not dcm.NodeName.GATEKEEPER]))),
        ("calls.gatekeeper", attrs.evolve(state, calls=attrs.evolve(state.calls, gatekeeper=5))),
        ("evidence retries with limit", attrs.evolve(state, evidence_retries=1)),
        ("without a verifier result", attrs.evolve(state, evidence_retries=1, events=_renumbered(
            [*events[:verifier_at], retry, *events[verifier_at:]]))),
        ("without a verifier result", attrs.evolve(
            state, evidence_retries=1, verifier_evaluations=(),
            events=_renumbered([*events, retry]))),
        ("not 1..n", attrs.evolve(state, invocations=tuple(
            attrs.evolve(r, attempt=3) if r.attempt == 2 else r for r in invocations))),
        ("do not pair up", attrs.evolve(state, invocations=tuple(invocations[1:]))),
        ("does not hash", attrs.evolve(state, events=(
            attrs.evolve(events[0], input_sha256="0" * 64), *events[1:]))),
        ("does not count", attrs.evolve(state, calls=attrs.evolve(state.calls, planner=7))),
    ]


@pytest.mark.parametrize(("expected", "broken"), _doctorings(), ids=lambda value: str(value)[:30])
def test_each_invariant_check_reports_its_violation(expected: str, broken: Any) -> None:
    problems = dt.run_invariant_violations(broken)
    assert any(expected in problem for problem in problems), problems
