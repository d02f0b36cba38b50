"""JSON Schemas of the agent payloads, generated from the payload types (spec §5)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.parsing import (
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from diagnosis_core._chat.payloads import (
    ComposerOutput,
    ExecutorEvidence,
    PlannerPlan,
    VerifierOutput,
)
from diagnosis_core._chat.schema import SCHEMA_NAMES, json_schema
from diagnosis_core._kernel.errors import PayloadError
from diagnosis_core._kernel.wire.json import canonical_json

# --- a tiny draft 2020-12 validator covering exactly the keywords the schemas use -----------

_ANNOTATIONS = {"$schema", "title", "description", "$comment"}
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}


def _same(a: object, b: object) -> bool:
    return (type(a) is type(b) and a == b) or (
        isinstance(a, int | float) and isinstance(b, int | float)
        and not isinstance(a, bool) and not isinstance(b, bool) and a == b
    )


def is_valid(value: object, schema: object) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    assert isinstance(schema, dict)
    for keyword, arg in schema.items():
        if keyword in _ANNOTATIONS or keyword in ("then", "else"):
            continue
        if keyword == "type":
            kinds = arg if isinstance(arg, list) else [arg]
            if not any(_TYPES[kind](value) for kind in kinds):
                return False
        elif keyword == "enum":
            if not any(_same(value, choice) for choice in arg):
                return False
        elif keyword == "const":
            if not _same(value, arg):
                return False
        elif keyword == "properties":
            if isinstance(value, dict) and not all(
                is_valid(value[name], sub) for name, sub in arg.items() if name in value
            ):
                return False
        elif keyword == "required":
            if isinstance(value, dict) and not all(name in value for name in arg):
                return False
        elif keyword == "additionalProperties":
            known = schema.get("properties", {})
            if isinstance(value, dict) and not all(
                is_valid(item, arg) for name, item in value.items() if name not in known
            ):
                return False
        elif keyword == "prefixItems":
            if isinstance(value, list) and not all(
                is_valid(item, sub) for item, sub in zip(value, arg, strict=False)
            ):
                return False
        elif keyword == "items":
            skip = len(schema.get("prefixItems", []))
            if isinstance(value, list) and not all(is_valid(item, arg) for item in value[skip:]):
                return False
        elif keyword == "minItems":
            if isinstance(value, list) and len(value) < arg:
                return False
        elif keyword == "maxItems":
            if isinstance(value, list) and len(value) > arg:
                return False
        elif keyword == "minLength":
            if isinstance(value, str) and len(value) < arg:
                return False
        elif keyword == "pattern":
            if isinstance(value, str) and not re.search(arg, value):
                return False
        elif keyword == "minimum":
            if _TYPES["number"](value) and value < arg:
                return False
        elif keyword == "maximum":
            if _TYPES["number"](value) and value > arg:
                return False
        elif keyword == "allOf":
            if not all(is_valid(value, sub) for sub in arg):
                return False
        elif keyword == "anyOf":
            if not any(is_valid(value, sub) for sub in arg):
                return False
        elif keyword == "if":
            branch = schema.get("then", True) if is_valid(value, arg) else schema.get("else", True)
            if not is_valid(value, branch):
                return False
        else:
            raise AssertionError(f"the test validator does not know {keyword!r}")
    return True


def test_the_test_validator_knows_the_keywords() -> None:
    assert is_valid({"a": [1]}, {"type": "object", "properties": {"a": {"type": "array"}}})
    assert not is_valid({"a": 1}, {"type": "object", "properties": {"a": {"type": "array"}}})
    assert is_valid(None, {"type": ["string", "null"], "minLength": 1})
    assert not is_valid("", {"type": ["string", "null"], "minLength": 1})
    assert not is_valid(True, {"type": "integer"})
    assert not is_valid(True, {"enum": [1]})
    with pytest.raises(AssertionError):
        is_valid(1, {"oneOf": []})


# --- the spec's examples ---------------------------------------------------------------------

EXAMPLES: dict[str, dict[str, Any]] = {
    "planner_plan": {
        "steps": [{"step_id": "s1", "goal": "check gateway timeout logs", "tools": ["query_logs"]}],
        "selected_skill": "payment-timeout",
    },
    "executor_evidence_v2": {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [
            {"claim_id": "c1", "text": "Gateway calls to pay-svc time out after 3000 ms",
             "is_critical": True,
             "bindings": [{"source_invocation_id": "inv-7", "tool_name": "query_logs",
                           "raw_path": "$.items[0].message",
                           "evidence_excerpt": "upstream timeout after 3000ms"}]}],
        "hypotheses": [{"text": "connection pool exhausted", "missing_evidence": "pool metrics"}],
        "tool_trace_summary": [{"invocation_id": "inv-7", "tool_name": "query_logs",
                                "success": True}],
    },
    "verifier_output": {
        "verdict": "LOW_CONFID", "groundedness_score": 0.55, "critical_fact_count": 1,
        "facts_checked": [{"claim_id": "c1", "fact": "timeouts after 3000 ms",
                           "is_critical": True, "verification": "indirect_support"}],
        "allowed_claim_ids": ["c1"],
        "missing_info": ["pay-svc connection pool metrics"],
        "recommended_actions": ["check pool size of pay-svc"],
        "rationale": "…",
    },
    "composer_output": {"answer": "…markdown…", "cited_claim_ids": ["c1"]},
}

_TYPES_BY_NAME = {
    "planner_plan": PlannerPlan,
    "executor_evidence_v2": ExecutorEvidence,
    "verifier_output": VerifierOutput,
    "composer_output": ComposerOutput,
}


def test_schema_names_are_the_four_payloads() -> None:
    assert SCHEMA_NAMES == (
        "planner_plan", "executor_evidence_v2", "verifier_output", "composer_output",
    )


def test_unknown_schema_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="'planner_plan', 'executor_evidence_v2'") as info:
        json_schema("gatekeeper")
    assert "'gatekeeper'" in str(info.value)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_each_spec_example_validates_against_its_schema(name: str) -> None:
    assert is_valid(EXAMPLES[name], json_schema(name))


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_header_and_object_conventions(name: str) -> None:
    schema = json_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == name
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is True
    json.loads(canonical_json(schema))


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_properties_and_required_come_from_the_attrs_fields(name: str) -> None:
    cls = _TYPES_BY_NAME[name]
    schema = json_schema(name)
    fields = attrs.fields(cls)
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == [field.name for field in fields]
    required = [field.name for field in fields if field.default is attrs.NOTHING]
    if name == "executor_evidence_v2":
        required.append("schema_version")
    assert schema["required"] == required


def test_every_call_returns_a_fresh_schema() -> None:
    first = json_schema("executor_evidence_v2")
    first["allOf"].clear()  # type: ignore[union-attr]
    first["properties"]["claims"]["minItems"] = 99  # type: ignore[call-overload,index]
    assert json_schema("executor_evidence_v2") != first


def test_extra_properties_and_null_optionals_are_allowed() -> None:
    example = {**EXAMPLES["verifier_output"], "extra": {"x": 1}, "rationale": None,
               "missing_info": None, "critical_fact_count": None}
    assert is_valid(example, json_schema("verifier_output"))


# --- the spec's extra rules, layered on the generated shape -----------------------------------


def _with(name: str, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(json.dumps(EXAMPLES[name]))
    value.update(changes)
    return value


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("planner_plan", {"steps": []}),
        ("planner_plan", {"steps": [{"step_id": "", "goal": "g"}]}),
        ("planner_plan", {"steps": [{"step_id": "s", "goal": ""}]}),
        ("planner_plan", {"steps": [{"step_id": "s", "goal": "g", "tools": [1]}]}),
        ("executor_evidence_v2", {"schema_version": "executor_evidence_v1"}),
        ("executor_evidence_v2", {"schema_version": None}),
        ("executor_evidence_v2", {"evidence_status": "maybe"}),
        ("executor_evidence_v2", {"claims": []}),
        ("executor_evidence_v2", {"evidence_status": "no_evidence"}),
        ("executor_evidence_v2", {"claims": [{"claim_id": "", "text": "t", "bindings": [
            {"source_invocation_id": "i", "tool_name": "t", "raw_path": "$",
             "evidence_excerpt": "e"}]}]}),
        ("executor_evidence_v2", {"claims": [{"claim_id": "c", "text": "t", "bindings": []}]}),
        ("executor_evidence_v2", {"claims": [{"claim_id": "c", "text": "t", "bindings": [
            {"source_invocation_id": "i", "tool_name": "t", "raw_path": "",
             "evidence_excerpt": "e"}]}]}),
        ("executor_evidence_v2", {"tool_trace_summary": [{"invocation_id": "",
                                                          "tool_name": "t", "success": True}]}),
        ("executor_evidence_v2", {"tool_trace_summary": [{"tool_name": "", "success": True}]}),
        ("verifier_output", {"groundedness_score": 1.5}),
        ("verifier_output", {"groundedness_score": -0.5}),
        ("verifier_output", {"groundedness_score": True}),
        ("verifier_output", {"verdict": "MAYBE"}),
        ("verifier_output", {"allowed_claim_ids": [""]}),
        ("verifier_output", {"critical_fact_count": -1}),
        ("verifier_output", {"facts_checked": [{"claim_id": "", "fact": "f",
                                                "is_critical": True,
                                                "verification": "no_evidence"}]}),
        ("composer_output", {"answer": ""}),
        ("composer_output", {"answer": "  \n "}),
        ("composer_output", {"cited_claim_ids": [""]}),
    ],
)
def test_schema_rejects_what_the_parser_rejects(name: str, changes: dict[str, Any]) -> None:
    value = _with(name, **changes)
    assert not is_valid(value, json_schema(name))
    parse: Callable[[str], object] = {
        "planner_plan": lambda text: parse_planner_plan(text, ["payment-timeout"]),
        "executor_evidence_v2": parse_executor_evidence,
        "verifier_output": parse_verifier_output,
        "composer_output": lambda text: parse_composer_output(text, ["c1"]),
    }[name]
    with pytest.raises(PayloadError):
        parse(json.dumps(value))


def test_no_evidence_with_empty_claims_validates() -> None:
    value = {"schema_version": "executor_evidence_v2", "evidence_status": "no_evidence",
             "claims": []}
    assert is_valid(value, json_schema("executor_evidence_v2"))


def test_missing_schema_version_is_invalid() -> None:
    value = _with("executor_evidence_v2")
    del value["schema_version"]
    assert not is_valid(value, json_schema("executor_evidence_v2"))


_ids = st.text(min_size=1, max_size=5)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"claim_id": _ids, "text": _ids, "is_critical": st.none() | st.booleans(),
             "bindings": st.lists(st.fixed_dictionaries({
                 "source_invocation_id": _ids, "tool_name": _ids, "raw_path": _ids,
                 "evidence_excerpt": _ids}), min_size=1, max_size=2)}
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda claim: str(claim["claim_id"]),
    )
)
def test_every_payload_the_parser_accepts_validates(claims: list[dict[str, Any]]) -> None:
    value = _with("executor_evidence_v2", claims=claims)
    try:
        parse_executor_evidence(json.dumps(value))
    except PayloadError:
        return  # e.g. a duplicate binding key, which the schema cannot express
    assert is_valid(value, json_schema("executor_evidence_v2"))
