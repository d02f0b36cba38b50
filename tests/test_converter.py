"""The converter: strict structuring, readable paths, exact round trips (spec §2, §5, §10.8)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import attrs
import pytest
from cattrs.errors import BaseValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.config import DiagnosisConfig
from diagnosis_core._chat.enums import BindingCheckStatus, EvidenceStatus, Verdict, Verification
from diagnosis_core._chat.payloads import (
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
from diagnosis_core._kernel.enums import Locale
from diagnosis_core._kernel.errors import ConfigError, PayloadError
from diagnosis_core._kernel.machine.config import RunConfig
from diagnosis_core._kernel.machine.plan import PlanStep
from diagnosis_core._kernel.wire.codegen import Reject
from diagnosis_core._kernel.wire.converter import (
    _detailed_converter,
    _WireError,
    from_wire,
    to_wire,
)
from diagnosis_core._kernel.wire.converter import _fast_converter as converter
from diagnosis_core._kernel.wire.json import JsonValue, canonical_json

# --- generic building blocks, as colleagues' future classes will use them ------------------


def _freeze(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


@attrs.frozen
class Leaf:
    kind: Literal["a", "b"]
    count: int = 0


@attrs.frozen
class Node:
    name: str
    pair: tuple[int, str]
    leaves: tuple[Leaf, ...]
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=_freeze)
    verdict: Verdict | None = None
    score: float = 0.5
    optional_leaf: Leaf | None = None
    details: JsonValue = None
    flags: tuple[bool, ...] = ()
    kw: str = attrs.field(default="k", kw_only=True)


@attrs.frozen
class Loose:
    anything: Any
    maybe: object = None


def _roundtrip(value: object) -> object:
    return from_wire(type(value), json.loads(canonical_json(to_wire(value))))


def _error(cls: type[Any], data: object) -> str:
    with pytest.raises(PayloadError) as info:
        from_wire(cls, data)
    return str(info.value)


# --- to_wire -----------------------------------------------------------------------------------


def test_to_wire_gives_plain_json_data() -> None:
    node = Node(
        name="n",
        pair=(1, "x"),
        leaves=(Leaf("a", 2),),
        labels={"k": "v"},
        verdict=Verdict.PASS,
        details={"deep": [1, {"x": None}]},
    )
    wire = to_wire(node)
    assert wire == {
        "name": "n",
        "pair": [1, "x"],
        "leaves": [{"kind": "a", "count": 2}],
        "labels": {"k": "v"},
        "verdict": "PASS",
        "score": 0.5,
        "optional_leaf": None,
        "details": {"deep": [1, {"x": None}]},
        "flags": [],
        "kw": "k",
    }
    assert isinstance(wire, dict)
    assert type(wire["verdict"]) is str
    assert type(wire["labels"]) is dict
    assert type(wire["pair"]) is list


def test_to_wire_of_bare_enums_and_tuples() -> None:
    assert type(to_wire(Verdict.LOW_CONFID)) is str
    assert to_wire(Verdict.LOW_CONFID) == "LOW_CONFID"
    assert to_wire((Locale.ZH_CN, 1)) == ["zh-CN", 1]
    assert to_wire(MappingProxyType({"a": (1,)})) == {"a": [1]}


# --- round trips ---------------------------------------------------------------------------------

_ids = st.text(min_size=1, max_size=8)
_texts = st.text(max_size=20)
_bindings = st.builds(EvidenceBinding, _ids, _ids, _ids, _ids)
_claims = st.builds(
    Claim, _ids, _ids, st.lists(_bindings, min_size=1, max_size=3).map(tuple), st.booleans()
)
_scores = st.floats(min_value=0, max_value=1, allow_nan=False)
_ALL_VALUES = st.one_of(
    st.builds(
        PlannerPlan,
        st.lists(
            st.builds(PlanStep, _ids, _ids, st.lists(_texts, max_size=3).map(tuple)),
            min_size=1,
            max_size=3,
        ).map(tuple),
        st.none() | _ids,
    ),
    st.builds(
        ExecutorEvidence,
        st.sampled_from(EvidenceStatus),
        st.lists(_claims, max_size=3).map(tuple),
        st.lists(st.builds(Hypothesis, _texts, st.none() | _texts), max_size=2).map(tuple),
        st.lists(
            st.builds(ToolTraceEntry, _ids, st.booleans(), st.none() | _ids), max_size=2
        ).map(tuple),
    ),
    st.builds(
        VerifierOutput,
        st.sampled_from(Verdict),
        _scores,
        st.lists(
            st.builds(FactCheck, _ids, _texts, st.booleans(), st.sampled_from(Verification)),
            max_size=3,
        ).map(tuple),
        st.lists(_ids, max_size=3).map(tuple),
        st.none() | st.integers(min_value=0, max_value=10**20),
        st.lists(_texts, max_size=2).map(tuple),
        st.lists(_texts, max_size=2).map(tuple),
        _texts,
    ),
    st.builds(ComposerOutput, _texts, st.lists(_ids, max_size=3).map(tuple)),
    st.builds(
        GatekeeperResult,
        _texts,
        st.none() | _texts,
        st.lists(
            st.builds(
                CheckedBinding,
                _ids,
                _ids,
                _ids,
                _ids,
                st.sampled_from(BindingCheckStatus),
                st.none() | _texts,
                st.none() | _texts,
            ),
            max_size=2,
        ).map(tuple),
        st.lists(_texts, max_size=2).map(tuple),
    ),
    st.builds(HistoryMessage, _texts, _texts),
    st.builds(Skill, _texts, _texts),
    st.builds(
        DiagnosisConfig,
        st.integers(0, 3),
        st.integers(0, 1),
        st.integers(0, 100),
        st.integers(20, 10000),
        st.sampled_from(Locale),
    ),
    st.builds(RunConfig, _ids, _ids, st.dictionaries(_texts, _texts, max_size=3)),
    st.builds(
        Node,
        name=_texts,
        pair=st.tuples(st.integers(), _texts),
        leaves=st.lists(st.builds(Leaf, st.sampled_from(["a", "b"]), st.integers()), max_size=2)
        .map(tuple),
        labels=st.dictionaries(_texts, _texts, max_size=2),
        verdict=st.none() | st.sampled_from(Verdict),
        score=st.floats(allow_nan=False, allow_infinity=False),
        optional_leaf=st.none() | st.builds(Leaf, st.just("b")),
        details=st.recursive(
            st.none() | st.booleans() | st.integers() | _texts,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
            max_leaves=8,
        ),
        flags=st.lists(st.booleans(), max_size=3).map(tuple),
        kw=_texts,
    ),
)


@settings(max_examples=300, deadline=None)
@given(_ALL_VALUES)
def test_every_value_survives_unstructure_json_structure(value: object) -> None:
    assert _roundtrip(value) == value


def test_run_config_round_trip_keeps_a_read_only_mapping() -> None:
    config = RunConfig("run-1", "chat-42", {"b": "2", "a": "1"})
    back = _roundtrip(config)
    assert back == config
    assert isinstance(back, RunConfig)
    assert isinstance(back.metadata, MappingProxyType)


def test_diagnosis_config_round_trip_keeps_the_locale_enum() -> None:
    config = DiagnosisConfig(locale=Locale.ZH_CN)
    back = _roundtrip(config)
    assert back == config
    assert isinstance(back, DiagnosisConfig)
    assert back.locale is Locale.ZH_CN


# --- strict scalars -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [1, 1.5, True, None, ["x"], {"x": 1}])
def test_a_string_field_accepts_only_a_string(bad: object) -> None:
    assert _error(HistoryMessage, {"role": bad, "content": "c"}) == "role: expected a string"


@pytest.mark.parametrize("bad", [1.0, True, False, "1", None])
def test_an_integer_field_accepts_only_an_integer(bad: object) -> None:
    assert _error(Leaf, {"kind": "a", "count": bad} if bad is not None else {"kind": "a"} | {
        "count": "x"
    }) == "count: expected an integer"


@pytest.mark.parametrize("bad", [True, "0.5", [0.5]])
def test_a_number_field_refuses_booleans_and_strings(bad: object) -> None:
    data = {"name": "n", "pair": [1, "x"], "leaves": [], "score": bad}
    assert _error(Node, data) == "score: expected a number"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 10**400])
def test_a_number_field_refuses_non_finite_values(bad: object) -> None:
    data = {"name": "n", "pair": [1, "x"], "leaves": [], "score": bad}
    assert _error(Node, data) == "score: expected a finite number"


def test_a_number_field_accepts_an_integer() -> None:
    node = from_wire(Node, {"name": "n", "pair": [1, "x"], "leaves": [], "score": 1})
    assert node.score == 1.0
    assert type(node.score) is float


@pytest.mark.parametrize("bad", [1, 0, "true", None])
def test_a_boolean_field_accepts_only_a_boolean(bad: object) -> None:
    data = {"tool_name": "t", "success": bad}
    assert _error(ToolTraceEntry, data) == "success: expected a boolean"


def test_an_enum_field_names_the_allowed_values() -> None:
    data = {"verdict": "MAYBE", "groundedness_score": 0.5, "facts_checked": [],
            "allowed_claim_ids": []}
    assert _error(VerifierOutput, data) == (
        "verdict: 'MAYBE' is not one of 'REJECT', 'LOW_CONFID', 'PASS'"
    )
    data["verdict"] = 2
    assert _error(VerifierOutput, data) == (
        "verdict: expected one of 'REJECT', 'LOW_CONFID', 'PASS', got number"
    )


def test_enum_values_are_case_sensitive() -> None:
    data = {"verdict": "pass", "groundedness_score": 0.5, "facts_checked": [],
            "allowed_claim_ids": []}
    assert _error(VerifierOutput, data).startswith("verdict: 'pass' is not one of")


def test_a_literal_field_accepts_only_its_values() -> None:
    assert _error(Leaf, {"kind": "c"}) == "kind: 'c' is not one of 'a', 'b'"
    assert _error(ExecutorEvidence, {
        "schema_version": "executor_evidence_v1", "evidence_status": "no_evidence", "claims": []
    }) == "schema_version: expected 'executor_evidence_v2', got 'executor_evidence_v1'"


# --- collections, nesting, null -------------------------------------------------------------


def test_an_array_field_refuses_a_string_or_an_object() -> None:
    for bad in ("abc", {"a": 1}):
        assert _error(PlanStep, {"step_id": "s", "goal": "g", "tools": bad}) == (
            "tools: expected an array"
        )


def test_an_object_field_refuses_an_array() -> None:
    assert _error(PlannerPlan, {"steps": [["s1"]]}) == "steps[0]: expected an object"
    assert _error(PlannerPlan, [{"steps": []}]) == "$: expected an object"


def test_a_fixed_length_tuple_checks_its_length_and_item_types() -> None:
    base = {"name": "n", "leaves": []}
    assert _error(Node, {**base, "pair": [1]}) == "pair: expected an array of 2 items"
    assert _error(Node, {**base, "pair": [1, 2]}) == "pair[1]: expected a string"


def test_a_mapping_field_checks_its_values_and_names_the_key() -> None:
    data = {"run_id": "r", "session_id": "s", "metadata": {"env": "prod", "team": 7}}
    assert _error(RunConfig, data) == "metadata.team: expected a string"
    data["metadata"] = {"a key": 1}
    assert _error(RunConfig, data) == "metadata['a key']: expected a string"


def test_paths_name_the_first_problem_deep_inside() -> None:
    binding = {"source_invocation_id": "i", "tool_name": "t", "raw_path": "$",
               "evidence_excerpt": "e"}
    claims = [{"claim_id": f"c{i}", "text": "t", "bindings": [binding]} for i in range(4)]
    claims[3]["bindings"] = [{k: v for k, v in binding.items() if k != "raw_path"}]
    data = {"schema_version": "executor_evidence_v2", "evidence_status": "evidence_found",
            "claims": claims}
    assert _error(ExecutorEvidence, data) == "claims[3].bindings[0].raw_path: missing"


def test_path_of_a_bad_item_in_a_string_array() -> None:
    data = {"steps": [{"step_id": "s1", "goal": "g", "tools": ["q", 3]}]}
    assert _error(PlannerPlan, data) == "steps[0].tools[1]: expected a string"


def test_a_missing_required_field_is_reported_missing() -> None:
    assert _error(Skill, {"name": "n"}) == "description: missing"


def test_null_for_an_optional_field_means_absent() -> None:
    plan = from_wire(
        PlannerPlan,
        {"steps": [{"step_id": "s", "goal": "g", "tools": None}], "selected_skill": None},
    )
    assert plan == PlannerPlan((PlanStep("s", "g", ()),), None)
    claim = from_wire(Claim, {"claim_id": "c", "text": "t", "bindings": [], "is_critical": None})
    assert claim.is_critical is False
    output = from_wire(VerifierOutput, {
        "verdict": "PASS", "groundedness_score": 1, "facts_checked": [], "allowed_claim_ids": [],
        "critical_fact_count": None, "missing_info": None, "rationale": None,
    })
    assert (output.critical_fact_count, output.missing_info, output.rationale) == (None, (), "")


def test_null_for_a_required_field_is_a_type_error() -> None:
    assert _error(Skill, {"name": None, "description": "d"}) == "name: expected a string"


def test_unknown_extra_keys_are_ignored() -> None:
    skill = from_wire(Skill, {"name": "n", "description": "d", "body": "secret", "x": [1]})
    assert skill == Skill("n", "d")
    assert to_wire(skill) == {"name": "n", "description": "d"}


def test_json_value_field_accepts_any_json_and_refuses_other_values() -> None:
    deep: object = 1
    for _ in range(50_000):
        deep = [deep]
    node = from_wire(Node, {"name": "n", "pair": [1, "x"], "leaves": [], "details": deep})
    assert node.details is deep
    bad = {"name": "n", "pair": [1, "x"], "leaves": [], "details": {"a": [1, math.nan]}}
    assert _error(Node, bad) == "details.a[1]: expected a finite number"
    bad["details"] = {"a": {1, 2}}
    assert _error(Node, bad) == "details.a: expected a JSON value, got set"


def test_any_typed_fields_pass_values_through() -> None:
    assert from_wire(Loose, {"anything": None}) == Loose(None)
    assert from_wire(Loose, {"anything": [1], "maybe": {"a": 2}}) == Loose([1], {"a": 2})
    assert _error(Loose, {}) == "anything: missing"


def test_validator_errors_of_a_class_become_payload_errors_with_the_field() -> None:
    assert _error(RunConfig, {"run_id": "", "session_id": "s"}) == (
        "run_id: expected a non-empty string, got ''"
    )
    assert _error(DiagnosisConfig, {"technical_retry_limit": 9}) == (
        "technical_retry_limit: 9 is outside the range 0..3"
    )
    assert _error(DiagnosisConfig, {"locale": "fr"}) == "locale: 'fr' is not one of 'en', 'zh-CN'"


def test_python_tuples_and_mappings_are_accepted_by_the_detailed_pass() -> None:
    data = MappingProxyType({"step_id": "s", "goal": "g", "tools": ("a", "b")})
    assert from_wire(PlanStep, data) == PlanStep("s", "g", ("a", "b"))


def test_recursion_error_is_a_payload_error() -> None:
    class Evil(dict[str, object]):
        def __getitem__(self, key: str) -> object:
            raise RecursionError

        def get(self, key: str, default: object = None) -> object:
            raise RecursionError

    assert _error(Skill, Evil()).endswith(": nesting too deep")


# --- the fast pass never accepts what the detailed pass refuses -----------------------------

_JSON_LEAVES = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | (
    st.sampled_from(["", "x", "PASS", "evidence_found", "direct_support", "a"])
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["claim_id", "text", "bindings", "x", "verdict"]), inner, max_size=3
    ),
    max_leaves=6,
)


def _mutations(value: object) -> st.SearchStrategy[object]:
    """Replace one random sub-value of ``value`` with random JSON, or drop a key."""

    def paths(node: object, prefix: tuple[object, ...]) -> list[tuple[object, ...]]:
        found = [prefix]
        if isinstance(node, dict):
            for key, child in node.items():
                found += paths(child, (*prefix, key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                found += paths(child, (*prefix, index))
        return found

    def apply(choice: tuple[tuple[object, ...], object, bool]) -> object:
        path, replacement, drop = choice
        copy = json.loads(json.dumps(value))
        if not path:
            return replacement
        parent = copy
        for step in path[:-1]:
            parent = parent[step]
        if drop and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = replacement
        return copy

    return st.tuples(st.sampled_from(paths(value, ())), _JSON, st.booleans()).map(apply)


_VALID_WIRE = {
    ExecutorEvidence: {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [{"claim_id": "c1", "text": "t", "is_critical": True,
                    "bindings": [{"source_invocation_id": "i", "tool_name": "q",
                                  "raw_path": "$", "evidence_excerpt": "e"}]}],
        "hypotheses": [{"text": "h", "missing_evidence": None}],
        "tool_trace_summary": [{"invocation_id": "i", "tool_name": "q", "success": True}],
    },
    VerifierOutput: {
        "verdict": "LOW_CONFID", "groundedness_score": 0.5, "critical_fact_count": 1,
        "facts_checked": [{"claim_id": "c1", "fact": "f", "is_critical": True,
                           "verification": "indirect_support"}],
        "allowed_claim_ids": ["c1"], "missing_info": ["m"], "recommended_actions": ["r"],
        "rationale": "x",
    },
    Node: {"name": "n", "pair": [1, "x"], "leaves": [{"kind": "a", "count": 1}],
           "labels": {"a": "b"}, "verdict": "PASS", "score": 1, "details": {"a": [1]},
           "flags": [True], "kw": "k"},
}


_REFUSALS = (
    BaseValidationError,  # the detailed pass: the tree of field errors
    _WireError,  # a hook's verdict on one value
    Reject,  # the fast pass gives up on a shape it does not take
    PayloadError,
    ConfigError,  # a class's own validators
    KeyError,  # a missing key
    ValueError,
    TypeError,
)
"""What the converters raise when they refuse data (never, e.g., an AttributeError)."""


@pytest.mark.parametrize("cls", list(_VALID_WIRE))
def test_fast_and_detailed_passes_agree(cls: type[Any]) -> None:
    @settings(max_examples=200, deadline=None)
    @given(_mutations(_VALID_WIRE[cls]))
    def check(data: object) -> None:
        # Only a refusal of the data counts as "refused"; any other exception (a
        # converter crash) propagates and fails the test.
        try:
            fast = converter.structure(data, cls)
        except _REFUSALS:
            fast = None
        try:
            detailed = _detailed_converter.structure(data, cls)
        except _REFUSALS:
            detailed = None
        if fast is not None:
            assert fast == detailed
        if detailed is not None:
            assert from_wire(cls, data) == detailed
        else:
            with pytest.raises(PayloadError):
                from_wire(cls, data)

    check()
