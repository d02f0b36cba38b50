"""The built-in drivers: a synchronous loop and an asyncio loop, blocking or iterated.

A driver only performs the effect the machine asks for and feeds the result
back; it decides nothing. Exceptions of an effect become results here (agents:
classified by the run's :class:`FailureClassifier`; the gatekeeper: always
``GatekeeperFailed``). ``BaseException``s that are not ``Exception`` (task
cancellation, ``KeyboardInterrupt``) propagate untouched.

All four drivers (:func:`run_diagnosis`, :func:`arun_diagnosis`,
:func:`iter_diagnosis`, :func:`aiter_diagnosis`) are the one step loop of
``_kernel/loop.py`` with the same options (spec §12, §14):

* ``sink`` — the run writes its journal as it goes: each ``started`` entry is
  handed to the sink *before* its effect runs, then the ``finished`` entry
  (same ``seq``), and the machine is fed the recorded fact;
* ``journal`` — resume: the journal is folded and verified, the resume rule
  applied (:func:`resume_journal`), and the run continues from there; an
  interrupted entry that the rule completes (executor, gatekeeper) is handed
  to the sink first;
* ``key`` — sign new entries and verify the resumed journal (HMAC-SHA256);
  a v2 journal ends with its end marker, written to the sink when the run
  ends (spec §12.2);
* ``head`` — resume only a journal at least as long as the head the host
  kept outside the store, and not diverging from it (spec §12.2);
* ``tools`` — the executor's entry carries the tool calls recorded during
  that call: each one is written to the sink as it finishes, on the
  executor's ``started`` entry, and the finished entry lists them all
  (spec §12.3). When ``effects.gatekeeper`` is ``tools.gatekeeper()`` and the
  recorder holds exactly the journal's tool calls, the gatekeeper entry says
  ``derived`` and folding re-derives its result (spec §12.4);
* ``resend_executor`` — the host declares its tools replay-safe: an
  interrupted executor call is re-sent as the same attempt, and each tool
  call identical to one the journal records is answered from the journal
  instead of running (needs ``tools``);
* ``observer`` — told of every effect and every trace event appended in this
  process (a resumed run's earlier events were announced by the run that
  appended them). A hook that raises is reported and never changes the run.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._kernel.effects import (
    check_effects_kind,
    check_run_options,
    reject_awaitable,
    require_awaitable,
)
from .._kernel.errors import JournalError, RunOptionsError
from .._kernel.facts import repair_text
from .._kernel.loop import (
    Done,
    adrive,
    adrive_steps,
    ainvoke_agent,
    describe_error,
    drive,
    drive_steps,
    invoke_agent,
)
from .._kernel.messages import other_request_error
from .._kernel.observe import Watcher, notify
from .._kernel.provenance import mark_built, require_built_here
from .effects import AsyncEffects, Effects
from .enums import AgentName
from .facts import gatekeeper_fact
from .machine import (
    PLAIN_FACT,
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisResult,
    DiagnosisState,
    EffectResult,
    Finished,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
    advance,
    next_action,
    start_diagnosis,
)
from .observe import DiagnosisObserver
from .trace import TraceEvent

if TYPE_CHECKING:
    from .._kernel.journal.mac import JournalHead
    from .._kernel.journal.store import JournalStore
    from .._kernel.journal.tool_calls import ExecutorTools
    from .journal import Journal, JournalEntry, JournalRecorder, JournalSink
    from .reference_gatekeeper import ToolRecorder

__all__ = [
    "aiter_diagnosis",
    "arun_diagnosis",
    "describe_error",
    "iter_diagnosis",
    "perform_effect",
    "perform_effect_async",
    "run_diagnosis",
]


_SYNC = "the sync driver"
_ASYNC = "the asyncio driver"
_EFFECT_NAMES = ("planner", "executor", "verifier", "composer", "gatekeeper")


def perform_effect(action: InvokeAgent | CallGatekeeper, effects: Effects) -> EffectResult:
    """Perform one effect synchronously and package its outcome as a result.

    The result is the fact as the journal stores it (spec §12.1): the
    gatekeeper's result as :func:`gatekeeper_fact` makes it, texts as
    :func:`repair_text` makes them — so the machine sees the same value
    whether or not the run is journaled, reloaded or resumed.

    An effect that returns an awaitable is an async effect given to the sync
    driver: ``TypeError``, never a result (spec §15).
    """
    if isinstance(action, InvokeAgent):
        return invoke_agent(
            effects.agent(action.agent),
            action.input,
            action.config,
            effects.classifier,
            what=f"Effects.{action.agent.value}",
        )
    try:
        raw = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(repair_text(describe_error(error)))
    reject_awaitable(raw, "Effects.gatekeeper", _SYNC)
    return GatekeeperReturned(gatekeeper_fact(raw), origin=PLAIN_FACT)


async def perform_effect_async(
    action: InvokeAgent | CallGatekeeper, effects: AsyncEffects
) -> EffectResult:
    """Perform one effect on the event loop and package its outcome as a result.

    An effect that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError``, never a result (spec §15).
    """
    if isinstance(action, InvokeAgent):
        return await ainvoke_agent(
            effects.agent(action.agent),
            action.input,
            action.config,
            effects.classifier,
            what=f"AsyncEffects.{action.agent.value}",
        )
    try:
        called = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(repair_text(describe_error(error)))
    result = require_awaitable(called, "AsyncEffects.gatekeeper", _ASYNC)
    try:
        raw = await result
    except Exception as error:
        return GatekeeperFailed(repair_text(describe_error(error)))
    return GatekeeperReturned(gatekeeper_fact(raw), origin=PLAIN_FACT)


# --- journaling and observing --------------------------------------------------------


class _Journaling:
    """The :class:`StepRecorder` of a journaling run: a journal recorder plus its tool calls."""

    def __init__(
        self,
        recorder: JournalRecorder,
        tools: ToolRecorder | None,
        observer: DiagnosisObserver | None = None,
    ) -> None:
        self.recorder = recorder
        self._tools = tools
        self._observer = observer
        self._executor: ExecutorTools | None = None
        self.gatekeeper: object = None

    def _derived(self) -> bool:
        """Is the gatekeeper ``tools.gatekeeper()`` over exactly the journal's tools? (§12.4)"""
        from .._kernel.journal.tool_calls import journal_ledger_equals
        from .reference_gatekeeper import RecorderGatekeeper

        gatekeeper = self.gatekeeper
        if self._tools is None or not isinstance(gatekeeper, RecorderGatekeeper):
            return False
        if gatekeeper.recorder is not self._tools:
            return False
        return journal_ledger_equals(self.recorder.journal.entries, self._tools)

    def begin(self, action: InvokeAgent | CallGatekeeper, /) -> None:
        from .._kernel.journal.tool_calls import ExecutorTools

        derived = isinstance(action, CallGatekeeper) and self._derived()
        # the sink has the started entry before the effect
        entry = self.recorder.begin(action, derived=derived)
        executor = isinstance(action, InvokeAgent) and action.agent is AgentName.EXECUTOR
        if executor and self._tools is not None:
            self._executor = ExecutorTools(self.recorder, self._tools, entry.tool_invocations)

    def end(self, action: InvokeAgent | CallGatekeeper, result: EffectResult, /) -> EffectResult:
        invocations = None
        if self._executor is not None:
            invocations = self._executor.finish()
            self._executor = None
        if invocations is not None:
            # The optional hook: the executor call's recorded tools (spec §13, §14).
            notify(self._observer, "tools_recorded", action, invocations)
        return self.recorder.end(result, tool_invocations=invocations)

    def close(self) -> None:
        """The run ended: the end marker goes to the sink (v2, spec §12.2)."""
        self.recorder.close()


