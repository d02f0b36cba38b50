"""The AIOps state machine, its routing table, inputs, guards, fallback and drivers."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pytest

from diagnosis_core import (
    ConfigError,
    FailureKind,
    MachineError,
    NonRetryableError,
    RunConfig,
    ToolBlockedError,
    ToolInvocation,
    ToolLedger,
    from_wire,
    to_wire,
)
from diagnosis_core._aiops.config import NO_PROGRESS_REPEATS
from diagnosis_core._aiops.inputs import DISCOVERY_INSTRUCTION, select_aiops_mode
from diagnosis_core._aiops.routing import (
    AiOpsRoutingFacts,
    aiops_routing_mermaid,
    choose_aiops_route,
)
from diagnosis_core.aiops import (
    AiOpsConfig,
    AiOpsEffects,
    AiOpsMode,
    AiOpsOutcome,
    AiOpsReasonCode,
    AiOpsRequest,
    AiOpsState,
    AsyncAiOpsEffects,
    arun_aiops,
    evaluate_aiops_run,
    run_aiops,
)
from diagnosis_core.machine import (
    AIOPS_ROUTING_TABLE,
    AgentFailed,
    AgentReplied,
    AiOpsAgent,
    AiOpsFinished,
    AiOpsNode,
    InvokeAiOpsAgent,
    NodeStatus,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from diagnosis_core.protocol import Alert, SupervisorChoice, canonical_json

RUN = RunConfig("aiops-1", "ops-7")
ALERTS = (
    Alert("HighLatency", "pay-svc", "critical", "2024-05-01T10:00:00Z", {"env": "prod"}),
    Alert("PodRestarts", "order-svc", "warning", "2024-05-01T10:04:00Z"),
)
PLANNER = "planner_agent"
EXECUTOR = "executor_agent"
FINISH = "FINISH"


def decision(choice: str, reason: str = "because") -> str:
    return json.dumps({"next": choice, "reason": reason})


PLAN = json.dumps({"steps": [{"step_id": "s1", "goal": "check p99", "tools": ["query_metrics"]}]})


def executor_output(*ids: str, text: str = "p99 is 2.4 s") -> str:
    findings = [
        {
            "alert_name": "HighLatency",
            "service": "pay-svc",
            "text": text,
            "cited_invocation_ids": list(ids[:1]),
        }
    ]
    return json.dumps({"findings": findings if ids else [], "tool_invocation_ids": list(ids)})


REPORT = json.dumps(
    {
        "summary": "pool exhausted",
        "findings": [
            {
                "alert_name": "HighLatency",
                "service": "pay-svc",
                "text": "waits for connections",
                "cited_invocation_ids": ["inv-1"],
            },
            {
                "alert_name": "PodRestarts",
                "service": "order-svc",
                "text": "OOMKilled",
                "cited_invocation_ids": ["inv-1"],
            },
        ],
        "evidence": [{"text": "pool 20/20", "cited_invocation_ids": ["inv-1"]}],
        "recommended_actions": [
            {"text": "raise the pool", "alert_name": "HighLatency", "service": "pay-svc"}
        ],
    }
)
LEDGER = ToolLedger((ToolInvocation("inv-1", "query_logs", True, {"m": "pool 20/20"}),))

Reply = str | BaseException


class Script:
    """An agent that plays replies in order (an exception is raised); records inputs."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self.replies = list(replies)
        self.inputs: list[str] = []

    def __call__(self, input: str, config: RunConfig, /) -> str:
        self.inputs.append(input)
        if not self.replies:
            raise NonRetryableError("nothing scripted")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply


class Retryable(Exception):
    retryable = True


def effects(
    supervisor: Sequence[Reply] = (),
    planner: Sequence[Reply] = (),
    executor: Sequence[Reply] = (),
    reporter: Sequence[Reply] = (),
) -> AiOpsEffects:
    return AiOpsEffects(
        supervisor=Script(supervisor),
        planner=Script(planner),
        executor=Script(executor),
        reporter=Script(reporter),
    )


