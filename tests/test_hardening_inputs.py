"""Regression tests for hostile and surprising inputs at the core's boundaries (spec §15)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import attrs
import pytest
from _builders import scenario

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
from diagnosis_core._chat.inputs import build_planner_input
from tests._reach import tools as dct

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
class AlertWithRunbook(dcp.Alert):
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
    request = dca.AiOpsRequest(dc.RunConfig("r", "s"), (alert,))
    action = dcm.next_aiops_action(dcm.start_aiops(request))
    assert isinstance(action, dcm.InvokeAiOpsAgent)
    assert SECRET not in action.input
    plain_alert = dcp.Alert("HighLatency", "pay", "critical", "t0")
    plain_request = dca.AiOpsRequest(dc.RunConfig("r", "s"), (plain_alert,))
    plain = dcm.next_aiops_action(dcm.start_aiops(plain_request))
    assert isinstance(plain, dcm.InvokeAiOpsAgent)
    assert action.input == plain.input


# --- malformed agent results (§15) --------------------------------------------------


def _chat_start() -> dc.DiagnosisState:
    return dcm.start_diagnosis(dc.DiagnosisRequest("q", dc.RunConfig("r", "s")))


def _aiops_start() -> dca.AiOpsState:
    return dcm.start_aiops(dca.AiOpsRequest(dc.RunConfig("r", "s")))


@pytest.mark.parametrize("message", ["", "boom"])
def test_agent_failed_with_a_string_kind_is_a_clear_type_error(message: str) -> None:
    problem = r"AgentFailed\.kind: expected a FailureKind, got 'RETRYABLE'"
    with pytest.raises(TypeError, match=problem):
        dcm.AgentFailed(kind="RETRYABLE", message=message)  # type: ignore[arg-type]


def test_agent_failed_with_a_non_string_message_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match=r"AgentFailed\.message: expected a str, got int"):
        dcm.AgentFailed(dc.FailureKind.RETRYABLE, 3)  # type: ignore[arg-type]


def _forged_failure(kind: object, message: object = "") -> dcm.AgentFailed:
    failed = dcm.AgentFailed(dc.FailureKind.NON_RETRYABLE)
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
        dcm.advance(_chat_start(), _forged_failure(kind, message))
    with pytest.raises(dc.MachineError, match=problem):
        dcm.advance_aiops(_aiops_start(), _forged_failure(kind, message))


@pytest.mark.parametrize("text", [None, 7, b"{}", ["{}"]])
def test_advance_rejects_a_reply_that_is_not_a_str(text: object) -> None:
    with pytest.raises(dc.MachineError, match=r"AgentReplied\.text"):
        dcm.advance(_chat_start(), dcm.AgentReplied(text))  # type: ignore[arg-type]
    with pytest.raises(dc.MachineError, match=r"AgentReplied\.text"):
        dcm.advance_aiops(_aiops_start(), dcm.AgentReplied(text))  # type: ignore[arg-type]


def test_a_str_subclass_reply_is_read_as_its_plain_string() -> None:
    class Hostile(str):
        def strip(self, chars: str | None = None) -> str:
            raise RuntimeError("hostile")

    state = dcm.advance(_chat_start(), dcm.AgentReplied(Hostile("not json")))
    assert state.events[-1].status is dcm.NodeStatus.INVALID_OUTPUT


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
    action = dcm.next_action(dcm.start_diagnosis(_request()))
    assert isinstance(action, dcm.InvokeAgent)
    effects = dc.AsyncEffects(
        lambda i, c: "{}",
        _async_agent,
        _async_agent,
        _async_agent,  # type: ignore[arg-type, return-value]
        _async_gatekeeper,
    )
    with pytest.raises(TypeError, match=r"AsyncEffects\.planner returned str, not an awaitable"):
        asyncio.run(dcm.perform_effect_async(action, effects))


def test_aiops_drivers_reject_the_wrong_kind_of_effects() -> None:
    request = dca.AiOpsRequest(dc.RunConfig("r", "s"))
    async_effects = dca.AsyncAiOpsEffects(*[_async_agent] * 4)
    sync_effects = dca.AiOpsEffects(*[_sync_agent] * 4)
    with pytest.raises(TypeError, match="run_aiops needs AiOpsEffects"):
        dca.run_aiops(request, async_effects)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="arun_aiops needs AsyncAiOpsEffects"):
        asyncio.run(dca.arun_aiops(request, sync_effects))  # type: ignore[arg-type]
    mixed = dca.AsyncAiOpsEffects(_async_agent, _sync_agent, _async_agent, _async_agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AsyncAiOpsEffects\.planner is a synchronous"):
        asyncio.run(dca.arun_aiops(request, mixed))
    mixed_sync = dca.AiOpsEffects(_sync_agent, _sync_agent, _AsyncCallable(), _sync_agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AiOpsEffects\.executor is an async callable"):
        dca.run_aiops(request, mixed_sync)


def test_from_sync_effects_still_run_on_the_asyncio_driver() -> None:
    result = dc.replay_scenario(dc.load_scenario({"question": "q"}))
    effects = dc.scenario_effects(dc.load_scenario({"question": "q"}))
    state = asyncio.run(dc.arun_diagnosis(_request(), dc.AsyncEffects.from_sync(effects)))
    assert state.result.outcome is result.result.outcome
    # A scenario without replies: the planner's one call fails, as the replay says too.
    assert state.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert state.result.reason_code is dc.ReasonCode.PLANNER_FAILED
    assert (state.result.calls.planner, state.result.calls.executor) == (1, 0)


# --- scenario details (§9 v1.1) -----------------------------------------------------

LEDGER = [{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": "x"}]


def test_null_gatekeeper_beside_a_tool_ledger_means_absent() -> None:
    scenario = dc.load_scenario({"question": "q", "gatekeeper": None, "tool_ledger": LEDGER})
    assert scenario.tool_ledger is not None and scenario.gatekeeper == ()
    aiops = {"workflow": "aiops", "tool_ledger": LEDGER}
    assert dca.load_aiops_scenario(aiops).tool_ledger.get("inv-1") is not None


def test_null_error_beside_text_means_absent() -> None:
    scenario = dc.load_scenario(
        {"question": "q", "responses": {"planner": [{"text": "{}", "error": None}]}}
    )
    assert scenario.responses[dcm.AgentName.PLANNER][0].text == "{}"
    gatekeeper = dc.load_scenario(
        {"question": "q", "gatekeeper": [{"result": {"status": "pass"}, "error": None}]}
    )
    assert gatekeeper.gatekeeper[0].result_json == '{"status":"pass"}'


@pytest.mark.parametrize(
    ("load", "document"),
    [
        (dc.load_scenario, {"question": "q", "config": {"locale": "fr"}}),
        (dca.load_aiops_scenario, {"workflow": "aiops", "config": {"locale": "fr"}}),
    ],
)
def test_a_config_scenario_error_names_the_field_and_chains_the_config_error(
    load: Any, document: dict[str, Any]
) -> None:
    with pytest.raises(dc.ScenarioError, match=r"^config\.locale: expected one of") as caught:
        load(document)
    assert isinstance(caught.value.__cause__, dc.ConfigError)


AUDITED = {
    **LEDGER[0],
    "success": False,
    "input": {"query": "timeout", "limit": [1, None]},
    "error": {"type": "TimeoutError", "message": "slow"},
    "duration_ms": 12.5,
}


@pytest.mark.parametrize("load", [dc.load_scenario, dca.load_aiops_scenario])
def test_ledger_entries_accept_the_audit_fields(load: Any) -> None:
    base: dict[str, Any] = {"question": "q"} if load is dc.load_scenario else {"workflow": "aiops"}
    scenario = load({**base, "tool_ledger": [AUDITED]})
    recorded = scenario.tool_ledger.get("inv-1")
    assert recorded.output == "x"
    # The audit fields are kept in the ledger (one format with the recorder, spec §13).
    assert recorded.to_record() == AUDITED
    assert recorded.error == dct.ToolCallError("TimeoutError", "slow")


@pytest.mark.parametrize("load", [dc.load_scenario, dca.load_aiops_scenario])
def test_a_ledger_error_on_a_successful_call_is_a_scenario_error(load: Any) -> None:
    base: dict[str, Any] = {"question": "q"} if load is dc.load_scenario else {"workflow": "aiops"}
    entry = {**LEDGER[0], "error": {"type": "E", "message": "m"}}
    with pytest.raises(dc.ScenarioError, match=r"^tool_ledger\[0\]\.error: present on a succ"):
        load({**base, "tool_ledger": [entry]})


@pytest.mark.parametrize(
    "key", ["input_params", "output_preview", "output_length", "trace_id", "extra"]
)
@pytest.mark.parametrize("load", [dc.load_scenario, dca.load_aiops_scenario])
def test_ledger_entries_reject_any_other_key(load: Any, key: str) -> None:
    base: dict[str, Any] = {"question": "q"} if load is dc.load_scenario else {"workflow": "aiops"}
    with pytest.raises(dc.ScenarioError, match=rf"^tool_ledger\[0\]\.{key}: unknown key"):
        load({**base, "tool_ledger": [{**LEDGER[0], key: "v"}]})


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("error", "timeout", r"tool_ledger\[0\]\.error: expected an object"),
        ("error", {"type": "E"}, r"tool_ledger\[0\]\.error\.message: missing"),
        ("error", {"type": "E", "message": 1}, r"tool_ledger\[0\]\.error\.message: expected a str"),
        ("error", {"type": "E", "message": "m", "x": 1}, r"\.error\.x: unknown key"),
        ("duration_ms", -1, r"tool_ledger\[0\]\.duration_ms: expected a number >= 0"),
        ("duration_ms", True, r"duration_ms: expected a number >= 0, got boolean"),
        ("duration_ms", "5", r"duration_ms: expected a number >= 0, got string"),
        ("duration_ms", float("inf"), r"duration_ms: expected a number >= 0"),
        ("input", {"a": {1, 2}}, r"tool_ledger\[0\]\.input: not a JSON value"),
    ],
)
def test_malformed_ledger_audit_fields_are_scenario_errors(
    field: str, value: object, problem: str
) -> None:
    with pytest.raises(dc.ScenarioError, match=problem):
        dc.load_scenario({"question": "q", "tool_ledger": [{**LEDGER[0], field: value}]})


def test_ledger_errors_are_chained() -> None:
    with pytest.raises(dc.ScenarioError, match="duplicate") as caught:
        dc.load_scenario({"question": "q", "tool_ledger": [LEDGER[0], LEDGER[0]]})
    assert isinstance(caught.value.__cause__, dc.LedgerError)


def test_a_non_json_gatekeeper_result_error_is_chained() -> None:
    with pytest.raises(dc.ScenarioError, match="not a JSON value") as caught:
        dc.load_scenario({"question": "q", "gatekeeper": [{"result": float("nan")}]})
    assert isinstance(caught.value.__cause__, ValueError)


def test_the_excerpt_is_folded_not_stripped() -> None:
    from diagnosis_core._chat.reference_gatekeeper import match_excerpt

    assert match_excerpt("timeout after", " timeout") is None
    assert match_excerpt("timeout after", "after ") is None
    assert match_excerpt("upstream  timeout after", " timeout") == "  timeout"
    assert match_excerpt("timeout\tafter", "timeout ") == "timeout\t"
    assert match_excerpt("a b", "   ") is None


# --- small API gaps ---------------------------------------------------------------


def test_unresolved_is_exported_with_resolve_raw_path_and_is_what_it_returns() -> None:
    assert ("UNRESOLVED" in dct.__all__) == ("resolve_raw_path" in dct.__all__)
    assert dct.resolve_raw_path({"a": 1}, "$.b") is dct.UNRESOLVED
    assert dct.resolve_raw_path({"a": 1}, "not a path") is dct.UNRESOLVED


@pytest.mark.parametrize("load", [dc.load_scenario, dca.load_aiops_scenario])
def test_scenario_responses_are_read_only(load: Any) -> None:
    base: dict[str, Any] = {"question": "q"} if load is dc.load_scenario else {"workflow": "aiops"}
    scenario = load(base)
    agent = next(iter(scenario.responses))
    with pytest.raises(TypeError):
        scenario.responses[agent] = ()
    assert all(isinstance(items, tuple) for items in scenario.responses.values())


def test_raw_status_and_level_are_capped_in_the_trace_like_problem() -> None:
    huge = "p" * 100_000
    gatekeeper = [{"result": {"status": huge, "level": huge + "\ud800"}}]
    result = dc.replay(scenario(gatekeeper=gatekeeper))
    (event,) = [e for e in result["trace"] if e["node"] == "gatekeeper"]
    details = event["details"]
    for key in ("raw_status", "raw_level"):
        assert len(details[key]) <= 1000, key
    assert details["raw_status"].startswith("ppp") and details["raw_status"].endswith("…")
    assert "\ud800" not in details["raw_level"]
