"""The generated corpus: every case of the kit, by area, with the section it pins.

Each ``_area_*`` function yields :class:`Draft` cases (a name, a one-line
``why`` citing the section, and the document); :func:`build_corpus` runs each
through :func:`run_document` (this package, the reference) to get its expected
result. Everything here is deterministic: the same package gives the same
corpus byte for byte.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from corpus_tools.builders import (
    C1_TEXT,
    PLAN,
    Doc,
    binding,
    checked,
    claim,
    composer,
    dumps,
    error,
    executor,
    fact,
    gatekeeper_for,
    scenario,
    text,
    two_claims,
    verifier,
)
from diagnosis_core.conformance import RESUME_FORMAT, run_document
from diagnosis_core.conformance._corpus import AREAS, Case, document_text

__all__ = ["AREAS", "Draft", "build_corpus", "drafts"]


@attrs.frozen
class Draft:
    """A case before its expected result is computed."""

    name: str
    why: str
    document: Any = None
    text: str | None = None


# --- §7 routing and reason codes ------------------------------------------------------


def _area_routing() -> Iterator[Draft]:
    ex = executor()
    yield Draft("happy_path", "§7 start→planner→executor→gatekeeper PASS→verified_input→"
                "verifier→composer COMPLETED→END: the answered path", scenario("happy"))
    yield Draft("planner_retry_then_ok", "§7 planner RETRYABLE_FAILED with retries left → "
                "planner again with the same input (technical retry limit)",
                scenario("planner-retry", planner=[error("retryable"), text(PLAN)]))
    yield Draft("planner_failed", "§7 planner failure, no retry left → "
                "pre_verification_fallback PLANNER_FAILED",
                scenario("planner-failed", planner=[error("non_retryable")]))
    yield Draft("executor_failed", "§7 executor any failure → pre_verification_fallback "
                "EXECUTOR_FAILED: the executor is never retried",
                scenario("executor-failed", executor=[error("retryable"), text(ex)]))
    yield Draft("gatekeeper_low_confid_trusted", "§7 gatekeeper LOW_CONFID with ≥1 trusted "
                "binding → verified_input; verdict ceiling LOW_CONFID (§6.3)",
                scenario("gk-low", gatekeeper=[{"result": gatekeeper_for(ex, frozenset({"c2"}))}],
                         verifier=[text(verifier("PASS", [fact("c1")], ["c1"]))]))
    yield Draft("gatekeeper_low_confid_untrusted", "§7 gatekeeper LOW_CONFID with 0 trusted "
                "bindings → pre_verification_fallback NO_TRUSTED_EVIDENCE",
                scenario("gk-low-none", gatekeeper=[{"result": {
                    "status": "fail", "level": "low_confid", "checked_bindings": []}}]))
    yield Draft("gatekeeper_reject", "§7 gatekeeper REJECT → pre_verification_fallback "
                "GATEKEEPER_REJECTED", scenario("gk-reject", gatekeeper=[{"result": {
                    "status": "fail", "level": "reject"}}]))
    yield Draft("verifier_retry_then_ok", "§7 verifier INVALID_OUTPUT with retries left → "
                "verifier again with the same input (technical retry limit)",
                scenario("verifier-retry", verifier=[text("not json"), text(verifier())]))
    yield Draft("verifier_failed", "§7 verifier other failure → pre_verification_fallback "
                "VERIFIER_FAILED", scenario("verifier-failed", verifier=[error("tool_blocked")]))
    yield Draft("evidence_retry_path", "§7 verifier effective LOW_CONFID with a critical gap "
                "and evidence retry left → evidence_retry → executor round 2 (§6.5)",
                _evidence_retry_scenario("routing-retry"))
    yield Draft("composer_retry_then_ok", "§7 composer RETRYABLE_FAILED with retries left → "
                "composer again with the same input (technical retry limit)",
                scenario("composer-retry", composer=[error("retryable"), text(composer())]))
    yield Draft("composer_failed", "§7 composer failure → post_verification_fallback "
                "COMPOSER_FAILED", scenario("composer-failed", composer=[error("non_retryable")]))


def _evidence_retry_scenario(name: str, **overrides: Any) -> Doc:
    ex1 = executor()
    pool = binding("inv-3", "query_metrics", "$.pool.active", "active=50/50")
    ex2 = executor([*two_claims(), claim("c3", "pool of pay-svc is exhausted", True, [pool])])
    gap_verifier = verifier("LOW_CONFID", [fact("c1"), fact("c2", True, "indirect_support")],
                            ["c1"])
    final = verifier("PASS", [fact("c1"), fact("c2"), fact("c3")], ["c1", "c2", "c3"])
    doc = scenario(
        name,
        executor=[text(ex1), text(ex2)],
        verifier=[text(gap_verifier), text(final)],
        composer=[text(composer(cited=["c1", "c3"]))],
        gatekeeper=[{"result": gatekeeper_for(ex1)}, {"result": gatekeeper_for(ex2)}],
    )
    doc.update(overrides)
    return doc


def _area_reason_codes() -> Iterator[Draft]:
    ex = executor()
    codes: list[tuple[str, Doc]] = [
        ("PLANNER_FAILED", scenario("rc-planner", planner=[text("{}")], limit=0)),
        ("EXECUTOR_FAILED", scenario("rc-executor", executor=[error("unknown")])),
        ("EXECUTOR_TOOL_BLOCKED", scenario("rc-blocked", executor=[error("tool_blocked")])),
        ("EXECUTOR_INVALID_OUTPUT", scenario("rc-exec-invalid", executor=[text("[]")])),
        ("GATEKEEPER_REJECTED", scenario("rc-gk-reject", gatekeeper=[{"result": gatekeeper_for(
            ex, frozenset({"c1", "c2"}))}])),
        ("GATEKEEPER_UNAVAILABLE", scenario("rc-gk-down", gatekeeper=[
            {"error": {"message": "gatekeeper down"}}])),
        ("GATEKEEPER_INVALID_RESULT", scenario("rc-gk-invalid", gatekeeper=[
            {"result": {"status": "maybe"}}])),
        ("NO_TRUSTED_EVIDENCE", scenario("rc-untrusted", gatekeeper=[{"result": {
            "status": "fail", "level": "low_confid",
            "checked_bindings": [checked("c9", binding(), "pass")]}}])),
        ("VERIFIER_FAILED", scenario("rc-verifier", verifier=[error("non_retryable")])),
        ("COMPOSER_FAILED", scenario("rc-composer", composer=[text('{"answer": "  "}')],
                                     limit=0)),
    ]
    for code, doc in codes:
        yield Draft(code.lower(), f"§3 reason code {code}: the exact wire value on the "
                    "fallback, the failed trace event and the outcome", doc)


# --- §5 agent payloads -------------------------------------------------------------------


def _bad(agent: str, name: str, value: object, why: str) -> Draft:
    """A minimal scenario whose ``agent`` replies ``value`` once, with no retry (L = 0)."""
    reply = text(value) if not isinstance(value, dict) or "error" not in value else value
    doc = scenario(f"p5-{name}", limit=0, **{agent: [reply]})
    return Draft(name, why, doc)


def _with(doc: Doc, path: list[Any], value: Any) -> Doc:
    copy_ = copy.deepcopy(doc)
    node = copy_
    for step in path[:-1]:
        node = node[step]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return copy_


_DELETE = object()


def _area_payloads() -> Iterator[Draft]:
    plan_json = dumps(PLAN)
    general = [
        ("fence_json_accepted", "```json\n" + plan_json + "\n```", "accepted: one fence, info "
         "string json"),
        ("fence_upper_info_accepted", " \n```JSON \n" + plan_json + "\n```\n", "accepted: info "
         "string any case with spaces, whitespace around"),
        ("fence_empty_info_accepted", "```\n" + plan_json + "\n```", "accepted: empty info"),
        ("fence_python_refused", "```python\n" + plan_json + "\n```", "INVALID_OUTPUT: info "
         "string other than json"),
        ("fence_tilde_refused", "~~~json\n" + plan_json + "\n~~~", "INVALID_OUTPUT: tilde fence"),
        ("fence_four_backticks_refused", "````json\n" + plan_json + "\n````",
         "INVALID_OUTPUT: longer fence"),
        ("prose_around_refused", "Here is the plan: " + plan_json, "INVALID_OUTPUT: prose "
         "around the object"),
        ("two_objects_refused", plan_json + " " + plan_json, "INVALID_OUTPUT: two objects"),
        ("invalid_json_refused", '{"steps": [', "INVALID_OUTPUT: invalid JSON"),
        ("non_object_refused", "[" + plan_json + "]", "INVALID_OUTPUT: a non-object"),
        ("duplicate_key_refused", '{"steps": [], "steps": ' + dumps(PLAN["steps"]) + "}",
         "INVALID_OUTPUT: a duplicate key anywhere"),
        ("lone_surrogate_refused", '{"steps": [{"step_id": "s1", "goal": "\\ud800"}]}',
         "INVALID_OUTPUT: a string with an unpaired surrogate"),
        ("huge_integer_refused", '{"steps": [{"step_id": "s1", "goal": "g"}], "x": '
         + "1" * 4301 + "}", "INVALID_OUTPUT: an integer literal of more than 4300 digits, "
         "even in an ignored field"),
        ("nan_refused", '{"steps": [{"step_id": "s1", "goal": "g"}], "x": NaN}',
         "INVALID_OUTPUT: NaN is not JSON"),
        ("unknown_field_ignored", dumps({**PLAN, "x-extra": "EXTRA NEVER FORWARDED"}),
         "accepted: unknown extra fields ignored and never copied into later inputs"),
        ("null_optional_is_absent", dumps({"steps": [{"step_id": "s1", "goal": "g",
                                                      "tools": None}], "selected_skill": None}),
         "accepted: null for an optional field means absent (defaults filled)"),
    ]
    for name, reply, what in general:
        yield _bad("planner", "general_" + name, reply, f"§5 general payload rules: {what}")
    step = PLAN["steps"][0]
    planner_rules: list[tuple[str, object, str]] = [
        ("steps_missing", {"selected_skill": None}, "steps required"),
        ("steps_empty", {"steps": []}, "steps non-empty"),
        ("step_id_empty", {"steps": [{**step, "step_id": ""}]}, "step_id non-empty"),
        ("step_id_not_string", {"steps": [{**step, "step_id": 1}]}, "step_id a string"),
        ("step_id_duplicate", {"steps": [step, step]}, "step_id unique"),
        ("goal_empty", {"steps": [{**step, "goal": ""}]}, "goal non-empty"),
        ("tools_not_array", {"steps": [{**step, "tools": "query_logs"}]}, "tools an array"),
        ("tools_item_not_string", {"steps": [{**step, "tools": [1]}]}, "tools of strings"),
        ("skill_outside_catalog", {"steps": [step], "selected_skill": "unknown-skill"},
         "selected_skill in the catalog"),
    ]
    for name, value, what in planner_rules:
        yield _bad("planner", "planner_" + name, value, f"§5.1 planner_plan: {what}")
    ex = executor()
    c0 = ["claims", 0]
    b0 = ["claims", 0, "bindings", 0]
    executor_rules: list[tuple[str, Doc, str]] = [
        ("schema_version_wrong", _with(ex, ["schema_version"], "executor_evidence_v1"),
         "schema_version must equal executor_evidence_v2"),
        ("schema_version_missing", _with(ex, ["schema_version"], _DELETE),
         "schema_version required"),
        ("evidence_status_unknown", _with(ex, ["evidence_status"], "some"),
         "evidence_status an enum value"),
        ("found_with_no_claims", _with(ex, ["claims"], []),
         "evidence_found needs claims"),
        ("no_evidence_with_claims", _with(ex, ["evidence_status"], "no_evidence"),
         "no_evidence needs an empty claims array"),
        ("claims_missing", _with(ex, ["claims"], _DELETE), "claims required"),
        ("claim_id_duplicate", _with(ex, ["claims", 1, "claim_id"], "c1"),
         "claim_id unique"),
        ("claim_text_empty", _with(ex, [*c0, "text"], ""), "claim text non-empty"),
        ("is_critical_not_boolean", _with(ex, [*c0, "is_critical"], 1),
         "is_critical a boolean (1 is not)"),
        ("claim_without_bindings", _with(ex, [*c0, "bindings"], []),
         "every claim has at least one binding"),
        ("binding_invocation_empty", _with(ex, [*b0, "source_invocation_id"], ""),
         "source_invocation_id non-empty"),
        ("binding_tool_empty", _with(ex, [*b0, "tool_name"], ""), "tool_name non-empty"),
        ("binding_path_missing", _with(ex, [*b0, "raw_path"], _DELETE), "raw_path required"),
        ("binding_excerpt_empty", _with(ex, [*b0, "evidence_excerpt"], ""),
         "evidence_excerpt non-empty"),
        ("binding_duplicate_key", _with(ex, [*c0, "bindings"], [binding(), binding(
            excerpt="other")]), "two bindings with the same (invocation, tool, path) in a claim"),
        ("hypothesis_malformed", _with(ex, ["hypotheses", 0], {"missing_evidence": "x"}),
         "a malformed hypotheses item"),
        ("tool_trace_malformed", _with(ex, ["tool_trace_summary", 0, "success"], "yes"),
         "a malformed tool_trace_summary item"),
    ]
    for name, value, what in executor_rules:
        yield _bad("executor", "executor_" + name, value,
                   f"§5.2 executor_evidence_v2: {what} → EXECUTOR_INVALID_OUTPUT")
    yield Draft("executor_no_evidence_completed", "§5.2 a valid no_evidence output is COMPLETED, "
                "not a failure; under PASS it projects to two empty tuples (§6.2)",
                scenario("p5-no-evidence", executor=[text(executor([]))],
                         gatekeeper=[{"result": {"status": "pass"}}],
                         verifier=[text(verifier("LOW_CONFID", [], []))],
                         composer=[text(composer("Nothing was found.", []))]))
    v = verifier()
    verifier_rules: list[tuple[str, Doc, str]] = [
        ("verdict_unknown", _with(v, ["verdict"], "MAYBE"), "verdict an enum value"),
        ("verdict_lowercase", _with(v, ["verdict"], "pass"), "verdict exact (pass is not PASS)"),
        ("score_above_one", _with(v, ["groundedness_score"], 1.5), "score in [0, 1]"),
        ("score_negative", _with(v, ["groundedness_score"], -0.1), "score in [0, 1]"),
        ("score_boolean", _with(v, ["groundedness_score"], True), "score a number, not boolean"),
        ("score_missing", _with(v, ["groundedness_score"], _DELETE), "score required"),
        ("facts_missing", _with(v, ["facts_checked"], _DELETE), "facts_checked required"),
        ("fact_field_missing", _with(v, ["facts_checked", 0, "verification"], _DELETE),
         "facts_checked items require verification"),
        ("verification_unknown", _with(v, ["facts_checked", 0, "verification"], "maybe"),
         "verification an enum value"),
        ("allowed_missing", _with(v, ["allowed_claim_ids"], _DELETE),
         "allowed_claim_ids required"),
        ("count_negative", _with(v, ["critical_fact_count"], -1),
         "critical_fact_count an integer ≥ 0"),
        ("count_float", _with(v, ["critical_fact_count"], 1.0),
         "critical_fact_count an integer (1.0 is not)"),
        ("missing_info_not_strings", _with(v, ["missing_info"], [1]),
         "missing_info an array of strings"),
        ("rationale_not_string", _with(v, ["rationale"], ["x"]), "rationale a string"),
    ]
    for name, value, what in verifier_rules:
        yield _bad("verifier", "verifier_" + name, value,
                   f"§5.3 verifier_output: {what} → VERIFIER_FAILED")
    yield Draft("verifier_unknown_claim_ids_dropped", "§5.3 unknown claim ids in facts_checked "
                "and allowed_claim_ids are dropped, recorded as unknown_claim_ids, never reach "
                "the composer and never trigger an evidence retry",
                scenario("p5-unknown-ids", verifier=[text(verifier(
                    "PASS", [fact("c1"), fact("c77", True, "no_evidence")], ["c1", "c77"]))]))
    yield Draft("verifier_count_not_checked", "§5.3 critical_fact_count is informational, not "
                "checked against the facts", scenario("p5-count", verifier=[text(verifier(
                    critical_fact_count=7))]))
    composer_rules: list[tuple[str, Doc, str]] = [
        ("answer_blank", {"answer": " \n\t"}, "answer non-empty after stripping"),
        ("answer_missing", {"cited_claim_ids": []}, "answer required"),
        ("cited_not_allowed", composer(cited=["c1", "c9"]), "cited_claim_ids ⊆ allowed claims"),
        ("cited_not_array", {"answer": "a", "cited_claim_ids": "c1"}, "cited_claim_ids an array"),
    ]
    for name, value, what in composer_rules:
        yield _bad("composer", "composer_" + name, value,
                   f"§5.4 composer_output: {what} → COMPOSER_FAILED")


# --- §6.1 gatekeeper normalization -------------------------------------------------------


def _area_gatekeeper() -> Iterator[Draft]:
    ex = executor()
    full = gatekeeper_for(ex)
    one_fail = gatekeeper_for(ex, frozenset({"c2"}))
    entry = full["checked_bindings"][0]
    shapes: list[tuple[str, object, str]] = [
        ("pass", full, "status=pass, level absent, no failed binding → PASS"),
        ("pass_level_null", {**full, "level": None}, "status=pass, level null → PASS"),
        ("pass_level_pass", {**full, "level": "pass"}, "status=pass, level pass → PASS"),
        ("pass_case_and_space", {**full, "status": " PASS\n", "level": " Pass "},
         "case and surrounding whitespace of status/level are not significant → PASS"),
        ("pass_no_bindings", {"status": "pass"}, "checked_bindings absent means empty → PASS "
         "with no trusted binding"),
        ("pass_bindings_null", {"status": "pass", "checked_bindings": None},
         "checked_bindings null means empty → PASS"),
        ("low_confid", one_fail, "status=fail, level=low_confid → LOW_CONFID"),
        ("low_confid_case", {**one_fail, "status": "FAIL", "level": " LOW_CONFID "},
         "case and whitespace not significant → LOW_CONFID"),
        ("reject", {**full, "status": "fail", "level": "reject"},
         "status=fail, level=reject → REJECT (GATEKEEPER_REJECTED)"),
        ("not_a_mapping_list", [full], "not a mapping → REJECT (GATEKEEPER_INVALID_RESULT)"),
        ("not_a_mapping_string", "pass", "a string → GATEKEEPER_INVALID_RESULT"),
        ("not_a_mapping_null", None, "null → GATEKEEPER_INVALID_RESULT"),
        ("not_a_mapping_number", 1, "a number → GATEKEEPER_INVALID_RESULT"),
        ("status_missing", {"checked_bindings": full["checked_bindings"]},
         "status missing → GATEKEEPER_INVALID_RESULT"),
        ("status_unknown", {**full, "status": "ok"}, "status unknown → "
         "GATEKEEPER_INVALID_RESULT"),
        ("status_not_string", {**full, "status": True}, "status not a string → "
         "GATEKEEPER_INVALID_RESULT"),
        ("fail_level_missing", {"status": "fail"}, "level missing on fail → "
         "GATEKEEPER_INVALID_RESULT"),
        ("fail_level_unknown", {"status": "fail", "level": "medium"},
         "level unknown on fail → GATEKEEPER_INVALID_RESULT"),
        ("bindings_not_array", {**full, "checked_bindings": {"a": 1}},
         "checked_bindings not an array → GATEKEEPER_INVALID_RESULT"),
        ("entry_claim_missing", {**full, "checked_bindings": [
            {k: v for k, v in entry.items() if k != "claim_id"}]},
         "a checked_bindings entry without claim_id is malformed → GATEKEEPER_INVALID_RESULT"),
        ("entry_field_not_string", {**full, "checked_bindings": [{**entry, "raw_path": 0}]},
         "a non-string raw_path is malformed → GATEKEEPER_INVALID_RESULT"),
        ("entry_status_unknown", {**full, "checked_bindings": [{**entry, "status": "ok"}]},
         "an entry status other than pass/fail is malformed → GATEKEEPER_INVALID_RESULT"),
        ("entry_status_case", {**full, "checked_bindings": [{**entry, "status": " PASS "}]},
         "entry status: case and whitespace not significant → PASS"),
        ("entry_pass_without_text", {**full, "checked_bindings": [
            {**entry, "matched_text": None}]},
         "a passed entry needs a non-empty matched_text → GATEKEEPER_INVALID_RESULT"),
        ("entry_pass_empty_text", {**full, "checked_bindings": [{**entry, "matched_text": ""}]},
         "a passed entry with empty matched_text → GATEKEEPER_INVALID_RESULT"),
        ("entry_duplicate_key", {**full, "checked_bindings": [entry, {**entry, "status": "fail",
                                                               "matched_text": None}]},
         "two entries with the same 4-tuple key → GATEKEEPER_INVALID_RESULT"),
        ("pass_with_failed_binding", {**one_fail, "status": "pass", "level": None},
         "self-contradiction: pass with a failed binding → GATEKEEPER_INVALID_RESULT"),
        ("pass_with_level_reject", {**full, "level": "reject"},
         "self-contradiction: pass with level reject → GATEKEEPER_INVALID_RESULT"),
        ("pass_with_level_low_confid", {**full, "level": "low_confid"},
         "self-contradiction: pass with level low_confid → GATEKEEPER_INVALID_RESULT"),
        ("reason_codes_kept_for_audit", {**one_fail, "reason_codes": ["EXCERPT_MISMATCH"]},
         "reason_codes optional, for audit only → LOW_CONFID"),
        ("extra_fields_ignored", {**full, "x-extra": "GATEKEEPER EXTRA"},
         "unknown fields of the raw result are not forwarded → PASS"),
    ]
    nothing_trusted = {
        "verifier": [text(verifier("PASS", [], []))],
        "composer": [text(composer("Nothing verified.", []))],
    }
    for name, result, what in shapes:
        extra = nothing_trusted if name in ("pass_no_bindings", "pass_bindings_null") else {}
        yield Draft(name, f"§6.1 gatekeeper normalization: {what}",
                    scenario(f"gk-{name}", gatekeeper=[{"result": result}], **extra))
    yield Draft("raising", "§6.1 gatekeeper normalization: the callable raised → REJECT "
                "(GATEKEEPER_UNAVAILABLE), never retried (§9: a kind changes nothing)",
                scenario("gk-raising", gatekeeper=[{"error": {"message": "down",
                                                              "kind": "retryable"}},
                                                   {"result": full}]))
    yield Draft("no_entry_left", "§9 a gatekeeper call with no scripted entry left raises → "
                "GATEKEEPER_UNAVAILABLE", scenario("gk-none", gatekeeper=[]))
    yield Draft("once_per_round", "§6.1 the gatekeeper is called exactly once per executor "
                "round (calls.gatekeeper equals the completed executor rounds, §10.4)",
                _evidence_retry_scenario("gk-once"))


# --- §6.2 binding projector --------------------------------------------------------------


def _area_projection() -> Iterator[Draft]:
    ex = executor()
    b = ex["claims"][0]["bindings"][0]
    c2b = ex["claims"][1]["bindings"][0]

    def result_with(entry: Doc) -> Doc:
        return {"status": "fail", "level": "low_confid",
                "checked_bindings": [entry, checked("c2", c2b, "pass")]}

    variants: list[tuple[str, Doc, str]] = [
        ("claim_id_differs", {**checked("c1", b), "claim_id": "C1"}, "claim_id"),
        ("invocation_differs", {**checked("c1", b), "source_invocation_id": "inv-1 "},
         "source_invocation_id (no trimming)"),
        ("tool_differs", {**checked("c1", b), "tool_name": "Query_Logs"},
         "tool_name (no case folding)"),
        ("path_differs", {**checked("c1", b), "raw_path": "$.items[0]['message']"},
         "raw_path (no path normalization)"),
    ]
    verifier_c2 = [text(verifier("PASS", [fact("c2", False)], ["c2"]))]
    for name, entry, what in variants:
        yield Draft(name, f"§6.2 binding projector: a trusted binding needs the exact 4-tuple "
                    f"key; a pass that differs in {what} is not trusted",
                    scenario(f"proj-{name}", gatekeeper=[{"result": result_with(entry)}],
                             verifier=verifier_c2, composer=[text(composer(cited=["c2"]))]))
    yield Draft("exact_match_trusted", "§6.2 binding projector: the exact 4-tuple is trusted; "
                "verified_evidence carries the gatekeeper's matched_text, not the excerpt",
                scenario("proj-exact", gatekeeper=[{"result": result_with(checked(
                    "c1", b, "pass", "MATCHED BY GATEKEEPER"))}]))
    multi = executor([
        claim("c1", C1_TEXT, True, [binding(), binding("inv-2", "query_logs", "$.items[1]",
                                                         "retry exhausted"),
                                    binding("inv-3", "query_logs", "$.items[2]", "x")]),
        claim("c2", "second claim", False, [binding("inv-2", "query_logs", "$.items[1]",
                                                    "retry exhausted")]),
    ])
    gk = gatekeeper_for(multi)
    gk["checked_bindings"] = list(reversed(gk["checked_bindings"]))
    gk["checked_bindings"][0]["status"] = "fail"
    gk["checked_bindings"][0]["matched_text"] = None
    gk["status"], gk["level"] = "fail", "low_confid"
    yield Draft("order_and_partial_claims", "§6.2 binding projector: output in executor claim "
                "order then binding order (not gatekeeper order), only trusted bindings, "
                "bindings as {source_invocation_id, tool_name, raw_path} only",
                scenario("proj-order", executor=[text(multi)], gatekeeper=[{"result": gk}]))
    yield Draft("failed_binding_not_forwarded", "§6.6 no failed binding, matched_text or "
                "reason of a failed binding reaches the verifier",
                scenario("proj-failed", gatekeeper=[{"result": {
                    "status": "fail", "level": "low_confid", "checked_bindings": [
                        checked("c1", b, "pass"),
                        {**checked("c2", c2b, "fail"), "matched_text": "FAILED MATCH TEXT",
                         "reason": "FAILED REASON"}]}}],
                    verifier=[text(verifier("PASS", [fact("c1")], ["c1"]))]))


# --- §6.3 verdict ceiling ------------------------------------------------------------------


def _area_verdict_ceiling() -> Iterator[Draft]:
    ex = executor()
    ceilings = {"PASS": gatekeeper_for(ex), "LOW_CONFID": gatekeeper_for(ex, frozenset({"c2"}))}
    for ceiling, result in ceilings.items():
        for model in ("PASS", "LOW_CONFID", "REJECT"):
            allowed = ["c1"] if ceiling == "LOW_CONFID" else ["c1", "c2"]
            facts = [fact(c) for c in allowed]
            yield Draft(f"model_{model.lower()}_ceiling_{ceiling.lower()}",
                        f"§6.3 verdict ceiling: effective = min(model {model}, ceiling "
                        f"{ceiling}); answer mode from the effective verdict",
                        scenario(f"vc-{model}-{ceiling}", gatekeeper=[{"result": result}],
                                 verifier=[text(verifier(model, facts, allowed))]))
    yield Draft("technical_failure_no_verdict", "§6.3 verdict ceiling: a technical failure "
                "sets only the status and never invents a verdict",
                scenario("vc-failure", verifier=[error("non_retryable")]))


# --- §6.4/§6.5 evidence retry --------------------------------------------------------------


def _area_evidence_retry() -> Iterator[Draft]:
    yield Draft("gap_triggers_retry", "§6.5 evidence retry: effective LOW_CONFID with a "
                "critical gap → one retry with the retry context (gaps, completed_query_refs, "
                "constraints in order), round-2 snapshot replaces round 1",
                _evidence_retry_scenario("er-gap"))
    ex = executor()
    low = gatekeeper_for(ex, frozenset({"c2"}))
    gap = verifier("LOW_CONFID", [fact("c1", True, "no_evidence")], ["c1"])
    cases: list[tuple[str, Doc, str]] = [
        ("limit_zero_no_retry", scenario("er-limit0", evidence_limit=0,
                                         verifier=[text(verifier("LOW_CONFID", [fact(
                                             "c1", True, "indirect_support")], ["c1"]))]),
         "evidence_retry_limit 0 → composer with LOW_CONFIDENCE instead"),
        ("non_critical_gap_no_retry", scenario("er-noncrit", verifier=[text(verifier(
            "LOW_CONFID", [fact("c1"), fact("c2", False, "no_evidence")], ["c1"]))]),
         "§6.4 a gap needs is_critical = true"),
        ("contradicted_is_no_gap", scenario("er-contra", verifier=[text(verifier(
            "LOW_CONFID", [fact("c1", True, "contradicted")], []))]),
         "§6.4 contradicted is not a gap"),
        ("pass_no_retry", scenario("er-pass", verifier=[text(verifier(
            "PASS", [fact("c1", True, "indirect_support")], ["c1"]))]),
         "effective PASS never retries, even with a gap"),
        ("ceiling_low_confid_gap", scenario("er-ceiling", gatekeeper=[{"result": low},
                                                                       {"result": low}],
                                            executor=[text(ex), text(ex)],
                                            verifier=[text(verifier("PASS", [fact(
                                                "c1", True, "indirect_support")], ["c1"])),
                                                text(verifier("PASS", [fact("c1")], ["c1"]))]),
         "model PASS under ceiling LOW_CONFID is effective LOW_CONFID → retry on a gap"),
        ("at_most_once", scenario("er-once", executor=[text(ex), text(ex)],
                                  gatekeeper=[{"result": low}, {"result": low}],
                                  verifier=[text(gap), text(gap)]),
         "at most one evidence retry: a round-2 gap goes to the composer"),
        ("round2_gatekeeper_reject", scenario("er-r2-reject", executor=[text(ex), text(ex)],
                                              gatekeeper=[{"result": low}, {"result": {
                                                  "status": "fail", "level": "reject"}}],
                                              verifier=[text(gap)]),
         "round 2 goes through the gatekeeper again; REJECT → fallback in round 2"),
        ("round2_executor_fails", scenario("er-r2-exec", executor=[text(ex), error(
            "retryable")], gatekeeper=[{"result": low}], verifier=[text(gap)]),
         "round 2 executor failure → EXECUTOR_FAILED, never retried"),
        ("duplicate_gaps_removed", scenario("er-dups", gatekeeper=[{"result": low},
                                                                   {"result": low}],
                                            executor=[text(ex), text(ex)],
                                            verifier=[text(verifier("LOW_CONFID", [
                                                fact("c1", True, "no_evidence"),
                                                fact("c1", True, "no_evidence"),
                                                fact("c1", True, "indirect_support")], ["c1"])),
                                                text(verifier("LOW_CONFID", [fact("c1")],
                                                              ["c1"]))]),
         "gaps in facts_checked order, exact duplicates removed"),
    ]
    for name, doc, what in cases:
        yield Draft(name, f"§6.5 evidence retry: {what}", doc)


# --- §4/§7 technical retries ---------------------------------------------------------------


def _area_technical_retry() -> Iterator[Draft]:
    ok = {"planner": text(PLAN), "verifier": text(verifier()), "composer": text(composer())}
    failures = {"planner": error("retryable", "timeout"), "verifier": text("not json"),
                "composer": error("retryable", "503")}
    for limit in range(4):
        for agent in ("planner", "verifier", "composer"):
            exhausted = [failures[agent]] * (limit + 1)
            yield Draft(f"{agent}_limit{limit}_exhausted",
                        f"§4/§7 technical retry limit {limit}: {agent} makes at most "
                        f"{limit + 1} attempts, each with the byte-identical input, then fails",
                        scenario(f"tr-{agent}-{limit}-x", limit=limit,
                                 **{agent: [*exhausted, ok[agent]]}))
            yield Draft(f"{agent}_limit{limit}_last_attempt_ok",
                        f"§4/§7 technical retry limit {limit}: {agent} succeeds on attempt "
                        f"{limit + 1} with the same input",
                        scenario(f"tr-{agent}-{limit}-ok", limit=limit,
                                 **{agent: [failures[agent]] * limit + [ok[agent]]}))
        yield Draft(f"executor_limit{limit}_never_retried",
                    f"§7 the executor is never retried (technical retry limit {limit})",
                    scenario(f"tr-executor-{limit}", limit=limit,
                             executor=[error("retryable"), text(executor())]))
    for kind in ("non_retryable", "unknown", "tool_blocked"):
        yield Draft(f"planner_{kind}_not_retried", f"§6.7 a {kind} error is not retried "
                    "(unknown exceptions are never classified retryable)",
                    scenario(f"tr-kind-{kind}", limit=3, planner=[error(kind), text(PLAN)]))
    yield Draft("verifier_retry_per_round", "§7 verifier retries are counted per round",
                _evidence_retry_scenario("tr-per-round", responses={
                    **_evidence_retry_scenario("x")["responses"],
                    "verifier": [text("no"), _evidence_retry_scenario("x")["responses"][
                        "verifier"][0], text("no"), _evidence_retry_scenario("x")[
                        "responses"]["verifier"][1]]}))


# --- §6.8 fallbacks ------------------------------------------------------------------------


def _area_fallbacks() -> Iterator[Draft]:
    hostile_tools = executor(tool_trace_summary=[
        {"invocation_id": "inv-1", "tool_name": "query_logs", "success": True},
        {"invocation_id": "inv-2", "tool_name": "query_logs", "success": False},
        {"invocation_id": "inv-3", "tool_name": "<script>alert(1)</script>", "success": True},
        {"tool_name": "metrics:p99", "success": False},
    ])
    for locale in ("en", "zh-CN"):
        tag = locale.lower()
        yield Draft(f"pre_verification_{tag}", f"§6.8 pre-verification fallback ({locale}): "
                    "reason code, gatekeeper status and counts, tool overview, the run id; "
                    "never a claim text, excerpt, hypothesis or verifier text",
                    scenario(f"fb-pre-{tag}", locale=locale, executor=[text(hostile_tools)],
                             gatekeeper=[{"result": gatekeeper_for(hostile_tools, frozenset(
                                 {"c1", "c2"}))}]))
        yield Draft(f"post_verification_{tag}", f"§6.8 post-verification fallback ({locale}): "
                    "only allowed claims (verified text), missing_info, recommended_actions "
                    "and the answer mode line; never raw executor or tool output",
                    scenario(f"fb-post-{tag}", locale=locale,
                             composer=[error("non_retryable")]))
        yield Draft(f"post_low_confidence_{tag}", f"§6.8 post-verification fallback ({locale}) "
                    "in LOW_CONFIDENCE mode: only the allowed claim, never the un-allowed one",
                    scenario(f"fb-post-low-{tag}", locale=locale,
                             verifier=[text(verifier("LOW_CONFID", [fact("c1")], ["c1"]))],
                             composer=[error("non_retryable")]))
        yield Draft(f"planner_failed_{tag}", f"§6.8 pre-verification fallback ({locale}) "
                    "when nothing ran: no gatekeeper status, no tools",
                    scenario(f"fb-planner-{tag}", locale=locale, planner=[error("unknown")]))
    markdown = executor([claim("c1", "# heading\n> quote | `code` <b>&amp;</b> "
                               "[link](http://x.example) " + "x" * 40, True)])
    yield Draft("safe_rendering", "§6.8 safe rendering: control characters removed, & < > "
                "escaped, line-start Markdown neutralised, items cut to max_item_chars with …",
                scenario("fb-safe", executor=[text(markdown)], config={
                    "technical_retry_limit": 1, "evidence_retry_limit": 1, "locale": "en",
                    "max_item_chars": 20},
                    gatekeeper=[{"result": gatekeeper_for(markdown)}],
                    verifier=[text(verifier("PASS", [fact("c1")], ["c1"],
                                            missing_info=["1. numbered\tline", "- dash"],
                                            recommended_actions=["+ plus", "*star*"]))],
                    composer=[error("non_retryable")]))
    yield Draft("unnamed_tool", "§6.8 a tool name outside [A-Za-z0-9_.:-]{1,64} is shown as "
                "(unnamed tool) in the pre-verification tool overview",
                scenario("fb-unnamed", executor=[text(hostile_tools)],
                         gatekeeper=[{"error": {"message": "down"}}]))
    yield Draft("unnamed_tool_zh", "§6.8 a tool name outside [A-Za-z0-9_.:-]{1,64} is shown as "
                "（未命名工具） in zh-CN", scenario("fb-unnamed-zh", locale="zh-CN",
                                                 executor=[text(hostile_tools)],
                                                 gatekeeper=[{"error": {"message": "x"}}]))


# --- §6.6 agent inputs -----------------------------------------------------------------------


def _area_agent_inputs() -> Iterator[Draft]:
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}",
                "x-meta": "HISTORY EXTRA"} for i in range(12)]
    yield Draft("history_limit_and_whitelist", "§6.6 agent input whitelists: the planner gets "
                "the last history_limit history items as {role, content} and skills as "
                "{name, description} only, as canonical JSON", scenario(
                    "in-history", history=history, config={"technical_retry_limit": 1,
                                                           "evidence_retry_limit": 1,
                                                           "locale": "en",
                                                           "history_limit": 3}))
    yield Draft("canonical_json_non_ascii", "§6.6 canonical JSON agent inputs: keys sorted, "
                "non-ASCII kept as UTF-8, compact separators; input_sha256 of its UTF-8 bytes",
                scenario("in-unicode", question="支付接口 10:00 起超时 — 为什么？ émoji 😀"))
    ex = executor()
    ex["claims"][0]["x-claim-extra"] = "CLAIM EXTRA"
    ex["x-top-extra"] = "TOP EXTRA"
    yield Draft("unknown_fields_not_forwarded", "§6.6 agent input whitelists: no excerpt, "
                "hypothesis, tool trace or unknown field of the executor output reaches the "
                "verifier or composer", scenario("in-unknown", executor=[text(ex)],
                                                 gatekeeper=[{"result": gatekeeper_for(ex)}]))
    yield Draft("composer_allowed_claims_only", "§6.6 agent input whitelists: the composer "
                "gets only the allowed claims with their verified text, in verified order",
                scenario("in-allowed", verifier=[text(verifier("PASS", [fact("c1"), fact("c2")],
                                                               ["c2"]))],
                         composer=[text(composer(cited=["c2"]))]))
    yield Draft("plan_normalized", "§6.6 the executor gets the parsed, normalized plan "
                "(defaults filled, unknown fields dropped)", scenario(
                    "in-plan", planner=[text({"steps": [{"step_id": "s1", "goal": "g",
                                                          "x": 1}], "x-top": 2})]))
    yield Draft("run_defaults", "§9 omitted fields take the defaults: run id derived from the "
                "scenario's content hash, session id = run id, empty history and skills",
                {"question": "why?", "responses": {"planner": [text({"steps": [
                    {"step_id": "s1", "goal": "g"}]})], "executor": [error("non_retryable")]}})


# --- §9 reference gatekeeper ------------------------------------------------------------------


def _ledger_scenario(name: str, claims: list[Doc], ledger: list[Doc], **extra: Any) -> Doc:
    ex = executor(claims)
    doc = scenario(name, executor=[text(ex)], **extra)
    del doc["gatekeeper"]
    doc["tool_ledger"] = ledger
    return doc


_LOG_OUTPUT = {"items": [{"message": "ERROR  upstream   timeout after 3000ms (pay-svc)"},
                         {"message": "retry exhausted", "code": 504, "ok": False}],
               "meta": {"odd key": " timeout here"}}


def _area_reference_gatekeeper() -> Iterator[Draft]:
    ledger = [
        {"invocation_id": "inv-1", "tool_name": "query_logs", "success": True,
         "output": _LOG_OUTPUT},
        {"invocation_id": "inv-2", "tool_name": "query_metrics", "success": True,
         "output": {"series": [{"summary": "p99 3400ms"}]}},
        {"invocation_id": "inv-9", "tool_name": "query_logs", "success": False, "output": None,
         "error": {"type": "TimeoutError", "message": "slow"}, "duration_ms": 12.5},
    ]
    one = [claim("c1", C1_TEXT, True, [binding()])]
    cases: list[tuple[str, list[Doc], str]] = [
        ("all_pass", two_claims(), "every binding resolves and matches → pass"),
        ("some_pass", [*one, claim("c2", "x", False, [binding("inv-2", "query_metrics",
                                                              "$.series[0].summary",
                                                              "p50 10ms")])],
         "some pass → fail/low_confid"),
        ("none_pass", [claim("c1", C1_TEXT, True, [binding(excerpt="no such text")])],
         "none pass → fail/reject"),
        ("invocation_missing", [claim("c1", C1_TEXT, True, [binding("inv-404")])],
         "the invocation must exist"),
        ("invocation_failed", [claim("c1", C1_TEXT, True, [binding("inv-9")])],
         "the invocation must have succeeded"),
        ("tool_name_differs", [claim("c1", C1_TEXT, True, [binding(tool="query_metrics")])],
         "tool names must be equal"),
        ("path_unparsable", [claim("c1", C1_TEXT, True, [binding(path="items[0].message")])],
         "a raw_path that does not parse fails the binding (RAW_PATH_UNRESOLVED), never raises"),
        ("path_missing_key", [claim("c1", C1_TEXT, True, [binding(path="$.items[0].msg")])],
         "a path through a missing key fails the binding"),
        ("path_index_out_of_range", [claim("c1", C1_TEXT, True, [binding(
            path="$.items[5].message")])], "a path through a missing index fails the binding"),
        ("path_quoted_name", [claim("c1", C1_TEXT, True, [binding(
            path="$['meta']['odd key']", excerpt=" timeout")])],
         "['name'] segments; the excerpt is folded, not stripped (' timeout' must occur)"),
        ("number_by_json_text", [claim("c1", C1_TEXT, True, [binding(
            path="$.items[1].code", excerpt="504")])],
         "a number resolves to its JSON text"),
        ("boolean_by_json_text", [claim("c1", C1_TEXT, True, [binding(
            path="$.items[1].ok", excerpt="false")])],
         "a boolean resolves to its JSON text"),
        ("object_not_a_string", [claim("c1", C1_TEXT, True, [binding(path="$.items[0]",
                                                                     excerpt="upstream")])],
         "a path resolving to an object fails the binding"),
        ("whitespace_folded", [claim("c1", C1_TEXT, True, [binding(
            excerpt="upstream timeout\nafter 3000ms")])],
         "runs of whitespace fold to one space on both sides; matched_text is the recorded span"),
        ("leading_space_excerpt_fails", [claim("c1", C1_TEXT, True, [binding(
            excerpt=" ERROR")])], "the excerpt is folded, not stripped: ' ERROR' does not occur"),
    ]
    for name, claims, what in cases:
        yield Draft(name, f"§9 reference gatekeeper (tool ledger): {what}",
                    _ledger_scenario(f"ref-{name}", claims, ledger))
    no_ev = executor([])
    doc = scenario("ref-zero", executor=[text(no_ev)],
                   verifier=[text(verifier("LOW_CONFID", [], []))],
                   composer=[text(composer("nothing found", []))])
    del doc["gatekeeper"]
    doc["tool_ledger"] = ledger
    yield Draft("zero_bindings_pass", "§9 reference gatekeeper: a check of zero bindings is "
                "pass", doc)
    dup = [*copy.deepcopy(ledger), copy.deepcopy(ledger[0])]
    yield Draft("duplicate_invocation_id", "§9 reference gatekeeper: ledger invocation ids are "
                "unique; a duplicate is a ScenarioError", _ledger_scenario(
                    "ref-dup", one, dup))
    extra = copy.deepcopy(ledger)
    extra[0]["x-note"] = 1
    yield Draft("ledger_unknown_key", "§9 reference gatekeeper: a ledger entry key other than "
                "the four fields and the §13 audit fields is a ScenarioError",
                _ledger_scenario("ref-extra", one, extra))
    both = _ledger_scenario("ref-both", one, ledger)
    both["gatekeeper"] = [{"result": {"status": "pass"}}]
    yield Draft("gatekeeper_and_ledger", "§9 a scenario gives gatekeeper or tool_ledger, not "
                "both (ScenarioError)", both)
    null_gk = _ledger_scenario("ref-null-gk", one, ledger)
    null_gk["gatekeeper"] = None
    yield Draft("gatekeeper_null_beside_ledger", "§9 null for an optional scenario field means "
                "absent: gatekeeper null beside a tool_ledger is fine", null_gk)


# --- §9 scenario documents ----------------------------------------------------------------------


def _area_scenarios() -> Iterator[Draft]:
    base = scenario("sc")
    bad: list[tuple[str, Any, str]] = [
        ("unknown_top_key", {**base, "questions": "x"}, "unknown top-level key"),
        ("question_missing", {k: v for k, v in base.items() if k != "question"},
         "question required"),
        ("unknown_run_key", _with(base, ["run", "tenant"], "x"), "unknown key in run"),
        ("unknown_config_key", _with(base, ["config", "retries"], 1), "unknown key in config"),
        ("config_out_of_range", _with(base, ["config", "technical_retry_limit"], 4),
         "technical_retry_limit outside 0..3 (a ConfigError)"),
        ("evidence_limit_out_of_range", _with(base, ["config", "evidence_retry_limit"], 2),
         "evidence_retry_limit outside 0..1"),
        ("locale_unknown", _with(base, ["config", "locale"], "fr"), "locale en or zh-CN"),
        ("unknown_agent", _with(base, ["responses", "critic"], []), "unknown responses key"),
        ("entry_text_and_error", _with(base, ["responses", "planner", 0], {
            "text": "{}", "error": {"kind": "retryable"}}), "an entry gives text or error"),
        ("entry_neither", _with(base, ["responses", "verifier", 0], {}),
         'an entry needs "text" or "error"'),
        ("text_not_string", _with(base, ["responses", "planner", 0], {"text": {"steps": []}}),
         "a non-string text"),
        ("error_kind_invalid", _with(base, ["responses", "planner", 0], {
            "error": {"kind": "fatal"}}), "an agent error needs a valid kind"),
        ("history_item_without_role", _with(base, ["history", 0], {"content": "x"}),
         "history items need string role and content"),
        ("skill_without_description", _with(base, ["skills", 0], {"name": "x"}),
         "skills need string name and description"),
        ("not_an_object", [base], "a scenario is a JSON object"),
    ]
    for name, doc, what in bad:
        yield Draft(name, f"§9 scenarios are strict: {what} is a ScenarioError (refused)", doc)
    fine: list[tuple[str, Doc, str]] = [
        ("null_error_beside_text", _with(base, ["responses", "planner", 0], {
            "text": dumps(PLAN), "error": None}), "error null beside a text is fine"),
        ("gatekeeper_error_without_kind", _with(base, ["gatekeeper", 0], {"error": {}}),
         "a gatekeeper error needs no kind"),
        ("history_extra_keys_dropped", _with(base, ["history", 0, "x-extra"], "DROPPED"),
         "history items may carry extra keys (dropped, never forwarded)"),
        ("no_response_left", _with(base, ["responses", "verifier"], []),
         "a call with no scripted response left behaves as a non_retryable error"),
    ]
    for name, doc, what in fine:
        yield Draft(name, f"§9 scenario: {what}", doc)
    good = json.dumps(base, ensure_ascii=False)
    yield Draft("duplicate_key_in_file", "§9/§5 a scenario file with a duplicate key is refused",
                text='{"question": "a", ' + good[1:])
    yield Draft("huge_integer_in_file", "§5 an integer literal of more than 4300 digits is "
                "invalid in scenario files too, whatever the interpreter's setting",
                text=good[:-1] + ', "x": ' + "9" * 4301 + "}")
    yield Draft("invalid_json_file", "§9 a document that is not JSON is refused",
                text='{"question": ')


# --- §12 journals ----------------------------------------------------------------------------


def _record(doc: Doc) -> dict[str, Any]:
    """The journal (wire form) of a chat scenario's run."""
    from diagnosis_core import load_scenario, run_diagnosis, scenario_effects, scenario_request
    from diagnosis_core.journal import ListJournalSink, journal_to_wire

    loaded = load_scenario(doc)
    request = scenario_request(loaded)
    sink = ListJournalSink()
    run_diagnosis(request, scenario_effects(loaded), sink=sink)
    return dict(journal_to_wire(sink.journal(request)))


