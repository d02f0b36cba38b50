"""Regression tests for hostile and surprising inputs at the core's boundaries (spec §15)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

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


# --- wrong-kind effects are the host's mistake (§15) --------------------------------


def _sync_agent(input: str, config: dc.RunConfig, /) -> str:
    raise AssertionError("never called")


async def _async_agent(input: str, config: dc.RunConfig, /) -> str:
    raise AssertionError("never called")


def _sync_gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
    raise AssertionError("never called")


async def _async_gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
    raise AssertionError("never called")


class _AsyncCallable:
    async def __call__(self, input: str, config: dc.RunConfig, /) -> str:
        raise AssertionError("never called")


def _request() -> dc.DiagnosisRequest:
    return dc.DiagnosisRequest("q", dc.RunConfig("r", "s"))


def test_run_diagnosis_with_async_effects_is_a_type_error() -> None:
    effects = dc.AsyncEffects(*[_async_agent] * 4, _async_gatekeeper)
    with pytest.raises(TypeError, match="run_diagnosis needs Effects, got AsyncEffects"):
        dc.run_diagnosis(_request(), effects)  # type: ignore[arg-type]


def test_arun_diagnosis_with_sync_effects_is_a_type_error() -> None:
    effects = dc.Effects(*[_sync_agent] * 4, _sync_gatekeeper)
    with pytest.raises(TypeError, match="arun_diagnosis needs AsyncEffects, got Effects"):
        asyncio.run(dc.arun_diagnosis(_request(), effects))  # type: ignore[arg-type]


def test_a_sync_gatekeeper_inside_async_effects_is_a_type_error() -> None:
    effects = dc.AsyncEffects(*[_async_agent] * 4, _sync_gatekeeper)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AsyncEffects\.gatekeeper is a synchronous callable"):
        asyncio.run(dc.arun_diagnosis(_request(), effects))


def test_an_async_callable_object_inside_sync_effects_is_a_type_error() -> None:
    effects = dc.Effects(_sync_agent, _AsyncCallable(), _sync_agent, _sync_agent, _sync_gatekeeper)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Effects\.executor is an async callable"):
        dc.run_diagnosis(_request(), effects)


def test_a_sync_effect_returning_an_awaitable_is_a_type_error_not_a_fallback() -> None:
    def sneaky(input: str, config: dc.RunConfig, /) -> Any:
        return _async_agent(input, config)

    effects = dc.Effects(sneaky, _sync_agent, _sync_agent, _sync_agent, _sync_gatekeeper)
    with pytest.raises(TypeError, match=r"Effects\.planner returned an awaitable"):
        dc.run_diagnosis(_request(), effects)


def test_an_async_effect_returning_a_plain_value_is_a_type_error() -> None:
    action = dc.next_action(dc.start_diagnosis(_request()))
    assert isinstance(action, dc.InvokeAgent)
    effects = dc.AsyncEffects(
        lambda i, c: "{}",
        _async_agent,
        _async_agent,
        _async_agent,  # type: ignore[arg-type, return-value]
        _async_gatekeeper,
    )
    with pytest.raises(TypeError, match=r"AsyncEffects\.planner returned str, not an awaitable"):
        asyncio.run(dc.perform_effect_async(action, effects))


def test_aiops_drivers_reject_the_wrong_kind_of_effects() -> None:
    request = dc.AiOpsRequest(dc.RunConfig("r", "s"))
    async_effects = dc.AsyncAiOpsEffects(*[_async_agent] * 4)
    sync_effects = dc.AiOpsEffects(*[_sync_agent] * 4)
    with pytest.raises(TypeError, match="run_aiops needs AiOpsEffects"):
        dc.run_aiops(request, async_effects)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="arun_aiops needs AsyncAiOpsEffects"):
        asyncio.run(dc.arun_aiops(request, sync_effects))  # type: ignore[arg-type]
    mixed = dc.AsyncAiOpsEffects(_async_agent, _sync_agent, _async_agent, _async_agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AsyncAiOpsEffects\.planner is a synchronous"):
        asyncio.run(dc.arun_aiops(request, mixed))
    mixed_sync = dc.AiOpsEffects(_sync_agent, _sync_agent, _AsyncCallable(), _sync_agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AiOpsEffects\.executor is an async callable"):
        dc.run_aiops(request, mixed_sync)


def test_from_sync_effects_still_run_on_the_asyncio_driver() -> None:
    result = dc.replay_scenario(dc.load_scenario({"question": "q"}))
    effects = dc.scenario_effects(dc.load_scenario({"question": "q"}))
    state = asyncio.run(dc.arun_diagnosis(_request(), dc.AsyncEffects.from_sync(effects)))
    assert state.result.outcome is result.result.outcome
