"""DBOS adapter: a diagnosis run as a DBOS workflow whose steps are its effects (extra ``dbos``).

Built from public ``diagnosis_core`` names only (``tests/test_layout.py``
checks it), as the worked example of ``docs/adapters.md``.

**One workflow per run, the journal as its step results.** The workflow
function :func:`diagnosis_dbos_workflow` holds the request and the run's
journal (spec §12) and nothing else: for an executor or gatekeeper call it
runs two DBOS steps — ``diagnosis_core.begin`` commits the ``started`` entry
(its recorded output *is* that commitment), then ``diagnosis_core.effect``
performs the effect; an LLM call (planner, verifier, composer; supervisor,
planner, reporter) is the effect step alone, since running it again after a
crash is exactly what the resume rule does with it. The effect step returns
the finished entry's facts (the input hash,
the outcome in its §12 wire form, an executor's tool calls). DBOS records
each step's output in its system database; a recovered workflow re-runs the
function, gets every recorded output back instead of running the step, and
folds the same journal to the same state. The run's journal is published as
the workflow event ``diagnosis_journal`` (:func:`dbos_diagnosis_journal`).

**The §12 resume rule, not DBOS's at-least-once.** DBOS runs a step again when
its process died during it. The adapter does not let it decide: a
``begin`` step whose body ran in *this* process marks its effect as ours; when
a recovered workflow finds a recorded ``begin`` it did not run, the effect was
interrupted by the death of its process, and the workflow descriptor's rule
(``DIAGNOSIS_WORKFLOW.resent_on_resume``) says what happens — the planner,
verifier and composer are sent again with the identical input as the same
attempt; the executor is recorded as failed,
``interrupted: outcome unknown`` (its tools may have run, so it is never
called twice); the gatekeeper as unavailable unless the host re-sends it
(``resend_gatekeeper=True``). That decision is the ``effect`` step's recorded
output, so it is taken once.

**Tools and observers.** ``tools`` (a :data:`~diagnosis_core.tools.ToolsFactory`)
gives each executor and gatekeeper step the run's recorder, rebuilt from the
§13 records the journal holds; the executor step returns the tool calls of its
call, which its entry carries. ``observer`` is called from steps only, never
from the workflow function (which DBOS runs again on recovery): the
``effect`` step announces its effect, and a ``diagnosis_core.announce`` step
the trace events it appended; a recovered workflow gets the announce step's
recorded output back and announces nothing twice.

Call :func:`configure_diagnosis_dbos` with the host's effects before
``DBOS.launch()`` (recovery of pending runs begins at launch), then start runs
with :func:`start_diagnosis_dbos` or :func:`run_diagnosis_dbos`.

**The AIOps flow** is the same construction (:func:`configure_aiops_dbos`,
:func:`start_aiops_dbos`, :func:`run_aiops_dbos`, :func:`dbos_aiops_journal`,
workflow :data:`AIOPS_WORKFLOW_NAME`): its resume rule is read from
``AIOPS_WORKFLOW.resent_on_resume`` — an interrupted supervisor, planner or reporter
call is sent again as the same attempt, an interrupted executor is recorded
as failed and never called again.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs
from dbos import DBOS, SetWorkflowID, WorkflowHandle

from .. import (
    AsyncEffects,
    DiagnosisObserver,
    DiagnosisRequest,
    DiagnosisState,
    Effects,
    FailureKind,
    JournalError,
    PayloadError,
    TraceEvent,
    from_wire,
    to_wire,
)
from ..aiops import (
    AIOPS_WORKFLOW,
    AiOpsEffects,
    AiOpsFinished,
    AiOpsJournal,
    AiOpsJournalRecorder,
    AiOpsObserver,
    AiOpsRequest,
    AiOpsState,
    AiOpsTraceEvent,
    AsyncAiOpsEffects,
    InvokeAiOpsAgent,
    advance_aiops,
    aiops_expected_call,
    load_aiops_journal,
    next_aiops_action,
    perform_aiops_effect,
    perform_aiops_effect_async,
    start_aiops,
)
from ..journal import (
    INTERRUPTED_MESSAGE,
    EntryState,
    Journal,
    JournalCall,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    append_entry,
    entry_result,
    expected_call,
    journal_to_wire,
    journal_tool_records,
    load_journal,
    load_outcome,
    outcome_to_wire,
    start_entry,
)
from ..machine import (
    DIAGNOSIS_WORKFLOW,
    AgentFailed,
    AgentName,
    AgentReplied,
    CallGatekeeper,
    EffectResult,
    Finished,
    InvokeAgent,
    advance,
    next_action,
    perform_effect,
    perform_effect_async,
    start_diagnosis,
)
from ..tools import ToolRecorder, ToolsFactory
from ._engine import (
    EffectReport,
    Performing,
    agent_result,
    announce,
    decode_tool_invocations,
    ledger_records,
    new_events,
    wire_object,
)

__all__ = [
    "AIOPS_JOURNAL_EVENT",
    "AIOPS_WORKFLOW_NAME",
    "DIAGNOSIS_JOURNAL_EVENT",
    "DIAGNOSIS_WORKFLOW_NAME",
    "aiops_dbos_workflow",
    "configure_aiops_dbos",
    "configure_diagnosis_dbos",
    "dbos_aiops_journal",
    "dbos_diagnosis_journal",
    "diagnosis_dbos_workflow",
    "run_aiops_dbos",
    "run_diagnosis_dbos",
    "start_aiops_dbos",
    "start_diagnosis_dbos",
]

DIAGNOSIS_WORKFLOW_NAME = "diagnosis_core.diagnosis"
"""The registered name of the DBOS workflow of a chat diagnosis run."""
DIAGNOSIS_JOURNAL_EVENT = "diagnosis_journal"
"""The workflow event holding the finished run's journal in wire form (``journal_to_wire``)."""
AIOPS_WORKFLOW_NAME = "diagnosis_core.aiops"
"""The registered name of the DBOS workflow of an AIOps run."""
AIOPS_JOURNAL_EVENT = "aiops_journal"
"""The workflow event holding the finished AIOps run's journal (``aiops_journal_v1`` wire form)."""


