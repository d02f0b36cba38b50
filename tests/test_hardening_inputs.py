"""Regression tests for hostile and surprising inputs at the core's boundaries (spec §15)."""

from __future__ import annotations

import json

import attrs
import pytest

import diagnosis_core as dc
from diagnosis_core._inputs import build_planner_input

# --- the planner's history window (§6.6) ------------------------------------------


@pytest.mark.parametrize(("length", "limit"), [(6, 10), (8, 10), (0, 10), (10, 10), (12, 10)])
def test_the_planner_gets_the_last_min_n_limit_messages(length: int, limit: int) -> None:
    history = [dc.HistoryMessage("user", f"m{i}") for i in range(length)]
    config = dc.DiagnosisConfig(history_limit=limit)
    sent = json.loads(build_planner_input("q", history, (), config))
    assert [m["content"] for m in sent["history"]] == [f"m{i}" for i in range(length)][-limit:]
    assert len(sent["history"]) == min(length, limit)


# --- whitelist by field, not by class (§15) ---------------------------------------

SECRET = "SUBCLASS-SECRET"


@attrs.frozen
class SkillWithBody(dc.Skill):
    body: str = SECRET


@attrs.frozen
class TaggedMessage(dc.HistoryMessage):
    tag: str = SECRET


@attrs.frozen
class AlertWithRunbook(dc.Alert):
    runbook: str = SECRET


def test_a_skill_subclass_sends_name_and_description_only() -> None:
    text = build_planner_input(
        "q", [TaggedMessage("user", "hi")], [SkillWithBody("s", "d")], dc.DiagnosisConfig()
    )
    assert SECRET not in text
    assert json.loads(text) == {
        "query": "q",
        "history": [{"role": "user", "content": "hi"}],
        "skills": [{"name": "s", "description": "d"}],
    }


def test_an_alert_subclass_sends_the_alert_fields_only() -> None:
    alert = AlertWithRunbook("HighLatency", "pay", "critical", "t0")
    request = dc.AiOpsRequest(dc.RunConfig("r", "s"), (alert,))
    action = dc.next_aiops_action(dc.start_aiops(request))
    assert isinstance(action, dc.InvokeAiOpsAgent)
    assert SECRET not in action.input
    plain_alert = dc.Alert("HighLatency", "pay", "critical", "t0")
    plain_request = dc.AiOpsRequest(dc.RunConfig("r", "s"), (plain_alert,))
    plain = dc.next_aiops_action(dc.start_aiops(plain_request))
    assert isinstance(plain, dc.InvokeAiOpsAgent)
    assert action.input == plain.input
