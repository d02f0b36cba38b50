"""The public API used the way a user would; it exists to be type-checked.

``mypy --strict diagnosis_core tests/typing`` must accept this file, so the
public types stay honest: every call below is one a host application or a
test suite makes. It is not collected by pytest and need not run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import assert_type

from hypothesis import given
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.testing as dt
from diagnosis_core import (
    Action,
    AgentName,
    AllowedClaim,
    AnswerMode,
    AsyncEffects,
    CallGatekeeper,
    CheckedBinding,
    ComposerOutput,
    ConfigError,
    DiagnosisConfig,
    DiagnosisRequest,
    DiagnosisResult,
    DiagnosisState,
    Effects,
    EvidenceGap,
    ExecutorEvidence,
    FailureKind,
    Finished,
    GatekeeperStatus,
    HistoryMessage,
    InvokeAgent,
    JsonValue,
    Locale,
    NormalizedGatekeeperResult,
    Outcome,
    PayloadError,
    PlannerPlan,
    ReasonCode,
    RetryContext,
    RunConfig,
    Scenario,
    ScenarioError,
    Skill,
    ToolBlockedError,
    TraceReport,
    Verdict,
    VerifiedInput,
    VerifierOutput,
)

# --- a request ---------------------------------------------------------------------

config = DiagnosisConfig(technical_retry_limit=2, evidence_retry_limit=1, locale=Locale.ZH_CN)
run = RunConfig("run-42", "chat-42", {"tenant": "shop"})
request = DiagnosisRequest(
    question="Why does the payment API time out?",
    run=run,
    history=(HistoryMessage("user", "checkout is slow"),),
    skills=(Skill("payment-timeout", "playbook for payment timeouts"),),
    config=config,
)
assert_type(config.max_node_executions, int)
assert_type(run.metadata, Mapping[str, str])

try:
    DiagnosisConfig(history_limit=1000)
except ConfigError as error:
    assert_type(str(error), str)


# --- effects: plain typed callables -------------------------------------------------


def call_model(prompt: str, config: RunConfig, /) -> str:
    """A host's LLM client (here: a canned reply)."""
    return json.dumps({"answer": f"{config.run_id}: {len(prompt)}"})


def check_citations(run_id: str, executor_output: ExecutorEvidence, /) -> Mapping[str, object]:
    """A host's gatekeeper service client."""
    return {"status": "pass", "checked_bindings": []}


def classify(error: BaseException) -> FailureKind:
    """A host's failure classifier."""
    if isinstance(error, ToolBlockedError):
        return FailureKind.TOOL_BLOCKED
    return dc.default_failure_classifier(error)


effects = Effects(
    planner=call_model,
    executor=call_model,
    verifier=call_model,
    composer=call_model,
    gatekeeper=check_citations,
    classifier=classify,
)


async def call_model_async(prompt: str, config: RunConfig, /) -> str:
    return call_model(prompt, config)


async def check_citations_async(run_id: str, executor_output: ExecutorEvidence, /) -> object:
    return check_citations(run_id, executor_output)


async_effects = AsyncEffects(
    planner=call_model_async,
    executor=call_model_async,
    verifier=call_model_async,
    composer=call_model_async,
    gatekeeper=check_citations_async,
)


# --- running ---------------------------------------------------------------------------


def run_sync() -> DiagnosisResult:
    state = dc.run_diagnosis(request, effects)
    assert_type(state, DiagnosisState)
    result = state.result
    assert_type(result.outcome, Outcome)
    assert_type(result.answer, str)
    assert_type(result.reason_code, ReasonCode | None)
    assert_type(result.effective_verdict, Verdict | None)
    report = dc.build_trace_report(state)
    assert_type(report, TraceReport)
    assert_type(dc.to_json(report), str)
    return result


async def run_async() -> Outcome:
    state = await dc.arun_diagnosis(request, async_effects)
    resumed = await dc.arun_diagnosis(request, AsyncEffects.from_sync(effects), state=state)
    return resumed.result.outcome


def drive_by_hand() -> str:
    """The sans-IO loop a custom orchestrator writes."""
    state = dc.start_diagnosis(request)
    while True:
        action: Action = dc.next_action(state)
        if isinstance(action, Finished):
            return action.result.answer
        if isinstance(action, InvokeAgent):
            assert_type(action.agent, AgentName)
            assert_type(action.input, str)
        else:
            assert_type(action, CallGatekeeper)
        state = dc.advance(state, dc.perform_effect(action, effects))


