"""The four agent-payload parsers (spec §5.1–§5.4): every rule, every path, no crash."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from _oracles import SCHEMA_NAMES, accepted_payload_is_sound, reference_accepts
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.enums import EvidenceStatus, Verdict, Verification
from diagnosis_core._chat.parsing import (
    PayloadName,
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from diagnosis_core._chat.payloads import (
    Claim,
    ComposerOutput,
    EvidenceBinding,
    ExecutorEvidence,
    FactCheck,
    Hypothesis,
    PlannerPlan,
    ToolTraceEntry,
    VerifierOutput,
)
from diagnosis_core._kernel.errors import PayloadError
from diagnosis_core._kernel.machine.plan import PlanStep
from diagnosis_core._kernel.wire.converter import to_wire
from tests._reach import protocol as dcp

# The examples of spec §5, verbatim.
PLANNER_EXAMPLE = """{"steps": [{"step_id": "s1", "goal": "check gateway timeout logs", "tools": ["query_logs"]}],
 "selected_skill": "payment-timeout"}"""  # noqa: E501

EXECUTOR_EXAMPLE = """{"schema_version": "executor_evidence_v2",
 "evidence_status": "evidence_found",
 "claims": [
   {"claim_id": "c1", "text": "Gateway calls to pay-svc time out after 3000 ms",
    "is_critical": true,
    "bindings": [{"source_invocation_id": "inv-7", "tool_name": "query_logs",
                  "raw_path": "$.items[0].message",
                  "evidence_excerpt": "upstream timeout after 3000ms"}]}],
 "hypotheses": [{"text": "connection pool exhausted", "missing_evidence": "pool metrics"}],
 "tool_trace_summary": [{"invocation_id": "inv-7", "tool_name": "query_logs", "success": true}]}"""

VERIFIER_EXAMPLE = """{"verdict": "LOW_CONFID", "groundedness_score": 0.55, "critical_fact_count": 1,
 "facts_checked": [{"claim_id": "c1", "fact": "timeouts after 3000 ms",
                    "is_critical": true, "verification": "indirect_support"}],
 "allowed_claim_ids": ["c1"],
 "missing_info": ["pay-svc connection pool metrics"],
 "recommended_actions": ["check pool size of pay-svc"],
 "rationale": "…"}"""  # noqa: E501

COMPOSER_EXAMPLE = """{"answer": "…markdown…", "cited_claim_ids": ["c1"]}"""

SKILLS = ("payment-timeout", "db-latency")


def _planner(text: str) -> PlannerPlan:
    return parse_planner_plan(text, SKILLS)


def _composer(text: str) -> ComposerOutput:
    return parse_composer_output(text, ["c1", "c2"])


PARSERS: dict[str, Callable[[str], object]] = {
    "planner": _planner,
    "executor": parse_executor_evidence,
    "verifier": parse_verifier_output,
    "composer": _composer,
}


def _error(parse: Callable[[str], object], data: object) -> str:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    with pytest.raises(PayloadError) as info:
        parse(text)
    return str(info.value)


# --- the spec's examples ---------------------------------------------------------------------


PARSED_EXAMPLES: dict[str, object] = {
    "planner": PlannerPlan(
        steps=(PlanStep("s1", "check gateway timeout logs", ("query_logs",)),),
        selected_skill="payment-timeout",
    ),
    "executor": ExecutorEvidence(
        evidence_status=EvidenceStatus.EVIDENCE_FOUND,
        claims=(
            Claim(
                claim_id="c1",
                text="Gateway calls to pay-svc time out after 3000 ms",
                bindings=(
                    EvidenceBinding(
                        "inv-7", "query_logs", "$.items[0].message",
                        "upstream timeout after 3000ms",
                    ),
                ),
                is_critical=True,
            ),
        ),
        hypotheses=(Hypothesis("connection pool exhausted", "pool metrics"),),
        tool_trace_summary=(ToolTraceEntry("query_logs", True, "inv-7"),),
    ),
    "verifier": VerifierOutput(
        verdict=Verdict.LOW_CONFID,
        groundedness_score=0.55,
        facts_checked=(
            FactCheck("c1", "timeouts after 3000 ms", True, Verification.INDIRECT_SUPPORT),
        ),
        allowed_claim_ids=("c1",),
        critical_fact_count=1,
        missing_info=("pay-svc connection pool metrics",),
        recommended_actions=("check pool size of pay-svc",),
        rationale="…",
    ),
    "composer": ComposerOutput("…markdown…", ("c1",)),
}
"""What the spec's examples parse to, written out (never another parse)."""


