"""Effects and the two built-in drivers of the AIOps flow (sync and asyncio).

The four agents are :class:`AgentInvoker` callables (exact input string and
:class:`RunConfig` in, message text out), exactly like the chat agents. A
driver only performs the invocation the machine asks for and feeds the
result back; it decides nothing. An exception of an agent becomes
:class:`AgentFailed`, classified by the run's :class:`FailureClassifier`
(failing closed, spec §6.7). ``BaseException``s that are not ``Exception``
propagate untouched.

The four drivers (:func:`run_aiops`, :func:`arun_aiops`, :func:`iter_aiops`,
:func:`aiter_aiops`) are thin typed wrappers over the kernel's one driver
(``_kernel/driving/driver.py``) for :data:`AIOPS_WORKFLOW`, like the chat drivers,
with the same :class:`RunOptions` (``options=`` or the same-named keywords),
checked the same way with the same errors (journaling, resume and the store are
the kernel driver's). ``observer=`` (an :data:`AiOpsObserver`) is told of
every agent call and every trace event appended in this process (spec §14).
The rule evaluator judges a finished run's report (``evaluate_aiops_run``, ``rules.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TypeAlias, Unpack

import attrs

from .._kernel.driving import driver as _driver
from .._kernel.driving.effects import (
    AGENT_FIELD,
    ASYNC_AGENT_FIELD,
    AgentInvoker,
    AgentTable,
    AsyncAgentInvoker,
    AsyncAgentTable,
    Driving,
    classifier_field,
)
from .._kernel.driving.loop import ainvoke_agent, invoke_agent
from .._kernel.driving.observe import Observer
from .._kernel.driving.options import RunKeywords, RunOptions
from .._kernel.machine.classify import FailureClassifier
from .._kernel.machine.results import AgentFailed, AgentReplied
from .._kernel.tools.recorder import ToolRecorder
from .enums import AiOpsAgent
from .journal import AiOpsJournal, AiOpsJournalRecorder, AiOpsJournalSink
from .machine import (
    AiOpsRequest,
    AiOpsResult,
    AiOpsState,
    InvokeAiOpsAgent,
)
from .trace import AiOpsTraceEvent
from .workflow import AIOPS_WORKFLOW

__all__ = [
    "AiOpsEffects",
    "AiOpsObserver",
    "AsyncAiOpsEffects",
    "aiter_aiops",
    "arun_aiops",
    "check_aiops_effects",
    "check_aiops_request",
    "iter_aiops",
    "perform_aiops_effect",
    "perform_aiops_effect_async",
    "run_aiops",
]


@attrs.frozen
class AiOpsEffects(AgentTable[AiOpsAgent, AgentInvoker]):
    """The four agents and the failure classifier of a synchronous AIOps run.

    Each effect is checked when built: a missing or ``None`` effect, one that
    is not callable or cannot take ``(input, config)`` is a ``TypeError``
    naming the field and the expected signature (as ``Effects`` checks its own).
    """

    supervisor: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    planner: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    executor: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    reporter: AgentInvoker = attrs.field(validator=AGENT_FIELD)
    classifier: FailureClassifier = classifier_field()  # noqa: RUF009 - an attrs field


@attrs.frozen
class AsyncAiOpsEffects(AsyncAgentTable[AiOpsAgent, AiOpsEffects]):
    """The four agents and the failure classifier of an asyncio AIOps run.

    To run sync agents here, wrap them: ``AsyncAiOpsEffects.from_sync(effects)``.
    Each effect is checked when built, as :class:`AiOpsEffects` checks its own.
    """

    supervisor: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    planner: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    executor: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    reporter: AsyncAgentInvoker = attrs.field(validator=ASYNC_AGENT_FIELD)
    classifier: FailureClassifier = classifier_field()  # noqa: RUF009 - an attrs field


def perform_aiops_effect(
    action: InvokeAiOpsAgent, effects: AiOpsEffects
) -> AgentReplied | AgentFailed:
    """Invoke one agent synchronously and package its outcome as a result.

    An agent that returns an awaitable is an async effect given to the sync
    driver: ``TypeError``, never a result (spec §15).
    """
    return invoke_agent(effects, action, "AiOpsEffects")


async def perform_aiops_effect_async(
    action: InvokeAiOpsAgent, effects: AsyncAiOpsEffects
) -> AgentReplied | AgentFailed:
    """Invoke one agent on the event loop and package its outcome as a result.

    An agent that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError``, never a result (spec §15).
    """
    return await ainvoke_agent(effects, action, "AsyncAiOpsEffects")


AiOpsObserver: TypeAlias = Observer[InvokeAiOpsAgent, AgentReplied | AgentFailed, AiOpsTraceEvent]
"""An observer of the AIOps drivers (spec §14): the kernel's protocol, narrowed."""


