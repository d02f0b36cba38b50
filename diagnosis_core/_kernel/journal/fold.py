"""The workflow-independent kernel of the run journal (spec §12).

Fold-and-verify, the resume rule, the ``seq``/``state``/``started`` checks,
the entry builder and the sinks are the same for every workflow; only the
machine, the call names, the request and the outcome types differ. A
workflow states those differences once, in a :class:`JournalSpec`, and its
public functions (``fold_journal`` for the chat diagnosis, ``fold_aiops_journal``
for the AIOps flow, …) are this kernel applied to its spec:

* ``journal_type`` — its journal class (which carries the wire form);
* ``start`` / ``next_action`` / ``advance`` and ``finished_type`` — its machine;
* ``expected_call`` — how an action maps to (call, round, attempt, input hash);
* ``entry_result`` / ``outcome_of`` — a recorded outcome as the machine's
  result, and a result as the fact to record;
* ``resent`` — the calls the resume rule re-sends as the same attempt (LLM
  calls; never an executor, whose tools may have run), and
  ``optionally_resent`` — the calls the host may choose to re-send (the
  read-only gatekeeper).

Every other interrupted call is folded as a failure with
:data:`INTERRUPTED_MESSAGE`: a ``non_retryable`` agent error, or a
gatekeeper error for a gatekeeper call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import attrs

from ..enums import FailureKind
from ..errors import JournalError
from ..facts import not_text_message, repair_text
from ..json import JsonValue
from ..results import AgentFailed, AgentReplied
from .codec import (
    EntryState,
    JournalBase,
    JournalEntryBase,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedReply,
    RecordedToolInvocation,
)
from .mac import journal_seed, sign_entry, verify_entry_mac

__all__ = [
    "INTERRUPTED_MESSAGE",
    "EntrySink",
    "ExpectedCallBase",
    "JournalRecorderBase",
    "JournalSpec",
    "JournalStatusBase",
    "ListSinkBase",
    "agent_outcome",
    "agent_result",
    "append_entry",
    "finish_entry",
    "fold",
    "inexact",
    "require_complete",
    "resume",
    "scenario_response",
    "scripted_message",
    "start_entry",
]

INTERRUPTED_MESSAGE = "interrupted: outcome unknown"
"""The recorded message of an executor (or gatekeeper) call whose process died."""

C = TypeVar("C")
J = TypeVar("J", bound=JournalBase[Any, Any])
S = TypeVar("S")
A = TypeVar("A")
R = TypeVar("R")
X = TypeVar("X", bound="ExpectedCallBase[Any]")
E = TypeVar("E", bound=JournalEntryBase[Any])
E_contra = TypeVar("E_contra", bound=JournalEntryBase[Any], contravariant=True)


@attrs.frozen
class ExpectedCallBase(Generic[C]):
    """The call the machine asks for: what a journal entry must say."""

    _round_name: ClassVar[str] = "round"

    call: C
    round: int
    attempt: int
    input_sha256: str

    def describe(self) -> str:
        """``verifier round 1 attempt 2`` (the AIOps journal says ``step``)."""
        return self.header(getattr(self.call, "value", self.call), self.round, self.attempt)

    def header(self, call: object, round: int, attempt: int) -> str:
        """A call in this workflow's words: ``executor step 2 attempt 1``."""
        return f"{call} {self._round_name} {round} attempt {attempt}"


@attrs.frozen
class JournalSpec(Generic[J, S, A, R, X]):
    """How one workflow's machine meets the journal (see the module docstring)."""

    journal_type: type[J]
    start: Callable[[Any], S]
    next_action: Callable[[S], object]
    advance: Callable[[S, R], S]
    finished_type: type
    expected_call: Callable[[A], X]
    entry_result: Callable[[Any], R]
    outcome_of: Callable[[R], JournalOutcome]
    resent: frozenset[Any]
    optionally_resent: frozenset[Any] = frozenset()

    round_name: str = "round"

    def describe_entry(self, entry: JournalEntryBase[Any]) -> str:
        """An entry's call in this workflow's words: ``composer round 1 attempt 2``."""
        return f"{entry.call.value} {self.round_name} {entry.round} attempt {entry.attempt}"

    def entry_type(self) -> type[JournalEntryBase[Any]]:
        """The journal's entry class."""
        return self.journal_type._entry_type


# --- outcomes <-> machine results (the agent part both workflows share) -------------