def script(effects: AiOpsEffects, agent: AiOpsAgent) -> Script:
    found = effects.agent(agent)
    assert isinstance(found, Script)
    return found


def run(fx: AiOpsEffects, *, alerts: tuple[Alert, ...] = ALERTS, **config: Any) -> AiOpsState:
    return run_aiops(AiOpsRequest(RUN, alerts, AiOpsConfig(**config)), fx)


def nodes(state: AiOpsState) -> list[tuple[str, int, int, str, str | None]]:
    return [
        (
            event.node.value,
            event.step,
            event.attempt,
            event.status.value,
            event.reason_code.value if event.reason_code else None,
        )
        for event in state.events
    ]


def happy() -> AiOpsEffects:
    return effects(
        supervisor=[decision(PLANNER), decision(EXECUTOR), decision(FINISH)],
        planner=[PLAN],
        executor=[executor_output("inv-1")],
        reporter=[REPORT],
    )


# --- mode selection ---------------------------------------------------------------


def test_mode_is_payload_targeted_only_with_alerts() -> None:
    assert select_aiops_mode(ALERTS) is AiOpsMode.PAYLOAD_TARGETED
    assert select_aiops_mode(None) is AiOpsMode.AUTO_DISCOVERY
    assert select_aiops_mode(()) is AiOpsMode.AUTO_DISCOVERY
    assert AiOpsRequest(RUN, ALERTS).mode is AiOpsMode.PAYLOAD_TARGETED
    assert AiOpsRequest(RUN).mode is AiOpsMode.AUTO_DISCOVERY
    assert AiOpsRequest(RUN, None).mode is AiOpsMode.AUTO_DISCOVERY


def test_payload_mode_gives_every_agent_the_alerts_as_given() -> None:
    fx = happy()
    state = run(fx)
    expected_alerts = [to_wire(alert) for alert in ALERTS]
    for agent in AiOpsAgent:
        for text in script(fx, agent).inputs:
            data = json.loads(text)
            assert data["mode"] == "PAYLOAD_TARGETED"
            assert data["task"] == {"alerts": expected_alerts}
    assert state.result.mode is AiOpsMode.PAYLOAD_TARGETED


def test_discovery_mode_gives_every_agent_the_discovery_instruction() -> None:
    fx = happy()
    run(fx, alerts=())
    for agent in AiOpsAgent:
        for text in script(fx, agent).inputs:
            data = json.loads(text)
            assert data["mode"] == "AUTO_DISCOVERY"
            assert data["task"] == {"instruction": DISCOVERY_INSTRUCTION}


# --- exact inputs -----------------------------------------------------------------


def test_agent_inputs_are_exact_canonical_whitelists() -> None:
    fx = happy()
    run(fx)
    keys = {
        AiOpsAgent.SUPERVISOR: {
            "mode", "task", "step", "max_steps", "decisions", "plan", "findings",
            "tool_invocation_count",
        },
        AiOpsAgent.PLANNER: {"mode", "task", "findings"},
        AiOpsAgent.EXECUTOR: {"mode", "task", "plan", "known_invocation_ids"},
        AiOpsAgent.REPORTER: {"mode", "task", "plan", "findings", "tool_invocation_ids"},
    }  # fmt: skip
    for agent, expected in keys.items():
        inputs = script(fx, agent).inputs
        assert inputs
        for text in inputs:
            assert set(json.loads(text)) == expected
            assert canonical_json(json.loads(text)) == text


def test_each_alert_of_the_task_is_exactly_the_alert_whitelist() -> None:
    # Spec §11: the whitelist of an alert grows by exactly ``annotations``.
    annotated = (
        Alert(
            "HighLatency", "pay-svc", "critical", "t0", {"env": "prod"},
            {"summary": "p99 above 1 s", "runbook_url": "https://runbooks/latency"},
        ),
        ALERTS[1],
    )  # fmt: skip
    fx = happy()
    run(fx, alerts=annotated)
    for agent in AiOpsAgent:
        inputs = script(fx, agent).inputs
        assert inputs
        for text in inputs:
            task_alerts = json.loads(text)["task"]["alerts"]
            assert [set(alert) for alert in task_alerts] == [
                {"name", "service", "severity", "started_at", "labels", "annotations"}
            ] * 2
            assert task_alerts[0]["annotations"] == {
                "runbook_url": "https://runbooks/latency", "summary": "p99 above 1 s",
            }  # fmt: skip
            assert task_alerts[1]["annotations"] == {}


