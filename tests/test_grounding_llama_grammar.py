"""The grounding schema as a llama.cpp JSON-schema grammar (spec §18; extra ``local-model``).

llama.cpp's converter (``llama_cpp.llama_grammar.json_schema_to_gbnf``, what
``response_format={"type": "json_object", "schema": …}`` uses) requires every
``pattern`` to be anchored (``^…$``); the provider strict profiles write a
non-empty string as the unanchored ``[\\s\\S]``, so a local decoder takes the
``validation`` profile, which the grounding schema writes in a form the
converter keeps whole (nullable fields as ``anyOf``, patterns in the
description). Its grammar lists each invocation's paths as alternatives of
that invocation's branch only.
"""

from __future__ import annotations

import json

import pytest

grammar = pytest.importorskip("llama_cpp.llama_grammar")

import diagnosis_core.tools as dct  # noqa: E402


def recorder() -> dct.ToolRecorder:
    tools = dct.ToolRecorder()
    tools.wrap("query_logs", lambda: {"items": [{"message": "timeout", "code": 504}]})()
    tools.wrap("query_metrics", lambda: {"p99_ms": 3400})()
    return tools


def test_the_validation_profile_converts_and_couples_ids_to_their_paths() -> None:
    schema = dct.evidence_grounding_schema(recorder().records(), profile="validation").schema
    gbnf = grammar.json_schema_to_gbnf(json.dumps(schema))
    rules = dict(line.split(" ::= ", 1) for line in gbnf.splitlines() if " ::= " in line)
    paths = {name: rule for name, rule in rules.items() if name.endswith("raw-path")}
    assert sorted(paths.values()) == [
        '"\\"$.items[0].message\\"" | "\\"$.items[0].code\\""',
        '"\\"$.p99_ms\\""',
    ]
    aiops = dct.aiops_grounding_schema(recorder().records(), profile="validation").schema
    assert '"\\"inv-1\\"" | "\\"inv-2\\""' in grammar.json_schema_to_gbnf(json.dumps(aiops))


def test_the_strict_profiles_are_for_providers_not_for_the_llama_cpp_converter() -> None:
    schema = dct.evidence_grounding_schema(recorder().records(), profile="openai-strict").schema
    with pytest.raises(AssertionError, match="Pattern must start with"):
        grammar.json_schema_to_gbnf(json.dumps(schema))
