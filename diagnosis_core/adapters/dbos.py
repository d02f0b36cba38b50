"""DBOS adapter: a diagnosis run as a DBOS workflow whose steps are its effects (extra ``dbos``).

Built from public ``diagnosis_core`` names only (``tests/test_layout.py``
checks it), as the worked example of ``docs/adapters.md``.

**One workflow per run, the journal as its step results.** The workflow
function (``diagnosis_dbos_workflow``, registered as :data:`DIAGNOSIS_WORKFLOW_NAME`)
holds the request and the run's journal (spec §12) and nothing else: each effect is one DBOS step,
``diagnosis_core.effect``, returning the finished entry's facts (the input
hash, the outcome in its §12 wire form, an executor's tool calls). DBOS
records each step's output in its system database; a recovered workflow
re-runs the function, gets every recorded output back instead of running the
step, and folds the same journal to the same state. Nothing else is written:
:func:`dbos_diagnosis_journal` derives the journal of a finished run from
those facts (the workflow's recorded input and its effect steps' outputs,
each checked as strictly as on recovery), so a stored copy can never say
something the facts do not, and a run costs no write beyond its steps.

**The started entry rides on the step before it.** A call the resume rule
never sends again (the executor, the gatekeeper) must have its ``started``
entry committed before it is performed, so that a resume finds it and fails
closed. The workflow is deterministic: once the step before it (an LLM call,
or the executor before a gatekeeper) has a recorded output, the next action
— and its started entry — follows from the journal alone. So that recorded
output *is* the commitment: no write of its own, one engine round-trip per
effect. Only a run whose very first action is such a call commits its start
with a ``diagnosis_core.begin`` step.

**The §12 resume rule, not DBOS's at-least-once.** DBOS runs a step again when
its process died during it. The adapter does not let it decide: when the step
that committed a start ran in *this* execution of the workflow function, the
effect is ours and is performed; when a recovered workflow got that step's
recorded output back instead, the start was committed by a process that died
before the effect's own output was recorded — it may have run (or begun, or
not yet begun: the same §12 case) — and the workflow descriptor's rule
(``DIAGNOSIS_WORKFLOW.resent_on_resume``) says what happens: the planner,
verifier and composer are sent again with the identical input as the same
attempt; the executor is recorded as failed, ``interrupted: outcome
unknown`` (its tools may have run, so it is never called twice); the
gatekeeper as unavailable unless the host re-sends it
(``resend_gatekeeper=True``). That decision is the ``effect`` step's recorded
output, so it is taken once. A crash in the instant between the committing
step's record and the effect's start fails closed too — that is §12's
"started and not yet begun", settled like any interrupted call.

**Verify on resume only.** A step that ran in this execution hands the
workflow its decoded outcome and tool calls directly; a recorded output read
back on recovery is decoded and checked strictly (the input hash of the call,
the §12 outcome, the §13 tool calls), as a journal's entries are.

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

import itertools
import time
from collections.abc import Callable
from typing import Any

import attrs
from dbos import DBOS, SetWorkflowID, WorkflowHandle

from .. import (
    AsyncEffects,
    DiagnosisObserver,
    DiagnosisRequest,
    DiagnosisState,
    Effects,
    JournalError,
    PayloadError,
    from_wire,
    to_wire,
)
from ..aiops import AiOpsEffects, AiOpsObserver, AiOpsRequest, AiOpsState, AsyncAiOpsEffects
from ..journal import (
    INTERRUPTED_MESSAGE,
    AiOpsJournal,
    Journal,
    JournalOutcome,
    RecordedToolInvocation,
    journal_to_wire,
    outcome_to_wire,
)
from ..machine import (
    DEFAULT_MAX_QUESTION_CHARS,
    check_aiops_effects,
    check_aiops_request,
    check_diagnosis_effects,
    check_diagnosis_request,
)
from ..tools import ToolsFactory
from ._engine import (
    AIOPS,
    CHAT,
    EffectReport,
    Flow,
    announce,
    new_events,
    wire_object,
)

__all__ = [
    "AIOPS_WORKFLOW_NAME",
    "DIAGNOSIS_WORKFLOW_NAME",
    "configure_aiops_dbos",
    "configure_diagnosis_dbos",
    "dbos_aiops_journal",
    "dbos_diagnosis_journal",
    "run_aiops_dbos",
    "run_diagnosis_dbos",
    "start_aiops_dbos",
    "start_diagnosis_dbos",
]

DIAGNOSIS_WORKFLOW_NAME = "diagnosis_core.diagnosis"
"""The registered name of the DBOS workflow of a chat diagnosis run."""
AIOPS_WORKFLOW_NAME = "diagnosis_core.aiops"
"""The registered name of the DBOS workflow of an AIOps run."""


@attrs.frozen
class _Host:
    """What a process configured for one workflow: its effects, tools and observer."""

    effects: Any
    tools: ToolsFactory | None
    observer: Any
    resend_gatekeeper: bool = False


def _decode_request(data: object) -> DiagnosisRequest:
    request: DiagnosisRequest = from_wire(DiagnosisRequest, data)
    if to_wire(request) != data:
        raise PayloadError("request", "does not round-trip (an unknown key or a default spelt out)")
    return request


def _decode_aiops_request(data: object) -> AiOpsRequest:
    request: AiOpsRequest = from_wire(AiOpsRequest, data)
    return request


@attrs.define(eq=False)
class _Workflow:
    """One workflow as the DBOS loop runs it: its engine row and what is DBOS's own.

    ``decode`` reads the workflow input, ``name`` is the workflow's registered
    name, ``configure`` names the function that
    sets ``host`` (the process's effects, tools and observer), ``prefix``
    starts a run's default workflow id. ``check(request, where, limit)`` is
    the drivers' check of a request (a lone surrogate, a question over the
    limit), run before DBOS is asked to start anything.
    """

    flow: Flow
    decode: Callable[[object], Any]
    name: str
    configure: str
    prefix: str
    check: Callable[[Any, str, int], None]
    host: _Host | None = None
    function: Callable[[dict[str, Any]], dict[str, Any]] = attrs.field(init=False)
    """The registered DBOS workflow function (set once it is defined below)."""

    def workflow_id(self, request: object, chosen: str | None) -> str:
        """``chosen``, or ``<prefix>-<run id>``; ``TypeError`` for a request of another workflow."""
        request_type = self.flow.machine.request_type
        if not isinstance(request, request_type):
            raise TypeError(
                f"request: expected {_article(request_type.__name__)}, "
                f"got {type(request).__name__}"
            )
        return chosen if chosen is not None else f"{self.prefix}-{request.run.run_id}"

    def checked_id(self, request: object, chosen: str | None, where: str, limit: int) -> str:
        """:meth:`workflow_id`, once the request passed the drivers' check (``PayloadError``)."""
        workflow_id = self.workflow_id(request, chosen)
        self.check(request, where, limit)
        return workflow_id

    def configured(self) -> _Host:
        if self.host is None:
            raise RuntimeError(
                f"no effects for {self.flow.machine.name} workflows in this process: call "
                f"{self.configure}(effects) before DBOS.launch()"
            )
        return self.host


