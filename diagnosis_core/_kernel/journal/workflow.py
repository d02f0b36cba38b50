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

The class is typed over its request, state, action, finished action, result,
call and expected-call types; nothing in its signatures is ``Any``. An
instance holds nothing (its attributes are the class's, read-only) and does
no I/O; workflows are compared by identity: each has one instance.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import attrs

from ..errors import JournalError
from ..wire.json import JsonValue
from .codec import JournalEntryBase, JournalOutcome, RecordedToolInvocation

__all__ = ["ExpectedCallBase", "Workflow"]

C = TypeVar("C", bound=enum.StrEnum)
Q = TypeVar("Q")
S = TypeVar("S")
A = TypeVar("A")
F = TypeVar("F")
R = TypeVar("R")
X = TypeVar("X", bound="ExpectedCallBase[Any]")


@attrs.frozen
class ExpectedCallBase(Generic[C]):
    """The call the machine asks for: what a journal entry must say.

    ``round`` is the workflow's round (the AIOps flow calls it a ``step``):
    :meth:`describe` reads the word from the workflow's descriptor, which
    each workflow's subclass names in ``_workflow``.
    """

    _workflow: ClassVar[_Named]

    call: C
    round: int
    attempt: int
    input_sha256: str

    def _bound(self, input_sha256: str) -> Self:
        """This header with the input hash bound to its request (``attrs.evolve`` spelt out)."""
        return type(self)(self.call, self.round, self.attempt, input_sha256)

    def describe(self) -> str:
        """``verifier round 1 attempt 2`` (the AIOps journal says ``step``)."""
        return self.header(self.call.value, self.round, self.attempt)

    def header(self, call: str, round: int, attempt: int) -> str:
        """A call in this workflow's words: ``executor step 2 attempt 1``."""
        return f"{call} {type(self)._workflow.round_name} {round} attempt {attempt}"


class _Named(Protocol):
    """What an expected call reads of its workflow: the word for a round."""

    @property
    def round_name(self) -> str: ...


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
