"""The agent steps both machines share (``_kernel/machine/stepping.py``)."""

from __future__ import annotations

import enum

import pytest

from diagnosis_core import ReasonCode
from diagnosis_core._kernel.machine.stepping import failure_reasons
from diagnosis_core.aiops import AiOpsReasonCode
from diagnosis_core.machine import AgentName, AiOpsAgent


def test_the_failed_codes_read_by_name_are_each_agents_own() -> None:
    chat = failure_reasons(AgentName, ReasonCode)
    assert dict(chat.failed) == {
        AgentName.PLANNER: ReasonCode.PLANNER_FAILED,
        AgentName.EXECUTOR: ReasonCode.EXECUTOR_FAILED,
        AgentName.VERIFIER: ReasonCode.VERIFIER_FAILED,
        AgentName.COMPOSER: ReasonCode.COMPOSER_FAILED,
    }
    assert (chat.executor, chat.tool_blocked, chat.executor_invalid_output) == (
        AgentName.EXECUTOR, ReasonCode.EXECUTOR_TOOL_BLOCKED, ReasonCode.EXECUTOR_INVALID_OUTPUT
    )
    aiops = failure_reasons(AiOpsAgent, AiOpsReasonCode)
    assert dict(aiops.failed) == {
        AiOpsAgent.SUPERVISOR: AiOpsReasonCode.SUPERVISOR_FAILED,
        AiOpsAgent.PLANNER: AiOpsReasonCode.PLANNER_FAILED,
        AiOpsAgent.EXECUTOR: AiOpsReasonCode.EXECUTOR_FAILED,
        AiOpsAgent.REPORTER: AiOpsReasonCode.REPORTER_FAILED,
    }
    assert (aiops.executor, aiops.tool_blocked, aiops.executor_invalid_output) == (
        AiOpsAgent.EXECUTOR,
        AiOpsReasonCode.EXECUTOR_TOOL_BLOCKED,
        AiOpsReasonCode.EXECUTOR_INVALID_OUTPUT,
    )


def test_an_agent_without_its_own_failed_code_is_refused_at_build_time() -> None:
    class Agent(enum.Enum):
        EXECUTOR = "executor"
        CRITIC = "critic"

    class Reason(enum.Enum):
        EXECUTOR_FAILED = "EXECUTOR_FAILED"
        EXECUTOR_TOOL_BLOCKED = "EXECUTOR_TOOL_BLOCKED"
        EXECUTOR_INVALID_OUTPUT = "EXECUTOR_INVALID_OUTPUT"

    with pytest.raises(KeyError, match="CRITIC_FAILED"):
        failure_reasons(Agent, Reason)