def test_planner_example_parses() -> None:
    assert _planner(PLANNER_EXAMPLE) == PARSED_EXAMPLES["planner"]


def test_executor_example_parses() -> None:
    assert parse_executor_evidence(EXECUTOR_EXAMPLE) == PARSED_EXAMPLES["executor"]


def test_verifier_example_parses() -> None:
    assert parse_verifier_output(VERIFIER_EXAMPLE) == PARSED_EXAMPLES["verifier"]


def test_composer_example_parses() -> None:
    assert _composer(COMPOSER_EXAMPLE) == PARSED_EXAMPLES["composer"]


@pytest.mark.parametrize(
    ("name", "text"),
    [("planner", PLANNER_EXAMPLE), ("executor", EXECUTOR_EXAMPLE),
     ("verifier", VERIFIER_EXAMPLE), ("composer", COMPOSER_EXAMPLE)],
)
def test_examples_parse_inside_a_json_fence(name: str, text: str) -> None:
    assert PARSERS[name](f"```json\n{text}\n```\n") == PARSED_EXAMPLES[name]


def test_payload_names_are_the_wire_names() -> None:
    assert [name.value for name in PayloadName] == [
        "planner_plan", "executor_evidence_v2", "verifier_output", "composer_output",
    ]


# --- §5.1 planner_plan ---------------------------------------------------------------------


def _plan(**changes: Any) -> dict[str, Any]:
    plan: dict[str, Any] = json.loads(PLANNER_EXAMPLE)
    plan.update(changes)
    return plan


def test_empty_steps_are_invalid() -> None:
    assert _error(_planner, _plan(steps=[])) == "steps: must not be empty"


def test_missing_steps_are_invalid() -> None:
    assert _error(_planner, {"selected_skill": None}) == "steps: missing"


def test_empty_step_id_is_invalid() -> None:
    assert _error(_planner, _plan(steps=[{"step_id": "", "goal": "g"}])) == (
        "steps[0].step_id: must not be empty"
    )


def test_duplicate_step_id_is_invalid() -> None:
    steps = [{"step_id": "s1", "goal": "a"}, {"step_id": "s1", "goal": "b"}]
    assert _error(_planner, _plan(steps=steps)) == "steps[1].step_id: duplicate 's1'"


def test_empty_goal_is_invalid() -> None:
    assert _error(_planner, _plan(steps=[{"step_id": "s1", "goal": ""}])) == (
        "steps[0].goal: must not be empty"
    )


def test_non_string_tool_is_invalid() -> None:
    steps = [{"step_id": "s1", "goal": "g", "tools": ["query_logs", 3]}]
    assert _error(_planner, _plan(steps=steps)) == "steps[0].tools[1]: expected a string"


def test_tools_and_selected_skill_default_to_empty_and_null() -> None:
    plan = _planner('{"steps": [{"step_id": "s1", "goal": "g"}]}')
    assert plan == PlannerPlan((PlanStep("s1", "g", ()),), None)
    assert _planner('{"steps": [{"step_id": "s1", "goal": "g"}], "selected_skill": null}') == plan


def test_selected_skill_outside_the_catalog_is_invalid() -> None:
    assert _error(_planner, _plan(selected_skill="x")) == (
        "selected_skill: 'x' is not in the skill catalog"
    )
    assert _error(_planner, _plan(selected_skill="")) == (
        "selected_skill: '' is not in the skill catalog"
    )
    with pytest.raises(PayloadError):
        parse_planner_plan(PLANNER_EXAMPLE, [])


