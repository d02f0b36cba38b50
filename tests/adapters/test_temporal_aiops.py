"""The AIOps flow on Temporal: every AIOps example like the sync driver, one worker for both."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

pytest.importorskip("temporalio")

from adapter_support import EXAMPLES_DIR, golden_result, load_doc, scenario_of, side_lines
from temporalio.client import Client

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
from diagnosis_core.adapters.temporal import create_diagnosis_worker, execute_diagnosis
from diagnosis_core.adapters.temporal_aiops import (
    AiOpsWorkflow,
    create_aiops_worker,
    execute_aiops,
    start_aiops_workflow,
)

AIOPS_EXAMPLES = sorted(EXAMPLES_DIR.glob("aiops*.json"))


def _scenario(path: object) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    scenario = dca.load_aiops_scenario(load_doc(path))  # type: ignore[arg-type]
    return dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)


async def test_every_aiops_example_runs_like_the_sync_driver(temporal_address: str) -> None:
    client = await Client.connect(temporal_address)
    for path in AIOPS_EXAMPLES:
        queue = f"aiops-{uuid.uuid4()}"
        request, effects = _scenario(path)
        async with create_aiops_worker(client, effects, task_queue=queue):
            handle = await start_aiops_workflow(
                client, request, task_queue=queue, workflow_id=f"{queue}-run"
            )
            state = dc.from_wire(dca.AiOpsState, await handle.result())
            journal = dcj.AiOpsJournal.load(await handle.query(AiOpsWorkflow.aiops_journal))
        assert dc.to_json(state) == dc.to_json(dca.run_aiops(*_scenario(path))), path.name
        assert dc.to_json(dcj.fold_journal(journal)) == dc.to_json(state)
        assert dc.to_wire(state.result) == golden_result(path.stem), path.name


async def test_one_worker_serves_both_workflows(temporal_address: str) -> None:
    client = await Client.connect(temporal_address)
    queue = f"both-{uuid.uuid4()}"
    chat_request, chat_effects = scenario_of(load_doc(EXAMPLES_DIR / "payment_timeout.json"))
    aiops_request, aiops_effects = _scenario(EXAMPLES_DIR / "aiops_payload_targeted.json")
    async with create_diagnosis_worker(
        client, chat_effects, task_queue=queue, aiops_effects=aiops_effects
    ):
        chat = await execute_diagnosis(client, chat_request, task_queue=queue)
        aiops = await execute_aiops(client, aiops_request, task_queue=queue)
    assert dc.to_json(chat) == dc.to_json(dc.run_diagnosis(*scenario_of(
        load_doc(EXAMPLES_DIR / "payment_timeout.json"))))
    assert dc.to_json(aiops) == dc.to_json(
        dca.run_aiops(*_scenario(EXAMPLES_DIR / "aiops_payload_targeted.json"))
    )
    # Each is the result the golden corpus holds, not only the driver's.
    assert dc.to_wire(chat.result) == golden_result("payment_timeout")
    assert dc.to_wire(aiops.result) == golden_result("aiops_payload_targeted")


async def test_a_request_that_is_not_valid_starts_nothing(temporal_address: str) -> None:
    client = await Client.connect(temporal_address)
    with pytest.raises(TypeError, match="expected an AiOpsRequest"):
        await start_aiops_workflow(client, {"run": {}}, task_queue="nowhere")  # type: ignore[arg-type]
    request, _ = _scenario(AIOPS_EXAMPLES[0])
    with pytest.raises(dc.ConfigError, match="agent_timeout"):
        await start_aiops_workflow(
            client, request, task_queue="nowhere", agent_timeout=timedelta(0)
        )


async def test_the_host_sets_the_workflow_task_timeout_of_an_aiops_run(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    queue = f"aiops-task-timeout-{uuid.uuid4()}"  # no worker: the run stays started
    request, _ = _scenario(AIOPS_EXAMPLES[0])
    handle = await start_aiops_workflow(
        client, request, task_queue=queue, workflow_task_timeout=timedelta(seconds=3)
    )
    config = (await handle.describe()).raw_description.execution_config
    assert config.default_workflow_task_timeout.ToTimedelta() == timedelta(seconds=3)
    await handle.terminate("test over")
    for start in (start_aiops_workflow, execute_aiops):
        with pytest.raises(dc.ConfigError, match="workflow_task_timeout: expected a positive"):
            await start(
                client, request, task_queue=queue, workflow_id=f"{queue}-bad",
                workflow_task_timeout=timedelta(0),
            )


async def test_a_sigkilled_aiops_worker_is_settled_by_the_resume_rule(
    temporal_address: str, tmp_path: Path
) -> None:
    """Executor killed: never sent again (EXECUTOR_FAILED); reporter killed: sent again."""
    from temporal_aiops_worker_process import EXAMPLE, routed_effects

    client = await Client.connect(temporal_address)
    queue, side = f"aiops-kill-{uuid.uuid4()}", tmp_path / "calls.txt"
    tag = uuid.uuid4().hex[:8]
    hangs = {f"kill-executor-{tag}": "executor", f"kill-reporter-{tag}": "reporter"}
    script = Path(__file__).resolve().parent / "temporal_aiops_worker_process.py"
    doomed = subprocess.Popen(
        [sys.executable, str(script), temporal_address, queue, str(side),
         json.dumps([[run_id, agent] for run_id, agent in hangs.items()])]
    )
    base, _ = _scenario(EXAMPLE)
    requests = {
        run_id: attrs.evolve(base, run=attrs.evolve(base.run, run_id=run_id)) for run_id in hangs
    }
    try:
        handles = {
            run_id: await start_aiops_workflow(
                client, request, task_queue=queue, workflow_id=f"{queue}-{run_id}",
                heartbeat_timeout=timedelta(seconds=2),
            )
            for run_id, request in requests.items()
        }
        deadline = time.monotonic() + 60
        while set(hangs.items()) - {(run, name) for _, run, name in side_lines(side)}:
            assert doomed.poll() is None and time.monotonic() < deadline, side_lines(side)
            await asyncio.sleep(0.05)
    finally:
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
    survivor = routed_effects(dict.fromkeys(hangs), side, "survivor")
    async with create_aiops_worker(client, survivor, task_queue=queue):
        states = {
            run_id: dc.from_wire(dca.AiOpsState, await asyncio.wait_for(handle.result(), 90))
            for run_id, handle in handles.items()
        }
    calls = side_lines(side)
    executor_run, reporter_run = list(hangs)
    assert [who for who, run, name in calls if run == executor_run and name == "executor"] == [
        "doomed"
    ]
    reason = states[executor_run].result.reason_code
    assert reason is not None and reason.value == "EXECUTOR_FAILED"
    uninterrupted = dca.run_aiops(requests[reporter_run], _scenario(EXAMPLE)[1])
    assert dc.to_json(states[reporter_run]) == dc.to_json(uninterrupted)
    reporters = [who for who, run, name in calls if run == reporter_run and name == "reporter"]
    assert reporters[0] == "doomed" and "survivor" in reporters
