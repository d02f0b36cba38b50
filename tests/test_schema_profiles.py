"""Provider schema profiles (spec §5.5).

Two independent checks of every profile schema:

* a checker per provider, written from that provider's documented rules
  (cited in :mod:`diagnosis_core._chat.schema`), never from the generator; and
* instances generated from the profile schema itself (a small generator of
  the JSON Schema subset the profiles use, below; ``hypothesis-jsonschema``
  does not run on the Hypothesis versions we support), each checked against
  the schema by ``jsonschema``: one that also satisfies the cross-field rules
  parses, to the same value as the instance with its nulls removed. Rules a
  profile states only in a ``description`` are read back from the documented
  phrase, so a phrase that does not say what the parser enforces makes this
  test fail.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from diagnosis_core._kernel.wire.schema import SchemaProfile
from diagnosis_core.protocol import (
    AIOPS_SCHEMA_NAMES,
    SCHEMA_NAMES,
    SCHEMA_PROFILES,
    ComposerOutput,
    aiops_json_schema,
    class_json_schema,
    json_schema,
    parse_aiops_executor_output,
    parse_aiops_plan,
    parse_aiops_report,
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_supervisor_decision,
    parse_verifier_output,
)

ALL_NAMES = [*SCHEMA_NAMES, *AIOPS_SCHEMA_NAMES]


def schema_of(name: str, profile: str = "validation") -> dict[str, Any]:
    """The schema of a chat or an AIOps payload (the names do not overlap)."""
    if name in AIOPS_SCHEMA_NAMES:
        return aiops_json_schema(name, profile)
    return json_schema(name, profile)

PROVIDER_PROFILES = ["openai-strict", "anthropic-strict", "gemini"]

# --- the wire order of spec §5 (the key order of each example) ---------------------------------

WIRE_ORDER: dict[str, list[str]] = {
    "planner_plan": ["steps", "selected_skill"],
    "steps": ["step_id", "goal", "tools"],
    "executor_evidence_v2": [
        "schema_version", "evidence_status", "claims", "hypotheses", "tool_trace_summary",
    ],
    "claims": ["claim_id", "text", "is_critical", "bindings"],
    "bindings": ["source_invocation_id", "tool_name", "raw_path", "evidence_excerpt"],
    "hypotheses": ["text", "missing_evidence"],
    "tool_trace_summary": ["invocation_id", "tool_name", "success"],
    "verifier_output": [
        "verdict", "groundedness_score", "critical_fact_count", "facts_checked",
        "allowed_claim_ids", "missing_info", "recommended_actions", "rationale",
    ],
    "facts_checked": ["claim_id", "fact", "is_critical", "verification"],
    "composer_output": ["answer", "cited_claim_ids"],
    # AIOps payloads (spec §11): the field order of the payload types.
    "supervisor_decision": ["next", "reason"],
    "aiops_plan": ["steps"],
    "aiops_executor_output": ["tool_invocation_ids", "findings"],
    "findings": ["text", "alert_name", "service", "cited_invocation_ids"],
    "aiops_report": ["summary", "findings", "evidence", "recommended_actions"],
    "evidence": ["text", "cited_invocation_ids"],
    "recommended_actions": ["text", "alert_name", "service"],
}
# ``findings`` items differ between the executor output and the report.
REPORT_FINDINGS = ["alert_name", "service", "text", "cited_invocation_ids"]


def wire_order(name: str, path: str) -> list[str]:
    key = name if path == "$" else path.rsplit(".", 1)[-1].split("|")[0].rstrip("[]")
    if name == "aiops_report" and key == "findings":
        return REPORT_FINDINGS
    return WIRE_ORDER[key]


def walk(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema with a readable path (``$.claims[].bindings[]``)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from walk(schema["items"], f"{path}[]")
    for index, sub in enumerate(schema.get("anyOf", [])):
        yield from walk(sub, f"{path}|{index}")


def objects(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(path, node) for path, node in walk(schema) if "properties" in node]


def object_depth(schema: Any) -> int:
    if not isinstance(schema, dict):
        return 0
    own = 1 if "properties" in schema else 0
    children = [*schema.get("properties", {}).values(), *schema.get("anyOf", [])]
    if "items" in schema:
        children.append(schema["items"])
    return own + max((object_depth(child) for child in children), default=0)


# --- OpenAI Structured Outputs, strict: true ---------------------------------------------------
# https://platform.openai.com/docs/guides/structured-outputs#supported-schemas

OPENAI_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "description", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "$defs", "$ref",
}
OPENAI_FORBIDDEN = {"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas"}


def openai_violations(schema: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append("$: the root must be an object, not anyOf")
    enum_values = 0
    text_size = 0
    for path, node in walk(schema):
        for keyword in node:
            if keyword in OPENAI_FORBIDDEN:
                problems.append(f"{path}: {keyword} is not supported")
            elif keyword not in OPENAI_KEYWORDS:
                problems.append(f"{path}: {keyword} is not a supported keyword")
        if "properties" in node:
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: additionalProperties must be false")
            if set(node.get("required", [])) != set(node["properties"]):
                problems.append(f"{path}: every property must be required")
            text_size += sum(len(name) for name in node["properties"])
        if isinstance(node.get("enum"), list):
            enum_values += len(node["enum"])
            text_size += sum(len(value) for value in node["enum"] if isinstance(value, str))
        if isinstance(node.get("const"), str):
            text_size += len(node["const"])
    total_properties = sum(len(node["properties"]) for _, node in objects(schema))
    if total_properties > 5000:
        problems.append(f"{total_properties} object properties (limit 5000)")
    if object_depth(schema) > 10:
        problems.append("more than 10 levels of nesting")
    if enum_values > 1000:
        problems.append(f"{enum_values} enum values (limit 1000)")
    if text_size > 120_000:
        problems.append(f"{text_size} characters of names and enum values (limit 120000)")
    return problems


# --- Anthropic structured outputs / strict tool use ----------------------------------------------
# https://docs.claude.com/en/docs/build-with-claude/structured-outputs#json-schema-limitations

ANTHROPIC_FORBIDDEN = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "maxItems", "uniqueItems", "contains", "minContains",
    "maxContains", "minProperties", "maxProperties", "patternProperties", "not", "if",
    "then", "else", "dependentRequired", "dependentSchemas", "prefixItems",
}
ANTHROPIC_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "allOf", "description", "pattern", "format", "minItems", "$defs", "$ref",
    "default", "title",
}
_UNSUPPORTED_REGEX = re.compile(r"\\[1-9bB]|\(\?[=!<]")  # backreferences, lookaround, \b


def anthropic_violations(schema: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for path, node in walk(schema):
        for keyword in node:
            if keyword in ANTHROPIC_FORBIDDEN:
                problems.append(f"{path}: {keyword} is not supported")
            elif keyword not in ANTHROPIC_KEYWORDS:
                problems.append(f"{path}: {keyword} is not a supported keyword")
        if "properties" in node and node.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        if node.get("minItems", 0) not in (0, 1):
            problems.append(f"{path}: minItems {node['minItems']} (only 0 or 1)")
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            problems.append(f"{path}: external $ref")
        if isinstance(node.get("pattern"), str) and _UNSUPPORTED_REGEX.search(node["pattern"]):
            problems.append(f"{path}: pattern uses an unsupported regex feature")
    if "$ref" in json.dumps(schema):
        problems.append("$ref present: recursion cannot be ruled out")
    return problems


# --- Gemini responseSchema (OpenAPI 3.0 subset) ---
# https://ai.google.dev/gemini-api/docs/structured-output, https://ai.google.dev/api/caching#Schema

GEMINI_KEYWORDS = {
    "type", "format", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "propertyOrdering", "items",
}
GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}


def gemini_violations(schema: dict[str, Any], wire_name: str) -> list[str]:
    problems: list[str] = []
    for path, node in walk(schema):
        for keyword in node:
            if keyword not in GEMINI_KEYWORDS:
                problems.append(f"{path}: {keyword} is not a responseSchema field")
        kind = node.get("type")
        if not isinstance(kind, str) or kind not in GEMINI_TYPES:
            problems.append(f"{path}: type must be one Type value, got {node.get('type')!r}")
        if "enum" in node and kind != "STRING":
            problems.append(f"{path}: enum on a non-string")
        if "properties" in node:
            names = list(node["properties"])
            if node.get("propertyOrdering") != names:
                problems.append(f"{path}: propertyOrdering must list the properties in order")
            if not set(node.get("required", [])) <= set(names):
                problems.append(f"{path}: required names an unknown property")
            if names != wire_order(wire_name, path):
                problems.append(f"{path}: order {names} is not the wire order of spec §5")
    return problems


def violations(profile: str, name: str, schema: dict[str, Any]) -> list[str]:
    if profile == "openai-strict":
        return openai_violations(schema)
    if profile == "anthropic-strict":
        return anthropic_violations(schema)
    return gemini_violations(schema, name)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("profile", PROVIDER_PROFILES)
def test_every_profile_schema_satisfies_its_provider_rules(profile: str, name: str) -> None:
    assert violations(profile, name, schema_of(name, profile)) == []


@pytest.mark.parametrize("name", ALL_NAMES)
def test_the_validation_profile_breaks_every_provider_checker(name: str) -> None:
    # The checkers can fail: today's validation schema is what the issue saw rejected.
    schema = schema_of(name)
    for profile in PROVIDER_PROFILES:
        assert violations(profile, name, schema), profile


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("profile", ["openai-strict", "anthropic-strict"])
def test_strict_profiles_keep_the_wire_order_and_no_annotations(profile: str, name: str) -> None:
    schema = schema_of(name, profile)
    for path, node in walk(schema):
        assert not {"$schema", "$comment", "title"} & set(node), path
        if "properties" in node:
            assert list(node["properties"]) == wire_order(name, path), path


def test_default_profile_is_validation_and_unknown_profiles_are_refused() -> None:
    for name in SCHEMA_NAMES:
        assert json_schema(name) == json_schema(name, "validation")
        assert json_schema(name, SchemaProfile.GEMINI) == json_schema(name, "gemini")
    assert set(SCHEMA_PROFILES) == {"validation", *PROVIDER_PROFILES}
    with pytest.raises(ValueError, match=r"unknown schema profile 'openai'.*'openai-strict'"):
        json_schema("composer_output", "openai")
    with pytest.raises(ValueError, match="unknown schema profile"):
        json_schema("composer_output", None)  # type: ignore[arg-type]
    for name in AIOPS_SCHEMA_NAMES:
        assert aiops_json_schema(name) == aiops_json_schema(name, "validation")
    with pytest.raises(ValueError, match=r"unknown schema profile 'strict'"):
        aiops_json_schema("aiops_report", "strict")


def test_aiops_rules_beyond_the_types_are_stated_or_expressed() -> None:
    report = aiops_json_schema("aiops_report", "gemini")
    evidence = report["properties"]["evidence"]["items"]
    assert evidence["properties"]["cited_invocation_ids"]["minItems"] == 1
    text = evidence["properties"]["text"]["description"]
    assert "Must match the regular expression" in text  # non-blank, as the parser says
    executor = aiops_json_schema("aiops_executor_output", "openai-strict")
    assert "tool_invocation_ids values are unique" in executor["description"]
    action = aiops_json_schema("aiops_report", "anthropic-strict")["properties"][
        "recommended_actions"]["items"]
    assert "given together or not at all" in action["description"]
    # The AIOps plan's goal is non-blank, stricter than the chat plan's non-empty goal.
    goal = aiops_json_schema("aiops_plan", "openai-strict")["properties"]["steps"]["items"][
        "properties"]["goal"]
    assert goal["pattern"] != json_schema("planner_plan", "openai-strict")["properties"][
        "steps"]["items"]["properties"]["goal"]["pattern"]


def test_class_json_schema_is_the_generic_form() -> None:
    assert class_json_schema(ComposerOutput, "gemini") == json_schema("composer_output", "gemini")
    validation = class_json_schema(ComposerOutput, title="composer_output")
    assert validation == json_schema("composer_output")


def test_unexpressed_rules_are_stated_in_the_description() -> None:
    gemini = json_schema("verifier_output", "gemini")
    assert "Minimum: 0. Maximum: 1." in gemini["properties"]["groundedness_score"]["description"]
    executor = json_schema("executor_evidence_v2", "anthropic-strict")
    assert "evidence_found" in executor["description"]
    assert "claim_id values are unique" in executor["description"]


# --- instances of the profile schemas parse to the same value -------------------------------------

PHRASES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], dict[str, Any]]]] = [
    (re.compile(r"Each item: must have at least (\d+) characters?\."),
     lambda m: {"items": {"minLength": int(m.group(1))}}),
    (re.compile(r"(?<!item: )Must have at least (\d+) characters?\."),
     lambda m: {"minLength": int(m.group(1))}),
    (re.compile(r"Must have at least (\d+) items?\."), lambda m: {"minItems": int(m.group(1))}),
    (re.compile(r"Minimum: (-?[0-9.]+)\."), lambda m: {"minimum": json.loads(m.group(1))}),
    (re.compile(r"Maximum: (-?[0-9.]+)\."), lambda m: {"maximum": json.loads(m.group(1))}),
    (re.compile(r"Must match the regular expression `([^`]+)`\."),
     lambda m: {"pattern": m.group(1)}),
]


def _merge_into(node: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(node.get(key), dict):
            _merge_into(node[key], value)
        else:
            node[key] = value


def enforce_described_rules(schema: dict[str, Any]) -> dict[str, Any]:
    """Turn the documented description phrases back into JSON Schema keywords."""
    result = copy.deepcopy(schema)
    for _, node in walk(result):
        description = node.get("description")
        if not isinstance(description, str) or "properties" in node:
            continue
        target = node["anyOf"][0] if "anyOf" in node else node
        for pattern, keywords in PHRASES:
            for match in pattern.finditer(description):
                _merge_into(target, keywords(match))
    return result


def gemini_to_json_schema(node: Any) -> Any:
    """The JSON Schema that the OpenAPI 3.0 subset means (for generation only)."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            out["type"] = value.lower()
        elif key == "properties":
            out["properties"] = {name: gemini_to_json_schema(sub) for name, sub in value.items()}
            out["additionalProperties"] = False  # unknown keys are ignored; keep examples small
        elif key == "items":
            out["items"] = gemini_to_json_schema(value)
        elif key in ("nullable", "propertyOrdering"):
            continue
        else:
            out[key] = value
    if node.get("nullable"):
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def generation_schema(name: str, profile: str) -> dict[str, Any]:
    schema = schema_of(name, profile)
    if profile == "gemini":
        schema = gemini_to_json_schema(schema)
    return enforce_described_rules(schema)


