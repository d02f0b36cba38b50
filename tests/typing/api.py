"""The public API used the way a user would; it exists to be type-checked.

``mypy --strict diagnosis_core tests/typing`` must accept this file, so the
public types stay honest: every call below is one a host application or a
test suite makes. It is not collected by pytest and need not run.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Callable, Mapping
from typing import Any, assert_type

from hypothesis import given
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.conformance as dck
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.prompts as dcpr
import diagnosis_core.protocol as dcp
import diagnosis_core.scenarios as dcs
import diagnosis_core.stores as dcst
import diagnosis_core.testing as dt
import diagnosis_core.tools as dct
from diagnosis_core import (
    AsyncEffects,
    ConfigError,
    DiagnosisConfig,
    DiagnosisRequest,
    DiagnosisResult,
    DiagnosisState,
    Effects,
    ExecutorEvidence,
    FailureKind,
    HistoryMessage,
    JsonValue,
    Locale,
    Outcome,
    PayloadError,
    ReasonCode,
    RunConfig,
    Scenario,
    ScenarioError,
    Skill,
    ToolBlockedError,
    TraceReport,
    Verdict,
)
from diagnosis_core.machine import (
    Action,
    AgentName,
    CallGatekeeper,
    Finished,
    InvokeAgent,
)
from diagnosis_core.protocol import (
    CheckedBinding,
    ComposerOutput,
    GatekeeperStatus,
    PlannerPlan,
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
    assert_type(result.gatekeeper_status, GatekeeperStatus | None)
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
    state = dcm.start_diagnosis(request)
    while True:
        action: Action = dcm.next_action(state)
        if isinstance(action, Finished):
            return action.result.answer
        if isinstance(action, InvokeAgent):
            assert_type(action.agent, AgentName)
            assert_type(action.input, str)
        else:
            assert_type(action, CallGatekeeper)
        state = dcm.advance(state, dcm.perform_effect(action, effects))


def save_and_restore(state: DiagnosisState) -> DiagnosisState:
    wire: JsonValue = dc.to_wire(state)
    text = dcp.canonical_json(wire)
    return dc.from_json(DiagnosisState, text)


def store_positionally(story: dcst.RunStory) -> dcst.RunStory:
    """A record kept as the JSON array of its fields, read back strictly."""
    row: list[JsonValue] = dc.to_wire_array(story)
    assert_type(dc.from_wire_array(dcst.RunStory, row), dcst.RunStory)
    return dc.from_wire_array(dcst.RunStory, dcp.loads_stored(dcp.canonical_json(row)))


# --- payloads and decisions ----------------------------------------------------------------


def parse_everything(text: str) -> None:
    try:
        plan = dcp.parse_planner_plan(text, ["payment-timeout"])
        assert_type(plan, PlannerPlan)
        assert_type(dcp.parse_executor_evidence(text), ExecutorEvidence)
        verdicts = dcp.parse_verifier_output(text)
        assert_type(verdicts, VerifierOutput)
        answer = dcp.parse_composer_output(text, ["c1"])
        assert_type(answer, ComposerOutput)
    except PayloadError as error:
        assert_type(error.path, str)
        return
    assert_type(dcp.parse_gatekeeper_result(json.loads(text)), dcp.GatekeeperResult)
    checked: tuple[CheckedBinding, ...] = ()
    assert not checked
    schema: dict[str, JsonValue] = dcp.json_schema(dcp.SCHEMA_NAMES[0])
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
    ledger = dct.ledger_from_records(
        [{"invocation_id": "inv-7", "tool_name": "query_logs", "success": True,
          "output": {"items": [{"message": "upstream timeout after 3000ms"}]}}]
    )
    gatekeeper = dc.ReferenceGatekeeper(ledger)
    return gatekeeper("run-1", evidence)


# --- the routing table ----------------------------------------------------------


def first_route() -> dcm.Route:
    return dcm.ROUTING_TABLE[0]


# --- the checks at the door, for an engine adapter ---------------------------------


def adapter_door(
    request: DiagnosisRequest, aiops_request: dca.AiOpsRequest, aiops_effects: dca.AiOpsEffects
) -> int:
    assert_type(dcm.check_diagnosis_effects(effects, where="adapter", tools=None), None)
    assert_type(dcm.check_diagnosis_effects(async_effects, where="adapter"), None)
    limit: int = dcm.DEFAULT_MAX_QUESTION_CHARS
    assert_type(
        dcm.check_diagnosis_request(request, where="adapter", max_question_chars=limit), None
    )
    assert_type(dcm.check_aiops_effects(aiops_effects, where="adapter"), None)
    assert_type(dcm.check_aiops_request(aiops_request, where="adapter"), None)
    shown = dcm.observed_result(dcm.GatekeeperReturned({"status": "pass"}))
    assert_type(shown, dcm.GatekeeperReturned)
    return limit


# --- diagnosis_core.testing -----------------------------------------------------


def doubles() -> tuple[str, ...]:
    planner = dt.ScriptedInvoker(['{"steps": [{"step_id": "s", "goal": "g"}]}', TimeoutError()])
    gatekeeper = dt.FakeGatekeeper([{"status": "pass"}], respond=dt.passing_gatekeeper)
    recorder = dt.EffectsRecorder(
        Effects(planner, call_model, call_model, call_model, gatekeeper)
    )
    state = dc.run_diagnosis(request, recorder.effects)
    assert recorder.journal
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
    assert dcp.parse_executor_evidence(text) == evidence
    raw = data.draw(dt.gatekeeper_raw_results(evidence))
    assert_type(raw, JsonValue)
    case = data.draw(dt.ledger_cases())
    assert_type(case.expected_status, tuple[str, str | None])
    document: dict[str, object] = data.draw(dt.scenarios())
    assert document


# --- tool recorder (spec §13) ---------------------------------------------------


def query_logs(service: str, *, limit: int = 10) -> dict[str, object]:
    return {"items": [service], "limit": limit}


async def query_metrics(name: str) -> list[float]:
    return [1.0]


def tools() -> dc.ToolLedger:
    recorder = dct.ToolRecorder(clock=lambda: 0.0)
    logs = recorder.wrap("query_logs", query_logs)
    envelope = logs("pay-svc", limit=3)
    assert_type(envelope, dct.ToolEnvelope)
    assert_type(envelope["invocation_id"], str)
    metrics = recorder.wrap_async("query_metrics", query_metrics)
    assert_type(asyncio.run(metrics("latency")), dct.ToolEnvelope)
    mark: dct.RecorderMark = recorder.mark()
    later = recorder.since(mark)
    error: dct.ToolCallError | None = later[0].error if later else None
    assert error is None or isinstance(error.type, str)
    effects_gatekeeper: dc.Gatekeeper = recorder.gatekeeper()
    assert effects_gatekeeper
    resumed = dct.ToolRecorder.from_records(recorder.to_records())
    # Engines: one recorder per run, seeded from the journal's records (tools=).
    recorders = dct.RunRecorders(clock=lambda: 0.0, limit=16)
    factory: dct.ToolsFactory = recorders
    assert_type(factory("run-1", recorder.to_records()), dct.ToolRecorder)
    assert_type(recorders.recorder("run-1"), dct.ToolRecorder)
    per_run: dc.Gatekeeper = recorders.gatekeeper()
    assert per_run
    recorders.forget("run-1")
    resumed.replay(recorder.records())  # answer identical calls from these records
    resumed.listen(None)
    replayed: type[Exception] = dct.ReplayedToolError
    assert issubclass(replayed, Exception)
    resumed.replay(())
    return resumed.ledger()


def classify_http(error: BaseException) -> FailureKind:
    return dc.default_failure_classifier(error)


def provider_schemas() -> list[dict[str, JsonValue]]:
    names: tuple[str, ...] = dcp.SCHEMA_PROFILES
    strict = dcp.json_schema("executor_evidence_v2", profile="anthropic-strict")
    generic = dcp.class_json_schema(ComposerOutput, "openai-strict", title="composer_output")
    return [strict, generic, *(dcp.json_schema("composer_output", name) for name in names)]


# --- diagnosis_core.aiops ---------------------------------------------------------


def aiops_host(document: Mapping[str, object], reply: str) -> str:
    scenario: dca.AiOpsScenario = dca.load_aiops_scenario(document)
    request: dca.AiOpsRequest = dca.aiops_scenario_request(scenario)
    effects: dca.AiOpsEffects = dca.aiops_scenario_effects(scenario)
    state: dca.AiOpsState = dca.run_aiops(request, effects)
    result: dca.AiOpsResult = state.result
    assert_type(result.outcome, dca.AiOpsOutcome)
    assert_type(result.report, dcp.AiOpsReport | None)
    evaluation = dca.evaluate_aiops_run(state, scenario.tool_ledger)
    assert_type(evaluation, dca.AiOpsRuleEvaluation | None)
    source: dca.LedgerSource = dct.ToolRecorder()  # the recorder is read at evaluation time
    assert_type(dca.evaluate_aiops_run(state, source), dca.AiOpsRuleEvaluation | None)
    assert dca.evaluate_aiops_report(None, mode=state.request.mode, alerts=(), ledger=source)
    async_state = asyncio.run(
        dca.arun_aiops(request, dca.AsyncAiOpsEffects.from_sync(effects))
    )
    assert_type(async_state, dca.AiOpsState)
    action = dcm.next_aiops_action(dcm.start_aiops(request))
    if isinstance(action, dcm.InvokeAiOpsAgent):
        assert_type(action.agent, dcm.AiOpsAgent)
        result_of_call = dcm.perform_aiops_effect(action, effects)
        state = dcm.advance_aiops(state, result_of_call)
    output: dict[str, JsonValue] = dca.aiops_replay_output(scenario, state)
    assert_type(dca.replay_aiops_scenario(scenario), dca.AiOpsState)
    assert_type(dca.replay_aiops(document), dict[str, JsonValue])
    decision: dcp.SupervisorDecision = dcp.parse_supervisor_decision(reply)
    assert_type(decision.next, dcp.SupervisorChoice)
    plan: dcp.AiOpsPlan = dcp.parse_aiops_plan(reply)
    step: dcp.AiOpsExecutorOutput = dcp.parse_aiops_executor_output(reply, ["call-1"])
    report: dcp.AiOpsReport = dcp.parse_aiops_report(reply)
    text: str = dca.render_aiops_report(report, state.request.config)
    assert text
    schema: dict[str, JsonValue] = dcp.aiops_json_schema(dcp.AIOPS_SCHEMA_NAMES[0])
    names: tuple[str, ...] = dcp.AIOPS_SCHEMA_NAMES
    rules: tuple[dca.AiOpsRule, ...] = dca.AIOPS_RULES
    table: tuple[dcm.AiOpsRoute, ...] = dcm.AIOPS_ROUTING_TABLE
    mode: dca.AiOpsMode = state.request.mode
    del plan, step, output, schema, names, rules, table, mode
    return decision.reason


def alertmanager_host(webhook: object) -> tuple[dcp.Alert, ...]:
    try:
        mapped = dca.alerts_from_alertmanager(webhook)
    except dca.AlertmanagerPayloadError as error:
        where: str = error.path
        problem: str = error.problem
        del where, problem
        return ()
    resolved: int = mapped.resolved_count
    truncated: int = mapped.truncated_count
    summaries: list[str | None] = [a.annotations.get("summary") for a in mapped.alerts]
    del resolved, truncated, summaries
    return mapped.alerts


# --- the rest of the public surface, by kind ---------------------------------------
# Every public name not used above, bound to the kind of value it is, so that a
# renamed or removed export, or one that changes kind, fails the type check.

PUBLIC_CLASSES: tuple[type, ...] = (
    dcm.AgentFailed,
    dc.AgentInvoker,
    dcm.AgentReplied,
    dc.AsyncAgentInvoker,
    dc.AsyncGatekeeper,
    dcp.BindingCheckStatus,
    dcm.CallCounts,
    dcp.Claim,
    dc.DiagnosisError,
    dcm.EventDetails,
    dcp.EvidenceBinding,
    dcp.EvidenceStatus,
    dcp.FactCheck,
    dc.FailureClassifier,
    dc.Gatekeeper,
    dcm.GatekeeperFailed,
    dcp.GatekeeperResult,
    dcm.GatekeeperReturned,
    dcp.Hypothesis,
    dc.LedgerError,
    dc.MachineError,
    dcm.NodeName,
    dcm.NodeStatus,
    dc.NonRetryableError,
    dcp.PayloadName,
    dcp.PlanStep,
    dcs.ScriptedAgent,
    dcs.ScriptedGatekeeper,
    dc.ToolInvocation,
    dc.ToolLedger,
    dcp.ToolTraceEntry,
    dc.TraceEvent,
    dcp.Verification,
    dca.AiOpsConfig,
    dcp.AiOpsEvidence,
    dcp.AiOpsExecutorFinding,
    dcp.AiOpsFinding,
    dcm.AiOpsFinished,
    dcm.AiOpsNode,
    dca.AiOpsReasonCode,
    dcp.AiOpsRecommendedAction,
    dca.AiOpsTraceEvent,
    dcp.Alert,
    dct.BindingFailure,
    dcs.ScriptedGatekeeperEntry,
    dcs.ScriptedResponse,
    dcm.VerifierEvaluation,
    dt.AsyncFakeGatekeeper,
    dt.AsyncRecordingGatekeeper,
    dt.AsyncRecordingInvoker,
    dt.AsyncScriptedInvoker,
    dt.LedgerCase,
    dt.RecordingGatekeeper,
    dt.RecordingInvoker,
)
PUBLIC_FUNCTIONS: tuple[Callable[..., object], ...] = (
    dc.classify_failure,
    dc.from_wire,
    dcp.parse_gatekeeper_result,
    dcm.perform_effect_async,
    dc.scenario_effects,
    dc.scenario_request,
    dcm.perform_aiops_effect_async,
    dcm.describe_error,
    dcp.loads_stored,
    dct.parse_raw_path,
    dt.adversarial_texts,
    dt.agent_exceptions,
    dt.claims,
    dt.composer_outputs,
    dt.contradictory_gatekeeper_results,
    dt.diagnosis_configs,
    dt.diagnosis_requests,
    dt.gatekeeper_result_values,
    dt.gatekeeper_results,
    dt.hostile_gatekeeper_factories,
    dt.hostile_gatekeeper_values,
    dt.identifiers,
    dt.json_document_texts,
    dt.json_values,
    dt.malformed_gatekeeper_results,
    dt.mutated_documents,
    dt.payload_documents,
    dt.planner_plans,
    dt.random_garbage_texts,
    dt.scripted_effects,
    dt.skill_catalogs,
    dt.texts,
    dt.tool_ledger_records,
    dt.tool_names,
    dt.unknown_exceptions,
    dt.verifier_outputs,
)
PUBLIC_CONSTANTS: tuple[object, ...] = (
    dc.__version__,
    dcs.ERROR_KINDS,
    dcm.ROUTING_TABLE,
    dt.PLANT_SINKS,
)


def public_unions(
    union_0: dcm.EffectResult,
    union_1: dcm.AiOpsAction,
    union_2: dcm.AiOpsAction,
) -> tuple[object, ...]:
    """The public union aliases, usable as annotations."""
    return (union_0, union_1, union_2)


def public_constants() -> None:
    """The public constants have the types their docs state."""
    dc_version: str = dc.__version__
    dcb_error_kinds: tuple[str, ...] = dcs.ERROR_KINDS
    dcb_routing_table: tuple[dcm.Route, ...] = dcm.ROUTING_TABLE
    dt_plant_sinks = dt.PLANT_SINKS
    del (
        dc_version,
        dcb_error_kinds,
        dcb_routing_table,
        dt_plant_sinks,
    )


def journal_a_run(request: DiagnosisRequest, effects: Effects, key: bytes) -> str:
    """A host loop that persists a signed journal, resumes it, and replays it."""
    sink = dcj.ListJournalSink()
    sink_protocol: dcj.JournalSink = sink
    recorder = dcj.JournalRecorder(dcj.Journal(request), sink=sink_protocol, key=key)
    state = dcm.start_diagnosis(request)
    while not isinstance(action := dcm.next_action(state), dcm.Finished):
        started: dcj.JournalEntry = recorder.begin(action)
        assert started.state is dcj.EntryState.STARTED
        assert isinstance(dcj.expected_call(action).input_sha256, str)
        state = dcm.advance(state, recorder.end(dcm.perform_effect(action, effects)))
    end: dcj.JournalEnd | None = recorder.close()
    assert end is not None and end.entries == len(recorder.journal.entries)
    journal: dcj.Journal = recorder.journal
    head: dcj.JournalHead = dcj.journal_head(journal)
    assert dcj.JournalHead.from_json(head.to_json()) == head == recorder.head
    assert journal.format == dcj.JOURNAL_FORMAT
    text = dcj.journal_to_json(journal)
    loaded = dcj.Journal.from_json(text)
    assert_type(dcj.Journal.load(dcj.journal_to_wire(loaded)), dcj.Journal)
    status: dcj.JournalStatus = dcj.journal_status(loaded, key=key, head=head)
    assert status.pending is None and status.complete
    resumed, resumed_state = dcj.resume_journal(loaded, key=key, resend_gatekeeper=False)
    assert_type(resumed_state, DiagnosisState)
    assert dcj.fold_journal(resumed, key=key) == state
    signed = dcj.sign_journal(resumed, key)
    line: str = dcj.entry_to_json(signed.entries[0])
    assert_type(dcj.entry_from_json(line), dcj.JournalEntry)
    assert_type(dcj.entry_from_json(line, dcj.JournalEntry), dcj.JournalEntry)
    scenario: dict[str, JsonValue] = dcj.journal_to_scenario(loaded, key=key, exact=True)
    output: dict[str, JsonValue] = dcj.replay_journal(loaded, key=key)
    assert dc.replay(scenario) == output
    outcome: dcj.JournalOutcome = dcj.outcome_of(dcm.AgentReplied("text"))
    assert isinstance(outcome, dcj.RecordedReply | dcj.RecordedAgentError)
    entry = dcj.finish_entry(
        dcj.append_entry(journal, dcj.start_entry(journal, dcm.InvokeAgent(
            AgentName.PLANNER, "{}", request.run, 1, 1))),
        dcm.AgentFailed(FailureKind.RETRYABLE, "timeout"),
        tool_invocations=[dcj.RecordedToolInvocation("inv-1", "query_logs", True)],
    )
    assert_type(dcj.entry_result(entry), dcm.EffectResult)
    call: dcj.JournalCall = entry.call
    for kind in (dcj.RecordedGatekeeperResult.of({"status": "pass"}),
                 dcj.RecordedGatekeeperError("down")):
        assert kind
    assert loaded.format == dcj.JOURNAL_FORMAT and dcj.INTERRUPTED_MESSAGE
    try:
        dcj.Journal.from_json("{}")
    except dc.JournalError as error:
        assert isinstance(error, ValueError)
    return call.value + text


# --- observers (spec §14) ---------------------------------------------------------


class CountingObserver:
    def __init__(self) -> None:
        self.events: list[dc.TraceEvent] = []

    def effect_started(self, action: dcm.InvokeAgent | dcm.CallGatekeeper, /) -> None:
        del action

    def effect_finished(
        self, action: dcm.InvokeAgent | dcm.CallGatekeeper, result: dcm.EffectResult, /
    ) -> None:
        del action, result

    def event_appended(self, event: dc.TraceEvent, /) -> None:
        self.events.append(event)


def observe(state: DiagnosisState) -> int:
    observer: dc.DiagnosisObserver = CountingObserver()
    generic: dc.Observer[dcm.InvokeAgent | dcm.CallGatekeeper, dcm.EffectResult, dc.TraceEvent]
    generic = observer
    for event in state.events:
        dcm.notify(generic, "event_appended", event)
    assert issubclass(dc.ObserverWarning, RuntimeWarning)
    return len(state.events)


# --- the AIOps journal (spec §12) ---------------------------------------------------


def journal_an_aiops_run(request: dca.AiOpsRequest, effects: dca.AiOpsEffects, key: bytes) -> str:
    """The AIOps journal: the journaling driver, fold, resume, conversion and replay."""
    sink = dcj.ListAiOpsJournalSink()
    state = dca.run_aiops(request, effects, sink=sink, key=key, tools=dct.ToolRecorder())
    journal = dcj.AiOpsJournal(request, tuple(sink.entries), end=sink.end)
    entry = journal.entries[0]
    assert entry.call in dcm.AiOpsAgent
    assert_type(dcj.fold_journal(journal, key=key), dca.AiOpsState)
    assert dcj.fold_journal(journal, key=key) == state
    status = dcj.journal_status(journal, key=key)
    assert_type(status, dcj.AiOpsJournalStatus)
    assert_type(status.state, dca.AiOpsState)
    assert status.pending is None and status.complete
    resumed, resumed_state = dcj.resume_journal(journal, key=key)
    assert_type(resumed, dcj.AiOpsJournal)
    assert_type(resumed_state, dca.AiOpsState)
    assert_type(dcj.sign_journal(journal, key), dcj.AiOpsJournal)
    text = dcj.journal_to_json(journal)
    assert_type(dcj.AiOpsJournal.load(json.loads(text)), dcj.AiOpsJournal)
    scenario: dict[str, JsonValue] = dcj.journal_to_scenario(journal, key=key, exact=True)
    output: dict[str, JsonValue] = dcj.replay_journal(journal, key=key)
    assert dca.replay_aiops(scenario) == output
    ledger: dc.ToolLedger = dcj.aiops_journal_ledger(journal)
    recorder = dcj.AiOpsJournalRecorder(dcj.AiOpsJournal(request), sink=sink, key=key)
    action = dcm.next_aiops_action(dcm.start_aiops(request))
    assert isinstance(action, dcm.InvokeAiOpsAgent)
    assert isinstance(dcj.aiops_expected_call(action).input_sha256, str)
    started = recorder.begin(action)
    fed: dcm.AgentReplied | dcm.AgentFailed = recorder.end(dcm.AgentReplied("{}"))
    wire: dict[str, JsonValue] = dcj.aiops_request_to_wire(request)
    del ledger, started, fed, wire
    return text


# --- journaling and streaming drivers (spec §12, §14) -------------------------------


def journaling_drivers(key: bytes) -> str:
    """The drivers write a journal to a sink, resume it, and stream the run."""
    sink = dcj.ListJournalSink()
    tools = dct.ToolRecorder()
    observer: dc.DiagnosisObserver = CountingObserver()
    state = dc.run_diagnosis(request, effects, sink=sink, key=key, tools=tools, observer=observer)
    journal: dcj.Journal = sink.journal(request)
    resumed_sink = dcj.ListJournalSink(journal.entries)
    again = dc.run_diagnosis(
        request, effects, journal=journal, sink=resumed_sink, key=key, resend_gatekeeper=True
    )
    assert again == state
    records: list[dict[str, JsonValue]] = dcj.journal_tool_records(journal)
    recorded: tuple[dcj.RecordedToolInvocation, ...] = dcj.recorded_tool_invocations(
        dct.ToolRecorder.from_records(records).records()
    )
    items: list[dc.TraceEvent | DiagnosisResult] = list(dc.iter_diagnosis(request, effects))
    last = items[-1]
    assert isinstance(last, DiagnosisResult)
    return last.answer + str(len(recorded))


async def stream_async() -> list[dc.TraceEvent | DiagnosisResult]:
    items = [item async for item in dc.aiter_diagnosis(request, async_effects)]
    state = await dc.arun_diagnosis(request, async_effects, sink=dcj.ListJournalSink())
    assert_type(state, DiagnosisState)
    return items


# --- what an engine adapter uses (docs/adapters.md) ----------------------------------


def engine_adapter_step(journal: dcj.Journal, effects: Effects, key: bytes) -> str:
    """One effect the way an engine adapter performs it: entry, codec, resume rule."""
    action = dcm.next_action(dcj.journal_status(journal, key=key).state)
    assert not isinstance(action, dcm.Finished)
    started = dcj.start_entry(journal, action, key=key)
    result = dcm.perform_effect(action, effects)
    finished = dcj.finish_entry(dcj.append_entry(journal, started), result, key=key)
    assert finished.outcome is not None
    wire: dict[str, JsonValue] = dcj.outcome_to_wire(finished.outcome)
    gatekeeper = finished.call is dcj.JournalCall.GATEKEEPER
    outcome: dcj.JournalOutcome = dcj.load_outcome(wire, "outcome", gatekeeper=gatekeeper)
    assert outcome == finished.outcome
    resent: bool = dcj.resent_on_resume(finished.call, resend_gatekeeper=False)
    request_wire: dict[str, JsonValue] = dcj.request_to_wire(journal.request)
    entry_wire: dict[str, JsonValue] = dcj.entry_to_wire(finished)
    return dcj.stored_json([request_wire, entry_wire, resent])


def read_the_descriptors(journal: dcj.Journal, aiops: dcj.AiOpsJournal) -> tuple[bool, ...]:
    """An engine adapter reads the resume rule and the machine from a workflow's descriptor."""
    chat = dcm.DIAGNOSIS_WORKFLOW
    assert isinstance(chat, dcm.Workflow)
    state: DiagnosisState = chat.start(journal.request)
    action = chat.next_action(state)
    assert_type(action, dcm.InvokeAgent | dcm.CallGatekeeper | dcm.Finished)
    if not isinstance(action, dcm.Finished):
        assert_type(chat.expected_call(action).input_sha256, str)
    flow = dcm.AIOPS_WORKFLOW
    assert_type(flow.start(aiops.request), dca.AiOpsState)
    return (
        chat.resent_on_resume(dcj.JournalCall.EXECUTOR, resend_executor=True),
        chat.resent_on_resume(dcj.JournalCall.GATEKEEPER, resend_gatekeeper=True),
        flow.resent_on_resume(dcm.AiOpsAgent.EXECUTOR),
        dcj.resent_on_resume(dcj.JournalCall.EXECUTOR, resend_executor=True),
    )