def test_supervisor_sees_its_progress_and_reporter_sees_every_finding() -> None:
    fx = happy()
    run(fx)
    third = json.loads(script(fx, AiOpsAgent.SUPERVISOR).inputs[2])
    assert third["step"] == 3 and third["max_steps"] == 8
    assert third["decisions"] == [PLANNER, EXECUTOR]
    assert third["tool_invocation_count"] == 1
    assert third["plan"] == {
        "steps": [{"step_id": "s1", "goal": "check p99", "tools": ["query_metrics"]}]
    }
    reporter = json.loads(script(fx, AiOpsAgent.REPORTER).inputs[0])
    assert reporter["tool_invocation_ids"] == ["inv-1"]
    assert [finding["text"] for finding in reporter["findings"]] == ["p99 is 2.4 s"]


def test_supervisor_reasons_and_unknown_fields_never_reach_another_input() -> None:
    marker = "SECRET-REASON-42"
    fx = effects(
        supervisor=[
            decision(PLANNER, marker),
            json.dumps({"next": EXECUTOR, "reason": "", "note": marker}),
            decision(FINISH, marker),
        ],
        planner=[json.dumps({"steps": [{"step_id": "s1", "goal": "g", "hint": marker}]})],
        executor=[executor_output("inv-1")],
        reporter=[REPORT],
    )
    state = run(fx)
    assert state.outcome is AiOpsOutcome.REPORTED
    assert all(marker not in record.input for record in state.invocations)


def test_executor_input_lists_known_invocations() -> None:
    fx = effects(
        supervisor=[decision(EXECUTOR), decision(EXECUTOR), decision(FINISH)],
        executor=[executor_output("inv-1"), executor_output("inv-2")],
        reporter=[REPORT],
    )
    run(fx)
    inputs = [json.loads(text) for text in script(fx, AiOpsAgent.EXECUTOR).inputs]
    assert [data["known_invocation_ids"] for data in inputs] == [[], ["inv-1"]]
    assert inputs[0]["plan"] is None


# --- the happy path and the trace -------------------------------------------------


def test_happy_path_reports_and_traces_every_node() -> None:
    state = run(happy())
    result = state.result
    assert result.outcome is AiOpsOutcome.REPORTED and result.reason_code is None
    assert result.report is not None and result.report.summary == "pool exhausted"
    assert result.fallback is None
    assert result.supervisor_steps == 3
    assert result.tool_invocation_ids == ("inv-1",)
    assert to_wire(result.calls) == {"supervisor": 3, "planner": 1, "executor": 1, "reporter": 1}
    assert nodes(state) == [
        ("supervisor", 1, 1, "COMPLETED", None),
        ("planner", 1, 1, "COMPLETED", None),
        ("supervisor", 2, 1, "COMPLETED", None),
        ("executor", 2, 1, "COMPLETED", None),
        ("supervisor", 3, 1, "COMPLETED", None),
        ("reporter", 3, 1, "COMPLETED", None),
    ]
    for event, record in zip(state.events, state.invocations, strict=True):
        assert event.seq == state.events.index(event) + 1
        assert event.input_sha256 == hashlib.sha256(record.input.encode()).hexdigest()
    executor_event = state.events[3]
    assert (executor_event.details.findings, executor_event.details.new_tool_invocations) == (1, 1)
    assert state.events[0].details.next is SupervisorChoice.PLANNER_AGENT


def test_finished_state_round_trips_through_json() -> None:
    state = run(happy())
    text = canonical_json(to_wire(state))
    assert from_wire(AiOpsState, json.loads(text)) == state