def _script_of(journal: dict[str, Any]) -> tuple[dict[str, list[Any]], list[Any]]:
    """Per-agent responses and gatekeeper entries of a complete journal, in call order."""
    from diagnosis_core.journal import Journal, journal_to_scenario

    scenario_ = journal_to_scenario(Journal.load(journal))
    responses = scenario_["responses"]
    gatekeeper = scenario_["gatekeeper"]
    assert isinstance(responses, dict) and isinstance(gatekeeper, list)
    return {k: list(v) for k, v in responses.items() if isinstance(v, list)}, list(gatekeeper)


def _journal_bases() -> list[tuple[str, Doc]]:
    return [
        ("answered", scenario("j-answered")),
        ("evidence_retry", _evidence_retry_scenario("j-retry")),
        ("composer_retry", scenario("j-composer", verifier=[error("retryable"),
                                                            text(verifier())],
                                    composer=[text("x"), error("non_retryable")])),
        ("gatekeeper_error", scenario("j-gk-error", gatekeeper=[{"error": {"message": "down"}}])),
    ]


def _v1_journals(examples: Path) -> Iterator[Draft]:
    """Journals the previous release wrote (``…_v1``): they still load, fold and replay."""
    fixtures = examples.parent / "tests" / "fixtures" / "journal_v1"
    for name in ("payment_timeout", "aiops_payload_targeted"):
        path = fixtures / f"{name}.json"
        yield Draft(f"v1_{name}_fold", "§12 a journal in the v1 wire form (no end marker, "
                    "unbound hashes) still folds to the output of the run that recorded it",
                    json.loads(path.read_text(encoding="utf-8")))