def test_selected_skill_must_be_a_string() -> None:
    assert _error(_planner, _plan(selected_skill=1)) == "selected_skill: expected a string"


# --- §5.2 executor_evidence_v2 ---------------------------------------------------------------


def _evidence(**changes: Any) -> dict[str, Any]:
    evidence: dict[str, Any] = json.loads(EXECUTOR_EXAMPLE)
    evidence.update(changes)
    return evidence


def _claim(claim_id: str = "c1", **changes: Any) -> dict[str, Any]:
    claim: dict[str, Any] = copy.deepcopy(json.loads(EXECUTOR_EXAMPLE)["claims"][0])
    claim["claim_id"] = claim_id
    claim.update(changes)
    return claim


def _binding(**changes: Any) -> dict[str, Any]:
    binding: dict[str, Any] = dict(_claim()["bindings"][0])
    binding.update(changes)
    return binding


def test_schema_version_is_required() -> None:
    evidence = _evidence()
    del evidence["schema_version"]
    assert _error(parse_executor_evidence, evidence) == "schema_version: missing"


def test_schema_version_null_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(schema_version=None)) == (
        "schema_version: expected 'executor_evidence_v2', got null"
    )


def test_other_schema_version_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(schema_version="executor_evidence_v1")) == (
        "schema_version: expected 'executor_evidence_v2', got 'executor_evidence_v1'"
    )


def test_unknown_evidence_status_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(evidence_status="some")) == (
        "evidence_status: 'some' is not one of 'evidence_found', 'no_evidence'"
    )


def test_claims_are_required() -> None:
    evidence = _evidence(evidence_status="no_evidence")
    del evidence["claims"]
    assert _error(parse_executor_evidence, evidence) == "claims: missing"
    assert _error(parse_executor_evidence, {**evidence, "claims": None}) == (
        "claims: expected an array"
    )


def test_evidence_found_needs_claims() -> None:
    assert _error(parse_executor_evidence, _evidence(claims=[])) == (
        "claims: must not be empty when evidence_status is 'evidence_found'"
    )


def test_no_evidence_must_have_no_claims() -> None:
    assert _error(parse_executor_evidence, _evidence(evidence_status="no_evidence")) == (
        "claims: must be empty when evidence_status is 'no_evidence'"
    )


def test_valid_no_evidence_output_parses() -> None:
    evidence = parse_executor_evidence(
        '{"schema_version": "executor_evidence_v2", "evidence_status": "no_evidence",'
        ' "claims": []}'
    )
    assert evidence == ExecutorEvidence(EvidenceStatus.NO_EVIDENCE, ())


def test_empty_claim_id_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(claims=[_claim("")])) == (
        "claims[0].claim_id: must not be empty"
    )


def test_duplicate_claim_id_is_invalid() -> None:
    claims = [_claim("c1"), _claim("c2"), _claim("c1")]
    assert _error(parse_executor_evidence, _evidence(claims=claims)) == (
        "claims[2].claim_id: duplicate 'c1'"
    )


def test_empty_claim_text_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(claims=[_claim(text="")])) == (
        "claims[0].text: must not be empty"
    )


def test_is_critical_defaults_to_false() -> None:
    claim = _claim()
    del claim["is_critical"]
    evidence = parse_executor_evidence(json.dumps(_evidence(claims=[claim])))
    assert evidence.claims[0].is_critical is False


def test_is_critical_must_be_a_boolean() -> None:
    assert _error(parse_executor_evidence, _evidence(claims=[_claim(is_critical="yes")])) == (
        "claims[0].is_critical: expected a boolean"
    )


def test_claim_without_bindings_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(claims=[_claim(bindings=[])])) == (
        "claims[0].bindings: must not be empty"
    )