def test_evaluate_aiops_run_judges_the_report_and_skips_a_fallback() -> None:
    evaluation = evaluate_aiops_run(run(happy()), LEDGER)
    assert evaluation is not None and evaluation.passed
    assert evaluate_aiops_run(run(effects()), LEDGER) is None
    with pytest.raises(MachineError, match=r"^the AIOps run has not finished yet$"):
        evaluate_aiops_run(start_aiops(AiOpsRequest(RUN)), LEDGER)


# --- technical retries ------------------------------------------------------------


def test_invalid_supervisor_output_is_retried_with_the_identical_input() -> None:
    fx = happy()
    script(fx, AiOpsAgent.SUPERVISOR).replies.insert(0, '{"next": "finish", "reason": ""}')
    state = run(fx)
    inputs = script(fx, AiOpsAgent.SUPERVISOR).inputs
    assert inputs[0] == inputs[1]
    assert nodes(state)[:2] == [
        ("supervisor", 1, 1, "INVALID_OUTPUT", "SUPERVISOR_FAILED"),
        ("supervisor", 1, 2, "COMPLETED", None),
    ]
    assert state.events[0].details.error is not None
    assert state.events[0].details.error.startswith("next: 'finish' is not one of")
    assert state.outcome is AiOpsOutcome.REPORTED


@pytest.mark.parametrize(
    ("agent", "position", "reason"),
    [
        (AiOpsAgent.SUPERVISOR, 0, AiOpsReasonCode.SUPERVISOR_FAILED),
        (AiOpsAgent.PLANNER, 0, AiOpsReasonCode.PLANNER_FAILED),
        (AiOpsAgent.REPORTER, 0, AiOpsReasonCode.REPORTER_FAILED),
    ],
)
def test_retries_exhausted_end_in_the_fallback(
    agent: AiOpsAgent, position: int, reason: AiOpsReasonCode
) -> None:
    fx = happy()
    replies = script(fx, agent).replies
    replies[position:position] = [Retryable("timeout"), "not json"]
    state = run(fx, technical_retry_limit=1)
    assert state.outcome is AiOpsOutcome.FALLBACK and state.reason_code is reason
    failed = [event for event in state.events if event.node is agent.node]
    assert [event.status for event in failed] == [
        NodeStatus.RETRYABLE_FAILED,
        NodeStatus.INVALID_OUTPUT,
    ]
    assert len(set(script(fx, agent).inputs)) == 1
    assert state.events[-1].node is AiOpsNode.FALLBACK
    assert state.events[-1].reason_code is reason


def test_retry_limit_zero_and_unknown_errors_do_not_retry() -> None:
    fx = happy()
    script(fx, AiOpsAgent.SUPERVISOR).replies.insert(0, ValueError("unknown"))
    state = run(fx, technical_retry_limit=3)
    assert nodes(state)[0] == ("supervisor", 1, 1, "NON_RETRYABLE_FAILED", "SUPERVISOR_FAILED")
    assert state.reason_code is AiOpsReasonCode.SUPERVISOR_FAILED
    fx = happy()
    script(fx, AiOpsAgent.SUPERVISOR).replies.insert(0, "prose, not json")
    assert run(fx, technical_retry_limit=0).reason_code is AiOpsReasonCode.SUPERVISOR_FAILED


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        (Retryable("timeout"), "RETRYABLE_FAILED", AiOpsReasonCode.EXECUTOR_FAILED),
        (ToolBlockedError("policy"), "NON_RETRYABLE_FAILED", AiOpsReasonCode.EXECUTOR_TOOL_BLOCKED),
        ("{}", "INVALID_OUTPUT", AiOpsReasonCode.EXECUTOR_INVALID_OUTPUT),
    ],
)
def test_executor_is_never_retried(reply: Reply, status: str, reason: AiOpsReasonCode) -> None:
    fx = happy()
    script(fx, AiOpsAgent.EXECUTOR).replies.insert(0, reply)
    state = run(fx, technical_retry_limit=3)
    assert state.calls.executor == 1
    assert nodes(state)[-2:] == [
        ("executor", 2, 1, status, reason.value),
        ("fallback", 2, 1, "COMPLETED", reason.value),
    ]