def _article(name: str) -> str:
    return f"an {name}" if name[0] in "AEIOU" else f"a {name}"


def _check_chat(request: DiagnosisRequest, where: str, limit: int) -> None:
    check_diagnosis_request(request, where=where, max_question_chars=limit)


def _check_aiops(request: AiOpsRequest, where: str, _limit: int) -> None:
    check_aiops_request(request, where=where)  # no question: no limit to apply


_CHAT = _Workflow(
    CHAT, _decode_request, DIAGNOSIS_WORKFLOW_NAME, "configure_diagnosis_dbos", "diagnosis",
    _check_chat,
)
_AIOPS = _Workflow(
    AIOPS, _decode_aiops_request, AIOPS_WORKFLOW_NAME, "configure_aiops_dbos", "aiops",
    _check_aiops,
)


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
    run with one configuration; calling it again replaces it. ``TypeError``,
    and the configuration is left as it was, for what the drivers refuse
    (:func:`~diagnosis_core.machine.check_diagnosis_effects`: effects of
    neither kind, a missing, ``None``, non-callable or wrong-arity effect, a
    gatekeeper built over other recorders than ``tools``).
    """
    check_diagnosis_effects(effects, where="configure_diagnosis_dbos", tools=tools)
    _CHAT.host = _Host(effects, tools, observer, resend_gatekeeper)


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
    ``TypeError`` for what the drivers refuse
    (:func:`~diagnosis_core.machine.check_aiops_effects`).
    """
    check_aiops_effects(effects, where="configure_aiops_dbos", tools=tools)
    _AIOPS.host = _Host(effects, tools, observer)


