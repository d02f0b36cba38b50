"""The workflow-independent parts of the run journal around the fold (spec §12).

Fold-and-verify, the resume rule and the entry builder are methods of the
:class:`Workflow` class (``_kernel/journal/workflow.py``), written once for
every workflow; this module holds what a workflow's public classes are built
on: the status of a folded journal (:class:`JournalStatusBase`, whose
:meth:`~JournalStatusBase.of` folds a journal), the recorder a driver loop
writes through (:class:`JournalRecorderBase`), the sinks, the agent outcomes
both workflows record, and the §9 scenario helpers of ``journal_to_scenario``.
A workflow's public classes name their workflow in ``_workflow``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar, cast

import attrs

from ..enums import FailureKind
from ..errors import JournalError
from ..machine.results import AgentFailed, AgentReplied
from ..wire.facts import not_text_message, repair_text
from ..wire.json import JsonValue, has_surrogate
from .codec import (
    _KIND_WIRE,  # a recorded kind's wire name, which a §9 scenario's error uses too
    EntryState,
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    RecordedAgentError,
    RecordedReply,
    RecordedToolInvocation,
    is_v1,
    request_digest,
)
from .mac import JournalHead, journal_head, sign_end, sign_entry
from .workflow import INTERRUPTED_MESSAGE, ExpectedCallBase, Workflow, append_entry

__all__ = [
    "INTERRUPTED_MESSAGE",
    "AnyWorkflow",
    "DefaultTypeVar",
    "EntrySink",
    "ExpectedCallBase",
    "JournalRecorderBase",
    "JournalStatusBase",
    "ListSinkBase",
    "agent_outcome",
    "agent_result",
    "append_entry",
    "fold_journal",
    "inexact",
    "journal_status",
    "journal_to_scenario",
    "journal_tool_records",
    "progress_entry",
    "replay_journal",
    "require_complete",
    "resume_journal",
    "scenario_response",
    "scripted_message",
]

J = TypeVar("J", bound=JournalBase[Any, Any])
S = TypeVar("S")
A = TypeVar("A")
R = TypeVar("R")
X = TypeVar("X", bound=ExpectedCallBase[Any])
E = TypeVar("E", bound=JournalEntryBase[Any])
E_contra = TypeVar("E_contra", bound=JournalEntryBase[Any], contravariant=True)


AnyWorkflow = Workflow[Any, Any, Any, Any, Any, Any, Any]
"""A workflow of any types: what a status or recorder class names in ``_workflow``."""


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
    ``action`` is what the machine asks for next from ``state``. ``pending``
    is the header the next entry must carry (for a v2 journal its
    ``input_sha256`` is bound to the request, ``request_sha256``).
    """

    _workflow: ClassVar[AnyWorkflow]

    state: S
    action: A
    interrupted: Any = None
    ended: bool = attrs.field(default=False, kw_only=True)
    end_required: bool = attrs.field(default=False, kw_only=True)
    request_sha256: str | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(
        cls, journal: JournalBase[Any, Any], *, key: bytes | None = None,
        head: JournalHead | None = None,
    ) -> Self:
        """Fold and verify ``journal`` (spec §12); the first problem is a :class:`JournalError`.

        With ``key``, every entry's ``mac`` is checked first (a missing or wrong
        one names the entry); without, ``mac`` fields are ignored. Then each
        entry must be the call the machine asks for, ``seq`` must count from 1,
        nothing may follow END, and only the last entry may be ``started``; a
        ``derived`` gatekeeper result must equal the reference gatekeeper's over
        the recorded tool calls (§12.4); an end marker must follow END and cover
        every entry. With ``head`` (and ``key``), a journal shorter than the head
        or diverging from it is refused (§12.2). With ``key``, a v2 journal is
        :attr:`complete` only with its signed end marker.
        """
        state, action, interrupted, ended = cls._workflow.fold(journal, key, head)
        v1 = is_v1(journal)
        return cls(
            state, action, interrupted, ended=ended, end_required=key is not None and not v1,
            request_sha256=None if v1 else request_digest(journal),
        )

    @property
    def complete(self) -> bool:
        """True when the journal records the whole run.

        It reached END and, for a v2 journal verified with a key, ends with
        its signed end marker (spec §12.2): without one it is incomplete
        whatever its last entry says (a process died before writing it, or
        the journal was cut).
        """
        finished = isinstance(self.action, type(self)._workflow.finished_type)
        return finished and (self.ended or not self.end_required)

    @property
    def pending(self) -> X | None:
        """The call the run needs next (None once complete)."""
        workflow = type(self)._workflow
        if isinstance(self.action, workflow.finished_type):
            return None
        expected: X = workflow.expected_call(self.action)
        if self.request_sha256 is not None:  # a v2 journal: as its entry must say it
            expected = expected._bound(self.request_sha256)
        return expected

    def describe(self) -> str:
        """``complete``, or which call is missing or was interrupted."""
        pending = self.pending
        if pending is None:
            if not self.complete:
                return "incomplete: the run has ended, the journal has no end marker"
            return "complete"
        if self.interrupted is not None:
            return f"incomplete: interrupted during {pending.describe()}"
        return f"incomplete: ends before {pending.describe()}"


