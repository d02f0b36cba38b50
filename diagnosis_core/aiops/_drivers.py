"""Effects and the two built-in drivers of the AIOps flow (sync and asyncio).

The four agents are :class:`AgentInvoker` callables (exact input string and
:class:`RunConfig` in, message text out), exactly like the chat agents. A
driver only performs the invocation the machine asks for and feeds the
result back; it decides nothing. An exception of an agent becomes
:class:`AgentFailed`, classified by the run's :class:`FailureClassifier`
(failing closed, spec §6.7). ``BaseException``s that are not ``Exception``
propagate untouched.

The four drivers (:func:`run_aiops`, :func:`arun_aiops`, :func:`iter_aiops`,
:func:`aiter_aiops`) are the kernel's one step loop, like the chat drivers,
with the same options. ``observer=`` (an :data:`AiOpsObserver`) is told of
every agent call and every trace event appended in this process (spec §14).

With ``journal=`` or ``sink=`` a driver also writes the run's journal
(spec §12): each ``started`` entry goes to the sink before the agent runs,
the ``finished`` one when it returned, and the machine is fed the recorded
fact (what the finished entry folds to), so the live state and the fold of
the journal are equal by construction. ``journal=`` resumes from a journal
under the resume rule (``resume_aiops_journal``).

:func:`evaluate_aiops_run` applies the rule evaluator to a finished run with
the tool ledger the host recorded.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeAlias

import attrs

from .._kernel.classify import FailureClassifier, default_failure_classifier
from .._kernel.effects import (
    AgentInvoker,
    AsyncAgentInvoker,
    awaitable_agent,
    check_effects_kind,
    check_run_options,
)
from .._kernel.errors import JournalError, RunOptionsError
from .._kernel.journal.codec import (
    EntryState,
    RecordedToolInvocation,
    is_v1,
)
from .._kernel.journal.mac import JournalHead
from .._kernel.journal.tool_calls import ExecutorTools
from .._kernel.ledger import ToolLedger
from .._kernel.loop import (
    Done,
    adrive,
    adrive_steps,
    ainvoke_agent,
    drive,
    drive_steps,
    invoke_agent,
)
from .._kernel.messages import other_request_error
from .._kernel.observe import Observer, notify
from .._kernel.provenance import require_built_here
from .._kernel.results import AgentFailed, AgentReplied
from .._kernel.tools import ToolRecorder
from ._enums import AiOpsAgent
from ._journal import (
    AiOpsJournal,
    AiOpsJournalRecorder,
    AiOpsJournalSink,
    aiops_journal_status,
    resume_aiops_journal,
)
from ._machine import (
    AiOpsFinished,
    AiOpsRequest,
    AiOpsResult,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)

if TYPE_CHECKING:
    from .._kernel.journal.store import JournalStore
from ._rules import (
    AIOPS_RULES,
    AiOpsRule,
    AiOpsRuleEvaluation,
    LedgerSource,
    evaluate_aiops_report,
)
from ._trace import AiOpsTraceEvent

__all__ = [
    "AiOpsEffects",
    "AiOpsObserver",
    "AsyncAiOpsEffects",
    "aiter_aiops",
    "arun_aiops",
    "evaluate_aiops_run",
    "iter_aiops",
    "perform_aiops_effect",
    "perform_aiops_effect_async",
    "run_aiops",
]


@attrs.frozen
class AiOpsEffects:
    """The four agents and the failure classifier of a synchronous AIOps run."""

    supervisor: AgentInvoker
    planner: AgentInvoker
    executor: AgentInvoker
    reporter: AgentInvoker
    classifier: FailureClassifier = default_failure_classifier

    def agent(self, name: AiOpsAgent) -> AgentInvoker:
        """The invoker for ``name``."""
        invoker: AgentInvoker = getattr(self, name.value)
        return invoker


@attrs.frozen
class AsyncAiOpsEffects:
    """The four agents and the failure classifier of an asyncio AIOps run."""

    supervisor: AsyncAgentInvoker
    planner: AsyncAgentInvoker
    executor: AsyncAgentInvoker
    reporter: AsyncAgentInvoker
    classifier: FailureClassifier = default_failure_classifier

    def agent(self, name: AiOpsAgent) -> AsyncAgentInvoker:
        """The invoker for ``name``."""
        invoker: AsyncAgentInvoker = getattr(self, name.value)
        return invoker

    @classmethod
    def from_sync(cls, effects: AiOpsEffects) -> AsyncAiOpsEffects:
        """Wrap synchronous effects (called inline, on the event loop thread)."""
        return cls(
            supervisor=awaitable_agent(effects.supervisor),
            planner=awaitable_agent(effects.planner),
            executor=awaitable_agent(effects.executor),
            reporter=awaitable_agent(effects.reporter),
            classifier=effects.classifier,
        )


_AGENT_NAMES = tuple(agent.value for agent in AiOpsAgent)


def perform_aiops_effect(
    action: InvokeAiOpsAgent, effects: AiOpsEffects
) -> AgentReplied | AgentFailed:
    """Invoke one agent synchronously and package its outcome as a result.

    An agent that returns an awaitable is an async effect given to the sync
    driver: ``TypeError``, never a result (spec §15).
    """
    invoker = effects.agent(action.agent)
    return invoke_agent(
        invoker,
        action.input,
        action.config,
        effects.classifier,
        what=f"AiOpsEffects.{action.agent.value}",
    )


async def perform_aiops_effect_async(
    action: InvokeAiOpsAgent, effects: AsyncAiOpsEffects
) -> AgentReplied | AgentFailed:
    """Invoke one agent on the event loop and package its outcome as a result.

    An agent that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError``, never a result (spec §15).
    """
    return await ainvoke_agent(
        effects.agent(action.agent),
        action.input,
        action.config,
        effects.classifier,
        what=f"AsyncAiOpsEffects.{action.agent.value}",
    )


AiOpsObserver: TypeAlias = Observer[
    InvokeAiOpsAgent, AgentReplied | AgentFailed, AiOpsTraceEvent
]
"""An observer of the AIOps drivers (spec §14): the kernel's protocol, narrowed."""


