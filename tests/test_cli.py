"""The command line as a user meets it: --version, validate, stdin, both workflows, broken output.

The output-failure tests run real subprocesses: a full disk is ``/dev/full``,
a closed pipe is a pipe whose read end is closed before the command writes.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import diagnosis_core.protocol as dcp
from diagnosis_core.cli import main
from tests._reach import aiops as dca
from tests._reach import machine as dcm

ROOT = Path(__file__).resolve().parent.parent
CHAT_EXAMPLE = ROOT / "examples" / "db_pool_forged_citations.json"
AIOPS_EXAMPLE = ROOT / "examples" / "aiops_auto_discovery.json"
PLAN = '{"steps": [{"step_id": "s1", "goal": "read the logs"}], "selected_skill": "db"}'


def _cli(
    *args: str, stdin: bytes = b"", stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "diagnosis_core", *args],
        input=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    expected = importlib.metadata.version("diagnosis-core")
    assert capsys.readouterr().out == f"diagnosis-core {expected}\nprotocol 1.2\n"


def test_validate_prints_the_parsed_value_as_canonical_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skills = _write(tmp_path, "skills.json", '[{"name": "db", "description": "database"}]')
    reply = _write(tmp_path, "reply.txt", "```json\n" + PLAN + "\n```")
    assert main(["validate", "planner_plan", reply, "--skills", skills]) == 0
    assert capsys.readouterr().out == (
        '{"selected_skill":"db","steps":[{"goal":"read the logs","step_id":"s1","tools":[]}]}\n'
    )


def test_validate_without_a_catalog_rejects_a_selected_skill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = _write(tmp_path, "reply.txt", PLAN)
    assert main(["validate", "planner_plan", reply]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("diagnosis-core: invalid planner_plan: selected_skill")


def test_validate_names_the_path_of_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = _write(tmp_path, "reply.txt", '{"steps": [{"step_id": "", "goal": "g"}]}')
    assert main(["validate", "planner_plan", reply]) == 2
    assert "steps[0].step_id" in capsys.readouterr().err


def test_validate_composer_citations_are_checked_against_the_given_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = _write(tmp_path, "reply.txt", '{"answer": "x", "cited_claim_ids": ["c1"]}')
    assert main(["validate", "composer_output", reply]) == 2
    assert "cited_claim_ids[0]" in capsys.readouterr().err
    assert main(["validate", "composer_output", reply, "--allowed-claims", "c1,c2"]) == 0
    assert json.loads(capsys.readouterr().out)["cited_claim_ids"] == ["c1"]


def test_validate_knows_the_aiops_payloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = _write(tmp_path, "reply.txt", '{"next": "FINISH", "reason": "done"}')
    assert main(["validate", "supervisor_decision", reply]) == 0
    assert json.loads(capsys.readouterr().out) == {"next": "FINISH", "reason": "done"}


def test_validate_rejects_an_unknown_payload_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = _write(tmp_path, "reply.txt", "{}")
    assert main(["validate", "nonsense", reply]) == 2
    err = capsys.readouterr().err
    assert "unknown payload 'nonsense'" in err and "'aiops_report'" in err


def test_validate_reads_standard_input() -> None:
    done = _cli("validate", "verifier_output", "-", stdin=b"not json")
    assert done.returncode == 2
    assert done.stderr.decode().startswith("diagnosis-core: invalid verifier_output: ")
    assert b"Traceback" not in done.stderr


def test_run_reads_a_scenario_from_standard_input() -> None:
    from_file = _cli("run", "--json", str(CHAT_EXAMPLE))
    from_stdin = _cli("run", "--json", "-", stdin=CHAT_EXAMPLE.read_bytes())
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout


def test_run_from_stdin_names_stdin_in_errors() -> None:
    done = _cli("run", "-", stdin=b"{")
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith("diagnosis-core: invalid scenario: <stdin>: invalid JSON")


def test_schema_and_graph_for_the_aiops_workflow(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--workflow", "aiops", "aiops_report"]) == 0
    assert json.loads(capsys.readouterr().out) == dcp.aiops_json_schema("aiops_report")
    assert main(["graph", "--workflow", "aiops"]) == 0
    assert capsys.readouterr().out == dca.aiops_routing_mermaid()
    assert main(["graph"]) == 0
    assert capsys.readouterr().out == dcm.routing_mermaid()


@pytest.mark.parametrize("profile", ["validation", "openai-strict", "anthropic-strict", "gemini"])
@pytest.mark.parametrize(
    ("workflow", "name"), [("chat", "executor_evidence_v2"), ("aiops", "aiops_report")]
)
def test_schema_prints_the_chosen_profile(
    capsys: pytest.CaptureFixture[str], workflow: str, name: str, profile: str
) -> None:
    assert main(["schema", "--workflow", workflow, "--profile", profile, name]) == 0
    schema_of = dcp.aiops_json_schema if workflow == "aiops" else dcp.json_schema
    expected = schema_of(name, profile)
    assert json.loads(capsys.readouterr().out) == expected


def test_schema_default_profile_is_validation_and_unknown_ones_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema", "composer_output"]) == 0
    assert json.loads(capsys.readouterr().out) == dcp.json_schema("composer_output", "validation")
    with pytest.raises(SystemExit) as caught:
        main(["schema", "--profile", "openai", "composer_output"])
    assert caught.value.code == 2
    assert "invalid choice: 'openai'" in capsys.readouterr().err


def test_schema_rejects_a_name_of_the_other_workflow(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "aiops_report"]) == 2
    assert "unknown payload schema 'aiops_report'" in capsys.readouterr().err


def test_the_chat_commands_do_not_import_the_aiops_package() -> None:
    code = (
        "import sys\n"
        "from diagnosis_core.cli import main\n"
        f"assert main(['run', '--json', {str(CHAT_EXAMPLE)!r}]) == 0\n"
        "assert main(['graph']) == 0\n"
        "assert not any(m.startswith('diagnosis_core.aiops') for m in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args", [("run", str(CHAT_EXAMPLE)), ("run", "--json", str(AIOPS_EXAMPLE)), ("graph",)]
)
def test_a_full_disk_ends_with_one_line_and_status_1(args: tuple[str, ...]) -> None:
    with open("/dev/full", "wb") as full:
        done = _cli(*args, stdout=full.fileno())
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err.startswith("diagnosis-core: cannot write output (")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_closed_pipe_ends_with_one_line_and_status_1() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head -1` having exited: every write fails with EPIPE
    try:
        done = _cli("schema", "executor_evidence_v2", stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err.startswith("diagnosis-core: output closed (")
    assert err.count("\n") == 1 and "Traceback" not in err