def one_set_of_run_options(
    request: DiagnosisRequest, effects: Effects, aiops: dca.AiOpsRequest,
    aiops_effects: dca.AiOpsEffects, store: dcst.SqliteStore,
) -> int:
    """Both workflows' drivers take one RunOptions value; the iterators take store= too."""
    options = dc.RunOptions(sink=dcj.ListJournalSink(), key=b"k" * 32, tools=dct.ToolRecorder())
    state: DiagnosisState = dc.run_diagnosis(request, effects, options=options)
    aiops_options = dc.RunOptions(sink=dcj.ListAiOpsJournalSink())
    flow: dca.AiOpsState = dca.run_aiops(aiops, aiops_effects, options=aiops_options)
    streamed = list(dc.iter_diagnosis(request, effects, options=dc.RunOptions(store=store)))
    more = list(dca.iter_aiops(aiops, aiops_effects, store=store))
    return len(state.events) + len(flow.events) + len(streamed) + len(more)


def aiops_outputs(state: dca.AiOpsState, scenario: dca.AiOpsScenario) -> str:
    """The AIOps replay output and rule evaluation of a run driven any way."""
    output: dict[str, JsonValue] = dca.aiops_output(state, scenario.tool_ledger)
    evaluation = dca.evaluate_aiops_run(state, scenario.tool_ledger)
    return str(evaluation) + str(output)