class _Journaling:
    """The journal side of one driven run: what to record around each agent call.

    An executor call's tool calls go to the sink as they finish, and an
    interrupted one re-sent under ``resend_executor`` is answered from the
    journal (``_kernel/journal/tool_calls.py``, spec §12.3); the end marker is written
    when the run ends (spec §12.2).
    """

    def __init__(
        self,
        recorder: AiOpsJournalRecorder,
        tools: ToolRecorder | None,
    ) -> None:
        self._recorder = recorder
        self._tools = tools
        self._executor: ExecutorTools | None = None

    def begin(self, action: InvokeAiOpsAgent, /) -> None:
        entry = self._recorder.begin(action)  # the sink has the started entry before the agent runs
        if self._tools is not None and action.agent is AiOpsAgent.EXECUTOR:
            self._executor = ExecutorTools(self._recorder, self._tools, entry.tool_invocations)

    def end(
        self, action: InvokeAiOpsAgent, result: AgentReplied | AgentFailed, /
    ) -> AgentReplied | AgentFailed:
        invocations: tuple[RecordedToolInvocation, ...] | None = None
        if self._executor is not None:
            invocations = self._executor.finish()
            self._executor = None
        fed = self._recorder.end(result, tool_invocations=invocations)
        return fed

    def close(self) -> None:
        """The run ended: the end marker goes to the sink (spec §12.2)."""
        self._recorder.close()


@attrs.frozen
class _Run:
    """A run ready to go: where it starts, its journaling, what this process must announce."""

    state: AiOpsState
    journaling: _Journaling | None
    announced: int
    observer: AiOpsObserver | None

    def opening(self) -> Iterator[AiOpsTraceEvent]:
        """The events a resume appended (an interrupted call finished), announced first."""
        for event in self.state.events[self.announced :]:
            notify(self.observer, "event_appended", event)
            yield event


