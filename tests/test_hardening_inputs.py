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


# --- malformed agent results (§15) --------------------------------------------------


def _chat_start() -> dc.DiagnosisState:
    return dc.start_diagnosis(dc.DiagnosisRequest("q", dc.RunConfig("r", "s")))


def _aiops_start() -> dc.AiOpsState:
    return dc.start_aiops(dc.AiOpsRequest(dc.RunConfig("r", "s")))


@pytest.mark.parametrize("message", ["", "boom"])
def test_agent_failed_with_a_string_kind_is_a_clear_type_error(message: str) -> None:
    problem = r"AgentFailed\.kind: expected a FailureKind, got 'RETRYABLE'"
    with pytest.raises(TypeError, match=problem):
        dc.AgentFailed(kind="RETRYABLE", message=message)  # type: ignore[arg-type]


def test_agent_failed_with_a_non_string_message_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match=r"AgentFailed\.message: expected a str, got int"):
        dc.AgentFailed(dc.FailureKind.RETRYABLE, 3)  # type: ignore[arg-type]


def _forged_failure(kind: object, message: object = "") -> dc.AgentFailed:
    failed = dc.AgentFailed(dc.FailureKind.NON_RETRYABLE)
    object.__setattr__(failed, "kind", kind)
    object.__setattr__(failed, "message", message)
    return failed


@pytest.mark.parametrize(
    ("kind", "message", "problem"),
    [
        ("RETRYABLE", "", r"AgentFailed\.kind: expected a FailureKind"),
        ("RETRYABLE", "timeout", r"AgentFailed\.kind: expected a FailureKind"),
        (None, "", r"AgentFailed\.kind"),
        (dc.FailureKind.RETRYABLE, b"x", r"AgentFailed\.message: expected a str, got bytes"),
    ],
)
def test_advance_rejects_a_forged_agent_failure(
    kind: object, message: object, problem: str
) -> None:
    with pytest.raises(dc.MachineError, match=problem):
        dc.advance(_chat_start(), _forged_failure(kind, message))
    with pytest.raises(dc.MachineError, match=problem):
        dc.advance_aiops(_aiops_start(), _forged_failure(kind, message))


@pytest.mark.parametrize("text", [None, 7, b"{}", ["{}"]])
def test_advance_rejects_a_reply_that_is_not_a_str(text: object) -> None:
    with pytest.raises(dc.MachineError, match=r"AgentReplied\.text"):
        dc.advance(_chat_start(), dc.AgentReplied(text))  # type: ignore[arg-type]
    with pytest.raises(dc.MachineError, match=r"AgentReplied\.text"):
        dc.advance_aiops(_aiops_start(), dc.AgentReplied(text))  # type: ignore[arg-type]


def test_a_str_subclass_reply_is_read_as_its_plain_string() -> None:
    class Hostile(str):
        def strip(self, chars: str | None = None) -> str:
            raise RuntimeError("hostile")

    state = dc.advance(_chat_start(), dc.AgentReplied(Hostile("not json")))
    assert state.events[-1].status is dc.NodeStatus.INVALID_OUTPUT
