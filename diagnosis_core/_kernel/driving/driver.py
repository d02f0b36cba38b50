"""The one driver of every workflow: run options, journaling, resume, store (spec §12, §14, §16).

A workflow's drivers (``run_diagnosis`` / ``arun_diagnosis`` /
``iter_diagnosis`` / ``aiter_diagnosis``, ``run_aiops`` and its three
twins) are thin typed wrappers over :func:`run`, :func:`arun`,
:func:`iterate` and :func:`aiterate` here (which merge ``options=`` and the
loose keywords, :func:`merge_options`), handed the workflow's
:class:`Driving` (``driving/effects.py``), whose methods and attributes
say which :class:`Workflow` it drives (``_kernel/journal/workflow.py``),
its journal and recorder classes, its effects classes and how one effect
is performed. So both workflows take the same :class:`RunOptions`, validate
them the same way (:meth:`RunOptions.check`, one :class:`RunOptionsError`
for every misuse) and have the same four forms, ``observer=`` and
``store=``.

Options (spec §12, §14, §16):

* ``sink`` — the run writes its journal as it goes: each ``started`` entry is
  handed to the sink *before* its effect runs, then the ``finished`` entry
  (same ``seq``), and the machine is fed the recorded fact;
* ``journal`` — resume: the journal is folded and verified, the resume rule
  of the workflow's descriptor applied, and the run continues from there; an
  interrupted entry that the rule completes is handed to the sink first;
* ``key`` — sign new entries and verify the resumed journal (HMAC-SHA256);
  a v2 journal ends with its end marker, written when the run ends (§12.2);
* ``head`` — resume only a journal at least as long as the head the host
  kept outside the store, and not diverging from it (§12.2);
* ``tools`` — the executor's entry carries the tool calls recorded during
  that call, each written to the sink as it finishes (§12.3);
* ``resend_executor`` / ``resend_gatekeeper`` — the host's choices in the
  resume rule (:meth:`Workflow.resent_on_resume`);
* ``observer`` — told of every effect and every trace event appended in this
  process; a hook that raises is reported and never changes the run (§14);
* ``store`` — the run is recorded in a :class:`JournalStore` and resumed
  from it when the store already holds it (§16).

The blocking forms return the finished state; the iterator forms yield each
trace event as it is appended, then the run's result. Options are checked
when a driver is called (an iterator's too); effects run as it is iterated.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import operator
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import JournalError, PayloadError
from ..machine.provenance import mark_built, require_built_here
from ..records import share_repr
from ..wire.facts import pair_location
from ..wire.json import has_surrogate
from .effects import AEff, Driving, Eff, S, check_effects_kind
from .loop import Done, Steps, adrive_steps, drive_steps
from .observe import Watcher, notify
from .options import RunOptions, merge_options

if TYPE_CHECKING:
    from ..journal.fold import JournalRecorderBase
    from ..journal.tool_calls import ExecutorTools
    from ..tools.recorder import ToolRecorder

__all__ = [
    "Driving",
    "aiterate",
    "arun",
    "check_request",
    "check_wiring",
    "iterate",
    "run",
]

# --- journaling and the run ----------------------------------------------------------


@attrs.define(eq=False, repr=False)
class _Journaling:
    """The step recorder of a journaling run: the journal recorder plus the executor's tools."""

    _driving: Driving[Any, Any, Any]
    recorder: JournalRecorderBase[Any, Any, Any, Any]
    _tools: ToolRecorder | None
    _observer: object
    _gatekeeper: object
    _executor: ExecutorTools | None = attrs.field(default=None, init=False)

    def begin(self, action: object, /) -> None:
        from ..journal.tool_calls import ExecutorTools

        derived = self._driving.derived(
            action, self._gatekeeper, self._tools, self.recorder.journal
        )
        entry = self.recorder.begin(action, derived=derived)  # before the effect runs
        if self._tools is not None and entry.call is self._driving.workflow.executor:
            self._executor = ExecutorTools(self.recorder, self._tools, entry.tool_invocations)

    def end(self, action: object, result: object, /) -> object:
        invocations = None
        if self._executor is not None:
            invocations = self._executor.finish()
            self._executor = None
        recorded = self.recorder.end(result, tool_invocations=invocations)
        if invocations is not None:
            # The optional hook: the executor call's recorded tools (spec §13, §14),
            # once its finished entry is written (no hook between an effect and its entry).
            notify(self._observer, "tools_recorded", action, invocations)
        return recorded

    def close(self) -> None:
        """The run ended: the end marker goes to the sink (v2, spec §12.2)."""
        self.recorder.close()


