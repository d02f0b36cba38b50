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

The walk, the resume rule, the builder and the sinks are the workflow-free
kernel of ``_kernel/journal/fold.py``, applied to the chat workflow's
descriptor :data:`DIAGNOSIS_WORKFLOW` (``workflow.py``, where the recorded
facts are decided); this module is its typed public functions.

Decisions where the spec is silent:

* :func:`journal_to_scenario` converts a *complete* journal only, and by
  default only when the §9 scripted doubles reproduce every recorded error
  message exactly (see there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

import attrs

from .._kernel.errors import JournalError
from .._kernel.journal.codec import (
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedReply,
    RecordedToolInvocation,
    journal_document_from_json,
    load_journal_document,
    recorded_tool_invocations,
)
from .._kernel.journal.fold import (
    INTERRUPTED_MESSAGE,
    DefaultTypeVar,
    JournalRecorderBase,
    JournalStatusBase,
    ListSinkBase,
    fold,
    inexact,
    require_complete,
    resume,
    scenario_response,
    scripted_message,
)
from .._kernel.journal.fold import (
    append_entry as _append_entry,
)
from .._kernel.journal.fold import (
    finish_entry as _finish_entry,
)
from .._kernel.journal.fold import (
    start_entry as _start_entry,
)
from .._kernel.journal.mac import JournalHead, request_seed
from .._kernel.journal.status import journal_status_of
from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import JsonValue
from .enums import AgentName
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
    JOURNAL_FORMAT_V1,
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
    "JOURNAL_FORMAT_V1",
    "ExpectedCall",
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
    "fold_journal",
    "journal_from_json",
    "journal_status",
    "journal_to_scenario",
    "journal_tool_records",
    "load_journal",
    "outcome_of",
    "recorded_tool_invocations",
    "replay_journal",
    "request_mac",
    "request_to_wire",
    "resent_on_resume",
    "resume_journal",
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


@attrs.frozen
class Journal(JournalBase[DiagnosisRequest, JournalEntry]):
    """The durable record of one run: the request and its entries in call order (spec §12)."""

    _form: ClassVar[DiagnosisWorkflow] = DIAGNOSIS_WORKFLOW
    _entry_type: ClassVar[type[JournalEntryBase[Any]]] = JournalEntry


def load_journal(data: object) -> Journal:
    """Validate a journal document (plain JSON data) strictly; every problem names its path.

    This checks the *form* only; :func:`fold_journal` checks that the entries
    are the calls the run makes.
    """
    return load_journal_document(Journal, data)


def journal_from_json(text: str) -> Journal:
    """Parse journal text strictly (:func:`loads_stored`) and :func:`load_journal` it."""
    return journal_document_from_json(Journal, text)


def request_mac(request: DiagnosisRequest, key: bytes) -> str:
    """The chain's seed: HMAC-SHA256 of the request's canonical JSON (UTF-8)."""
    return request_seed(request_to_wire(request), key)

# --- fold and verify ---------------------------------------------------------------


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


def journal_status(
    journal: Journal, *, key: bytes | None = None, head: JournalHead | None = None
) -> JournalStatus:
    """Fold and verify ``journal`` (spec §12); the first problem is a :class:`JournalError`.

    With ``key``, every entry's ``mac`` is checked first (a missing or wrong
    one names the entry); without, ``mac`` fields are ignored. Then each
    entry must be the call the machine asks for, ``seq`` must count from 1,
    nothing may follow END, and only the last entry may be ``started``; a
    ``derived`` gatekeeper result must equal the reference gatekeeper's over
    the recorded tool calls (§12.4); an end marker must follow END and cover
    every entry. With ``head`` (and ``key``), a journal shorter than the head
    or diverging from it is refused (§12.2). With ``key``, a v2 journal is
    :attr:`~JournalStatus.complete` only with its signed end marker.
    """
    return journal_status_of(JournalStatus, journal, key, head)


def fold_journal(
    journal: Journal, *, key: bytes | None = None, head: JournalHead | None = None
) -> DiagnosisState:
    """The state ``journal`` folds to (see :func:`journal_status` for what is checked).

    A journal that ends before the run does, or whose last entry is
    ``started``, folds to the state before the missing effect; use
    :func:`journal_status` to learn which call that is.
    """
    return fold(DIAGNOSIS_WORKFLOW, journal, key, head)[0]


# --- resume ------------------------------------------------------------------------


def resent_on_resume(
    call: JournalCall, *, resend_gatekeeper: bool = False, resend_executor: bool = False
) -> bool:
    """Whether an interrupted ``call`` is re-sent when a run resumes (spec §12 Resume).

    Planner, verifier and composer calls are re-sent with the identical input
    as the same attempt; an executor call only when the host declares its
    tools replay-safe (``resend_executor``, spec §12.3: they may have run),
    and a gatekeeper call only when the host asks for it (``resend_gatekeeper``:
    it is read-only). The rule is :data:`DIAGNOSIS_WORKFLOW`'s
    (:meth:`Workflow.resent_on_resume`), which :func:`resume_journal` and
    every engine adapter read.
    """
    return DIAGNOSIS_WORKFLOW.resent_on_resume(
        call, resend_gatekeeper=resend_gatekeeper, resend_executor=resend_executor
    )


def resume_journal(
    journal: Journal,
    *,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    resend_executor: bool = False,
    head: JournalHead | None = None,
) -> tuple[Journal, DiagnosisState]:
    """Apply the resume rule of spec §12; returns the journal and the state to continue from.

    When the last entry is ``started`` (the process died during that effect):

    * planner, verifier, composer: nothing is completed; the state is the one
      before the call, whose next action is that same call with the identical
      input *as the same attempt* — :func:`start_entry` then reuses the
      entry's ``seq``;
    * executor: its tools may have run, so it is never re-sent: the entry is
      finished as a ``non_retryable`` failure with :data:`INTERRUPTED_MESSAGE`
      (→ ``EXECUTOR_FAILED``);
    * gatekeeper: finished as a gatekeeper error with the same message
      (→ ``GATEKEEPER_UNAVAILABLE``), unless ``resend_gatekeeper`` (it is
      read-only), which treats it like an LLM call.

    With ``resend_executor`` (the host declares its tools replay-safe, spec
    §12.3) an interrupted executor call is left started too: it is re-sent
    as the same attempt, and the driver answers each tool call identical to
    one the entry records from the journal (see ``run_diagnosis``). A v2
    journal records the tool calls that finished during the interrupted
    executor call; the default keeps them on the failed entry.

    A completed entry is signed with ``key`` when one is given; the host
    persists the journal's last entry (it replaces the started one). A later
    :func:`fold_journal` of the returned journal gives the returned state.
    ``head`` is checked as by :func:`journal_status`.
    """
    return resume(
        DIAGNOSIS_WORKFLOW, journal, key, resend_gatekeeper=resend_gatekeeper,
        resend_executor=resend_executor, head=head,
    )


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
    entry: JournalEntry = _start_entry(DIAGNOSIS_WORKFLOW, journal, action, key, derived)
    return entry


def finish_entry(
    journal: Journal,
    result: EffectResult,
    *,
    tool_invocations: Sequence[RecordedToolInvocation] | None = None,
    key: bytes | None = None,
) -> JournalEntry:
    """The ``finished`` entry for the journal's last (``started``) entry and ``result``.

    ``tool_invocations`` (executor calls only) are the §13 ledger entries
    recorded during the call. Feed the machine :func:`entry_result` of the
    returned entry, not ``result`` itself.
    """
    entry: JournalEntry = _finish_entry(DIAGNOSIS_WORKFLOW, journal, result, tool_invocations, key)
    return entry


def append_entry(journal: Journal, entry: JournalEntry) -> Journal:
    """``journal`` with ``entry``: appended, or replacing the last entry when it has the same seq.

    Only a ``started`` last entry can be replaced (by its finished entry or,
    on a resumed re-send, by itself).
    """
    return _append_entry(journal, entry)


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


# --- tool invocations (spec §13) ------------------------------------------------------


def journal_tool_records(journal: Journal) -> list[dict[str, JsonValue]]:
    """Every tool invocation the journal's executor entries carry, as §13 ledger entries.

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


# --- a journal is a replay ---------------------------------------------------------


def _gatekeeper_error_entry(
    outcome: RecordedGatekeeperError, exact: bool, where: str
) -> JsonValue:
    message = scripted_message(outcome.message, "NonRetryableError")
    if message == "":
        message = None  # the scripted gatekeeper never raises with an empty message
    if message is not None:
        return {"error": {"message": message}}
    return {"error": {"message": inexact(outcome.message, exact, where)}}


def journal_to_scenario(
    journal: Journal,
    *,
    key: bytes | None = None,
    exact: bool = True,
    head: JournalHead | None = None,
) -> dict[str, JsonValue]:
    """The §9 scenario equivalent to a complete journal, for bug reports and regression suites.

    Each agent's recorded outcomes in call order become its ``responses``,
    the gatekeeper's its ``gatekeeper`` entries, and the request gives
    ``question``, ``run``, ``history``, ``skills`` and ``config``; then
    ``replay(journal_to_scenario(j))`` equals :func:`replay_journal` of ``j``
    byte for byte as JSON.

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
    responses: dict[str, list[JsonValue]] = {agent.value: [] for agent in AgentName}
    gatekeeper: list[JsonValue] = []
    for index, entry in enumerate(journal.entries):
        outcome, where = entry.outcome, f"entries[{index}]"
        if isinstance(outcome, RecordedReply | RecordedAgentError):
            responses[entry.call.value].append(scenario_response(outcome, exact, where))
        elif isinstance(outcome, RecordedGatekeeperResult):
            gatekeeper.append({"result": outcome.result})
        else:
            assert isinstance(outcome, RecordedGatekeeperError)
            gatekeeper.append(_gatekeeper_error_entry(outcome, exact, where))
    scenario: dict[str, JsonValue] = dict(request_to_wire(journal.request))
    scripted: dict[str, JsonValue] = {}
    for agent, items in responses.items():
        scripted[agent] = items
    scenario["responses"] = scripted
    scenario["gatekeeper"] = gatekeeper
    return scenario


def replay_journal(
    journal: Journal, *, key: bytes | None = None, head: JournalHead | None = None
) -> dict[str, JsonValue]:
    """The §9 output of the run a complete journal records (the same shape as ``replay``).

    Verified like :func:`journal_status`; an incomplete journal (with ``key``:
    a v2 one without its signed end marker) is a :class:`JournalError`.
    """
    status = journal_status(journal, key=key, head=head)
    require_complete(status)
    wire = to_wire(status.state.result)
    assert isinstance(wire, dict)
    return wire
