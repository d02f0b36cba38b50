"""The chat protocol's wire contract (spec §3, §5, §6): what a prompt or provider author needs.

The payload types every agent returns and the parsers that read them, the
exact agent inputs the machine sends (``build_*_input``, :func:`encode_agent_input`),
the JSON Schemas of the payloads in each provider profile, and the strict
JSON layer all of it stands on (:func:`loads_strict`, :func:`canonical_json`,
the converter). A host that only runs diagnoses needs none of it; a prompt
engineer testing a prompt against the exact input, or a provider integration
asking for constrained decoding, needs all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._chat.enums import (
    BindingCheckStatus,
    EvidenceStatus,
    GatekeeperStatus,
    Verdict,
    Verification,
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
    parse_gatekeeper_result,
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
from ._chat.parsing import (
    PayloadName,
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from ._chat.payloads import (
    EXECUTOR_SCHEMA_VERSION,
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
    Skill,
    ToolTraceEntry,
    VerifierOutput,
)
from ._kernel.errors import (
    PayloadError,
)
from ._kernel.machine.plan import (
    PlanStep,
)
from ._kernel.public import lazy_attributes
from ._kernel.public import publish as _publish
from ._kernel.wire.converter import (
    from_json,
    from_wire,
    make_converter,
    to_json,
    to_wire,
)
from ._kernel.wire.json import (
    JsonValue,
    canonical_json,
    describe_value,
    extract_json_text,
    int_from_literal,
    loads_stored,
    loads_strict,
    parse_json_object,
)

if TYPE_CHECKING:
    from ._chat.schema import (
        SCHEMA_NAMES,
        class_json_schema,
        json_schema,
    )
    from ._kernel.wire.schema import (
        SCHEMA_PROFILES,
        SchemaProfile,
    )

__all__ = [
    "EXECUTOR_SCHEMA_VERSION",
    "SCHEMA_NAMES",
    "SCHEMA_PROFILES",
    "BindingCheckStatus",
    "CheckedBinding",
    "Claim",
    "ComposerInput",
    "ComposerOutput",
    "EvidenceBinding",
    "EvidenceGap",
    "EvidenceStatus",
    "ExecutorEvidence",
    "ExecutorInput",
    "ExecutorRetryInput",
    "FactCheck",
    "GatekeeperResult",
    "GatekeeperStatus",
    "GatekeeperSummary",
    "HistoryMessage",
    "Hypothesis",
    "JsonValue",
    "PayloadError",
    "PayloadName",
    "PlanStep",
    "PlannerInput",
    "PlannerPlan",
    "QueryRef",
    "RetryConstraint",
    "RetryContext",
    "SchemaProfile",
    "Skill",
    "ToolTraceEntry",
    "Verdict",
    "Verification",
    "VerifierInput",
    "VerifierOutput",
    "build_composer_input",
    "build_executor_input",
    "build_planner_input",
    "build_retry_context",
    "build_verifier_input",
    "canonical_json",
    "class_json_schema",
    "describe_value",
    "encode_agent_input",
    "extract_evidence_gaps",
    "extract_json_text",
    "from_json",
    "from_wire",
    "int_from_literal",
    "json_schema",
    "loads_stored",
    "loads_strict",
    "make_converter",
    "parse_composer_output",
    "parse_executor_evidence",
    "parse_gatekeeper_result",
    "parse_json_object",
    "parse_planner_plan",
    "parse_verifier_output",
    "to_json",
    "to_wire",
]

# Schemas are built from the payload types on first use, which keeps this import
# cheap; the names are typed through the TYPE_CHECKING imports above.
_LAZY: dict[str, str] = {
    name: home
    for home, names in (
        ("._chat.schema", ("SCHEMA_NAMES", "class_json_schema", "json_schema")),
        ("._kernel.wire.schema", ("SCHEMA_PROFILES", "SchemaProfile")),
    )
    for name in names
}

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, __package__, _LAZY, globals())

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})

# Public classes name this namespace, not the private module defining them.
_publish(__name__, globals(), __all__)
