"""A session's whole story, and feedback as a fact (spec §16, seed 003 §2 and §8).

:func:`session_report` answers "one user question → agent steps → tool calls
→ verifier judgement → final answer → user feedback" for every run of a
session: each run's journal is folded (and verified with the host's key) and
everything is derived from that fold and the journal — nothing is stored a
second time. The JSON form is ``diagnosis_session_report_v1``
(``docs/protocol.md``).

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

import hmac
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from .._kernel.converter import to_wire
from .._kernel.errors import JournalError
from .._kernel.journal.store import MissingKeyError, is_signed
from .._kernel.json import JsonValue, canonical_json
from ._base import (
    Feedback,
    JournalStore,
    RunSummary,
    StoreBase,
    StoredRun,
    StoreError,
    wait_for_claim,
)
from ._escape import text_line
from ._feedback import check_feedback, feedback_mac
from ._pages import failure_reasons

__all__ = [
    "SESSION_REPORT_FORMAT",
    "format_session_report",
    "listed_runs",
    "record_feedback",
    "run_status",
    "run_story",
    "session_report",
    "unreadable_story",
]

SESSION_REPORT_FORMAT = "diagnosis_session_report_v1"
"""The ``format`` of a session report's JSON form."""

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
    if key is None:
        return stored.feedback
    entries = stored.journal.entries
    end = stored.journal.end
    link = end.mac if end is not None and end.mac else (entries[-1].mac if entries else None)
    for index, item in enumerate(stored.feedback):
        if link is None or item.mac is None or not hmac.compare_digest(
            feedback_mac(item, link, key), item.mac
        ):
            raise JournalError(
                f"run {stored.run_id!r} feedback[{index}].mac: missing or does not match"
            )
        link = item.mac
    return stored.feedback


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


def _effects(stored: StoredRun) -> list[JsonValue]:
    return [
        {"seq": entry.seq, "call": entry.call.value, "round": entry.round,
         "attempt": entry.attempt, "state": entry.state.value, "duration_ms": duration}
        for entry, duration in zip(stored.journal.entries, stored.durations, strict=True)
    ]


def _tools(stored: StoredRun) -> list[JsonValue]:
    records: list[JsonValue] = []
    for entry in stored.journal.entries:
        for item in entry.tool_invocations or ():
            records.append(item.to_record())
    return records


def _steps(events: Sequence[Any], round_of: str) -> list[JsonValue]:
    return [
        {"seq": event.seq, "node": event.node.value, "round": getattr(event, round_of),
         "attempt": event.attempt, "status": event.status.value,
         "reason_code": None if event.reason_code is None else event.reason_code.value,
         "message": event.details.error}
        for event in events
    ]


def _verifier(events: Sequence[Any], evaluations: Sequence[Any]) -> list[JsonValue]:
    found: dict[tuple[int, int], Any] = {(item.round, item.attempt): item for item in evaluations}
    rows: list[JsonValue] = []
    for event in events:
        if event.node.value != "verifier":
            continue
        evaluation = found.get((event.round, event.attempt))
        row: dict[str, JsonValue] = {
            "round": event.round, "attempt": event.attempt, "status": event.status.value,
            "reason_code": None if event.reason_code is None else event.reason_code.value,
            "model_verdict": None, "effective_verdict": None, "ceiling": None,
            "groundedness_score": None, "unknown_claim_ids": [],
        }
        if evaluation is not None:
            row.update({
                "model_verdict": evaluation.model_verdict.value,
                "effective_verdict": evaluation.effective_verdict.value,
                "ceiling": evaluation.ceiling.value,
                "groundedness_score": evaluation.output.groundedness_score,
                "unknown_claim_ids": list(evaluation.unknown_claim_ids),
            })
        rows.append(row)
    return rows


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


def unreadable_story(summary: RunSummary, problem: str) -> dict[str, JsonValue]:
    """A run the store cannot give back, as a report tells it: ``invalid``, with the reason."""
    return {
        "run_id": summary.run_id,
        "session_id": summary.session_id,
        "workflow": "aiops" if summary.format.startswith("aiops_journal_") else "chat",
        "created_at": summary.created_at,
        "status": "invalid",
        "problem": problem,
    }