@attrs.frozen
class _Host:
    effects: Effects | AsyncEffects
    tools: ToolsFactory | None
    observer: DiagnosisObserver | None
    resend_gatekeeper: bool


_host: _Host | None = None
# The (workflow id, seq) of every started entry whose begin step ran in this process:
# a recorded begin step that is not here was run by a process that died.
_begun: set[tuple[str, int]] = set()
_lock = threading.Lock()


def configure_diagnosis_dbos(
    effects: Effects | AsyncEffects,
    *,
    tools: ToolsFactory | None = None,
    observer: DiagnosisObserver | None = None,
    resend_gatekeeper: bool = False,
) -> None:
    """Give this process's DBOS workflows the host's effects; call it before ``DBOS.launch()``.

    ``tools`` and ``observer`` are described in the module docstring;
    ``resend_gatekeeper`` re-sends a gatekeeper call interrupted by a crash
    instead of failing it closed (it is read-only). A process serves every
    run with one configuration; calling it again replaces it.
    """
    if not isinstance(effects, Effects | AsyncEffects):
        raise TypeError(f"effects: expected Effects or AsyncEffects, got {type(effects).__name__}")
    global _host
    _host = _Host(effects, tools, observer, resend_gatekeeper)


def _configured() -> _Host:
    if _host is None:
        raise RuntimeError(
            "no effects for diagnosis workflows in this process: call "
            "configure_diagnosis_dbos(effects) before DBOS.launch()"
        )
    return _host


def _decode_request(data: object) -> DiagnosisRequest:
    request: DiagnosisRequest = from_wire(DiagnosisRequest, data)
    if to_wire(request) != data:
        raise PayloadError("request", "does not round-trip (an unknown key or a default spelt out)")
    return request


# --- steps (they run; their outputs are recorded) ---------------------------------------


@DBOS.step(name="diagnosis_core.begin")
def _begin(workflow_id: str, seq: int) -> int:
    """Commit a started entry: the recorded output is the commitment, the set says 'ours'."""
    with _lock:
        _begun.add((workflow_id, seq))
    return seq


