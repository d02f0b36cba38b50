"""Deprecated: the old catch-all namespace; every name now lives in an audience namespace.

Importing this module warns (``DeprecationWarning``) and still serves every
name it served, for one release. The building blocks moved to
:mod:`diagnosis_core.machine` (routing table, projections, verdict ceiling,
gatekeeper normalization, fallback renderers, the driver loop),
:mod:`diagnosis_core.protocol` (agent inputs, retry context, strict JSON,
schemas), :mod:`diagnosis_core.tools` (the reference gatekeeper's binding
checks, ledger records) and :mod:`diagnosis_core.scenarios` (scripted
responses); ``tests/test_layout.py`` checks that each is served from its new
home.
"""

from __future__ import annotations

import warnings

from ._kernel.lazy import lazy_attributes

_HOMES: dict[str, tuple[str, ...]] = {
    "machine": (
        "AllowedClaim", "Condition", "GatekeeperAudit", "HTTP_CLIENT_ERRORS", "HttpClientRule",
        "InvocationRecord", "NormalizedGatekeeperResult", "PendingCall", "ROUTING_TABLE",
        "RawResult", "Route", "RoutingFacts", "ToolUsage", "VerifiedBinding", "VerifiedClaim",
        "VerifiedEvidence", "VerifiedInput", "VerifierEvaluation", "answer_mode_for",
        "apply_verdict_ceiling", "choose_route", "count_trusted_bindings", "describe_error",
        "gatekeeper_unavailable", "is_valid_tool_name", "new_events",
        "normalize_gatekeeper_result", "notify", "perform_effect", "perform_effect_async",
        "project_verified_input", "render_post_verification_fallback",
        "render_pre_verification_fallback", "routing_mermaid", "sanitize_item",
        "select_allowed_claims", "summarize_tool_usage", "verdict_ceiling",
    ),
    "protocol": (
        "ComposerInput", "EXECUTOR_SCHEMA_VERSION", "EvidenceGap", "ExecutorInput",
        "ExecutorRetryInput", "GatekeeperSummary", "PlannerInput", "QueryRef", "RetryConstraint",
        "RetryContext", "SchemaProfile", "VerifierInput", "build_composer_input",
        "build_executor_input", "build_planner_input", "build_retry_context",
        "build_verifier_input", "canonical_json", "class_json_schema", "encode_agent_input",
        "extract_evidence_gaps", "extract_json_text", "loads_stored", "loads_strict",
        "make_converter", "parse_json_object",
    ),
    "tools": (
        "BindingFailure", "UNRESOLVED", "check_binding", "check_bindings", "ledger_from_records",
        "match_excerpt", "parse_raw_path", "resolve_raw_path",
    ),
    "scenarios": (
        "ERROR_KINDS", "ScriptedError", "ScriptedGatekeeperEntry", "ScriptedResponse",
        "UnknownScriptedError",
    ),
}
"""Each audience namespace and the old names it now serves (one table, read by
:func:`__getattr__` and ``__all__``): the shim keeps no import list of its own,
so a name can only be served from the home ``tests/test_layout.py`` checks."""

_HOME_OF = {name: f".{home}" for home, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME_OF)

__getattr__ = lazy_attributes(__name__, __package__, _HOME_OF, globals())


warnings.warn(
    "diagnosis_core.blocks is deprecated; import from diagnosis_core.machine, .protocol, "
    ".tools or .scenarios instead",
    DeprecationWarning,
    stacklevel=2,
)
