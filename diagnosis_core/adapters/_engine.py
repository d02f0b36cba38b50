"""What every durable-engine adapter shares: the facts of a finished effect (spec §12, §13).

The Temporal and DBOS adapters, for both workflows, run an effect where the
engine records its result (an activity, a step) and fold the recorded facts
in deterministic code. The facts are the same on every engine — the input
hash of the call, the outcome in its §12 wire form, an executor's §13 tool
calls, whether the performing process has an observer — and so is the way
an effect is reported to an observer (spec §14). This module holds that,
from public ``diagnosis_core`` names only, so the adapters differ only in
what their engine does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from datetime import timedelta
from typing import Any

import attrs

from .. import (
    AsyncEffects,
    ConfigError,
    FailureKind,
    JournalError,
    RunConfig,
    TraceEvent,
    from_wire,
    to_wire,
)
from ..aiops import AiOpsTraceEvent, AsyncAiOpsEffects
from ..journal import (
    AiOpsJournal,
    AiOpsJournalRecorder,
    EntryState,
    Journal,
    JournalOutcome,
    JournalRecorder,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedReply,
    RecordedToolInvocation,
    load_outcome,
    outcome_of,
    outcome_to_wire,
    recorded_tool_invocations,
)
from ..machine import (
    AIOPS_WORKFLOW,
    DIAGNOSIS_WORKFLOW,
    AgentFailed,
    AgentReplied,
    EffectResult,
    notify,
    observed_result,
    perform_aiops_effect,
    perform_aiops_effect_async,
    perform_effect,
    perform_effect_async,
)
from ..tools import ToolRecorder


def wire_object(value: object) -> dict[str, Any]:
    """The wire form of an attrs value that encodes as a JSON object."""
    wire = to_wire(value)
    assert isinstance(wire, dict)
    return wire


@attrs.frozen
class Performing:
    """How one workflow performs an action: the table an engine's effect step reads.

    ``perform(action, effects)`` for sync effects, ``perform_async(action,
    effects)`` for effects of ``async_effects_type``. One table per workflow,
    so the chat and AIOps steps of an engine share the code that picks one.
    """

    async_effects_type: type[Any]
    perform: Callable[[Any, Any], Any]
    perform_async: Callable[[Any, Any], Coroutine[Any, Any, Any]]

    def awaitable(self, action: Any, effects: Any) -> Awaitable[Any]:
        """The effect as an awaitable: sync effects run in a thread, never on the event loop."""
        if isinstance(effects, self.async_effects_type):
            return self.perform_async(action, effects)
        return asyncio.to_thread(self.perform, action, effects)

    def blocking(self, action: Any, effects: Any) -> Any:
        """The effect's result, performed in this thread (asyncio effects in their own loop)."""
        if isinstance(effects, self.async_effects_type):
            return asyncio.run(self.perform_async(action, effects))
        return self.perform(action, effects)


_FACT_KEYS = frozenset({"input_sha256", "outcome"})
_OPTIONAL_FACT_KEYS = frozenset({"tool_invocations", "observed"})