def _area_journals(examples: Path) -> Iterator[Draft]:
    yield from _v1_journals(examples)
    for base_name, doc in _journal_bases():
        journal = _record(doc)
        yield Draft(f"{base_name}_fold", "§12 a journal is a replay: folding a complete journal "
                    "gives byte for byte the §9 output of the live run that recorded it", journal)
        responses, gatekeeper = _script_of(journal)
        entries = journal["entries"]
        for k in range(len(entries)):
            prefix = {**_without_end(journal), "entries": copy.deepcopy(entries[:k])}
            yield Draft(f"{base_name}_resume_after_{k}", f"§12 resume from the prefix of {k} "
                        "finished entries: the run continues with the next call and ends as "
                        "the uninterrupted run", _resume_doc(prefix, entries[:k], responses,
                                                             gatekeeper))
            started = copy.deepcopy(entries[k])
            call = started["call"]
            started["state"] = "started"
            for key in ("outcome", "tool_invocations", "mac"):
                started.pop(key, None)
            interrupted = {
                **_without_end(journal), "entries": [*copy.deepcopy(entries[:k]), started]
            }
            consumed = entries[: k + 1] if call in ("executor", "gatekeeper") else entries[:k]
            rule = {
                "executor": "an interrupted executor is never re-sent: EXECUTOR_FAILED "
                            "'interrupted: outcome unknown'",
                "gatekeeper": "an interrupted gatekeeper call is GATEKEEPER_UNAVAILABLE",
            }.get(call, f"an interrupted {call} call is re-sent with the identical input as "
                  "the same attempt")
            yield Draft(f"{base_name}_resume_interrupted_{k}", f"§12 resume: {rule}",
                        _resume_doc(interrupted, consumed, responses, gatekeeper))
            if k == len(entries) - 1:
                yield Draft(f"{base_name}_incomplete_refused", "§12 run refuses a journal "
                            "whose last entry is started (the run did not finish)", interrupted)
    yield from _tampered()


