"""diagnosis_core: the pure, typed core of an LLM diagnosis workflow.

The package owns the state, the router, every agent-output parser, every
projection that decides what an agent may see, the verdict ceiling, the retry
context, the fallback renderers and the trace of the chat diagnosis workflow
specified in the protocol (``docs/protocol.md``). It performs no I/O: the LLM
agents and the gatekeeper are effects passed in as :class:`AgentInvoker` and
:class:`Gatekeeper` callables.

This namespace is what a host embedding the chat workflow uses: the request
and configuration, the effects, the drivers, the result and its trace, the
errors, the failure classifier, observers, the reference gatekeeper and
replay; each of them lives here alone, but for ``scenario_effects``, re-exported
from :mod:`diagnosis_core.scenarios`. The other public namespaces are cut by
audience: :mod:`diagnosis_core.protocol` (payload types, parsers, schemas: for
prompt and provider authors), :mod:`diagnosis_core.machine` (the sans-IO
machine, routing table and the pieces of a driver loop: for custom drivers and
engine adapters), :mod:`diagnosis_core.journal`,
:mod:`diagnosis_core.tools` (the recorder and the executor's tool loop),
:mod:`diagnosis_core.scenarios` (the scripted doubles behind §9 replay),
:mod:`diagnosis_core.aiops`, :mod:`diagnosis_core.prompts` (the agents'
system prompts, spec §17), :mod:`diagnosis_core.testing` and
``diagnosis_core.adapters.*``. ``import diagnosis_core`` loads none of the
journal, tools, AIOps or adapter modules. A name that used to live here and
moved to one of those namespaces still resolves here, with a
``DeprecationWarning`` naming its new home. The underscore modules are private.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

from ._chat.config import (
    DiagnosisConfig,
)
from ._chat.drivers import (
    RunOptions,
    aiter_diagnosis,
    arun_diagnosis,
    iter_diagnosis,
    run_diagnosis,
)
from ._chat.effects import (
    AsyncEffects,
    AsyncGatekeeper,
    Effects,
    Gatekeeper,
)
from ._chat.enums import (
    Outcome,
    ReasonCode,
    Verdict,
)
from ._chat.machine import (
    DiagnosisRequest,
    DiagnosisResult,
    DiagnosisState,
    build_trace_report,
)
from ._chat.observe import (
    DiagnosisObserver,
)
from ._chat.payloads import (
    ExecutorEvidence,
    HistoryMessage,
    Skill,
)
from ._chat.trace import (
    TraceEvent,
    TraceReport,
)
from ._kernel.driving.effects import (
    AgentInvoker,
    AsyncAgentInvoker,
)
from ._kernel.driving.observe import (
    Observer,
    ObserverWarning,
)
from ._kernel.enums import (
    FailureKind,
    Locale,
)
from ._kernel.errors import (
    ConfigError,
    DiagnosisError,
    JournalError,
    LedgerError,
    MachineError,
    NonRetryableError,
    PayloadError,
    RunOptionsError,
    ScenarioError,
    ToolBlockedError,
)
from ._kernel.machine.classify import (
    FailureClassifier,
    classify_failure,
    default_failure_classifier,
)
from ._kernel.machine.config import (
    RunConfig,
)
from ._kernel.public import lazy_attributes
from ._kernel.public import publish as _publish
from ._kernel.wire.converter import (
    from_json,
    from_wire,
    to_json,
    to_wire,
)
from ._kernel.wire.json import (
    JsonValue,
)

if TYPE_CHECKING:
    from ._chat.reference_gatekeeper import (
        ReferenceGatekeeper,
    )
    from ._chat.replay import (
        Scenario,
        load_scenario,
        replay,
        replay_scenario,
        scenario_effects,
        scenario_request,
    )
    from ._kernel.tools.ledger import (
        ToolInvocation,
        ToolLedger,
    )
    from .machine import (
        Action as Action,
    )
    from .machine import (
        AgentFailed as AgentFailed,
    )
    from .machine import (
        AgentName as AgentName,
    )
    from .machine import (
        AgentReplied as AgentReplied,
    )
    from .machine import (
        CallCounts as CallCounts,
    )
    from .machine import (
        CallGatekeeper as CallGatekeeper,
    )
    from .machine import (
        EffectResult as EffectResult,
    )
    from .machine import (
        EventDetails as EventDetails,
    )
    from .machine import (
        Finished as Finished,
    )
    from .machine import (
        GatekeeperFailed as GatekeeperFailed,
    )
    from .machine import (
        GatekeeperReturned as GatekeeperReturned,
    )
    from .machine import (
        InvokeAgent as InvokeAgent,
    )
    from .machine import (
        NodeName as NodeName,
    )
    from .machine import (
        NodeStatus as NodeStatus,
    )
    from .machine import (
        advance as advance,
    )
    from .machine import (
        next_action as next_action,
    )
    from .machine import (
        start_diagnosis as start_diagnosis,
    )

    # Moved to an audience namespace; still typed here (explicit re-exports).
    from .protocol import (
        SCHEMA_NAMES as SCHEMA_NAMES,
    )
    from .protocol import (
        SCHEMA_PROFILES as SCHEMA_PROFILES,
    )
    from .protocol import (
        BindingCheckStatus as BindingCheckStatus,
    )
    from .protocol import (
        CheckedBinding as CheckedBinding,
    )
    from .protocol import (
        Claim as Claim,
    )
    from .protocol import (
        ComposerOutput as ComposerOutput,
    )
    from .protocol import (
        EvidenceBinding as EvidenceBinding,
    )
    from .protocol import (
        EvidenceStatus as EvidenceStatus,
    )
    from .protocol import (
        FactCheck as FactCheck,
    )
    from .protocol import (
        GatekeeperResult as GatekeeperResult,
    )
    from .protocol import (
        GatekeeperStatus as GatekeeperStatus,
    )
    from .protocol import (
        Hypothesis as Hypothesis,
    )
    from .protocol import (
        PayloadName as PayloadName,
    )
    from .protocol import (
        PlannerPlan as PlannerPlan,
    )
    from .protocol import (
        PlanStep as PlanStep,
    )
    from .protocol import (
        ToolTraceEntry as ToolTraceEntry,
    )
    from .protocol import (
        Verification as Verification,
    )
    from .protocol import (
        VerifierOutput as VerifierOutput,
    )
    from .protocol import (
        json_schema as json_schema,
    )
    from .protocol import (
        parse_composer_output as parse_composer_output,
    )
    from .protocol import (
        parse_executor_evidence as parse_executor_evidence,
    )
    from .protocol import (
        parse_gatekeeper_result as parse_gatekeeper_result,
    )
    from .protocol import (
        parse_planner_plan as parse_planner_plan,
    )
    from .protocol import (
        parse_verifier_output as parse_verifier_output,
    )
    from .scenarios import (
        ScriptedAgent as ScriptedAgent,
    )
    from .scenarios import (
        ScriptedGatekeeper as ScriptedGatekeeper,
    )

__version__ = "0.1.0"
"""The package version (the distribution's, as ``diagnosis-core --version`` prints it)."""

__all__ = [
    "AgentInvoker",
    "AsyncAgentInvoker",
    "AsyncEffects",
    "AsyncGatekeeper",
    "ConfigError",
    "DiagnosisConfig",
    "DiagnosisError",
    "DiagnosisObserver",
    "DiagnosisRequest",
    "DiagnosisResult",
    "DiagnosisState",
    "Effects",
    "ExecutorEvidence",
    "FailureClassifier",
    "FailureKind",
    "Gatekeeper",
    "HistoryMessage",
    "JournalError",
    "JsonValue",
    "LedgerError",
    "Locale",
    "MachineError",
    "NonRetryableError",
    "Observer",
    "ObserverWarning",
    "Outcome",
    "PayloadError",
    "ReasonCode",
    "ReferenceGatekeeper",
    "RunConfig",
    "RunOptions",
    "RunOptionsError",
    "Scenario",
    "ScenarioError",
    "Skill",
    "ToolBlockedError",
    "ToolInvocation",
    "ToolLedger",
    "TraceEvent",
    "TraceReport",
    "Verdict",
    "__version__",
    "aiter_diagnosis",
    "arun_diagnosis",
    "build_trace_report",
    "classify_failure",
    "default_failure_classifier",
    "from_json",
    "from_wire",
    "iter_diagnosis",
    "load_scenario",
    "replay",
    "replay_scenario",
    "run_diagnosis",
    "scenario_effects",
    "scenario_request",
    "to_json",
    "to_wire",
]

# Rarely used at start-up (replay, the reference gatekeeper, the ledger): loaded on
# first access, which keeps ``import diagnosis_core`` cheap. The names are typed
# through the TYPE_CHECKING imports above; ``__getattr__`` is hidden from type
# checkers so that a misspelt name stays an error.
_LAZY: dict[str, str] = {
    "ReferenceGatekeeper": "._chat.reference_gatekeeper",
    "Scenario": "._chat.replay",
    "load_scenario": "._chat.replay",
    "replay": "._chat.replay",
    "replay_scenario": "._chat.replay",
    "scenario_effects": "._chat.replay",
    "scenario_request": "._chat.replay",
    "ToolInvocation": "._kernel.tools.ledger",
    "ToolLedger": "._kernel.tools.ledger",
}

# Names that moved to an audience namespace (one release of grace, with a warning).
_MOVED: dict[str, str] = {
    "SCHEMA_NAMES": "diagnosis_core.protocol",
    "SCHEMA_PROFILES": "diagnosis_core.protocol",
    "Action": "diagnosis_core.machine",
    "AgentFailed": "diagnosis_core.machine",
    "AgentName": "diagnosis_core.machine",
    "AgentReplied": "diagnosis_core.machine",
    "BindingCheckStatus": "diagnosis_core.protocol",
    "CallCounts": "diagnosis_core.machine",
    "CallGatekeeper": "diagnosis_core.machine",
    "CheckedBinding": "diagnosis_core.protocol",
    "Claim": "diagnosis_core.protocol",
    "ComposerOutput": "diagnosis_core.protocol",
    "EffectResult": "diagnosis_core.machine",
    "EventDetails": "diagnosis_core.machine",
    "EvidenceBinding": "diagnosis_core.protocol",
    "EvidenceStatus": "diagnosis_core.protocol",
    "FactCheck": "diagnosis_core.protocol",
    "Finished": "diagnosis_core.machine",
    "GatekeeperFailed": "diagnosis_core.machine",
    "GatekeeperResult": "diagnosis_core.protocol",
    "GatekeeperReturned": "diagnosis_core.machine",
    "GatekeeperStatus": "diagnosis_core.protocol",
    "Hypothesis": "diagnosis_core.protocol",
    "InvokeAgent": "diagnosis_core.machine",
    "NodeName": "diagnosis_core.machine",
    "NodeStatus": "diagnosis_core.machine",
    "PayloadName": "diagnosis_core.protocol",
    "PlanStep": "diagnosis_core.protocol",
    "PlannerPlan": "diagnosis_core.protocol",
    "ScriptedAgent": "diagnosis_core.scenarios",
    "ScriptedGatekeeper": "diagnosis_core.scenarios",
    "ToolTraceEntry": "diagnosis_core.protocol",
    "Verification": "diagnosis_core.protocol",
    "VerifierOutput": "diagnosis_core.protocol",
    "advance": "diagnosis_core.machine",
    "json_schema": "diagnosis_core.protocol",
    "next_action": "diagnosis_core.machine",
    "parse_composer_output": "diagnosis_core.protocol",
    "parse_executor_evidence": "diagnosis_core.protocol",
    "parse_gatekeeper_result": "diagnosis_core.protocol",
    "parse_planner_plan": "diagnosis_core.protocol",
    "parse_verifier_output": "diagnosis_core.protocol",
    "start_diagnosis": "diagnosis_core.machine",
}

if not TYPE_CHECKING:
    _load = lazy_attributes(__name__, __name__, _LAZY, globals())

    def __getattr__(name: str) -> object:
        home = _MOVED.get(name)
        if home is not None:
            warnings.warn(
                f"diagnosis_core.{name} moved to {home}.{name}; import it from there",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(home), name)
        return _load(name)

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY, *_MOVED})

# Public classes name this namespace, not the private module defining them.
_publish(__name__, globals(), __all__)
