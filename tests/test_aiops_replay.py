"""AIOps replay scenarios and the command line: examples, strictness, exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from diagnosis_core import (
    ScenarioError,
)
from diagnosis_core.aiops import load_aiops_scenario, replay_aiops
from diagnosis_core.cli import main
from diagnosis_core.machine import AiOpsAgent
from diagnosis_core.protocol import canonical_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
AIOPS_EXAMPLES = sorted(EXAMPLES.glob("aiops_*.json"))


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def _decision(choice: str) -> dict[str, str]:
    return {"text": json.dumps({"next": choice, "reason": ""})}


MINIMAL: dict[str, Any] = {
    "workflow": "aiops",
    "alerts": [
        {"name": "HighLatency", "service": "pay-svc", "severity": "warning", "started_at": "t0"}
    ],
    "responses": {"supervisor": [_decision("FINISH")]},
}


def _with(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(MINIMAL)
    data.update(changes)
    return data


# --- the examples -----------------------------------------------------------------


def test_the_four_examples_exist() -> None:
    assert [path.name for path in AIOPS_EXAMPLES] == [
        "aiops_alertmanager.json",
        "aiops_auto_discovery.json",
        "aiops_payload_targeted.json",
        "aiops_rule_violation.json",
    ]


def test_payload_targeted_example_passes_the_rules() -> None:
    output = replay_aiops(_load("aiops_payload_targeted.json"))
    assert output["mode"] == "PAYLOAD_TARGETED"
    assert output["outcome"] == "REPORTED"
    assert output["aiops_rule_evaluation"] == {"passed": True, "score": 1.0, "violations": []}


def test_auto_discovery_example_discovers_first_and_passes() -> None:
    output = replay_aiops(_load("aiops_auto_discovery.json"))
    assert output["mode"] == "AUTO_DISCOVERY"
    assert output["outcome"] == "REPORTED"
    evaluation = output["aiops_rule_evaluation"]
    assert isinstance(evaluation, dict) and evaluation["passed"] is True
    invocations = output["invocations"]
    assert isinstance(invocations, list) and isinstance(invocations[1], dict)
    first_executor_input = invocations[1]["input"]
    assert isinstance(first_executor_input, str)
    assert "instruction" in json.loads(first_executor_input)["task"]


def test_rule_violation_example_fails_named_rules() -> None:
    output = replay_aiops(_load("aiops_rule_violation.json"))
    evaluation = output["aiops_rule_evaluation"]
    assert isinstance(evaluation, dict) and evaluation["passed"] is False
    violations = evaluation["violations"]
    assert isinstance(violations, list)
    assert {item["rule_id"] for item in violations if isinstance(item, dict)} == {
        "payload_alerts_addressed",
        "cited_invocations_succeeded",
        "critical_alerts_have_actions",
    }
    assert evaluation["score"] == 6 / 9


@pytest.mark.parametrize("path", AIOPS_EXAMPLES, ids=lambda path: path.name)
def test_replay_is_deterministic_and_json_compatible(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    first = canonical_json(replay_aiops(data))
    assert canonical_json(replay_aiops(copy.deepcopy(data))) == first
    assert set(json.loads(first)) == {
        "workflow",
        "mode",
        "outcome",
        "reason_code",
        "report",
        "fallback",
        "supervisor_steps",
        "tool_invocation_ids",
        "calls",
        "trace",
        "invocations",
        "aiops_rule_evaluation",
    }


# --- defaults and scripted behaviour -------------------------------------------------


def test_minimal_scenario_uses_the_defaults() -> None:
    scenario = load_aiops_scenario(MINIMAL)
    assert scenario.run.run_id.startswith("run-") and scenario.run.session_id == scenario.run.run_id
    assert scenario.config.max_supervisor_steps == 8
    assert scenario.tool_ledger.invocations == ()
    assert scenario.responses[AiOpsAgent.REPORTER] == ()


def test_a_call_with_no_response_left_is_non_retryable() -> None:
    output = replay_aiops(MINIMAL)
    assert output["outcome"] == "FALLBACK"
    assert output["reason_code"] == "REPORTER_FAILED"
    assert output["calls"] == {"supervisor": 1, "planner": 0, "executor": 0, "reporter": 1}
    assert output["aiops_rule_evaluation"] is None
    assert isinstance(output["fallback"], str) and output["report"] is None


def test_absent_null_or_empty_alerts_mean_auto_discovery() -> None:
    alerts: list[Any] | None
    for alerts in (None, []):
        assert replay_aiops(_with(alerts=alerts))["mode"] == "AUTO_DISCOVERY"
    data = _with()
    del data["alerts"]
    assert replay_aiops(data)["mode"] == "AUTO_DISCOVERY"


def test_scripted_error_kinds_are_classified() -> None:
    data = _with(
        responses={
            "supervisor": [
                {"error": {"kind": "retryable", "message": "timeout"}},
                {"error": {"kind": "unknown"}},
            ]
        }
    )
    output = replay_aiops(data)
    trace = output["trace"]
    assert isinstance(trace, list)
    statuses = [event["status"] for event in trace if isinstance(event, dict)]
    assert statuses == ["RETRYABLE_FAILED", "NON_RETRYABLE_FAILED", "COMPLETED"]
    assert output["reason_code"] == "SUPERVISOR_FAILED"


# --- strictness -------------------------------------------------------------------------


def _alert(**changes: Any) -> list[dict[str, Any]]:
    return [{**MINIMAL["alerts"][0], **changes}]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"workflow": "chat"}, "workflow: expected 'aiops', got 'chat'"),
        ({"question": "why?"}, "question: unknown key"),
        ({"gatekeeper": []}, "gatekeeper: unknown key"),
        ({"alerts": {}}, "alerts: expected an array, got object"),
        ({"alerts": ["HighLatency"]}, "alerts[0]: expected an object, got string"),
        ({"alerts": _alert(name="")}, "alerts[0].name: expected a non-empty string"),
        ({"alerts": _alert(service=None)}, "alerts[0].service: missing"),
        ({"alerts": _alert(severity=3)}, "alerts[0].severity: expected a string, got number"),
        ({"alerts": _alert(started_at=None)}, "alerts[0].started_at: missing"),
        ({"alerts": _alert(labels={"env": 1})}, "alerts[0].labels.env: expected a string"),
        ({"alerts": _alert(labels=[])}, "alerts[0].labels: expected an object, got array"),
        ({"alerts": _alert(id="a-1")}, "alerts[0].id: unknown key"),
        ({"config": {"max_supervisor_steps": 0}}, "config.max_supervisor_steps: 0 is outside"),
        ({"config": {"history_limit": 3}}, "config.history_limit: unknown key"),
        ({"config": {"locale": "fr"}}, "config.locale: expected one of"),
        ({"responses": {"verifier": []}}, "responses.verifier: unknown key"),
        ({"responses": {"planner": [{}]}}, 'responses.planner[0]: expected "text" or "error"'),
        (
            {"responses": {"executor": [{"error": {"kind": "flaky"}}]}},
            "responses.executor[0].error.kind: expected one of",
        ),
        (
            {"responses": {"reporter": [{"text": 1}]}},
            "responses.reporter[0].text: expected a string",
        ),
        ({"run": {"run_id": ""}}, "run.run_id: expected a non-empty string"),
        ({"run": {"user": "x"}}, "run.user: unknown key"),
        (
            {"tool_ledger": [{"invocation_id": "a", "tool_name": "t", "success": True}]},
            "tool_ledger[0].output: missing",
        ),
        (
            {
                "tool_ledger": [
                    {"invocation_id": "a", "tool_name": "t", "success": True, "output": 1},
                    {"invocation_id": "a", "tool_name": "t", "success": True, "output": 2},
                ]
            },
            "tool_ledger[1].invocation_id: duplicate 'a'",
        ),
    ],
)
def test_malformed_scenarios_name_the_path(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        replay_aiops(_with(**changes))
    assert str(caught.value).startswith(message)


def test_missing_workflow_and_non_object_scenarios_are_errors() -> None:
    data = _with()
    del data["workflow"]
    with pytest.raises(ScenarioError, match=r"^workflow: missing$"):
        load_aiops_scenario(data)
    with pytest.raises(ScenarioError, match=r"^\$: expected an object"):
        load_aiops_scenario([])


# --- the command line -------------------------------------------------------------------------


def _write(tmp_path: Path, data: object) -> str:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_cli_json_output_equals_replay(capfd: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "aiops_rule_violation.json"
    assert main(["run", "--json", str(path)]) == 0
    out, err = capfd.readouterr()
    assert err == ""
    assert out == canonical_json(replay_aiops(_load(path.name))) + "\n"


def test_cli_readable_output_shows_report_evaluation_and_trace(
    capfd: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(EXAMPLES / "aiops_rule_violation.json")]) == 0
    out, _ = capfd.readouterr()
    assert out.startswith("## AIOps alert report\n")
    assert "mode: PAYLOAD_TARGETED   outcome: REPORTED" in out
    assert "rule evaluation: failed   score: 0.67" in out
    assert "  critical_alerts_have_actions: critical alert 'HighRequestLatency'" in out
    assert "seq  node        step  attempt  status" in out


def test_cli_readable_output_of_a_fallback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", _write(tmp_path, MINIMAL)]) == 0
    out, _ = capfd.readouterr()
    assert out.startswith("## AIOps diagnosis could not be completed\n")
    assert "rule evaluation: - (no report)" in out


def test_cli_rejects_a_malformed_aiops_scenario_with_the_path(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _with(alerts=_alert(labels={"env": 1})))
    assert main(["run", "--json", path]) == 2
    out, err = capfd.readouterr()
    assert out == ""
    assert err == (
        "diagnosis-core: invalid scenario: alerts[0].labels.env: expected a string, got number\n"
    )


def test_cli_still_runs_chat_scenarios(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--json", str(EXAMPLES / "payment_timeout.json")]) == 0
    out, _ = capfd.readouterr()
    assert "workflow" not in json.loads(out)
