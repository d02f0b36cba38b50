"""Every wire schema in one bundle, for other implementations' code generators.

``diagnosis-core schema --all --out DIR`` writes one file per schema, named
``<name>.schema.json``, each with a stable ``$id``
(``urn:diagnosis-core:<protocol version>:<name>``): the agent payloads of
both workflows (the *validation* profile of spec §5.5, from
:func:`diagnosis_core.protocol.json_schema`), the §9 scenario documents, the §9
replay outputs, the §8 trace report, the §12 journals and the conformance
kit's resume document. Payload and output shapes come from the package's
types; the documents the scenario and journal loaders read are written out
here, as open as those loaders are strict: a schema accepts every document
the package accepts (the kit checks that on the whole corpus), and a rule it
cannot express (unique ids, the order of entries, the input hashes) stays
with the loaders.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from diagnosis_core import DiagnosisResult, TraceReport
from diagnosis_core.protocol import SCHEMA_NAMES, class_json_schema, json_schema

from ._corpus import PROTOCOL_VERSION

__all__ = ["all_schemas", "schema_id", "write_schemas"]

Schema = dict[str, Any]
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_id(name: str) -> str:
    """The stable ``$id`` of schema ``name`` (it changes only with the protocol version)."""
    return f"urn:diagnosis-core:{PROTOCOL_VERSION}:{name}"


def _string(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: dict[str, Schema], required: list[str] | None = None, *,
            open_: bool = False) -> Schema:
    schema: Schema = {"type": "object", "properties": properties,
                      "additionalProperties": open_}
    if required:
        schema["required"] = required
    return schema


_ID = _string(minLength=1)
_JSON_ANY: Schema = {"description": "any JSON value"}
_RUN = _object({"run_id": _nullable(_ID), "session_id": _nullable(_ID),
                "metadata": _nullable({"type": "object"})})
_HISTORY = {"type": "array", "items": _object(
    {"role": _string(), "content": _string()}, ["role", "content"], open_=True)}
_SKILLS = {"type": "array", "items": _object(
    {"name": _string(), "description": _string()}, ["name", "description"], open_=True)}
_CHAT_CONFIG = _object({
    "technical_retry_limit": _nullable({"type": "integer", "minimum": 0, "maximum": 3}),
    "evidence_retry_limit": _nullable({"type": "integer", "minimum": 0, "maximum": 1}),
    "history_limit": _nullable({"type": "integer", "minimum": 0, "maximum": 100}),
    "max_item_chars": _nullable({"type": "integer", "minimum": 20, "maximum": 10000}),
    "locale": _nullable({"enum": ["en", "zh-CN"]}),
})
_AGENT_ERROR = _object({"kind": {"enum": ["retryable", "non_retryable", "tool_blocked",
                                          "unknown"]},
                        "message": _nullable(_string())}, ["kind"])
_SCRIPTED = {
    "type": "object",
    "properties": {"text": _nullable(_string()), "error": _nullable(_AGENT_ERROR)},
    "additionalProperties": False,
    "$comment": "exactly one of text and error is given (not null)",
}


def _responses(agents: list[str]) -> Schema:
    return _nullable(_object({agent: _nullable({"type": "array", "items": _SCRIPTED})
                              for agent in agents}))


_GATEKEEPER_ENTRY = {
    "type": "object",
    "properties": {"result": _JSON_ANY, "error": _nullable({"type": "object", "properties": {
        "message": _nullable(_string()), "kind": _JSON_ANY}, "additionalProperties": False})},
    "additionalProperties": False,
    "$comment": "exactly one of result and error; a result may be any JSON value, null too",
}
_LEDGER_ENTRY = _object({
    "invocation_id": _ID, "tool_name": _string(), "success": {"type": "boolean"},
    "output": _JSON_ANY, "input": _JSON_ANY,
    "error": _nullable(_object({"type": _string(), "message": _string()},
                               ["type", "message"])),
    "duration_ms": _nullable({"type": "number", "minimum": 0}),
}, ["invocation_id", "tool_name", "success"])
_LEDGER = {"type": "array", "items": _LEDGER_ENTRY,
           "$comment": "invocation ids are unique; output is required unless success is false"}


def _chat_scenario() -> Schema:
    return _object({
        "question": _string(minLength=1),
        "run": _nullable(_RUN),
        "history": _nullable(_HISTORY),
        "skills": _nullable(_SKILLS),
        "config": _nullable(_CHAT_CONFIG),
        "responses": _responses(["planner", "executor", "verifier", "composer"]),
        "gatekeeper": _nullable({"type": "array", "items": _GATEKEEPER_ENTRY}),
        "tool_ledger": _nullable(_LEDGER),
    }, ["question"]) | {"$comment": "give gatekeeper or tool_ledger, not both"}


_STRINGS = {"type": "object", "additionalProperties": _string()}


def _aiops_scenario() -> Schema:
    alert = _object({
        "name": _string(minLength=1), "service": _string(minLength=1), "severity": _string(),
        "started_at": _string(), "labels": _nullable(_STRINGS),
        "annotations": _nullable(_STRINGS)}, ["name", "service", "severity", "started_at"])
    return _object({
        "workflow": {"const": "aiops"},
        "run": _nullable(_RUN),
        "alerts": _nullable({"type": "array", "items": alert}),
        "alertmanager": _nullable({"type": "object", "description": "an Alertmanager webhook "
                                   "payload (version 4), mapped by spec §11"}),
        "config": _nullable({"type": "object"}),
        "responses": _responses(["supervisor", "planner", "executor", "reporter"]),
        "tool_ledger": _nullable(_LEDGER),
    }, ["workflow"])


_HEX64 = _string(pattern="^[0-9a-f]{64}$")


def _journal(form: str, calls: list[str], request: Schema, *, v2: bool = False) -> Schema:
    agent_outcome = {"oneOf": [
        _object({"text": _string()}, ["text"]),
        _object({"error": _object({"kind": {"enum": ["retryable", "non_retryable",
                                                     "tool_blocked"]},
                                   "message": _string()}, ["kind", "message"])}, ["error"]),
    ]}
    gatekeeper_outcome = {"oneOf": [
        _object({"result": _JSON_ANY}, ["result"]),
        _object({"error": _object({"message": _string()}, ["message"])}, ["error"]),
    ]}
    outcome = {"anyOf": [agent_outcome, gatekeeper_outcome]} if "gatekeeper" in calls \
        else agent_outcome
    entry = _object({
        "seq": {"type": "integer", "minimum": 1},
        "call": {"enum": calls},
        "round": {"type": "integer", "minimum": 1},
        "attempt": {"type": "integer", "minimum": 1},
        "input_sha256": _HEX64,
        "state": {"enum": ["started", "finished"]},
        "outcome": outcome,
        "tool_invocations": {"type": "array", "items": _LEDGER_ENTRY},
        "mac": _HEX64,
        **({"derived": {"type": "boolean"}} if v2 else {}),
    }, ["seq", "call", "round", "attempt", "input_sha256", "state"])
    entry["$comment"] = ("a finished entry has an outcome, a started one none; only the last "
                         "entry may be started; entries follow the run's calls (spec §12)")
    properties: dict[str, Any] = {"format": {"const": form}, "request": request,
                                  "entries": {"type": "array", "items": entry}}
    if v2:  # the end marker of a complete run (spec §12.2)
        properties["end"] = _object(
            {"entries": {"type": "integer", "minimum": 0}, "mac": _HEX64}, ["entries"]
        )
    return _object(properties, ["format", "request", "entries"])


def _chat_request() -> Schema:
    return _object({
        "question": _string(minLength=1),
        "run": _object({"run_id": _ID, "session_id": _ID,
                        "metadata": _nullable({"type": "object"})}, ["run_id", "session_id"]),
        "history": _nullable(_HISTORY),
        "skills": _nullable(_SKILLS),
        "config": _CHAT_CONFIG,
    }, ["question", "run", "config"])


def _aiops_request() -> Schema:
    return _object({
        "run": _object({"run_id": _ID, "session_id": _ID,
                        "metadata": _nullable({"type": "object"})}, ["run_id", "session_id"]),
        "alerts": _JSON_ANY,
        "config": {"type": "object"},
    }, ["run", "config"])


def _output_profile(schema: Any, *, top: bool = True) -> Any:
    """A type's schema as the package *writes* it: ``null`` allowed where a type says so."""
    if isinstance(schema, dict):
        result = {key: _output_profile(value, top=False) for key, value in schema.items()}
        kind = result.get("type")
        if "enum" in result and isinstance(kind, list) and "null" in kind \
                and None not in result["enum"]:
            result["enum"] = [*result["enum"], None]
        return result
    if isinstance(schema, list):
        return [_output_profile(item, top=False) for item in schema]
    return schema