def _events(state: AiOpsState) -> Sequence[AiOpsTraceEvent]:
    return state.events


def _start(
    request: AiOpsRequest,
    state: AiOpsState | None,
    journal: AiOpsJournal | None,
    sink: AiOpsJournalSink | None,
    key: bytes | None,
    tools: ToolRecorder | None,
    observer: AiOpsObserver | None,
    driver: str,
    *,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> _Run:
    """The state to drive from and, when journaling, the journal side of the run."""
    journaling = journal is not None or sink is not None
    check_run_options(driver, journaling=journaling, state=state, key=key, tools=tools)
    if not journaling:
        if resend_executor or head is not None:
            raise RunOptionsError(
                f"{driver}: resend_executor= and head= resume a journal; pass journal="
            )
        if state is not None:
            require_built_here(state, driver)
        current = start_aiops(request) if state is None else state
        return _Run(current, None, len(current.events), observer)
    if resend_executor and tools is None:
        raise RunOptionsError(
            f"{driver}: resend_executor= needs tools= (the run's ToolRecorder answers the "
            "recorded tool calls from the journal)"
        )
    announced = 0
    if journal is None:
        if head is not None:
            raise RunOptionsError(f"{driver}: head= checks a journal being resumed; pass journal=")
        journal = AiOpsJournal(request)
        current = start_aiops(request)
    else:
        if not isinstance(journal, AiOpsJournal):
            raise JournalError(f"expected an AiOpsJournal, got {type(journal).__name__}")
        if journal.request != request:
            raise other_request_error(journal.request, request)
        before = journal
        announced = len(aiops_journal_status(journal, key=key, head=head).state.events)
        last = journal.entries[-1] if journal.entries else None
        if resend_executor and is_v1(journal) and last is not None and (
            last.state is EntryState.STARTED and last.call is AiOpsAgent.EXECUTOR
        ):
            raise JournalError(
                f"resend_executor: a {journal.format} journal does not record tool calls as "
                "they finish; its interrupted executor call cannot be re-sent"
            )
        journal, current = resume_aiops_journal(
            journal, key=key, resend_executor=resend_executor, head=head
        )
        if sink is not None and journal is not before:
            sink.write(journal.entries[-1])  # the interrupted executor call, now finished
    recorder = AiOpsJournalRecorder(journal, sink=sink, key=key)
    return _Run(current, _Journaling(recorder, tools), announced, observer)


def _steps(
    run: _Run, effects: AiOpsEffects, *, events: bool
) -> Iterator[AiOpsTraceEvent | Done[AiOpsState]]:
    yield from run.opening()
    perform = functools.partial(perform_aiops_effect, effects=effects)
    watched = events or run.observer is not None
    yield from drive_steps(
        run.state,
        next_aiops_action,
        AiOpsFinished,
        perform,
        advance_aiops,
        recorder=run.journaling,
        observer=run.observer,
        events=_events if watched else None,
    )


async def _asteps(
    run: _Run, effects: AsyncAiOpsEffects, *, events: bool
) -> AsyncIterator[AiOpsTraceEvent | Done[AiOpsState]]:
    for event in run.opening():
        yield event
    perform = functools.partial(perform_aiops_effect_async, effects=effects)
    watched = events or run.observer is not None
    async for item in adrive_steps(
        run.state,
        next_aiops_action,
        AiOpsFinished,
        perform,
        advance_aiops,
        recorder=run.journaling,
        observer=run.observer,
        events=_events if watched else None,
    ):
        yield item


def _check_sync(effects: AiOpsEffects, driver: str) -> None:
    check_effects_kind(
        effects, AiOpsEffects, _AGENT_NAMES,
        asynchronous=False, driver=driver, other_driver=f"a{driver}",
    )


def _check_async(effects: AsyncAiOpsEffects, driver: str) -> None:
    check_effects_kind(
        effects, AsyncAiOpsEffects, _AGENT_NAMES,
        asynchronous=True, driver=driver, other_driver=driver[1:],
    )


def run_aiops(
    request: AiOpsRequest,
    effects: AiOpsEffects,
    *,
    state: AiOpsState | None = None,
    journal: AiOpsJournal | None = None,
    sink: AiOpsJournalSink | None = None,
    key: bytes | None = None,
    tools: ToolRecorder | None = None,
    observer: AiOpsObserver | None = None,
    store: JournalStore | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> AiOpsState:
    """Run an AIOps request to END synchronously; returns the finished state.

    Pass ``state`` to continue from a state object the machine built in this
    process (:func:`start_aiops` / :func:`advance_aiops`); a state read back
    from storage is display-only and refused with :class:`MachineError`
    before any agent runs (spec §12) — resume from the run's journal. ``state.result`` is the
    outcome; judge its report with :func:`evaluate_aiops_report`. Raises
    ``TypeError`` before the run starts when ``effects`` are not sync
    :class:`AiOpsEffects` of sync callables (spec §15).

    Journaling (spec §12): with ``sink`` every entry is written to it as the
    run goes (``started`` before the agent runs); with ``journal`` the run
    resumes from that journal (of the same ``request``, verified with
    ``key``) by the resume rule, and goes on recording. ``key`` signs the
    entries; ``tools`` — the run's :class:`ToolRecorder` — puts the tool
    calls each executor call made on its entry (``tool_invocations``), each
    written to the sink as it finishes (spec §12.3). ``resend_executor``
    re-sends an interrupted executor call, answering each tool call identical
    to a recorded one from the journal (needs ``tools``); ``head`` refuses a
    resumed journal shorter than or diverging from it (spec §12.2).
    A journal that does not verify is a :class:`JournalError` before any
    agent runs. ``observer`` watches the run (spec §14): every agent call
    and every trace event appended in this process; a hook that raises is
    reported and never changes the run. ``store`` (spec §16) records the run
    there and resumes it when the store already holds it.
    """
    if store is not None:
        from .._kernel.journal.store import run_on_store

        return run_on_store(store, request, lambda journal, sink: run_aiops(
            request, effects, journal=journal, sink=sink, key=key, tools=tools,
            observer=observer, resend_executor=resend_executor, head=head,
        ), journal_type=AiOpsJournal, given={"journal": journal, "sink": sink, "state": state},
           clock=time.monotonic)
    _check_sync(effects, "run_aiops")
    run = _start(
        request, state, journal, sink, key, tools, observer, "run_aiops",
        resend_executor=resend_executor, head=head,
    )
    if run.journaling is None and run.observer is None:
        perform: Callable[[InvokeAiOpsAgent], AgentReplied | AgentFailed] = functools.partial(
            perform_aiops_effect, effects=effects
        )
        return drive(run.state, next_aiops_action, AiOpsFinished, perform, advance_aiops)
    last: object = None
    for item in _steps(run, effects, events=False):
        last = item
    assert isinstance(last, Done)
    return last.state  # type: ignore[no-any-return]


async def arun_aiops(
    request: AiOpsRequest,
    effects: AsyncAiOpsEffects,
    *,
    state: AiOpsState | None = None,
    journal: AiOpsJournal | None = None,
    sink: AiOpsJournalSink | None = None,
    key: bytes | None = None,
    tools: ToolRecorder | None = None,
    observer: AiOpsObserver | None = None,
    store: JournalStore | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> AiOpsState:
    """Run an AIOps request to END on the asyncio event loop; returns the finished state.

    Raises ``TypeError`` before the run starts when ``effects`` are not
    :class:`AsyncAiOpsEffects` of ``async`` callables (spec §15).
    ``journal``, ``sink``, ``key``, ``tools``, ``observer`` and ``store`` are
    :func:`run_aiops`'s.
    """
    if store is not None:
        from .._kernel.journal.store import arun_on_store

        return await arun_on_store(store, request, lambda journal, sink: arun_aiops(
            request, effects, journal=journal, sink=sink, key=key, tools=tools,
            observer=observer, resend_executor=resend_executor, head=head,
        ), journal_type=AiOpsJournal, given={"journal": journal, "sink": sink, "state": state},
           clock=time.monotonic)
    _check_async(effects, "arun_aiops")
    run = _start(
        request, state, journal, sink, key, tools, observer, "arun_aiops",
        resend_executor=resend_executor, head=head,
    )
    if run.journaling is None and run.observer is None:
        perform: Callable[[InvokeAiOpsAgent], Awaitable[AgentReplied | AgentFailed]] = (
            functools.partial(perform_aiops_effect_async, effects=effects)
        )
        return await adrive(run.state, next_aiops_action, AiOpsFinished, perform, advance_aiops)
    last: object = None
    async for item in _asteps(run, effects, events=False):
        last = item
    assert isinstance(last, Done)
    return last.state  # type: ignore[no-any-return]


def iter_aiops(
    request: AiOpsRequest,
    effects: AiOpsEffects,
    *,
    state: AiOpsState | None = None,
    journal: AiOpsJournal | None = None,
    sink: AiOpsJournalSink | None = None,
    key: bytes | None = None,
    tools: ToolRecorder | None = None,
    observer: AiOpsObserver | None = None,
) -> Iterator[AiOpsTraceEvent | AiOpsResult]:
    """:func:`run_aiops` as an iterator: every trace event as it is appended, then the result.

    The same loop and options as :func:`run_aiops` (spec §14): the events are
    exactly the finished state's trace (for a resumed run, those appended in
    this process), the last item is its :class:`AiOpsResult`. Options are
    checked when this is called; agents run as it is iterated.
    """
    _check_sync(effects, "iter_aiops")
    run = _start(request, state, journal, sink, key, tools, observer, "iter_aiops")
    return _iterate(run, effects)


def _iterate(run: _Run, effects: AiOpsEffects) -> Iterator[AiOpsTraceEvent | AiOpsResult]:
    for item in _steps(run, effects, events=True):
        yield item.state.result if isinstance(item, Done) else item


def aiter_aiops(
    request: AiOpsRequest,
    effects: AsyncAiOpsEffects,
    *,
    state: AiOpsState | None = None,
    journal: AiOpsJournal | None = None,
    sink: AiOpsJournalSink | None = None,
    key: bytes | None = None,
    tools: ToolRecorder | None = None,
    observer: AiOpsObserver | None = None,
) -> AsyncIterator[AiOpsTraceEvent | AiOpsResult]:
    """:func:`arun_aiops` as an async iterator: the trace events as appended, then the result.

    ``async for item in aiter_aiops(request, effects): ...``. Options are
    checked when this is called; agents run as it is iterated.
    """
    _check_async(effects, "aiter_aiops")
    run = _start(request, state, journal, sink, key, tools, observer, "aiter_aiops")
    return _aiterate(run, effects)


async def _aiterate(
    run: _Run, effects: AsyncAiOpsEffects
) -> AsyncIterator[AiOpsTraceEvent | AiOpsResult]:
    async for item in _asteps(run, effects, events=True):
        yield item.state.result if isinstance(item, Done) else item


def evaluate_aiops_run(
    state: AiOpsState,
    ledger: ToolLedger | LedgerSource,
    *,
    rules: Sequence[AiOpsRule] = AIOPS_RULES,
) -> AiOpsRuleEvaluation | None:
    """``aiops_rule_evaluation`` of a finished run's report; None for a fallback.

    ``ledger`` may be the run's :class:`ToolRecorder` (its ledger is read
    now, at evaluation time, spec §13) or a :class:`ToolLedger`.

    The fallback report is deterministic text built from facts only; there
    is no agent report to judge. Raises :class:`MachineError` before END.
    """
    result = state.result
    if result.report is None:
        return None
    return evaluate_aiops_report(
        result.report, mode=result.mode, alerts=state.request.alerts, ledger=ledger, rules=rules
    )