def _begun_here(workflow_id: str, seq: int) -> bool:
    """Whether this process ran the begin step of entry ``seq`` (forgotten once asked)."""
    with _lock:
        ours = (workflow_id, seq) in _begun
        _begun.discard((workflow_id, seq))
    return ours


def _recorder(host: _Host, run_id: str, ledger: list[dict[str, Any]] | None) -> ToolRecorder | None:
    if host.tools is None or ledger is None:
        return None
    return host.tools(run_id, ledger)


_PERFORMING = Performing(AsyncEffects, perform_effect, perform_effect_async)
_AIOPS_PERFORMING = Performing(AsyncAiOpsEffects, perform_aiops_effect, perform_aiops_effect_async)


@DBOS.step(name="diagnosis_core.effect")
def _effect(
    action_wire: dict[str, Any],
    ledger: list[dict[str, Any]] | None,
    interrupted: bool,
) -> dict[str, Any]:
    """Perform the effect (or settle it by the §12 rule); the finished entry's facts."""
    host = _configured()
    action: InvokeAgent | CallGatekeeper = (
        from_wire(InvokeAgent, action_wire)
        if "agent" in action_wire
        else from_wire(CallGatekeeper, action_wire)
    )
    expected = expected_call(action)
    facts: dict[str, Any] = {"input_sha256": expected.input_sha256}
    if interrupted and not DIAGNOSIS_WORKFLOW.resent_on_resume(
        expected.call, resend_gatekeeper=host.resend_gatekeeper
    ):
        outcome: JournalOutcome = (
            RecordedGatekeeperError(INTERRUPTED_MESSAGE)
            if expected.call is JournalCall.GATEKEEPER
            else RecordedAgentError(FailureKind.NON_RETRYABLE, INTERRUPTED_MESSAGE)
        )
        facts["outcome"] = outcome_to_wire(outcome)
        return facts
    run_id = action.config.run_id if isinstance(action, InvokeAgent) else action.run_id
    recorder = _recorder(host, run_id, ledger)
    executor = isinstance(action, InvokeAgent) and action.agent is AgentName.EXECUTOR
    report = EffectReport(
        action, expected.input_sha256, host.observer, recorder if executor else None
    )
    report.open(action.config if isinstance(action, InvokeAgent) else None)
    result: EffectResult = _PERFORMING.blocking(action, host.effects)
    return report.close(result, observed=host.observer is not None)


@DBOS.step(name="diagnosis_core.announce")
def _announce(run_wire: dict[str, Any], events: list[dict[str, Any]]) -> int:
    """Tell this process's observer of the trace events an effect appended (spec §14)."""
    return announce(_configured().observer, run_wire, events, TraceEvent)


# --- the workflow (deterministic: it only folds recorded facts) -------------------------


@DBOS.workflow(name=DIAGNOSIS_WORKFLOW_NAME)
def diagnosis_dbos_workflow(request_wire: dict[str, Any]) -> dict[str, Any]:
    """One diagnosis run; the finished :class:`DiagnosisState` in wire form."""
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    request = _decode_request(request_wire)
    journal = Journal(request)
    state = start_diagnosis(request)
    while not isinstance(action := next_action(state), Finished):
        started = start_entry(journal, action)
        journal = append_entry(journal, started)
        expected = expected_call(action)
        ours = True
        if not DIAGNOSIS_WORKFLOW.resent_on_resume(expected.call):
            # Only a call the resume rule does not send again needs its start
            # committed: an LLM call that DBOS runs again is the same attempt.
            ours = _begun_here(workflow_id, _begin(workflow_id, started.seq))
        ledger = (
            journal_tool_records(journal)
            if expected.call in (JournalCall.EXECUTOR, JournalCall.GATEKEEPER)
            else None
        )
        facts = _effect(wire_object(action), ledger, not ours)
        if facts.get("input_sha256") != expected.input_sha256:
            raise JournalError(f"the recorded step of {expected.describe()} is for another input")
        outcome = load_outcome(
            facts["outcome"], "outcome", gatekeeper=expected.call is JournalCall.GATEKEEPER
        )
        finished = attrs.evolve(
            started,
            state=EntryState.FINISHED,
            outcome=outcome,
            tool_invocations=decode_tool_invocations(facts),
        )
        before = state
        state = advance(state, entry_result(finished))
        journal = append_entry(journal, finished)
        if facts.get("observed") is True and (events := new_events(before, state)):
            _announce(wire_object(request.run), events)
    DBOS.set_event(DIAGNOSIS_JOURNAL_EVENT, dict(journal_to_wire(journal)))
    return wire_object(state)