# --- steps (they run; their outputs are recorded) ---------------------------------------


class _Ran:
    """Set by a step's body: the step ran in this execution of the workflow function.

    A step's arguments are never recorded (only its output), so the workflow
    hands each step a fresh one; when DBOS returns a recorded output instead
    of running the step, ``ran`` stays false. An effect step that ran leaves
    its decoded facts here (``outcome``, ``invocations``), so the workflow
    folds them without decoding its own output again.
    """

    __slots__ = ("invocations", "outcome", "ran")

    def __init__(self) -> None:
        self.ran = False
        self.outcome: JournalOutcome | None = None
        self.invocations: tuple[RecordedToolInvocation, ...] | None = None


@DBOS.step(name="diagnosis_core.begin")
def _begin(seq: int, ran: _Ran) -> int:
    """Commit the started entry ``seq`` when no recorded step before it does."""
    ran.ran = True
    return seq


_EFFECT_STEP = "diagnosis_core.effect"


@DBOS.step(name=_EFFECT_STEP)
def _effect(
    run: _Workflow,
    action: Any,
    expected: Any,
    ledger: list[dict[str, Any]] | None,
    interrupted: bool,
    ran: _Ran,
) -> dict[str, Any]:
    """Perform the effect (or settle it by the §12 rule); the finished entry's facts.

    ``action`` and its ``expected`` call are the workflow's own values (a
    step's arguments are not recorded, so they are passed as they are).
    """
    ran.ran = True
    host, flow = run.configured(), run.flow
    if interrupted and not flow.machine.resent_on_resume(
        expected.call, resend_gatekeeper=host.resend_gatekeeper
    ):
        ran.outcome = flow.failed(expected.call, INTERRUPTED_MESSAGE)
        return {"input_sha256": expected.input_sha256, "outcome": outcome_to_wire(ran.outcome)}
    config = getattr(action, "config", None)  # an agent call's; a gatekeeper call has none
    recorder = None
    if host.tools is not None and ledger is not None:
        recorder = host.tools(config.run_id if config is not None else action.run_id, ledger)
    executor = expected.call is flow.machine.executor
    report = EffectReport(
        action, expected.input_sha256, host.observer, recorder if executor else None
    )
    report.open(config)
    result = flow.performing.blocking(action, host.effects)
    facts = report.close(result, observed=True if host.observer is not None else None)
    ran.outcome, ran.invocations = report.outcome, report.invocations
    return facts


@DBOS.step(name="diagnosis_core.announce")
def _announce(run: _Workflow, run_wire: dict[str, Any], events: list[dict[str, Any]]) -> int:
    """Tell this process's observer of the trace events an effect appended (spec §14)."""
    return announce(run.configured().observer, run_wire, events, run.flow.trace_event)


# --- the workflow (deterministic: it only folds recorded facts) -------------------------


def _run(run: _Workflow, request_wire: dict[str, Any]) -> dict[str, Any]:
    """One run: perform what the machine asks for, one step per effect."""
    flow = run.flow
    machine = flow.machine
    request = run.decode(request_wire)
    recorder = flow.recorder(request)
    state = machine.start(request)
    committing: _Ran | None = None  # the step whose recorded output commits the next start
    while not isinstance(action := machine.next_action(state), machine.finished_type):
        started = recorder.begin(action)
        expected = machine.expected_call(action)
        interrupted = False
        if not machine.resent_on_resume(expected.call):
            if committing is None:
                committing = _Ran()
                _begin(started.seq, committing)
            interrupted = not committing.ran
        ledger = flow.ledger(expected.call, recorder.journal.entries)
        ran = _Ran()
        facts = _effect(run, action, expected, ledger, interrupted, ran)
        if ran.outcome is not None:  # performed (or settled) in this execution
            outcome, invocations = ran.outcome, ran.invocations
            observed = facts.get("observed") is True
        else:  # a recorded output read back: verified as strictly as a journal
            outcome, invocations, observed = flow.recorded(facts, expected)
        before = state
        state = flow.fold(recorder, state, outcome, invocations)
        if observed and (events := new_events(before, state)):
            _announce(run, wire_object(request.run), events)
        committing = ran
    return wire_object(state)