def _resume_doc(journal: dict[str, Any], consumed: list[Any],
                responses: dict[str, list[Any]], gatekeeper: list[Any]) -> Doc:
    counts: dict[str, int] = {}
    for entry in consumed:
        counts[entry["call"]] = counts.get(entry["call"], 0) + 1
    return {
        "format": RESUME_FORMAT,
        "journal": journal,
        "responses": {agent: items[counts.get(agent, 0):] for agent, items in responses.items()},
        "gatekeeper": gatekeeper[counts.get("gatekeeper", 0):],
    }


def _tampered() -> Iterator[Draft]:
    journal = _record(scenario("j-tamper"))
    entries = journal["entries"]

    def edited(edit: Callable[[list[Any]], None], request: dict[str, Any] | None = None) -> Doc:
        copy_ = copy.deepcopy(journal)
        edit(copy_["entries"])
        if request is not None:
            copy_["request"].update(request)
        return copy_

    def set_(index: int, key: str, value: object) -> Callable[[list[Any]], None]:
        return lambda items: items[index].__setitem__(key, value)

    planner_text = copy.deepcopy(entries[0]["outcome"])
    planner_text["text"] = dumps({"steps": [{"step_id": "s1", "goal": "forged goal"}]})
    gk_reject = {"result": {"status": "fail", "level": "reject"}}
    cases: list[tuple[str, Doc, str]] = [
        ("planner_text_edited", edited(set_(0, "outcome", planner_text)),
         "an edited planner reply changes the executor's input: the next entry's input_sha256 "
         "no longer matches"),
        ("input_hash_edited", edited(set_(0, "input_sha256", "0" * 64)),
         "an entry whose input_sha256 is not the hash of the input the machine built"),
        ("call_swapped", edited(set_(1, "call", "verifier")),
         "an entry that is not the call the machine asks for"),
        ("attempt_edited", edited(set_(2, "attempt", 2)), "a wrong attempt"),
        ("round_edited", edited(set_(1, "round", 2)), "a wrong round"),
        ("seq_gap", edited(lambda items: items.pop(2)), "a missing entry (non-consecutive seq)"),
        ("entry_after_end", edited(lambda items: items.append({**copy.deepcopy(items[-1]),
                                                               "seq": len(items) + 1})),
         "an entry after END"),
        ("started_not_last", edited(lambda items: items[1].update(
            {"state": "started"}) or items[1].pop("outcome")), "only the last entry may be "
         "started"),
        ("gatekeeper_verdict_forged", edited(set_(2, "outcome", gk_reject)),
         "a forged gatekeeper fact re-routes the fold: the recorded verifier call is refused"),
        ("question_edited", edited(lambda items: None, {"question": "another question"}),
         "an edited request changes every input hash"),
        ("format_unknown", {**copy.deepcopy(journal), "format": "diagnosis_journal_v0"},
         "an unknown format"),
        ("outcome_malformed", edited(set_(0, "outcome", {"text": 5})), "a malformed entry"),
    ]
    for name, doc, what in cases:
        yield Draft(f"tamper_{name}", f"§12 fold and verify (tamper): {what} is a JournalError "
                    "naming the entry", doc)


