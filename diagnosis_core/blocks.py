"""The building blocks the chat machine composes, for hosts that want them directly.

The machine (:func:`diagnosis_core.advance`) already applies every one of these;
a host needs them to test its prompts against the exact agent inputs
(``build_*_input``, :func:`encode_agent_input`), to draw or inspect the routing
table (:data:`ROUTING_TABLE`, :func:`routing_mermaid`), to reuse the projection
and verdict rules (:func:`project_verified_input`, :func:`verdict_ceiling`), the
fallback renderers, the reference gatekeeper's binding checks, the strict JSON
reader (:func:`loads_strict`, :func:`canonical_json`), to write replay
documents (:class:`ScriptedResponse`, :data:`ERROR_KINDS`), or to build a
custom driver loop (:func:`perform_effect`, :func:`perform_effect_async`). One submodule rather
than one per concern: these names are stable, but they are not what an embedding
host reaches for first, so they stay out of the curated top level.
"""

from __future__ import annotations

from ._chat.drivers import (
    describe_error,
    perform_effect,
    perform_effect_async,
)
from ._chat.gaps import (
    EvidenceGap,
    QueryRef,
    RetryConstraint,
    RetryContext,
    build_retry_context,
    extract_evidence_gaps,
)
from ._chat.gatekeeper import (
    NormalizedGatekeeperResult,
    gatekeeper_unavailable,
    normalize_gatekeeper_result,
)
from ._chat.inputs import (
    ComposerInput,
    ExecutorInput,
    ExecutorRetryInput,
    GatekeeperSummary,
    PlannerInput,
    VerifierInput,
    build_composer_input,
    build_executor_input,
    build_planner_input,
    build_verifier_input,
    encode_agent_input,
)
from ._chat.machine import (
    PendingCall,
)
from ._chat.payloads import (
    EXECUTOR_SCHEMA_VERSION,
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
    sanitize_item,
    summarize_tool_usage,
)
from ._chat.replay import (
    ERROR_KINDS,
    ScriptedError,
    ScriptedGatekeeperEntry,
    ScriptedResponse,
    UnknownScriptedError,
)
from ._chat.routing import (
    ROUTING_TABLE,
    Condition,
    Route,
    RoutingFacts,
    choose_route,
    routing_mermaid,
)
from ._chat.schema import (
    SchemaProfile,
    class_json_schema,
)
from ._chat.trace import (
    GatekeeperAudit,
    InvocationRecord,
    RawResult,
    VerifierEvaluation,
)
from ._chat.verdict import (
    answer_mode_for,
    apply_verdict_ceiling,
    verdict_ceiling,
)
from ._kernel.classify import (
    HTTP_CLIENT_ERRORS,
    HttpClientRule,
)
from ._kernel.converter import (
    make_converter,
)
from ._kernel.json import (
    canonical_json,
    extract_json_text,
    loads_stored,
    loads_strict,
    parse_json_object,
)
from ._kernel.ledger import (
    UNRESOLVED,
    BindingFailure,
    check_binding,
    check_bindings,
    ledger_from_records,
    match_excerpt,
    parse_raw_path,
    resolve_raw_path,
)
from ._kernel.observe import (
    new_events,
    notify,
)

__all__ = [
    "ERROR_KINDS",
    "EXECUTOR_SCHEMA_VERSION",
    "HTTP_CLIENT_ERRORS",
    "ROUTING_TABLE",
    "UNRESOLVED",
    "AllowedClaim",
    "BindingFailure",
    "ComposerInput",
    "Condition",
    "EvidenceGap",
    "ExecutorInput",
    "ExecutorRetryInput",
    "GatekeeperAudit",
    "GatekeeperSummary",
    "HttpClientRule",
    "InvocationRecord",
    "NormalizedGatekeeperResult",
    "PendingCall",
    "PlannerInput",
    "QueryRef",
    "RawResult",
    "RetryConstraint",
    "RetryContext",
    "Route",
    "RoutingFacts",
    "SchemaProfile",
    "ScriptedError",
    "ScriptedGatekeeperEntry",
    "ScriptedResponse",
    "ToolUsage",
    "UnknownScriptedError",
    "VerifiedBinding",
    "VerifiedClaim",
    "VerifiedEvidence",
    "VerifiedInput",
    "VerifierEvaluation",
    "VerifierInput",
    "answer_mode_for",
    "apply_verdict_ceiling",
    "build_composer_input",
    "build_executor_input",
    "build_planner_input",
    "build_retry_context",
    "build_verifier_input",
    "canonical_json",
    "check_binding",
    "check_bindings",
    "choose_route",
    "class_json_schema",
    "count_trusted_bindings",
    "describe_error",
    "encode_agent_input",
    "extract_evidence_gaps",
    "extract_json_text",
    "gatekeeper_unavailable",
    "is_valid_tool_name",
    "ledger_from_records",
    "loads_stored",
    "loads_strict",
    "make_converter",
    "match_excerpt",
    "new_events",
    "normalize_gatekeeper_result",
    "notify",
    "parse_json_object",
    "parse_raw_path",
    "perform_effect",
    "perform_effect_async",
    "project_verified_input",
    "render_post_verification_fallback",
    "render_pre_verification_fallback",
    "resolve_raw_path",
    "routing_mermaid",
    "sanitize_item",
    "select_allowed_claims",
    "summarize_tool_usage",
    "verdict_ceiling",
]