@DBOS.workflow(name=DIAGNOSIS_WORKFLOW_NAME)
def diagnosis_dbos_workflow(request_wire: dict[str, Any]) -> dict[str, Any]:
    """One diagnosis run; the finished :class:`DiagnosisState` in wire form."""
    return _run(_CHAT, request_wire)


@DBOS.workflow(name=AIOPS_WORKFLOW_NAME)
def aiops_dbos_workflow(request_wire: dict[str, Any]) -> dict[str, Any]:
    """One AIOps run; the finished :class:`AiOpsState` in wire form."""
    return _run(_AIOPS, request_wire)


_CHAT.function, _AIOPS.function = diagnosis_dbos_workflow, aiops_dbos_workflow


# --- starting and reading runs ----------------------------------------------------------


def _start(
    run: _Workflow, request: object, workflow_id: str | None, where: str, limit: int
) -> WorkflowHandle[dict[str, Any]]:
    with SetWorkflowID(run.checked_id(request, workflow_id, where, limit)):
        return DBOS.start_workflow(run.function, wire_object(request))


def _run_here(
    run: _Workflow, request: object, workflow_id: str | None, where: str, limit: int
) -> object:
    with SetWorkflowID(run.checked_id(request, workflow_id, where, limit)):
        return run.function(wire_object(request))