# --- the no-progress guard --------------------------------------------------------


def test_planner_chosen_three_times_in_a_row_is_no_progress() -> None:
    fx = effects(supervisor=[decision(PLANNER)] * 3, planner=[PLAN] * 3)
    state = run(fx)
    assert state.reason_code is AiOpsReasonCode.NO_PROGRESS
    assert state.calls.planner == NO_PROGRESS_REPEATS - 1
    assert nodes(state)[-2:] == [
        ("supervisor", 3, 1, "COMPLETED", "NO_PROGRESS"),
        ("fallback", 3, 1, "COMPLETED", "NO_PROGRESS"),
    ]
    assert [
        event.details.repeats for event in state.events if event.node is AiOpsNode.SUPERVISOR
    ] == [1, 2, 3]


def test_executor_without_new_invocations_three_times_is_no_progress() -> None:
    fx = effects(supervisor=[decision(EXECUTOR)] * 3, executor=[executor_output()] * 2)
    state = run(fx)
    assert state.reason_code is AiOpsReasonCode.NO_PROGRESS
    assert state.calls.executor == 2


def test_progress_resets_the_streak() -> None:
    fx = effects(
        supervisor=[decision(EXECUTOR)] * 3 + [decision(FINISH)],
        executor=[executor_output(), executor_output("inv-1"), executor_output("inv-1")],
        reporter=[REPORT],
    )
    state = run(fx)
    assert state.outcome is AiOpsOutcome.REPORTED
    supervisor_events = [event for event in state.events if event.node is AiOpsNode.SUPERVISOR]
    assert [event.details.repeats for event in supervisor_events] == [1, 2, 1, None]


def test_executor_that_repeats_known_ids_makes_no_progress() -> None:
    fx = effects(
        supervisor=[decision(EXECUTOR)] * 4,
        executor=[executor_output("inv-1"), executor_output("inv-1"), executor_output("inv-1")],
    )
    state = run(fx)
    assert state.reason_code is AiOpsReasonCode.NO_PROGRESS
    assert state.calls.executor == 3
    assert [
        event.details.repeats for event in state.events if event.node is AiOpsNode.SUPERVISOR
    ] == [1, 1, 2, 3]


def test_new_invocations_or_a_different_agent_keep_the_run_going() -> None:
    fx = effects(
        supervisor=[decision(EXECUTOR)] * 4 + [decision(FINISH)],
        executor=[executor_output(f"inv-{n}") for n in range(4)],
        reporter=[REPORT],
    )
    assert run(fx).outcome is AiOpsOutcome.REPORTED
    fx = effects(
        supervisor=[decision(PLANNER), decision(EXECUTOR)] * 3 + [decision(FINISH)],
        planner=[PLAN] * 3,
        executor=[executor_output()] * 3,
        reporter=[REPORT],
    )
    assert run(fx).outcome is AiOpsOutcome.REPORTED


# --- the step budget --------------------------------------------------------------


def test_step_budget_ends_the_run_at_the_last_step_unless_it_finishes() -> None:
    fx = effects(
        supervisor=[decision(EXECUTOR)] * 5,
        executor=[executor_output(f"inv-{n}") for n in range(5)],
    )
    state = run(fx, max_supervisor_steps=3)
    assert state.reason_code is AiOpsReasonCode.STEP_BUDGET_EXHAUSTED
    assert (state.calls.supervisor, state.calls.executor, state.step) == (3, 2, 3)
    assert nodes(state)[-2:] == [
        ("supervisor", 3, 1, "COMPLETED", "STEP_BUDGET_EXHAUSTED"),
        ("fallback", 3, 1, "COMPLETED", "STEP_BUDGET_EXHAUSTED"),
    ]
    fx = effects(
        supervisor=[decision(EXECUTOR)] * 2 + [decision(FINISH)],
        executor=[executor_output(f"inv-{n}") for n in range(2)],
        reporter=[REPORT],
    )
    assert run(fx, max_supervisor_steps=3).outcome is AiOpsOutcome.REPORTED