@attrs.define(eq=False, repr=False)
class _Run:
    """A run ready to go: where it starts, its journaling, what this process must announce."""

    driving: Driving[Any, Any, Any]
    state: Any
    journaling: _Journaling | None
    options: RunOptions
    announced: int = attrs.field(kw_only=True)
    resumed_entry: object = attrs.field(default=None, kw_only=True)
    watcher: Watcher = attrs.field(init=False)
    """Calls the run's observer; counts hook failures across the whole run."""

    @watcher.default
    def _watcher(self) -> Watcher:
        return Watcher(self.options.observer)

    def opening(self) -> Iterator[object]:
        """Before the first effect: persist a completed interrupted entry, announce its events."""
        # The optional hook, before any other: a resumed run whose first hook would
        # be event_appended still names its run (spec §14).
        self.watcher.notify("run_opened", self.state.request.run)
        sink = self.options.sink
        if self.resumed_entry is not None and sink is not None:
            sink.write(self.resumed_entry)
        for event in self.state.events[self.announced :]:
            self.watcher.notify("event_appended", event)
            yield event

    def returned(self, done: object) -> Any:
        """The finished state a blocking driver returns, with its observer failure count."""
        assert isinstance(done, Done)  # the step loop always ends with it
        if done.observer_failures:
            counted = self.driving.with_failures(done.state, done.observer_failures)
            if counted is not done.state:
                return mark_built(counted)
        return done.state

    def loop(
        self, drive: Callable[..., Any], perform: Callable[..., Any], effects: object, events: bool
    ) -> Any:
        """The step loop ``drive`` over this run, ``perform`` bound to ``effects``.

        The trace is read when the caller yields events or an observer is told of them.
        """
        workflow = self.driving.workflow
        watched = events or self.options.observer is not None
        steps = Steps(
            self.state,
            workflow.next_action,
            workflow.finished_type,
            workflow.advance,
            self.journaling,
            self.watcher,
            operator.attrgetter("events") if watched else None,
        )
        return drive(steps, functools.partial(perform, effects=effects))


@attrs.frozen(eq=False, repr=False)
class _Call:
    """One driver call: the workflow, the driver's name, the request, the effects and options.

    Every step of a run below works on one call; the four forms differ only
    in ``asynchronous`` (which effects they take) and in awaiting the loop.
    """

    driving: Driving[Any, Any, Any]
    driver: str
    request: object
    effects: object
    asynchronous: bool
    options: RunOptions

    def prepared(self, state: object) -> _Run | None:
        """The run, started now; None when it goes through a store (started by :meth:`claimed`).

        Everything refused before the run is written or any effect runs is
        refused now (spec §12.1, §15), so an iterator's misuse is an error of
        the call, not of the first ``next``: the options, the effects (kind,
        callability, arity), the request (storable, its question within the
        limit), a gatekeeper built over another tool recorder than ``tools=``,
        a store that is not one.
        """
        driving, driver, asynchronous = self.driving, self.driver, self.asynchronous
        options = self.options
        options.check(driver, state=state)
        check_effects_kind(
            self.effects,
            driving.async_effects_type if asynchronous else driving.effects_type,
            driving.effect_names,
            asynchronous=asynchronous,
            driver=driver,
            other_driver=driver[1:] if asynchronous else f"a{driver}",
        )
        check_request(driving, self.request, options.max_question_chars, driver)
        driving.check_tools(self.effects, options.tools, driver)
        if options.store is None:
            return _prepare(self, state, options)
        from ..journal.store import require_store

        require_store(options.store)
        return None

    @contextlib.contextmanager
    def claimed(self, prepared: _Run | None) -> Iterator[_Run]:
        """The run as it starts (a blocking driver's: now; an iterator's: when iterated).

        ``prepared``, or, with ``store=``, the run claimed in its store: the
        options with the store's ``journal`` and ``sink``, checked in turn; it
        stays claimed until the driver leaves the block.
        """
        if prepared is not None:
            yield prepared
            return
        from ..journal.store import MissingKeyError, on_store

        options, store, journal_type = self.options, self.options.store, self.driving.journal_type
        assert store is not None
        claim = on_store(store, self.request, journal_type=journal_type, clock=time.monotonic)
        with claim as (journal, sink):
            if journal is not None and options.key is None and journal.signed:
                # Resumed keyless, a signed run would go on unsigned and fail its own
                # verification from then on: refused before any effect (spec §16).
                raise MissingKeyError(journal.request.run.run_id)
            if journal is None and options.head is not None:
                # A head commits entries the host saw written; a store without the
                # run lost them: refuse, in every form, before anything runs (§12.2).
                raise JournalError(
                    f"head: the store holds no journal of this run; the head commits "
                    f"{options.head.entries} entries"
                )
            stored = attrs.evolve(options, store=None, journal=journal, sink=sink)
            stored.check(self.driver)
            yield _prepare(self, None, stored)