# --- starting and reading runs ----------------------------------------------------------


def start_diagnosis_dbos(
    request: DiagnosisRequest, *, workflow_id: str | None = None
) -> WorkflowHandle[dict[str, Any]]:
    """Start ``request`` as a DBOS workflow; ``workflow_id`` defaults to ``diagnosis-<run id>``.

    Starting an id that already exists returns that run's handle (DBOS's
    idempotence), so a host that retries a start never runs a diagnosis twice.
    """
    if not isinstance(request, DiagnosisRequest):
        raise TypeError(f"request: expected a DiagnosisRequest, got {type(request).__name__}")
    wire = wire_object(request)
    chosen = workflow_id if workflow_id is not None else f"diagnosis-{request.run.run_id}"
    with SetWorkflowID(chosen):
        return DBOS.start_workflow(diagnosis_dbos_workflow, wire)


def run_diagnosis_dbos(
    request: DiagnosisRequest, *, workflow_id: str | None = None
) -> DiagnosisState:
    """Run ``request`` as a DBOS workflow and wait; the finished :class:`DiagnosisState`."""
    handle = start_diagnosis_dbos(request, workflow_id=workflow_id)
    state: DiagnosisState = from_wire(DiagnosisState, handle.get_result())
    return state


def dbos_diagnosis_journal(workflow_id: str, *, timeout_seconds: float = 60.0) -> Journal:
    """The journal a finished run published (:data:`DIAGNOSIS_JOURNAL_EVENT`), loaded strictly.

    :class:`JournalError` when the run has published none within ``timeout_seconds``.
    """
    data = DBOS.get_event(workflow_id, DIAGNOSIS_JOURNAL_EVENT, timeout_seconds)
    if data is None:
        raise JournalError(f"workflow {workflow_id!r} published no journal")
    return load_journal(data)


# --- the AIOps workflow ------------------------------------------------------------------


@attrs.frozen
class _AiOpsHost:
    effects: AiOpsEffects | AsyncAiOpsEffects
    tools: ToolsFactory | None
    observer: AiOpsObserver | None


_aiops_host: _AiOpsHost | None = None


def configure_aiops_dbos(
    effects: AiOpsEffects | AsyncAiOpsEffects,
    *,
    tools: ToolsFactory | None = None,
    observer: AiOpsObserver | None = None,
) -> None:
    """Give this process's AIOps DBOS workflows the host's effects; before ``DBOS.launch()``.

    As :func:`configure_diagnosis_dbos`, for the AIOps flow (spec §11): the
    executor's tool calls go on its entry, an interrupted executor is never
    called again (the AIOps resume rule, ``AIOPS_WORKFLOW.resent_on_resume``).
    """
    if not isinstance(effects, AiOpsEffects | AsyncAiOpsEffects):
        raise TypeError(
            f"effects: expected AiOpsEffects or AsyncAiOpsEffects, got {type(effects).__name__}"
        )
    global _aiops_host
    _aiops_host = _AiOpsHost(effects, tools, observer)


def _aiops_configured() -> _AiOpsHost:
    if _aiops_host is None:
        raise RuntimeError(
            "no effects for AIOps workflows in this process: call "
            "configure_aiops_dbos(effects) before DBOS.launch()"
        )
    return _aiops_host


@DBOS.step(name="diagnosis_core.aiops_effect")
def _aiops_effect(
    action_wire: dict[str, Any],
    ledger: list[dict[str, Any]] | None,
    settled: dict[str, Any] | None,
) -> dict[str, Any]:
    """Call the agent (or record the outcome the resume rule settled); the entry's facts."""
    host = _aiops_configured()
    action: InvokeAiOpsAgent = from_wire(InvokeAiOpsAgent, action_wire)
    facts: dict[str, Any] = {"input_sha256": aiops_expected_call(action).input_sha256}
    if settled is not None:
        facts["outcome"] = settled
        return facts
    executor = action.agent.value == "executor"
    recorder = (
        host.tools(action.config.run_id, ledger or [])
        if host.tools is not None and executor
        else None
    )
    report = EffectReport(action, facts["input_sha256"], host.observer, recorder)
    report.open(action.config)
    result: AgentReplied | AgentFailed = _AIOPS_PERFORMING.blocking(action, host.effects)
    return report.close(result, observed=host.observer is not None)