def run_story(stored: StoredRun, *, key: bytes | None = None) -> dict[str, JsonValue]:
    """One run of a session report: everything derived from its journal and its feedback.

    A journal that does not fold (or verify, with ``key``) gives ``"status":
    "invalid"`` and the problem, never a partial story.
    """
    story: dict[str, JsonValue] = {
        "run_id": stored.run_id,
        "session_id": stored.session_id,
        "workflow": "aiops" if stored.format.startswith("aiops_journal_") else "chat",
        "created_at": stored.created_at,
    }
    try:
        status = run_status(stored, key)
        feedback = _verified_feedback(stored, key)
    except JournalError as error:
        story.update({"status": "invalid", "problem": str(error)})
        return story
    state = status.state
    story["status"] = "complete" if status.complete else "incomplete"
    story["next_call"] = None if status.complete else status.describe()
    story["effects"] = _effects(stored)
    story["tool_invocations"] = _tools(stored)
    if story["workflow"] == "chat":
        from .. import build_trace_report

        report = build_trace_report(state)
        wire = to_wire(report)
        assert isinstance(wire, dict)
        story["question"] = report.question
        story["agent_steps"] = _steps(report.events, "round")
        story["gatekeeper_audits"] = wire["gatekeeper_audits"]
        story["verifier_evaluations"] = _verifier(report.events, report.verifier_evaluations)
        story["outcome"] = wire["outcome"]
        story["reason_code"] = wire["reason_code"]
        story["answer"] = report.answer
    else:
        story["question"] = None
        story["agent_steps"] = _steps(state.events, "step")
        story["gatekeeper_audits"] = []
        story["verifier_evaluations"] = []
        story["outcome"] = None if state.outcome is None else state.outcome.value
        story["reason_code"] = None if state.reason_code is None else state.reason_code.value
        if state.fallback is not None:
            story["answer"] = state.fallback
        elif state.report is not None:
            story["answer"] = canonical_json(to_wire(state.report))
        else:
            story["answer"] = None
    story["feedback"] = [
        {"rating": item.rating, "comment": item.comment, "after_seq": item.after_seq,
         "recorded_at": item.recorded_at}
        for item in feedback
    ]
    return story


def session_report(
    store: JournalStore, session_id: str, *, key: bytes | None = None
) -> dict[str, JsonValue]:
    """Every run of ``session_id`` in the order the store first saw them (spec §16).

    The ``diagnosis_session_report_v1`` JSON form: ``{"format",
    "session_id", "runs": [...]}``, each run as :func:`run_story` gives it.
    With ``key`` every journal and every feedback's MAC is verified.
    """
    if not isinstance(session_id, str) or not session_id:
        raise StoreError(f"session_id: expected a non-empty string, got {session_id!r}")
    runs: list[JsonValue] = []
    for summary, stored, problem in listed_runs(store, session_id=session_id):
        if stored is None:
            assert problem is not None
            runs.append(unreadable_story(summary, problem))
        else:
            runs.append(run_story(stored, key=key))
    return {"format": SESSION_REPORT_FORMAT, "session_id": session_id, "runs": runs}


_cell = text_line


def format_session_report(report: dict[str, JsonValue]) -> str:
    """The session report as readable text (what ``diagnosis-core sessions show`` prints).

    Every stored string is one inert line (:func:`text_line`); an answer's
    own lines are kept, each made inert.
    """
    runs = report.get("runs")
    assert isinstance(runs, list)
    lines = [f"session {_cell(report.get('session_id'))}: {len(runs)} run(s)"]
    for story in runs:
        assert isinstance(story, dict)
        lines += ["", f"== run {_cell(story['run_id'])} ({story['workflow']}, "
                  f"{story['status']})"]
        if story["status"] == "invalid":
            lines.append(f"   problem: {_cell(story['problem'])}")
            continue
        if story.get("question") is not None:
            lines.append(f"   question: {_cell(story['question'])}")
        lines.append("   steps:")
        for step in story["agent_steps"]:  # type: ignore[union-attr]
            assert isinstance(step, dict)
            lines.append(
                f"     {step['seq']:>3} {step['node']:<22} round {step['round']} "
                f"attempt {step['attempt']}  {step['status']}  {_cell(step['reason_code'])}"
            )
        tools = story["tool_invocations"]
        assert isinstance(tools, list)
        lines.append(f"   tools: {len(tools)} call(s)")
        for tool in tools:
            assert isinstance(tool, dict)
            state = "ok" if tool["success"] else "failed"
            error = tool.get("error")
            detail = (f"  {_cell(error.get('type'))}: {_cell(error.get('message'))}"
                      if isinstance(error, dict) else "")
            lines.append(f"     {_cell(tool['invocation_id'])} {_cell(tool['tool_name'])} "
                         f"{state}{detail}")
        for audit in story["gatekeeper_audits"]:  # type: ignore[union-attr]
            assert isinstance(audit, dict)
            lines.append(
                f"   gatekeeper round {audit['round']}: {audit['status']} "
                f"({audit['passed']}/{audit['checked']} passed) {_cell(audit['reason_code'])}"
            )
        for row in story["verifier_evaluations"]:  # type: ignore[union-attr]
            assert isinstance(row, dict)
            lines.append(
                f"   verifier round {row['round']} attempt {row['attempt']}: {row['status']} "
                f"model {_cell(row['model_verdict'])} effective {_cell(row['effective_verdict'])} "
                f"groundedness {_cell(row['groundedness_score'])}"
            )
        lines.append(
            f"   outcome: {_cell(story['outcome'])}   reason: {_cell(story['reason_code'])}"
        )
        reasons = failure_reasons(story)
        if reasons:
            lines.append("   why:")
            lines += [f"     {_cell(reason)}" for reason in reasons]
        if story.get("answer") is not None:
            lines.append("   answer:")
            lines += [f"     {_cell(line)}" for line in str(story["answer"]).splitlines()]
        feedback = story["feedback"]
        assert isinstance(feedback, list)
        for item in feedback:
            assert isinstance(item, dict)
            lines.append(f"   feedback: {item['rating']}/5 {_cell(item['comment'])}")
    return "\n".join(lines) + "\n"