def readable_trace(state: DiagnosisState) -> list[str]:
    """Values and documents described without raising, whatever they hold."""
    shown: str = dcp.describe_value(10**5000)  # never raises, whatever the value
    assert shown
    document: object = dcs.parse_document_text('{"question": "q"}', "inline.json")
    return [str(len(state.events)), str(document)]


def aiops_streams(request: dca.AiOpsRequest, effects: dca.AiOpsEffects) -> int:
    """The AIOps drivers stream and take an observer, like the chat drivers."""

    class Printer:
        def effect_started(self, action: dcm.InvokeAiOpsAgent, /) -> None:
            print(action.agent.value)

        def effect_finished(
            self, action: dcm.InvokeAiOpsAgent, result: dcm.AgentReplied | dcm.AgentFailed, /
        ) -> None:
            print(type(result).__name__)

        def event_appended(self, event: dca.AiOpsTraceEvent, /) -> None:
            print(event.node.value)

    observer: dca.AiOpsObserver = Printer()
    state: dca.AiOpsState = dca.run_aiops(request, effects, observer=observer)
    items: list[dca.AiOpsTraceEvent | dca.AiOpsResult] = list(dca.iter_aiops(request, effects))
    return len(items) + len(state.events)


def refused_options(request: DiagnosisRequest, effects: Effects) -> str:
    """Options that do not go together are refused alike by both workflows' drivers."""
    try:
        dc.run_diagnosis(request, effects, key=b"signs nothing")
    except dc.RunOptionsError as error:
        return str(error)
    return ""


