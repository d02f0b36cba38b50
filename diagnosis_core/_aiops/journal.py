"""The AIOps run journal ``aiops_journal_v2`` (spec §12, last bullet; spec §11).

``aiops_journal_v1`` is still read, folded and replayed. The same journal as
the chat diagnosis's — the same entries, fold-and-verify
walk, resume rule, builder, sinks and HMAC chain, all the shared kernel's
(``_kernel/journal/``), whose fold, status, resume and replay functions take
this journal too — with this workflow's own parts (``workflow.py``):

* ``format`` is ``aiops_journal_v2``; ``request`` is the :class:`AiOpsRequest`
  wire form ``{"run", "alerts", "config"}``;
* ``call`` is one of the four agents, ``supervisor|planner|executor|reporter``
  (there is no gatekeeper in this flow), and every outcome is an agent's:
  ``{"text"}`` or ``{"error": {"kind", "message"}}``;
* ``round`` is the supervisor step the call belongs to, ``attempt`` its
  attempt, ``input_sha256`` the SHA-256 of the exact agent input (the trace's);
* executor entries may carry ``tool_invocations`` (§13 ledger entries); the
  run's tool ledger — what the rule evaluator checks citations against — is
  their concatenation in entry order.

Resume follows the workflow's rule (``workflow.py``): an interrupted executor
call that is not re-sent (its tools may have run) is folded as a
``non_retryable`` failure ``interrupted: outcome unknown`` (→ ``EXECUTOR_FAILED``).

Serialising and signing use the shared functions of
:mod:`diagnosis_core.journal` (``journal_to_json``, ``journal_to_wire``,
``sign_journal``, ``sign_entry``), which accept an :class:`AiOpsJournal`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import attrs

from .._kernel.journal.codec import JournalBase, JournalEnd, JournalEntryBase
from .._kernel.journal.fold import (
    DefaultTypeVar,
    JournalRecorderBase,
    JournalStatusBase,
    ListSinkBase,
)
from .._kernel.machine.results import AgentFailed, AgentReplied
from .enums import AiOpsAgent
from .machine import AiOpsFinished, AiOpsRequest, AiOpsState, InvokeAiOpsAgent
from .workflow import AIOPS_WORKFLOW, AiOpsExpectedCall, AiOpsWorkflow

__all__ = [
    "AiOpsJournal",
    "AiOpsJournalEntry",
    "AiOpsJournalRecorder",
    "AiOpsJournalSink",
    "AiOpsJournalStatus",
    "ListAiOpsJournalSink",
]

@attrs.frozen
class AiOpsJournalEntry(JournalEntryBase[AiOpsAgent]):
    """One agent call of an AIOps run and, once finished, what came back.

    ``round`` is the supervisor step, ``input_sha256`` the SHA-256 hex of the
    exact agent input. Only executor entries carry ``tool_invocations``.
    Construction raises :class:`JournalError`.
    """

    _form: ClassVar[AiOpsWorkflow] = AIOPS_WORKFLOW


@attrs.frozen
class AiOpsJournalStatus(
    JournalStatusBase[AiOpsState, InvokeAiOpsAgent | AiOpsFinished, AiOpsExpectedCall]
):
    """What folding an AIOps journal found: the state, and whether the run is done.

    ``interrupted`` is the last entry when it is ``started``; ``state`` is
    then the state *before* it. ``action`` is what the machine asks for next.
    """

    _workflow: ClassVar[AiOpsWorkflow] = AIOPS_WORKFLOW

    interrupted: AiOpsJournalEntry | None = None


@attrs.frozen
class AiOpsJournal(JournalBase[AiOpsRequest, AiOpsJournalEntry]):
    """The durable record of one AIOps run: the request and its entries in call order.

    ``journal_status``, ``fold_journal`` and ``resume_journal`` of
    :mod:`diagnosis_core.journal` fold, verify and resume it.
    """

    _form: ClassVar[AiOpsWorkflow] = AIOPS_WORKFLOW
    _entry_type: ClassVar[type[JournalEntryBase[Any]]] = AiOpsJournalEntry
    _status_type: ClassVar[type[AiOpsJournalStatus]] = AiOpsJournalStatus


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
_Entry = DefaultTypeVar("_Entry", bound=AiOpsJournalEntry, default=AiOpsJournalEntry)


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

    _workflow: ClassVar[AiOpsWorkflow] = AIOPS_WORKFLOW