# --- the checks at the door (the drivers and the engine adapters share them) ------------


def check_request(driving: Driving[Any, Any, Any], request: object, limit: int, where: str) -> None:
    """Refuse a request no journal or store could keep, or a question over ``limit``.

    A string holding a surrogate code point (a lone one: pairs are refused
    when the request is built) is not UTF-8: a store cannot write it and a
    journal would not load back, so the run is refused before it is
    written or any effect runs (spec §12.1), naming the field. A request of
    another type is left to the step that reads it. ``where`` names the
    caller (a driver, an adapter's entry point) in the message.
    """
    workflow = driving.workflow
    if not isinstance(request, workflow.request_type):
        return  # refused, as before, by the step that reads it
    question = driving.question(request)
    if question is not None and (size := len(question)) > limit:
        raise PayloadError(
            "request.question",
            f"{size} characters, over the limit of {limit} ({where}: max_question_chars=)",
        )
    wire = workflow.request_to_wire(request)
    # One pass in C finds whether there is a surrogate; the walk names where.
    unstorable = has_surrogate(json.dumps(wire, ensure_ascii=False))
    location = pair_location(wire, has_surrogate) if unstorable else None
    if location is not None:
        raise PayloadError(
            f"request{location[1:]}",
            f"holds a lone surrogate code point, which no journal or store can keep "
            f"({where}; spec §12.1)",
        )


def check_wiring(
    driving: Driving[Any, Any, Any], effects: object, tools: object, where: str
) -> None:
    """The checks of a driver's effects for a caller that takes either kind (an engine adapter).

    ``effects`` must be the workflow's sync or async effects (``TypeError``
    naming both otherwise); each effect is then checked as a driver checks
    it (callable, its arity, its kind) and the gatekeeper against ``tools``.
    """
    sync_type, async_type = driving.effects_type, driving.async_effects_type
    asynchronous = isinstance(effects, async_type)
    if not asynchronous and not isinstance(effects, sync_type):
        raise TypeError(
            f"{where}: effects: expected {sync_type.__name__} or {async_type.__name__}, "
            f"got {type(effects).__name__}"
        )
    expected, other = (async_type, sync_type) if asynchronous else (sync_type, async_type)
    check_effects_kind(
        effects,
        expected,
        driving.effect_names,
        asynchronous=asynchronous,
        driver=where,
        other_driver=other.__name__,
    )
    driving.check_tools(effects, tools, where)


def other_request_error(recorded: Any, given: Any) -> JournalError:
    """The journal of ``recorded`` was passed with the request ``given`` (both attrs requests).

    Names the fields that differ and, since the run id is what a host keys its
    journals by, both run ids.
    """
    differing = [
        field.name
        for field in attrs.fields(type(recorded))
        if getattr(recorded, field.name) != getattr(given, field.name)
    ]
    fields = ", ".join(differing) or "request"
    return JournalError(
        f"request: the journal is of another request (different {fields}; the journal's "
        f"run_id is {recorded.run.run_id!r}, this request's {given.run.run_id!r}) — resume "
        "with the journal's own request (journal.request), or start this request without "
        "journal="
    )


