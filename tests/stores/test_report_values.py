"""Reports as values: frozen classes, one converter, wire bytes pinned by a golden file.

The session and fleet reports of a fixed store (a chat run with a failing
tool and feedback, an AIOps run, an incomplete run and an unreadable one) are
serialized with ``to_json`` and compared byte for byte with
``golden/session_report.json`` and ``golden/fleet_report.json``; read back with
``from_json`` they are equal to the values. The store's clock-dependent
columns (when each run was first stored, the measured durations, when the
feedback was recorded) are fixed by a wrapper, so the bytes depend on the
journals and the code only. ``REGENERATE_REPORT_GOLDEN=1`` rewrites the files.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core._kernel.journal.store import StoredRun
from diagnosis_core.stores import (
    FleetReport,
    RunStory,
    SessionReport,
    fleet_report,
    open_store,
    record_feedback,
    session_report,
)
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._fleet import format_fleet_report
from diagnosis_core.stores._reports import FLEET_REPORT_FORMAT, SESSION_REPORT_FORMAT
from diagnosis_core.stores._session import format_session_report
from diagnosis_core.tools import ToolRecorder

GOLDEN = Path(__file__).parent / "golden"
SESSION = "golden-session"


class _SteadyClock:
    """A store seen with fixed times: run ``n`` first stored at ``1.8e9 + n``, durations by seq."""

    def __init__(self, inner: StoreBase) -> None:
        self.inner = inner

    def runs(self, *, session_id: str | None = None, since: float | None = None) -> Any:
        listed = self.inner.runs(session_id=session_id, since=since)
        return tuple(attrs.evolve(summary, created_at=1.8e9 + index)
                     for index, summary in enumerate(listed))

    def load(self, run_id: str) -> StoredRun | None:
        stored = self.inner.load(run_id)
        if stored is None:
            return None
        order = [summary.run_id for summary in self.inner.runs()].index(run_id)
        return attrs.evolve(
            stored,
            created_at=1.8e9 + order,
            durations=tuple(None if duration is None else 10.0 * (seq + 1) + 0.25
                            for seq, duration in enumerate(stored.durations)),
            feedback=tuple(attrs.evolve(item, recorded_at=1.8e9 + 100 + index)
                           for index, item in enumerate(stored.feedback)),
        )


def _store(tmp_path: Path) -> StoreBase:
    from diagnosis_core._aiops.replay import aiops_scenario_effects, aiops_scenario_request
    from diagnosis_core.aiops import load_aiops_scenario, run_aiops

    path = tmp_path / "runs.db"
    store = open_store(f"sqlite:///{path}")
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="chat-1",
                                            session_id=SESSION))
    recorder = ToolRecorder(clock=lambda: 0.0)
    dc.run_diagnosis(request, with_tools(effects, recorder), store=store, tools=recorder)
    record_feedback(store, "chat-1", 4, "found the timeout")
    doc = load_example("aiops_payload_targeted")
    doc["run"] = {**doc.get("run", {}), "run_id": "aiops-1", "session_id": SESSION}
    scenario = load_aiops_scenario(doc)
    run_aiops(aiops_scenario_request(scenario), aiops_scenario_effects(scenario), store=store)
    waiting, _ = scenario_of(with_ids(load_example("payment_timeout"), run_id="chat-2",
                                      session_id=SESSION))
    with store.claim("chat-2") as claim:
        store.begin(claim, dcj.Journal(waiting))
    broken, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="chat-3",
                                           session_id=SESSION))
    dc.run_diagnosis(broken, effects, store=store)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_runs SET format = 'aiops_journal_v2' WHERE run_id = 'chat-3'")
    return store


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("REGENERATE_REPORT_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    assert path.read_bytes() == text.encode("utf-8"), f"{name}: the wire bytes changed"


def test_the_reports_wire_bytes_are_pinned_and_read_back_equal(tmp_path: Path) -> None:
    store = _store(tmp_path)
    steady: Any = _SteadyClock(store)
    try:
        session = session_report(steady, SESSION)
        fleet = fleet_report(steady)
    finally:
        store.close()
    assert [(story.run_id, story.status) for story in session.runs] == [
        ("chat-1", "complete"), ("aiops-1", "complete"), ("chat-2", "incomplete"),
        ("chat-3", "invalid")]
    session_text = dc.to_json(session) + "\n"
    fleet_text = dc.to_json(fleet) + "\n"
    _golden("session_report.json", session_text)
    _golden("fleet_report.json", fleet_text)
    assert dc.from_json(SessionReport, session_text) == session
    assert dc.from_json(FleetReport, fleet_text) == fleet
    assert session.format == SESSION_REPORT_FORMAT and fleet.format == FLEET_REPORT_FORMAT
    # the readable forms take the values as they are
    assert "feedback: 4/5 found the timeout" in format_session_report(session)
    assert "runs: 4 (complete 2, incomplete 1, invalid 1)" in format_fleet_report(fleet)


def test_an_invalid_story_holds_nothing_but_its_problem(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        story = session_report(store, SESSION).runs[3]
    finally:
        store.close()
    assert story == RunStory(run_id="chat-3", session_id=SESSION, workflow="aiops",
                             created_at=story.created_at, status="invalid",
                             problem=story.problem)
    assert story.problem is not None and story.problem.startswith("run 'chat-3':")


def test_reports_are_frozen_and_refuse_a_wire_form_that_is_not_theirs() -> None:
    report = SessionReport(session_id="s", runs=())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        report.session_id = "t"  # type: ignore[misc]
    assert dc.to_wire(report) == {"format": SESSION_REPORT_FORMAT, "session_id": "s",
                                  "runs": []}
    with pytest.raises(dc.PayloadError, match="format"):
        dc.from_wire(SessionReport, {"format": "diagnosis_session_report_v1",
                                     "session_id": "s", "runs": []})
    with pytest.raises(dc.PayloadError, match=r"runs\[0\]\.status"):
        dc.from_wire(SessionReport, {"session_id": "s", "runs": [
            {"run_id": "r", "session_id": "s", "workflow": "chat", "created_at": 1.0,
             "status": "maybe"}]})
