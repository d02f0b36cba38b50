"""The AIOps workflow as the kernel sees it: :data:`AIOPS_WORKFLOW` (spec §11, §12).

The same kernel descriptor as the chat diagnosis's (``_kernel/journal/workflow.py``):
the journal's calls are the four agents (:class:`AiOpsAgent`:
``supervisor|planner|executor|reporter``; there is no gatekeeper in this
flow), a ``round`` is the supervisor ``step``, every outcome is an agent's,
and the request is the :class:`AiOpsRequest` wire form ``{"run", "alerts",
"config"}``. The resume rule: supervisor, planner and reporter calls are
re-sent with the identical input as the same attempt; the executor only when
the host declares its tools replay-safe (spec §12.3).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from .._kernel.journal.codec import JournalEntryBase, JournalOutcome
from .._kernel.journal.fold import agent_outcome, agent_result
from .._kernel.journal.workflow import ExpectedCallBase, Workflow
from .._kernel.machine.results import AgentFailed, AgentReplied
from .._kernel.wire.json import JsonValue, sha256_text
from .enums import AiOpsAgent
from .machine import (
    AiOpsFinished,
    AiOpsRequest,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from .request_codec import aiops_request_to_wire, load_aiops_request

__all__ = [
    "AIOPS_JOURNAL_FORMAT",
    "AIOPS_JOURNAL_FORMAT_V1",
    "AIOPS_WORKFLOW",
    "AiOpsExpectedCall",
    "AiOpsWorkflow",
    "aiops_expected_call",
]

AIOPS_JOURNAL_FORMAT = "aiops_journal_v2"
"""The ``format`` new AIOps journals are written in (v2: spec §12.2, §12.3)."""

AIOPS_JOURNAL_FORMAT_V1 = "aiops_journal_v1"
"""The ``format`` of AIOps journals written before v2; still read, folded and replayed."""


class AiOpsWorkflow(
    Workflow[
        AiOpsRequest,
        AiOpsState,
        InvokeAiOpsAgent,
        AiOpsFinished,
        AgentReplied | AgentFailed,
        AiOpsAgent,
        "AiOpsExpectedCall",
    ]
):
    """The AIOps workflow (spec §11, §12): its machine, journal form and resume rule.

    Its one instance is :data:`AIOPS_WORKFLOW`; the kernel's journal, fold,
    resume and driver call its methods.
    """

    __slots__ = ()

    name = "aiops"
    journal_name = "AiOpsJournal"
    format = AIOPS_JOURNAL_FORMAT
    v1_format = AIOPS_JOURNAL_FORMAT_V1
    calls = AiOpsAgent
    executor = AiOpsAgent.EXECUTOR
    gatekeeper: frozenset[AiOpsAgent] = frozenset()
    resent = frozenset({AiOpsAgent.SUPERVISOR, AiOpsAgent.PLANNER, AiOpsAgent.REPORTER})
    request_type = AiOpsRequest
    finished_type = AiOpsFinished
    round_name = "step"

    def request_to_wire(self, request: AiOpsRequest) -> dict[str, JsonValue]:
        """The request's wire form (:func:`aiops_request_to_wire`)."""
        return aiops_request_to_wire(request)

    def load_request(self, data: object) -> AiOpsRequest:
        """A request loaded strictly from its wire form."""
        return load_aiops_request(data)

    def start(self, request: AiOpsRequest) -> AiOpsState:
        """The state a run starts in (:func:`start_aiops`)."""
        return start_aiops(request)

    def next_action(self, state: AiOpsState) -> InvokeAiOpsAgent | AiOpsFinished:
        """The agent call the machine asks for next (:func:`next_aiops_action`)."""
        return next_aiops_action(state)

    def advance(self, state: AiOpsState, result: AgentReplied | AgentFailed) -> AiOpsState:
        """The state after an agent's result (:func:`advance_aiops`)."""
        return advance_aiops(state, result)

    def expected_call(self, action: InvokeAiOpsAgent) -> AiOpsExpectedCall:
        """The entry header an action must be recorded under: agent, step, attempt, input hash."""
        return AiOpsExpectedCall(
            action.agent, action.step, action.attempt, sha256_text(action.input)
        )

    def entry_result(self, entry: JournalEntryBase[AiOpsAgent]) -> AgentReplied | AgentFailed:
        """The agent result a finished entry stands for."""
        return agent_result(entry)

    def outcome_of(self, result: AgentReplied | AgentFailed) -> JournalOutcome:
        """The fact to record for an agent's result."""
        return agent_outcome(result)


AIOPS_WORKFLOW = AiOpsWorkflow()
"""The AIOps workflow (spec §11, §12): its machine, journal form and resume rule."""

aiops_expected_call = AIOPS_WORKFLOW.expected_call


@attrs.frozen
class AiOpsExpectedCall(ExpectedCallBase[AiOpsAgent]):
    """The agent call the AIOps machine asks for: what a journal entry must say.

    ``round`` is the supervisor step; :meth:`describe` says ``executor step 2 attempt 1``.
    """

    _workflow: ClassVar[AiOpsWorkflow] = AIOPS_WORKFLOW