@attrs.frozen(eq=False)
class Flow:
    """One workflow as every engine adapter reads it: a row of a table (chat, AIOps).

    ``machine`` is the workflow descriptor (``DIAGNOSIS_WORKFLOW`` /
    ``AIOPS_WORKFLOW``: the machine, its expected calls and the §12 resume
    rule), ``recorder`` makes a run's journal recorder from its request,
    ``performing`` performs an action with the host's effects and
    ``trace_event`` is the class an announced event decodes to. The Temporal
    and DBOS workflows of both flows are one loop each over these rows.
    """

    machine: Any
    recorder: Callable[[Any], Any]
    performing: Performing
    trace_event: type

    def ledger(self, call: object, entries: Iterable[Any]) -> list[dict[str, Any]] | None:
        """The §13 ledger of the journal ``entries`` when ``call`` gets one, else ``None``.

        The executor and the gatekeeper get it: whichever process performs
        them rebuilds the run's recorder from it (spec §13).
        """
        if call is self.machine.executor or call in self.machine.gatekeeper:
            return ledger_records(entries)
        return None

    def failed(self, call: object, message: str) -> JournalOutcome:
        """The outcome of ``call`` when nobody knows whether it happened (§12: fail closed)."""
        if call in self.machine.gatekeeper:
            return RecordedGatekeeperError(message)
        return RecordedAgentError(FailureKind.NON_RETRYABLE, message)

    def recorded(
        self, data: object, expected: Any
    ) -> tuple[JournalOutcome, tuple[RecordedToolInvocation, ...] | None, bool]:
        """Recorded facts read back from the engine, as strictly as a journal's entry.

        The outcome, the executor's tool calls and whether the performing
        process has an observer. The facts must name the input hash of the
        call the workflow started (a worker whose core builds another input,
        a version skew, is refused like a journal entry that does not match
        its call); :class:`JournalError` for anything a worker of this core
        never records.
        """
        if not isinstance(data, dict) or not (
            _FACT_KEYS <= data.keys() <= _FACT_KEYS | _OPTIONAL_FACT_KEYS
        ) or data.get("observed", True) is not True:
            raise JournalError(f"not the recorded facts of an effect: {data!r:.200}")
        if data["input_sha256"] != expected.input_sha256:
            raise JournalError(
                f"the recorded facts of {expected.describe()} are for an input hashing to "
                f"{data['input_sha256']!r:.80}, the run's input hashes to {expected.input_sha256}"
            )
        gatekeeper = expected.call in self.machine.gatekeeper
        outcome = load_outcome(data["outcome"], "outcome", gatekeeper=gatekeeper)
        if "tool_invocations" in data and expected.call is not self.machine.executor:
            raise JournalError("tool_invocations: only executor calls record tool calls")
        return outcome, decode_tool_invocations(data), "observed" in data

    def fold(
        self,
        recorder: Any,
        state: Any,
        outcome: JournalOutcome,
        invocations: tuple[RecordedToolInvocation, ...] | None,
    ) -> Any:
        """``state`` advanced by the finished entry of the recorder's started one (one step).

        The entry goes on the recorder's journal; the machine is fed the
        recorded fact (``entry_result``), never a raw value — the fold of the
        journal, one entry at a time, never the whole journal again.
        """
        journal = recorder.journal
        finished = attrs.evolve(
            journal.entries[-1],
            state=EntryState.FINISHED,
            outcome=outcome,
            tool_invocations=invocations,
        )
        recorder.journal = attrs.evolve(journal, entries=(*journal.entries[:-1], finished))
        return self.machine.advance(state, self.machine.entry_result(finished))


def new_events(before: Any, after: Any) -> list[dict[str, Any]]:
    """The trace events the state ``after`` appended to ``before``'s, in wire form.

    What a workflow hands to the step or activity that tells an observer
    (spec §14): the workflow code itself never calls one, since an engine
    runs it again on recovery.
    """
    return [wire_object(event) for event in after.events[len(before.events) :]]


def check_timedeltas(**named: object) -> list[float]:
    """The seconds of each positive :class:`timedelta`; :class:`ConfigError` naming a bad one."""
    seconds = []
    for name, value in named.items():
        if not isinstance(value, timedelta) or not value > timedelta(0):
            raise ConfigError(f"{name}: expected a positive timedelta, got {value!r:.80}")
        seconds.append(value.total_seconds())
    return seconds


