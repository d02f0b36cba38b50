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
journal, tools, AIOps or adapter modules. The underscore modules are private.
"""

from __future__ import annotations

import sys
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
from ._kernel.public import lazy_module, publish_namespace
from ._kernel.terminal import terminal_safe
from ._kernel.wire.converter import (
    from_json,
    from_wire,
    from_wire_array,
    to_json,
    to_wire,
    to_wire_array,
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

    # Moved to an audience namespace; still typed here (explicit re-exports).

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
    "from_wire_array",
    "iter_diagnosis",
    "load_scenario",
    "replay",
    "replay_scenario",
    "run_diagnosis",
    "scenario_effects",
    "scenario_request",
    "terminal_safe",
    "to_json",
    "to_wire",
    "to_wire_array",
]

# Rarely used at start-up (replay, the reference gatekeeper, the ledger): loaded on
# first access, which keeps ``import diagnosis_core`` cheap. The names are typed
# through the TYPE_CHECKING imports above; ``__getattr__`` is hidden from type
# checkers so that a misspelt name stays an error.
_LAZY = (
    ("._chat.reference_gatekeeper", ("ReferenceGatekeeper",)),
    ("._chat.replay", (
        "Scenario", "load_scenario", "replay", "replay_scenario", "scenario_effects",
        "scenario_request",
    )),
    ("._kernel.tools.ledger", ("ToolInvocation", "ToolLedger")),
)

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_module(__name__, __name__, _LAZY, globals())

# Public classes name their namespace, not the private module defining them: this one's
# now, every other one's as it is imported (``_kernel/public.py``).
publish_namespace(sys.modules[__name__])