def save_and_restore(state: DiagnosisState) -> DiagnosisState:
    wire: JsonValue = dc.to_wire(state)
    text = dc.canonical_json(wire)
    return dc.from_json(DiagnosisState, text)


# --- payloads and decisions ----------------------------------------------------------------


def parse_everything(text: str) -> None:
    try:
        plan = dc.parse_planner_plan(text, ["payment-timeout"])
        assert_type(plan, PlannerPlan)
        evidence = dc.parse_executor_evidence(text)
        verdicts = dc.parse_verifier_output(text)
        assert_type(verdicts, VerifierOutput)
        answer = dc.parse_composer_output(text, ["c1"])
        assert_type(answer, ComposerOutput)
    except PayloadError as error:
        assert_type(error.path, str)
        return
    normalized = dc.normalize_gatekeeper_result(json.loads(text))
    assert_type(normalized, NormalizedGatekeeperResult)
    assert_type(normalized.status, GatekeeperStatus)
    checked: tuple[CheckedBinding, ...] = normalized.checked_bindings
    verified = dc.project_verified_input(evidence, checked)
    assert_type(verified, VerifiedInput)
    ceiling = dc.verdict_ceiling(normalized.status)
    effective = dc.apply_verdict_ceiling(verdicts.verdict, ceiling)
    assert_type(dc.answer_mode_for(effective), AnswerMode)
    gaps = dc.extract_evidence_gaps(verdicts.facts_checked)
    assert_type(gaps, tuple[EvidenceGap, ...])
    assert_type(dc.build_retry_context(verified, gaps), RetryContext)
    allowed = dc.select_allowed_claims(verified, verdicts.allowed_claim_ids)
    assert_type(allowed, tuple[AllowedClaim, ...])
    fallback = dc.render_pre_verification_fallback(
        reason_code=ReasonCode.NO_TRUSTED_EVIDENCE,
        run_id=run.run_id,
        gatekeeper_status=normalized.status,
        binding_counts=(normalized.checked, normalized.passed, normalized.failed),
        tool_trace=evidence.tool_trace_summary,
        config=config,
    )
    assert_type(fallback, str)
    schema: dict[str, JsonValue] = dc.json_schema(dc.SCHEMA_NAMES[0])
    assert schema


# --- scenarios and the reference gatekeeper ------------------------------------------------------


def replay_a_file(path: str) -> dict[str, JsonValue]:
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    try:
        scenario = dc.load_scenario(document)
    except ScenarioError:
        raise
    assert_type(scenario, Scenario)
    assert_type(dc.replay_scenario(scenario), DiagnosisState)
    return dc.replay(document)


def check_with_a_ledger(evidence: ExecutorEvidence) -> object:
    ledger = dc.ledger_from_records(
        [{"invocation_id": "inv-7", "tool_name": "query_logs", "success": True,
          "output": {"items": [{"message": "upstream timeout after 3000ms"}]}}]
    )
    assert_type(dc.resolve_raw_path({"a": [1]}, "$.a[0]"), object)
    assert_type(dc.match_excerpt("a  b", "a b"), str | None)
    gatekeeper = dc.ReferenceGatekeeper(ledger)
    return gatekeeper("run-1", evidence)


# --- the routing table ----------------------------------------------------------


def first_route() -> dc.Route:
    assert_type(dc.routing_mermaid(), str)
    return dc.choose_route(None, dc.RoutingFacts())


# --- diagnosis_core.testing -----------------------------------------------------


def doubles() -> tuple[str, ...]:
    planner = dt.ScriptedInvoker(['{"steps": [{"step_id": "s", "goal": "g"}]}', TimeoutError()])
    gatekeeper = dt.FakeGatekeeper([{"status": "pass"}], respond=dt.passing_gatekeeper)
    recorder = dt.EffectsRecorder(
        Effects(planner, call_model, call_model, call_model, gatekeeper)
    )
    state = dc.run_diagnosis(request, recorder.effects)
    assert_type(recorder.journal, list[dt.RecordedCall])
    assert_type(recorder.inputs("planner"), list[str])
    assert_type(dt.run_invariant_violations(state), tuple[str, ...])
    dt.assert_run_invariants(state)
    async_recorder = dt.AsyncEffectsRecorder(async_effects)
    asyncio.run(dc.arun_diagnosis(request, async_recorder.effects))
    return dt.run_invariant_violations(state)