def agent_outcome(result: AgentReplied | AgentFailed) -> RecordedReply | RecordedAgentError:
    """The fact to record for an agent's result.

    An agent that returns something other than text is recorded as a
    ``non_retryable`` error (``TypeError: …``): a journal holds text only.
    """
    if isinstance(result, AgentReplied):
        text: object = result.text
        if not isinstance(text, str):
            return RecordedAgentError(FailureKind.NON_RETRYABLE, not_text_message(text))
        return RecordedReply(repair_text(text))  # the one fact codec (spec §12.1)
    message = repair_text(result.message) if isinstance(result.message, str) else ""
    return RecordedAgentError(result.kind, message)


def agent_result(entry: JournalEntryBase[Any]) -> AgentReplied | AgentFailed:
    """The agent result a finished agent entry stands for."""
    outcome = entry.outcome
    if outcome is None:
        raise JournalError(f"entry {entry.seq} is started; it has no outcome yet")
    if isinstance(outcome, RecordedReply):
        return AgentReplied(outcome.text)
    if isinstance(outcome, RecordedAgentError):
        return AgentFailed(outcome.kind, outcome.message)
    raise JournalError(f"entry {entry.seq}: not an agent outcome")  # pragma: no cover


# --- fold and verify ---------------------------------------------------------------


@attrs.frozen
class JournalStatusBase(Generic[S, A, X]):
    """What folding a journal found: the state, and whether the run is done.

    ``interrupted`` is the last entry when it is ``started`` (its process
    died during that effect); ``state`` is then the state *before* it.
    ``action`` is what the machine asks for next from ``state``.
    """

    _spec: ClassVar[JournalSpec[Any, Any, Any, Any, Any]]

    state: S
    action: A
    interrupted: Any = None

    @property
    def complete(self) -> bool:
        """True when the journal records the whole run (it reached END)."""
        return isinstance(self.action, type(self)._spec.finished_type)

    @property
    def pending(self) -> X | None:
        """The call the run needs next (None once complete)."""
        spec = type(self)._spec
        if isinstance(self.action, spec.finished_type):
            return None
        expected: X = spec.expected_call(self.action)
        return expected

    def describe(self) -> str:
        """``complete``, or which call is missing or was interrupted."""
        pending = self.pending
        if pending is None:
            return "complete"
        if self.interrupted is not None:
            return f"incomplete: interrupted during {pending.describe()}"
        return f"incomplete: ends before {pending.describe()}"


def _mismatch(index: int, expected: ExpectedCallBase[Any], entry: JournalEntryBase[Any]) -> (
    JournalError
):
    where = f"entries[{index}]"
    if entry.call is not expected.call:
        return JournalError(
            f"{where}: the run expects {expected.describe()}, the journal has {entry.call.value}"
        )
    if entry.round != expected.round or entry.attempt != expected.attempt:
        return JournalError(
            f"{where}: the run expects {expected.describe()}, the journal has "
            f"{expected.header(entry.call.value, entry.round, entry.attempt)}"
        )
    return JournalError(
        f"{where}.input_sha256: the input of {expected.describe()} hashes to "
        f"{expected.input_sha256}, the journal has {entry.input_sha256}"
    )


def fold(
    spec: JournalSpec[J, S, A, R, X], journal: J, key: bytes | None
) -> tuple[S, object, Any]:
    """Fold and verify ``journal``: ``(state, next action, interrupted entry or None)``.

    With ``key``, every entry's ``mac`` is checked first (a missing or wrong
    one names the entry); without, ``mac`` fields are ignored. Then each
    entry must be the call the machine asks for, ``seq`` must count from 1,
    nothing may follow END, and only the last entry may be ``started``. The
    first problem is a :class:`JournalError` naming the entry.
    """
    if not isinstance(journal, spec.journal_type):
        raise JournalError(
            f"expected a {spec.journal_type.__name__}, got {type(journal).__name__}"
        )
    link = journal_seed(journal, key) if key is not None else ""
    state = spec.start(journal.request)
    entries = journal.entries
    last = len(entries) - 1
    for index, entry in enumerate(entries):
        if key is not None:
            link = verify_entry_mac(entry, link, key, index)
        if entry.seq != index + 1:
            raise JournalError(f"entries[{index}].seq: expected {index + 1}, got {entry.seq}")
        action = spec.next_action(state)
        if isinstance(action, spec.finished_type):
            raise JournalError(
                f"entries[{index}]: the run has ended, the journal has "
                f"{spec.describe_entry(entry)}"
            )
        expected = spec.expected_call(action)  # type: ignore[arg-type]
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
            return state, action, entry
        state = spec.advance(state, spec.entry_result(entry))
    return state, spec.next_action(state), None