async def aiops_streams_async(request: dca.AiOpsRequest, effects: dca.AsyncAiOpsEffects) -> int:
    """The asyncio forms of the AIOps drivers."""
    items = [item async for item in dca.aiter_aiops(request, effects)]
    state = await dca.arun_aiops(request, effects, observer=None)
    return len(items) + len(state.events)


def check_another_implementation(document: str, expected: Mapping[str, object],
                                  schemas: str) -> bool:
    """An implementer's own test: one document through a runner, compared exactly."""
    assert_type(dck.PROTOCOL_VERSION, str)
    paths = [pathlib.Path(schemas, f"{name}.json") for name in dck.all_schemas()]
    runner: dck.DocumentRunner = dck.run_document
    resume = {"format": dck.RESUME_FORMAT, "journal": {}}
    assert runner(json.dumps(resume))
    return bool(paths) and dict(runner(document)) == dict(expected)


# --- diagnosis_core.stores (spec §16) -----------------------------------------------


def store_a_run(request: DiagnosisRequest, effects: Effects, path: str) -> str:
    """A host recording into a store, telling a session's story and its fleet report."""
    store: dcj.JournalStore = dcst.open_store(f"sqlite:///{path}")
    state: DiagnosisState = dc.run_diagnosis(request, effects, store=store)
    feedback: dcj.Feedback = dcst.record_feedback(store, request.run.run_id, 5, "good")
    assert feedback.rating == 5 and state.finished
    stored = store.load(request.run.run_id)
    assert stored is not None
    line = dcj.entry_to_json(stored.journal.entries[0])
    assert_type(dcj.entry_from_json(line), dcj.JournalEntry)
    summaries = store.runs(session_id=request.run.session_id)
    report: dcst.SessionReport = dcst.session_report(store, request.run.session_id)
    assert summaries
    story: dcst.RunStory = report.runs[0]
    audits: tuple[dcm.GatekeeperAudit, ...] = story.gatekeeper_audits
    raw: list[dcm.RawResult | None] = [audit.raw_result for audit in audits]
    again_loaded: dcj.StoredRun | None = store.load(request.run.run_id)
    held_journal: dcj.JournalBase[Any, Any] = stored.journal  # what a store of one's own takes
    first: dcj.JournalEntryBase[Any] = held_journal.entries[0]
    assert first.seq == 1 and held_journal.signed in (True, False)
    printed: str = dc.terminal_safe(story.run_id + "\x1b[2J")  # shown, never acted on
    assert printed.endswith("\\x1b[2J")
    listed: tuple[dcj.RunSummary, ...] = store.runs(session_id=request.run.session_id)
    assert raw is not None and listed and (again_loaded is None or again_loaded.run_id)
    assert story.status in ("complete", "incomplete", "invalid")
    fleet: dcst.FleetReport = dcst.fleet_report(store, since=None)
    assert fleet.runs.total >= 1
    again: dcst.SessionReport = dc.from_json(dcst.SessionReport, dc.to_json(report))
    assert again == report
    calls = story.tool_invocations
    shown = (story.status, story.workflow, story.effects, calls[0].error if calls else None,
             story.agent_steps, story.verifier_evaluations, story.feedback, fleet.runs,
             fleet.gatekeeper, fleet.tools.get("query_logs"), fleet.latency_ms.get("planner"),
             fleet.feedback)
    assert len(shown) == 12
    mismatches = dcst.verify_summaries(store)
    assert all(isinstance(item.problem, str) for item in mismatches)
    page: str = dcst.fleet_report_html(fleet)
    text: str = page
    why: list[str] = dcst.failure_reasons(report.runs[0])
    page += (dcst.session_report_html(report, generated_at=0.0)
             + dcst.run_story_html(report.runs[0], links=False))
    written: list[pathlib.Path] = dcst.write_report_pages(path + ".pages", fleet, [report],
                                                          generated_at=0.0)
    name: str = dcst.report_page_name("runs", request.run.run_id)
    assert written[0].name == "index.html" and name.startswith("runs/") and why is not None
    try:
        with store.claim(request.run.run_id) as claim:
            held: dcj.RunClaim = claim
            assert held.run_id == request.run.run_id
    except dcj.RunClaimedError as error:
        assert isinstance(error, dcj.StoreError)
    try:
        dc.run_diagnosis(request, effects, store=store)
    except dcj.MissingKeyError as missing:
        assert isinstance(missing, dcj.StoreError)
    store.close()
    stores: list[dcj.JournalStore] = [
        dcst.JsonlStore(path + ".jsonl"),
        dcst.SqliteStore(path, codec=dcst.AesGcmCodec(bytes(32))),
    ]
    codec: dcst.PayloadCodec = dcst.AesGcmCodec(bytes(16))
    postgres: type[dcst.PostgresStore] = dcst.PostgresStore
    assert codec.name and postgres and stores
    claims: dcst.Claims = dcst.Claims.in_file(path, b"my-jobs:")
    handle, holder = claims.try_acquire("job-1")
    if handle is not None:
        claims.release(handle)
    remote = dcst.Claims.on_postgres("dbname=runs", b"my-jobs:", connect_timeout=5)
    local = dcst.Claims.in_process(store, b"my-jobs:")
    assert holder is None or remote is not local
    return page + text


