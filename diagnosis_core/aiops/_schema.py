"""JSON Schemas of the AIOps agent payloads, generated from the payload types.

The same generator as the chat payloads' (:func:`diagnosis_core.json_schema`):
shapes come from the ``attrs`` classes, so the schema cannot drift from the
types. The AIOps parsers (:mod:`diagnosis_core.aiops._parsing`) stay the
authority for the rules a schema cannot express (unique ids, citations of
reported tool invocations, the alert reference given in full or not at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._json import JsonValue
from .._schema import named_schema
from ._parsing import AiOpsPayloadName
from ._payloads import AiOpsExecutorOutput, AiOpsPlan, AiOpsReport, SupervisorDecision

__all__ = ["AIOPS_SCHEMA_NAMES", "aiops_json_schema"]

_PAYLOAD_TYPES: Mapping[AiOpsPayloadName, type[Any]] = {
    AiOpsPayloadName.SUPERVISOR_DECISION: SupervisorDecision,
    AiOpsPayloadName.AIOPS_PLAN: AiOpsPlan,
    AiOpsPayloadName.AIOPS_EXECUTOR_OUTPUT: AiOpsExecutorOutput,
    AiOpsPayloadName.AIOPS_REPORT: AiOpsReport,
}

AIOPS_SCHEMA_NAMES: tuple[str, ...] = tuple(name.value for name in AiOpsPayloadName)
"""The names :func:`aiops_json_schema` accepts, in workflow order."""

_AUTHORITY: dict[str, JsonValue] = {
    "$comment": "The AIOps parsers also enforce unique ids, non-blank texts, citations "
    "of reported tool invocations only, and an alert reference given in full or not at all."
}


def aiops_json_schema(name: str) -> dict[str, JsonValue]:
    """The JSON Schema (draft 2020-12) of one AIOps agent payload.

    ``name`` is one of :data:`AIOPS_SCHEMA_NAMES`. A fresh dict is returned on
    every call, so callers may change it freely.

    Raises:
        ValueError: for an unknown name; the message lists the valid ones.
    """
    return named_schema(name, AiOpsPayloadName, _PAYLOAD_TYPES, _AUTHORITY)