@pytest.mark.parametrize(
    "field", ["source_invocation_id", "tool_name", "raw_path", "evidence_excerpt"]
)
def test_empty_binding_field_is_invalid(field: str) -> None:
    claims = [_claim("c1"), _claim("c2", bindings=[_binding(), _binding(**{field: ""})])]
    assert _error(parse_executor_evidence, _evidence(claims=claims)) == (
        f"claims[1].bindings[1].{field}: must not be empty"
    )
    claims = [_claim("c1", bindings=[_binding(**{field: ""})])]
    assert _error(parse_executor_evidence, _evidence(claims=claims)) == (
        f"claims[0].bindings[0].{field}: must not be empty"
    )


def test_missing_binding_field_names_its_path() -> None:
    binding = _binding()
    del binding["raw_path"]
    claims = [_claim("c0"), _claim("c1"), _claim("c2"), _claim("c3", bindings=[binding])]
    assert _error(parse_executor_evidence, _evidence(claims=claims)) == (
        "claims[3].bindings[0].raw_path: missing"
    )


def test_duplicate_binding_key_within_a_claim_is_invalid() -> None:
    bindings = [_binding(), _binding(raw_path="$.other"), _binding(evidence_excerpt="different")]
    assert _error(parse_executor_evidence, _evidence(claims=[_claim(bindings=bindings)])) == (
        "claims[0].bindings[2]: duplicate binding "
        "('inv-7', 'query_logs', '$.items[0].message') in this claim"
    )


def test_same_binding_key_in_two_claims_is_valid() -> None:
    evidence = parse_executor_evidence(json.dumps(_evidence(claims=[_claim("c1"), _claim("c2")])))
    assert [claim.claim_id for claim in evidence.claims] == ["c1", "c2"]


def test_malformed_hypothesis_is_invalid() -> None:
    assert _error(parse_executor_evidence, _evidence(hypotheses=[{"missing_evidence": "m"}])) == (
        "hypotheses[0].text: missing"
    )
    assert _error(parse_executor_evidence, _evidence(hypotheses=[{"text": "t",
                                                                  "missing_evidence": 1}])) == (
        "hypotheses[0].missing_evidence: expected a string"
    )
    assert _error(parse_executor_evidence, _evidence(hypotheses=["idea"])) == (
        "hypotheses[0]: expected an object"
    )


def test_hypotheses_and_tool_trace_default_to_empty() -> None:
    evidence = _evidence()
    del evidence["hypotheses"], evidence["tool_trace_summary"]
    parsed = parse_executor_evidence(json.dumps(evidence))
    assert (parsed.hypotheses, parsed.tool_trace_summary) == ((), ())


def test_empty_trace_invocation_id_is_invalid() -> None:
    trace = [{"invocation_id": "", "tool_name": "q", "success": True}]
    assert _error(parse_executor_evidence, _evidence(tool_trace_summary=trace)) == (
        "tool_trace_summary[0].invocation_id: must not be empty"
    )


def test_trace_invocation_id_may_be_null_or_absent() -> None:
    trace = [{"invocation_id": None, "tool_name": "q", "success": True},
             {"tool_name": "r", "success": False}]
    parsed = parse_executor_evidence(json.dumps(_evidence(tool_trace_summary=trace)))
    assert parsed.tool_trace_summary == (ToolTraceEntry("q", True), ToolTraceEntry("r", False))


def test_empty_trace_tool_name_is_invalid() -> None:
    trace = [{"invocation_id": "i", "tool_name": "", "success": True}]
    assert _error(parse_executor_evidence, _evidence(tool_trace_summary=trace)) == (
        "tool_trace_summary[0].tool_name: must not be empty"
    )


def test_trace_entry_needs_a_boolean_success() -> None:
    trace = [{"invocation_id": "i", "tool_name": "q"}]
    assert _error(parse_executor_evidence, _evidence(tool_trace_summary=trace)) == (
        "tool_trace_summary[0].success: missing"
    )


