"""The workflow class: everything the kernel needs to know about one workflow (spec §12).

The kernel (the journal codec, fold-and-verify, the resume rule, the
recorder, the driver loop) is workflow-free; a workflow — the chat diagnosis,
the AIOps flow — is *one* subclass of :class:`Workflow` (and its one
instance), which says, in one place:

* in class attributes: its name, its journal class's name (for messages) and
  its journal's wire names (``format``, ``v1_format``); its calls (the
  enumeration of a journal entry's ``call``), which one is the executor (the
  only call that runs tools and whose entries carry ``tool_invocations``),
  which are gatekeeper calls (``result`` outcomes) and which LLM calls are
  re-sent on resume; its request type, the action class that means the run
  is finished, and what a ``round`` is called in its words;
* in methods the kernel calls: the request codec (:meth:`~Workflow.request_to_wire`,
  :meth:`~Workflow.load_request`), the sans-IO machine (:meth:`~Workflow.start`,
  :meth:`~Workflow.next_action`, :meth:`~Workflow.advance`), how an action maps
  to the entry header it is recorded under (:meth:`~Workflow.expected_call`),
  how a finished entry is fed to the machine (:meth:`~Workflow.entry_result`)
  and how a result becomes the fact to record (:meth:`~Workflow.outcome_of`);
  :meth:`~Workflow.derive` is the reference gatekeeper's result over recorded
  tool calls, for a ``derived`` gatekeeper entry (spec §12.4);
* THE resume rule (:meth:`Workflow.resent_on_resume`): which interrupted
  calls are re-sent as the same attempt when a run resumes. Every reader of
  the rule — the resume, the drivers, the engine adapters — asks the
  workflow, so the rule is written once.

The kernel's journal code is written once, as methods of this class that
call the ones above: :meth:`~Workflow.fold` (fold and verify a journal),
:meth:`~Workflow.resume_journal` (the resume rule applied),
:meth:`~Workflow.start_entry` and :meth:`~Workflow.finish_entry` (the entry builder
the recorder writes through). The public
``journal_status``, ``fold_journal`` and ``resume_journal`` (``fold.py``) take
a journal of either workflow and call its own workflow's methods; the chat
builder functions (``start_entry``, ``finish_entry``, …) are methods bound to
its instance.

The class is typed over its request, state, action, finished action, result,
call and expected-call types; nothing in its signatures is ``Any``. An
instance holds nothing (its attributes are the class's, read-only) and does
no I/O; workflows are compared by identity: each has one instance.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Self, TypeVar

import attrs

from ..enums import FailureKind
from ..errors import JournalError
from ..wire.json import JsonValue
from .codec import (
    EntryState,
    JournalBase,
    JournalEntryBase,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedToolInvocation,
    canonical_form,
    is_v1,
    request_digest,
)
from .mac import JournalHead, bound_input_sha256, sign_entry, verify_chain

__all__ = ["INTERRUPTED_MESSAGE", "ExpectedCallBase", "Workflow", "append_entry"]

C = TypeVar("C", bound=enum.StrEnum)
Q = TypeVar("Q")
S = TypeVar("S")
A = TypeVar("A")
F = TypeVar("F")
R = TypeVar("R")
X = TypeVar("X", bound="ExpectedCallBase[Any]")
J = TypeVar("J", bound=JournalBase[Any, Any])
E = TypeVar("E", bound=JournalEntryBase[Any])

INTERRUPTED_MESSAGE = "interrupted: outcome unknown"
"""The recorded message of an executor (or gatekeeper) call whose process died."""


def _mismatch(
    index: int, expected: ExpectedCallBase[Any], entry: JournalEntryBase[Any]
) -> JournalError:
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


def append_entry(journal: J, entry: JournalEntryBase[Any]) -> J:
    """``journal`` with ``entry``: appended, or replacing the last entry when it has the same seq.

    Only a ``started`` last entry can be replaced (by its finished entry or,
    on a resumed re-send, by itself). Works on any workflow's journal.
    """
    entries = journal.entries
    if journal.end is not None:
        raise JournalError("end: the journal has ended; nothing can be appended")
    if entries and entries[-1].seq == entry.seq:
        if entries[-1].state is not EntryState.STARTED:
            raise JournalError(f"entries[{len(entries) - 1}]: finished; it cannot be replaced")
        return journal._with_entries((*entries[:-1], entry))
    if entry.seq != len(entries) + 1:
        raise JournalError(f"seq: expected {len(entries) + 1}, got {entry.seq}")
    return journal._with_entries((*entries, entry))


@attrs.frozen
class ExpectedCallBase(Generic[C]):
    """The call the machine asks for: what a journal entry must say.

    ``round`` is the workflow's round (the AIOps flow calls it a ``step``):
    :meth:`describe` reads the word from the workflow's descriptor, which
    each workflow's subclass names in ``_workflow``.
    """

    _workflow: ClassVar[Workflow[Any, Any, Any, Any, Any, Any, Any]]

    call: C
    round: int
    attempt: int
    input_sha256: str

    def _bound(self, request_sha256: str) -> Self:
        """This header as a v2 entry carries it: its input hash bound to the request's."""
        input_sha256 = bound_input_sha256(request_sha256, self.input_sha256)
        return type(self)(self.call, self.round, self.attempt, input_sha256)

    def describe(self) -> str:
        """``verifier round 1 attempt 2`` (the AIOps journal says ``step``)."""
        return self.header(self.call.value, self.round, self.attempt)

    def header(self, call: str, round: int, attempt: int) -> str:
        """A call in this workflow's words: ``executor step 2 attempt 1``."""
        return f"{call} {type(self)._workflow.round_name} {round} attempt {attempt}"


