"""The workflow descriptor: everything the kernel needs to know about one workflow (spec §12).

The kernel (the journal codec, fold-and-verify, the resume rule, the
recorder, the driver loop) is workflow-free; a workflow — the chat diagnosis,
the AIOps flow — is *one* :class:`Workflow` value that says, in one place:

* its name, its journal class's name (for messages) and its journal's wire
  names (``format``, ``v1_format``);
* its calls (the enumeration of a journal entry's ``call``), which one is the
  executor (the only call that runs tools and whose entries carry
  ``tool_invocations``) and which are gatekeeper calls (``result`` outcomes);
* its request type and request codec (to wire, and strict load from the wire);
* its sans-IO machine (``start`` / ``next_action`` / ``advance``) and the
  action class that means the run is finished;
* how an action maps to the entry header it is recorded under
  (``expected_call``), how a finished entry is fed to the machine
  (``entry_result``) and how a result becomes the fact to record
  (``outcome_of``); what a ``round`` is called in its words;
* ``derive``: the reference gatekeeper's result over recorded tool calls, for
  a ``derived`` gatekeeper entry (spec §12.4);
* THE resume rule (:meth:`Workflow.resent_on_resume`): which interrupted
  calls are re-sent as the same attempt when a run resumes. Every reader of
  the rule — :func:`resume_journal`, the drivers, the engine adapters — asks
  the descriptor, so the rule is written once.

The descriptor is frozen and typed over its request, state, action, finished
action, result, call and expected-call types; nothing in its signatures is
``Any``. Being pure data it does no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import attrs

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


@attrs.frozen(eq=False)
class Workflow(Generic[Q, S, A, F, R, C, X]):
    """One workflow as the kernel sees it: machine, calls, request codec and resume rule.

    Type parameters: ``Q`` the request, ``S`` the state, ``A`` the effect
    actions, ``F`` the finished action, ``R`` the effect results, ``C`` the
    call enumeration, ``X`` the expected-call header. See the module
    docstring for each field; ``resent`` are the calls always re-sent on
    resume (LLM calls: re-sending one with the identical input is safe),
    ``executor`` is never re-sent unless the host declares its tools
    replay-safe (spec §12.3), a ``gatekeeper`` call only when the host asks
    (it is read-only). Compared by identity: each workflow has one.
    """

    name: str
    journal_name: str
    format: str
    v1_format: str
    calls: type[C]
    executor: C
    gatekeeper: frozenset[C]
    resent: frozenset[C]
    request_type: type[Q]
    request_to_wire: Callable[[Q], dict[str, JsonValue]]
    load_request: Callable[[object], Q]
    start: Callable[[Q], S]
    next_action: Callable[[S], A | F]
    advance: Callable[[S, R], S]
    finished_type: type[F]
    expected_call: Callable[[A], X]
    entry_result: Callable[[JournalEntryBase[C]], R]
    outcome_of: Callable[[R], JournalOutcome]
    round_name: str = "round"
    derive: Callable[[A, Sequence[RecordedToolInvocation]], str] | None = None

    def __attrs_post_init__(self) -> None:
        overlap = self.resent & (self.gatekeeper | {self.executor})
        if overlap:
            raise ValueError(
                f"resent: the executor and gatekeeper calls are re-sent only on request, "
                f"got {sorted(call.value for call in overlap)}"
            )

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
