"""The public namespaces as the tests reach them: public names, and internal ones by name.

A namespace exports what its audience imports (``tests/public_surface.py`` counts them);
a test also calls internal pieces directly, next to public names, through the same alias
(``dcm.project_verified_input`` beside ``dcm.start_diagnosis``). Such a test imports the
alias from here (``from tests._reach import machine as dcm``): each name below is read from the
private module that defines it (or from the top level, where it is public), every other
name from the public namespace itself.
"""

from __future__ import annotations

import importlib
import types

__all__ = [
    "aiops", "diagnosis_core", "journal", "machine", "prompts", "protocol", "scenarios",
    "stores", "testing", "tools",
]


class _Namespace(types.ModuleType):
    """``public``'s names, with ``internal`` (name -> defining module) read where they live."""

    def __init__(self, public: str, internal: dict[str, str]) -> None:
        super().__init__(public)
        self._public = public
        self._internal = internal

    def __getattribute__(self, name: str) -> object:
        # ``vars(alias)`` is the public namespace's: a test lists what it defines.
        if name == "__dict__":
            return vars(importlib.import_module(object.__getattribute__(self, "_public")))
        return super().__getattribute__(name)

    def __getattr__(self, name: str) -> object:
        home = self._internal.get(name, self._public)
        return getattr(importlib.import_module(home), name)


diagnosis_core = _Namespace("diagnosis_core", {
    "AnswerMode": "diagnosis_core._chat.enums",
})
aiops = _Namespace("diagnosis_core.aiops", {
    "AIOPS_JOURNAL_FORMAT": "diagnosis_core._aiops.workflow",
    "AIOPS_JOURNAL_FORMAT_V1": "diagnosis_core._aiops.workflow",
    "AiOpsExpectedCall": "diagnosis_core._aiops.workflow",
    "AiOpsJournalEntry": "diagnosis_core._aiops.journal",
    "AlertmanagerAlerts": "diagnosis_core._aiops.alertmanager",
    "DISCOVERY_INSTRUCTION": "diagnosis_core._aiops.inputs",
    "aiops_routing_mermaid": "diagnosis_core._aiops.routing",
    "record_aiops_scenario": "diagnosis_core._aiops.journal_replay",
})
journal = _Namespace("diagnosis_core.journal", {
    "ExpectedCall": "diagnosis_core._chat.workflow",
    "JOURNAL_FORMAT_V1": "diagnosis_core._chat.workflow",
    "JournalError": "diagnosis_core",
    "RecordedToolError": "diagnosis_core._kernel.journal.recorded",
    "request_mac": "diagnosis_core._chat.journal",
    "sign_entry": "diagnosis_core._kernel.journal.mac",
})
machine = _Namespace("diagnosis_core.machine", {
    "AllowedClaim": "diagnosis_core._chat.projection",
    "Condition": "diagnosis_core._chat.routing",
    "DiagnosisRequest": "diagnosis_core",
    "GatekeeperAudit": "diagnosis_core._chat.trace",
    "RawResult": "diagnosis_core._chat.trace",
    "RoutingFacts": "diagnosis_core._chat.routing",
    "VerifiedBinding": "diagnosis_core._chat.projection",
    "VerifiedClaim": "diagnosis_core._chat.projection",
    "VerifiedEvidence": "diagnosis_core._chat.projection",
    "VerifiedInput": "diagnosis_core._chat.projection",
    "answer_mode_for": "diagnosis_core._chat.verdict",
    "apply_verdict_ceiling": "diagnosis_core._chat.verdict",
    "choose_route": "diagnosis_core._chat.routing",
    "count_trusted_bindings": "diagnosis_core._chat.projection",
    "gatekeeper_unavailable": "diagnosis_core._chat.gatekeeper",
    "new_events": "diagnosis_core._kernel.driving.observe",
    "normalize_gatekeeper_result": "diagnosis_core._chat.gatekeeper",
    "project_verified_input": "diagnosis_core._chat.projection",
    "render_post_verification_fallback": "diagnosis_core._chat.rendering",
    "routing_mermaid": "diagnosis_core._chat.routing",
    "sanitize_item": "diagnosis_core._kernel.machine.text",
    "select_allowed_claims": "diagnosis_core._chat.projection",
    "verdict_ceiling": "diagnosis_core._chat.verdict",
})
prompts = _Namespace("diagnosis_core.prompts", {
    "PROMPT_LOCALES": "diagnosis_core._prompts.render",
    "prompt_rules": "diagnosis_core._prompts.render",
})
protocol = _Namespace("diagnosis_core.protocol", {
    "EvidenceGap": "diagnosis_core._chat.gaps",
    "ExecutorEvidence": "diagnosis_core",
    "PayloadError": "diagnosis_core",
    "QueryRef": "diagnosis_core._chat.gaps",
    "RetryConstraint": "diagnosis_core._chat.gaps",
    "Verdict": "diagnosis_core",
    "build_retry_context": "diagnosis_core._chat.gaps",
    "extract_evidence_gaps": "diagnosis_core._chat.gaps",
    "extract_json_text": "diagnosis_core._kernel.wire.json",
    "loads_strict": "diagnosis_core._kernel.wire.json",
    "make_converter": "diagnosis_core._kernel.wire.converter",
    "to_wire": "diagnosis_core",
})
scenarios = _Namespace("diagnosis_core.scenarios", {
})
stores = _Namespace("diagnosis_core.stores", {
    "StoreSink": "diagnosis_core._kernel.journal.store",
})
testing = _Namespace("diagnosis_core.testing", {
    "Plant": "diagnosis_core.testing._scenarios",
    "RecordedCall": "diagnosis_core.testing._doubles",
    "Sink": "diagnosis_core.testing._scenarios",
    "binding_keys": "diagnosis_core.testing._results",
    "composer_output_texts": "diagnosis_core.testing._texts",
    "executor_evidence_texts": "diagnosis_core.testing._texts",
    "fact_texts": "diagnosis_core.testing._values",
    "planner_plan_texts": "diagnosis_core.testing._texts",
    "verifier_output_texts": "diagnosis_core.testing._texts",
})
tools = _Namespace("diagnosis_core.tools", {
    "OutputPaths": "diagnosis_core._executor.grounding",
    "ToolInvocation": "diagnosis_core",
    "ToolLedger": "diagnosis_core",
    "UNRESOLVED": "diagnosis_core._chat.reference_gatekeeper",
    "check_binding": "diagnosis_core._chat.reference_gatekeeper",
    "check_bindings": "diagnosis_core._chat.reference_gatekeeper",
    "citable_paths": "diagnosis_core._executor.grounding",
    "match_excerpt": "diagnosis_core._chat.reference_gatekeeper",
    "resolve_raw_path": "diagnosis_core._chat.reference_gatekeeper",
})