def start_diagnosis_dbos(
    request: DiagnosisRequest,
    *,
    workflow_id: str | None = None,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> WorkflowHandle[dict[str, Any]]:
    """Start ``request`` as a DBOS workflow; ``workflow_id`` defaults to ``diagnosis-<run id>``.

    Starting an id that already exists returns that run's handle (DBOS's
    idempotence), so a host that retries a start never runs a diagnosis twice.
    A question longer than ``max_question_chars`` (default 100 000, as the
    drivers') or a lone surrogate anywhere in the request is a
    :class:`PayloadError` before DBOS records anything.
    """
    return _start(_CHAT, request, workflow_id, "start_diagnosis_dbos", max_question_chars)


def run_diagnosis_dbos(
    request: DiagnosisRequest,
    *,
    workflow_id: str | None = None,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> DiagnosisState:
    """Run ``request`` as a DBOS workflow and wait; the finished :class:`DiagnosisState`.

    The workflow runs in the calling thread (an id that already exists is
    not run again: its result is awaited, as :func:`start_diagnosis_dbos`'s
    handle would). The request is checked as by :func:`start_diagnosis_dbos`.
    """
    wire = _run_here(_CHAT, request, workflow_id, "run_diagnosis_dbos", max_question_chars)
    state: DiagnosisState = from_wire(DiagnosisState, wire)
    return state


def dbos_diagnosis_journal(workflow_id: str, *, timeout_seconds: float = 60.0) -> Journal:
    """The journal of a finished run, folded from its recorded step outputs and loaded strictly.

    Waits up to ``timeout_seconds`` for the run to finish; :class:`JournalError`
    when it has not, when it ended without a result, or when what DBOS
    recorded is not the facts of this workflow (see :func:`_recorded_journal`).
    """
    return Journal.load(_recorded_journal(_CHAT, workflow_id, timeout_seconds))


_POLL_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5)  # then every 0.5 s
_ACTIVE = frozenset({"PENDING", "ENQUEUED", "DELAYED"})


def _finished_status(run: _Workflow, workflow_id: str, timeout_seconds: float) -> Any:
    """The DBOS status of ``workflow_id`` once it is no longer running (polled)."""
    deadline = time.monotonic() + timeout_seconds
    pauses = itertools.chain(_POLL_SECONDS, itertools.repeat(_POLL_SECONDS[-1]))
    while True:
        status = DBOS.get_workflow_status(workflow_id)
        if status is None:
            raise JournalError(f"workflow {workflow_id!r}: DBOS holds no such workflow")
        if status.name != run.name:
            raise JournalError(
                f"workflow {workflow_id!r} is a {status.name!r} workflow, not {run.name!r}"
            )
        if status.status not in _ACTIVE:
            return status
        left = deadline - time.monotonic()
        if left <= 0:
            raise JournalError(
                f"workflow {workflow_id!r} is {status.status} after {timeout_seconds} s: "
                "its journal is not complete"
            )
        time.sleep(min(next(pauses), left))


def _recorded_journal(run: _Workflow, workflow_id: str, timeout_seconds: float) -> object:
    """The wire form of a finished run's journal, derived from what DBOS recorded for it.

    Nothing but the facts is stored: the workflow's input (the request) and
    each ``diagnosis_core.effect`` step's output. They are folded here as the
    workflow folded them — each output checked as strictly as on recovery —
    so the journal cannot say anything the recorded facts do not. A run that
    ended without a result (an error, a cancellation) has no journal to give.
    """
    status = _finished_status(run, workflow_id, timeout_seconds)
    if status.status != "SUCCESS":
        raise JournalError(f"workflow {workflow_id!r} ended {status.status}: it has no journal")
    inputs = status.input or {"args": (), "kwargs": {}}
    if len(inputs["args"]) != 1 or inputs["kwargs"]:
        raise JournalError(f"workflow {workflow_id!r}: its recorded input is not one request")
    try:
        request = run.decode(inputs["args"][0])
    except PayloadError as error:
        raise JournalError(f"workflow {workflow_id!r}: its recorded request: {error}") from None
    flow = run.flow
    machine = flow.machine
    recorder = flow.recorder(request)
    state = machine.start(request)
    for step in DBOS.list_workflow_steps(workflow_id):
        if step["function_name"] != _EFFECT_STEP:
            continue  # the begin and announce steps hold no fact of the journal
        action = machine.next_action(state)
        if isinstance(action, machine.finished_type) or step["error"] is not None:
            raise JournalError(
                f"workflow {workflow_id!r}: step {step['function_id']} is not an effect of the run"
            )
        recorder.begin(action)
        outcome, invocations, _ = flow.recorded(step["output"], machine.expected_call(action))
        state = flow.fold(recorder, state, outcome, invocations)
    if not isinstance(machine.next_action(state), machine.finished_type):
        raise JournalError(f"workflow {workflow_id!r}: its recorded effects end before the run")
    return journal_to_wire(recorder.journal)


# --- the AIOps workflow ------------------------------------------------------------------


def start_aiops_dbos(
    request: AiOpsRequest, *, workflow_id: str | None = None
) -> WorkflowHandle[dict[str, Any]]:
    """Start an AIOps run as a DBOS workflow; ``workflow_id`` defaults to ``aiops-<run id>``.

    A lone surrogate anywhere in the request is a :class:`PayloadError` before
    DBOS records anything.
    """
    return _start(_AIOPS, request, workflow_id, "start_aiops_dbos", 1)


def run_aiops_dbos(request: AiOpsRequest, *, workflow_id: str | None = None) -> AiOpsState:
    """Run an AIOps request as a DBOS workflow and wait (in the calling thread); its state.

    The request is checked as by :func:`start_aiops_dbos`.
    """
    state: AiOpsState = from_wire(
        AiOpsState, _run_here(_AIOPS, request, workflow_id, "run_aiops_dbos", 1)
    )
    return state


def dbos_aiops_journal(workflow_id: str, *, timeout_seconds: float = 60.0) -> AiOpsJournal:
    """The journal of a finished AIOps run, as :func:`dbos_diagnosis_journal` derives it."""
    return AiOpsJournal.load(_recorded_journal(_AIOPS, workflow_id, timeout_seconds))