def ledger_records(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """The §13 records the executor entries of a journal carry (either workflow's journal).

    A record without ``input`` gets ``"input": null``, as the recorder's
    :meth:`~diagnosis_core.tools.ToolRecorder.from_records` reads it.
    """
    records: list[dict[str, Any]] = []
    for entry in entries:
        for item in entry.tool_invocations or ():
            record = item.to_record()
            record.setdefault("input", None)
            records.append(record)
    return records


def decode_tool_invocations(data: Mapping[str, Any]) -> tuple[RecordedToolInvocation, ...] | None:
    """The §13 tool calls recorded facts carry, read as strictly as a journal's.

    ``None`` when the facts hold none; :class:`JournalError` for records a
    recorder would refuse.
    """
    records = data.get("tool_invocations")
    if records is None:
        return None
    try:
        return recorded_tool_invocations(ToolRecorder.from_records(records).records())
    except Exception as error:  # LedgerError: the strict §13 entry rules
        raise JournalError(f"tool_invocations: {error}") from None


def agent_result(outcome: JournalOutcome) -> AgentReplied | AgentFailed:
    """The agent result a recorded agent outcome stands for; a gatekeeper outcome fails closed."""
    if isinstance(outcome, RecordedReply):
        return AgentReplied(outcome.text)
    if isinstance(outcome, RecordedAgentError):
        return AgentFailed(outcome.kind, outcome.message)
    return AgentFailed(FailureKind.NON_RETRYABLE, "not an agent outcome")


class EffectReport:
    """One effect as an observer sees it, and the facts the engine records for it.

    :meth:`open` is called before the effect is performed and :meth:`close`
    after: the observer hears ``run_opened`` (when ``run`` is given),
    ``effect_started``, the executor's ``tools_recorded`` and
    ``effect_finished`` — always from the process that performs the effect,
    never from deterministic workflow code, which an engine runs again.
    """

    __slots__ = ("_action", "_digest", "_mark", "_observer", "_recorder", "invocations", "outcome")

    def __init__(
        self,
        action: object,
        digest: str,
        observer: object,
        recorder: ToolRecorder | None,
    ) -> None:
        self._action, self._digest, self._observer = action, digest, observer
        self._recorder = recorder
        self._mark = recorder.mark() if recorder is not None else None
        self.outcome: JournalOutcome | None = None
        """The recorded outcome, once :meth:`close` has built the facts."""
        self.invocations: tuple[RecordedToolInvocation, ...] | None = None
        """The executor's recorded tool calls, once :meth:`close` has built the facts."""

    def open(self, run: RunConfig | None) -> None:
        """Tell the observer the effect starts (and of its run first, when ``run`` is given)."""
        if run is not None:
            notify(self._observer, "run_opened", run)
        notify(self._observer, "effect_started", self._action)

    def close(self, result: EffectResult, *, observed: bool | None) -> dict[str, Any]:
        """The finished entry's facts for ``result``; the observer is told of the tool calls.

        ``observed`` is recorded as the ``observed`` key (``None``: no key).
        The decoded facts stay on :attr:`outcome` and :attr:`invocations`, so
        an engine whose step runs in the workflow's own process folds them
        without decoding its own output again.
        """
        records = None
        if self._recorder is not None and self._mark is not None:
            self.invocations = recorded_tool_invocations(self._recorder.since(self._mark))
            notify(self._observer, "tools_recorded", self._action, self.invocations)
            records = [item.to_record() for item in self.invocations]
        if self._observer is not None:
            # A private copy, as the drivers show it: a hook that edits a gatekeeper
            # result changes neither the recorded outcome nor the run (spec §12.5).
            notify(self._observer, "effect_finished", self._action, observed_result(result))
        self.outcome = outcome_of(result)
        facts: dict[str, Any] = {
            "input_sha256": self._digest,
            "outcome": outcome_to_wire(self.outcome),
        }
        if records is not None:
            facts["tool_invocations"] = records
        if observed is not None:
            facts["observed"] = observed
        return facts


def announce(
    observer: object, run: dict[str, Any], events: list[dict[str, Any]], kind: type
) -> int:
    """Tell ``observer`` of a run's trace events (wire form, decoded as ``kind``); how many.

    Called where the engine records the call (a local activity, a step), never
    from deterministic workflow code: a replay announces nothing twice.
    """
    if observer is None:
        return len(events)
    notify(observer, "run_opened", from_wire(RunConfig, run))
    for event in events:
        notify(observer, "event_appended", from_wire(kind, event))
    return len(events)


CHAT = Flow(
    DIAGNOSIS_WORKFLOW,
    lambda request: JournalRecorder(Journal(request)),
    Performing(AsyncEffects, perform_effect, perform_effect_async),
    TraceEvent,
)
"""The chat diagnosis workflow's row."""
AIOPS = Flow(
    AIOPS_WORKFLOW,
    lambda request: AiOpsJournalRecorder(AiOpsJournal(request)),
    Performing(AsyncAiOpsEffects, perform_aiops_effect, perform_aiops_effect_async),
    AiOpsTraceEvent,
)
"""The AIOps workflow's row."""
