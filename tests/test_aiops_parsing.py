"""The AIOps payload parsers: every rule, every path, the shared document rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from diagnosis_core import (
    ConfigError,
    PayloadError,
    from_wire,
    to_wire,
)
from diagnosis_core.protocol import (
    AiOpsExecutorFinding,
    AiOpsRecommendedAction,
    AiOpsReport,
    Alert,
    SupervisorChoice,
    SupervisorDecision,
    parse_aiops_executor_output,
    parse_aiops_plan,
    parse_aiops_report,
    parse_supervisor_decision,
)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _reason(call: Any, *args: Any) -> str:
    with pytest.raises(PayloadError) as caught:
        call(*args)
    return str(caught.value)


REPORT: dict[str, Any] = {
    "summary": "pool exhausted",
    "findings": [
        {
            "alert_name": "HighLatency",
            "service": "pay-svc",
            "text": "waits for db connections",
            "cited_invocation_ids": ["inv-1"],
        }
    ],
    "evidence": [{"text": "pool 20/20 in use", "cited_invocation_ids": ["inv-1"]}],
    "recommended_actions": [
        {"text": "raise the pool size", "alert_name": "HighLatency", "service": "pay-svc"},
        {"text": "add a pool saturation alert"},
    ],
}


def _report(**changes: Any) -> str:
    return _text({**REPORT, **changes})


# --- supervisor_decision ----------------------------------------------------------


@pytest.mark.parametrize("choice", list(SupervisorChoice))
def test_supervisor_decision_accepts_each_choice(choice: SupervisorChoice) -> None:
    decision = parse_supervisor_decision(_text({"next": choice.value, "reason": "why"}))
    assert decision == SupervisorDecision(choice, "why")


def test_supervisor_decision_accepts_a_json_fence_and_ignores_extra_fields() -> None:
    text = '```json\n{"next": "FINISH", "reason": "", "confidence": 0.9}\n```'
    assert parse_supervisor_decision(text) == SupervisorDecision(SupervisorChoice.FINISH, "")


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"next": "finish", "reason": "x"}, "next: 'finish' is not one of"),
        ({"next": "verifier", "reason": "x"}, "next: 'verifier' is not one of"),
        ({"reason": "x"}, "next: missing"),
        ({"next": "FINISH"}, "reason: missing"),
        ({"next": "FINISH", "reason": 3}, "reason: expected a string"),
        ({"next": None, "reason": "x"}, "next: "),
    ],
)
def test_supervisor_decision_errors_name_the_path(payload: object, reason: str) -> None:
    assert _reason(parse_supervisor_decision, _text(payload)).startswith(reason)


@pytest.mark.parametrize(
    "text",
    [
        'Sure! {"next": "FINISH", "reason": "x"}',
        '{"next": "FINISH", "next": "planner_agent", "reason": "x"}',
        '["FINISH"]',
        "",
        '{"next": "FINISH", "reason": "\\ud800"}',
    ],
)
def test_supervisor_decision_applies_the_document_rules(text: str) -> None:
    with pytest.raises(PayloadError):
        parse_supervisor_decision(text)


# --- aiops_plan -------------------------------------------------------------------


def test_plan_fills_default_tools() -> None:
    plan = parse_aiops_plan(_text({"steps": [{"step_id": "s1", "goal": "check p99"}]}))
    assert plan.steps[0].tools == ()


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"steps": []}, "steps: must not be empty"),
        ({}, "steps: missing"),
        ({"steps": [{"step_id": "", "goal": "g"}]}, "steps[0].step_id: must not be empty"),
        ({"steps": [{"step_id": "s1", "goal": " "}]}, "steps[0].goal: must not be blank"),
        (
            {"steps": [{"step_id": "s1", "goal": "a"}, {"step_id": "s1", "goal": "b"}]},
            "steps[1].step_id: duplicate 's1'",
        ),
        ({"steps": [{"step_id": "s1", "goal": "g", "tools": [1]}]}, "steps[0].tools[0]: "),
    ],
)
def test_plan_errors_name_the_path(payload: object, reason: str) -> None:
    assert _reason(parse_aiops_plan, _text(payload)).startswith(reason)


# --- aiops_executor_output --------------------------------------------------------


def test_executor_output_may_cite_ids_of_this_step_and_of_earlier_steps() -> None:
    payload = {
        "findings": [
            {"text": "a", "cited_invocation_ids": ["inv-2", "inv-1"]},
            {"text": "b", "alert_name": "HighLatency", "service": "pay-svc"},
        ],
        "tool_invocation_ids": ["inv-2"],
    }
    output = parse_aiops_executor_output(_text(payload), ["inv-1"])
    assert output.tool_invocation_ids == ("inv-2",)
    assert output.findings[1] == AiOpsExecutorFinding("b", "HighLatency", "pay-svc")


def test_executor_output_without_findings_is_valid() -> None:
    output = parse_aiops_executor_output(_text({"tool_invocation_ids": []}))
    assert output.findings == ()


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"findings": []}, "tool_invocation_ids: missing"),
        ({"tool_invocation_ids": [""]}, "tool_invocation_ids[0]: must not be empty"),
        ({"tool_invocation_ids": ["a", "a"]}, "tool_invocation_ids[1]: duplicate 'a'"),
        (
            {"tool_invocation_ids": ["a"], "findings": [{"text": ""}]},
            "findings[0].text: must not be blank",
        ),
        (
            {"tool_invocation_ids": ["a"], "findings": [{"text": "t", "alert_name": "X"}]},
            "findings[0].service: missing",
        ),
        (
            {"tool_invocation_ids": ["a"], "findings": [{"text": "t", "service": "s"}]},
            "findings[0].alert_name: missing",
        ),
        (
            {
                "tool_invocation_ids": ["a"],
                "findings": [{"text": "t", "cited_invocation_ids": [""]}],
            },
            "findings[0].cited_invocation_ids[0]: must not be empty",
        ),
        (
            {
                "tool_invocation_ids": ["a"],
                "findings": [{"text": "t", "cited_invocation_ids": ["a", "forged"]}],
            },
            "findings[0].cited_invocation_ids[1]: 'forged' is not a reported tool invocation",
        ),
    ],
)
def test_executor_output_errors_name_the_path(payload: object, reason: str) -> None:
    assert _reason(parse_aiops_executor_output, _text(payload)).startswith(reason)


# --- aiops_report -----------------------------------------------------------------


def test_report_parses_every_section() -> None:
    report = parse_aiops_report(_report())
    assert report.summary == "pool exhausted"
    assert report.findings[0].alert_key == ("HighLatency", "pay-svc")
    assert report.recommended_actions[1] == AiOpsRecommendedAction("add a pool saturation alert")
    assert report.cited_invocation_ids == ("inv-1",)


def test_report_with_empty_sections_parses_the_rules_judge_them() -> None:
    report = parse_aiops_report(
        _report(summary="", findings=[], evidence=[], recommended_actions=[])
    )
    assert report == AiOpsReport("", (), (), ())


@pytest.mark.parametrize("section", ["summary", "findings", "evidence", "recommended_actions"])
def test_report_sections_are_required_keys(section: str) -> None:
    payload = {key: value for key, value in REPORT.items() if key != section}
    assert _reason(parse_aiops_report, _text(payload)) == f"{section}: missing"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"summary": None}, "summary: expected a string"),
        ({"findings": [{"alert_name": "", "service": "s", "text": "t"}]}, "findings[0].alert_name"),
        ({"findings": [{"alert_name": "a", "service": "", "text": "t"}]}, "findings[0].service"),
        ({"findings": [{"alert_name": "a", "service": "s", "text": " "}]}, "findings[0].text"),
        ({"findings": [{"alert_name": "a", "service": "s"}]}, "findings[0].text: missing"),
        (
            {
                "findings": [
                    {"alert_name": "a", "service": "s", "text": "t", "cited_invocation_ids": [""]}
                ]
            },
            "findings[0].cited_invocation_ids[0]: must not be empty",
        ),
        (
            {"evidence": [{"text": "t", "cited_invocation_ids": []}]},
            "evidence[0].cited_invocation_ids",
        ),
        ({"evidence": [{"text": "t"}]}, "evidence[0].cited_invocation_ids: missing"),
        ({"evidence": [{"text": "", "cited_invocation_ids": ["a"]}]}, "evidence[0].text"),
        ({"recommended_actions": [{"text": ""}]}, "recommended_actions[0].text"),
        ({"recommended_actions": ["raise the pool"]}, "recommended_actions[0]: expected an object"),
        (
            {"recommended_actions": [{"text": "t", "alert_name": "a"}]},
            "recommended_actions[0].service: missing",
        ),
    ],
)
def test_report_errors_name_the_path(changes: dict[str, Any], reason: str) -> None:
    assert _reason(parse_aiops_report, _report(**changes)).startswith(reason)


# --- the alert payload ------------------------------------------------------------


def test_alert_labels_are_read_only_sorted_and_compared_by_content() -> None:
    alert = Alert("A", "svc", "Critical ", "t0", {"b": "2", "a": "1"})
    assert list(alert.labels) == ["a", "b"]
    with pytest.raises(TypeError):
        alert.labels["c"] = "3"  # type: ignore[index]
    same = Alert("A", "svc", "Critical ", "t0", {"a": "1", "b": "2"})
    assert alert == same and hash(alert) == hash(same)
    assert alert.is_critical and alert.key == ("A", "svc")


def test_alert_annotations_are_read_only_sorted_strings_compared_by_content() -> None:
    alert = Alert("A", "svc", "warning", "t0", annotations={"summary": "s", "description": "d"})
    assert list(alert.annotations) == ["description", "summary"] and dict(alert.labels) == {}
    with pytest.raises(TypeError):
        alert.annotations["x"] = "y"  # type: ignore[index]
    same = Alert("A", "svc", "warning", "t0", {}, {"description": "d", "summary": "s"})
    assert alert == same and hash(alert) == hash(same)
    assert alert != Alert("A", "svc", "warning", "t0")
    assert dict(Alert("A", "svc", "warning", "t0").annotations) == {}
    with pytest.raises(ConfigError, match=r"^annotations: keys and values must be strings"):
        Alert("A", "svc", "warning", "t0", annotations={"summary": 1})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match=r"^annotations: expected a mapping"):
        Alert("A", "svc", "warning", "t0", annotations=["summary"])  # type: ignore[arg-type]


def test_alert_annotations_round_trip_through_the_wire() -> None:
    alert = Alert("A", "svc", "warning", "t0", {"env": "prod"}, {"summary": "s"})
    wire = to_wire(alert)
    assert wire == {
        "name": "A", "service": "svc", "severity": "warning", "started_at": "t0",
        "labels": {"env": "prod"}, "annotations": {"summary": "s"},
    }  # fmt: skip
    assert from_wire(Alert, json.loads(json.dumps(wire))) == alert
    assert from_wire(Alert, {**to_wire(Alert("A", "svc", "w", "t0")), "annotations": None}) == (
        Alert("A", "svc", "w", "t0")
    )
    with pytest.raises(PayloadError, match=r"annotations\.summary: expected a string"):
        from_wire(Alert, {**wire, "annotations": {"summary": 1}})  # type: ignore[dict-item]


def test_alert_round_trips_through_the_wire() -> None:
    alert = Alert("A", "svc", "warning", "t0", {"env": "prod"})
    assert from_wire(Alert, json.loads(json.dumps(to_wire(alert)))) == alert
    with pytest.raises(PayloadError, match=r"labels\.env: expected a string"):
        from_wire(Alert, {**to_wire(alert), "labels": {"env": 1}})  # type: ignore[dict-item]


def test_findings_and_actions_name_their_alert_the_same_way() -> None:
    """An executor finding and a report action read their optional alert reference
    alike: ``(alert_name, service)`` when both are given, else None."""
    output = parse_aiops_executor_output(
        _text(
            {
                "tool_invocation_ids": ["inv-1"],
                "findings": [
                    {"text": "disk full", "alert_name": "DiskFull", "service": "db"},
                    {"text": "general"},
                ],
            }
        )
    )
    assert [finding.alert_key for finding in output.findings] == [("DiskFull", "db"), None]
    aimed = AiOpsRecommendedAction(text="grow the volume", alert_name="DiskFull", service="db")
    assert aimed.alert_key == ("DiskFull", "db")
    assert AiOpsRecommendedAction(text="check backups").alert_key is None
    assert output.findings[0] != AiOpsRecommendedAction("disk full", "DiskFull", "db")
