"""Helpers of the store tests: the three stores behind one fixture, scenario runs, PostgreSQL.

The PostgreSQL server is the LangGraph tests' throwaway cluster
(``tests/adapters/langgraph_support.postgres_server``): started by the tests,
skipped only where no server binary or no ``psycopg`` exists.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import diagnosis_core as dc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
sys.path.insert(0, str(ROOT / "tests" / "adapters"))

KINDS = ("jsonl", "sqlite", "postgres")


def store_url(kind: str, tmp_path: Path, conninfo: str | None) -> str:
    """A fresh store URL of ``kind`` (PostgreSQL: the shared test database)."""
    if kind == "jsonl":
        return str(tmp_path / "runs.jsonl")
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    assert conninfo is not None
    return conninfo_url(conninfo)


def conninfo_url(conninfo: str) -> str:
    """``host=... port=... user=... dbname=...`` as a ``postgresql://`` URL."""
    parts = dict(item.split("=", 1) for item in conninfo.split())
    return f"postgresql://{parts['user']}@{parts['host']}:{parts['port']}/{parts['dbname']}"


def chat_example_docs() -> list[tuple[str, dict[str, Any]]]:
    """Every bundled chat example scenario (name, document)."""
    docs = []
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if "workflow" not in doc:
            docs.append((path.stem, doc))
    return docs


def load_example(name: str) -> dict[str, Any]:
    """An example document by file stem."""
    data: dict[str, Any] = json.loads((EXAMPLES_DIR / f"{name}.json").read_text("utf-8"))
    return data


def with_ids(doc: dict[str, Any], run_id: str | None = None,
             session_id: str | None = None) -> dict[str, Any]:
    """A copy of ``doc`` with fresh (or given) run and session ids."""
    copy = json.loads(json.dumps(doc))
    run = copy.setdefault("run", {})
    run["run_id"] = run_id or f"run-{uuid.uuid4().hex[:12]}"
    run["session_id"] = session_id or f"session-{uuid.uuid4().hex[:12]}"
    return copy


def scenario_of(doc: dict[str, Any]) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """The request and fresh scripted effects of a chat scenario document."""
    scenario = dc.load_scenario(doc)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def failing_effects() -> dc.Effects:
    """Effects that fail the test if any is performed."""

    def agent(input: str, config: dc.RunConfig, /) -> str:
        raise AssertionError("an effect was performed")

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        raise AssertionError("the gatekeeper was called")

    return dc.Effects(planner=agent, executor=agent, verifier=agent, composer=agent,
                      gatekeeper=gatekeeper)


def with_tools(
    effects: dc.Effects, recorder: Any, log_output: object = None, fail_metrics: bool = True
) -> dc.Effects:
    """``effects`` whose executor first calls two recorded tools (one fails when asked)."""
    import attrs

    def query_logs(service: str) -> object:
        return log_output if log_output is not None else {"lines": [f"{service}: timeout"]}

    def query_metrics(service: str) -> object:
        if fail_metrics:
            raise RuntimeError(f"metrics backend down for {service}")
        return {"p99_ms": 3400}

    logs = recorder.wrap("query_logs", query_logs)
    metrics = recorder.wrap("query_metrics", query_metrics)
    executor = effects.executor

    def run_tools(input: str, config: dc.RunConfig, /) -> str:
        logs("pay-svc")
        with contextlib.suppress(RuntimeError):
            metrics("pay-svc")
        return executor(input, config)

    return attrs.evolve(effects, executor=run_tools)