# --- parameters typed as their validators (the misuses are in misuse.py) ------------


def precise_parameters(messages: list[HistoryMessage], catalog: dict[str, str]) -> None:
    """What the validators accept, written the way users write it, type-checks."""
    zh = DiagnosisConfig(locale="zh-CN")  # a Locale or its wire value
    assert_type(zh.locale, Locale)
    tagged = RunConfig("run-2", "chat-2", metadata={"team": "payments", "env": "prod"})
    assert_type(tagged.metadata, Mapping[str, str])
    asked = DiagnosisRequest(
        "why?",
        tagged,
        history=messages,  # any iterable of HistoryMessage
        skills=(Skill(name, description) for name, description in catalog.items()),
        config=zh,
    )
    assert_type(asked.history, tuple[HistoryMessage, ...])
    assert_type(asked.skills, tuple[Skill, ...])
    spelled: dcj.ListJournalSink[dcj.JournalEntry] = dcj.ListJournalSink[dcj.JournalEntry]()
    bare = dcj.ListJournalSink()
    assert_type(bare, dcj.ListJournalSink[dcj.JournalEntry])
    spelled.write(bare.entries[0])
    aiops_sink = dcj.ListAiOpsJournalSink()
    assert aiops_sink.entries == []


# --- diagnosis_core.prompts (spec §17) ----------------------------------------------


