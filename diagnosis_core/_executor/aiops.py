"""The AIOps executor: the tool loop answering ``aiops_executor_output`` (spec §11, §18).

An AIOps executor step returns ``aiops_executor_output``: the ids of the tool
invocations it made and findings that cite invocation ids; the rule
evaluator requires every cited id to be a successful invocation of the
ledger. :func:`aiops_grounding_schema` restricts ``findings[].cited_invocation_ids``
to an enum of the citable (successful) invocations it is given, so a
constrained decoder cannot cite one that does not exist or failed.
``tool_invocation_ids`` is left as it is (a failed call is an invocation the
step made too, and the parser checks the cross-field rule that a cited id is
one of them or an earlier step's). No path is cited in this payload, so no
path limit applies; ``max_invocations`` bounds the enum (beyond it the field
is left unconstrained, and a note says so).

:func:`aiops_executor_agent` gives it to the tool loop (``loop.py``, shared with the
chat executor) as the final answer's schema.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Unpack, cast

from .._aiops.schema import aiops_json_schema
from .._kernel.tools.ledger import ToolInvocation
from .._kernel.tools.recorder import ToolRecorder
from .._kernel.wire.json import JsonValue
from .._kernel.wire.schema import SchemaProfile, profile_of
from .grounding import (
    DEFAULT_LIMITS,
    GroundingLimits,
    GroundingSchema,
    citable_invocations,
    for_local_decoder,
    schema_object,
)
from .loop import (
    AsyncExecutorAgent,
    ExecutorAgent,
    ExecutorOptions,
    PerRunRecorders,
    build_settings,
)
from .model import AsyncToolCallingModel, Tool, ToolCallingModel

__all__ = ["aiops_executor_agent", "aiops_grounding_schema", "async_aiops_executor_agent"]

_JsonObject = dict[str, JsonValue]


def _array(schema: _JsonObject) -> _JsonObject:
    """The array part of a (possibly nullable) array schema, as each profile writes it."""
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        for branch in branches:
            if isinstance(branch, dict) and "items" in branch:
                return branch
    return schema


def aiops_grounding_schema(
    invocations: Sequence[ToolInvocation],
    *,
    profile: str = "openai-strict",
    limits: GroundingLimits = DEFAULT_LIMITS,
) -> GroundingSchema:
    """The ``aiops_executor_output`` schema whose findings cite only ``invocations`` (spec §18).

    Raises:
        ValueError: for an unknown profile.
    """
    chosen = profile_of(profile)
    schema = copy.deepcopy(aiops_json_schema("aiops_executor_output", chosen))
    findings = _array(schema_object(schema_object(schema["properties"])["findings"]))
    finding = schema_object(findings["items"])
    cited = _array(schema_object(schema_object(finding["properties"])["cited_invocation_ids"]))
    ids = [record.invocation_id for record in citable_invocations(invocations)]
    notes: list[str] = []
    if len(ids) > limits.max_invocations:
        notes.append(
            f"cited_invocation_ids not constrained (more than {limits.max_invocations} invocations)"
        )
        cited["description"] = "Not constrained: " + notes[0] + "."
        return GroundingSchema(schema, tuple(ids), (), tuple(notes))
    item = schema_object(cited["items"])
    if ids:
        item.pop("pattern", None)
        item.pop("minLength", None)
        item["enum"] = cast(JsonValue, ids)
    elif chosen is SchemaProfile.ANTHROPIC_STRICT:
        cited["description"] = "Must have no item: no tool output was recorded to cite."
        notes.append(
            "anthropic-strict: cited_invocation_ids limited to 0 items in its description only"
        )
    else:
        cited["maxItems"] = 0
    if chosen is SchemaProfile.VALIDATION:  # nullable fields as anyOf: what llama.cpp reads
        schema = schema_object(for_local_decoder(schema))
    return GroundingSchema(schema, tuple(ids), tuple(ids), tuple(notes))


def aiops_executor_agent(
    model: ToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> ExecutorAgent:
    """The AIOps executor effect: ``model`` calling ``tools`` until it answers (spec §11, §13).

    As :func:`diagnosis_core.tools.executor_agent`, with ``aiops_executor_output``
    as the final answer. ``grounding`` defaults to ``"run"``: an AIOps step
    may cite the invocations of earlier executor steps.
    """
    settings = build_settings(
        tools, recorder, options, name="aiops_executor_agent",
        build=aiops_grounding_schema, grounding="run",
    )
    return ExecutorAgent(model, settings)


def async_aiops_executor_agent(
    model: AsyncToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> AsyncExecutorAgent:
    """The asyncio variant of :func:`aiops_executor_agent`."""
    settings = build_settings(
        tools, recorder, options, name="async_aiops_executor_agent",
        build=aiops_grounding_schema, grounding="run", asynchronous=True,
    )
    return AsyncExecutorAgent(model, settings)
