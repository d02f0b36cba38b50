"""The rules both workflows read from the kernel: one rule, the same answer in each."""

from __future__ import annotations

import enum

import pytest

from diagnosis_core import (
    ConfigError,
    DiagnosisConfig,
    FailureKind,
    MachineError,
    PayloadError,
    ReasonCode,
)
from diagnosis_core._aiops.routing import AiOpsRoutingFacts
from diagnosis_core._chat.routing import RoutingFacts
from diagnosis_core._kernel.enums import Locale, NodeStatus, member_of
from diagnosis_core._kernel.machine.results import (
    AgentFailed,
    AgentReplied,
    agent_result_for,
    awaited,
)
from diagnosis_core._kernel.machine.tables import (
    Router,
    always,
    completed,
    failed,
    leaving_reason,
    retry_left,
)
from diagnosis_core._kernel.wire.schema import SchemaProfile, profile_of
from diagnosis_core.aiops import AiOpsReasonCode
from diagnosis_core.machine import AgentName, AiOpsAgent


class _Text(str):
    pass


def test_member_of_reads_a_member_or_its_wire_string_and_nothing_else() -> None:
    assert member_of(Locale, Locale.ZH_CN) is Locale.ZH_CN
    assert member_of(Locale, "zh-CN") is Locale.ZH_CN
    assert member_of(Locale, _Text("en")) is Locale.EN
    assert member_of(Locale, "ZH-CN") is None
    assert member_of(Locale, 1) is None
    assert member_of(Locale, None) is None
    assert member_of(SchemaProfile, SchemaProfile.GEMINI) is SchemaProfile.GEMINI
    assert member_of(SchemaProfile, "openai-strict") is SchemaProfile.OPENAI_STRICT


