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
import hmac
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from .._kernel.converter import to_wire
from .._kernel.errors import JournalError
from .._kernel.journal.store import MissingKeyError, is_signed
from .._kernel.json import canonical_json, loads_stored
from ._base import (
    Feedback,
    JournalStore,
    RunSummary,
    StoreBase,
    StoredRun,
    StoreError,
    SummaryRow,
    wait_for_claim,
)
from ._escape import text_line
from ._feedback import check_feedback, feedback_mac
from ._pages import failure_reasons
from ._reports import (
    SESSION_REPORT_FORMAT,
    AgentStep,
    EffectTiming,
    FeedbackItem,
    RunStory,
    SessionReport,
    ToolCall,
    ToolCallError,
    VerifierRow,
    Workflow,
)

__all__ = [
    "SESSION_REPORT_FORMAT",
    "format_session_report",
    "listed_runs",
    "record_feedback",
    "run_status",
    "run_story",
    "session_report",
    "stories",
    "unreadable_story",
]


def run_status(stored: StoredRun, key: bytes | None = None) -> Any:
    """The fold of a stored run's journal (its workflow's ``journal_status``), checked with ``key``.

    Raises :class:`JournalError` when the stored journal does not fold.
    """
    if stored.format.startswith("aiops_journal_"):
        from ..aiops import aiops_journal_status

        return aiops_journal_status(stored.journal, key=key)
    from ..journal import journal_status

    return journal_status(stored.journal, key=key)


def _verified_feedback(stored: StoredRun, key: bytes | None) -> tuple[Feedback, ...]:
    entries = stored.journal.entries
    end = stored.journal.end
    link = end.mac if end is not None and end.mac else (entries[-1].mac if entries else None)
    return checked_feedback(stored.run_id, stored.feedback, link, key)


def checked_feedback(
    run_id: str, feedback: tuple[Feedback, ...], link: str | None, key: bytes | None
) -> tuple[Feedback, ...]:
    """``feedback`` when its MAC chain from ``link`` verifies under ``key`` (no key: as it is).

    Raises :class:`JournalError` naming the first feedback that does not verify.
    """
    if key is None:
        return feedback
    for index, item in enumerate(feedback):
        if link is None or item.mac is None or not hmac.compare_digest(
            feedback_mac(item, link, key), item.mac
        ):
            raise JournalError(
                f"run {run_id!r} feedback[{index}].mac: missing or does not match"
            )
        link = item.mac
    return feedback


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
        if key is None and is_signed(stored.journal):
            raise MissingKeyError(run_id, "record feedback on it")
        status = run_status(stored, key)
        if not status.complete:
            raise StoreError(f"run {run_id!r}: has not ended ({status.describe()}); "
                             "feedback follows a run's end")
        earlier = _verified_feedback(stored, key)
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


def _workflow(format: str) -> Workflow:
    return "aiops" if format.startswith("aiops_journal_") else "chat"


def _effects(stored: StoredRun) -> tuple[EffectTiming, ...]:
    return tuple(
        EffectTiming(entry.seq, entry.call.value, entry.round, entry.attempt, entry.state.value,
                     duration)
        for entry, duration in zip(stored.journal.entries, stored.durations, strict=True)
    )


def _tools(stored: StoredRun) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for entry in stored.journal.entries:
        for item in entry.tool_invocations or ():
            calls.append(ToolCall(
                invocation_id=item.invocation_id,
                tool_name=item.tool_name,
                success=item.success,
                input=None if item.input_json is None else loads_stored(item.input_json),
                output=loads_stored(item.output_json),
                error=None if item.error is None
                else ToolCallError(item.error.type, item.error.message),
                duration_ms=item.duration_ms,
            ))
    return tuple(calls)


def _steps(events: Sequence[Any], round_of: str) -> tuple[AgentStep, ...]:
    return tuple(
        AgentStep(event.seq, event.node.value, getattr(event, round_of), event.attempt,
                  event.status.value,
                  None if event.reason_code is None else event.reason_code.value,
                  event.details.error)
        for event in events
    )


def _verifier(events: Sequence[Any], evaluations: Sequence[Any]) -> tuple[VerifierRow, ...]:
    found: dict[tuple[int, int], Any] = {(item.round, item.attempt): item for item in evaluations}
    rows: list[VerifierRow] = []
    for event in events:
        if event.node.value != "verifier":
            continue
        evaluation = found.get((event.round, event.attempt))
        reason = None if event.reason_code is None else event.reason_code.value
        if evaluation is None:
            rows.append(VerifierRow(event.round, event.attempt, event.status.value, reason,
                                    None, None, None, None, ()))
            continue
        rows.append(VerifierRow(
            event.round, event.attempt, event.status.value, reason,
            model_verdict=evaluation.model_verdict.value,
            effective_verdict=evaluation.effective_verdict.value,
            ceiling=evaluation.ceiling.value,
            groundedness_score=evaluation.output.groundedness_score,
            unknown_claim_ids=tuple(evaluation.unknown_claim_ids),
        ))
    return tuple(rows)


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
        workflow=_workflow(summary.format),
        created_at=summary.created_at,
        status="invalid",
        problem=problem,
    )


def run_story(stored: StoredRun, *, key: bytes | None = None) -> RunStory:
    """One run of a session report: everything derived from its journal and its feedback.

    A journal that does not fold (or verify, with ``key``) gives ``status``
    ``invalid`` and the problem, never a partial story.
    """
    workflow = _workflow(stored.format)
    try:
        status = run_status(stored, key)
        feedback = _verified_feedback(stored, key)
    except JournalError as error:
        return RunStory(run_id=stored.run_id, session_id=stored.session_id, workflow=workflow,
                        created_at=stored.created_at, status="invalid", problem=str(error))
    state = status.state
    common: dict[str, Any] = {
        "run_id": stored.run_id,
        "session_id": stored.session_id,
        "workflow": workflow,
        "created_at": stored.created_at,
        "status": "complete" if status.complete else "incomplete",
        "next_call": None if status.complete else status.describe(),
        "effects": _effects(stored),
        "tool_invocations": _tools(stored),
        "feedback": tuple(
            FeedbackItem(item.rating, item.comment, item.after_seq, item.recorded_at)
            for item in feedback
        ),
    }
    if workflow == "chat":
        from .. import build_trace_report

        report = build_trace_report(state)
        return RunStory(
            **common,
            question=report.question,
            agent_steps=_steps(report.events, "round"),
            gatekeeper_audits=report.gatekeeper_audits,
            verifier_evaluations=_verifier(report.events, report.verifier_evaluations),
            outcome=None if report.outcome is None else report.outcome.value,
            reason_code=None if report.reason_code is None else report.reason_code.value,
            answer=report.answer,
        )
    if state.fallback is not None:
        answer: str | None = state.fallback
    elif state.report is not None:
        answer = canonical_json(to_wire(state.report))
    else:
        answer = None
    return RunStory(
        **common,
        agent_steps=_steps(state.events, "step"),
        outcome=None if state.outcome is None else state.outcome.value,
        reason_code=None if state.reason_code is None else state.reason_code.value,
        answer=answer,
    )


def _invalid(row: SummaryRow, problem: str) -> RunStory:
    return RunStory(run_id=row.run_id, session_id=row.session_id, workflow=_workflow(row.format),
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
    from ._summary import RunDigest

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
