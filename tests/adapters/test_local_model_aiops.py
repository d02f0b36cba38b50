"""A real model, offline: ``examples/local_model.py`` runs the AIOps flow with SmolLM2-135M,
from the Alertmanager fixture (the chat workflow: ``test_local_model_runs.py``).

As there: the bundled GGUF file on the CPU, the example's real tools, every socket
connection refused; skipped when the runtime or the model file is not installed; slow
lane. What the model writes is not asserted, only what the package guarantees of any
model: an outcome within the bound, a non-empty answer, every agent reply parsed or
classified with its reason, and every invocation id reported or cited one the recorder
recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import pytest

import diagnosis_core.aiops as dca
from diagnosis_core.adapters import local_model as lm

pytestmark = pytest.mark.slow

AIOPS_AGENT_NODES = {"supervisor", "planner", "executor", "reporter"}


def test_the_aiops_flow_runs_offline_from_the_alertmanager_fixture(
    local_example: ModuleType, local_model: lm.LocalChatModel, offline: list[object],
    unexplained_agent_events: Callable[[Iterable[Any], set[Any]], list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = local_example.run_aiops(local_model)
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
    assert unexplained_agent_events(state.events, AIOPS_AGENT_NODES) == []
    # Grounding: every invocation id the executor reported or a finding cites was recorded.
    recorded = {record.invocation_id for record in run.recorder.records()}
    assert set(state.invocation_ids) <= recorded
    for finding in state.findings:
        assert set(finding.cited_invocation_ids) <= recorded, finding
    local_example.print_run(run)
    out = capsys.readouterr().out
    assert out.startswith("Outcome: ") and "\nTrace:\n" in out