def test_locale_and_profile_keep_their_own_errors() -> None:
    with pytest.raises(ConfigError, match=r"locale: expected one of 'en', 'zh-CN', got 1"):
        DiagnosisConfig(locale=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown schema profile 1; expected one of"):
        profile_of(1)


@pytest.mark.parametrize(
    ("agent", "kind", "chat", "aiops"),
    [
        ("planner", FailureKind.RETRYABLE, ReasonCode.PLANNER_FAILED,
         AiOpsReasonCode.PLANNER_FAILED),
        ("planner", FailureKind.TOOL_BLOCKED, ReasonCode.PLANNER_FAILED,
         AiOpsReasonCode.PLANNER_FAILED),
        ("executor", FailureKind.NON_RETRYABLE, ReasonCode.EXECUTOR_FAILED,
         AiOpsReasonCode.EXECUTOR_FAILED),
        ("executor", FailureKind.TOOL_BLOCKED, ReasonCode.EXECUTOR_TOOL_BLOCKED,
         AiOpsReasonCode.EXECUTOR_TOOL_BLOCKED),
    ],
)
def test_failure_reasons_are_the_same_rule_in_both_machines(
    agent: str, kind: FailureKind, chat: ReasonCode, aiops: AiOpsReasonCode
) -> None:
    from diagnosis_core._aiops.machine import _REASONS as AIOPS
    from diagnosis_core._chat.machine import _REASONS as CHAT

    assert CHAT.raised(AgentName(agent), kind) is chat
    assert AIOPS.raised(AiOpsAgent(agent), kind) is aiops


def test_only_the_executor_has_its_own_invalid_output_reason() -> None:
    from diagnosis_core._aiops.machine import _REASONS as AIOPS
    from diagnosis_core._chat.machine import _REASONS as CHAT

    assert CHAT.invalid_output(AgentName.EXECUTOR) is ReasonCode.EXECUTOR_INVALID_OUTPUT
    assert CHAT.invalid_output(AgentName.VERIFIER) is ReasonCode.VERIFIER_FAILED
    assert AIOPS.invalid_output(AiOpsAgent.EXECUTOR) is AiOpsReasonCode.EXECUTOR_INVALID_OUTPUT
    assert AIOPS.invalid_output(AiOpsAgent.SUPERVISOR) is AiOpsReasonCode.SUPERVISOR_FAILED


def test_a_failed_attempt_reads_status_error_and_reason_from_one_rule() -> None:
    from diagnosis_core._aiops.machine import _REASONS as AIOPS
    from diagnosis_core._chat.machine import _REASONS as CHAT

    blocked = AgentFailed(FailureKind.TOOL_BLOCKED, "")
    assert CHAT.of(AgentName.EXECUTOR, blocked) == (
        NodeStatus.NON_RETRYABLE_FAILED, "TOOL_BLOCKED", ReasonCode.EXECUTOR_TOOL_BLOCKED
    )
    flaky = AgentFailed(FailureKind.RETRYABLE, "timed out")
    assert AIOPS.of(AiOpsAgent.REPORTER, flaky) == (
        NodeStatus.RETRYABLE_FAILED, "timed out", AiOpsReasonCode.REPORTER_FAILED
    )
    refused = PayloadError("findings[0].text", "blank")
    assert AIOPS.of(AiOpsAgent.EXECUTOR, refused) == (
        NodeStatus.INVALID_OUTPUT,
        "findings[0].text: blank",
        AiOpsReasonCode.EXECUTOR_INVALID_OUTPUT,
    )
    assert CHAT.of(AgentName.COMPOSER, refused) == (
        NodeStatus.INVALID_OUTPUT, "findings[0].text: blank", ReasonCode.COMPOSER_FAILED
    )


def test_agent_result_for_refuses_what_is_not_an_agent_result() -> None:
    replied = AgentReplied("{}")
    assert agent_result_for(AgentName.PLANNER, replied) is replied
    failed = AgentFailed(FailureKind.RETRYABLE, "boom")
    assert agent_result_for(AiOpsAgent.REPORTER, failed) is failed
    with pytest.raises(MachineError, match="pending action is a reporter invocation; got str"):
        agent_result_for(AiOpsAgent.REPORTER, "text")
    with pytest.raises(MachineError, match=r"AgentReplied\.text: expected"):
        agent_result_for(AgentName.PLANNER, AgentReplied(1))  # type: ignore[arg-type]


class _Node(enum.Enum):
    A = "a"
    B = "b"


class _Cond(enum.Enum):
    YES = "yes"
    NO = "no"


class _Row:
    def __init__(self, after: _Node | None, condition: _Cond, next: _Node | None) -> None:
        self.after, self.condition, self.next = after, condition, next
        self.reason = None
        self.reason_from_node = self.same_input = False


def test_router_reads_rows_in_order_and_names_the_table_when_none_holds() -> None:
    first, second = _Row(_Node.A, _Cond.NO, _Node.A), _Row(_Node.A, _Cond.YES, _Node.B)
    table = (first, second)
    router = Router(table, {_Cond.YES: lambda facts: True, _Cond.NO: lambda facts: facts}, "x")
    assert router.choose(_Node.A, False, table) is second
    assert router.choose(_Node.A, True, table) is first
    other = (_Row(_Node.A, _Cond.YES, None),)
    assert router.choose(_Node.A, False, other) is other[0]  # a table passed in is read too
    with pytest.raises(LookupError, match=r"no x after <_Node\.B: 'b'> for False"):
        router.choose(_Node.B, False, table)


@pytest.mark.parametrize("facts_type", [RoutingFacts, AiOpsRoutingFacts])
@pytest.mark.parametrize(
    ("status", "retries", "expected"),
    [
        # (completed, failed, retry_left), spec §6.7: only a retryable status with retries left
        (NodeStatus.COMPLETED, True, (True, False, False)),
        (NodeStatus.RETRYABLE_FAILED, True, (False, True, True)),
        (NodeStatus.RETRYABLE_FAILED, False, (False, True, False)),
        (NodeStatus.INVALID_OUTPUT, True, (False, True, True)),
        (NodeStatus.NON_RETRYABLE_FAILED, True, (False, True, False)),
        (None, True, (False, True, False)),
    ],
)
def test_the_shared_conditions_read_both_workflows_facts_alike(
    facts_type: type[RoutingFacts] | type[AiOpsRoutingFacts],
    status: NodeStatus | None,
    retries: bool,
    expected: tuple[bool, bool, bool],
) -> None:
    facts = facts_type(status=status, retries_left=retries)
    assert (completed(facts), failed(facts), retry_left(facts)) == expected
    assert always(facts) is True


def test_awaited_passes_the_pending_call_through_and_refuses_none() -> None:
    pending = ("planner", 1)
    assert awaited(pending) is pending
    with pytest.raises(MachineError, match=r"^the state awaits nothing; it was not produced by"):
        awaited(None)


def test_leaving_reason_is_the_node_s_where_the_row_says_so_else_the_row_s() -> None:
    from diagnosis_core.machine import AIOPS_ROUTING_TABLE, ROUTING_TABLE

    from_node = next(row for row in ROUTING_TABLE if row.reason_from_node)
    fixed = next(row for row in ROUTING_TABLE if row.reason is ReasonCode.PLANNER_FAILED)
    assert leaving_reason(from_node, ReasonCode.EXECUTOR_TOOL_BLOCKED) is (
        ReasonCode.EXECUTOR_TOOL_BLOCKED
    )
    assert leaving_reason(from_node, None) is None
    assert leaving_reason(fixed, ReasonCode.EXECUTOR_TOOL_BLOCKED) is ReasonCode.PLANNER_FAILED
    budget = next(row for row in AIOPS_ROUTING_TABLE if row.reason is not None)
    assert leaving_reason(budget, AiOpsReasonCode.EXECUTOR_FAILED) is budget.reason