def prompt_messages(agent_input: str, locale: Locale) -> list[dict[str, str]]:
    """A system prompt and the agent's input, as a chat model's messages."""
    prompt: dcpr.Prompt = dcpr.system_prompt("executor", workflow="chat", locale=locale)
    assert_type(prompt.protocol_version, str)
    assert_type(prompt.schema, dict[str, JsonValue])
    rules: tuple[dcpr.PromptRule, ...] = dcpr.PROMPT_RULES
    sentences = [rule.sentence(prompt.locale) for rule in rules
                 if (prompt.workflow, prompt.agent) in rule.scope]
    agents: Mapping[str, tuple[str, ...]] = dcpr.PROMPT_AGENTS
    assert prompt.agent in agents[prompt.workflow]
    assert all(sentence in prompt.text for sentence in sentences)
    example: str = prompt.example_reply + prompt.example_input + prompt.payload
    assert example
    return [
        {"role": "system", "content": prompt.text},
        {"role": "user", "content": agent_input},
    ]
# --- a tool-calling chat model (issue 33: the executor loop) ----------------------


class ScriptedToolModel:
    """A host's tool-calling model: one TurnRequest in, one ModelTurn out."""

    def __call__(self, request: dct.TurnRequest, /) -> dct.ModelTurn:
        last: dct.ChatMessage = request.messages[-1]
        if isinstance(last, dct.ToolMessage) or not request.tools:
            return dct.ModelTurn(text='{"schema_version": "executor_evidence_v2"}')
        spec: dct.ToolSpec = request.tools[0]
        return dct.ModelTurn(tool_calls=[dct.ToolCall("call-1", spec.name, {"service": "pay"})])