# --- §11 AIOps -------------------------------------------------------------------------------


def _area_aiops(examples: Path) -> Iterator[Draft]:
    from diagnosis_core._aiops.journal_replay import record_aiops_scenario
    from diagnosis_core.journal import journal_to_wire

    for path in sorted(examples.glob("aiops_*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if "alerts" not in doc:
            continue
        name = path.stem.removeprefix("aiops_")
        journal: dict[str, Any] = dict(journal_to_wire(record_aiops_scenario(doc)))
        yield Draft(f"{name}_journal_fold", "§11/§12 the AIOps journal (aiops_journal_v1) "
                    "replays to the output of the run that recorded it", journal)
        short = {**journal, "entries": journal["entries"][:-1]}
        yield Draft(f"{name}_journal_incomplete", "§12 an AIOps journal that ends before the "
                    "run does is refused", short)
        variants: list[tuple[str, Callable[[Doc], None], str]] = [
            ("supervisor_invalid", lambda d: d["responses"].__setitem__(
                "supervisor", [text("FINISH")] * 3), "supervisor decisions are parsed like any "
             "payload; retries exhausted → SUPERVISOR_FAILED fallback"),
            ("step_budget", lambda d: d["config"].__setitem__("max_supervisor_steps", 1),
             "the step budget ends the loop (STEP_BUDGET_EXHAUSTED)"),
            ("no_progress", lambda d: d["responses"].update({
                "supervisor": [text({"next": "planner_agent", "reason": "again"})] * 6,
                "planner": (d["responses"].get("planner") or [text(PLAN)])[:1] * 6}),
             "the no-progress guard: the same agent three times in a row without new tool "
             "invocations ends the loop"),
            ("reporter_fails", lambda d: d["responses"].__setitem__("reporter", [error(
                "non_retryable")]), "a reporter failure → REPORTER_FAILED fallback"),
        ]
        for variant, edit, what in variants:
            changed = copy.deepcopy(doc)
            changed.setdefault("config", {})
            edit(changed)
            yield Draft(f"{name}_{variant}", f"§11 AIOps flow: {what}", changed)
    modes = json.loads((examples / "aiops_auto_discovery.json").read_text(encoding="utf-8"))
    bad = copy.deepcopy(modes)
    bad["responses"]["executor"][0] = text("[]")
    yield Draft("executor_invalid_output", "§11 AIOps executor output invalid → "
                "EXECUTOR_INVALID_OUTPUT", bad)
    unknown = copy.deepcopy(modes)
    unknown["workflows"] = "x"
    yield Draft("scenario_unknown_key", "§11 AIOps scenarios are strict: an unknown key is "
                "refused", unknown)


# --- examples ---------------------------------------------------------------------------------


def _without_end(journal: dict[str, Any]) -> dict[str, Any]:
    """A journal document without its end marker: a prefix is a run that has not ended."""
    return {key: value for key, value in journal.items() if key != "end"}


def _area_examples(examples: Path) -> Iterator[Draft]:
    for path in sorted(examples.glob("*.json")):
        yield Draft(path.stem, f"§9 the bundled example examples/{path.name} replays to its "
                    "recorded output", json.loads(path.read_text(encoding="utf-8")))




def drafts(area: str, examples: Path) -> list[Draft]:
    """The draft cases of one area (``examples``: the repository's ``examples/`` directory)."""
    builders: dict[str, Callable[[], Iterator[Draft]]] = {
        "examples": lambda: _area_examples(examples),
        "routing": _area_routing,
        "reason_codes": _area_reason_codes,
        "payloads": _area_payloads,
        "gatekeeper": _area_gatekeeper,
        "projection": _area_projection,
        "verdict_ceiling": _area_verdict_ceiling,
        "evidence_retry": _area_evidence_retry,
        "technical_retry": _area_technical_retry,
        "fallbacks": _area_fallbacks,
        "agent_inputs": _area_agent_inputs,
        "reference_gatekeeper": _area_reference_gatekeeper,
        "scenarios": _area_scenarios,
        "journals": lambda: _area_journals(examples),
        "aiops": lambda: _area_aiops(examples),
    }
    return list(builders[area]())


_PATH_LIKE = re.compile(r"^[\w$.\[\]'\-]+$")


def error_names(message: str) -> str | None:
    """The path a refusal names: the message's head before ``: `` when it reads as a path."""
    for prefix in ("invalid scenario: ", "invalid journal: "):
        message = message.removeprefix(prefix)
    head = message.split(": ", 1)[0]
    if head == message or not _PATH_LIKE.match(head):
        return None
    if head.startswith("<document>"):
        return None
    return head


def build_corpus(examples: Path) -> dict[str, list[Case]]:
    """Every case of every area with its expected result (this package is the reference)."""
    corpus: dict[str, list[Case]] = {}
    for area in AREAS:
        cases: list[Case] = []
        seen: set[str] = set()
        for draft in drafts(area, examples):
            if draft.name in seen:
                raise ValueError(f"{area}/{draft.name}: duplicate case name")
            seen.add(draft.name)
            if draft.text is not None and ("\n" in draft.text or "\r" in draft.text):
                raise ValueError(f"{area}/{draft.name}: a text case must be one line")
            case = Case(area=area, name=draft.name, why=draft.why, document=draft.document,
                        text=draft.text, expected={})
            expected = run_document(document_text(case))
            names = None
            if "error" in expected and isinstance(expected["error"], str):
                names = error_names(expected["error"])
            cases.append(attrs.evolve(case, expected=expected, error_names=names))
        corpus[area] = cases
    return corpus
