"""Effects and the two built-in drivers of the AIOps flow (sync and asyncio).

The four agents are :class:`AgentInvoker` callables (exact input string and
:class:`RunConfig` in, message text out), exactly like the chat agents. A
driver only performs the invocation the machine asks for and feeds the
result back; it decides nothing. An exception of an agent becomes
:class:`AgentFailed`, classified by the run's :class:`FailureClassifier`
(failing closed, spec §6.7). ``BaseException``s that are not ``Exception``
propagate untouched.

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
from collections.abc import Awaitable, Callable, Sequence

import attrs

from .._classify import FailureClassifier, default_failure_classifier
from .._effects import AgentInvoker, AsyncAgentInvoker, awaitable_agent, check_effects_kind
from .._errors import JournalError
from .._journal_mac import JournalHead
from .._journal_tools import ExecutorTools
from .._journal_wire import EntryState, RecordedToolInvocation, is_v1
from .._loop import adrive, ainvoke_agent, drive, invoke_agent
from .._machine import AgentFailed, AgentReplied
from .._reference_gatekeeper import ToolLedger
from .._tools import ToolRecorder
from ._enums import AiOpsAgent
from ._journal import (
    AiOpsJournal,
    AiOpsJournalRecorder,
    AiOpsJournalSink,
    resume_aiops_journal,
)
from ._machine import (
    AiOpsFinished,
    AiOpsRequest,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from ._rules import (
    AIOPS_RULES,
    AiOpsRule,
    AiOpsRuleEvaluation,
    LedgerSource,
    evaluate_aiops_report,
)

__all__ = [
    "AiOpsEffects",
    "AsyncAiOpsEffects",
    "arun_aiops",
    "evaluate_aiops_run",
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


class _Journaling:
    """The journal side of one driven run: what to record around each agent call.

    An executor call's tool calls go to the sink as they finish, and an
    interrupted one re-sent under ``resend_executor`` is answered from the
    journal (``_journal_tools.py``, spec §12.3); the end marker is written
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

    def before(self, action: InvokeAiOpsAgent) -> None:
        entry = self._recorder.begin(action)
        if self._tools is not None and action.agent is AiOpsAgent.EXECUTOR:
            self._executor = ExecutorTools(self._recorder, self._tools, entry.tool_invocations)

    def after(self, result: AgentReplied | AgentFailed) -> AgentReplied | AgentFailed:
        invocations: tuple[RecordedToolInvocation, ...] | None = None
        if self._executor is not None:
            invocations = self._executor.finish()
            self._executor = None
        fed = self._recorder.end(result, tool_invocations=invocations)
        return fed

    def close(self, state: AiOpsState) -> AiOpsState:
        """The run ended: the end marker goes to the sink."""
        self._recorder.close()
        return state


