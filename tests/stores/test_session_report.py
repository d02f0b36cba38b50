"""The session report (spec §16, seed 003 §8): a session's whole story, derived from journals.

The oracle of every field is the run's own trace report (``build_trace_report``
of the state an uninterrupted run without a store ends in) and the journal
the list sink records — computed independently of the store and the report.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from store_support import (
    chat_example_docs,
    load_example,
    scenario_of,
    with_ids,
    with_tools,
)

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core import to_wire
from diagnosis_core.cli import main
from diagnosis_core.stores import RunStory, open_store, record_feedback, session_report
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._reports import SESSION_REPORT_FORMAT
from diagnosis_core.stores._session import format_session_report
from diagnosis_core.tools import ToolRecorder

KEY = b"session key"


def _record_session(store: StoreBase, session: str, key: bytes | None = None) -> list[Any]:
    """Every bundled chat example as one run of ``session``, with tools; the references."""
    references = []
    for index, (name, doc) in enumerate(chat_example_docs()):
        doc = with_ids(doc, run_id=f"{session}-{index}-{name}", session_id=session)
        recorder = ToolRecorder()
        request, effects = scenario_of(doc)
        reference_recorder = ToolRecorder()
        sink = dcj.ListJournalSink()
        reference = dc.run_diagnosis(request, with_tools(effects, reference_recorder), sink=sink,
                                     tools=reference_recorder)
        request, effects = scenario_of(doc)
        state = dc.run_diagnosis(request, with_tools(effects, recorder), store=store,
                                 tools=recorder, key=key)
        assert state == reference
        references.append((request, reference, sink.journal(request)))
    return references


def test_the_session_report_matches_every_runs_own_trace_report(store: StoreBase) -> None:
    session = f"session-{time.monotonic_ns()}"
    references = _record_session(store, session)
    record_feedback(store, references[0][0].run.run_id, 5, "found it")
    value = session_report(store, session)
    report: Any = to_wire(value)
    assert report["format"] == SESSION_REPORT_FORMAT and report["session_id"] == session
    runs = report["runs"]
    assert isinstance(runs, list) and len(runs) == len(references)
    for story, (request, state, journal) in zip(runs, references, strict=True):
        assert isinstance(story, dict)
        trace = dc.build_trace_report(state)
        wire = dc.to_wire(trace)
        assert isinstance(wire, dict)
        assert story["run_id"] == trace.run_id == request.run.run_id
        assert story["session_id"] == trace.session_id == session
        assert story["question"] == trace.question
        assert story["status"] == "complete" and story["workflow"] == "chat"
        assert story["agent_steps"] == [
            {"seq": e.seq, "node": e.node.value, "round": e.round, "attempt": e.attempt,
             "status": e.status.value,
             "reason_code": None if e.reason_code is None else e.reason_code.value,
             "message": e.details.error}
            for e in trace.events
        ]
        assert story["gatekeeper_audits"] == wire["gatekeeper_audits"]
        evaluations = {(v.round, v.attempt): v for v in trace.verifier_evaluations}
        verifier_events = [e for e in trace.events if e.node is dcm.NodeName.VERIFIER]
        assert len(story["verifier_evaluations"]) == len(verifier_events)  # type: ignore[arg-type]
        for row, event in zip(story["verifier_evaluations"], verifier_events, strict=True):  # type: ignore[arg-type]
            assert isinstance(row, dict)
            assert (row["round"], row["attempt"], row["status"]) == (
                event.round, event.attempt, event.status.value)
            found = evaluations.get((event.round, event.attempt))
            if found is None:
                assert row["model_verdict"] is None and row["effective_verdict"] is None
            else:
                assert row["model_verdict"] == found.model_verdict.value
                assert row["effective_verdict"] == found.effective_verdict.value
                assert row["groundedness_score"] == found.output.groundedness_score
        assert story["outcome"] == wire["outcome"] and story["reason_code"] == wire["reason_code"]
        assert story["answer"] == trace.answer == state.result.answer
        records = [{"input": None, "error": None, "duration_ms": None, **r}
                   for r in dcj.journal_tool_records(journal)]
        assert story["tool_invocations"] == records
        assert [e["seq"] for e in story["effects"]] == [e.seq for e in journal.entries]  # type: ignore[index, union-attr]
    first = runs[0]
    assert isinstance(first, dict)
    assert [(f["rating"], f["comment"]) for f in first["feedback"]] == [(5, "found it")]  # type: ignore[index, union-attr]
    assert all(story["feedback"] == [] for story in runs[1:])  # type: ignore[index, call-overload]
    text = format_session_report(value)
    assert f"session {session}: {len(references)} run(s)" in text
    assert "feedback: 5/5 found it" in text and "query_metrics failed" in text


def test_signed_feedback_that_was_edited_makes_the_run_invalid(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    doc = with_ids(load_example("payment_timeout"), session_id="s-edit")
    request, effects = scenario_of(doc)
    dc.run_diagnosis(request, effects, store=store, key=KEY)
    record_feedback(store, request.run.run_id, 2, "wrong", key=KEY)
    assert session_report(store, "s-edit", key=KEY).runs[0].status == "complete"
    with sqlite3.connect(tmp_path / "runs.db") as db:
        (payload,) = db.execute("SELECT payload FROM diagnosis_feedback").fetchone()
        db.execute("UPDATE diagnosis_feedback SET payload = ?",
                   (payload.replace('"rating":2', '"rating":5'),))
    story = session_report(store, "s-edit", key=KEY).runs[0]
    assert story.status == "invalid" and story.problem is not None
    assert "feedback[0].mac: missing or does not match" in story.problem
    store.close()


def test_an_aiops_run_and_an_incomplete_run_tell_their_story(tmp_path: Path) -> None:
    from diagnosis_core._aiops.replay import aiops_scenario_effects, aiops_scenario_request
    from diagnosis_core.aiops import load_aiops_scenario, run_aiops

    store = open_store(str(tmp_path / "runs.jsonl"))
    doc = load_example("aiops_payload_targeted")
    doc["run"] = {**doc.get("run", {}), "run_id": "aiops-1", "session_id": "mixed"}
    scenario = load_aiops_scenario(doc)
    state = run_aiops(aiops_scenario_request(scenario), aiops_scenario_effects(scenario),
                      store=store)
    chat = with_ids(load_example("payment_timeout"), run_id="chat-1", session_id="mixed")
    request, _ = scenario_of(chat)
    with store.claim("chat-1") as claim:
        store.begin(claim, dcj.Journal(request))
    report: Any = to_wire(session_report(store, "mixed"))
    aiops, incomplete = report["runs"]
    assert aiops["workflow"] == "aiops" and aiops["status"] == "complete"
    assert aiops["outcome"] == state.result.outcome.value
    assert [s["node"] for s in aiops["agent_steps"]] == [e.node.value for e in state.events]
    assert incomplete["status"] == "incomplete" and incomplete["agent_steps"] == []
    assert "planner" in incomplete["next_call"]
    store.close()


def test_sessions_show_prints_the_report_and_its_json_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = open_store(url)
    _record_session(store, "cli-session")
    store.close()
    assert main(["sessions", "show", "cli-session", "--store", url, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    store = open_store(url)
    assert printed == json.loads(json.dumps(to_wire(session_report(store, "cli-session"))))
    store.close()
    assert main(["sessions", "show", "cli-session", "--store", url]) == 0
    assert "session cli-session:" in capsys.readouterr().out
    assert main(["sessions", "show", "x", "--store", "nowhere://"]) == 2
    assert "store URL 'nowhere://'" in capsys.readouterr().err


def test_feedback_waits_for_the_claim_a_writer_holds_then_is_recorded(store: StoreBase) -> None:
    import threading

    session = f"session-{time.monotonic_ns()}"
    request, effects = scenario_of(with_ids(load_example("payment_timeout"),
                                            session_id=session))
    run_id = request.run.run_id
    dc.run_diagnosis(request, effects, store=store, key=KEY)
    claim = store.claim(run_id)  # a writer folding the complete run holds it
    released = threading.Event()

    def release_later() -> None:
        time.sleep(0.3)
        released.set()
        store.release(claim)

    threading.Thread(target=release_later).start()
    record_feedback(store, run_id, 4, "after the writer", key=KEY)
    assert released.is_set()  # it waited for the claim instead of racing the writer
    (story,) = session_report(store, session, key=KEY).runs
    assert story.status == "complete"
    assert [item.comment for item in story.feedback] == ["after the writer"]


def test_a_run_the_store_cannot_give_back_is_told_invalid_with_its_reason(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = open_store(f"sqlite:///{path}")
    for index in range(3):
        request, effects = scenario_of(with_ids(load_example("payment_timeout"),
                                                run_id=f"r{index}", session_id="s"))
        dc.run_diagnosis(request, effects, store=store)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_runs SET format = 'aiops_journal_v2' WHERE run_id = 'r1'")
    report = session_report(store, "s")
    runs = report.runs
    assert [(r.run_id, r.status) for r in runs] == [
        ("r0", "complete"), ("r1", "invalid"), ("r2", "complete")]
    assert runs[1] == RunStory(
        run_id="r1", session_id="s", workflow="aiops",
        created_at=runs[1].created_at, status="invalid",
        problem="run 'r1': the stored request is not valid: format: expected "
                "'aiops_journal_v2' or 'aiops_journal_v1', got 'diagnosis_journal_v2'",
    )
    assert "problem: run 'r1'" in format_session_report(report)
    store.close()


class _Wrapping:
    """A host's store that passes every call on to a real one (not a StoreBase)."""

    def __init__(self, inner: StoreBase) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def add_feedback(self, run_id: str, feedback: Any) -> None:
        self.inner.add_feedback(run_id, feedback)


def test_signed_feedback_through_a_wrapping_store_is_recorded_under_its_claim(
    tmp_path: Path,
) -> None:
    inner = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    wrapping: Any = _Wrapping(inner)
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), session_id="w"))
    dc.run_diagnosis(request, effects, store=inner, key=KEY)
    started = time.monotonic()
    for rating in (1, 2):
        record_feedback(wrapping, request.run.run_id, rating, key=KEY)
    assert time.monotonic() - started < 30  # never waits for the claim it holds itself
    (story,) = session_report(inner, "w", key=KEY).runs
    assert [item.rating for item in story.feedback] == [1, 2]
    inner.close()