@given(script=dt.effect_scripts(), planted=dt.planted_scenarios())
def test_my_orchestrator(script: dt.EffectScript, planted: dt.PlantedScenario) -> None:
    state = dc.run_diagnosis(script.request, script.effects())
    assert not dt.run_invariant_violations(state)
    leaks: tuple[dt.Leak, ...] = planted.leaks(dc.replay(planted.document))
    assert not leaks


@given(data=st.data())
def test_my_parser_wrapper(data: st.DataObject) -> None:
    evidence = data.draw(dt.executor_evidences())
    assert_type(evidence, ExecutorEvidence)
    text = data.draw(dt.payload_texts(evidence))
    assert dc.parse_executor_evidence(text) == evidence
    raw = data.draw(dt.gatekeeper_raw_results(evidence))
    assert_type(raw, JsonValue)
    case = data.draw(dt.ledger_cases())
    assert_type(case.expected_status, tuple[str, str | None])
    document: dict[str, object] = data.draw(dt.scenarios())
    assert document


def journal_a_run(request: DiagnosisRequest, effects: Effects, key: bytes) -> str:
    """A host loop that persists a signed journal, resumes it, and replays it."""
    sink = dc.ListJournalSink()
    sink_protocol: dc.JournalSink = sink
    recorder = dc.JournalRecorder(dc.Journal(request), sink=sink_protocol, key=key)
    state = dc.start_diagnosis(request)
    while not isinstance(action := dc.next_action(state), dc.Finished):
        started: dc.JournalEntry = recorder.begin(action)
        assert started.state is dc.EntryState.STARTED
        assert_type(dc.expected_call(action), dc.ExpectedCall)
        state = dc.advance(state, recorder.end(dc.perform_effect(action, effects)))
    journal: dc.Journal = recorder.journal
    text = dc.journal_to_json(journal)
    loaded = dc.journal_from_json(text)
    assert_type(dc.load_journal(dc.journal_to_wire(loaded)), dc.Journal)
    status: dc.JournalStatus = dc.journal_status(loaded, key=key)
    pending: dc.ExpectedCall | None = status.pending
    assert pending is None and status.complete
    resumed, resumed_state = dc.resume_journal(loaded, key=key, resend_gatekeeper=False)
    assert_type(resumed_state, DiagnosisState)
    assert dc.fold_journal(resumed, key=key) == state
    signed = dc.sign_journal(resumed, key)
    assert dc.sign_entry(signed, signed.entries[-1], key).mac == signed.entries[-1].mac
    assert dc.entry_mac(signed.entries[0], dc.request_mac(request, key), key)
    scenario: dict[str, JsonValue] = dc.journal_to_scenario(loaded, key=key, exact=True)
    output: dict[str, JsonValue] = dc.replay_journal(loaded, key=key)
    assert dc.replay(scenario) == output
    outcome: dc.JournalOutcome = dc.outcome_of(dc.AgentReplied("text"))
    assert isinstance(outcome, dc.RecordedReply | dc.RecordedAgentError)
    entry = dc.finish_entry(
        dc.append_entry(journal, dc.start_entry(journal, dc.InvokeAgent(
            AgentName.PLANNER, "{}", request.run, 1, 1))),
        dc.AgentFailed(FailureKind.RETRYABLE, "timeout"),
        tool_invocations=[dc.RecordedToolInvocation("inv-1", "query_logs", True)],
    )
    assert_type(dc.entry_result(entry), dc.EffectResult)
    call: dc.JournalCall = entry.call
    for kind in (dc.RecordedGatekeeperResult.of({"status": "pass"}),
                 dc.RecordedGatekeeperError("down"), dc.RecordedToolError("E", "m")):
        assert kind
    assert loaded.format == dc.JOURNAL_FORMAT and dc.INTERRUPTED_MESSAGE
    try:
        dc.journal_from_json("{}")
    except dc.JournalError as error:
        assert isinstance(error, ValueError)
    return call.value + text