def resume(
    spec: JournalSpec[J, S, A, R, X], journal: J, key: bytes | None, resend: frozenset[Any]
) -> tuple[J, S]:
    """Apply the resume rule of spec §12 (see :func:`diagnosis_core.journal.resume_journal`).

    ``resend`` is the part of ``spec.optionally_resent`` the host chose to
    re-send. A call in ``spec.resent`` or ``resend`` leaves the journal as it
    is (the next :func:`start_entry` reuses the started entry's ``seq``);
    any other interrupted call is finished as a failure with
    :data:`INTERRUPTED_MESSAGE`, signed with ``key`` when one is given.
    """
    state, _, entry = fold(spec, journal, key)
    if entry is None or entry.call in spec.resent or entry.call in resend:
        return journal, state
    outcome: JournalOutcome = (
        RecordedGatekeeperError(INTERRUPTED_MESSAGE)
        if entry.call in spec.journal_type._form.gatekeeper
        else RecordedAgentError(FailureKind.NON_RETRYABLE, INTERRUPTED_MESSAGE)
    )
    finished = attrs.evolve(entry, state=EntryState.FINISHED, outcome=outcome, mac=None)
    if key is not None:
        finished = sign_entry(journal, finished, key)
    resumed = append_entry(journal, finished)
    return resumed, spec.advance(state, spec.entry_result(finished))


def require_complete(status: JournalStatusBase[Any, Any, Any]) -> None:
    """A :class:`JournalError` unless ``status`` is of a complete journal."""
    if not status.complete:
        raise JournalError(f"the journal is {status.describe()}")


# --- the builder -------------------------------------------------------------------


def start_entry(
    spec: JournalSpec[J, S, A, R, X], journal: J, action: A, key: bytes | None
) -> Any:
    """The ``started`` entry to persist before performing ``action``.

    Its ``seq`` is one past the last entry, or the last entry's own when that
    one is a ``started`` entry for the same call (a resumed LLM call re-sent
    as the same attempt). Signed when ``key`` is given.
    """
    expected = spec.expected_call(action)
    seq = len(journal.entries) + 1
    if journal.entries and journal.entries[-1].state is EntryState.STARTED:
        last = journal.entries[-1]
        header = (last.call, last.round, last.attempt, last.input_sha256)
        if header != (expected.call, expected.round, expected.attempt, expected.input_sha256):
            raise JournalError(
                f"entries[{len(journal.entries) - 1}]: started for "
                f"{spec.describe_entry(last)}, not for {expected.describe()}"
            )
        seq = last.seq
    entry = spec.entry_type()(
        seq=seq,
        call=expected.call,
        round=expected.round,
        attempt=expected.attempt,
        input_sha256=expected.input_sha256,
        state=EntryState.STARTED,
    )
    return sign_entry(journal, entry, key) if key is not None else entry


def finish_entry(
    spec: JournalSpec[J, S, A, R, X],
    journal: J,
    result: R,
    tool_invocations: Sequence[RecordedToolInvocation] | None,
    key: bytes | None,
) -> Any:
    """The ``finished`` entry for the journal's last (``started``) entry and ``result``."""
    if not journal.entries or journal.entries[-1].state is not EntryState.STARTED:
        raise JournalError("the journal's last entry is not started; nothing to finish")
    started = journal.entries[-1]
    entry = spec.entry_type()(
        seq=started.seq,
        call=started.call,
        round=started.round,
        attempt=started.attempt,
        input_sha256=started.input_sha256,
        state=EntryState.FINISHED,
        outcome=spec.outcome_of(result),
        tool_invocations=tool_invocations,
    )
    return sign_entry(journal, entry, key) if key is not None else entry