def _prepare(call: _Call, state: object, options: RunOptions) -> _Run:
    """Resume the journal (options already checked); nothing is written yet."""
    driving, request = call.driving, call.request
    gatekeeper = getattr(call.effects, "gatekeeper", None)
    workflow = driving.workflow
    if not options.journaling:
        if state is not None:
            require_built_here(state, call.driver)
        current: Any = workflow.start(request) if state is None else state
        return _Run(driving, current, None, options, announced=len(current.events))
    from ..journal.codec import is_v1

    journal, key = options.journal, options.key
    if journal is None:
        recorder = driving.recorder_type(driving.journal_type(request), sink=options.sink, key=key)
        journaling = _Journaling(driving, recorder, options.tools, options.observer, gatekeeper)
        return _Run(driving, workflow.start(request), journaling, options, announced=0)
    if getattr(type(journal), "_form", None) is not workflow:
        raise JournalError(
            f"journal: expected a {workflow.journal_name}, got {type(journal).__name__}"
        )
    if journal.request != request:
        raise other_request_error(journal.request, request)
    before, _, interrupted, _ = workflow.fold(journal, key, options.head)
    if (
        options.resend_executor
        and is_v1(journal)
        and interrupted is not None
        and (interrupted.call is workflow.executor)
    ):
        raise JournalError(
            f"resend_executor: a {journal.format} journal does not record tool calls as they "
            "finish; its interrupted executor call cannot be re-sent"
        )
    resumed, current = workflow.resume_folded(
        journal,
        before,
        interrupted,
        key=key,
        resend_gatekeeper=options.resend_gatekeeper,
        resend_executor=options.resend_executor,
    )
    completed = resumed.entries[-1] if resumed is not journal else None
    recorder = driving.recorder_type(resumed, sink=options.sink, key=key)
    journaling = _Journaling(driving, recorder, options.tools, options.observer, gatekeeper)
    return _Run(
        driving,
        current,
        journaling,
        options,
        announced=len(before.events),
        resumed_entry=completed,
    )


def _steps(run: _Run, effects: object, *, events: bool) -> Iterator[object]:
    yield from run.opening()
    yield from run.loop(drive_steps, run.driving.perform, effects, events)


async def _asteps(run: _Run, effects: object, *, events: bool) -> AsyncIterator[object]:
    for event in run.opening():
        yield event
    async for item in run.loop(adrive_steps, run.driving.aperform, effects, events):
        yield item


# --- the four forms ------------------------------------------------------------------


def run(
    driving: Driving[S, Eff, Any],
    driver: str,
    request: object,
    effects: Eff,
    state: S | None,
    options: RunOptions | None,
    keywords: Mapping[str, Any],
) -> S:
    """Run to the end synchronously; returns the finished state."""
    chosen = merge_options(driver, options, **keywords)
    call = _Call(driving, driver, request, effects, False, chosen)
    with call.claimed(call.prepared(state)) as current:
        # Consumed to the end (the last item kept), so the generator finishes cleanly.
        last = collections.deque(_steps(current, effects, events=False), maxlen=1)
        return current.returned(last.pop())  # type: ignore[no-any-return]


async def arun(
    driving: Driving[S, Any, AEff],
    driver: str,
    request: object,
    effects: AEff,
    state: S | None,
    options: RunOptions | None,
    keywords: Mapping[str, Any],
) -> S:
    """Run to the end on the asyncio event loop; returns the finished state."""
    chosen = merge_options(driver, options, **keywords)
    call = _Call(driving, driver, request, effects, True, chosen)
    with call.claimed(call.prepared(state)) as current:
        last: object = None
        async for item in _asteps(current, effects, events=False):
            last = item  # consumed to the end, so the generator finishes cleanly
        return current.returned(last)  # type: ignore[no-any-return]


def iterate(
    driving: Driving[Any, Eff, Any],
    driver: str,
    request: object,
    effects: Eff,
    state: object,
    options: RunOptions | None,
    keywords: Mapping[str, Any],
) -> Iterator[Any]:
    """Every trace event as it is appended, then the run's result (options checked now).

    With ``store=``, the run is claimed when iteration starts and released
    when it ends or the iterator is closed.
    """
    chosen = merge_options(driver, options, **keywords)
    call = _Call(driving, driver, request, effects, False, chosen)
    return _iterate(call, call.prepared(state))


def _iterate(call: _Call, prepared: _Run | None) -> Iterator[object]:
    with call.claimed(prepared) as current:
        for item in _steps(current, call.effects, events=True):
            yield item.state.result if isinstance(item, Done) else item


def aiterate(
    driving: Driving[Any, Any, AEff],
    driver: str,
    request: object,
    effects: AEff,
    state: object,
    options: RunOptions | None,
    keywords: Mapping[str, Any],
) -> AsyncIterator[Any]:
    """The async iterator form: trace events as appended, then the result (options checked now)."""
    chosen = merge_options(driver, options, **keywords)
    call = _Call(driving, driver, request, effects, True, chosen)
    return _aiterate(call, call.prepared(state))


async def _aiterate(call: _Call, prepared: _Run | None) -> AsyncIterator[object]:
    with call.claimed(prepared) as current:
        async for item in _asteps(current, call.effects, events=True):
            yield item.state.result if isinstance(item, Done) else item


share_repr(_Journaling, _Run, _Call)
