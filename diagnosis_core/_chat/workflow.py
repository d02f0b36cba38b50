"""The chat diagnosis workflow as the kernel sees it: :data:`DIAGNOSIS_WORKFLOW` (spec §12).

One descriptor (``_kernel/journal/workflow.py``) states what the journal, the fold,
the resume rule, the recorder and the driver need to know of this workflow:
the journal's call names (:class:`JournalCall`: the four agents and the
gatekeeper), the machine (:func:`start_diagnosis`, :func:`next_action`,
:func:`advance`), the request codec, how an action is recorded
(:func:`expected_call`), how a recorded outcome is fed back
(:func:`entry_result`, :func:`outcome_of`), the §12.4 derivation of a
gatekeeper result from recorded tool calls, and the resume rule: planner,
verifier and composer calls are re-sent; the executor only when the host
declares its tools replay-safe; the read-only gatekeeper when the host asks.

Decisions where the spec is silent:

* An agent that returns something other than text is recorded as a
  ``non_retryable`` error (``TypeError: …``): a journal holds text only.
* A gatekeeper result that is not JSON is recorded as the result
  ``{"unserializable": "<repr>"}``, which normalizes to
  ``GATEKEEPER_INVALID_RESULT`` like the live value.
* A journal converts to a scenario (``journal_to_scenario``) when it is
  *complete*, and by default only when the §9 scripted doubles reproduce every
  recorded error message exactly.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from .._kernel.errors import JournalError, LedgerError
from .._kernel.journal.codec import (
    JournalBase,
    JournalEntryBase,
    JournalOutcome,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedToolInvocation,
)
from .._kernel.journal.fold import (
    agent_outcome,
    agent_result,
    inexact,
    scenario_response,
    scripted_message,
)
from .._kernel.journal.workflow import ExpectedCallBase, Workflow
from .._kernel.machine.results import AgentFailed, AgentReplied
from .._kernel.wire.converter import to_wire
from .._kernel.wire.facts import repair_text
from .._kernel.wire.json import JsonValue, canonical_json, sha256_text
from .enums import AgentName
from .facts import gatekeeper_fact_json
from .machine import (
    PLAIN_FACT,
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisState,
    EffectResult,
    Finished,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
    advance,
    next_action,
    start_diagnosis,
)
from .request_codec import load_request, request_to_wire

__all__ = [
    "DIAGNOSIS_WORKFLOW",
    "JOURNAL_FORMAT",
    "JOURNAL_FORMAT_V1",
    "DiagnosisWorkflow",
    "ExpectedCall",
    "JournalCall",
    "entry_result",
    "expected_call",
    "outcome_of",
]


JOURNAL_FORMAT = "diagnosis_journal_v2"
"""The ``format`` new chat diagnosis journals are written in."""

JOURNAL_FORMAT_V1 = "diagnosis_journal_v1"
"""The ``format`` of chat diagnosis journals written before v2; still read, folded and replayed."""


class JournalCall(enum.StrEnum):
    """The effect an entry records: one of the four agents, or the gatekeeper."""

    PLANNER = "planner"
    EXECUTOR = "executor"
    VERIFIER = "verifier"
    COMPOSER = "composer"
    GATEKEEPER = "gatekeeper"


class DiagnosisWorkflow(
    Workflow[
        DiagnosisRequest,
        DiagnosisState,
        InvokeAgent | CallGatekeeper,
        Finished,
        EffectResult,
        JournalCall,
        "ExpectedCall",
    ]
):
    """The chat diagnosis workflow (spec §2, §12): its machine, journal form and resume rule.

    Its one instance is :data:`DIAGNOSIS_WORKFLOW`; the kernel's journal,
    fold, resume and driver call its methods.
    """

    __slots__ = ()

    name = "diagnosis"
    journal_name = "Journal"
    format = JOURNAL_FORMAT
    v1_format = JOURNAL_FORMAT_V1
    calls = JournalCall
    executor = JournalCall.EXECUTOR
    gatekeeper = frozenset({JournalCall.GATEKEEPER})
    resent = frozenset({JournalCall.PLANNER, JournalCall.VERIFIER, JournalCall.COMPOSER})
    request_type = DiagnosisRequest
    finished_type = Finished
    round_name = "round"

    def load_request(self, data: object) -> DiagnosisRequest:
        """A request loaded strictly from its wire form (``load_request``)."""
        return load_request(data)

    # The codec's and the machine's own functions are the methods: a wrapper would only repeat them.
    request_to_wire = staticmethod(request_to_wire)
    start = staticmethod(start_diagnosis)
    next_action = staticmethod(next_action)
    advance = staticmethod(advance)

    def expected_call(self, action: InvokeAgent | CallGatekeeper) -> ExpectedCall:
        """The entry header an action must be recorded under (hash included)."""
        if isinstance(action, InvokeAgent):
            return ExpectedCall(
                JournalCall(action.agent.value), action.round, action.attempt,
                sha256_text(action.input),
            )
        document = {"run_id": action.run_id, "executor_output": to_wire(action.executor_output)}
        return ExpectedCall(
            JournalCall.GATEKEEPER, action.round, 1, sha256_text(canonical_json(document))
        )

    def outcome_of(self, result: EffectResult) -> JournalOutcome:
        """The fact to record for an effect result (see the module's decisions)."""
        if isinstance(result, AgentReplied | AgentFailed):
            return agent_outcome(result)
        if isinstance(result, GatekeeperReturned):
            # The one fact codec (spec §12.1): a storable plain copy, or the
            # ``unserializable`` stand-in; never raises.
            return RecordedGatekeeperResult(gatekeeper_fact_json(result.raw))
        message = repair_text(result.message) if isinstance(result.message, str) else ""
        return RecordedGatekeeperError(message)

    def entry_result(self, entry: JournalEntryBase[JournalCall]) -> EffectResult:
        """The machine result a finished entry stands for: what :meth:`advance` is fed."""
        outcome = entry.outcome
        if isinstance(outcome, RecordedGatekeeperResult):
            return GatekeeperReturned(outcome.result, origin=PLAIN_FACT)  # a fresh decoded copy
        if isinstance(outcome, RecordedGatekeeperError):
            return GatekeeperFailed(outcome.message)
        return agent_result(entry)

    def replay_output(
        self, journal: JournalBase[DiagnosisRequest, Any], state: DiagnosisState
    ) -> dict[str, JsonValue]:
        """The run's result as ``replay`` writes it."""
        wire = to_wire(state.result)
        assert isinstance(wire, dict)
        return wire

    def to_scenario(
        self, journal: JournalBase[DiagnosisRequest, Any], exact: bool
    ) -> dict[str, JsonValue]:
        """The §9 scenario of a complete journal: responses, gatekeeper entries, the request.

        Converted only when the scripted doubles reproduce every recorded error
        message (``exact``; see ``journal_to_scenario``).
        """
        responses: dict[str, list[JsonValue]] = {agent.value: [] for agent in AgentName}
        gatekeeper: list[JsonValue] = []
        for index, entry in enumerate(journal.entries):
            outcome, where = entry.outcome, f"entries[{index}]"  # complete: all finished
            if isinstance(outcome, RecordedGatekeeperResult):
                gatekeeper.append({"result": outcome.result})
            elif isinstance(outcome, RecordedGatekeeperError):
                # The scripted gatekeeper never raises with an empty message: "" is inexact too.
                message = scripted_message(outcome.message, "NonRetryableError")
                message = message or inexact(outcome.message, exact, where)
                gatekeeper.append({"error": {"message": message}})
            else:  # an agent's reply or error
                responses[entry.call.value].append(scenario_response(outcome, exact, where))
        scenario: dict[str, JsonValue] = dict(request_to_wire(journal.request))
        scenario["responses"] = {agent: items for agent, items in responses.items()}
        scenario["gatekeeper"] = gatekeeper
        return scenario

    def derive(
        self, action: InvokeAgent | CallGatekeeper, invocations: Sequence[RecordedToolInvocation]
    ) -> str:
        """The canonical JSON of the reference gatekeeper's result over recorded tool calls (§12.4).

        What a ``derived`` gatekeeper entry must hold: the package's reference
        gatekeeper (the one :meth:`ToolRecorder.gatekeeper` runs) over the
        ledger of the tool calls the journal records before it. A ledger the
        journal cannot hold (a duplicate id, a malformed record) is a
        :class:`JournalError`.
        """
        from .._kernel.tools.ledger import ToolLedger, invocation_from_record
        from .reference_gatekeeper import ReferenceGatekeeper

        if not isinstance(action, CallGatekeeper):  # the codec allows derived gatekeepers only
            raise JournalError("derived: only gatekeeper calls are derived")
        try:
            ledger = ToolLedger(
                tuple(invocation_from_record(item.to_record()) for item in invocations)
            )
        except LedgerError as error:
            raise JournalError(f"tool_invocations: not a ledger ({error})") from None
        result = ReferenceGatekeeper(ledger)(action.run_id, action.executor_output)
        return canonical_json(result)


DIAGNOSIS_WORKFLOW = DiagnosisWorkflow()
"""The chat diagnosis workflow (spec §2, §12): its machine, journal form and resume rule."""

expected_call = DIAGNOSIS_WORKFLOW.expected_call
entry_result = DIAGNOSIS_WORKFLOW.entry_result
outcome_of = DIAGNOSIS_WORKFLOW.outcome_of


@attrs.frozen
class ExpectedCall(ExpectedCallBase[JournalCall]):
    """The call the machine asks for: what a journal entry must say."""

    _workflow: ClassVar[DiagnosisWorkflow] = DIAGNOSIS_WORKFLOW
