"""Scenario validation (spec §9) and the ``diagnosis-core`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _builders import scenario

import diagnosis_core as dc
from diagnosis_core.cli import main
from tests._reach import machine as dcm

ROOT = Path(__file__).parent.parent


def test_replay_output_has_exactly_the_specified_keys() -> None:
    result = dc.replay(scenario())
    assert set(result) == {
        "outcome", "answer", "reason_code", "gatekeeper_status", "model_verdict",
        "effective_verdict", "rounds", "evidence_retries", "calls", "trace", "invocations",
    }
    assert set(result["calls"]) == {"planner", "executor", "gatekeeper", "verifier", "composer"}
    assert set(result["trace"][0]) == {
        "seq", "node", "round", "attempt", "status", "reason_code", "input_sha256", "details",
    }
    assert set(result["invocations"][0]) == {"agent", "round", "attempt", "input"}


def test_calls_always_has_five_keys_with_zeros() -> None:
    result = dc.replay(scenario(planner=[]))
    assert result["calls"] == {
        "planner": 1, "executor": 0, "gatekeeper": 0, "verifier": 0, "composer": 0
    }


def test_defaults_run_id_from_content_hash_and_session_from_run_id() -> None:
    doc = scenario()
    del doc["run"]
    first = dc.load_scenario(doc)
    assert first.run.run_id.startswith("run-")
    assert first.run.session_id == first.run.run_id
    assert dc.load_scenario(json.loads(json.dumps(doc))).run == first.run
    doc["question"] = "another question"
    assert dc.load_scenario(doc).run.run_id != first.run.run_id


def test_minimal_scenario_uses_every_default() -> None:
    loaded = dc.load_scenario({"question": "q"})
    assert loaded.config == dc.DiagnosisConfig()
    assert loaded.history == () and loaded.skills == ()
    result = dc.replay({"question": "q"})
    assert result["outcome"] == "PRE_VERIFICATION_FALLBACK"
    assert result["reason_code"] == "PLANNER_FAILED"


def _with(path: str, value: Any) -> dict[str, Any]:
    doc = scenario()
    target: Any = doc
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    last = keys[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "$: expected an object"),
        ({"question": "q", "extra": 1}, "extra: unknown key"),
        ({}, "question: missing"),
        ({"question": 3}, "question: expected a string"),
        (_with("run.extra", 1), "run.extra: unknown key"),
        (_with("run.run_id", ""), "run.run_id: expected a non-empty string"),
        (_with("run.metadata", {"a": 1}), "run.metadata.a: expected a string"),
        (_with("config.locale", "fr"), "config.locale: expected one of"),
        (_with("config.technical_retry_limit", 9), "config.technical_retry_limit: 9 is outside"),
        (_with("config.retries", 1), "config.retries: unknown key"),
        (_with("responses.reviewer", []), "responses.reviewer: unknown key"),
        (_with("responses.verifier", [{"text": "x"}, {}]),
         'responses.verifier[1]: expected "text" or "error"'),
        (_with("responses.verifier", [{"text": "x", "error": {"kind": "unknown"}}]),
         'responses.verifier[0]: expected "text" or "error"'),
        (_with("responses.planner", [{"text": 1}]), "responses.planner[0].text: expected a string"),
        (_with("responses.planner", [{"error": "boom"}]),
         "responses.planner[0].error: expected an object"),
        (_with("responses.planner", [{"error": {"message": "m"}}]),
         "responses.planner[0].error.kind: missing"),
        (_with("responses.planner", [{"error": {"kind": "fatal"}}]),
         "responses.planner[0].error.kind: expected one of"),
        (_with("responses.planner", [{"error": {"kind": "unknown", "x": 1}}]),
         "responses.planner[0].error.x: unknown key"),
        (_with("responses.planner", [{"text": "t", "meta": 1}]),
         "responses.planner[0].meta: unknown key"),
        (_with("gatekeeper", [{"result": 1, "error": {}}]),
         'gatekeeper[0]: expected "result" or "error"'),
        (_with("gatekeeper", [{"foo": 1}]), "gatekeeper[0].foo: unknown key"),
        (_with("history", [{"role": "user"}]), "history[0].content: missing"),
        (_with("history", [{"role": "user", "content": 5}]),
         "history[0].content: expected a string"),
        (_with("skills", [{"name": "x"}]), "skills[0].description: missing"),
        (_with("skills", "x"), "skills: expected an array"),
        ({"question": "q", "gatekeeper": [], "tool_ledger": []}, "not both"),
        ({"question": "q", "tool_ledger": [{"invocation_id": "a", "tool_name": "t",
                                            "success": True, "output": 1}] * 2},
         "tool_ledger[1].invocation_id: duplicate"),
        ({"question": "q\ud800"}, "question: contains an unpaired surrogate"),
    ],
)
def test_malformed_scenarios_are_scenario_errors_naming_the_path(doc: Any, message: str) -> None:
    with pytest.raises(dc.ScenarioError) as caught:
        dc.replay(doc)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_gatekeeper_error_kind_is_accepted_and_ignored() -> None:
    doc = scenario(gatekeeper=[{"error": {"kind": "retryable", "message": "x"}}])
    assert dc.replay(doc)["reason_code"] == "GATEKEEPER_UNAVAILABLE"


def test_history_and_skill_extra_keys_are_dropped_not_rejected() -> None:
    doc = scenario()
    doc["history"][0]["ts"] = "HIST-TS-CANARY"
    doc["skills"][0]["body"] = "BODY"
    result = dc.replay(doc)
    assert "BODY" not in result["invocations"][0]["input"]
    assert "HIST-TS-CANARY" not in result["invocations"][0]["input"]


def test_arbitrary_agent_text_is_allowed_even_with_surrogates() -> None:
    doc = scenario(planner=[{"text": "\ud800"}, {"text": "\udfff"}])
    assert dc.replay(doc)["reason_code"] == "PLANNER_FAILED"


def test_tool_ledger_scenario_uses_the_reference_gatekeeper() -> None:
    doc = json.loads((ROOT / "examples" / "tool_ledger_reference_gatekeeper.json").read_text())
    result = dc.replay(doc)
    assert result["gatekeeper_status"] == "LOW_CONFID"
    verifier_input = json.loads(
        next(i["input"] for i in result["invocations"] if i["agent"] == "verifier")
    )
    evidence = verifier_input["verified_evidence"]
    assert [e["claim_id"] for e in evidence] == ["c1", "c2"]
    assert evidence[0]["matched_text"] == "upstream timeout after\n3000ms"
    assert evidence[1]["matched_text"] == "3"


# --- command line ---------------------------------------------------------------------


def test_cli_run_json_prints_the_replay_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario()), encoding="utf-8")
    assert main(["run", "--json", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == dc.replay(scenario())


def test_cli_run_readable_output_shows_answer_outcome_and_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(ROOT / "examples" / "payment_timeout.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The payment API times out because")
    assert "outcome: ANSWERED" in out
    assert "seq  node" in out and "verified_input" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{", "invalid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"question": "q", "question": "r"}', "duplicate key"),
        (b'{"question": NaN}', "NaN is not valid JSON"),
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
        (b'{"question": "q", "responses": {"verifier": [{"text": "a"}, {}]}}',
         'responses.verifier[1]: expected "text" or "error"'),
    ],
)
def test_cli_malformed_scenario_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert main(["run", str(path)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_cli_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["frobnicate"])
    assert caught.value.code == 2


def test_cli_schema_prints_a_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "executor_evidence_v2"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_cli_graph_prints_the_mermaid_diagram(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph"]) == 0
    assert capsys.readouterr().out == dcm.routing_mermaid()


def test_console_script_entry_point_runs_as_a_module() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "diagnosis_core", "run", "--json",
         str(ROOT / "examples" / "db_pool_forged_citations.json")],
        capture_output=True, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["reason_code"] == "GATEKEEPER_REJECTED"
    assert "order-svc pool is capped" not in result["answer"]
