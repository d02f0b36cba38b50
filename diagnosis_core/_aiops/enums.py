"""Enumerations and reason codes of the AIOps flow (spec §11, seed ``004`` §4).

The AIOps flow is a second workflow next to the chat diagnosis: a supervisor
routes between a planner agent and an executor agent until it says FINISH,
a reporter writes the alert report, and a deterministic rule evaluator checks
it. Every ``value`` below is a wire string and never changes.
"""

from __future__ import annotations

import enum

__all__ = [
    "AiOpsAgent",
    "AiOpsMode",
    "AiOpsNode",
    "AiOpsOutcome",
    "AiOpsReasonCode",
    "SupervisorChoice",
]


class AiOpsMode(enum.StrEnum):
    """What the run is about (spec §11).

    ``PAYLOAD_TARGETED``: a structured alert payload was given and the report
    must focus on exactly those alerts. ``AUTO_DISCOVERY``: no payload; the
    executor first discovers the active alerts with the alert tools.
    """

    PAYLOAD_TARGETED = "PAYLOAD_TARGETED"
    AUTO_DISCOVERY = "AUTO_DISCOVERY"


class SupervisorChoice(enum.StrEnum):
    """The ``next`` of a supervisor decision: which agent runs next, or FINISH."""

    PLANNER_AGENT = "planner_agent"
    EXECUTOR_AGENT = "executor_agent"
    FINISH = "FINISH"


class AiOpsAgent(enum.StrEnum):
    """The four LLM agents of the AIOps flow; each is an :class:`AgentInvoker` effect."""

    SUPERVISOR = "supervisor"
    PLANNER = "planner"
    EXECUTOR = "executor"
    REPORTER = "reporter"

    @property
    def node(self) -> AiOpsNode:
        """The node this agent runs as."""
        return AiOpsNode(self.value)


class AiOpsNode(enum.StrEnum):
    """Every node of the AIOps flow: the four agents and the deterministic fallback."""

    SUPERVISOR = "supervisor"
    PLANNER = "planner"
    EXECUTOR = "executor"
    REPORTER = "reporter"
    FALLBACK = "fallback"


class AiOpsOutcome(enum.StrEnum):
    """How an AIOps run ended: with the reporter's report, or the fallback report."""

    REPORTED = "REPORTED"
    FALLBACK = "FALLBACK"


class AiOpsReasonCode(enum.StrEnum):
    """Why an AIOps node failed or the run left for the fallback."""

    SUPERVISOR_FAILED = "SUPERVISOR_FAILED"
    PLANNER_FAILED = "PLANNER_FAILED"
    EXECUTOR_FAILED = "EXECUTOR_FAILED"
    EXECUTOR_TOOL_BLOCKED = "EXECUTOR_TOOL_BLOCKED"
    EXECUTOR_INVALID_OUTPUT = "EXECUTOR_INVALID_OUTPUT"
    REPORTER_FAILED = "REPORTER_FAILED"
    STEP_BUDGET_EXHAUSTED = "STEP_BUDGET_EXHAUSTED"
    NO_PROGRESS = "NO_PROGRESS"
