"""The sans-IO machine of the chat workflow (spec §2, §7): for custom drivers and auditors.

:func:`start_diagnosis`, :func:`next_action` and :func:`advance` are the whole
machine: it says which effect it needs (:class:`InvokeAgent`,
:class:`CallGatekeeper`) or that the run is :class:`Finished`, and takes the
effect's result (:class:`AgentReplied`, :class:`AgentFailed`,
:class:`GatekeeperReturned`, :class:`GatekeeperFailed`). Here too are what the
machine decides with — the routing table as data (:data:`ROUTING_TABLE`,
drawn by :func:`routing_mermaid`), the verified-input projection, the verdict
ceiling, the gatekeeper normalization, the fallback renderers — and the
pieces of a driver loop (:func:`perform_effect`, failure classification,
observers), and the workflow descriptor (:class:`Workflow`,
:data:`DIAGNOSIS_WORKFLOW`): the machine, call names, request codec and resume
rule in one typed value, which the journal, the drivers and the engine
adapters read. A host that only runs diagnoses uses the drivers of
:mod:`diagnosis_core` instead.
"""

from __future__ import annotations

# The machine and trace modules are public in full: their ``__all__`` is the
# list (star imports re-export exactly it, and mypy sees each name), added to
# this package's ``__all__`` below instead of being written out a second time.
from ._chat import machine as _machine
from ._chat import trace as _trace
from ._chat.drivers import (
    check_diagnosis_effects,
    check_diagnosis_request,
    describe_error,
    perform_effect,
    perform_effect_async,
)
from ._chat.enums import (
    AgentName,
    AnswerMode,
    NodeName,
    Outcome,
    ReasonCode,
)
from ._chat.gatekeeper import (
    NormalizedGatekeeperResult,
    gatekeeper_unavailable,
    normalize_gatekeeper_result,
)
from ._chat.machine import *  # noqa: F403
from ._chat.observe import (
    DiagnosisObserver,
)
from ._chat.projection import (
    AllowedClaim,
    VerifiedBinding,
    VerifiedClaim,
    VerifiedEvidence,
    VerifiedInput,
    count_trusted_bindings,
    project_verified_input,
    select_allowed_claims,
)
from ._chat.rendering import (
    ToolUsage,
    is_valid_tool_name,
    render_post_verification_fallback,
    render_pre_verification_fallback,
    summarize_tool_usage,
)
from ._chat.routing import (
    ROUTING_TABLE,
    Condition,
    Route,
    RoutingFacts,
    choose_route,
    routing_mermaid,
)
from ._chat.trace import *  # noqa: F403
from ._chat.verdict import (
    answer_mode_for,
    apply_verdict_ceiling,
    verdict_ceiling,
)
from ._chat.workflow import (
    DIAGNOSIS_WORKFLOW,
)
from ._kernel.driving.observe import (
    Observer,
    ObserverWarning,
    new_events,
    notify,
    observed_result,
)
from ._kernel.driving.options import (
    DEFAULT_MAX_QUESTION_CHARS,
)
from ._kernel.enums import (
    FailureKind,
    NodeStatus,
)
from ._kernel.errors import (
    MachineError,
)
from ._kernel.journal.workflow import (
    Workflow,
)
from ._kernel.machine.classify import (
    HTTP_CLIENT_ERRORS,
    FailureClassifier,
    HttpClientRule,
    classify_failure,
    default_failure_classifier,
)
from ._kernel.machine.results import (
    AgentFailed,
    AgentReplied,
)
from ._kernel.machine.text import (
    sanitize_item,
)
from ._kernel.public import publish as _publish

__all__ = [
    "DEFAULT_MAX_QUESTION_CHARS",
    "DIAGNOSIS_WORKFLOW",
    "HTTP_CLIENT_ERRORS",
    "ROUTING_TABLE",
    "AgentFailed",
    "AgentName",
    "AgentReplied",
    "AllowedClaim",
    "AnswerMode",
    "Condition",
    "DiagnosisObserver",
    "FailureClassifier",
    "FailureKind",
    "HttpClientRule",
    "MachineError",
    "NodeName",
    "NodeStatus",
    "NormalizedGatekeeperResult",
    "Observer",
    "ObserverWarning",
    "Outcome",
    "ReasonCode",
    "Route",
    "RoutingFacts",
    "ToolUsage",
    "VerifiedBinding",
    "VerifiedClaim",
    "VerifiedEvidence",
    "VerifiedInput",
    "Workflow",
    "answer_mode_for",
    "apply_verdict_ceiling",
    "check_diagnosis_effects",
    "check_diagnosis_request",
    "choose_route",
    "classify_failure",
    "count_trusted_bindings",
    "default_failure_classifier",
    "describe_error",
    "gatekeeper_unavailable",
    "is_valid_tool_name",
    "new_events",
    "normalize_gatekeeper_result",
    "notify",
    "observed_result",
    "perform_effect",
    "perform_effect_async",
    "project_verified_input",
    "render_post_verification_fallback",
    "render_pre_verification_fallback",
    "routing_mermaid",
    "sanitize_item",
    "select_allowed_claims",
    "summarize_tool_usage",
    "verdict_ceiling",
]
__all__ += _machine.__all__
__all__ += _trace.__all__

# Public classes name this namespace, not the private module defining them.
_publish(__name__, globals(), __all__)