class Workflow(abc.ABC, Generic[Q, S, A, F, R, C, X]):
    """One workflow as the kernel sees it: its calls and resume rule, its machine, its codec.

    Type parameters: ``Q`` the request, ``S`` the state, ``A`` the effect
    actions, ``F`` the finished action, ``R`` the effect results, ``C`` the
    call enumeration, ``X`` the expected-call header. A workflow is a
    subclass that sets the class attributes below and overrides the
    abstract methods; the kernel's journal, fold, resume and driver code
    calls them. ``resent`` are the calls always re-sent on resume (LLM
    calls: re-sending one with the identical input is safe), ``executor`` is
    never re-sent unless the host declares its tools replay-safe (spec
    §12.3), a ``gatekeeper`` call only when the host asks (it is read-only);
    a subclass that lists either in ``resent`` is refused (``ValueError``).
    """

    __slots__ = ()

    name: str
    """The workflow's name (``diagnosis``, ``aiops``)."""
    journal_name: str
    """Its journal class's name, for messages (``Journal``, ``AiOpsJournal``)."""
    format: str
    """The ``format`` new journals are written in."""
    v1_format: str
    """The ``format`` of v1 journals, still read, folded and replayed."""
    calls: type[C]
    """The enumeration of a journal entry's ``call``."""
    executor: C
    """The one call that runs tools (its entries carry ``tool_invocations``)."""
    gatekeeper: frozenset[C]
    """The gatekeeper calls (``result`` outcomes)."""
    resent: frozenset[C]
    """The calls always re-sent as the same attempt on resume."""
    request_type: type[Q]
    """The request class."""
    finished_type: type[F]
    """The action class that means the run is finished."""
    round_name: str = "round"
    """What a ``round`` is called in this workflow's words (AIOps: ``step``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        resent: frozenset[enum.StrEnum] = getattr(cls, "resent", frozenset())
        overlap = resent & {*getattr(cls, "gatekeeper", ()), getattr(cls, "executor", None)}
        if overlap:
            raise ValueError(
                f"resent: the executor and gatekeeper calls are re-sent only on request, "
                f"got {sorted(call.value for call in overlap)}"
            )

    # --- the request codec ----------------------------------------------------------

    @abc.abstractmethod
    def request_to_wire(self, request: Q) -> dict[str, JsonValue]:
        """The request's wire form, as a journal's ``request`` holds it."""

    @abc.abstractmethod
    def load_request(self, data: object) -> Q:
        """The request, loaded strictly from its wire form (errors name a path in ``request``)."""

    # --- the machine ----------------------------------------------------------------

    @abc.abstractmethod
    def start(self, request: Q) -> S:
        """The state a run of ``request`` starts in."""

    @abc.abstractmethod
    def next_action(self, state: S) -> A | F:
        """The effect the machine asks for from ``state``, or the finished action."""

    @abc.abstractmethod
    def advance(self, state: S, result: R) -> S:
        """The state after ``result`` of the effect ``state`` asked for."""

    # --- the journal ----------------------------------------------------------------

    @abc.abstractmethod
    def expected_call(self, action: A) -> X:
        """The entry header ``action`` must be recorded under (its input hash included)."""

    @abc.abstractmethod
    def entry_result(self, entry: JournalEntryBase[C]) -> R:
        """The machine result a finished entry stands for: what :meth:`advance` is fed."""

    @abc.abstractmethod
    def outcome_of(self, result: R) -> JournalOutcome:
        """The fact to record for an effect's result."""

    @abc.abstractmethod
    def replay_output(self, journal: JournalBase[Q, E], state: S) -> dict[str, JsonValue]:
        """The §9 output of the run a complete ``journal`` records; ``state`` is its fold."""

    @abc.abstractmethod
    def to_scenario(self, journal: JournalBase[Q, E], exact: bool) -> dict[str, JsonValue]:
        """The §9 scenario equivalent to a complete ``journal`` (``journal_to_scenario``)."""

    def derive(self, action: A, invocations: Sequence[RecordedToolInvocation]) -> str:
        """The canonical JSON a ``derived`` gatekeeper entry must hold (spec §12.4).

        The reference gatekeeper's result for ``action`` over the tool calls
        the journal records before it. A workflow without gatekeeper calls
        derives nothing (:class:`JournalError`).
        """
        raise JournalError("derived: this workflow has no derived calls")

    # --- the resume rule ------------------------------------------------------------

    @property
    def formats(self) -> tuple[str, str]:
        """Every journal ``format`` this workflow reads: the current one, then v1."""
        return (self.format, self.v1_format)

    def resent_on_resume(
        self, call: C, *, resend_gatekeeper: bool = False, resend_executor: bool = False
    ) -> bool:
        """Whether an interrupted ``call`` is re-sent when a run resumes (spec §12 Resume).

        The one statement of the rule. An LLM call (in :attr:`resent`) is
        re-sent with the identical input as the same attempt; the executor
        never is (its tools may have run) unless ``resend_executor`` (the host
        declares its tools replay-safe, spec §12.3); a gatekeeper call only
        with ``resend_gatekeeper`` (it is read-only). Every other interrupted
        call is folded as a failure, ``interrupted: outcome unknown``.
        """
        if call in self.resent:
            return True
        if call == self.executor:
            return resend_executor
        return resend_gatekeeper and call in self.gatekeeper

    def describe_entry(self, entry: JournalEntryBase[C]) -> str:
        """An entry's call in this workflow's words: ``composer round 1 attempt 2``."""
        return f"{entry.call.value} {self.round_name} {entry.round} attempt {entry.attempt}"

    # --- the journal, written once for every workflow ------------------------------

    def _check_derived(
        self,
        index: int,
        entry: JournalEntryBase[Any],
        action: A,
        ledger: Sequence[RecordedToolInvocation],
    ) -> None:
        """A ``derived`` gatekeeper entry's result must be the reference one (spec §12.4)."""
        outcome = entry.outcome
        if isinstance(outcome, RecordedGatekeeperError):
            if outcome.message != INTERRUPTED_MESSAGE:
                raise JournalError(
                    f"entries[{index}].outcome: a derived gatekeeper call does not fail (only "
                    "an interrupted one is recorded as an error)"
                )
            return
        assert isinstance(outcome, RecordedGatekeeperResult)
        derived = self.derive(action, ledger)
        if derived != outcome.result_json:
            raise JournalError(
                f"entries[{index}].outcome.result: differs from the reference gatekeeper's result "
                "over the recorded tool invocations"
            )

    def fold(
        self,
        journal: JournalBase[Q, E],
        key: bytes | None,
        head: JournalHead | None = None,
    ) -> tuple[S, A | F, E | None, bool]:
        """Fold and verify ``journal``: ``(state, next action, interrupted entry or None, ended)``.

        What is checked, in that order, is ``JournalStatusBase.of``'s (``fold.py``);
        the first problem is a :class:`JournalError` naming the entry (or ``end``,
        or ``head``). ``ended`` is true when a valid end marker closes the journal.
        """
        if getattr(type(journal), "_form", None) is not self:
            raise JournalError(f"expected a {self.journal_name}, got {type(journal).__name__}")
        v1 = is_v1(journal)
        # The journal's canonical texts, each written once: the request digest the v2
        # entries bind and, with a key, every text the chain signs (spec §12).
        signed = key is not None
        at = head.entries if signed and isinstance(head, JournalHead) else None
        form = canonical_form(journal, signed=signed, head_entries=at)
        bind = "" if v1 else form.request_sha256
        chain = verify_chain(journal, form, key, head) if signed or head is not None else None
        state = self.start(journal.request)
        next_action = self.next_action
        finished_type = self.finished_type
        expected_call = self.expected_call
        advance = self.advance
        entry_result = self.entry_result
        entries = journal.entries
        last = len(entries) - 1
        ledger: list[RecordedToolInvocation] = []
        interrupted: E | None = None
        action: A | F
        for index, entry in enumerate(entries):
            if chain is not None and chain.broken == index:
                assert chain.error is not None
                raise chain.error
            if entry.seq != index + 1:
                raise JournalError(f"entries[{index}].seq: expected {index + 1}, got {entry.seq}")
            action = next_action(state)
            if isinstance(action, finished_type):
                raise JournalError(
                    f"entries[{index}]: the run has ended, the journal has "
                    f"{self.describe_entry(entry)}"
                )
            expected = expected_call(action)
            if not v1:
                expected = expected._bound(bind)
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
                interrupted = entry
                break
            if entry.derived:
                self._check_derived(index, entry, action, ledger)
            if entry.tool_invocations:
                ledger.extend(entry.tool_invocations)
            state = advance(state, entry_result(entry))
        if interrupted is None:
            action = next_action(state)
        ended = False
        end = journal.end
        if end is not None:
            if interrupted is not None or not isinstance(action, finished_type):
                raise JournalError("end: the journal has an end marker, but the run has not ended")
            if end.entries != len(entries):
                raise JournalError(
                    f"end.entries: the end marker covers {end.entries} entries, the journal has "
                    f"{len(entries)}"
                )
            if chain is not None and chain.end_error is not None:
                raise chain.end_error
            ended = True
        if chain is not None and chain.head_error is not None:
            raise chain.head_error
        return state, action, interrupted, ended

    def resume_journal(
        self,
        journal: J,
        *,
        key: bytes | None = None,
        resend_gatekeeper: bool = False,
        resend_executor: bool = False,
        head: JournalHead | None = None,
    ) -> tuple[J, S]:
        """The resume rule of spec §12 for this workflow: ``resume_journal`` (``fold.py``)."""
        state, _, entry, _ = self.fold(journal, key, head)
        return self.resume_folded(
            journal,
            state,
            entry,
            key=key,
            resend_gatekeeper=resend_gatekeeper,
            resend_executor=resend_executor,
        )

    def resume_folded(
        self,
        journal: J,
        state: S,
        entry: E | None,
        *,
        key: bytes | None,
        resend_gatekeeper: bool,
        resend_executor: bool,
    ) -> tuple[J, S]:
        """:meth:`resume_journal` of a journal folded already: ``state`` and ``entry`` as folded.

        For a driver that folded the journal itself (it reads the state before
        the interrupted call), so the journal is folded and verified once.
        """
        if entry is None or self.resent_on_resume(
            entry.call, resend_gatekeeper=resend_gatekeeper, resend_executor=resend_executor
        ):
            return journal, state
        outcome: JournalOutcome = (
            RecordedGatekeeperError(INTERRUPTED_MESSAGE)
            if entry.call in self.gatekeeper
            else RecordedAgentError(FailureKind.NON_RETRYABLE, INTERRUPTED_MESSAGE)
        )
        finished = attrs.evolve(entry, state=EntryState.FINISHED, outcome=outcome, mac=None)
        if key is not None:
            finished = sign_entry(journal, finished, key)
        resumed = append_entry(journal, finished)
        return resumed, self.advance(state, self.entry_result(finished))

    def start_entry(
        self,
        journal: JournalBase[Q, E],
        action: A,
        *,
        key: bytes | None = None,
        derived: bool = False,
    ) -> E:
        """The ``started`` entry to persist before performing ``action``.

        Its ``seq`` is one past the last entry, or the last entry's own when that
        one is a ``started`` entry for the same call (a resumed call re-sent as
        the same attempt; it keeps the tool calls that entry records). Signed
        when ``key`` is given. ``derived`` (v2 gatekeeper calls only) says the
        result is the reference gatekeeper's over the recorded tool calls.
        """
        expected = self.expected_call(action)
        if not is_v1(journal):
            expected = expected._bound(request_digest(journal))
        seq = len(journal.entries) + 1
        tools = None
        if journal.entries and journal.entries[-1].state is EntryState.STARTED:
            last = journal.entries[-1]
            header = (last.call, last.round, last.attempt, last.input_sha256)
            if header != (expected.call, expected.round, expected.attempt, expected.input_sha256):
                raise JournalError(
                    f"entries[{len(journal.entries) - 1}]: started for "
                    f"{self.describe_entry(last)}, not for {expected.describe()}"
                )
            seq = last.seq
            tools = last.tool_invocations
            derived = last.derived
        if derived and is_v1(journal):
            derived = False  # a v1 journal cannot say so; its gatekeeper result stays a fact
        entry: Any = type(journal)._entry_type(  # the header is the expected call's four fields
            seq=seq,
            state=EntryState.STARTED,
            tool_invocations=tools,
            derived=derived,
            **attrs.asdict(expected, recurse=False),
        )
        made: E = sign_entry(journal, entry, key) if key is not None else entry
        return made

    def finish_entry(
        self,
        journal: JournalBase[Q, E],
        result: R,
        *,
        tool_invocations: Sequence[RecordedToolInvocation] | None = None,
        key: bytes | None = None,
    ) -> E:
        """The ``finished`` entry for the journal's last (``started``) entry and ``result``."""
        if not journal.entries or journal.entries[-1].state is not EntryState.STARTED:
            raise JournalError("the journal's last entry is not started; nothing to finish")
        entry: Any = attrs.evolve(  # as the resume rule finishes an interrupted entry
            journal.entries[-1],
            state=EntryState.FINISHED,
            outcome=self.outcome_of(result),
            tool_invocations=tool_invocations,
            mac=None,
        )
        made: E = sign_entry(journal, entry, key) if key is not None else entry
        return made