def require_complete(status: JournalStatusBase[Any, Any, Any]) -> None:
    """A :class:`JournalError` unless ``status`` is of a complete journal."""
    if not status.complete:
        raise JournalError(f"the journal is {status.describe()}")


# --- the fold, the status and the resume rule of either workflow's journal ----------

St_co = TypeVar("St_co", bound="JournalStatusBase[Any, Any, Any]", covariant=True)
J_co = TypeVar("J_co", covariant=True)


class _Statused(Protocol[St_co]):
    """A journal whose class names its status class, as each workflow's journal does."""

    @property
    def _status_type(self) -> type[St_co]: ...


class _Resumed(_Statused[JournalStatusBase[S, Any, Any]], Protocol[J_co, S]):
    """A journal that says its state and gives its own class back with new entries."""

    def _with_entries(self, entries: Any, /) -> J_co: ...


def journal_tool_records(journal: JournalBase[Any, Any]) -> list[dict[str, JsonValue]]:
    """Every tool invocation a journal's executor entries carry (either workflow), as §13 entries.

    ``ToolRecorder.from_records(journal_tool_records(journal))`` rebuilds the
    recorder of a run being resumed in another process, so its gatekeeper
    sees the ledger and numbering continues after the recorded ids. Every
    entry has ``input`` (null when none was recorded).
    """
    records: list[dict[str, JsonValue]] = []
    for entry in journal.entries:  # a started executor entry's finished calls included
        for item in entry.tool_invocations or ():
            record = item.to_record()
            record.setdefault("input", None)
            records.append(record)
    return records


def journal_status(
    journal: _Statused[St_co], *, key: bytes | None = None, head: JournalHead | None = None
) -> St_co:
    """Fold and verify a journal of either workflow (spec §12): its status, or a JournalError.

    The status is the journal's own workflow's (a :class:`JournalStatus` for a
    chat journal, an ``AiOpsJournalStatus`` for an AIOps one); what is checked
    is :meth:`JournalStatus.of`'s.
    """
    return journal._status_type.of(cast(Any, journal), key=key, head=head)  # the protocol typed it


def fold_journal(
    journal: _Statused[JournalStatusBase[S, Any, Any]],
    *,
    key: bytes | None = None,
    head: JournalHead | None = None,
) -> S:
    """The state ``journal``, of either workflow, folds to (see :func:`journal_status`).

    A journal that ends before the run does, or whose last entry is
    ``started``, folds to the state before the missing effect; its status
    says which call that is.
    """
    state: S = journal._status_type._workflow.fold(cast(Any, journal), key, head)[0]
    return state