def _events(state: DiagnosisState) -> Sequence[TraceEvent]:
    return state.events


class _Run:
    """A run ready to go: where it starts, its journaling, what this process must announce."""

    def __init__(
        self,
        state: DiagnosisState,
        journaling: _Journaling | None,
        *,
        announced: int,
        resumed_entry: JournalEntry | None = None,
        sink: JournalSink | None = None,
        observer: DiagnosisObserver | None = None,
    ) -> None:
        self.state = state
        self.journaling = journaling
        self.announced = announced
        self.resumed_entry = resumed_entry
        self.sink = sink
        self.observer = observer
        self.watcher = Watcher(observer)  # counts hook failures across the whole run

    def opening(self) -> Iterator[TraceEvent]:
        """Before the first effect: persist a completed interrupted entry, announce its events."""
        # The optional hook, before any other: a resumed run whose first hook would
        # be event_appended still names its run (spec §14).
        self.watcher.notify("run_opened", self.state.request.run)
        if self.resumed_entry is not None and self.sink is not None:
            self.sink.write(self.resumed_entry)
        for event in self.state.events[self.announced :]:
            self.watcher.notify("event_appended", event)
            yield event

    @property
    def watched(self) -> bool:
        return self.observer is not None


def _returned(done: Done[DiagnosisState]) -> DiagnosisState:
    """The finished state a blocking driver returns, with its observer failure count."""
    if done.observer_failures:
        return mark_built(attrs.evolve(done.state, observer_failures=done.observer_failures))
    return done.state