def test_retries_do_not_use_the_step_budget() -> None:
    fx = effects(
        supervisor=[Retryable("t"), decision(FINISH)],
        reporter=[REPORT],
    )
    state = run(fx, max_supervisor_steps=1)
    assert state.outcome is AiOpsOutcome.REPORTED and state.step == 1


def test_config_is_validated() -> None:
    with pytest.raises(ConfigError, match=r"max_supervisor_steps: 0 is outside the range 1\.\.50"):
        AiOpsConfig(max_supervisor_steps=0)
    with pytest.raises(ConfigError, match="locale"):
        AiOpsConfig(locale="fr")
    assert AiOpsConfig().max_node_executions == 8 * 2 * 2 + 2 + 1


# --- the fallback -----------------------------------------------------------------


def test_fallback_shows_facts_only_never_agent_text() -> None:
    marker = "AGENT-TEXT-7"
    fx = effects(
        supervisor=[decision(EXECUTOR, marker)] * 3,
        executor=[
            executor_output(text=marker),
            json.dumps({"tool_invocation_ids": [], "x": marker}),
        ],
    )
    state = run(fx)
    assert state.fallback is not None and state.report is None
    assert marker not in state.fallback
    assert "NO_PROGRESS" in state.fallback and "aiops-1" in state.fallback
    assert "HighLatency on pay-svc, severity critical" in state.fallback


def test_fallback_is_sanitized_and_localized() -> None:
    alerts = (Alert("<b>Boom</b>\n# injected", "svc", "critical", "t0"),)
    state = run(effects(), alerts=alerts, locale="zh-CN")
    assert state.fallback is not None
    assert state.fallback.startswith("## AIOps 诊断未能完成")
    assert "&lt;b&gt;Boom&lt;\\/b&gt; \\# injected" in state.fallback
    assert "\n# injected" not in state.fallback
    state = run(effects(), alerts=())
    assert state.fallback is not None and "to be discovered" in state.fallback


# --- the routing table ------------------------------------------------------------


def test_every_routing_row_is_taken_by_some_run() -> None:
    scenarios: list[AiOpsEffects] = [
        happy(),
        effects(supervisor=[Retryable("t")], reporter=[]),
        effects(supervisor=[decision(PLANNER)] * 3, planner=[PLAN, "bad", "bad"]),
        effects(supervisor=[decision(EXECUTOR)], executor=[ToolBlockedError("x")]),
        effects(supervisor=[decision(FINISH)], reporter=[Retryable("t"), REPORT]),
        effects(supervisor=[decision(FINISH)], reporter=["bad", "bad"]),
        effects(supervisor=[decision(PLANNER)] * 3, planner=[PLAN] * 3),
        effects(supervisor=[decision(EXECUTOR)], executor=[executor_output("a")]),
    ]
    taken: set[tuple[AiOpsNode | None, AiOpsNode | None, str | None]] = set()
    for index, fx in enumerate(scenarios):
        state = run(fx, max_supervisor_steps=1 if index == len(scenarios) - 1 else 8)
        previous: AiOpsNode | None = None
        for event in state.events:
            reason = None
            if event.node is AiOpsNode.FALLBACK:
                assert event.reason_code is not None
                reason = event.reason_code.value
            taken.add((previous, event.node, reason))
            previous = event.node
        taken.add((previous, None, None))
    for row in AIOPS_ROUTING_TABLE:
        if row.reason_from_node:
            assert any(
                (after, target) == (row.after, row.next) and (reason or "").startswith("EXECUTOR_")
                for after, target, reason in taken
            ), row
        else:
            key = (row.after, row.next, row.reason.value if row.reason else None)
            assert key in taken, row


def test_routing_facts_that_no_row_covers_raise() -> None:
    with pytest.raises(LookupError):
        choose_aiops_route(AiOpsNode.SUPERVISOR, AiOpsRoutingFacts(status=NodeStatus.COMPLETED))