def test_unknown_fields_are_ignored_and_not_kept() -> None:
    evidence = _evidence(secret_top="S1", claims=[_claim(secret_claim="S2",
                                                          bindings=[_binding(secret="S3")])])
    parsed = parse_executor_evidence(json.dumps(evidence))
    assert "S1" not in json.dumps(to_wire(parsed))
    assert "S2" not in json.dumps(to_wire(parsed))
    assert "S3" not in json.dumps(to_wire(parsed))
    assert parsed == parse_executor_evidence(EXECUTOR_EXAMPLE)


# --- §5.3 verifier_output -------------------------------------------------------------------


def _verifier(**changes: Any) -> dict[str, Any]:
    output: dict[str, Any] = json.loads(VERIFIER_EXAMPLE)
    output.update(changes)
    return output


def _fact(**changes: Any) -> dict[str, Any]:
    fact: dict[str, Any] = dict(_verifier()["facts_checked"][0])
    fact.update(changes)
    return fact


def test_unknown_verdict_is_invalid() -> None:
    assert _error(parse_verifier_output, _verifier(verdict="MAYBE")) == (
        "verdict: 'MAYBE' is not one of 'REJECT', 'LOW_CONFID', 'PASS'"
    )


@pytest.mark.parametrize("score", [1.0000001, -0.1, 2])
def test_score_outside_zero_one_is_invalid(score: float) -> None:
    assert _error(parse_verifier_output, _verifier(groundedness_score=score)) == (
        f"groundedness_score: {float(score)!r} is outside [0, 1]"
    )


@pytest.mark.parametrize("score", [True, "0.5", None])
def test_score_must_be_a_number(score: object) -> None:
    assert _error(parse_verifier_output, _verifier(groundedness_score=score)) == (
        "groundedness_score: expected a number"
    )


@pytest.mark.parametrize("score", [0, 1, 0.0, 1.0])
def test_score_bounds_are_inclusive(score: float) -> None:
    assert parse_verifier_output(json.dumps(_verifier(groundedness_score=score))) \
        .groundedness_score == score


@pytest.mark.parametrize(
    "field", ["verdict", "groundedness_score", "facts_checked", "allowed_claim_ids"]
)
def test_required_verifier_fields(field: str) -> None:
    output = _verifier()
    del output[field]
    assert _error(parse_verifier_output, output) == f"{field}: missing"


@pytest.mark.parametrize("field", ["claim_id", "fact", "is_critical", "verification"])
def test_fact_fields_are_required(field: str) -> None:
    fact = _fact()
    del fact[field]
    assert _error(parse_verifier_output, _verifier(facts_checked=[_fact(), fact])) == (
        f"facts_checked[1].{field}: missing"
    )


def test_unknown_verification_is_invalid() -> None:
    assert _error(parse_verifier_output, _verifier(facts_checked=[_fact(verification="yes")])) \
        .startswith("facts_checked[0].verification: 'yes' is not one of 'direct_support'")


def test_empty_fact_claim_id_is_invalid() -> None:
    assert _error(parse_verifier_output, _verifier(facts_checked=[_fact(claim_id="")])) == (
        "facts_checked[0].claim_id: must not be empty"
    )


def test_empty_allowed_claim_id_is_invalid() -> None:
    assert _error(parse_verifier_output, _verifier(allowed_claim_ids=["c1", ""])) == (
        "allowed_claim_ids[1]: must not be empty"
    )


def test_non_string_allowed_claim_id_is_invalid() -> None:
    assert _error(parse_verifier_output, _verifier(allowed_claim_ids=[1])) == (
        "allowed_claim_ids[0]: expected a string"
    )


def test_empty_facts_and_allowed_ids_are_valid() -> None:
    output = parse_verifier_output('{"verdict": "REJECT", "groundedness_score": 0,'
                                   ' "facts_checked": [], "allowed_claim_ids": []}')
    assert output == VerifierOutput(Verdict.REJECT, 0.0, (), ())


def test_negative_critical_fact_count_is_invalid() -> None:
    assert _error(parse_verifier_output, _verifier(critical_fact_count=-1)) == (
        "critical_fact_count: -1 is negative"
    )


