"""The run journal (protocol §12): persist facts, derive conclusions.

A run's durable record is its journal: the request and every effect outcome,
in call order — what the agents, the gatekeeper and the tools returned, never
a conclusion. :func:`fold_journal` rebuilds the state by walking the machine
over those facts, so whatever a journal holds goes through the same parsers,
normalization and projections as a live reply, and a stored "verdict" cannot
exist. Folding also verifies: every entry must be the call the machine asks
for at that point (same call, round, attempt and input hash), so tampering,
corruption and a core that would route a recorded run differently are
:class:`JournalError`\\ s naming the entry. With a host key, entries are chained
with HMAC-SHA256 (:func:`sign_journal`) and every edit is refused.

The AIOps flow's journal (``aiops_journal_v1``, in :mod:`diagnosis_core.aiops`) is
the same kernel with its own call names; :func:`journal_to_json`,
:func:`journal_to_wire`, :func:`sign_journal`, :func:`sign_entry` and
:func:`entry_mac` accept either workflow's journal.

``import diagnosis_core`` does not load this module.
"""

from __future__ import annotations

from ._errors import JournalError
from ._journal import (
    INTERRUPTED_MESSAGE,
    ExpectedCall,
    JournalRecorder,
    JournalSink,
    JournalStatus,
    ListJournalSink,
    append_entry,
    entry_result,
    expected_call,
    finish_entry,
    fold_journal,
    journal_status,
    journal_to_scenario,
    journal_tool_records,
    outcome_of,
    recorded_tool_invocations,
    replay_journal,
    resume_journal,
    start_entry,
)
from ._journal_mac import (
    JournalHead,
    entry_mac,
    journal_head,
    request_mac,
    sign_entry,
    sign_journal,
)
from ._journal_wire import (
    JOURNAL_FORMAT,
    JOURNAL_FORMAT_V1,
    EntryState,
    Journal,
    JournalCall,
    JournalEnd,
    JournalEntry,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedReply,
    RecordedToolError,
    RecordedToolInvocation,
    journal_from_json,
    journal_to_json,
    journal_to_wire,
    load_journal,
)

__all__ = [
    "INTERRUPTED_MESSAGE",
    "JOURNAL_FORMAT",
    "JOURNAL_FORMAT_V1",
    "EntryState",
    "ExpectedCall",
    "Journal",
    "JournalCall",
    "JournalEnd",
    "JournalEntry",
    "JournalError",
    "JournalHead",
    "JournalOutcome",
    "JournalRecorder",
    "JournalSink",
    "JournalStatus",
    "ListJournalSink",
    "RecordedAgentError",
    "RecordedGatekeeperError",
    "RecordedGatekeeperResult",
    "RecordedReply",
    "RecordedToolError",
    "RecordedToolInvocation",
    "append_entry",
    "entry_mac",
    "entry_result",
    "expected_call",
    "finish_entry",
    "fold_journal",
    "journal_from_json",
    "journal_head",
    "journal_status",
    "journal_to_json",
    "journal_to_scenario",
    "journal_to_wire",
    "journal_tool_records",
    "load_journal",
    "outcome_of",
    "recorded_tool_invocations",
    "replay_journal",
    "request_mac",
    "resume_journal",
    "sign_entry",
    "sign_journal",
    "start_entry",
]