def test_mermaid_is_drawn_from_the_table() -> None:
    text = aiops_routing_mermaid()
    assert text.startswith("flowchart TD\n")
    assert len(text.splitlines()) == 3 + len(AIOPS_ROUTING_TABLE)
    assert 'supervisor -->|"FINISH"| reporter' in text
    assert "NO_PROGRESS" in text and "same input" in text


# --- the machine API --------------------------------------------------------------


def test_machine_is_driven_step_by_step() -> None:
    state = start_aiops(AiOpsRequest(RUN, ALERTS))
    action = next_aiops_action(state)
    assert isinstance(action, InvokeAiOpsAgent)
    assert (action.agent, action.step, action.attempt, action.config) == (
        AiOpsAgent.SUPERVISOR, 1, 1, RUN,
    )  # fmt: skip
    state = advance_aiops(state, AgentReplied(decision(FINISH)))
    state = advance_aiops(state, AgentFailed(FailureKind.NON_RETRYABLE, "down"))
    finished = next_aiops_action(state)
    assert isinstance(finished, AiOpsFinished)
    assert finished.result.reason_code is AiOpsReasonCode.REPORTER_FAILED
    with pytest.raises(MachineError):
        advance_aiops(state, AgentReplied("{}"))
    with pytest.raises(MachineError, match=r"^the state awaits nothing; it was not produced"):
        next_aiops_action(AiOpsState(AiOpsRequest(RUN)))
    with pytest.raises(
        MachineError, match=r"^the pending action is a supervisor invocation; got object$"
    ):
        advance_aiops(start_aiops(AiOpsRequest(RUN)), object())  # type: ignore[arg-type]
    with pytest.raises(MachineError, match=r"^the AIOps run has not finished yet$"):
        _ = AiOpsState(AiOpsRequest(RUN)).result


def test_non_text_reply_is_a_machine_error() -> None:
    state = start_aiops(AiOpsRequest(RUN, config=AiOpsConfig(technical_retry_limit=0)))
    with pytest.raises(MachineError, match=r"AgentReplied\.text"):
        advance_aiops(state, AgentReplied(None))  # type: ignore[arg-type]


def test_request_validates_its_alerts() -> None:
    with pytest.raises(TypeError, match=r"alerts\[0\]"):
        AiOpsRequest(RUN, ({"name": "x"},))  # type: ignore[arg-type]


def test_async_driver_matches_the_sync_driver() -> None:
    sync_state = run(happy())
    request = AiOpsRequest(RUN, ALERTS)
    async_state = asyncio.run(arun_aiops(request, AsyncAiOpsEffects.from_sync(happy())))
    assert async_state == sync_state
    assert nodes(async_state) == [
        ("supervisor", 1, 1, "COMPLETED", None),
        ("planner", 1, 1, "COMPLETED", None),
        ("supervisor", 2, 1, "COMPLETED", None),
        ("executor", 2, 1, "COMPLETED", None),
        ("supervisor", 3, 1, "COMPLETED", None),
        ("reporter", 3, 1, "COMPLETED", None),
    ]
    assert async_state.outcome is AiOpsOutcome.REPORTED and async_state.reason_code is None
    assert async_state.report is not None and async_state.report.summary == "pool exhausted"


def test_driver_resumes_a_saved_state() -> None:
    request = AiOpsRequest(RUN, ALERTS)
    state = advance_aiops(start_aiops(request), AgentReplied(decision(PLANNER)))
    saved = from_wire(AiOpsState, json.loads(canonical_json(to_wire(state))))
    fx = effects(
        supervisor=[decision(EXECUTOR), decision(FINISH)],
        planner=[PLAN],
        executor=[executor_output("inv-1")],
        reporter=[REPORT],
    )
    with pytest.raises(MachineError, match="not a state the machine built"):
        run_aiops(request, fx, state=saved)  # a stored state is display-only (spec §12)
    assert run_aiops(request, fx, state=state) == run(happy())