_KNOWN = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "description", "pattern", "minLength", "minimum", "maximum", "minItems",
}


def instances(schema: dict[str, Any]) -> SearchStrategy[Any]:
    """Values valid under ``schema`` (the subset the profiles use; anything else fails)."""
    unknown = set(schema) - _KNOWN
    assert not unknown, unknown
    if "anyOf" in schema:
        return st.one_of([instances(branch) for branch in schema["anyOf"]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return st.one_of([_typed(kind, schema) for kind in kinds])


def _typed(kind: str, schema: dict[str, Any]) -> SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
    if kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.integers(min_value=low, max_value=high) | st.floats(
            min_value=low, max_value=high, allow_nan=False, allow_infinity=False
        )
    if kind == "string":
        text = st.from_regex(schema["pattern"]) if "pattern" in schema else st.text(max_size=12)
        least = schema.get("minLength", 0)
        return text.filter(lambda value: len(value) >= least)
    if kind == "array":
        least = schema.get("minItems", 0)
        return st.lists(instances(schema["items"]), min_size=least, max_size=least + 2)
    assert kind == "object", kind
    required = set(schema.get("required", []))
    properties = {name: instances(sub) for name, sub in schema["properties"].items()}
    return st.fixed_dictionaries(
        {name: strategy for name, strategy in properties.items() if name in required},
        optional={name: strategy for name, strategy in properties.items() if name not in required},
    )


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def cross_field_rules_hold(name: str, doc: dict[str, Any]) -> bool:
    """The rules spec §5.5 says no schema expresses (unique ids, status ↔ claims, …)."""
    if name == "planner_plan":
        ids = [step["step_id"] for step in doc["steps"]]
        return len(ids) == len(set(ids))
    if name == "executor_evidence_v2":
        claims = doc["claims"]
        if (doc["evidence_status"] == "evidence_found") != bool(claims):
            return False
        ids = [claim["claim_id"] for claim in claims]
        keys = [
            [(b["source_invocation_id"], b["tool_name"], b["raw_path"]) for b in claim["bindings"]]
            for claim in claims
        ]
        return len(ids) == len(set(ids)) and all(len(k) == len(set(k)) for k in keys)
    if name == "aiops_plan":
        ids = [step["step_id"] for step in doc["steps"]]
        return len(ids) == len(set(ids))
    if name == "aiops_executor_output":
        reported = doc["tool_invocation_ids"]
        return len(reported) == len(set(reported)) and all(
            both_or_neither(finding) for finding in doc.get("findings") or []
        )
    if name == "aiops_report":
        return all(both_or_neither(action) for action in doc["recommended_actions"])
    return True


def both_or_neither(item: dict[str, Any]) -> bool:
    return (item.get("alert_name") is None) == (item.get("service") is None)


def earlier_ids(doc: dict[str, Any]) -> list[str]:
    """The ids an executor finding cites beyond this step's: reported by earlier steps."""
    return [
        value
        for finding in doc.get("findings") or []
        for value in finding.get("cited_invocation_ids") or []
    ]


def parse(name: str, doc: dict[str, Any]) -> object:
    text = json.dumps(doc)
    if name == "planner_plan":
        skill = doc.get("selected_skill")
        return parse_planner_plan(text, [skill] if isinstance(skill, str) else [])
    if name == "executor_evidence_v2":
        return parse_executor_evidence(text)
    if name == "verifier_output":
        return parse_verifier_output(text)
    if name == "supervisor_decision":
        return parse_supervisor_decision(text)
    if name == "aiops_plan":
        return parse_aiops_plan(text)
    if name == "aiops_executor_output":
        return parse_aiops_executor_output(text, earlier_ids(doc))
    if name == "aiops_report":
        return parse_aiops_report(text)
    return parse_composer_output(text, doc.get("cited_claim_ids") or [])


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("profile", PROVIDER_PROFILES)
@settings(max_examples=30, suppress_health_check=[HealthCheck.filter_too_much,
                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_a_profile_instance_that_keeps_the_cross_field_rules_parses_to_the_same_value(
    profile: str, name: str, data: st.DataObject
) -> None:
    schema = generation_schema(name, profile)
    doc = data.draw(instances(schema), label="instance")
    jsonschema.validate(doc, schema)
    assume(cross_field_rules_hold(name, doc))
    assert parse(name, doc) == parse(name, without_nulls(doc))


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("profile", PROVIDER_PROFILES)
def test_every_optional_field_accepts_null_and_every_profile_accepts_the_spec_example(
    profile: str, name: str
) -> None:
    schema = generation_schema(name, profile)
    validation = schema_of(name)
    for field in set(validation["properties"]) - set(validation["required"]):
        sub = schema["properties"][field]
        jsonschema.validate(None, sub)
    jsonschema.Draft202012Validator.check_schema(schema)
