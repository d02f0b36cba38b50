"""The run journal: fold and verify, the resume rule, and the entry builder (spec §12).

The state of a run is always the pure fold of its journal: :func:`fold_journal`
starts the machine from the request and, for each entry, checks that the
entry is exactly the call the machine asks for at that point (call, round,
attempt, input hash, ``seq``), then feeds the recorded outcome to
:func:`advance` — through the same parsers, gatekeeper normalization and
projections as a live reply. A stored journal therefore cannot carry a
conclusion: a forged "PASS" is not a fact the journal can hold.

Drivers (and hosts) build entries with :func:`start_entry` before an effect
runs and :func:`finish_entry` when it returned, hand both to a
:class:`JournalSink`, and feed the machine :func:`entry_result` of the
finished entry — the recorded fact, never the raw object — so the live state
and the fold of the journal are equal by construction.

Decisions where the spec is silent:

* An agent that returns something other than text is recorded as a
  ``non_retryable`` error (``TypeError: …``): a journal holds text only.
* A gatekeeper result that is not JSON is recorded as the result
  ``{"unserializable": "<repr>"}``, which normalizes to
  ``GATEKEEPER_INVALID_RESULT`` like the live value.
* :func:`journal_to_scenario` converts a *complete* journal only, and by
  default only when the §9 scripted doubles reproduce every recorded error
  message exactly (see there).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from ._converter import to_wire
from ._enums import AgentName, FailureKind
from ._errors import JournalError
from ._journal_mac import request_mac, sign_entry, verify_entry_mac
from ._journal_wire import (
    EntryState,
    Journal,
    JournalCall,
    JournalEntry,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedReply,
    RecordedToolError,
    RecordedToolInvocation,
    request_to_wire,
)
from ._json import JsonValue, canonical_json
from ._machine import (
    AgentFailed,
    AgentReplied,
    CallGatekeeper,
    DiagnosisRequest,
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

if TYPE_CHECKING:
    from ._tools import ToolCallRecord

__all__ = [
    "INTERRUPTED_MESSAGE",
    "ExpectedCall",
    "JournalRecorder",
    "JournalSink",
    "JournalStatus",
    "ListJournalSink",
    "append_entry",
    "entry_result",
    "expected_call",
    "finish_entry",
    "fold_journal",
    "journal_status",
    "journal_to_scenario",
    "journal_tool_records",
    "outcome_of",
    "recorded_tool_invocations",
    "replay_journal",
    "resume_journal",
    "start_entry",
]

INTERRUPTED_MESSAGE = "interrupted: outcome unknown"
"""The recorded message of an executor (or gatekeeper) call whose process died."""


def _sha256(text: str) -> str:
    # The same encoding as the trace's input_sha256 (spec §8).
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class ExpectedCall:
    """The call the machine asks for: what a journal entry must say."""

    call: JournalCall
    round: int
    attempt: int
    input_sha256: str

    def describe(self) -> str:
        """``verifier round 1 attempt 2``."""
        return f"{self.call.value} round {self.round} attempt {self.attempt}"


def expected_call(action: InvokeAgent | CallGatekeeper) -> ExpectedCall:
    """The entry header an action must be recorded under (hash included)."""
    if isinstance(action, InvokeAgent):
        return ExpectedCall(
            JournalCall(action.agent.value), action.round, action.attempt, _sha256(action.input)
        )
    document = {"run_id": action.run_id, "executor_output": to_wire(action.executor_output)}
    return ExpectedCall(JournalCall.GATEKEEPER, action.round, 1, _sha256(canonical_json(document)))


# --- outcomes <-> machine results --------------------------------------------------


def outcome_of(result: EffectResult) -> JournalOutcome:
    """The fact to record for an effect result (see the module's decisions)."""
    if isinstance(result, AgentReplied):
        text: object = result.text
        if not isinstance(text, str):
            message = f"TypeError: the agent returned {type(text).__name__}, not message text"
            return RecordedAgentError(FailureKind.NON_RETRYABLE, message)
        return RecordedReply(text)
    if isinstance(result, AgentFailed):
        message = result.message if isinstance(result.message, str) else ""
        return RecordedAgentError(result.kind, message)
    if isinstance(result, GatekeeperReturned):
        try:
            return RecordedGatekeeperResult(canonical_json(result.raw))
        except Exception:  # any failure to serialize: record what can be recorded
            try:
                description = repr(result.raw)[:2000]
            except Exception:
                description = f"<unrepresentable {type(result.raw).__name__}>"
            return RecordedGatekeeperResult(canonical_json({"unserializable": description}))
    message = result.message if isinstance(result.message, str) else ""
    return RecordedGatekeeperError(message)


def entry_result(entry: JournalEntry) -> EffectResult:
    """The machine result a finished entry stands for: what :func:`advance` is fed."""
    outcome = entry.outcome
    if outcome is None:
        raise JournalError(f"entry {entry.seq} is started; it has no outcome yet")
    if isinstance(outcome, RecordedReply):
        return AgentReplied(outcome.text)
    if isinstance(outcome, RecordedAgentError):
        return AgentFailed(outcome.kind, outcome.message)
    if isinstance(outcome, RecordedGatekeeperResult):
        return GatekeeperReturned(outcome.result)
    return GatekeeperFailed(outcome.message)


# --- fold and verify ---------------------------------------------------------------


@attrs.frozen
class JournalStatus:
    """What folding a journal found: the state, and whether the run is done.

    ``interrupted`` is the last entry when it is ``started`` (its process
    died during that effect); ``state`` is then the state *before* it.
    ``action`` is what the machine asks for next from ``state``.
    """

    state: DiagnosisState
    action: InvokeAgent | CallGatekeeper | Finished
    interrupted: JournalEntry | None = None

    @property
    def complete(self) -> bool:
        """True when the journal records the whole run (it reached END)."""
        return self.state.finished

    @property
    def pending(self) -> ExpectedCall | None:
        """The call the run needs next (None once complete)."""
        if isinstance(self.action, Finished):
            return None
        return expected_call(self.action)

    def describe(self) -> str:
        """``complete``, or which call is missing or was interrupted."""
        pending = self.pending
        if pending is None:
            return "complete"
        if self.interrupted is not None:
            return f"incomplete: interrupted during {pending.describe()}"
        return f"incomplete: ends before {pending.describe()}"


def _mismatch(index: int, expected: ExpectedCall, entry: JournalEntry) -> JournalError:
    where = f"entries[{index}]"
    if entry.call is not expected.call:
        return JournalError(
            f"{where}: the run expects {expected.describe()}, the journal has {entry.call.value}"
        )
    if entry.round != expected.round or entry.attempt != expected.attempt:
        return JournalError(
            f"{where}: the run expects {expected.describe()}, the journal has "
            f"{entry.call.value} round {entry.round} attempt {entry.attempt}"
        )
    return JournalError(
        f"{where}.input_sha256: the input of {expected.describe()} hashes to "
        f"{expected.input_sha256}, the journal has {entry.input_sha256}"
    )


def journal_status(journal: Journal, *, key: bytes | None = None) -> JournalStatus:
    """Fold and verify ``journal`` (spec §12); the first problem is a :class:`JournalError`.

    With ``key``, every entry's ``mac`` is checked first (a missing or wrong
    one names the entry); without, ``mac`` fields are ignored. Then each
    entry must be the call the machine asks for, ``seq`` must count from 1,
    nothing may follow END, and only the last entry may be ``started``.
    """
    if not isinstance(journal, Journal):
        raise JournalError(f"expected a Journal, got {type(journal).__name__}")
    link = request_mac(journal.request, key) if key is not None else ""
    state = start_diagnosis(journal.request)
    entries = journal.entries
    last = len(entries) - 1
    for index, entry in enumerate(entries):
        if key is not None:
            link = verify_entry_mac(entry, link, key, index)
        if entry.seq != index + 1:
            raise JournalError(f"entries[{index}].seq: expected {index + 1}, got {entry.seq}")
        action = next_action(state)
        if isinstance(action, Finished):
            raise JournalError(
                f"entries[{index}]: the run has ended, the journal has {entry.call.value} "
                f"round {entry.round} attempt {entry.attempt}"
            )
        expected = expected_call(action)
        if (
            entry.call is not expected.call
            or entry.round != expected.round
            or entry.attempt != expected.attempt
            or entry.input_sha256 != expected.input_sha256
        ):
            raise _mismatch(index, expected, entry)
        if entry.state is EntryState.STARTED:
            if index != last:
                raise JournalError(
                    f"entries[{index}].state: only the last entry may be started"
                )
            return JournalStatus(state, action, entry)
        state = advance(state, entry_result(entry))
    return JournalStatus(state, next_action(state))


def fold_journal(journal: Journal, *, key: bytes | None = None) -> DiagnosisState:
    """The state ``journal`` folds to (see :func:`journal_status` for what is checked).

    A journal that ends before the run does, or whose last entry is
    ``started``, folds to the state before the missing effect; use
    :func:`journal_status` to learn which call that is.
    """
    return journal_status(journal, key=key).state


# --- resume ------------------------------------------------------------------------


def resume_journal(
    journal: Journal, *, key: bytes | None = None, resend_gatekeeper: bool = False
) -> tuple[Journal, DiagnosisState]:
    """Apply the resume rule of spec §12; returns the journal and the state to continue from.

    When the last entry is ``started`` (the process died during that effect):

    * planner, verifier, composer: nothing is completed; the state is the one
      before the call, whose next action is that same call with the identical
      input *as the same attempt* — :func:`start_entry` then reuses the
      entry's ``seq``;
    * executor: its tools may have run, so it is never re-sent: the entry is
      finished as a ``non_retryable`` failure with :data:`INTERRUPTED_MESSAGE`
      (→ ``EXECUTOR_FAILED``);
    * gatekeeper: finished as a gatekeeper error with the same message
      (→ ``GATEKEEPER_UNAVAILABLE``), unless ``resend_gatekeeper`` (it is
      read-only), which treats it like an LLM call.

    A completed entry is signed with ``key`` when one is given; the host
    persists the journal's last entry (it replaces the started one). A later
    :func:`fold_journal` of the returned journal gives the returned state.
    """
    status = journal_status(journal, key=key)
    entry = status.interrupted
    if entry is None or entry.call in (
        JournalCall.PLANNER,
        JournalCall.VERIFIER,
        JournalCall.COMPOSER,
    ):
        return journal, status.state
    if entry.call is JournalCall.GATEKEEPER and resend_gatekeeper:
        return journal, status.state
    outcome: JournalOutcome = (
        RecordedAgentError(FailureKind.NON_RETRYABLE, INTERRUPTED_MESSAGE)
        if entry.call is JournalCall.EXECUTOR
        else RecordedGatekeeperError(INTERRUPTED_MESSAGE)
    )
    finished = attrs.evolve(entry, state=EntryState.FINISHED, outcome=outcome, mac=None)
    if key is not None:
        finished = sign_entry(journal, finished, key)
    resumed = append_entry(journal, finished)
    return resumed, advance(status.state, entry_result(finished))


# --- the builder -------------------------------------------------------------------


def start_entry(
    journal: Journal, action: InvokeAgent | CallGatekeeper, *, key: bytes | None = None
) -> JournalEntry:
    """The ``started`` entry to persist before performing ``action``.

    Its ``seq`` is one past the last entry, or the last entry's own when that
    one is a ``started`` entry for the same call (a resumed LLM call re-sent
    as the same attempt). Signed when ``key`` is given.
    """
    expected = expected_call(action)
    seq = len(journal.entries) + 1
    if journal.entries and journal.entries[-1].state is EntryState.STARTED:
        last = journal.entries[-1]
        header = (last.call, last.round, last.attempt, last.input_sha256)
        if header != (expected.call, expected.round, expected.attempt, expected.input_sha256):
            raise JournalError(
                f"entries[{len(journal.entries) - 1}]: started for {last.call.value} round "
                f"{last.round} attempt {last.attempt}, not for {expected.describe()}"
            )
        seq = last.seq
    entry = JournalEntry(
        seq=seq,
        call=expected.call,
        round=expected.round,
        attempt=expected.attempt,
        input_sha256=expected.input_sha256,
        state=EntryState.STARTED,
    )
    return sign_entry(journal, entry, key) if key is not None else entry


def finish_entry(
    journal: Journal,
    result: EffectResult,
    *,
    tool_invocations: Sequence[RecordedToolInvocation] | None = None,
    key: bytes | None = None,
) -> JournalEntry:
    """The ``finished`` entry for the journal's last (``started``) entry and ``result``.

    ``tool_invocations`` (executor calls only) are the §13 ledger entries
    recorded during the call. Feed the machine :func:`entry_result` of the
    returned entry, not ``result`` itself.
    """
    if not journal.entries or journal.entries[-1].state is not EntryState.STARTED:
        raise JournalError("the journal's last entry is not started; nothing to finish")
    started = journal.entries[-1]
    entry = JournalEntry(
        seq=started.seq,
        call=started.call,
        round=started.round,
        attempt=started.attempt,
        input_sha256=started.input_sha256,
        state=EntryState.FINISHED,
        outcome=outcome_of(result),
        tool_invocations=tool_invocations,
    )
    return sign_entry(journal, entry, key) if key is not None else entry


def append_entry(journal: Journal, entry: JournalEntry) -> Journal:
    """``journal`` with ``entry``: appended, or replacing the last entry when it has the same seq.

    Only a ``started`` last entry can be replaced (by its finished entry or,
    on a resumed re-send, by itself).
    """
    entries = journal.entries
    if entries and entries[-1].seq == entry.seq:
        if entries[-1].state is not EntryState.STARTED:
            raise JournalError(f"entries[{len(entries) - 1}]: finished; it cannot be replaced")
        return Journal(journal.request, (*entries[:-1], entry))
    if entry.seq != len(entries) + 1:
        raise JournalError(f"seq: expected {len(entries) + 1}, got {entry.seq}")
    return Journal(journal.request, (*entries, entry))


class JournalSink(Protocol):
    """Where a host persists a journal as the run goes (a file, a table, a queue).

    ``write`` receives each ``started`` entry *before* its effect runs, then
    the ``finished`` entry with the same ``seq``, which replaces it. A sink
    that raises stops the run before the effect (the host decides what a
    failed write means); it never changes the machine's state.
    """

    def write(self, entry: JournalEntry, /) -> None: ...


class ListJournalSink:
    """An in-memory :class:`JournalSink`: :attr:`entries` holds the persisted entries.

    Give it the entries of a journal being resumed (``ListJournalSink(journal.entries)``)
    and :meth:`journal` is the whole journal as the resumed run goes on.
    """

    def __init__(self, entries: Iterable[JournalEntry] = ()) -> None:
        self.entries: list[JournalEntry] = list(entries)

    def journal(self, request: DiagnosisRequest) -> Journal:
        """The persisted entries as the journal of ``request``."""
        return Journal(request, tuple(self.entries))

    def write(self, entry: JournalEntry, /) -> None:
        if self.entries and self.entries[-1].seq == entry.seq:
            self.entries[-1] = entry
        else:
            self.entries.append(entry)


class JournalRecorder:
    """The journal side of a driver loop: start, perform, finish, in that order.

    ``begin(action)`` writes the started entry to the sink and keeps it;
    ``end(result)`` writes the finished entry and returns the result the
    machine must be fed. :attr:`journal` is the journal so far. Pure apart
    from the sink calls; the effect itself is the caller's.
    """

    def __init__(
        self, journal: Journal, *, sink: JournalSink | None = None, key: bytes | None = None
    ) -> None:
        self.journal = journal
        self._sink = sink
        self._key = key

    def begin(self, action: InvokeAgent | CallGatekeeper) -> JournalEntry:
        """Record that ``action`` is about to be performed."""
        entry = start_entry(self.journal, action, key=self._key)
        if self._sink is not None:
            self._sink.write(entry)
        self.journal = append_entry(self.journal, entry)
        return entry

    def end(
        self,
        result: EffectResult,
        *,
        tool_invocations: Sequence[RecordedToolInvocation] | None = None,
    ) -> EffectResult:
        """Record the effect's result; returns what to feed :func:`advance`."""
        entry = finish_entry(
            self.journal, result, tool_invocations=tool_invocations, key=self._key
        )
        if self._sink is not None:
            self._sink.write(entry)
        self.journal = append_entry(self.journal, entry)
        return entry_result(entry)


# --- tool invocations (spec §13) ------------------------------------------------------


def recorded_tool_invocations(
    records: Iterable[ToolCallRecord],
) -> tuple[RecordedToolInvocation, ...]:
    """The journal form of a tool recorder's records (what an executor entry carries).

    ``records`` are :class:`~diagnosis_core.tools.ToolCallRecord`\\ s, e.g.
    ``ToolRecorder.since(mark)``; each becomes the same §13 ledger entry.
    """
    converted = []
    for record in records:
        wire = record.to_record()
        error = wire.get("error")
        duration = wire.get("duration_ms")
        converted.append(
            RecordedToolInvocation(
                invocation_id=record.invocation_id,
                tool_name=record.tool_name,
                success=record.success,
                output_json=canonical_json(wire["output"]),
                input_json=None if wire.get("input") is None else canonical_json(wire["input"]),
                error=None if not isinstance(error, dict) else RecordedToolError(
                    str(error["type"]), str(error["message"])
                ),
                duration_ms=duration if isinstance(duration, int | float) else None,
            )
        )
    return tuple(converted)


def journal_tool_records(journal: Journal) -> list[dict[str, JsonValue]]:
    """Every tool invocation the journal's executor entries carry, as §13 ledger entries.

    ``ToolRecorder.from_records(journal_tool_records(journal))`` rebuilds the
    recorder of a run being resumed in another process, so its gatekeeper
    sees the ledger and numbering continues after the recorded ids. Every
    entry has ``input`` (null when none was recorded).
    """
    records: list[dict[str, JsonValue]] = []
    for entry in journal.entries:
        for item in entry.tool_invocations or ():
            record = item.to_record()
            record.setdefault("input", None)
            records.append(record)
    return records


# --- a journal is a replay ---------------------------------------------------------

# The exception class each §9 scripted double raises, per recorded kind; the
# trace shows ``describe_error`` of it: ``Class: message`` (``Class`` alone when empty).
_SCRIPTED_PREFIXES: dict[FailureKind, tuple[tuple[str, str], ...]] = {
    FailureKind.RETRYABLE: (("ScriptedError", "retryable"),),
    FailureKind.NON_RETRYABLE: (
        ("NonRetryableError", "non_retryable"),
        ("UnknownScriptedError", "unknown"),
    ),
    FailureKind.TOOL_BLOCKED: (("ToolBlockedError", "tool_blocked"),),
}
_KIND_NAMES = {
    FailureKind.RETRYABLE: "retryable",
    FailureKind.NON_RETRYABLE: "non_retryable",
    FailureKind.TOOL_BLOCKED: "tool_blocked",
}


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _scripted_message(message: str, class_name: str) -> str | None:
    """The scenario message whose scripted exception reproduces ``message``, or None."""
    if message == class_name:
        return ""
    prefix = class_name + ": "
    if message.startswith(prefix) and not _has_surrogate(message):
        return message[len(prefix) :]
    return None


def _agent_error_entry(outcome: RecordedAgentError, exact: bool, where: str) -> JsonValue:
    for class_name, kind in _SCRIPTED_PREFIXES[outcome.kind]:
        message = _scripted_message(outcome.message, class_name)
        if message is not None:
            return {"error": {"kind": kind, "message": message}}
    if exact:
        raise JournalError(
            f"{where}.outcome.error.message: a §9 scenario cannot reproduce this message "
            "exactly (pass exact=False for an approximate scenario)"
        )
    text = outcome.message.encode("utf-8", "replace").decode("utf-8")
    return {"error": {"kind": _KIND_NAMES[outcome.kind], "message": text}}


def _gatekeeper_error_entry(
    outcome: RecordedGatekeeperError, exact: bool, where: str
) -> JsonValue:
    message = _scripted_message(outcome.message, "NonRetryableError")
    if message == "":
        message = None  # the scripted gatekeeper never raises with an empty message
    if message is not None:
        return {"error": {"message": message}}
    if exact:
        raise JournalError(
            f"{where}.outcome.error.message: a §9 scenario cannot reproduce this message "
            "exactly (pass exact=False for an approximate scenario)"
        )
    return {"error": {"message": outcome.message.encode("utf-8", "replace").decode("utf-8")}}


def journal_to_scenario(
    journal: Journal, *, key: bytes | None = None, exact: bool = True
) -> dict[str, JsonValue]:
    """The §9 scenario equivalent to a complete journal, for bug reports and regression suites.

    Each agent's recorded outcomes in call order become its ``responses``,
    the gatekeeper's its ``gatekeeper`` entries, and the request gives
    ``question``, ``run``, ``history``, ``skills`` and ``config``; then
    ``replay(journal_to_scenario(j))`` equals :func:`replay_journal` of ``j``
    byte for byte as JSON.

    The §9 scripted doubles raise named exceptions, so a recorded error
    message is reproducible only when it reads ``Class: message`` for the
    class the double of that kind raises (``ScriptedError`` for retryable,
    ``NonRetryableError`` or ``UnknownScriptedError`` for non-retryable,
    ``ToolBlockedError``; the gatekeeper: ``NonRetryableError``) and has no
    lone surrogate — which holds for every journal recorded from a scenario.
    Any other message is a :class:`JournalError` naming the entry, unless
    ``exact=False``: then it is kept as it is (surrogates replaced), and the
    replayed trace shows it behind the double's class name.

    Raises :class:`JournalError` when the journal does not verify or is not
    complete.
    """
    status = journal_status(journal, key=key)
    if not status.complete:
        raise JournalError(f"the journal is {status.describe()}")
    responses: dict[str, list[JsonValue]] = {agent.value: [] for agent in AgentName}
    gatekeeper: list[JsonValue] = []
    for index, entry in enumerate(journal.entries):
        outcome, where = entry.outcome, f"entries[{index}]"
        if isinstance(outcome, RecordedReply):
            responses[entry.call.value].append({"text": outcome.text})
        elif isinstance(outcome, RecordedAgentError):
            responses[entry.call.value].append(_agent_error_entry(outcome, exact, where))
        elif isinstance(outcome, RecordedGatekeeperResult):
            gatekeeper.append({"result": outcome.result})
        else:
            assert isinstance(outcome, RecordedGatekeeperError)
            gatekeeper.append(_gatekeeper_error_entry(outcome, exact, where))
    scenario: dict[str, JsonValue] = dict(request_to_wire(journal.request))
    scripted: dict[str, JsonValue] = {}
    for agent, items in responses.items():
        scripted[agent] = items
    scenario["responses"] = scripted
    scenario["gatekeeper"] = gatekeeper
    return scenario


def replay_journal(journal: Journal, *, key: bytes | None = None) -> dict[str, JsonValue]:
    """The §9 output of the run a complete journal records (the same shape as ``replay``)."""
    status = journal_status(journal, key=key)
    if not status.complete:
        raise JournalError(f"the journal is {status.describe()}")
    wire = to_wire(status.state.result)
    assert isinstance(wire, dict)
    return wire