def _start(
    request: AiOpsRequest,
    state: AiOpsState | None,
    journal: AiOpsJournal | None,
    sink: AiOpsJournalSink | None,
    key: bytes | None,
    tools: ToolRecorder | None,
    driver: str,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> tuple[AiOpsState, _Journaling | None]:
    """The state to drive from and, when journaling, the journal side of the run."""
    if journal is None and sink is None:
        if key is not None or tools is not None:
            raise TypeError(f"{driver}: key= and tools= record a journal; pass journal= or sink=")
        if resend_executor or head is not None:
            raise TypeError(f"{driver}: resend_executor= and head= resume a journal; pass journal=")
        return (start_aiops(request) if state is None else state), None
    if resend_executor and tools is None:
        raise TypeError(
            f"{driver}: resend_executor= needs tools= (the run's ToolRecorder answers the "
            "recorded tool calls from the journal)"
        )
    if state is not None:
        raise TypeError(f"{driver}: pass state= or journal=, not both (the journal is the state)")
    if tools is not None and not isinstance(tools, ToolRecorder):
        raise TypeError(f"{driver}: tools= must be a ToolRecorder, got {type(tools).__name__}")
    if journal is None:
        if head is not None:
            raise TypeError(f"{driver}: head= checks a journal being resumed; pass journal=")
        journal = AiOpsJournal(request)
        current = start_aiops(request)
    else:
        if not isinstance(journal, AiOpsJournal):
            raise JournalError(f"expected an AiOpsJournal, got {type(journal).__name__}")
        if journal.request != request:
            raise JournalError("request: the journal records a different request")
        before = journal
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
    return current, _Journaling(recorder, tools)


def run_aiops(
    request: AiOpsRequest,
    effects: AiOpsEffects,
    *,
    state: AiOpsState | None = None,
    journal: AiOpsJournal | None = None,
    sink: AiOpsJournalSink | None = None,
    key: bytes | None = None,
    tools: ToolRecorder | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> AiOpsState:
    """Run an AIOps request to END synchronously; returns the finished state.

    Pass ``state`` to resume a run saved earlier. ``state.result`` is the
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
    agent runs.
    """
    check_effects_kind(
        effects,
        AiOpsEffects,
        _AGENT_NAMES,
        asynchronous=False,
        driver="run_aiops",
        other_driver="arun_aiops",
    )
    current, journaling = _start(
        request, state, journal, sink, key, tools, "run_aiops", resend_executor, head
    )
    perform: Callable[[InvokeAiOpsAgent], AgentReplied | AgentFailed] = functools.partial(
        perform_aiops_effect, effects=effects
    )
    if journaling is None:
        return drive(current, next_aiops_action, AiOpsFinished, perform, advance_aiops)
    perform = functools.partial(_journaled, perform=perform, journaling=journaling)
    finished = drive(current, next_aiops_action, AiOpsFinished, perform, advance_aiops)
    return journaling.close(finished)


def _journaled(
    action: InvokeAiOpsAgent,
    *,
    perform: Callable[[InvokeAiOpsAgent], AgentReplied | AgentFailed],
    journaling: _Journaling,
) -> AgentReplied | AgentFailed:
    journaling.before(action)
    return journaling.after(perform(action))


async def _ajournaled(
    action: InvokeAiOpsAgent,
    *,
    perform: Callable[[InvokeAiOpsAgent], Awaitable[AgentReplied | AgentFailed]],
    journaling: _Journaling,
) -> AgentReplied | AgentFailed:
    journaling.before(action)
    return journaling.after(await perform(action))


async def arun_aiops(
    request: AiOpsRequest,
    effects: AsyncAiOpsEffects,
    *,
    state: AiOpsState | None = None,
    journal: AiOpsJournal | None = None,
    sink: AiOpsJournalSink | None = None,
    key: bytes | None = None,
    tools: ToolRecorder | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> AiOpsState:
    """Run an AIOps request to END on the asyncio event loop; returns the finished state.

    Raises ``TypeError`` before the run starts when ``effects`` are not
    :class:`AsyncAiOpsEffects` of ``async`` callables (spec §15).
    ``journal``, ``sink``, ``key`` and ``tools`` are :func:`run_aiops`'s.
    """
    check_effects_kind(
        effects,
        AsyncAiOpsEffects,
        _AGENT_NAMES,
        asynchronous=True,
        driver="arun_aiops",
        other_driver="run_aiops",
    )
    current, journaling = _start(
        request, state, journal, sink, key, tools, "arun_aiops", resend_executor, head
    )
    perform: Callable[[InvokeAiOpsAgent], Awaitable[AgentReplied | AgentFailed]] = (
        functools.partial(perform_aiops_effect_async, effects=effects)
    )
    if journaling is None:
        return await adrive(current, next_aiops_action, AiOpsFinished, perform, advance_aiops)
    perform = functools.partial(_ajournaled, perform=perform, journaling=journaling)
    finished = await adrive(current, next_aiops_action, AiOpsFinished, perform, advance_aiops)
    return journaling.close(finished)


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
