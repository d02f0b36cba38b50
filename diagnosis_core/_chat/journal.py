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

The walk, the resume rule and the builder are methods of the kernel's
:class:`Workflow` class (``_kernel/journal/workflow.py``), written once; the
chat workflow's subclass (``workflow.py``, where the recorded facts are
decided) overrides the machine, the header and the facts. This module holds
the chat journal's classes and the chat builder functions (methods of
:data:`DIAGNOSIS_WORKFLOW`, bound to it); the fold, status, resume and replay
functions take either workflow's journal (``_kernel/journal/fold.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import attrs

from .._kernel.errors import JournalError
from .._kernel.journal.codec import (
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    recorded_tool_invocations,
)
from .._kernel.journal.fold import (
    INTERRUPTED_MESSAGE,
    DefaultTypeVar,
    JournalRecorderBase,
    JournalStatusBase,
    ListSinkBase,
    append_entry,
)
from .._kernel.journal.mac import request_seed
from .._kernel.wire.json import stored_json
from .machine import (
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisState,
    EffectResult,
    Finished,
    InvokeAgent,
)
from .request_codec import request_to_wire
from .workflow import (
    DIAGNOSIS_WORKFLOW,
    JOURNAL_FORMAT,
    DiagnosisWorkflow,
    ExpectedCall,
    JournalCall,
    entry_result,
    expected_call,
    outcome_of,
)

__all__ = [
    "INTERRUPTED_MESSAGE",
    "JOURNAL_FORMAT",
    "Journal",
    "JournalCall",
    "JournalEntry",
    "JournalRecorder",
    "JournalSink",
    "JournalStatus",
    "ListJournalSink",
    "append_entry",
    "entry_result",
    "expected_call",
    "finish_entry",
    "outcome_of",
    "recorded_tool_invocations",
    "request_mac",
    "request_to_wire",
    "resent_on_resume",
    "start_entry",
]


@attrs.frozen
class JournalEntry(JournalEntryBase[JournalCall]):
    """One effect of a chat run: the call the machine asked for and, once finished, its outcome.

    ``input_sha256`` is the SHA-256 hex of the exact agent input string, or
    for the gatekeeper of the canonical JSON of ``{"run_id",
    "executor_output"}``. A ``started`` entry has no outcome; a ``finished``
    one has an outcome that fits the call. ``tool_invocations`` only ever
    appear on finished executor entries. ``mac`` is the optional HMAC chain
    link (see ``_kernel/journal/mac.py``). Construction raises :class:`JournalError`.
    """

    _form: ClassVar[DiagnosisWorkflow] = DIAGNOSIS_WORKFLOW


def request_mac(request: DiagnosisRequest, key: bytes) -> str:
    """The chain's seed: HMAC-SHA256 of the request's canonical JSON (UTF-8)."""
    return request_seed(stored_json(request_to_wire(request)), key)

# --- the status; the resume rule and the builder: the workflow's methods -----------


@attrs.frozen
class JournalStatus(
    JournalStatusBase[DiagnosisState, InvokeAgent | CallGatekeeper | Finished, ExpectedCall]
):
    """What folding a journal found: the state, and whether the run is done.

    ``interrupted`` is the last entry when it is ``started`` (its process
    died during that effect); ``state`` is then the state *before* it.
    ``action`` is what the machine asks for next from ``state``.
    """

    _workflow: ClassVar[DiagnosisWorkflow] = DIAGNOSIS_WORKFLOW

    interrupted: JournalEntry | None = None


@attrs.frozen
class Journal(JournalBase[DiagnosisRequest, JournalEntry]):
    """The durable record of one run: the request and its entries in call order (spec §12)."""

    _form: ClassVar[DiagnosisWorkflow] = DIAGNOSIS_WORKFLOW
    _entry_type: ClassVar[type[JournalEntryBase[Any]]] = JournalEntry
    _status_type: ClassVar[type[JournalStatus]] = JournalStatus


resent_on_resume = DIAGNOSIS_WORKFLOW.resent_on_resume
finish_entry = DIAGNOSIS_WORKFLOW.finish_entry


# --- the builder -------------------------------------------------------------------


def start_entry(
    journal: Journal,
    action: InvokeAgent | CallGatekeeper,
    *,
    key: bytes | None = None,
    derived: bool = False,
) -> JournalEntry:
    """The ``started`` entry to persist before performing ``action``.

    Its ``seq`` is one past the last entry, or the last entry's own when that
    one is a ``started`` entry for the same call (a resumed call re-sent as
    the same attempt). Signed when ``key`` is given. ``derived`` marks a
    gatekeeper call performed by the package's reference gatekeeper over the
    run's own recorded tool calls (spec §12.4): folding then re-derives its
    result instead of reading it.
    """
    if derived and not isinstance(action, CallGatekeeper):
        raise JournalError("derived: only gatekeeper calls are derived")
    return DIAGNOSIS_WORKFLOW.start_entry(journal, action, key=key, derived=derived)


class JournalSink(Protocol):
    """Where a host persists a journal as the run goes (a file, a table, a queue).

    ``write`` receives each ``started`` entry *before* its effect runs, then
    the ``finished`` entry with the same ``seq``, which replaces it. During
    an executor call of a v2 journal, the started entry is written again
    (same ``seq``) each time a tool call finishes, listing the tool calls
    finished so far (spec §12.3). When the run has ended, ``write`` receives
    the :class:`JournalEnd` marker once. A sink that raises stops the run
    before the effect (the host decides what a failed write means); it never
    changes the machine's state.
    """

    def write(self, entry: JournalEntry | JournalEnd, /) -> None: ...


# ``ListJournalSink()`` is a ``ListJournalSink[JournalEntry]``, and so is the spelled-out
# ``ListJournalSink[JournalEntry]()``: a type variable with a default (PEP 696; see
# ``_kernel/journal/fold.py``).
_Entry = DefaultTypeVar("_Entry", bound=JournalEntry, default=JournalEntry)


class ListJournalSink(ListSinkBase[_Entry]):
    """An in-memory :class:`JournalSink`: :attr:`entries` holds the persisted entries.

    Give it the entries of a journal being resumed (``ListJournalSink(journal.entries)``)
    and :meth:`journal` is the whole journal as the resumed run goes on.
    """

    def journal(self, request: DiagnosisRequest) -> Journal:
        """The persisted entries (and end marker) as the journal of ``request``."""
        return Journal(request, tuple(self.entries), end=self.end)

class JournalRecorder(
    JournalRecorderBase[Journal, InvokeAgent | CallGatekeeper, EffectResult, JournalEntry]
):
    """The journal side of a driver loop: start, perform, finish, in that order.

    ``begin(action)`` writes the started entry to the sink and keeps it;
    ``end(result)`` writes the finished entry and returns the result the
    machine must be fed. ``progress(tool_invocations)`` rewrites a running
    executor's started entry with the tool calls finished so far (spec
    §12.3); ``close()`` writes the end marker once the machine has finished
    (spec §12.2) — a host driving its own loop calls it, or a signed journal
    never becomes complete; :attr:`head` is the :class:`JournalHead` to keep
    outside the store. :attr:`journal` is the journal so far. Pure apart
    from the sink calls; the effect itself is the caller's.
    """

    _workflow: ClassVar[DiagnosisWorkflow] = DIAGNOSIS_WORKFLOW