class _AiOpsDriving(Driving[AiOpsState, AiOpsEffects, AsyncAiOpsEffects]):
    """The AIOps workflow's parts of the kernel's one driver."""

    __slots__ = ()

    effects_type = AiOpsEffects
    async_effects_type = AsyncAiOpsEffects
    effect_names = tuple(agent.value for agent in AiOpsAgent)

    # The workflow's own objects and effect functions: a wrapper would only repeat them.
    workflow = AIOPS_WORKFLOW
    journal_type = AiOpsJournal
    recorder_type = AiOpsJournalRecorder
    perform = staticmethod(perform_aiops_effect)
    aperform = staticmethod(perform_aiops_effect_async)


_DRIVING = _AiOpsDriving()


def check_aiops_effects(
    effects: AiOpsEffects | AsyncAiOpsEffects, *, where: str, tools: object = None
) -> None:
    """The drivers' checks of ``effects``, for an engine adapter that takes either kind.

    What :func:`run_aiops` and :func:`arun_aiops` refuse before anything
    runs: effects that are neither :class:`AiOpsEffects` nor
    :class:`AsyncAiOpsEffects`, and a missing, ``None``, non-callable or
    wrong-arity effect, or one of the other kind (``TypeError`` naming the
    field and the expected signature). ``tools`` is accepted for symmetry
    with the chat check (the AIOps flow has no gatekeeper to hold against
    it). ``where`` names the caller in the messages; one check, shared with
    the drivers.
    """
    _driver.check_wiring(_DRIVING, effects, tools, where)


def check_aiops_request(request: AiOpsRequest, *, where: str) -> None:
    """The drivers' check of ``request``, for an engine adapter's entry point.

    A lone surrogate code point anywhere in the request (its run, an alert)
    is a :class:`PayloadError` naming the field: no journal or store can
    keep it (spec §12.1). AIOps requests hold no question, so no size limit
    applies. A request of another type is left to the caller's own check.
    """
    _driver.check_request(_DRIVING, request, 1, where)


_Keywords: TypeAlias = RunKeywords[AiOpsJournal, AiOpsJournalSink, AiOpsObserver, ToolRecorder]
"""The run options as loose keywords (each one a :class:`RunOptions` field)."""


def run_aiops(
    request: AiOpsRequest,
    effects: AiOpsEffects,
    *,
    state: AiOpsState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
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
    ``resend_gatekeeper`` is accepted for symmetry (this flow has no
    gatekeeper call). ``options`` gives all of these as one
    :class:`RunOptions` value instead (not together with any of the
    keywords); the chat drivers take the same value and check it the same way.
    """
    return _driver.run(_DRIVING, "run_aiops", request, effects, state, options, keywords)


async def arun_aiops(
    request: AiOpsRequest,
    effects: AsyncAiOpsEffects,
    *,
    state: AiOpsState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
) -> AiOpsState:
    """Run an AIOps request to END on the asyncio event loop; returns the finished state.

    Raises ``TypeError`` before the run starts when ``effects`` are not
    :class:`AsyncAiOpsEffects` of ``async`` callables (spec §15). The
    options are :func:`run_aiops`'s.
    """
    return await _driver.arun(_DRIVING, "arun_aiops", request, effects, state, options, keywords)


def iter_aiops(
    request: AiOpsRequest,
    effects: AiOpsEffects,
    *,
    state: AiOpsState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
) -> Iterator[AiOpsTraceEvent | AiOpsResult]:
    """:func:`run_aiops` as an iterator: every trace event as it is appended, then the result.

    The same loop and options as :func:`run_aiops` (spec §14): the events are
    exactly the finished state's trace (for a resumed run, those appended in
    this process), the last item is its :class:`AiOpsResult`. Options are
    checked when this is called; agents run as it is iterated (with
    ``store``, the run is claimed when iteration starts and released when it
    ends or the iterator is closed).
    """
    return _driver.iterate(_DRIVING, "iter_aiops", request, effects, state, options, keywords)


def aiter_aiops(
    request: AiOpsRequest,
    effects: AsyncAiOpsEffects,
    *,
    state: AiOpsState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
) -> AsyncIterator[AiOpsTraceEvent | AiOpsResult]:
    """:func:`arun_aiops` as an async iterator: the trace events as appended, then the result.

    ``async for item in aiter_aiops(request, effects): ...``. Options are
    checked when this is called; agents run as it is iterated.
    """
    return _driver.aiterate(_DRIVING, "aiter_aiops", request, effects, state, options, keywords)