@pytest.mark.parametrize("count", [1.0, True, "1"])
def test_critical_fact_count_must_be_an_integer(count: object) -> None:
    assert _error(parse_verifier_output, _verifier(critical_fact_count=count)) == (
        "critical_fact_count: expected an integer"
    )


@pytest.mark.parametrize("field", ["missing_info", "recommended_actions"])
def test_optional_string_arrays_hold_strings(field: str) -> None:
    assert _error(parse_verifier_output, _verifier(**{field: ["ok", None]})) == (
        f"{field}[1]: expected a string"
    )


def test_rationale_must_be_a_string() -> None:
    assert _error(parse_verifier_output, _verifier(rationale=["x"])) == (
        "rationale: expected a string"
    )


def test_unknown_claim_ids_are_not_rejected_by_the_parser() -> None:
    output = parse_verifier_output(json.dumps(_verifier(allowed_claim_ids=["c1", "zz"])))
    assert output.allowed_claim_ids == ("c1", "zz")


# --- §5.4 composer_output --------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["", "   ", "\n\t\u3000"])
def test_blank_answer_is_invalid(answer: str) -> None:
    assert _error(_composer, {"answer": answer}) == "answer: must not be blank"


def test_missing_answer_is_invalid() -> None:
    assert _error(_composer, {"cited_claim_ids": []}) == "answer: missing"


def test_answer_is_kept_verbatim() -> None:
    assert _composer(json.dumps({"answer": "  # Cause\n\nPool.  \n"})).answer == (
        "  # Cause\n\nPool.  \n"
    )


def test_cited_claim_outside_the_allowed_claims_is_invalid() -> None:
    assert _error(_composer, {"answer": "a", "cited_claim_ids": ["c9"]}) == (
        "cited_claim_ids[0]: 'c9' is not an allowed claim"
    )
    assert _error(_composer, {"answer": "a", "cited_claim_ids": ["c1", "c3"]}) == (
        "cited_claim_ids[1]: 'c3' is not an allowed claim"
    )


def test_empty_cited_claim_id_is_invalid() -> None:
    assert _error(_composer, {"answer": "a", "cited_claim_ids": [""]}) == (
        "cited_claim_ids[0]: must not be empty"
    )


def test_cited_claim_ids_default_to_empty() -> None:
    assert _composer('{"answer": "a"}') == ComposerOutput("a", ())
    assert _composer('{"answer": "a", "cited_claim_ids": null}') == ComposerOutput("a", ())
    assert parse_composer_output('{"answer": "a", "cited_claim_ids": ["c1"]}', {"c1"}) \
        .cited_claim_ids == ("c1",)


# --- hostile input: always a PayloadError with a path, never another exception -----------------

_BIG_STRING = "x" * 10_500_000

BAD_INPUTS: dict[str, str] = {
    "ten_mb_string": json.dumps(_BIG_STRING),
    "ten_mb_invalid": '{"steps": "' + _BIG_STRING,
    "ten_mb_object_of_junk": json.dumps({"junk": _BIG_STRING, "more": [_BIG_STRING[:10]]}),
    "nesting_100000": "[" * 100_000 + "]" * 100_000,
    "object_nesting_100000": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "escaped_lone_surrogate": '{"answer": "\\ud800", "steps": "\\ud800"}',
    "raw_lone_surrogate": '{"answer": "x\udc00", "text": "\ud800"}',
    "nan": '{"groundedness_score": NaN}',
    "infinity": '{"groundedness_score": Infinity}',
    "minus_infinity": '{"groundedness_score": -Infinity}',
    "duplicate_top_level_key": '{"answer": "a", "answer": "b"}',
    "duplicate_nested_key": '{"steps": [{"step_id": "s", "step_id": "t"}]}',
    "array": "[{}]",
    "two_objects_in_a_fence": '```json\n{"answer": "a"}\n{"answer": "b"}\n```',
    "prose_around": 'Sure! {"answer": "a"} Hope it helps.',
    "tilde_fence": '~~~json\n{"answer": "a"}\n~~~',
    "four_backtick_fence": '````json\n{"answer": "a"}\n````',
    "python_fence": '```python\n{"answer": "a"}\n```',
    "empty": "",
    "null": "null",
    "huge_integer": '{"critical_fact_count": ' + "9" * 10_000 + "}",
    "huge_float": '{"groundedness_score": 1e999}',
}