def _chat_output() -> Schema:
    schema: Schema = _output_profile(class_json_schema(DiagnosisResult))
    schema["required"] = list(schema["properties"])
    return schema


def _aiops_output() -> Schema:
    from diagnosis_core.aiops import AiOpsResult, AiOpsRuleEvaluation

    schema: Schema = _output_profile(class_json_schema(AiOpsResult))
    evaluation = _output_profile(class_json_schema(AiOpsRuleEvaluation))
    schema["properties"] = {"workflow": {"const": "aiops"}, **schema["properties"],
                            "aiops_rule_evaluation": _nullable(evaluation)}
    schema["required"] = list(schema["properties"])
    return schema


def _raw_results_as_values(schema: Any) -> Any:
    """A kept raw result (``RawResult``) is written as the JSON value itself (spec §8)."""
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict) and set(properties) == {"json_text"}:
            return {"description": "the raw gatekeeper result as returned: any JSON value"}
        return {key: _raw_results_as_values(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_raw_results_as_values(item) for item in schema]
    return schema


def _trace_report() -> Schema:
    schema: Schema = _raw_results_as_values(_output_profile(class_json_schema(TraceReport)))
    return schema


def _resume() -> Schema:
    scenario = _chat_scenario()["properties"]
    return _object({
        "format": {"const": "diagnosis_resume_v1"},
        "journal": {"anyOf": [{"$ref": schema_id("diagnosis_journal_v2")},
                              {"$ref": schema_id("diagnosis_journal_v1")}]},
        "responses": scenario["responses"],
        "gatekeeper": scenario["gatekeeper"],
        "tool_ledger": scenario["tool_ledger"],
    }, ["format", "journal"])


def _payloads() -> dict[str, Schema]:
    from diagnosis_core.protocol import AIOPS_SCHEMA_NAMES, aiops_json_schema

    schemas = {name: json_schema(name) for name in SCHEMA_NAMES}
    schemas.update({name: aiops_json_schema(name) for name in AIOPS_SCHEMA_NAMES})
    return schemas


def all_schemas() -> dict[str, Schema]:
    """Every schema by name, each with ``$schema``, ``$id`` and ``title`` set."""
    schemas: dict[str, Schema] = dict(_payloads())
    schemas.update({
        "scenario": _chat_scenario(),
        "aiops_scenario": _aiops_scenario(),
        "replay_output": _chat_output(),
        "aiops_replay_output": _aiops_output(),
        "trace_report": _trace_report(),
        "diagnosis_journal_v1": _journal(
            "diagnosis_journal_v1",
            ["planner", "executor", "verifier", "composer", "gatekeeper"], _chat_request()),
        "diagnosis_journal_v2": _journal(
            "diagnosis_journal_v2",
            ["planner", "executor", "verifier", "composer", "gatekeeper"], _chat_request(),
            v2=True),
        "aiops_journal_v1": _journal(
            "aiops_journal_v1", ["supervisor", "planner", "executor", "reporter"],
            _aiops_request()),
        "aiops_journal_v2": _journal(
            "aiops_journal_v2", ["supervisor", "planner", "executor", "reporter"],
            _aiops_request(), v2=True),
        "diagnosis_resume_v1": _resume(),
    })
    bundle: dict[str, Schema] = {}
    for name, schema in schemas.items():
        body = copy.deepcopy(schema)
        body.pop("$schema", None)
        body.pop("$id", None)
        bundle[name] = {"$schema": DRAFT, "$id": schema_id(name), "title": name, **body}
    return bundle


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema as ``DIRECTORY/<name>.schema.json``; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in all_schemas().items():
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8", newline="\n")
        written.append(path)
    return written