@DBOS.step(name="diagnosis_core.aiops_announce")
def _aiops_announce(run_wire: dict[str, Any], events: list[dict[str, Any]]) -> int:
    """Tell this process's AIOps observer of the trace events an agent call appended."""
    return announce(_aiops_configured().observer, run_wire, events, AiOpsTraceEvent)


@DBOS.workflow(name=AIOPS_WORKFLOW_NAME)
def aiops_dbos_workflow(request_wire: dict[str, Any]) -> dict[str, Any]:
    """One AIOps run; the finished :class:`AiOpsState` in wire form."""
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    request: AiOpsRequest = from_wire(AiOpsRequest, request_wire)
    recorder = AiOpsJournalRecorder(AiOpsJournal(request))
    state = start_aiops(request)
    while not isinstance(action := next_aiops_action(state), AiOpsFinished):
        started = recorder.begin(action)
        expected = aiops_expected_call(action)
        settled = None
        # Only a call the resume rule does not send again (the executor) needs
        # its start committed; begun by a process that died, it is settled.
        if not AIOPS_WORKFLOW.resent_on_resume(expected.call) and not _begun_here(
            workflow_id, _begin(workflow_id, started.seq)
        ):
            settled = outcome_to_wire(
                RecordedAgentError(FailureKind.NON_RETRYABLE, INTERRUPTED_MESSAGE)
            )
        executor = action.agent.value == "executor"
        ledger = ledger_records(recorder.journal.entries) if executor else None
        facts = _aiops_effect(wire_object(action), ledger, settled)
        if facts.get("input_sha256") != expected.input_sha256:
            raise JournalError(f"the recorded step of {expected.describe()} is for another input")
        outcome = load_outcome(facts["outcome"], "outcome", gatekeeper=False)
        fed = recorder.end(agent_result(outcome), tool_invocations=decode_tool_invocations(facts))
        before = state
        state = advance_aiops(state, fed)
        if facts.get("observed") is True and (events := new_events(before, state)):
            _aiops_announce(wire_object(request.run), events)
    DBOS.set_event(AIOPS_JOURNAL_EVENT, dict(journal_to_wire(recorder.journal)))
    return wire_object(state)


def start_aiops_dbos(
    request: AiOpsRequest, *, workflow_id: str | None = None
) -> WorkflowHandle[dict[str, Any]]:
    """Start an AIOps run as a DBOS workflow; ``workflow_id`` defaults to ``aiops-<run id>``."""
    if not isinstance(request, AiOpsRequest):
        raise TypeError(f"request: expected an AiOpsRequest, got {type(request).__name__}")
    chosen = workflow_id if workflow_id is not None else f"aiops-{request.run.run_id}"
    with SetWorkflowID(chosen):
        return DBOS.start_workflow(aiops_dbos_workflow, wire_object(request))


def run_aiops_dbos(request: AiOpsRequest, *, workflow_id: str | None = None) -> AiOpsState:
    """Run an AIOps request as a DBOS workflow and wait; the finished :class:`AiOpsState`."""
    handle = start_aiops_dbos(request, workflow_id=workflow_id)
    state: AiOpsState = from_wire(AiOpsState, handle.get_result())
    return state


def dbos_aiops_journal(workflow_id: str, *, timeout_seconds: float = 60.0) -> AiOpsJournal:
    """The journal a finished AIOps run published (:data:`AIOPS_JOURNAL_EVENT`), loaded strictly."""
    data = DBOS.get_event(workflow_id, AIOPS_JOURNAL_EVENT, timeout_seconds)
    if data is None:
        raise JournalError(f"workflow {workflow_id!r} published no journal")
    return load_aiops_journal(data)
