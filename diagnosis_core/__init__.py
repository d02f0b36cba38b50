"""diagnosis_core: the pure, typed core of an LLM diagnosis workflow.

The package owns the state, the router, every agent-output parser, every
projection that decides what an agent may see, the verdict ceiling, the retry
context, the fallback renderers and the trace of the chat diagnosis workflow
specified in the protocol (``docs/protocol.md``). It performs no I/O: the LLM
agents and the gatekeeper are effects passed in as :class:`AgentInvoker` and
:class:`Gatekeeper` callables.

This namespace holds what a host embedding the chat workflow uses: the request
and configuration, the effects, the drivers, the machine, the results and trace,
the parsers and payloads, the schemas, replay, the errors, the reference
gatekeeper and the failure classifier. The building blocks the machine composes
(projections, routing table, agent inputs, retry context, verdict ceiling,
fallback renderers, the strict JSON reader) are in :mod:`diagnosis_core.blocks`;
the tool recorder is :mod:`diagnosis_core.tools`, the run journal
:mod:`diagnosis_core.journal`; the AIOps workflow is
:mod:`diagnosis_core.aiops`. ``import diagnosis_core`` loads neither. The
underscore modules are private.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._chat.drivers import (
    aiter_diagnosis,
    arun_diagnosis,
    iter_diagnosis,
    run_diagnosis,
)
from ._chat.effects import (
    AgentInvoker,
    AsyncAgentInvoker,
    AsyncEffects,
    AsyncGatekeeper,
    Effects,
    Gatekeeper,
)
from ._chat.enums import (
    AgentName,
    AnswerMode,
    BindingCheckStatus,
    EvidenceStatus,
    FailureKind,
    GatekeeperStatus,
    Locale,
    NodeName,
    NodeStatus,
    Outcome,
    ReasonCode,
    Verdict,
    Verification,
)
from ._chat.gatekeeper import (
    parse_gatekeeper_result,
)
from ._chat.machine import (
    Action,
    AgentFailed,
    AgentReplied,
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisResult,
    DiagnosisState,
    EffectResult,
    Finished,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
    advance,
    build_trace_report,
    next_action,
    start_diagnosis,
)
from ._chat.parsing import (
    PayloadName,
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from ._chat.payloads import (
    CheckedBinding,
    Claim,
    ComposerOutput,
    EvidenceBinding,
    ExecutorEvidence,
    FactCheck,
    GatekeeperResult,
    HistoryMessage,
    Hypothesis,
    PlannerPlan,
    PlanStep,
    Skill,
    ToolTraceEntry,
    VerifierOutput,
)
from ._chat.trace import (
    CallCounts,
    EventDetails,
    TraceEvent,
    TraceReport,
)
from ._kernel.classify import (
    FailureClassifier,
    classify_failure,
    default_failure_classifier,
)
from ._kernel.config import (
    DiagnosisConfig,
    RunConfig,
)
from ._kernel.converter import (
    from_json,
    from_wire,
    to_json,
    to_wire,
)
from ._kernel.errors import (
    ConfigError,
    DiagnosisError,
    JournalError,
    LedgerError,
    MachineError,
    NonRetryableError,
    PayloadError,
    ScenarioError,
    ToolBlockedError,
)
from ._kernel.json import (
    JsonValue,
)
from ._kernel.observe import (
    DiagnosisObserver,
    Observer,
    ObserverWarning,
)

if TYPE_CHECKING:
    from ._chat.replay import (
        Scenario,
        ScriptedAgent,
        ScriptedGatekeeper,
        load_scenario,
        replay,
        replay_scenario,
        scenario_effects,
        scenario_request,
    )
    from ._chat.schema import (
        SCHEMA_NAMES,
        SCHEMA_PROFILES,
        json_schema,
    )
    from ._kernel.ledger import (
        ReferenceGatekeeper,
        ToolInvocation,
        ToolLedger,
    )

__version__ = "0.1.0"
"""The package version (the distribution's, as ``diagnosis-core --version`` prints it)."""

__all__ = [
    "SCHEMA_NAMES",
    "SCHEMA_PROFILES",
    "Action",
    "AgentFailed",
    "AgentInvoker",
    "AgentName",
    "AgentReplied",
    "AnswerMode",
    "AsyncAgentInvoker",
    "AsyncEffects",
    "AsyncGatekeeper",
    "BindingCheckStatus",
    "CallCounts",
    "CallGatekeeper",
    "CheckedBinding",
    "Claim",
    "ComposerOutput",
    "ConfigError",
    "DiagnosisConfig",
    "DiagnosisError",
    "DiagnosisObserver",
    "DiagnosisRequest",
    "DiagnosisResult",
    "DiagnosisState",
    "EffectResult",
    "Effects",
    "EventDetails",
    "EvidenceBinding",
    "EvidenceStatus",
    "ExecutorEvidence",
    "FactCheck",
    "FailureClassifier",
    "FailureKind",
    "Finished",
    "Gatekeeper",
    "GatekeeperFailed",
    "GatekeeperResult",
    "GatekeeperReturned",
    "GatekeeperStatus",
    "HistoryMessage",
    "Hypothesis",
    "InvokeAgent",
    "JournalError",
    "JsonValue",
    "LedgerError",
    "Locale",
    "MachineError",
    "NodeName",
    "NodeStatus",
    "NonRetryableError",
    "Observer",
    "ObserverWarning",
    "Outcome",
    "PayloadError",
    "PayloadName",
    "PlanStep",
    "PlannerPlan",
    "ReasonCode",
    "ReferenceGatekeeper",
    "RunConfig",
    "Scenario",
    "ScenarioError",
    "ScriptedAgent",
    "ScriptedGatekeeper",
    "Skill",
    "ToolBlockedError",
    "ToolInvocation",
    "ToolLedger",
    "ToolTraceEntry",
    "TraceEvent",
    "TraceReport",
    "Verdict",
    "Verification",
    "VerifierOutput",
    "__version__",
    "advance",
    "aiter_diagnosis",
    "arun_diagnosis",
    "build_trace_report",
    "classify_failure",
    "default_failure_classifier",
    "from_json",
    "from_wire",
    "iter_diagnosis",
    "json_schema",
    "load_scenario",
    "next_action",
    "parse_composer_output",
    "parse_executor_evidence",
    "parse_gatekeeper_result",
    "parse_planner_plan",
    "parse_verifier_output",
    "replay",
    "replay_scenario",
    "run_diagnosis",
    "scenario_effects",
    "scenario_request",
    "start_diagnosis",
    "to_json",
    "to_wire",
]

# Rarely used at start-up (replay, the reference gatekeeper, schemas): loaded on
# first access, which keeps ``import diagnosis_core`` cheap. The names are typed
# through the TYPE_CHECKING imports above; ``__getattr__`` is hidden from type
# checkers so that a misspelt name stays an error.
_LAZY: dict[str, str] = {
    "ReferenceGatekeeper": "._kernel.ledger",
    "ToolInvocation": "._kernel.ledger",
    "ToolLedger": "._kernel.ledger",
    "Scenario": "._chat.replay",
    "ScriptedAgent": "._chat.replay",
    "ScriptedGatekeeper": "._chat.replay",
    "load_scenario": "._chat.replay",
    "replay": "._chat.replay",
    "replay_scenario": "._chat.replay",
    "scenario_effects": "._chat.replay",
    "scenario_request": "._chat.replay",
    "SCHEMA_NAMES": "._chat.schema",
    "SCHEMA_PROFILES": "._chat.schema",
    "json_schema": "._chat.schema",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})
