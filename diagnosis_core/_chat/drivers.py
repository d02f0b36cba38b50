"""The built-in drivers: a synchronous loop and an asyncio loop, blocking or iterated.

A driver only performs the effect the machine asks for and feeds the result
back; it decides nothing. Exceptions of an effect become results here (agents:
classified by the run's :class:`FailureClassifier`; the gatekeeper: always
``GatekeeperFailed``). ``BaseException``s that are not ``Exception`` (task
cancellation, ``KeyboardInterrupt``) propagate untouched.

All four drivers (:func:`run_diagnosis`, :func:`arun_diagnosis`,
:func:`iter_diagnosis`, :func:`aiter_diagnosis`) are thin typed wrappers over
the kernel's one driver (``_kernel/driving/driver.py``, which says what each
option does) for :data:`DIAGNOSIS_WORKFLOW`, with the AIOps drivers' options:
a :class:`RunOptions` value as ``options=`` (or the same-named keywords; not
both), checked the same way, with the same errors. The descriptor and the
journal classes are loaded at the first run, so ``import diagnosis_core`` stays cheap.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias, Unpack

import attrs

from .._kernel.driving.effects import Driving, reject_awaitable, require_awaitable
from .._kernel.driving.loop import ainvoke_agent, describe_error, invoke_agent
from .._kernel.driving.options import (
    DEFAULT_MAX_QUESTION_CHARS,
    RunKeywords,
    RunOptions,
    question_limit,
)
from .._kernel.wire.facts import repair_text
from .effects import AsyncEffects, Effects
from .facts import gatekeeper_fact
from .machine import (
    PLAIN_FACT,
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisResult,
    DiagnosisState,
    EffectResult,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
)
from .observe import DiagnosisObserver
from .trace import TraceEvent

if TYPE_CHECKING:
    from .journal import Journal, JournalRecorder, JournalSink
    from .reference_gatekeeper import ToolRecorder
    from .workflow import DiagnosisWorkflow

__all__ = [
    "RunOptions",
    "aiter_diagnosis",
    "arun_diagnosis",
    "check_diagnosis_effects",
    "check_diagnosis_request",
    "describe_error",
    "iter_diagnosis",
    "perform_effect",
    "perform_effect_async",
    "run_diagnosis",
]


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
        return invoke_agent(effects, action, "Effects")
    try:
        raw = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(repair_text(describe_error(error)))
    reject_awaitable(raw, "Effects.gatekeeper", "the sync driver")
    return GatekeeperReturned(gatekeeper_fact(raw), origin=PLAIN_FACT)


async def perform_effect_async(
    action: InvokeAgent | CallGatekeeper, effects: AsyncEffects
) -> EffectResult:
    """Perform one effect on the event loop and package its outcome as a result.

    An effect that returns something not awaitable is a sync effect given to
    the asyncio driver: ``TypeError``, never a result (spec §15).
    """
    if isinstance(action, InvokeAgent):
        return await ainvoke_agent(effects, action, "AsyncEffects")
    try:
        called = effects.gatekeeper(action.run_id, action.executor_output)
    except Exception as error:
        return GatekeeperFailed(repair_text(describe_error(error)))
    result = require_awaitable(called, "AsyncEffects.gatekeeper", "the asyncio driver")
    try:
        raw = await result
    except Exception as error:
        return GatekeeperFailed(repair_text(describe_error(error)))
    return GatekeeperReturned(gatekeeper_fact(raw), origin=PLAIN_FACT)


# --- the workflow's parts of the one driver -------------------------------------------


class _DiagnosisDriving(Driving[DiagnosisState, Effects, AsyncEffects]):
    """The chat workflow's parts of the one driver; its journal side is loaded at the first run."""

    __slots__ = ()

    effects_type = Effects
    async_effects_type = AsyncEffects
    effect_names = ("planner", "executor", "verifier", "composer", "gatekeeper")
    perform = staticmethod(perform_effect)  # the effect functions themselves, not wrapped
    aperform = staticmethod(perform_effect_async)

    @property
    def workflow(self) -> DiagnosisWorkflow:
        from .workflow import DIAGNOSIS_WORKFLOW

        return DIAGNOSIS_WORKFLOW

    @property
    def journal_type(self) -> type[Journal]:
        from .journal import Journal

        return Journal

    @property
    def recorder_type(self) -> type[JournalRecorder]:
        from .journal import JournalRecorder

        return JournalRecorder

    def with_failures(self, state: DiagnosisState, failures: int) -> DiagnosisState:
        """The finished state with its ``observer_failures`` count."""
        return attrs.evolve(state, observer_failures=failures)

    def derived(
        self, action: object, gatekeeper: object, tools: ToolRecorder | None, journal: Any
    ) -> bool:
        """Is the gatekeeper ``tools.gatekeeper()`` over exactly the journal's tools? (§12.4)"""
        from .._kernel.journal.tool_calls import journal_ledger_equals
        from .reference_gatekeeper import RecorderGatekeeper

        if not isinstance(action, CallGatekeeper) or tools is None:
            return False
        if not isinstance(gatekeeper, RecorderGatekeeper) or gatekeeper.recorder is not tools:
            return False
        return journal_ledger_equals(journal.entries, tools)

    def question(self, request: DiagnosisRequest) -> str:
        """The request's question (``max_question_chars`` bounds it)."""
        return request.question

    def check_tools(self, effects: Effects | AsyncEffects, tools: object, driver: str) -> None:
        """Refuse a gatekeeper built over another tool recorder than ``tools`` (if given)."""
        from .run_recorders import refuse_foreign_gatekeeper

        if tools is not None:
            refuse_foreign_gatekeeper(effects.gatekeeper, tools, driver)


