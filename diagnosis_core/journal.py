"""The run journal (protocol §12): persist facts, derive conclusions.

A run's durable record is its journal: the request and every effect outcome,
in call order — what the agents, the gatekeeper and the tools returned, never
a conclusion. :func:`fold_journal` rebuilds the state by walking the machine
over those facts, so whatever a journal holds goes through the same parsers,
normalization and projections as a live reply, and a stored "verdict" cannot
exist. Folding also verifies: every entry must be the call the machine asks
for at that point (same call, round, attempt and input hash), so tampering,
corruption and a core that would route a recorded run differently are
:class:`JournalError`\\ s naming the entry. New journals are written as
``diagnosis_journal_v2`` (``diagnosis_journal_v1`` journals still load, fold and
replay byte for byte): each entry's input hash is bound to the request, so another
run's entries never fold under it, even without a key.

With a host key, entries are chained with HMAC-SHA256 (:func:`sign_journal`),
``started`` and ``finished`` forms in separate domains, and a complete journal ends
with a signed end marker (:class:`JournalEnd`) covering the entry count. An attacker
who can write the store but holds no key cannot edit, insert, reorder or graft
entries, nor make an incomplete journal complete; what remains possible is to **cut
the journal to a prefix**, which resumes as an interrupted run (spec §12.2). A host
that keeps the :class:`JournalHead` (:func:`journal_head`: entry count and last
``mac``) outside the store and passes ``head=`` refuses the cut as well.

The AIOps flow's journal (``aiops_journal_v2``: :class:`AiOpsJournal`,
:class:`AiOpsJournalRecorder`, :func:`aiops_journal_ledger`, …) is the same kernel with
its own call names; :func:`journal_status`, :func:`fold_journal`, :func:`resume_journal`,
:func:`replay_journal`, :func:`journal_to_scenario`, :func:`journal_to_json`,
:func:`journal_to_wire` and :func:`sign_journal` accept either workflow's journal.

An engine adapter (a durable-execution engine driving the machine, like the
LangGraph and Temporal adapters) needs only this module and
:mod:`diagnosis_core.machine`: the entry builder (:func:`start_entry`,
:func:`finish_entry`, :func:`entry_result`), the resume rule
(:func:`resent_on_resume`, :func:`resume_journal`) and the codec
(:func:`entry_to_wire`, :func:`outcome_to_wire`, :func:`load_outcome`,
:func:`request_to_wire`, :func:`stored_json`); see ``docs/adapters.md``.

The store port (spec §16) is here too: :class:`JournalStore`, the protocol a
driver given ``store=`` writes through, with the values it takes and returns
(:class:`RunClaim`, :class:`StoredRun`, :class:`RunSummary`, :class:`Feedback`,
:class:`JournalBase` and :class:`JournalEntryBase`, the journal and entry classes
both workflows share) and the errors a store raises (:class:`StoreError`,
:class:`RunClaimedError`, :class:`MissingKeyError`). A store of one's own needs
nothing else; the stores of :mod:`diagnosis_core.stores` are built on these names.

``import diagnosis_core`` does not load this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._aiops import AIOPS_NAMES
from ._chat.entries import (
    entry_from_json,
    entry_to_json,
)
from ._chat.journal import (
    INTERRUPTED_MESSAGE,
    JOURNAL_FORMAT,
    Journal,
    JournalCall,
    JournalEntry,
    JournalRecorder,
    JournalSink,
    JournalStatus,
    ListJournalSink,
    append_entry,
    entry_result,
    expected_call,
    finish_entry,
    outcome_of,
    recorded_tool_invocations,
    request_to_wire,
    resent_on_resume,
    start_entry,
)
from ._kernel.journal.codec import (
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    entry_to_wire,
    journal_to_json,
    journal_to_wire,
    load_outcome,
    outcome_to_wire,
    stored_json,
)
from ._kernel.journal.fold import (
    fold_journal,
    journal_status,
    journal_to_scenario,
    journal_tool_records,
    replay_journal,
    resume_journal,
)
from ._kernel.journal.mac import (
    JournalHead,
    journal_head,
    sign_journal,
)
from ._kernel.journal.recorded import (
    EntryState,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedReply,
    RecordedToolInvocation,
)
from ._kernel.journal.store import (
    Feedback,
    JournalStore,
    MissingKeyError,
    RunClaim,
    RunClaimedError,
    RunSummary,
    StoredRun,
    StoreError,
)
from ._kernel.public import lazy_module

if TYPE_CHECKING:
    from ._aiops.journal import (
        AiOpsJournal,
        AiOpsJournalRecorder,
        AiOpsJournalStatus,
        ListAiOpsJournalSink,
    )
    from ._aiops.request_codec import aiops_request_to_wire
    from ._aiops.workflow import aiops_expected_call, aiops_journal_ledger

__all__ = [
    "INTERRUPTED_MESSAGE",
    "JOURNAL_FORMAT",
    "EntryState",
    "Feedback",
    "Journal",
    "JournalBase",
    "JournalCall",
    "JournalEnd",
    "JournalEntry",
    "JournalEntryBase",
    "JournalHead",
    "JournalOutcome",
    "JournalRecorder",
    "JournalSink",
    "JournalStatus",
    "JournalStore",
    "ListJournalSink",
    "MissingKeyError",
    "RecordedAgentError",
    "RecordedGatekeeperError",
    "RecordedGatekeeperResult",
    "RecordedReply",
    "RecordedToolInvocation",
    "RunClaim",
    "RunClaimedError",
    "RunSummary",
    "StoreError",
    "StoredRun",
    "append_entry",
    "entry_from_json",
    "entry_result",
    "entry_to_json",
    "entry_to_wire",
    "expected_call",
    "finish_entry",
    "fold_journal",
    "journal_head",
    "journal_status",
    "journal_to_json",
    "journal_to_scenario",
    "journal_to_wire",
    "journal_tool_records",
    "load_outcome",
    "outcome_of",
    "outcome_to_wire",
    "recorded_tool_invocations",
    "replay_journal",
    "request_to_wire",
    "resent_on_resume",
    "resume_journal",
    "sign_journal",
    "start_entry",
    "stored_json",
]
__all__ += [  # the AIOps workflow's, loaded on first use (``_aiops/__init__.py``)
    "AiOpsJournal", "AiOpsJournalRecorder", "AiOpsJournalStatus", "ListAiOpsJournalSink",
    "aiops_expected_call", "aiops_journal_ledger", "aiops_request_to_wire",
]

if not TYPE_CHECKING:  # mypy reads the TYPE_CHECKING imports: a misspelt name stays an error
    __getattr__, __dir__ = lazy_module(__name__, __package__, AIOPS_NAMES[__name__], globals())
