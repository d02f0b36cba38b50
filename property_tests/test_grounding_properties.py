"""Grounding by construction (spec §18): what the schema accepts cites only what exists.

Tools with arbitrary JSON outputs (some failing) are called through a real
:class:`ToolRecorder`; the grounding schema of those invocations is built
under arbitrary (often tiny) limits. Instances are generated *from the
schema itself* — a small generator for the JSON Schema subset the profiles
use, choosing among ``anyOf`` branches and ``enum`` values — and kept when
``jsonschema`` accepts them (the schemas' cross-field rules filter). The
oracle walks the tool outputs the test itself returned (a recursive walk of
its own, not the package's): every binding
cites an invocation that succeeded, with its own tool name, and, where the
schema constrains the path, a path at which that output holds a string,
number or boolean. Conversely, a constrained invocation's enum lists every
such path (in canonical spelling): the schema refuses no path the
gatekeeper would resolve.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import diagnosis_core.tools as dct

KEYS = st.sampled_from(["a", "b_1", "x-y", "", "a b", "it's", "back\\slash", "中", "0", "$"])
leaves = (
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
)
outputs = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=12,
)
# (tool name, output or None for a tool that raises)
calls = st.lists(
    st.tuples(st.sampled_from(["logs", "metrics", "traces"]), st.none() | outputs),
    max_size=5,
)
limits = st.builds(
    dct.GroundingLimits,
    max_invocations=st.integers(1, 6),
    max_paths=st.integers(1, 30),
    max_depth=st.integers(1, 6),
    max_path_chars=st.integers(5, 60),
    max_total_paths=st.integers(1, 60),
)
PROFILES = ["openai-strict", "anthropic-strict", "validation"]
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


class Down(Exception):
    """The failure of a tool the test made fail."""


def record(recorder: dct.ToolRecorder, plan: list[tuple[str, Any]]) -> dict[str, tuple[str, Any]]:
    """Call the tools; the oracle: successful invocation id -> (tool, output the test returned)."""
    expected: dict[str, tuple[str, Any]] = {}
    for tool, output in plan:
        def run(output: Any = output) -> Any:
            if output is None:
                raise Down("down")
            return output

        try:
            envelope = recorder.wrap(tool, run)()
        except Down:
            continue
        expected[envelope["invocation_id"]] = (tool, output)
    return expected


def scalar_paths(value: Any, path: str = "$") -> list[str]:
    """The oracle's own walk: canonical paths to strings, numbers and booleans."""
    if isinstance(value, bool | int | float | str):
        return [path]
    found: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if NAME.match(key):
                found += scalar_paths(child, f"{path}.{key}")
            elif "'" not in key and "\\" not in key:
                found += scalar_paths(child, f"{path}['{key}']")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += scalar_paths(child, f"{path}[{index}]")
    return found


def resolve(value: Any, path: str) -> Any:
    """The oracle's own resolver for canonical paths; KeyError when it does not resolve."""
    assert path.startswith("$")
    rest = path[1:]
    while rest:
        if rest.startswith("."):
            key = re.match(r"\.([A-Za-z_][A-Za-z0-9_-]*)", rest)
            assert key is not None
            value, rest = value[key.group(1)], rest[key.end():]
        elif rest.startswith("['"):
            end = rest.index("']")
            value, rest = value[rest[2:end]], rest[end + 2:]
        else:
            end = rest.index("]")
            index = int(rest[1:end])
            if not isinstance(value, list):
                raise KeyError(path)
            value, rest = value[index], rest[end + 1:]
    return value


def instances(schema: Any, draw: Any) -> Any:
    """One instance of ``schema`` (the subset the profiles use), drawn branch by branch."""
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema:
        return instances(draw(st.sampled_from(schema["anyOf"])), draw)
    kind = schema["type"]
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind))
    if kind == "null":
        return None
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "string":
        return draw(st.text(min_size=1 if "pattern" in schema or "minLength" in schema else 0,
                            max_size=4))
    if kind == "array":
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", 2), 2)
        if high < low:
            high = low
        return [instances(schema["items"], draw) for _ in range(draw(st.integers(low, high)))]
    assert kind == "object", schema
    return {name: instances(part, draw) for name, part in schema["properties"].items()}


@settings(max_examples=80, deadline=None)
@given(calls, limits, st.sampled_from(PROFILES), st.data())
def test_an_accepted_answer_cites_only_recorded_invocations_and_existing_paths(
    plan: list[tuple[str, Any]], limit: dct.GroundingLimits, profile: str, data: st.DataObject
) -> None:
    recorder = dct.ToolRecorder()
    expected = record(recorder, plan)
    grounded = dct.evidence_grounding_schema(recorder.records(), profile=profile, limits=limit)
    schema = json.loads(json.dumps(grounded.schema))
    if not grounded.invocation_ids and profile == "anthropic-strict":
        # Its subset cannot bound claims to 0 items: documented, and said in the notes.
        assert grounded.notes and not grounded.complete
        return
    answer = instances(schema, data.draw)
    # Any answer the schema accepts (cross-field rules such as evidence_status/claims filter).
    assume(jsonschema.Draft202012Validator(schema).is_valid(answer))
    for claim in answer["claims"]:
        for binding in claim["bindings"]:
            invocation = binding["source_invocation_id"]
            assert invocation in expected  # recorded, and succeeded
            tool, output = expected[invocation]
            assert binding["tool_name"] == tool
            if invocation in grounded.constrained:
                value = resolve(output, binding["raw_path"])
                assert isinstance(value, bool | int | float | str)
    # Nothing citable is refused: a constrained invocation lists every scalar path it has.
    listed = schema["properties"]["claims"]["items"]["properties"]["bindings"]["items"]
    for branch in listed.get("anyOf", []):
        ids = branch["properties"]["source_invocation_id"]["enum"]
        if len(ids) == 1 and ids[0] in grounded.constrained:
            assert branch["properties"]["raw_path"]["enum"] == scalar_paths(expected[ids[0]][1])
    # Every successful invocation with something to cite has a branch; one without has none,
    # unless a limit stopped its walk before it could tell (then its path is unconstrained).
    citable = {i for i, (_, output) in expected.items() if scalar_paths(output)}
    assert citable <= set(grounded.invocation_ids)
    assert not (set(grounded.invocation_ids) - citable) & set(grounded.constrained)
    assert grounded.complete == (not grounded.notes)


@settings(max_examples=50, deadline=None)
@given(calls, st.sampled_from(PROFILES), st.data())
def test_an_accepted_aiops_step_cites_only_successful_invocations(
    plan: list[tuple[str, Any]], profile: str, data: st.DataObject
) -> None:
    recorder = dct.ToolRecorder()
    expected = record(recorder, plan)
    grounded = dct.aiops_grounding_schema(recorder.records(), profile=profile)
    schema = json.loads(json.dumps(grounded.schema))
    if not grounded.invocation_ids and profile == "anthropic-strict":
        assert grounded.notes and not grounded.complete
        return
    answer = instances(schema, data.draw)
    assume(jsonschema.Draft202012Validator(schema).is_valid(answer))
    for finding in answer["findings"] or []:
        for invocation in finding["cited_invocation_ids"] or []:
            assert invocation in expected
