"""The AIOps rule evaluator: each default rule, the score, extension, and robustness."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from diagnosis_core import (
    ToolInvocation,
    ToolLedger,
    from_wire,
    to_wire,
)
from diagnosis_core._aiops.rules import AiOpsRuleContext, AiOpsRuleViolation
from diagnosis_core.aiops import (
    AIOPS_RULES,
    AiOpsMode,
    AiOpsRule,
    AiOpsRuleEvaluation,
    evaluate_aiops_report,
)
from diagnosis_core.protocol import AiOpsReport, Alert, parse_aiops_report

ALERTS = (
    Alert("HighLatency", "pay-svc", "critical", "2024-05-01T10:00:00Z", {"env": "prod"}),
    Alert("PodRestarts", "order-svc", "warning", "2024-05-01T10:04:00Z"),
)
LEDGER = ToolLedger(
    (
        ToolInvocation("inv-1", "query_metrics", True, {"p99": 2.4}),
        ToolInvocation("inv-2", "query_logs", True, {"items": ["OOMKilled"]}),
        ToolInvocation("inv-9", "query_traces", False, None),
    )
)
GOOD: dict[str, Any] = {
    "summary": "pool exhausted on pay-svc; order-svc is OOMKilled",
    "findings": [
        {
            "alert_name": "HighLatency",
            "service": "pay-svc",
            "text": "requests wait for db connections",
            "cited_invocation_ids": ["inv-1"],
        },
        {
            "alert_name": "PodRestarts",
            "service": "order-svc",
            "text": "containers are OOMKilled",
            "cited_invocation_ids": ["inv-2"],
        },
    ],
    "evidence": [
        {"text": "p99 2.4 s", "cited_invocation_ids": ["inv-1"]},
        {"text": "OOMKilled in the logs", "cited_invocation_ids": ["inv-2"]},
    ],
    "recommended_actions": [
        {"text": "raise the pool size", "alert_name": "HighLatency", "service": "pay-svc"},
        {"text": "raise the memory limit"},
    ],
}


def _evaluate(
    report: object,
    *,
    mode: AiOpsMode = AiOpsMode.PAYLOAD_TARGETED,
    alerts: tuple[Alert, ...] = ALERTS,
    rules: tuple[AiOpsRule, ...] = AIOPS_RULES,
) -> AiOpsRuleEvaluation:
    return evaluate_aiops_report(report, mode=mode, alerts=alerts, ledger=LEDGER, rules=rules)


def _changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    report = copy.deepcopy(GOOD)
    change(report)
    return report


def _ids(evaluation: AiOpsRuleEvaluation) -> set[str]:
    return {violation.rule_id for violation in evaluation.violations}


def test_good_report_passes_every_rule() -> None:
    evaluation = _evaluate(GOOD)
    assert evaluation == AiOpsRuleEvaluation(passed=True, score=1.0, violations=())


def test_typed_and_raw_reports_are_judged_alike() -> None:
    typed = from_wire(AiOpsReport, GOOD)
    passed = AiOpsRuleEvaluation(passed=True, score=1.0, violations=())
    assert _evaluate(typed) == passed
    assert _evaluate(GOOD) == passed
    broken = _changed(_drop_order_svc)
    failed = AiOpsRuleEvaluation(
        passed=False,
        score=8 / 9,
        violations=(
            AiOpsRuleViolation(
                "payload_alerts_addressed",
                "input alert 'PodRestarts' on 'order-svc' is not addressed by any finding",
            ),
        ),
    )
    assert _evaluate(from_wire(AiOpsReport, broken)) == failed
    assert _evaluate(broken) == failed


# --- one violating report per default rule ----------------------------------------
# Each case breaks exactly one rule; removing that rule from AIOPS_RULES makes its
# test fail, and a rule added without a case fails test_every_default_rule_has_a_case.


def _drop_order_svc(report: dict[str, Any]) -> None:
    del report["findings"][1]


def _foreign_finding(report: dict[str, Any]) -> None:
    report["findings"].append(
        {
            "alert_name": "DiskFull",
            "service": "log-svc",
            "text": "disk is full",
            "cited_invocation_ids": ["inv-2"],
        }
    )


def _foreign_action(report: dict[str, Any]) -> None:
    report["recommended_actions"].append(
        {"text": "clean the disk", "alert_name": "DiskFull", "service": "log-svc"}
    )


def _cite(invocation_id: str) -> Callable[[dict[str, Any]], None]:
    def change(report: dict[str, Any]) -> None:
        report["evidence"][1]["cited_invocation_ids"].append(invocation_id)

    return change


def _untargeted_actions(report: dict[str, Any]) -> None:
    report["recommended_actions"][0].pop("alert_name")
    report["recommended_actions"][0].pop("service")


CASES: dict[str, list[tuple[str, Callable[[dict[str, Any]], None], str]]] = {
    "report_well_formed": [
        (
            "blank finding text",
            lambda r: r["findings"][0].update(text=" "),
            "the report is not a valid aiops_report: findings[0].text: must not be blank",
        ),
    ],
    "summary_present": [
        ("blank summary", lambda r: r.update(summary=" \n"), "the summary is missing or blank"),
    ],
    "evidence_present": [
        (
            "no evidence",
            lambda r: r.update(evidence=[]),
            "the evidence section is missing or empty",
        ),
    ],
    "recommended_actions_present": [
        (
            "no actions (no critical alert)",
            lambda r: r.update(recommended_actions=[]),
            "the recommended actions section is missing or empty",
        ),
    ],
    "payload_alerts_addressed": [
        (
            "one alert not addressed",
            _drop_order_svc,
            "input alert 'PodRestarts' on 'order-svc' is not addressed by any finding",
        ),
    ],
    "no_foreign_alert_subject": [
        (
            "finding about another alert",
            _foreign_finding,
            "findings[2] is about 'DiskFull' on 'log-svc', which is not an input alert",
        ),
        (
            "action aimed at another alert",
            _foreign_action,
            "recommended_actions[2] is aimed at 'DiskFull' on 'log-svc',"
            " which is not an input alert",
        ),
    ],
    "cited_invocations_succeeded": [
        (
            "unknown id",
            _cite("inv-404"),
            "evidence[1].cited_invocation_ids[1]: 'inv-404' is not in the tool ledger",
        ),
        (
            "failed invocation",
            _cite("inv-9"),
            "evidence[1].cited_invocation_ids[1]: 'inv-9' did not succeed",
        ),
    ],
    "findings_cite_invocations": [
        (
            "finding without citation",
            lambda r: r["findings"][1].update(cited_invocation_ids=[]),
            "findings[1] cites no tool invocation",
        ),
    ],
    "critical_alerts_have_actions": [
        (
            "critical alert without an aimed action",
            _untargeted_actions,
            "critical alert 'HighLatency' on 'pay-svc' has no recommended action aimed at it",
        ),
    ],
}

CALM_ALERTS = (Alert("HighLatency", "pay-svc", "warning", "t0"), ALERTS[1])
_FLAT = [
    pytest.param(
        rule_id,
        change,
        message,
        CALM_ALERTS if "no critical alert" in name else ALERTS,
        id=f"{rule_id}: {name}",
    )
    for rule_id, cases in CASES.items()
    for name, change, message in cases
]


def test_every_default_rule_has_a_case() -> None:
    assert set(CASES) == {rule.id for rule in AIOPS_RULES}
    assert len({rule.id for rule in AIOPS_RULES}) == len(AIOPS_RULES)


_CASE_ARGS = ("rule_id", "change", "message", "alerts")


@pytest.mark.parametrize(_CASE_ARGS, _FLAT)
def test_each_rule_reports_its_violation(
    rule_id: str,
    change: Callable[[dict[str, Any]], None],
    message: str,
    alerts: tuple[Alert, ...],
) -> None:
    evaluation = _evaluate(_changed(change), alerts=alerts)
    assert evaluation.violations == (AiOpsRuleViolation(rule_id, message),)
    assert not evaluation.passed
    applicable = len(AIOPS_RULES) - (alerts is CALM_ALERTS)
    assert evaluation.score == (applicable - 1) / applicable


@pytest.mark.parametrize(_CASE_ARGS, _FLAT)
def test_without_the_rule_its_case_passes(
    rule_id: str,
    change: Callable[[dict[str, Any]], None],
    message: str,
    alerts: tuple[Alert, ...],
) -> None:
    rules = tuple(rule for rule in AIOPS_RULES if rule.id != rule_id)
    evaluation = _evaluate(_changed(change), alerts=alerts, rules=rules)
    # Nothing else broke: no violation at all, and every applicable rule counted passed.
    assert evaluation == AiOpsRuleEvaluation(passed=True, score=1.0, violations=())


# --- applicability and score ------------------------------------------------------


def test_payload_rules_do_not_apply_in_auto_discovery() -> None:
    report = _changed(_foreign_finding)
    _drop_order_svc(report)
    _untargeted_actions(report)
    evaluation = _evaluate(report, mode=AiOpsMode.AUTO_DISCOVERY, alerts=())
    assert evaluation.passed and evaluation.score == 1.0


def test_critical_rule_applies_only_with_a_critical_alert() -> None:
    assert _evaluate(_changed(_untargeted_actions), alerts=CALM_ALERTS).passed
    loud = (Alert("HighLatency", "pay-svc", " CRITICAL", "t0"), ALERTS[1])
    assert _ids(_evaluate(_changed(_untargeted_actions), alerts=loud)) == {
        "critical_alerts_have_actions"
    }


def test_alert_matching_is_exact() -> None:
    report = _changed(lambda r: r["findings"][1].update(service="Order-Svc"))
    assert _ids(_evaluate(report)) == {"payload_alerts_addressed", "no_foreign_alert_subject"}


def test_score_counts_applicable_rules_only() -> None:
    report = _changed(lambda r: r.update(findings=[], evidence=[]))
    evaluation = _evaluate(report, mode=AiOpsMode.AUTO_DISCOVERY, alerts=())
    # applicable: well-formed, summary, evidence, actions (no citation, no finding)
    assert _ids(evaluation) == {"evidence_present"}
    assert evaluation.score == 3 / 4


def test_no_applicable_rule_scores_one() -> None:
    assert _evaluate(GOOD, rules=()) == AiOpsRuleEvaluation(True, 1.0, ())


# --- extension --------------------------------------------------------------------


def _mentions_rollback(context: AiOpsRuleContext) -> list[str]:
    texts = [action.text for action in context.report.recommended_actions]
    return [] if any("rollback" in text for text in texts) else ["no rollback considered"]


ROLLBACK = AiOpsRule(
    "rollback_considered", "An action considers a rollback.", lambda c: True, _mentions_rollback
)


def test_user_rules_extend_the_defaults() -> None:
    evaluation = _evaluate(GOOD, rules=(*AIOPS_RULES, ROLLBACK))
    assert evaluation.violations == (
        AiOpsRuleViolation("rollback_considered", "no rollback considered"),
    )
    assert evaluation.score == len(AIOPS_RULES) / (len(AIOPS_RULES) + 1)


def _boom(context: AiOpsRuleContext) -> bool:
    raise RuntimeError("secret detail")


def test_a_rule_that_raises_fails_closed() -> None:
    broken = (
        AiOpsRule("broken_check", "", lambda c: True, lambda c: 1 / 0),  # type: ignore[arg-type,return-value]
        AiOpsRule("broken_applies", "", _boom, lambda c: ()),
    )
    evaluation = _evaluate(GOOD, rules=broken)
    assert evaluation.violations == (
        AiOpsRuleViolation("broken_check", "the rule could not be evaluated (ZeroDivisionError)"),
        AiOpsRuleViolation("broken_applies", "the rule could not be evaluated (RuntimeError)"),
    )
    assert evaluation.score == 0.0


# --- any report -------------------------------------------------------------------


@pytest.mark.parametrize(
    "report",
    [None, [], "report", 3.5, {}, {"summary": 7}, {"findings": "all"}, {"evidence": [None, 1]}],
)
def test_any_value_is_judged_never_raised(report: object) -> None:
    evaluation = _evaluate(report)
    assert not evaluation.passed
    assert "report_well_formed" in _ids(evaluation)
    assert 0.0 <= evaluation.score <= 1.0


def test_malformed_report_is_read_leniently_for_the_other_rules() -> None:
    report = _changed(lambda r: r["findings"].append({"alert_name": 3}))
    report["summary"] = None
    evaluation = _evaluate(report)
    assert _ids(evaluation) == {"report_well_formed", "summary_present"}
    assert evaluation.violations[0].message.startswith(
        "the report is not a valid aiops_report: summary: "
    )


def test_typed_report_holding_wrong_types_is_judged_never_raised() -> None:
    report = AiOpsReport(summary=None, findings=[object()], evidence=5, recommended_actions=())  # type: ignore[arg-type]
    evaluation = _evaluate(report)
    assert "report_well_formed" in _ids(evaluation)


def test_evaluation_round_trips_and_matches_the_wire_shape() -> None:
    evaluation = _evaluate(_changed(_drop_order_svc))
    wire = to_wire(evaluation)
    assert wire == {
        "passed": False,
        "score": evaluation.score,
        "violations": [
            {
                "rule_id": "payload_alerts_addressed",
                "message": (
                    "input alert 'PodRestarts' on 'order-svc' is not addressed by any finding"
                ),
            }
        ],
    }
    assert from_wire(AiOpsRuleEvaluation, wire) == evaluation


def test_parsed_reports_never_fail_the_well_formed_rule() -> None:
    import json

    report = parse_aiops_report(json.dumps(GOOD))
    assert "report_well_formed" not in _ids(_evaluate(report))
