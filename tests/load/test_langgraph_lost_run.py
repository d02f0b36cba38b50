"""A LangGraph run killed right after step 0's pending writes resumes (found by the load test).

LangGraph saves the input checkpoint, runs step 0 (which copies the request
into the state) and saves that step's writes (``put_writes``) before the next
checkpoint. A worker SIGKILLed between the two left a thread whose snapshot
shows the request (the pending writes applied) while the saved checkpoint holds
none: ``resume_*_graph`` re-routed it from ``START`` on the saved state and
refused it forever (``MachineError: the graph values hold no run``). The load
test lost one AIOps run this way (5193 failed resumes in a minute).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from _harness import Run, reference, worker_environment
from langgraph.checkpoint.sqlite import SqliteSaver

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters.langgraph import (
    build_diagnosis_graph,
    resume_diagnosis_graph,
)
from diagnosis_core.adapters.langgraph_aiops import build_aiops_graph, resume_aiops_graph

CHILD = """
import os, signal, sys
from langgraph.checkpoint.sqlite import SqliteSaver
from _harness import Run
import diagnosis_core as dc, diagnosis_core.aiops as dca
from diagnosis_core.adapters.langgraph import build_diagnosis_graph, run_diagnosis_graph
from diagnosis_core.adapters.langgraph_aiops import build_aiops_graph, run_aiops_graph

run = Run(*sys.argv[2:5])
with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    put_writes = saver.put_writes

    def put_writes_then_die(*args, **kwargs):
        put_writes(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)  # right after step 0's writes

    saver.put_writes = put_writes_then_die
    if run.aiops:
        scenario = dca.load_aiops_scenario(run.doc())
        graph = build_aiops_graph(dca.aiops_scenario_effects(scenario), checkpointer=saver)
        run_aiops_graph(graph, dca.aiops_scenario_request(scenario), thread_id="t")
    else:
        scenario = dc.load_scenario(run.doc())
        graph = build_diagnosis_graph(dc.scenario_effects(scenario), checkpointer=saver)
        run_diagnosis_graph(graph, dc.scenario_request(scenario), thread_id="t")
"""


@pytest.mark.parametrize(
    "run",
    [Run("lost-chat", "chat", "payment_timeout.json"),
     Run("lost-aiops", "aiops", "aiops_payload_targeted.json")],
    ids=lambda run: run.kind,
)
def test_a_run_killed_after_step_0_writes_resumes_in_a_new_process(
    tmp_path: Path, run: Run
) -> None:
    # LangGraph may save step 0's checkpoint before or after its writes: try until the
    # kill lands in the window (the saved checkpoint holds no request yet).
    for attempt in range(8):
        database = tmp_path / f"threads-{attempt}.sqlite"
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(database), *run.to_json()],
            env=worker_environment(), capture_output=True, text=True, timeout=120, check=False,
        )
        assert child.returncode == -9, child.stderr[-2000:]  # SIGKILLed, as meant
        with SqliteSaver.from_conn_string(str(database)) as saver:
            stored = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
            assert stored is not None
            if "request" not in stored.checkpoint["channel_values"]:
                break
    else:
        pytest.fail("the kill never landed between step 0's writes and its checkpoint")
    with SqliteSaver.from_conn_string(str(database)) as saver:
        if run.aiops:
            scenario = dca.load_aiops_scenario(run.doc())
            graph = build_aiops_graph(dca.aiops_scenario_effects(scenario), checkpointer=saver)
            state: object = resume_aiops_graph(graph, thread_id="t")
        else:
            scenario = dc.load_scenario(run.doc())
            chat = build_diagnosis_graph(dc.scenario_effects(scenario), checkpointer=saver)
            state = resume_diagnosis_graph(chat, thread_id="t")
    assert dc.to_json(state.result) == reference(run).result_json  # type: ignore[attr-defined]
    assert json.loads(dc.to_json(state.result))  # type: ignore[attr-defined]
