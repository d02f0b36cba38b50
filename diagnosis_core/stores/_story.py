"""A run's story: everything a report tells of one run, derived from its journal (spec §16).

:func:`run_story` folds a stored run's journal (verified with a key) and
tells it as a :class:`RunStory`; :func:`run_digest` is the derived summary an
ended run's store keeps (:class:`RunDigest`). Both are pure functions of the
stored run; this module knows no store.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence
from typing import Any

import attrs

from .. import JournalError, to_wire
from ..journal import Feedback, StoredRun, journal_status
from ..machine import RawResult
from ..protocol import canonical_json, loads_stored
from ._feedback import feedback_mac
from ._reports import (
    AgentStep,
    EffectTiming,
    FeedbackItem,
    RunStory,
    StoryToolCall,
    StoryToolError,
    VerifierRow,
    WorkflowName,
)
from ._summary import RunDigest

__all__ = [
    "checked_feedback",
    "failed_bindings",
    "failure_reasons",
    "last_mac",
    "run_digest",
    "run_story",
    "verified_feedback",
    "workflow_of",
]


def verified_feedback(stored: StoredRun, key: bytes | None) -> tuple[Feedback, ...]:
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


def workflow_of(format: str) -> WorkflowName:
    return "aiops" if format.startswith("aiops_journal_") else "chat"


def _effects(stored: StoredRun) -> tuple[EffectTiming, ...]:
    return tuple(
        EffectTiming(entry.seq, entry.call.value, entry.round, entry.attempt, entry.state.value,
                     duration)
        for entry, duration in zip(stored.journal.entries, stored.durations, strict=True)
    )


def _tools(stored: StoredRun) -> tuple[StoryToolCall, ...]:
    calls: list[StoryToolCall] = []
    for entry in stored.journal.entries:
        for item in entry.tool_invocations or ():
            calls.append(StoryToolCall(
                invocation_id=item.invocation_id,
                tool_name=item.tool_name,
                success=item.success,
                input=None if item.input_json is None else loads_stored(item.input_json),
                output=loads_stored(item.output_json),
                error=None if item.error is None
                else StoryToolError(item.error.type, item.error.message),
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


def run_story(stored: StoredRun, *, key: bytes | None = None) -> RunStory:
    """One run of a session report: everything derived from its journal and its feedback.

    A journal that does not fold (or verify, with ``key``) gives ``status``
    ``invalid`` and the problem, never a partial story.
    """
    workflow = workflow_of(stored.format)
    try:
        status = journal_status(stored.journal, key=key)
        feedback = verified_feedback(stored, key)
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


def last_mac(stored: StoredRun) -> str | None:
    end = stored.journal.end
    if end is not None and end.mac:
        mac: str | None = end.mac
        return mac
    entries = stored.journal.entries
    return entries[-1].mac if entries else None


def run_digest(stored: StoredRun, *, key: bytes | None = None) -> RunDigest | None:
    """The summary of ``stored``, or None when the run has not ended (or does not fold).

    Pure: the same stored journal always gives the same digest.
    """
    story = run_story(attrs.evolve(stored, feedback=()), key=key)
    if story.status != "complete":
        return None
    return RunDigest(story=story, last_mac=last_mac(stored))


# --- failure reasons ------------------------------------------------------------------


def failed_bindings(raw: RawResult | None) -> list[str]:
    """The bindings a gatekeeper's raw result failed, as ``claim c1: REASON (tool inv)``.

    The raw result is the gatekeeper's own JSON, kept as-is for audit: read
    defensively, whatever it holds.
    """
    try:
        data = None if raw is None else json.loads(raw.json_text)
    except (ValueError, RecursionError):
        return []
    bindings = data.get("checked_bindings") if isinstance(data, dict) else None
    if not isinstance(bindings, list):
        return []
    found = []
    for binding in bindings:
        if not isinstance(binding, dict) or binding.get("status") == "pass":
            continue
        parts = [f"claim {binding.get('claim_id', '?')}: {binding.get('reason') or 'failed'}"]
        where = " ".join(str(binding[key]) for key in ("tool_name", "source_invocation_id")
                         if isinstance(binding.get(key), str))
        if where:
            parts.append(f"({where})")
        found.append(" ".join(parts))
    return found


def failure_reasons(story: RunStory) -> list[str]:
    """Why a run went as it did, in the trace report's own words (empty when nothing failed).

    In order: why the run is invalid; each step's error message (its trace
    event's ``error``: a parse error, an exception); each gatekeeper audit's
    problem and the bindings it failed; each tool call's error; the call an
    unfinished run waits for.
    """
    if story.status == "invalid":
        return [f"invalid: {story.problem}"]
    reasons: list[str] = []
    messages = set()
    for step in story.agent_steps:
        if step.message:
            messages.add(step.message)
            head = f"{step.node} (seq {step.seq}, {step.status}"
            head += f", {step.reason_code})" if step.reason_code else ")"
            reasons.append(f"{head}: {step.message}")
    for audit in story.gatekeeper_audits:
        where = f"gatekeeper round {audit.round}"
        if audit.problem and audit.problem not in messages:
            reasons.append(f"{where}: {audit.problem}")
        reasons += [f"{where}: {item}" for item in failed_bindings(audit.raw_result)]
    for tool in story.tool_invocations:
        if not tool.success and tool.error is not None:
            reasons.append(f"tool {tool.tool_name} ({tool.invocation_id}): "
                           f"{tool.error.type}: {tool.error.message}")
    if story.status == "incomplete" and story.next_call:
        reasons.append(f"not finished: {story.next_call}")
    return reasons
