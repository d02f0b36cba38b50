"""The pure trace of an AIOps run (spec §8 style): one event per executed node.

Events carry no timestamps. ``step`` takes the place of the chat trace's
``round``: it is the supervisor step the node belongs to (the supervisor's own
decision number; for the planner, executor and reporter the step of the
decision that chose them; for the fallback the last step started).
Everything here round-trips through the converter to plain JSON and back.
"""

from __future__ import annotations

import attrs

from .._kernel.enums import NodeStatus
from .._kernel.wire.converter import register_sparse_details
from .enums import AiOpsAgent, AiOpsNode, AiOpsReasonCode, SupervisorChoice

__all__ = [
    "AiOpsCallCounts",
    "AiOpsEventDetails",
    "AiOpsInvocationRecord",
    "AiOpsTraceEvent",
]


@attrs.frozen
class AiOpsEventDetails:
    """Node-specific details of an AIOps trace event; absent fields are omitted on the wire.

    supervisor: ``next`` and ``repeats`` (how many times in a row ``next`` has
    been chosen without new tool invocations); planner: ``plan_steps``;
    executor: ``findings``, ``tool_invocations`` and ``new_tool_invocations``
    (ids never reported before: progress); reporter: ``findings``; failed
    attempts: ``error`` (the parse error or the exception).
    """

    next: SupervisorChoice | None = None
    repeats: int | None = None
    plan_steps: int | None = None
    findings: int | None = None
    tool_invocations: int | None = None
    new_tool_invocations: int | None = None
    error: str | None = None


@attrs.frozen
class AiOpsTraceEvent:
    """One executed node. ``input_sha256`` is set for LLM nodes only."""

    seq: int
    node: AiOpsNode
    step: int
    attempt: int
    status: NodeStatus
    reason_code: AiOpsReasonCode | None
    input_sha256: str | None
    details: AiOpsEventDetails = attrs.field(factory=AiOpsEventDetails)


@attrs.frozen
class AiOpsInvocationRecord:
    """One LLM invocation with the exact input string it was sent."""

    agent: AiOpsAgent
    step: int
    attempt: int
    input: str


@attrs.frozen
class AiOpsCallCounts:
    """Invocations per agent (all four keys, zeros too)."""

    supervisor: int = 0
    planner: int = 0
    executor: int = 0
    reporter: int = 0

    def incremented(self, agent: AiOpsAgent) -> AiOpsCallCounts:
        """A copy with one more call of ``agent``."""
        return attrs.evolve(self, **{agent.value: getattr(self, agent.value) + 1})


# The kernel's converter knows no workflow: the AIOps details register themselves.
register_sparse_details(AiOpsEventDetails)