async def async_turn(request: dct.TurnRequest) -> dct.ModelTurn:
    return dct.ModelTurn(text="{}")


def tool_calling_model() -> dct.TurnRequest:
    model: dct.ToolCallingModel = ScriptedToolModel()
    async_model: dct.AsyncToolCallingModel = async_turn
    assert async_model
    spec = dct.ToolSpec("query_logs", "Search logs", {"type": "object", "properties": {}})
    tool = dct.Tool(spec, query_logs)
    request = dct.TurnRequest(
        messages=[dct.SystemMessage("You are the executor."), dct.UserMessage("{}")],
        tools=[tool.spec],
        response_schema={"type": "object"},
        config=RunConfig(run_id="r1", session_id="s1"),
    )
    turn = model(request)
    assert_type(turn.is_final, bool)
    calls: tuple[dct.ToolCall, ...] = turn.tool_calls
    answered = dct.AssistantMessage(text=turn.text, tool_calls=calls)
    reply = dct.ToolMessage(tool_call_id="call-1", name="query_logs", content="{}", is_error=False)
    return dct.TurnRequest(messages=[*request.messages, answered, reply], tools=request.tools)


def an_executor_loop(model: dct.ToolCallingModel, recorder: dct.ToolRecorder) -> Effects:
    spec = dct.ToolSpec("query_logs", "Search logs", {"type": "object", "properties": {}})
    tools = [dct.Tool(spec, query_logs)]
    executor: dct.ExecutorAgent = dct.executor_agent(
        model, tools, recorder=recorder, max_tool_calls=4, max_turns=6, deadline_s=30.0,
        grounding="call", profile="anthropic-strict", limits=dct.GroundingLimits(max_paths=50),
        tool_errors="report",
    )
    invoker: dc.AgentInvoker = executor
    per_run = dct.RunRecorders()
    engine_executor = dct.executor_agent(model, tools, recorder=per_run, deadline_s=None)
    assert engine_executor.max_turns == 10
    grounded: dct.GroundingSchema = dct.evidence_grounding_schema(recorder.records())
    assert_type(grounded.constrained, tuple[str, ...])
    assert_type(grounded.complete, bool)
    failure: type[Exception] = dct.ToolLoopLimitError
    timeout: type[TimeoutError] = dct.ToolLoopDeadlineError
    assert failure and timeout
    aiops: dct.ExecutorAgent = dct.aiops_executor_agent(model, tools, recorder=recorder)
    assert aiops
    assert_type(dct.aiops_grounding_schema(recorder.records()), dct.GroundingSchema)
    return Effects(
        planner=call_model, executor=invoker, verifier=call_model, composer=call_model,
        gatekeeper=recorder.gatekeeper(),
    )


async def an_async_executor_loop(
    model: dct.AsyncToolCallingModel, recorder: dct.ToolRecorder
) -> dc.AsyncAgentInvoker:
    spec = dct.ToolSpec("query_metrics", "Metrics", {"type": "object", "properties": {}})
    executor: dct.AsyncExecutorAgent = dct.async_executor_agent(
        model, [dct.Tool(spec, query_metrics)], recorder=recorder
    )
    aiops: dct.AsyncExecutorAgent = dct.async_aiops_executor_agent(
        model, [dct.Tool(spec, query_metrics)], recorder=recorder
    )
    assert aiops
    return executor


def loop_settings() -> dct.RunRecorders:
    recorders = dct.RunRecorders()
    assert isinstance(recorders.recorder("run-1").records(), tuple)
    return recorders
