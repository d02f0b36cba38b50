"""The chat executor: the tool loop answering ``executor_evidence_v2`` that cites what exists (§18).

:func:`evidence_grounding_schema` takes the tool invocations of one executor
call and returns the ``executor_evidence_v2`` schema of a profile (spec
§5.5) in which each binding is one of per-invocation branches: the branch of
``inv-3`` fixes ``source_invocation_id`` to ``inv-3``, ``tool_name`` to the
tool ``inv-3`` called, and ``raw_path`` to an enum of the paths that exist in
``inv-3``'s output (``grounding.py``). An ``anyOf`` and not two
independent enums: with independent enums a model was measured citing
``inv-1`` with a path that exists only in ``inv-2``'s output; a branch couples
an id to its own paths.

What the schema does not decide, the gatekeeper still does: the excerpt
(whether it occurs at the path), whether the claim is supported. What the
schema guarantees, for a binding it accepts in a constrained branch: the
invocation exists, it succeeded, the tool name is its own, the path
resolves to a scalar — ``INVOCATION_NOT_FOUND``, ``INVOCATION_FAILED``,
``TOOL_MISMATCH`` and ``RAW_PATH_UNRESOLVED`` cannot happen.

Profiles: ``openai-strict`` and ``anthropic-strict`` take the ``anyOf`` (both
document it inside an object, never at the root); ``validation`` too (draft
2020-12, in the form a local decoder's JSON-schema grammar converter reads
whole: ``grounding.for_local_decoder`` writes nullable fields as an
``anyOf`` with ``null`` and moves ``pattern`` into the description — the strict
profiles' unanchored patterns are refused by llama.cpp's converter);
``gemini``'s schema subset has no composition keyword, so there the ids, tool
names and paths are three independent enums — the coupling is lost, and a
note says so. A call with nothing citable (no tool call, or only failed ones
or outputs without a scalar) allows ``no_evidence`` only, with ``claims``
limited to 0 items where the profile can say it (``maxItems``; Anthropic's
cannot, its description says it).

One narrowing, by construction: a path is listed in one spelling, the
canonical one (``$.items[0].message``, ``$['a b']``); the gatekeeper also
resolves other spellings of the same path (``$['items'][0]['message']``),
which this schema refuses. A constrained decoder writes what the enum lists.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Unpack, cast

import attrs

from .._chat.schema import json_schema
from .._kernel.tools.ledger import ToolInvocation
from .._kernel.tools.recorder import ToolRecorder
from .._kernel.wire.json import JsonValue
from .._kernel.wire.schema import SchemaProfile, profile_of
from .grounding import (
    DEFAULT_LIMITS,
    GroundingLimits,
    GroundingSchema,
    OutputPaths,
    citable_invocations,
    citable_paths,
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

__all__ = ["async_executor_agent", "evidence_grounding_schema", "executor_agent"]

_JsonObject = dict[str, JsonValue]

_BINDING_DESCRIPTION = (
    "Cites one recorded tool invocation: its source_invocation_id, the tool_name it called "
    "and a raw_path that exists in its output; evidence_excerpt must occur at that path."
)


def _claims(schema: _JsonObject) -> _JsonObject:
    return schema_object(schema_object(schema["properties"])["claims"])


def _bindings(schema: _JsonObject) -> _JsonObject:
    """The claims' ``bindings`` array: its ``items`` is the template, then the built binding."""
    claim = schema_object(_claims(schema)["items"])
    return schema_object(schema_object(claim["properties"])["bindings"])


def _string_enum(values: Sequence[str], profile: SchemaProfile) -> _JsonObject:
    kind = "STRING" if profile is SchemaProfile.GEMINI else "string"
    return {"type": kind, "enum": list(values)}


def _branch(
    template: _JsonObject,
    profile: SchemaProfile,
    ids: Sequence[str],
    tools: Sequence[str],
    paths: Sequence[str] | None,
    description: str,
) -> _JsonObject:
    """A binding item whose id, tool and (when ``paths`` is given) path are enums."""
    branch = copy.deepcopy(template)
    branch["description"] = description
    properties = schema_object(branch["properties"])
    properties["source_invocation_id"] = _string_enum(ids, profile)
    properties["tool_name"] = _string_enum(tools, profile)
    if paths is not None:
        properties["raw_path"] = _string_enum(paths, profile)
    return branch