_DRIVING = _DiagnosisDriving()


def check_diagnosis_effects(
    effects: Effects | AsyncEffects, *, where: str, tools: object = None
) -> None:
    """The drivers' checks of ``effects``, for an engine adapter that takes either kind.

    What :func:`run_diagnosis` and :func:`arun_diagnosis` refuse before
    anything runs: effects that are neither :class:`Effects` nor
    :class:`AsyncEffects`; a missing, ``None``, non-callable or wrong-arity
    effect, or one of the other kind (``TypeError`` naming the field and the
    expected signature); a gatekeeper built over another tool recorder than
    ``tools`` (a :class:`~diagnosis_core.tools.ToolRecorder` or
    :data:`~diagnosis_core.tools.ToolsFactory`; ``TypeError`` naming both).
    ``where`` names the caller in the messages. One check, shared with the
    drivers: an adapter calls it where the effects come in, before any
    effect runs or any engine state is written.
    """
    from .._kernel.driving.driver import check_wiring

    check_wiring(_DRIVING, effects, tools, where)


def check_diagnosis_request(
    request: DiagnosisRequest, *, where: str, max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS
) -> None:
    """The drivers' checks of ``request``, for an engine adapter's entry point.

    What every driver refuses before anything runs or is written
    (:class:`PayloadError` naming the field): a question longer than
    ``max_question_chars`` (default 100 000 characters, as
    ``RunOptions.max_question_chars``), and a lone surrogate code point
    anywhere in the request (question, run id, session id, metadata,
    history, skills), which no journal or store can keep (spec §12.1). A
    limit that is not a positive int is a :class:`RunOptionsError`; a request
    of another type is left to the caller's own check.
    """
    from .._kernel.driving.driver import check_request

    question_limit(max_question_chars)  # checked first, as RunOptions checks it
    check_request(_DRIVING, request, max_question_chars, where)


_Keywords: TypeAlias = RunKeywords["Journal", "JournalSink", DiagnosisObserver, "ToolRecorder"]
"""The run options as loose keywords (each one a :class:`RunOptions` field)."""


# --- the drivers -----------------------------------------------------------------------


def run_diagnosis(
    request: DiagnosisRequest,
    effects: Effects,
    *,
    state: DiagnosisState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
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
    ``options`` gives all of these as one :class:`RunOptions` value instead
    (not together with any of the keywords).

    Raises ``TypeError`` before the run starts when ``effects`` are not sync
    :class:`Effects` of sync callables (spec §15); :class:`RunOptionsError`
    when options do not go together; :class:`JournalError` when the journal
    does not verify or belongs to another request.
    """
    from .._kernel.driving import driver  # the loop loads at the first run

    return driver.run(_DRIVING, "run_diagnosis", request, effects, state, options, keywords)


async def arun_diagnosis(
    request: DiagnosisRequest,
    effects: AsyncEffects,
    *,
    state: DiagnosisState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
) -> DiagnosisState:
    """Run to END on the asyncio event loop; returns the finished state.

    The options are :func:`run_diagnosis`'s. Raises ``TypeError`` before the
    run starts when ``effects`` are not :class:`AsyncEffects` of ``async``
    callables (spec §15).
    """
    from .._kernel.driving import driver  # the loop loads at the first run

    return await driver.arun(_DRIVING, "arun_diagnosis", request, effects, state, options, keywords)


def iter_diagnosis(
    request: DiagnosisRequest,
    effects: Effects,
    *,
    state: DiagnosisState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
) -> Iterator[TraceEvent | DiagnosisResult]:
    """:func:`run_diagnosis` as an iterator: every trace event as it is appended, then the result.

    The same loop as :func:`run_diagnosis` with the same options, so a
    streaming host and a blocking one run the same pipeline (spec §14): the
    events are exactly the finished state's trace (for a resumed run, those
    appended in this process), the last item is its :class:`DiagnosisResult`.
    Options are checked when this is called; effects run as it is iterated
    (with ``store``, the run is claimed when iteration starts and released
    when it ends or the iterator is closed).
    """
    from .._kernel.driving import driver  # the loop loads at the first run

    return driver.iterate(_DRIVING, "iter_diagnosis", request, effects, state, options, keywords)


def aiter_diagnosis(
    request: DiagnosisRequest,
    effects: AsyncEffects,
    *,
    state: DiagnosisState | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[_Keywords],
) -> AsyncIterator[TraceEvent | DiagnosisResult]:
    """:func:`arun_diagnosis` as an async iterator: the trace events as appended, then the result.

    ``async for item in aiter_diagnosis(request, effects): ...``. Options are
    checked when this is called; effects run as it is iterated.
    """
    from .._kernel.driving import driver  # the loop loads at the first run

    return driver.aiterate(_DRIVING, "aiter_diagnosis", request, effects, state, options, keywords)
