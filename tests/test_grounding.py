"""Grounding by construction (spec §18): the limits, their fallbacks, the profiles.

Example by example, what ``docs/executor.md`` promises: beyond a limit the
schema stops constraining that part (and says so), never narrows it; Gemini
gets independent enums and a note; the validation profile is in the form a
local decoder's converter keeps whole. The property over generated answers is
``property_tests/test_grounding_properties.py``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import jsonschema
import pytest

from tests._reach import tools as dct


def recorded(*outputs: Any, fail: int | None = None) -> dct.ToolRecorder:
    recorder = dct.ToolRecorder()
    for position, output in enumerate(outputs):
        def run(output: Any = output, position: int = position) -> Any:
            if position == fail:
                raise ValueError("down")
            return output

        with contextlib.suppress(ValueError):
            recorder.wrap(f"tool{position}", run)()
    return recorder


def bindings(grounded: dct.GroundingSchema) -> Any:
    schema: Any = grounded.schema
    return schema["properties"]["claims"]["items"]["properties"]["bindings"]["items"]


def fields(branch: Any) -> tuple[Any, Any, Any]:
    properties = branch["properties"]
    return (properties["source_invocation_id"].get("enum"), properties["tool_name"].get("enum"),
            properties["raw_path"].get("enum"))


def test_paths_are_the_scalars_in_canonical_spelling_in_document_order() -> None:
    found = dct.citable_paths({"b": [1, None, {"c d": True, "it's": "x", "": 2.5}], "a": {}})
    assert found == dct.OutputPaths(("$.b[0]", "$.b[2]['c d']", "$.b[2]['']"), True)
    assert dct.citable_paths("text").paths == ("$",)
    assert dct.citable_paths([None, {}, []]) == dct.OutputPaths((), True)


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        (dct.GroundingLimits(max_paths=2), "more than 2 paths"),
        (dct.GroundingLimits(max_depth=1), "values deeper than 1 levels"),
        (dct.GroundingLimits(max_path_chars=6), "a path longer than 6 characters"),
    ],
)
def test_an_output_over_a_limit_keeps_its_id_and_tool_but_not_its_path(
    limits: dct.GroundingLimits, reason: str
) -> None:
    grounded = dct.evidence_grounding_schema(
        recorded({"a": 1}, {"long_name": {"x": [1, 2, 3]}}).records(), limits=limits
    )
    first, second = bindings(grounded)["anyOf"]
    assert fields(first) == (["inv-1"], ["tool0"], ["$.a"])
    assert fields(second) == (["inv-2"], ["tool1"], None)
    assert second["properties"]["raw_path"] == {"type": "string", "pattern": "[\\s\\S]"}
    assert grounded.constrained == ("inv-1",)
    assert grounded.notes == (f"inv-2: raw_path not constrained ({reason})",)
    assert not grounded.complete
    assert grounded.notes[0] in bindings(grounded)["description"]


def test_invocations_beyond_the_limit_share_a_branch_and_the_path_budget_is_shared() -> None:
    records = recorded({"a": 1}, {"b": 2, "c": 3}, {"d": 4}, {"e": 5}, {}).records()
    grounded = dct.evidence_grounding_schema(
        records, limits=dct.GroundingLimits(max_invocations=3, max_total_paths=2)
    )
    branches = bindings(grounded)["anyOf"]
    assert [fields(branch) for branch in branches] == [
        (["inv-1"], ["tool0"], ["$.a"]),
        (["inv-2"], ["tool1"], None),  # 2 paths: over what is left of the budget
        (["inv-3"], ["tool2"], ["$.d"]),
        (["inv-4"], ["tool3"], None),  # beyond max_invocations; inv-5 has nothing to cite
    ]
    assert grounded.invocation_ids == ("inv-1", "inv-2", "inv-3", "inv-4")
    assert grounded.constrained == ("inv-1", "inv-3")
    assert grounded.notes == (
        "inv-2: raw_path not constrained (more than 2 paths in all)",
        "inv-4: raw_path not constrained (more than 3 invocations)",
    )


def test_invocations_beyond_the_limit_keep_each_id_with_its_own_tool() -> None:
    # Found by the grounding property: one branch holding an enum of the later ids and an
    # enum of their tools accepted inv-2 cited as "metrics" though inv-2 was a "logs" call.
    recorder = dct.ToolRecorder()
    for tool, value in (("logs", 1), ("logs", 2), ("metrics", 3)):
        recorder.wrap(tool, lambda value=value: {"v": value})()
    grounded = dct.evidence_grounding_schema(
        recorder.records(), limits=dct.GroundingLimits(max_invocations=1)
    )
    assert [fields(branch) for branch in bindings(grounded)["anyOf"]] == [
        (["inv-1"], ["logs"], ["$.v"]),
        (["inv-2"], ["logs"], None),
        (["inv-3"], ["metrics"], None),
    ]
    validator = jsonschema.Draft202012Validator(bindings(grounded))
    cite = {"raw_path": "$.v", "evidence_excerpt": "2"}
    assert validator.is_valid({"source_invocation_id": "inv-2", "tool_name": "logs", **cite})
    assert not validator.is_valid({"source_invocation_id": "inv-2", "tool_name": "metrics", **cite})


def test_failed_invocations_are_not_citable_and_nothing_citable_means_no_evidence() -> None:
    grounded = dct.evidence_grounding_schema(recorded({"a": 1}, fail=0).records())
    schema: Any = grounded.schema
    assert schema["properties"]["evidence_status"]["enum"] == ["no_evidence"]
    assert schema["properties"]["claims"]["maxItems"] == 0
    assert grounded.invocation_ids == () and grounded.complete
    anthropic = dct.evidence_grounding_schema((), profile="anthropic-strict")
    claims: Any = anthropic.schema["properties"]
    assert "maxItems" not in claims["claims"]
    assert anthropic.notes == (
        "anthropic-strict: claims limited to 0 items in its description only",)


def test_gemini_gets_independent_enums_and_a_note() -> None:
    grounded = dct.evidence_grounding_schema(
        recorded({"a": 1}, {"b": "x"}).records(), profile="gemini"
    )
    item = bindings(grounded)
    assert "anyOf" not in item and item["type"] == "OBJECT"
    assert fields(item) == (["inv-1", "inv-2"], ["tool0", "tool1"], ["$.a", "$.b"])
    assert grounded.notes[0].startswith("gemini: no anyOf")


def test_the_strict_profiles_follow_their_provider_rules() -> None:
    for profile in ("openai-strict", "anthropic-strict"):
        grounded = dct.evidence_grounding_schema(recorded({"a": 1}).records(), profile=profile)
        for branch in bindings(grounded)["anyOf"]:
            assert branch["additionalProperties"] is False
            assert sorted(branch["required"]) == sorted(branch["properties"])
        assert "anyOf" not in grounded.schema  # never at the root


def test_the_validation_profile_has_no_type_lists_and_no_patterns() -> None:
    for grounded in (
        dct.evidence_grounding_schema(recorded({"a": 1}).records(), profile="validation"),
        dct.aiops_grounding_schema(recorded({"a": 1}).records(), profile="validation"),
    ):
        text = json.dumps(grounded.schema)
        assert '"pattern"' not in text
        assert '"type": [' not in text


def test_aiops_citations_beyond_the_limit_are_left_free() -> None:
    records = recorded({"a": 1}, {"b": 2}, {"c": 3}).records()
    grounded = dct.aiops_grounding_schema(records, limits=dct.GroundingLimits(max_invocations=2))
    assert grounded.constrained == () and grounded.notes == (
        "cited_invocation_ids not constrained (more than 2 invocations)",)
    free = dct.aiops_grounding_schema(records)
    assert free.constrained == ("inv-1", "inv-2", "inv-3")


def test_limits_are_positive_ints_and_profiles_are_known() -> None:
    with pytest.raises(ValueError, match="max_paths: expected a positive int"):
        dct.GroundingLimits(max_paths=0)
    with pytest.raises(ValueError, match="unknown schema profile 'grammar'"):
        dct.evidence_grounding_schema((), profile="grammar")


def test_a_huge_output_costs_one_walk_that_stops_at_the_limit() -> None:
    output = {"items": [{"n": index} for index in range(200_000)]}
    found = dct.citable_paths(output)
    assert not found.complete and len(found.paths) == 200
