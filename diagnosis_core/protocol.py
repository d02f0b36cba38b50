"""The protocol's wire contract (spec §3, §5, §6, §11): what a prompt or provider author needs.

The payload types every agent returns and the parsers that read them, the
JSON Schemas of the payloads in each provider profile, and the strict JSON
helpers a provider integration reads and writes stored text with
(:func:`canonical_json`, :func:`loads_stored`, :func:`describe_value`). A host
that only runs diagnoses needs none of it; a provider integration asking for
constrained decoding, or a prompt engineer checking what a reply must look
like, needs all of it. The converter (``to_json``, ``from_json``, …) and the
request's own types are the host's, in :mod:`diagnosis_core`; the exact agent
inputs are shown by ``diagnosis-core prompt`` (:mod:`diagnosis_core.prompts`). The
AIOps workflow's payloads and parsers (:class:`AiOpsPlan`, :func:`parse_aiops_plan`,
:func:`aiops_json_schema`, …) are here beside the chat ones, loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._aiops import AIOPS_NAMES
from ._chat.enums import (
    BindingCheckStatus,
    EvidenceStatus,
    GatekeeperStatus,
    Verification,
)
from ._chat.gatekeeper import (
    parse_gatekeeper_result,
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
    FactCheck,
    GatekeeperResult,
    Hypothesis,
    PlannerPlan,
    ToolTraceEntry,
    VerifierOutput,
)
from ._kernel.machine.plan import (
    PlanStep,
)
from ._kernel.public import lazy_module
from ._kernel.wire.json import (
    canonical_json,
    describe_value,
    loads_stored,
)

if TYPE_CHECKING:
    from ._aiops.enums import SupervisorChoice
    from ._aiops.parsing import (
        parse_aiops_executor_output,
        parse_aiops_plan,
        parse_aiops_report,
        parse_supervisor_decision,
    )
    from ._aiops.payloads import *  # noqa: F403 (its __all__: every name is served here)
    from ._aiops.schema import AIOPS_SCHEMA_NAMES, aiops_json_schema
    from ._chat.schema import (
        SCHEMA_NAMES,
        class_json_schema,
        json_schema,
    )
    from ._kernel.wire.schema import (
        SCHEMA_PROFILES,
    )

__all__ = [
    "SCHEMA_NAMES",
    "SCHEMA_PROFILES",
    "BindingCheckStatus",
    "CheckedBinding",
    "Claim",
    "ComposerOutput",
    "EvidenceBinding",
    "EvidenceStatus",
    "FactCheck",
    "GatekeeperResult",
    "GatekeeperStatus",
    "Hypothesis",
    "PayloadName",
    "PlanStep",
    "PlannerPlan",
    "ToolTraceEntry",
    "Verification",
    "VerifierOutput",
    "canonical_json",
    "class_json_schema",
    "describe_value",
    "json_schema",
    "loads_stored",
    "parse_composer_output",
    "parse_executor_evidence",
    "parse_gatekeeper_result",
    "parse_planner_plan",
    "parse_verifier_output",
]
__all__ += [  # the AIOps workflow's, loaded on first use (``_aiops/__init__.py``)
    "AIOPS_SCHEMA_NAMES", "AiOpsEvidence", "AiOpsExecutorFinding", "AiOpsExecutorOutput",
    "AiOpsFinding", "AiOpsPlan", "AiOpsRecommendedAction", "AiOpsReport", "Alert",
    "SupervisorChoice", "SupervisorDecision", "aiops_json_schema", "parse_aiops_executor_output",
    "parse_aiops_plan", "parse_aiops_report", "parse_supervisor_decision",
]

# Schemas are built from the payload types on first use, and the AIOps workflow's
# names load it on first use: this import stays cheap for a chat host. The names are
# typed through the TYPE_CHECKING imports above.
_LAZY = (
    ("._chat.schema", ("SCHEMA_NAMES", "class_json_schema", "json_schema")),
    ("._kernel.wire.schema", ("SCHEMA_PROFILES",)),
    *AIOPS_NAMES[__name__],
)

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_module(__name__, __package__, _LAZY, globals())
