"""The AIOps run journal ``aiops_journal_v2`` (spec §12, last bullet; spec §11).

``aiops_journal_v1`` is still read, folded and replayed. The same journal as
the chat diagnosis's — the same entries, fold-and-verify
walk, resume rule, builder, sinks and HMAC chain, all from the shared kernel
(``_journal_kernel.py``) — with this workflow's own parts:

* ``format`` is ``aiops_journal_v1``; ``request`` is the :class:`AiOpsRequest`
  wire form ``{"run", "alerts", "config"}``;
* ``call`` is one of the four agents, ``supervisor|planner|executor|reporter``
  (there is no gatekeeper in this flow), and every outcome is an agent's:
  ``{"text"}`` or ``{"error": {"kind", "message"}}``;
* ``round`` is the supervisor step the call belongs to, ``attempt`` its
  attempt, ``input_sha256`` the SHA-256 of the exact agent input (the trace's);
* executor entries may carry ``tool_invocations`` (§13 ledger entries); the
  run's tool ledger — what the rule evaluator checks citations against — is
  their concatenation in entry order.

Resume: supervisor, planner and reporter calls are re-sent with the identical
input as the same attempt; an interrupted executor call (its tools may have
run) is never re-sent: it is folded as a ``non_retryable`` failure
``interrupted: outcome unknown`` (→ ``EXECUTOR_FAILED``).

Serialising and signing use the shared functions of
:mod:`diagnosis_core.journal` (``journal_to_json``, ``journal_to_wire``,
``sign_journal``, ``sign_entry``), which accept an :class:`AiOpsJournal`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import attrs

from .._kernel.journal.codec import (
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    JournalForm,
    journal_document_from_json,
    load_journal_document,
)
from .._kernel.journal.fold import (
    ExpectedCallBase,
    JournalRecorderBase,
    JournalSpec,
    JournalStatusBase,
    ListSinkBase,
    agent_outcome,
    agent_result,
    fold,
    resume,
    status_fields,
)
from .._kernel.journal.mac import JournalHead
from .._kernel.json import sha256_text
from .._kernel.results import AgentFailed, AgentReplied
from ._enums import AiOpsAgent
from ._machine import (
    AiOpsFinished,
    AiOpsRequest,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from ._request_codec import aiops_request_to_wire, load_aiops_request

__all__ = [
    "AIOPS_JOURNAL_FORMAT",
    "AIOPS_JOURNAL_FORMAT_V1",
    "AiOpsExpectedCall",
    "AiOpsJournal",
    "AiOpsJournalEntry",
    "AiOpsJournalRecorder",
    "AiOpsJournalSink",
    "AiOpsJournalStatus",
    "ListAiOpsJournalSink",
    "aiops_expected_call",
    "aiops_journal_from_json",
    "aiops_journal_status",
    "aiops_request_to_wire",
    "fold_aiops_journal",
    "load_aiops_journal",
    "resume_aiops_journal",
]

AIOPS_JOURNAL_FORMAT = "aiops_journal_v2"
"""The ``format`` new AIOps journals are written in (v2: spec §12.2, §12.3)."""

AIOPS_JOURNAL_FORMAT_V1 = "aiops_journal_v1"
"""The ``format`` of AIOps journals written before v2; still read, folded and replayed."""


_FORM = JournalForm(
    format=AIOPS_JOURNAL_FORMAT,
    calls=AiOpsAgent,
    executor=AiOpsAgent.EXECUTOR,
    gatekeeper=frozenset(),
    request_type=AiOpsRequest,
    request_to_wire=aiops_request_to_wire,
    load_request=load_aiops_request,
    v1_format=AIOPS_JOURNAL_FORMAT_V1,
)


@attrs.frozen
class AiOpsJournalEntry(JournalEntryBase[AiOpsAgent]):
    """One agent call of an AIOps run and, once finished, what came back.

    ``round`` is the supervisor step, ``input_sha256`` the SHA-256 hex of the
    exact agent input. Only executor entries carry ``tool_invocations``.
    Construction raises :class:`JournalError`.
    """

    _form: ClassVar[JournalForm] = _FORM


@attrs.frozen
class AiOpsJournal(JournalBase[AiOpsRequest, AiOpsJournalEntry]):
    """The durable record of one AIOps run: the request and its entries in call order."""

    _form: ClassVar[JournalForm] = _FORM
    _entry_type: ClassVar[type[JournalEntryBase[Any]]] = AiOpsJournalEntry


@attrs.frozen
class AiOpsExpectedCall(ExpectedCallBase[AiOpsAgent]):
    """The agent call the AIOps machine asks for: what a journal entry must say.

    ``round`` is the supervisor step; :meth:`describe` says ``executor step 2 attempt 1``.
    """

    _round_name: ClassVar[str] = "step"


def aiops_expected_call(action: InvokeAiOpsAgent) -> AiOpsExpectedCall:
    """The entry header an action must be recorded under: agent, step, attempt, input hash."""
    return AiOpsExpectedCall(action.agent, action.step, action.attempt, sha256_text(action.input))


_SPEC: JournalSpec[
    AiOpsJournal, AiOpsState, InvokeAiOpsAgent, AgentReplied | AgentFailed, AiOpsExpectedCall
] = JournalSpec(
    journal_type=AiOpsJournal,
    start=start_aiops,
    next_action=next_aiops_action,
    advance=advance_aiops,
    finished_type=AiOpsFinished,
    expected_call=aiops_expected_call,
    entry_result=agent_result,
    outcome_of=agent_outcome,
    resent=frozenset({AiOpsAgent.SUPERVISOR, AiOpsAgent.PLANNER, AiOpsAgent.REPORTER}),
    optionally_resent=frozenset({AiOpsAgent.EXECUTOR}),
    round_name="step",
)


@attrs.frozen
class AiOpsJournalStatus(
    JournalStatusBase[AiOpsState, InvokeAiOpsAgent | AiOpsFinished, AiOpsExpectedCall]
):
    """What folding an AIOps journal found: the state, and whether the run is done.

    ``interrupted`` is the last entry when it is ``started``; ``state`` is
    then the state *before* it. ``action`` is what the machine asks for next.
    """

    _spec: ClassVar[JournalSpec[Any, Any, Any, Any, Any]] = _SPEC

    interrupted: AiOpsJournalEntry | None = None


def aiops_journal_status(
    journal: AiOpsJournal, *, key: bytes | None = None, head: JournalHead | None = None
) -> AiOpsJournalStatus:
    """Fold and verify an AIOps journal; the first problem is a :class:`JournalError`.

    Exactly the chat journal's checks (``journal_status``): with ``key`` every
    ``mac`` first, then each entry must be the call the machine asks for
    (agent, step, attempt, input hash), ``seq`` counts from 1, nothing
    follows END, and only the last entry may be ``started``; the end marker
    and ``head`` as there (spec §12.2).
    """
    state, action, interrupted, ended = fold(_SPEC, journal, key, head)
    assert isinstance(action, InvokeAiOpsAgent | AiOpsFinished)
    return AiOpsJournalStatus(state, action, interrupted, **status_fields(journal, key, ended))


def fold_aiops_journal(
    journal: AiOpsJournal, *, key: bytes | None = None, head: JournalHead | None = None
) -> AiOpsState:
    """The state an AIOps journal folds to (see :func:`aiops_journal_status`)."""
    return fold(_SPEC, journal, key, head)[0]


def resume_aiops_journal(
    journal: AiOpsJournal,
    *,
    key: bytes | None = None,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> tuple[AiOpsJournal, AiOpsState]:
    """Apply the resume rule; returns the journal and the state to continue from.

    An interrupted supervisor, planner or reporter call is left as it is: the
    state's next action is that same call with the identical input as the
    same attempt, and the recorder reuses the started entry's ``seq``. An
    interrupted executor call is finished (signed with ``key`` when given) as
    a ``non_retryable`` failure ``interrupted: outcome unknown`` — never
    re-sent, its tools may have run — so the run goes on to
    ``EXECUTOR_FAILED`` (a v2 entry keeps the tool calls that finished).
    With ``resend_executor`` (the host declares its tools replay-safe, spec
    §12.3) it is re-sent as the same attempt instead, and the driver answers
    each tool call identical to a recorded one from the journal. The host
    persists the returned journal's last entry.
    """
    resend = frozenset({AiOpsAgent.EXECUTOR}) if resend_executor else frozenset()
    return resume(_SPEC, journal, key, resend, head)


class AiOpsJournalSink(Protocol):
    """Where a host persists an AIOps journal as the run goes.

    ``write`` receives each ``started`` entry *before* its agent runs, then
    the ``finished`` entry with the same ``seq``, which replaces it; during an
    executor call, the started entry again each time a tool call finishes
    (spec §12.3); once the run has ended, the :class:`JournalEnd` marker. A
    sink that raises stops the run before the effect.
    """

    def write(self, entry: AiOpsJournalEntry | JournalEnd, /) -> None: ...


# As ``ListJournalSink``: ``ListAiOpsJournalSink[AiOpsJournalEntry]`` is the bare sink.
if TYPE_CHECKING:
    from typing_extensions import TypeVar as _DefaultTypeVar

    _Entry = _DefaultTypeVar("_Entry", bound=AiOpsJournalEntry, default=AiOpsJournalEntry)
else:
    from typing import TypeVar as _DefaultTypeVar

    _Entry = _DefaultTypeVar("_Entry", bound=AiOpsJournalEntry)


class ListAiOpsJournalSink(ListSinkBase[_Entry]):
    """An in-memory :class:`AiOpsJournalSink`: :attr:`entries` holds the persisted entries."""

    def journal(self, request: AiOpsRequest) -> AiOpsJournal:
        """The persisted entries (and end marker) as the journal of ``request``."""
        return AiOpsJournal(request, tuple(self.entries), end=self.end)


class AiOpsJournalRecorder(
    JournalRecorderBase[
        AiOpsJournal, InvokeAiOpsAgent, AgentReplied | AgentFailed, AiOpsJournalEntry
    ]
):
    """The journal side of an AIOps driver loop (the shared builder, for this workflow).

    ``begin(action)`` writes the started entry to the sink; ``end(result,
    tool_invocations=…)`` writes the finished entry and returns the result
    the machine must be fed (:func:`advance_aiops`).
    """

    _spec: ClassVar[JournalSpec[Any, Any, Any, Any, Any]] = _SPEC


def load_aiops_journal(data: object) -> AiOpsJournal:
    """Validate an AIOps journal document (plain JSON data) strictly; problems name the path."""
    return load_journal_document(AiOpsJournal, data)


def aiops_journal_from_json(text: str) -> AiOpsJournal:
    """Parse AIOps journal text strictly and :func:`load_aiops_journal` it."""
    return journal_document_from_json(AiOpsJournal, text)