def append_entry(journal: J, entry: JournalEntryBase[Any]) -> J:
    """``journal`` with ``entry``: appended, or replacing the last entry when it has the same seq.

    Only a ``started`` last entry can be replaced (by its finished entry or,
    on a resumed re-send, by itself). Works on any workflow's journal.
    """
    entries = journal.entries
    if entries and entries[-1].seq == entry.seq:
        if entries[-1].state is not EntryState.STARTED:
            raise JournalError(f"entries[{len(entries) - 1}]: finished; it cannot be replaced")
        return type(journal)(journal.request, (*entries[:-1], entry))
    if entry.seq != len(entries) + 1:
        raise JournalError(f"seq: expected {len(entries) + 1}, got {entry.seq}")
    return type(journal)(journal.request, (*entries, entry))


class EntrySink(Protocol[E_contra]):
    """Where a host persists one workflow's journal entries as the run goes."""

    def write(self, entry: E_contra, /) -> None: ...


class ListSinkBase(Generic[E]):
    """An in-memory sink: :attr:`entries` holds the persisted entries."""

    def __init__(self, entries: Iterable[E] = ()) -> None:
        self.entries: list[E] = list(entries)

    def write(self, entry: E, /) -> None:
        """Append ``entry``, or replace the last entry when it has the same ``seq``."""
        if self.entries and self.entries[-1].seq == entry.seq:
            self.entries[-1] = entry
        else:
            self.entries.append(entry)


class JournalRecorderBase(Generic[J, A, R, E]):
    """The journal side of a driver loop: start, perform, finish, in that order.

    ``begin(action)`` writes the started entry to the sink and keeps it;
    ``end(result)`` writes the finished entry and returns the result the
    machine must be fed. :attr:`journal` is the journal so far. Pure apart
    from the sink calls; the effect itself is the caller's. A workflow's
    recorder sets ``_spec``.
    """

    _spec: ClassVar[JournalSpec[Any, Any, Any, Any, Any]]

    def __init__(
        self, journal: J, *, sink: EntrySink[E] | None = None, key: bytes | None = None
    ) -> None:
        self.journal = journal
        self._sink = sink
        self._key = key

    def begin(self, action: A) -> E:
        """Record that ``action`` is about to be performed."""
        entry: E = start_entry(type(self)._spec, self.journal, action, self._key)
        if self._sink is not None:
            self._sink.write(entry)
        self.journal = append_entry(self.journal, entry)
        return entry

    def end(
        self,
        result: R,
        *,
        tool_invocations: Sequence[RecordedToolInvocation] | None = None,
    ) -> R:
        """Record the effect's result; returns what to feed the machine's ``advance``."""
        spec = type(self)._spec
        entry: E = finish_entry(spec, self.journal, result, tool_invocations, self._key)
        if self._sink is not None:
            self._sink.write(entry)
        self.journal = append_entry(self.journal, entry)
        fed: R = spec.entry_result(entry)
        return fed


# --- a journal is a replay: recorded errors as §9 scripted doubles -------------------

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


def scripted_message(message: str, class_name: str) -> str | None:
    """The scenario message whose scripted exception reproduces ``message``, or None."""
    if message == class_name:
        return ""
    prefix = class_name + ": "
    if message.startswith(prefix) and not _has_surrogate(message):
        return message[len(prefix) :]
    return None


def inexact(message: str, exact: bool, where: str) -> str:
    """``message`` for an approximate scenario; a :class:`JournalError` when ``exact``."""
    if exact:
        raise JournalError(
            f"{where}.outcome.error.message: a §9 scenario cannot reproduce this message "
            "exactly (pass exact=False for an approximate scenario)"
        )
    return message.encode("utf-8", "replace").decode("utf-8")


def scenario_response(
    outcome: RecordedReply | RecordedAgentError, exact: bool, where: str
) -> JsonValue:
    """The §9 ``responses`` entry whose scripted double reproduces a recorded agent outcome.

    A reply is its text; an error is reproducible only when its message reads
    ``Class: message`` for the class the double of that kind raises
    (``ScriptedError`` for retryable, ``NonRetryableError`` or
    ``UnknownScriptedError`` for non-retryable, ``ToolBlockedError``) and has
    no lone surrogate; any other message is a :class:`JournalError` naming
    the entry unless ``exact`` is false (see :func:`inexact`).
    """
    if isinstance(outcome, RecordedReply):
        return {"text": outcome.text}
    for class_name, kind in _SCRIPTED_PREFIXES[outcome.kind]:
        message = scripted_message(outcome.message, class_name)
        if message is not None:
            return {"error": {"kind": kind, "message": message}}
    text = inexact(outcome.message, exact, where)
    return {"error": {"kind": _KIND_NAMES[outcome.kind], "message": text}}