def _distinct(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def evidence_grounding_schema(
    invocations: Sequence[ToolInvocation],
    *,
    profile: str = "openai-strict",
    limits: GroundingLimits = DEFAULT_LIMITS,
) -> GroundingSchema:
    """The ``executor_evidence_v2`` schema that cites only ``invocations`` (spec §18).

    ``invocations`` are the ledger entries an executor call recorded (its
    own, or the run's: the caller chooses what may be cited). Failed ones
    and outputs without a scalar are not citable. Limits and fallbacks: see
    :class:`GroundingLimits`; each fallback is a line of
    :attr:`GroundingSchema.notes` and of the bindings' description.

    Raises:
        ValueError: for an unknown profile (the message lists the valid ones).
    """
    chosen = profile_of(profile)
    schema = copy.deepcopy(json_schema("executor_evidence_v2", chosen.value))
    template = schema_object(_bindings(schema)["items"])
    notes: list[str] = []
    listed: list[tuple[ToolInvocation, OutputPaths]] = []
    rest: list[ToolInvocation] = []
    for record in citable_invocations(invocations):
        if len(listed) == limits.max_invocations:
            probe = citable_paths(record.output, attrs.evolve(limits, max_paths=1))
            if probe.complete and not probe.paths:
                continue  # nothing at a scalar (the walk stops at the first one it finds)
            rest.append(record)
            continue
        found = citable_paths(record.output, limits)
        if found.complete and not found.paths:
            continue  # nothing at a scalar: no binding to it can pass
        listed.append((record, found))
    if not listed and not rest:
        return _nothing_citable(schema, chosen, notes)
    branches: list[_JsonObject] = []
    constrained: list[str] = []
    budget = limits.max_total_paths
    for record, found in listed:
        paths: Sequence[str] | None = found.paths
        if not found.complete:
            notes.append(f"{record.invocation_id}: raw_path not constrained ({found.reason})")
            paths = None
        elif len(found.paths) > budget:
            notes.append(
                f"{record.invocation_id}: raw_path not constrained "
                f"(more than {limits.max_total_paths} paths in all)"
            )
            paths = None
        else:
            budget -= len(found.paths)
            constrained.append(record.invocation_id)
        branches.append(
            _branch(
                template, chosen, [record.invocation_id], [record.tool_name], paths,
                f"Cites {record.invocation_id} ({record.tool_name}).",
            )
        )
    if rest:
        ids = [record.invocation_id for record in rest]
        notes.append(
            f"{', '.join(ids)}: raw_path not constrained "
            f"(more than {limits.max_invocations} invocations)"
        )
        # One branch per tool: a shared branch with an enum of ids and an enum of tools
        # would accept an id paired with another invocation's tool.
        for tool in _distinct([record.tool_name for record in rest]):
            branches.append(
                _branch(
                    template, chosen,
                    [record.invocation_id for record in rest if record.tool_name == tool],
                    [tool], None, "Cites one of the invocations beyond the listing limit.",
                )
            )
    cited = tuple(record.invocation_id for record, _ in listed) + tuple(
        record.invocation_id for record in rest
    )
    if chosen is SchemaProfile.GEMINI:
        items = _independent(template, listed, rest, constrained)
        notes.append(
            "gemini: no anyOf in its schema subset; source_invocation_id, tool_name and "
            "raw_path are independent enums (an id is not coupled to its own paths)"
        )
        if len(constrained) < len(cited):
            schema_object(items["properties"])["raw_path"] = copy.deepcopy(
                schema_object(template["properties"])["raw_path"]
            )
            constrained = []
    else:
        items = {"description": _BINDING_DESCRIPTION, "anyOf": cast(JsonValue, branches)}
    if notes:
        items["description"] = _BINDING_DESCRIPTION + " Not constrained: " + "; ".join(notes) + "."
    _bindings(schema)["items"] = items
    return GroundingSchema(_local(schema, chosen), cited, tuple(constrained), tuple(notes))


def _local(schema: _JsonObject, profile: SchemaProfile) -> _JsonObject:
    """The ``validation`` profile with nullable fields as ``anyOf`` (what llama.cpp reads)."""
    if profile is not SchemaProfile.VALIDATION:
        return schema
    return schema_object(for_local_decoder(schema))


def _independent(
    template: _JsonObject,
    listed: Sequence[tuple[ToolInvocation, OutputPaths]],
    rest: Sequence[ToolInvocation],
    constrained: Sequence[str],
) -> _JsonObject:
    """The Gemini binding: three independent enums (its subset has no ``anyOf``)."""
    records = [record for record, _ in listed] + list(rest)
    paths: list[str] = []
    for record, found in listed:
        if record.invocation_id in constrained:
            paths.extend(found.paths)
    return _branch(
        template, SchemaProfile.GEMINI,
        [record.invocation_id for record in records],
        _distinct([record.tool_name for record in records]),
        _distinct(paths),
        _BINDING_DESCRIPTION,
    )


def _nothing_citable(
    schema: _JsonObject, profile: SchemaProfile, notes: list[str]
) -> GroundingSchema:
    """Only ``no_evidence``: this call recorded nothing a binding could cite."""
    properties = schema_object(schema["properties"])
    status = schema_object(properties["evidence_status"])
    status["enum"] = ["no_evidence"]
    claims = _claims(schema)
    if profile is SchemaProfile.ANTHROPIC_STRICT:
        claims["description"] = "Must have no item: no tool output was recorded to cite."
        notes.append("anthropic-strict: claims limited to 0 items in its description only")
    else:
        claims["maxItems"] = 0
    return GroundingSchema(_local(schema, profile), (), (), tuple(notes))


def executor_agent(
    model: ToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> ExecutorAgent:
    """The chat executor effect: ``model`` calling ``tools`` until it answers (spec §13, §18).

    Use it as ``Effects(executor=executor_agent(...), ...)``. ``recorder`` is
    the run's :class:`ToolRecorder` (the one given to the driver as
    ``tools=``), or a :class:`RunRecorders` (engines: the run's recorder is
    found by ``config.run_id``). Each turn's response schema is the
    ``executor_evidence_v2`` grounding schema in ``profile`` of the
    invocations recorded so far (``grounding``: this call's, the run's, or
    none). Limits, errors and resume: ``docs/executor.md``.

    Raises:
        TypeError, ValueError: for a malformed argument, naming it (at
            construction, before any run).
    """
    settings = build_settings(
        tools, recorder, options, name="executor_agent",
        build=evidence_grounding_schema, grounding="call",
    )
    return ExecutorAgent(model, settings)


def async_executor_agent(
    model: AsyncToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> AsyncExecutorAgent:
    """The asyncio variant of :func:`executor_agent` (tools may be coroutine functions)."""
    settings = build_settings(
        tools, recorder, options, name="async_executor_agent",
        build=evidence_grounding_schema, grounding="call", asynchronous=True,
    )
    return AsyncExecutorAgent(model, settings)
