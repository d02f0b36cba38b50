"""A session's whole story, and feedback as a fact (spec §16, seed 003 §2 and §8).

:func:`session_report` answers "one user question → agent steps → tool calls
→ verifier judgement → final answer → user feedback" for every run of a
session: each run's journal is folded (and verified with the host's key) and
everything is derived from that fold and the journal — nothing is stored a
second time. It is a :class:`SessionReport` value (wire form
``diagnosis_session_report_v2``, ``docs/stores.md``).

:func:`record_feedback` appends a rating (and optional comment) after a run's
end. It is a fact *about* the run, kept beside its journal: folding never
reads it. With a key it is signed: HMAC-SHA256 in its own domain
(``feedback\\x00``) over the previous link — the journal's last ``mac``, or
the previous feedback's — and the feedback's canonical JSON, so feedback
cannot be moved to another run, reordered or edited without the key. The
chain head is read and the new link written under the run's claim (waited
for, not refused), so concurrent feedback never forks the chain.

Every listing here goes on past a run it cannot read: :func:`listed_runs`
gives each listed run loaded, or the reason it is not, and the run is told as
``invalid`` with that reason (``docs/decisions.md``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import attrs

from .. import JournalError, to_wire
from ..journal import (
    Feedback,
    JournalStore,
    MissingKeyError,
    RunSummary,
    StoredRun,
    StoreError,
    journal_status,
)
from ._base import StoreBase, SummaryRow, wait_for_claim
from ._escape import text_line
from ._feedback import check_feedback, feedback_mac
from ._reports import SESSION_REPORT_FORMAT, FeedbackItem, RunStory, SessionReport
from ._sql import SqlStore
from ._story import (
    checked_feedback,
    failure_reasons,
    run_digest,
    run_story,
    verified_feedback,
    workflow_of,
)
from ._summary import (
    RunDigest,
    SummaryMismatch,
    describe_difference,
    digest_columns,
    paused_gc,
)

__all__ = [
    "SESSION_REPORT_FORMAT",
    "format_session_report",
    "listed_runs",
    "record_feedback",
    "run_story",
    "session_report",
    "stories",
    "unreadable_story",
    "verify_summaries",
]


def record_feedback(
    store: JournalStore,
    run_id: str,
    rating: int,
    comment: str | None = None,
    *,
    key: bytes | None = None,
) -> Feedback:
    """Append a user's feedback on a finished run (spec §16); returns the stored fact.

    ``rating`` is an integer from 1 to 5. The run must be in ``store`` and
    complete (feedback follows a run's end): otherwise a :class:`StoreError`.
    With ``key`` the journal is verified and the feedback signed; a signed
    run (its entries carry MACs) without ``key`` is :class:`MissingKeyError`,
    nothing written (an unsigned link would make it invalid under its key).
    The fold of the run is unchanged: feedback is never a journal entry.
    """
    check_feedback(rating, comment)
    if not isinstance(run_id, str) or not run_id:
        raise StoreError(f"run_id: expected a non-empty string, got {run_id!r}")
    stored = store.load(run_id)
    if stored is None:
        raise StoreError(f"run {run_id!r}: not in the store")
    # The chain head is read and the link written under one exclusion: the run's claim.
    with wait_for_claim(store, run_id) as claim:
        stored = store.load(run_id)
        assert stored is not None  # a stored run is never removed
        if key is None and stored.journal.signed:
            raise MissingKeyError(run_id, "record feedback on it")
        status = journal_status(stored.journal, key=key)
        if not status.complete:
            raise StoreError(f"run {run_id!r}: has not ended ({status.describe()}); "
                             "feedback follows a run's end")
        earlier = verified_feedback(stored, key)
        feedback = Feedback(rating, comment, len(stored.journal.entries))
        if key is not None:
            end = stored.journal.end
            last = end.mac if end is not None and end.mac else stored.journal.entries[-1].mac
            link = earlier[-1].mac if earlier else last
            assert link is not None  # verified above
            feedback = attrs.evolve(feedback, mac=feedback_mac(feedback, link, key))
        if isinstance(store, StoreBase):
            store.add_feedback(run_id, feedback, claim=claim)
        else:
            store.add_feedback(run_id, feedback)
    return feedback


# --- the story of one run -----------------------------------------------------------


def listed_runs(
    store: JournalStore, *, session_id: str | None = None, since: float | None = None
) -> Iterator[tuple[RunSummary, StoredRun | None, str | None]]:
    """Every listed run as ``(summary, stored, problem)``: loaded, or why it cannot be.

    A run the store cannot give back (a :class:`StoreError`: a payload that
    does not decode, a record that contradicts its payload, an inconsistent
    file) comes with ``stored`` None and the error's text as ``problem``; the
    listing goes on with the next run.
    """
    for summary in store.runs(session_id=session_id, since=since):
        try:
            stored = store.load(summary.run_id)
        except StoreError as error:
            yield summary, None, str(error)
            continue
        if stored is None:  # pragma: no cover - a listed run is stored
            yield summary, None, f"run {summary.run_id!r}: listed but not in the store"
            continue
        yield summary, stored, None


def unreadable_story(summary: RunSummary, problem: str) -> RunStory:
    """A run the store cannot give back, as a report tells it: ``invalid``, with the reason."""
    return RunStory(
        run_id=summary.run_id,
        session_id=summary.session_id,
        workflow=workflow_of(summary.format),
        created_at=summary.created_at,
        status="invalid",
        problem=problem,
    )


def _invalid(row: SummaryRow, problem: str) -> RunStory:
    return RunStory(run_id=row.run_id, session_id=row.session_id, workflow=workflow_of(row.format),
                    created_at=row.created_at, status="invalid", problem=problem)


def _from_summary(
    store: StoreBase, row: SummaryRow, feedback: list[tuple[str, float]], key: bytes | None
) -> RunStory | None:
    """The run's story from its stored summary and feedback; None when it has no usable summary."""
    if row.payload is None:
        return None
    try:
        digest = store.decode_summary(row.run_id, row.session_id, row.format, row.created_at,
                                      row.payload, row.fingerprint)
    except StoreError:
        return None  # a summary that does not decode is not used: the journal tells the run
    try:
        items = checked_feedback(row.run_id, store.decode_feedback(row.run_id, feedback),
                                 digest.last_mac, key)
    except (StoreError, JournalError) as error:
        return _invalid(row, str(error))
    story: RunStory = digest.story
    if not items:
        return story
    return attrs.evolve(story, feedback=tuple(
        FeedbackItem(item.rating, item.comment, item.after_seq, item.recorded_at)
        for item in items))


def _folded(
    store: StoreBase, row: SummaryRow, key: bytes | None, *, summarize: bool = True
) -> RunStory:
    """The run's story folded from its journal; an ended run's summary is stored on the way.

    ``summarize=False``: the caller stores it later (:meth:`StoreBase.summarize`).
    """
    try:
        stored = store.load(row.run_id)
    except StoreError as error:
        return _invalid(row, str(error))
    if stored is None:  # pragma: no cover - a listed run is stored
        return _invalid(row, f"run {row.run_id!r}: listed but not in the store")
    story = run_story(stored, key=key)
    if summarize and story.status == "complete" and store.summaries_writable():
        end = stored.journal.end
        entries = stored.journal.entries
        link = end.mac if end is not None and end.mac else (entries[-1].mac if entries else None)
        with contextlib.suppress(StoreError):
            store.put_summary(stored, RunDigest(attrs.evolve(story, feedback=()), link))
    return story


def stories(
    store: JournalStore, *, session_id: str | None = None, since: float | None = None,
    key: bytes | None = None,
) -> Iterator[RunStory]:
    """The story of every listed run, in the order the store first saw them.

    From a store of this package, a run with a stored summary is told from it
    and its feedback records (decoded, and their MAC chain verified with
    ``key``), with no fold; any other run is folded from its journal (and,
    when it has ended, its summary stored). A host's own store is folded run
    by run.
    """
    if not isinstance(store, StoreBase):
        for listed, stored, problem in listed_runs(store, session_id=session_id, since=since):
            if stored is None:
                yield unreadable_story(listed, problem or "")
            else:
                yield run_story(stored, key=key)
        return
    rows = store.summary_rows(session_id=session_id, since=since)
    feedback = store.feedback_rows(session_id=session_id, since=since)
    for row in rows:
        story = _from_summary(store, row, feedback.get(row.run_id, []), key)
        yield story if story is not None else _folded(store, row, key)


def session_report(
    store: JournalStore, session_id: str, *, key: bytes | None = None
) -> SessionReport:
    """Every run of ``session_id`` in the order the store first saw them (spec §16).

    A :class:`SessionReport` (wire form ``diagnosis_session_report_v2``,
    ``docs/stores.md``), each run a :class:`RunStory`. A run that has ended
    is told from its derived summary (spec §16, summaries, :func:`stories`); with
    ``key`` every feedback's MAC is verified, and every journal folded here
    (a run without a summary). :func:`verify_summaries` checks the summaries
    against the journals.
    """
    if not isinstance(session_id, str) or not session_id:
        raise StoreError(f"session_id: expected a non-empty string, got {session_id!r}")
    with paused_gc():  # every story lives on in the report: nothing to collect
        runs = tuple(stories(store, session_id=session_id, key=key))
    return SessionReport(session_id=session_id, runs=runs)


_cell = text_line


def format_session_report(report: SessionReport) -> str:
    """The session report as readable text (what ``diagnosis-core sessions show`` prints).

    Every stored string is one inert line (:func:`text_line`); an answer's
    own lines are kept, each made inert.
    """
    runs = report.runs
    lines = [f"session {_cell(report.session_id)}: {len(runs)} run(s)"]
    for story in runs:
        lines += ["", f"== run {_cell(story.run_id)} ({story.workflow}, {story.status})"]
        if story.status == "invalid":
            lines.append(f"   problem: {_cell(story.problem)}")
            continue
        if story.question is not None:
            lines.append(f"   question: {_cell(story.question)}")
        lines.append("   steps:")
        for step in story.agent_steps:
            lines.append(
                f"     {step.seq:>3} {step.node:<22} round {step.round} "
                f"attempt {step.attempt}  {step.status}  {_cell(step.reason_code)}"
            )
        lines.append(f"   tools: {len(story.tool_invocations)} call(s)")
        for tool in story.tool_invocations:
            state = "ok" if tool.success else "failed"
            error = tool.error
            detail = "" if error is None else f"  {_cell(error.type)}: {_cell(error.message)}"
            lines.append(f"     {_cell(tool.invocation_id)} {_cell(tool.tool_name)} "
                         f"{state}{detail}")
        for audit in story.gatekeeper_audits:
            lines.append(
                f"   gatekeeper round {audit.round}: {audit.status.value} "
                f"({audit.passed}/{audit.checked} passed) "
                f"{_cell(None if audit.reason_code is None else audit.reason_code.value)}"
            )
        for row in story.verifier_evaluations:
            lines.append(
                f"   verifier round {row.round} attempt {row.attempt}: {row.status} "
                f"model {_cell(row.model_verdict)} effective {_cell(row.effective_verdict)} "
                f"groundedness {_cell(row.groundedness_score)}"
            )
        lines.append(f"   outcome: {_cell(story.outcome)}   reason: {_cell(story.reason_code)}")
        reasons = failure_reasons(story)
        if reasons:
            lines.append("   why:")
            lines += [f"     {_cell(reason)}" for reason in reasons]
        if story.answer is not None:
            lines.append("   answer:")
            lines += [f"     {_cell(line)}" for line in story.answer.splitlines()]
        for item in story.feedback:
            lines.append(f"   feedback: {item.rating}/5 {_cell(item.comment)}")
    return "\n".join(lines) + "\n"


def verify_summaries(
    store: object, *, session_id: str | None = None, since: float | None = None,
    key: bytes | None = None,
) -> tuple[SummaryMismatch, ...]:
    """Fold every listed run's journal and list every run whose stored summary disagrees.

    A summary disagrees when it does not decode (sealed under another key,
    or copied to another run or left under a relabelled one), when its run's
    journal does not load or does not tell an ended run (verified with
    ``key``), when it is not the :func:`run_digest` of the journal, or — in a
    plain SQL store — when its columns are not that digest's
    :func:`digest_columns`. A run without a summary is not listed (a report
    folds it). A host's own store (not one of this package) keeps no
    summaries: nothing to list.
    """
    if not isinstance(store, StoreBase):
        return ()
    found: list[SummaryMismatch] = []
    for row in store.summary_rows(session_id=session_id, since=since):
        if row.payload is None:
            continue
        try:
            digest = store.decode_summary(row.run_id, row.session_id, row.format,
                                          row.created_at, row.payload, row.fingerprint)
            stored = store.load(row.run_id)
        except StoreError as error:
            found.append(SummaryMismatch(row.run_id, str(error)))
            continue
        expected = None if stored is None else run_digest(stored, key=key)
        if expected is None:
            found.append(SummaryMismatch(
                row.run_id, f"run {row.run_id!r}: a summary, but the journal does not tell an "
                "ended run (fold it: runs ls, sessions show)"))
            continue
        if expected != digest:
            place = describe_difference(to_wire(digest), to_wire(expected))
            found.append(SummaryMismatch(
                row.run_id, f"run {row.run_id!r} summary: {place} is not what the journal gives"))
            continue
        if isinstance(store, SqlStore) and not store.has_codec():
            columns = store.summary_columns(row.run_id)
            wanted = digest_columns(expected.story)
            wanted = attrs.evolve(wanted, latencies=tuple(sorted(wanted.latencies)))
            if columns != wanted or store.summary_last_mac(row.run_id) != expected.last_mac:
                found.append(SummaryMismatch(
                    row.run_id, f"run {row.run_id!r} summary: its columns are not what the "
                    "journal gives"))
    return tuple(found)
