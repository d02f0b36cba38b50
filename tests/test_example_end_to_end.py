"""The bundled end-to-end example runs offline, as a newcomer runs it (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "end_to_end.py"


def run_example(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # From another directory: the example must find its fixtures by itself.
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=cwd,
    )


def test_the_example_answers_from_recorded_tools_and_prints_the_trace(tmp_path: Path) -> None:
    done = run_example(tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    out = done.stdout
    assert out.startswith("Outcome: ANSWERED (gatekeeper PASS)\n")
    assert "upstream timeout after 3000ms" in out  # read from fixtures/gateway.log
    assert "20 of 20 connections in use, 57 waiting" in out  # from the metrics fixture
    for node in ("planner", "executor", "gatekeeper", "verified_input", "verifier", "composer"):
        assert f" {node} " in out, node
    assert "inv-1  search_logs" in out and "inv-2  read_metrics" in out


def test_the_example_json_report_shows_every_citation_passed(tmp_path: Path) -> None:
    done = run_example(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "ANSWERED"
    [audit] = report["gatekeeper_audits"]
    checked = audit["raw_result"]["checked_bindings"]
    assert [(c["source_invocation_id"], c["status"]) for c in checked] == [
        ("inv-1", "pass"), ("inv-2", "pass"), ("inv-2", "pass"),
    ]