def resume_journal(
    journal: _Resumed[J_co, S],
    *,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> tuple[J_co, S]:
    """Apply the resume rule of spec §12 to a journal of either workflow; the journal and state.

    Returns the journal and the state to continue from.
    When the last entry is ``started`` (the process died during that
    effect), the rule is its workflow's ``resent_on_resume``, with the host's
    choices ``resend_gatekeeper`` (the read-only gatekeeper) and
    ``resend_executor`` (tools declared replay-safe, spec §12.3):

    * a re-sent call (an LLM call; the executor or a gatekeeper when the
      host asks) leaves the journal as it is: the state is the one before
      the call, whose next action is that same call with the identical
      input *as the same attempt* — ``start_entry`` then reuses the
      entry's ``seq`` and keeps the tool calls it records (the driver
      answers each tool call identical to a recorded one from the journal);
    * an executor call (its tools may have run) is finished as a
      ``non_retryable`` failure with :data:`INTERRUPTED_MESSAGE`
      (→ ``EXECUTOR_FAILED``), keeping the tool calls that finished; a
      gatekeeper call as a gatekeeper error with the same message
      (→ ``GATEKEEPER_UNAVAILABLE``).

    A completed entry is signed with ``key`` when one is given; the host
    persists the journal's last entry (it replaces the started one). A
    later fold of the returned journal gives the returned state. A v2
    journal whose run ended but that has no end marker is returned as it
    is: the driver writes the end marker. ``head`` is checked as by the
    fold (spec §12.2).
    """
    resumed: tuple[J_co, S] = journal._status_type._workflow.resume_journal(
        cast(Any, journal), key=key, resend_gatekeeper=resend_gatekeeper,
        resend_executor=resend_executor, head=head,
    )
    return resumed


def replay_journal(
    journal: JournalBase[Any, Any], *, key: bytes | None = None, head: JournalHead | None = None
) -> dict[str, JsonValue]:
    """The §9 output of the run a complete journal of either workflow records.

    The shape of ``replay`` for a chat journal, of ``replay_aiops`` for an
    AIOps one (its rules checked against the journal's own tool ledger).
    Verified like :func:`journal_status`; an incomplete journal (with ``key``:
    a v2 one without its signed end marker) is a :class:`JournalError`.
    """
    status = journal_status(journal, key=key, head=head)
    require_complete(status)
    output: dict[str, JsonValue] = type(status)._workflow.replay_output(journal, status.state)
    return output


def journal_to_scenario(
    journal: JournalBase[Any, Any],
    *,
    key: bytes | None = None,
    exact: bool = True,
    head: JournalHead | None = None,
) -> dict[str, JsonValue]:
    """The §9 scenario equivalent to a complete journal, for bug reports and regression suites.

    Each agent's recorded outcomes in call order become its ``responses`` (a
    chat journal's gatekeeper outcomes its ``gatekeeper`` entries, an AIOps
    journal's tool calls its ``tool_ledger``), and the request gives the rest;
    then replaying the scenario (``replay``, ``replay_aiops``) equals
    :func:`replay_journal` of the journal byte for byte as JSON.

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
    complete (with ``key``, a v2 journal needs its signed end marker).
    """
    status = journal_status(journal, key=key, head=head)
    require_complete(status)
    scenario: dict[str, JsonValue] = type(status)._workflow.to_scenario(journal, exact)
    return scenario


# --- the builder -------------------------------------------------------------------


def progress_entry(
    journal: J, tool_invocations: Sequence[RecordedToolInvocation], key: bytes | None
) -> Any:
    """The journal's last (``started`` executor) entry listing the tool calls finished so far.

    Spec §12.3: written to the sink as each tool call finishes, so a process
    that dies during the executor leaves a durable record of them. It
    replaces the started entry (same ``seq``), signed in the ``started``
    domain. v2 only (a v1 started entry carries no tool calls).
    """
    if is_v1(journal):
        raise JournalError(f"tool_invocations: a {journal.format} started entry has none")
    if not journal.entries or journal.entries[-1].state is not EntryState.STARTED:
        raise JournalError("the journal's last entry is not started; nothing to add tools to")
    started = journal.entries[-1]
    entry = attrs.evolve(started, tool_invocations=tuple(tool_invocations), mac=None)
    return sign_entry(journal, entry, key) if key is not None else entry


class EntrySink(Protocol[E_contra]):
    """Where a host persists one workflow's journal entries as the run goes.

    ``write`` also receives the end marker (:class:`JournalEnd`) of a v2
    journal, once, after the last entry.
    """

    def write(self, entry: E_contra, /) -> None: ...


class ListSinkBase(Generic[E]):
    """An in-memory sink: :attr:`entries` holds the persisted entries."""

    def __init__(self, entries: Iterable[E] = (), end: JournalEnd | None = None) -> None:
        self.entries: list[E] = list(entries)
        self.end: JournalEnd | None = end

    def write(self, entry: E | JournalEnd, /) -> None:
        """Append ``entry``, or replace the last entry when it has the same ``seq``.

        The end marker (:class:`JournalEnd`, written once after the last
        entry) is kept in :attr:`end`.
        """
        if isinstance(entry, JournalEnd):
            self.end = entry
        elif self.entries and self.entries[-1].seq == entry.seq:
            self.entries[-1] = entry
        else:
            self.entries.append(entry)


# A type variable with a default (PEP 696), for the workflows' in-memory sinks:
# ``ListJournalSink()`` is meant to be a ``ListJournalSink[JournalEntry]`` (and the
# AIOps sink likewise), which needs a type variable whose default is the entry class.
# Type checkers learn defaults from ``typing_extensions.TypeVar``; Python 3.11's
# ``typing.TypeVar`` has no ``default`` and ``typing_extensions`` is no runtime
# dependency of the core. Both workflows declare their sink's variable through
# :func:`DefaultTypeVar`, which is ``typing_extensions.TypeVar`` to a type checker and,
# at run time, a plain ``TypeVar`` (the default only matters to a type checker).
if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultTypeVar
else:

    def DefaultTypeVar(name: str, *, bound: type, default: type) -> TypeVar:
        """A ``TypeVar`` bound to ``bound``; ``default`` is for type checkers only."""
        return TypeVar(name, bound=bound)


class JournalRecorderBase(Generic[J, A, R, E]):
    """The journal side of a driver loop: start, perform, finish, in that order.

    ``begin(action)`` writes the started entry to the sink and keeps it;
    ``end(result)`` writes the finished entry and returns the result the
    machine must be fed. :attr:`journal` is the journal so far. Pure apart
    from the sink calls; the effect itself is the caller's. A workflow's
    recorder names its descriptor in ``_workflow``.
    """

    _workflow: ClassVar[AnyWorkflow]

    def __init__(
        self, journal: J, *, sink: EntrySink[E] | None = None, key: bytes | None = None
    ) -> None:
        self.journal = journal
        self._sink = sink
        self._key = key

    def begin(self, action: A, *, derived: bool = False) -> E:
        """Record that ``action`` is about to be performed."""
        workflow = type(self)._workflow
        entry: E = workflow.start_entry(self.journal, action, key=self._key, derived=derived)
        return self._write(entry)

    def progress(self, tool_invocations: Sequence[RecordedToolInvocation]) -> E:
        """Record the tool calls the running executor has finished so far (spec §12.3)."""
        return self._write(progress_entry(self.journal, tool_invocations, self._key))

    def _write(self, entry: E) -> E:
        """Persist ``entry`` to the sink, then add it to :attr:`journal`."""
        if self._sink is not None:
            self._sink.write(entry)
        self.journal = append_entry(self.journal, entry)
        return entry

    def close(self) -> JournalEnd | None:
        """Write the end marker once the run has ended (v2; nothing for a v1 journal)."""
        if is_v1(self.journal) or self.journal.end is not None:
            return None
        key, entries = self._key, self.journal.entries
        end = sign_end(self.journal, key) if key is not None else JournalEnd(len(entries))
        if self._sink is not None:
            self._sink.write(end)  # type: ignore[arg-type]
        self.journal = attrs.evolve(self.journal, end=end)
        return end

    @property
    def head(self) -> JournalHead:
        """The head of the journal so far (signed journals only): keep it outside the store."""
        return journal_head(self.journal)

    def end(
        self,
        result: R,
        *,
        tool_invocations: Sequence[RecordedToolInvocation] | None = None,
    ) -> R:
        """Record the effect's result; returns what to feed the machine's ``advance``."""
        workflow = type(self)._workflow
        entry: E = workflow.finish_entry(
            self.journal, result, tool_invocations=tool_invocations, key=self._key
        )
        fed: R = workflow.entry_result(self._write(entry))
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


def scripted_message(message: str, class_name: str) -> str | None:
    """The scenario message whose scripted exception reproduces ``message``, or None."""
    if message == class_name:
        return ""
    prefix = class_name + ": "
    if message.startswith(prefix) and not has_surrogate(message):
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

    A reply is its text; an error only when its message reads as
    :func:`journal_to_scenario` says, else it is :func:`inexact`.
    """
    if isinstance(outcome, RecordedReply):
        return {"text": outcome.text}
    for class_name, kind in _SCRIPTED_PREFIXES[outcome.kind]:
        message = scripted_message(outcome.message, class_name)
        if message is not None:
            return {"error": {"kind": kind, "message": message}}
    text = inexact(outcome.message, exact, where)
    return {"error": {"kind": _KIND_WIRE[outcome.kind], "message": text}}