@pytest.mark.parametrize("parser", list(PARSERS))
@pytest.mark.parametrize("bad", list(BAD_INPUTS))
def test_hostile_input_is_a_payload_error_with_a_path(parser: str, bad: str) -> None:
    with pytest.raises(PayloadError) as info:
        PARSERS[parser](BAD_INPUTS[bad])
    assert info.value.path
    assert len(str(info.value)) < 300


@pytest.mark.parametrize("parser", list(PARSERS))
def test_json_info_string_in_any_case_is_accepted(parser: str) -> None:
    text = {"planner": PLANNER_EXAMPLE, "executor": EXECUTOR_EXAMPLE,
            "verifier": VERIFIER_EXAMPLE, "composer": COMPOSER_EXAMPLE}[parser]
    assert PARSERS[parser](f"```JSON\n{text}\n```") == PARSED_EXAMPLES[parser]


def test_ten_megabyte_valid_executor_payload_parses() -> None:
    claims = [_claim(f"c{i}", text="t" * 200) for i in range(33_000)]
    text = json.dumps(_evidence(claims=claims))
    assert len(text) > 10_000_000
    assert len(parse_executor_evidence(text).claims) == 33_000


_NASTY_TEXT = st.text(
    alphabet=st.sampled_from([*list('{}[]",:0123456789.eE+-truefalsn \n\\u`~dD8abcx'), "�"]),
    max_size=60,
)


_SCHEMA_OF = dict(zip(PARSERS, SCHEMA_NAMES, strict=True))


def _judged(text: str) -> None:
    """Each parser rejects ``text`` with a PayloadError, or accepts a sound payload.

    Sound (tests/_oracles.py): the text is a JSON object that the payload's JSON
    Schema accepts (checked by ``jsonschema``), and the value parses back to itself.
    A text the stdlib cannot read as one JSON object is rejected by every parser.
    """
    try:
        json_text = dcp.extract_json_text(text)
    except PayloadError:
        json_text = None
    readable, document = reference_accepts(json_text) if json_text is not None else (False, None)
    for agent, parse in PARSERS.items():
        try:
            value = parse(text)
        except PayloadError:
            continue
        assert readable and isinstance(document, dict), (agent, text)
        accepted_payload_is_sound(_SCHEMA_OF[agent], parse, text, value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=80), _NASTY_TEXT))
def test_arbitrary_text_is_rejected_or_a_sound_payload(text: str) -> None:
    _judged(text)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["steps", "step_id", "goal", "claims", "claim_id", "bindings", "answer",
                         "verdict", "schema_version", "evidence_status", "tools", "text"]),
        inner,
        max_size=4,
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES)
def test_arbitrary_json_is_rejected_or_a_sound_payload(value: object) -> None:
    _judged(json.dumps(value))


def test_the_soundness_check_accepts_the_valid_payloads_it_is_shown() -> None:
    # The oracle is not vacuous: a valid payload of each agent is accepted and sound.
    examples = {"planner": PLANNER_EXAMPLE, "executor": EXECUTOR_EXAMPLE,
                "verifier": VERIFIER_EXAMPLE, "composer": COMPOSER_EXAMPLE}
    for agent, text in examples.items():
        accepted_payload_is_sound(_SCHEMA_OF[agent], PARSERS[agent], text, PARSERS[agent](text))


def test_backticks_inside_a_fenced_answer_are_kept() -> None:
    answer = "Run:\n```bash\ncurl pay-svc\n```\n"
    text = "```json\n" + json.dumps({"answer": answer}) + "\n```"
    assert _composer(text).answer == answer
