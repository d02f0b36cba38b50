"""The AIOps workflow as the kernel sees it: :data:`AIOPS_WORKFLOW` (spec §11, §12).

The same kernel descriptor as the chat diagnosis's (``_kernel/journal/workflow.py``):
the journal's calls are the four agents (:class:`AiOpsAgent`:
``supervisor|planner|executor|reporter``; there is no gatekeeper in this
flow), a ``round`` is the supervisor ``step``, every outcome is an agent's,
and the request is the :class:`AiOpsRequest` wire form ``{"run", "alerts",
"config"}``. The resume rule: supervisor, planner and reporter calls are
re-sent with the identical input as the same attempt; the executor only when
the host declares its tools replay-safe (spec §12.3).

Decisions where the spec is silent:

* The run's tool ledger (:func:`aiops_journal_ledger`) is the executor entries'
  ``tool_invocations`` in entry order; an id recorded twice is a
  :class:`JournalError` naming the second place. A journal's scenario gets a
  ``tool_ledger`` only when some executor entry carries ``tool_invocations``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from .._kernel.errors import JournalError, ScenarioError
from .._kernel.journal.codec import JournalBase
from .._kernel.journal.fold import agent_outcome, agent_result, scenario_response
from .._kernel.journal.recorded import RecordedAgentError, RecordedReply
from .._kernel.journal.workflow import ExpectedCallBase, Workflow
from .._kernel.machine.results import AgentFailed, AgentReplied
from .._kernel.scenario.scripted import load_tool_ledger
from .._kernel.tools.ledger import ToolLedger
from .._kernel.wire.converter import to_wire
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
from .rules import evaluate_aiops_run

__all__ = [
    "AIOPS_JOURNAL_FORMAT",
    "AIOPS_JOURNAL_FORMAT_V1",
    "AIOPS_WORKFLOW",
    "AiOpsExpectedCall",
    "AiOpsWorkflow",
    "aiops_expected_call",
    "aiops_journal_ledger",
    "aiops_output",
]

_Journal = JournalBase[AiOpsRequest, Any]

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

    def load_request(self, data: object) -> AiOpsRequest:
        """A request loaded strictly from its wire form."""
        return load_aiops_request(data)

    # The codec's, the machine's and the kernel's agent-fact functions are the methods: a
    # wrapper would only repeat them (every outcome of this workflow is an agent's).
    request_to_wire = staticmethod(aiops_request_to_wire)
    start = staticmethod(start_aiops)
    next_action = staticmethod(next_aiops_action)
    advance = staticmethod(advance_aiops)
    entry_result = staticmethod(agent_result)
    outcome_of = staticmethod(agent_outcome)

    def expected_call(self, action: InvokeAiOpsAgent) -> AiOpsExpectedCall:
        """The entry header an action must be recorded under: agent, step, attempt, input hash."""
        return AiOpsExpectedCall(
            action.agent, action.step, action.attempt, sha256_text(action.input)
        )

    def replay_output(self, journal: _Journal, state: AiOpsState) -> dict[str, JsonValue]:
        """:func:`aiops_output` of the run, its rules checked against the journal's ledger."""
        return aiops_output(state, aiops_journal_ledger(journal))

    def to_scenario(self, journal: _Journal, exact: bool) -> dict[str, JsonValue]:
        """The AIOps scenario of a complete journal (``"workflow": "aiops"``).

        Each agent's recorded outcomes in call order become its ``responses``;
        ``run``, ``alerts`` and ``config`` come from the request, ``tool_ledger``
        from the executor entries' ``tool_invocations`` when any carries them.
        """
        responses: dict[str, list[JsonValue]] = {agent.value: [] for agent in AiOpsAgent}
        for index, entry in enumerate(journal.entries):
            outcome = entry.outcome
            assert isinstance(outcome, RecordedReply | RecordedAgentError)
            responses[entry.call.value].append(
                scenario_response(outcome, exact, f"entries[{index}]")
            )
        scenario: dict[str, JsonValue] = {"workflow": self.name}
        scenario.update(aiops_request_to_wire(journal.request))
        scenario["responses"] = {agent: items for agent, items in responses.items()}
        records = _ledger_records(journal)
        if records is not None:
            scenario["tool_ledger"] = records
        return scenario


AIOPS_WORKFLOW = AiOpsWorkflow()
"""The AIOps workflow (spec §11, §12): its machine, journal form and resume rule."""

aiops_expected_call = AIOPS_WORKFLOW.expected_call


@attrs.frozen
class AiOpsExpectedCall(ExpectedCallBase[AiOpsAgent]):
    """The agent call the AIOps machine asks for: what a journal entry must say.

    ``round`` is the supervisor step; :meth:`describe` says ``executor step 2 attempt 1``.
    """

    _workflow: ClassVar[AiOpsWorkflow] = AIOPS_WORKFLOW


def aiops_output(state: AiOpsState, ledger: ToolLedger) -> dict[str, JsonValue]:
    """The §11 replay output of a finished run whose tools recorded ``ledger``.

    What :func:`replay_aiops` returns for a scenario, for a run driven any
    other way (a journal, a host's own loop): the result, plus the rule
    evaluation against ``ledger`` (null for a fallback).
    """
    wire = to_wire(state.result)
    assert isinstance(wire, dict)
    evaluation = evaluate_aiops_run(state, ledger)
    return {
        "workflow": AiOpsWorkflow.name,
        **wire,
        "aiops_rule_evaluation": None if evaluation is None else to_wire(evaluation),
    }


def _ledger_records(journal: _Journal) -> list[JsonValue] | None:
    """The §13 records of every executor entry in order; None when no entry carries any.

    An invocation id recorded twice is a :class:`JournalError` naming the second place.
    """
    records: list[JsonValue] = []
    seen: set[str] = set()
    present = False
    for index, entry in enumerate(journal.entries):
        if entry.tool_invocations is None:
            continue
        present = True
        for position, item in enumerate(entry.tool_invocations):
            if item.invocation_id in seen:
                raise JournalError(
                    f"entries[{index}].tool_invocations[{position}].invocation_id: "
                    f"{item.invocation_id!r} is recorded twice in the run"
                )
            seen.add(item.invocation_id)
            records.append(item.to_record())
    return records if present else None


def aiops_journal_ledger(journal: _Journal) -> ToolLedger:
    """The run's tool ledger: the executor entries' ``tool_invocations``, in entry order.

    Raises :class:`JournalError` for an invocation id recorded twice.
    """
    records = _ledger_records(journal)
    if records is None:
        return ToolLedger()
    try:
        return load_tool_ledger(records)
    except ScenarioError as error:
        raise JournalError(f"tool_invocations: {error}") from None