def _prepare(
    driver: str,
    request: DiagnosisRequest,
    state: DiagnosisState | None,
    *,
    journal: Journal | None,
    sink: JournalSink | None,
    key: bytes | None,
    resend_gatekeeper: bool,
    tools: ToolRecorder | None,
    observer: DiagnosisObserver | None,
    gatekeeper: object = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> _Run:
    """Validate the options and resume the journal; nothing is written yet."""
    journaled = journal is not None or sink is not None
    check_run_options(driver, journaling=journaled, state=state, key=key, tools=tools)
    if not journaled:
        if resend_executor or head is not None:
            raise RunOptionsError(
                "resend_executor= and head= resume a journal; pass journal= or sink="
            )
        if state is not None:
            require_built_here(state, driver)
        current = start_diagnosis(request) if state is None else state
        return _Run(current, None, announced=len(current.events), observer=observer)
    from .._kernel.journal.codec import is_v1
    from .journal import Journal, JournalRecorder, journal_status, resume_journal

    if resend_executor and tools is None:
        raise RunOptionsError(
            "resend_executor: needs tools= (the run's ToolRecorder answers the recorded tool "
            "calls from the journal)"
        )

    if journal is None:
        if head is not None:
            raise ValueError("head: checks a journal being resumed; pass journal=")
        recorder = JournalRecorder(Journal(request), sink=sink, key=key)
        journaling = _Journaling(recorder, tools, observer)
        journaling.gatekeeper = gatekeeper
        return _Run(
            start_diagnosis(request),
            journaling,
            announced=0,
            sink=sink,
            observer=observer,
        )
    if not isinstance(journal, Journal):
        raise JournalError(f"journal: expected a Journal, got {type(journal).__name__}")
    if journal.request != request:
        raise other_request_error(journal.request, request)
    before = journal_status(journal, key=key, head=head)
    if resend_executor and is_v1(journal) and before.interrupted is not None and (
        before.interrupted.call.value == "executor"
    ):
        raise JournalError(
            f"resend_executor: a {journal.format} journal does not record tool calls as they "
            "finish; its interrupted executor call cannot be re-sent"
        )
    resumed, current = resume_journal(
        journal, key=key, resend_gatekeeper=resend_gatekeeper,
        resend_executor=resend_executor, head=head,
    )
    completed = resumed.entries[-1] if resumed is not journal else None
    recorder = JournalRecorder(resumed, sink=sink, key=key)
    journaling = _Journaling(recorder, tools, observer)
    journaling.gatekeeper = gatekeeper
    return _Run(
        current,
        journaling,
        announced=len(before.state.events),
        resumed_entry=completed,
        sink=sink,
        observer=observer,
    )


def _gatekeeper_of(effects: Any) -> object:
    return getattr(effects, "gatekeeper", None)


def _check_sync(effects: Effects, driver: str) -> None:
    check_effects_kind(
        effects,
        Effects,
        _EFFECT_NAMES,
        asynchronous=False,
        driver=driver,
        other_driver=f"a{driver}",
    )


def _check_async(effects: AsyncEffects, driver: str) -> None:
    check_effects_kind(
        effects,
        AsyncEffects,
        _EFFECT_NAMES,
        asynchronous=True,
        driver=driver,
        other_driver=driver[1:],
    )


def _steps(
    run: _Run, effects: Effects, *, events: bool
) -> Iterator[TraceEvent | Done[DiagnosisState]]:
    yield from run.opening()
    perform = functools.partial(perform_effect, effects=effects)
    yield from drive_steps(
        run.state,
        next_action,
        Finished,
        perform,
        advance,
        recorder=run.journaling,
        observer=run.watcher,
        events=_events if events or run.watched else None,
    )


async def _asteps(
    run: _Run, effects: AsyncEffects, *, events: bool
) -> AsyncIterator[TraceEvent | Done[DiagnosisState]]:
    for event in run.opening():
        yield event
    perform = functools.partial(perform_effect_async, effects=effects)
    async for item in adrive_steps(
        run.state,
        next_action,
        Finished,
        perform,
        advance,
        recorder=run.journaling,
        observer=run.watcher,
        events=_events if events or run.watched else None,
    ):
        yield item


def _journal_type() -> type[Journal]:
    from .journal import Journal

    return Journal


# --- the drivers -----------------------------------------------------------------------


def run_diagnosis(
    request: DiagnosisRequest,
    effects: Effects,
    *,
    state: DiagnosisState | None = None,
    journal: Journal | None = None,
    sink: JournalSink | None = None,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    tools: ToolRecorder | None = None,
    observer: DiagnosisObserver | None = None,
    store: JournalStore | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> DiagnosisState:
    """Run to END synchronously; returns the finished state.

    ``state.result`` is the outcome, :func:`build_trace_report` the audit.
    Pass ``sink`` to write the run's journal as it goes, ``journal`` to resume
    one (its request must equal ``request``; the resume rule of spec §12
    applies, ``resend_gatekeeper`` opting in to re-sending an interrupted
    gatekeeper call), ``key`` to sign and verify it, ``tools`` so the
    executor's entries carry their tool calls, and ``observer`` to watch the
    run (spec §14). ``state`` continues from a state object that
    :func:`start_diagnosis` / :func:`advance` returned in this process (not
    with a journal or a sink: a journal starts from the request); a state
    read back from storage is for display only and refused with
    :class:`MachineError` before any effect (spec §12) — resume from the
    run's journal instead.

    ``store`` (spec §16) records the run there and resumes it when the
    store already holds it (its ``journal`` and ``sink`` come from the store).
    ``resend_executor`` re-sends an interrupted executor call with its recorded
    tool calls answered from the journal (spec §12.3; needs ``tools``); ``head``
    refuses a resumed journal shorter than or diverging from it (spec §12.2).

    Raises ``TypeError`` before the run starts when ``effects`` are not sync
    :class:`Effects` of sync callables (spec §15); :class:`JournalError` when
    the journal does not verify or belongs to another request.
    """
    if store is not None:
        from .._kernel.journal.store import run_on_store

        return run_on_store(store, request, lambda journal, sink: run_diagnosis(
            request, effects, journal=journal, sink=sink, key=key,
            resend_gatekeeper=resend_gatekeeper, tools=tools, observer=observer,
            resend_executor=resend_executor, head=head,
        ), journal_type=_journal_type(), given={"journal": journal, "sink": sink, "state": state},
           clock=time.monotonic)
    _check_sync(effects, "run_diagnosis")
    run = _prepare(
        "run_diagnosis", request, state, journal=journal, sink=sink, key=key,
        resend_gatekeeper=resend_gatekeeper, tools=tools, observer=observer,
        gatekeeper=_gatekeeper_of(effects), resend_executor=resend_executor, head=head,
    )
    if run.journaling is None and not run.watched:
        perform = functools.partial(perform_effect, effects=effects)
        return drive(run.state, next_action, Finished, perform, advance)
    last: object = None
    for item in _steps(run, effects, events=False):
        last = item
    assert isinstance(last, Done)
    return _returned(last)


async def arun_diagnosis(
    request: DiagnosisRequest,
    effects: AsyncEffects,
    *,
    state: DiagnosisState | None = None,
    journal: Journal | None = None,
    sink: JournalSink | None = None,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    tools: ToolRecorder | None = None,
    observer: DiagnosisObserver | None = None,
    store: JournalStore | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> DiagnosisState:
    """Run to END on the asyncio event loop; returns the finished state.

    The options are :func:`run_diagnosis`'s. Raises ``TypeError`` before the
    run starts when ``effects`` are not :class:`AsyncEffects` of ``async``
    callables (spec §15).
    """
    if store is not None:
        from .._kernel.journal.store import arun_on_store

        return await arun_on_store(store, request, lambda journal, sink: arun_diagnosis(
            request, effects, journal=journal, sink=sink, key=key,
            resend_gatekeeper=resend_gatekeeper, tools=tools, observer=observer,
            resend_executor=resend_executor, head=head,
        ), journal_type=_journal_type(), given={"journal": journal, "sink": sink, "state": state},
           clock=time.monotonic)
    _check_async(effects, "arun_diagnosis")
    run = _prepare(
        "arun_diagnosis", request, state, journal=journal, sink=sink, key=key,
        resend_gatekeeper=resend_gatekeeper, tools=tools, observer=observer,
        gatekeeper=_gatekeeper_of(effects), resend_executor=resend_executor, head=head,
    )
    if run.journaling is None and not run.watched:
        perform = functools.partial(perform_effect_async, effects=effects)
        return await adrive(run.state, next_action, Finished, perform, advance)
    last: object = None
    async for item in _asteps(run, effects, events=False):
        last = item
    assert isinstance(last, Done)
    return _returned(last)


def iter_diagnosis(
    request: DiagnosisRequest,
    effects: Effects,
    *,
    state: DiagnosisState | None = None,
    journal: Journal | None = None,
    sink: JournalSink | None = None,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    tools: ToolRecorder | None = None,
    observer: DiagnosisObserver | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> Iterator[TraceEvent | DiagnosisResult]:
    """:func:`run_diagnosis` as an iterator: every trace event as it is appended, then the result.

    The same loop as :func:`run_diagnosis` with the same options, so a
    streaming host and a blocking one run the same pipeline (spec §14): the
    events are exactly the finished state's trace (for a resumed run, those
    appended in this process), the last item is its :class:`DiagnosisResult`.
    Options are checked when this is called; effects run as it is iterated.
    """
    _check_sync(effects, "iter_diagnosis")
    run = _prepare(
        "iter_diagnosis", request, state, journal=journal, sink=sink, key=key,
        resend_gatekeeper=resend_gatekeeper, tools=tools, observer=observer,
        gatekeeper=_gatekeeper_of(effects), resend_executor=resend_executor, head=head,
    )
    return _iterate(run, effects)


def _iterate(run: _Run, effects: Effects) -> Iterator[TraceEvent | DiagnosisResult]:
    for item in _steps(run, effects, events=True):
        yield item.state.result if isinstance(item, Done) else item


def aiter_diagnosis(
    request: DiagnosisRequest,
    effects: AsyncEffects,
    *,
    state: DiagnosisState | None = None,
    journal: Journal | None = None,
    sink: JournalSink | None = None,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    tools: ToolRecorder | None = None,
    observer: DiagnosisObserver | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> AsyncIterator[TraceEvent | DiagnosisResult]:
    """:func:`arun_diagnosis` as an async iterator: the trace events as appended, then the result.

    ``async for item in aiter_diagnosis(request, effects): ...``. Options are
    checked when this is called; effects run as it is iterated.
    """
    _check_async(effects, "aiter_diagnosis")
    run = _prepare(
        "aiter_diagnosis", request, state, journal=journal, sink=sink, key=key,
        resend_gatekeeper=resend_gatekeeper, tools=tools, observer=observer,
        gatekeeper=_gatekeeper_of(effects), resend_executor=resend_executor, head=head,
    )
    return _aiterate(run, effects)


async def _aiterate(
    run: _Run, effects: AsyncEffects
) -> AsyncIterator[TraceEvent | DiagnosisResult]:
    async for item in _asteps(run, effects, events=True):
        yield item.state.result if isinstance(item, Done) else item
