"""The Temporal adapter against a real local dev server (started once per session).

Workers are killed mid-run here: the run must survive on a new worker without
losing state, without calling the gatekeeper twice, and without Temporal ever
retrying an effect behind the core's back.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("temporalio")

import attrs
from adapter_support import EXAMPLES_DIR, chat_example_paths, load_doc, scenario_of
from temporalio import activity
from temporalio.client import Client, WorkflowHandle

import diagnosis_core as dc
import diagnosis_core.blocks as dcb
from diagnosis_core.adapters.temporal import (
    PASSTHROUGH_MODULES,
    DiagnosisActivities,
    DiagnosisWorkflow,
    _decode_result,
    create_diagnosis_worker,
    diagnosis_workflow_runner,
    execute_diagnosis,
    start_diagnosis_workflow,
)

REDIS = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
PAYMENT = EXAMPLES_DIR / "payment_timeout.json"


def _queue() -> str:
    return f"diagnosis-test-{uuid.uuid4()}"


async def _worker_identities(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Who completed each workflow task, in history order."""
    identities = []
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_task_completed_event_attributes"):
            identities.append(event.workflow_task_completed_event_attributes.identity)
    return identities


async def test_examples_run_on_a_real_server_exactly_like_the_sync_driver(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    docs = [load_doc(path) for path in chat_example_paths()]
    queue = _queue()
    for doc in docs:
        request, effects = scenario_of(doc)
        async with create_diagnosis_worker(
            client, dc.AsyncEffects.from_sync(effects), task_queue=queue
        ):
            state = await execute_diagnosis(
                client, request, task_queue=queue, workflow_id=f"{queue}-{request.run.run_id}"
            )
        expected = dc.run_diagnosis(*scenario_of(doc))
        assert dc.to_json(state.result) == dc.to_json(expected.result)
        assert dc.to_json(state) == dc.to_json(expected)


async def test_a_new_worker_finishes_a_run_whose_first_worker_shut_down_mid_call(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    doc = load_doc(REDIS)  # two rounds: the gatekeeper must run exactly twice
    request, scripted = scenario_of(doc)  # the outside world, shared by both workers
    gatekeeper = scripted.gatekeeper
    assert isinstance(gatekeeper, dc.ScriptedGatekeeper)
    shared = dc.AsyncEffects.from_sync(scripted)
    in_flight = asyncio.Event()

    async def verifier_until_shutdown(input: str, config: dc.RunConfig, /) -> str:
        # The first verifier call (after the first gatekeeper call) is in flight
        # when worker 1 is told to shut down; it completes during the drain.
        if not in_flight.is_set():
            in_flight.set()
            await activity.wait_for_worker_shutdown()
        return await shared.verifier(input, config)

    queue = _queue()
    first = create_diagnosis_worker(
        client,
        attrs.evolve(shared, verifier=verifier_until_shutdown),
        task_queue=queue,
        identity="worker-1",
        graceful_shutdown_timeout=timedelta(seconds=30),
    )
    first_run = asyncio.create_task(first.run())
    handle = await start_diagnosis_workflow(client, request, task_queue=queue)
    await asyncio.wait_for(in_flight.wait(), 30)

    snapshot = await handle.query(DiagnosisWorkflow.diagnosis_state)
    mid_run = dc.from_wire(dc.DiagnosisState, snapshot)
    assert mid_run.calls.gatekeeper == 1 and not mid_run.finished

    await first.shutdown()
    await first_run
    assert gatekeeper.calls == 1

    async with create_diagnosis_worker(client, shared, task_queue=queue, identity="worker-2"):
        state = dc.from_wire(dc.DiagnosisState, await handle.result())

    identities = await _worker_identities(handle)
    assert identities[0] == "worker-1" and identities[-1] == "worker-2"
    assert gatekeeper.calls == state.round == 2 == state.calls.gatekeeper
    expected = dc.run_diagnosis(*scenario_of(doc))
    assert dc.to_json(state.result) == dc.to_json(expected.result)
    assert dc.to_json(state) == dc.to_json(expected)


async def test_an_executor_call_lost_with_its_worker_fails_the_run_and_is_never_retried(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    request, scripted = scenario_of(load_doc(PAYMENT))
    shared = dc.AsyncEffects.from_sync(scripted)
    executor_calls: list[str] = []
    never = asyncio.Event()

    async def executor_that_hangs(input: str, config: dc.RunConfig, /) -> str:
        executor_calls.append(input)
        await never.wait()
        raise AssertionError("unreachable")  # pragma: no cover

    async def executor_that_answers(input: str, config: dc.RunConfig, /) -> str:
        executor_calls.append(input)  # pragma: no cover - must never run
        return await shared.executor(input, config)  # pragma: no cover

    queue = _queue()
    first = create_diagnosis_worker(
        client, attrs.evolve(shared, executor=executor_that_hangs), task_queue=queue
    )
    first_run = asyncio.create_task(first.run())
    handle = await start_diagnosis_workflow(client, request, task_queue=queue)
    while not executor_calls:
        await asyncio.sleep(0.05)
    await first.shutdown()  # no grace: the in-flight executor call is cancelled
    await first_run

    second = attrs.evolve(shared, executor=executor_that_answers)
    async with create_diagnosis_worker(client, second, task_queue=queue):
        state = dc.from_wire(dc.DiagnosisState, await handle.result())

    assert len(executor_calls) == 1
    assert state.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
    assert state.calls.executor == 1 and state.calls.gatekeeper == 0
    failure = state.events[-2]
    assert failure.status is dc.NodeStatus.NON_RETRYABLE_FAILED
    assert failure.details.error is not None
    assert failure.details.error.startswith("activity failed: ")


async def test_a_gatekeeper_timeout_is_gatekeeper_unavailable_and_not_retried(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    request, scripted = scenario_of(load_doc(PAYMENT))
    calls: list[str] = []
    never = asyncio.Event()

    async def slow_gatekeeper(run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
        calls.append(run_id)
        await never.wait()
        raise AssertionError("unreachable")  # pragma: no cover

    effects = attrs.evolve(dc.AsyncEffects.from_sync(scripted), gatekeeper=slow_gatekeeper)
    queue = _queue()
    async with create_diagnosis_worker(client, effects, task_queue=queue):
        handle = await start_diagnosis_workflow(
            client, request, task_queue=queue, gatekeeper_timeout=timedelta(seconds=1)
        )
        state = dc.from_wire(dc.DiagnosisState, await handle.result())
    assert calls == [request.run.run_id]
    assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert state.calls.gatekeeper == 1


# --- activities without a server ---------------------------------------------------------


def _pending_actions(doc: dict[str, Any]) -> tuple[dc.InvokeAgent, dc.CallGatekeeper]:
    request, effects = scenario_of(doc)
    state = dc.start_diagnosis(request)
    first = dc.next_action(state)
    assert isinstance(first, dc.InvokeAgent)
    while not isinstance(action := dc.next_action(state), dc.CallGatekeeper):
        assert isinstance(action, dc.InvokeAgent)
        state = dc.advance(state, dcb.perform_effect(action, effects))
    return first, action


def _effects(**changes: Any) -> dc.Effects:
    _, effects = scenario_of(load_doc(PAYMENT))
    return attrs.evolve(effects, **changes)


async def test_an_agent_error_comes_back_as_a_classified_result_not_an_activity_failure() -> None:
    def overloaded(input: str, config: dc.RunConfig, /) -> str:
        raise TimeoutError("overloaded")

    agent, _ = _pending_actions(load_doc(PAYMENT))
    activities = DiagnosisActivities(_effects(planner=overloaded))
    result = _decode_result(await activities.invoke_agent(dc.to_wire(agent)))  # type: ignore[arg-type]
    assert result == dc.AgentFailed(dc.FailureKind.RETRYABLE, "TimeoutError: overloaded")


async def test_a_reply_that_is_not_text_is_reported_as_a_classified_failure() -> None:
    def not_text(input: str, config: dc.RunConfig, /) -> str:
        return b"bytes"  # type: ignore[return-value]

    agent, _ = _pending_actions(load_doc(PAYMENT))
    activities = DiagnosisActivities(_effects(planner=not_text))
    result = _decode_result(await activities.invoke_agent(dc.to_wire(agent)))  # type: ignore[arg-type]
    assert isinstance(result, dc.AgentFailed)
    assert result.kind is dc.FailureKind.NON_RETRYABLE
    assert "cannot be sent as JSON" in result.message


@pytest.mark.parametrize("raw", [{"status": "pass", "extra": {1, 2}}, {"status": math.nan}])
async def test_a_gatekeeper_result_that_is_not_json_is_reported_as_a_gatekeeper_failure(
    raw: object,
) -> None:
    def odd_gatekeeper(run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
        return raw

    _, call = _pending_actions(load_doc(PAYMENT))
    activities = DiagnosisActivities(_effects(gatekeeper=odd_gatekeeper))
    result = _decode_result(await activities.call_gatekeeper(dc.to_wire(call)))  # type: ignore[arg-type]
    assert isinstance(result, dc.GatekeeperFailed)
    assert "cannot be sent as JSON" in result.message


async def test_sync_and_async_effects_give_the_same_activity_results() -> None:
    agent, call = _pending_actions(load_doc(PAYMENT))
    for effects in (_effects(), dc.AsyncEffects.from_sync(_effects())):
        activities = DiagnosisActivities(effects)
        replied = _decode_result(await activities.invoke_agent(dc.to_wire(agent)))  # type: ignore[arg-type]
        returned = _decode_result(await activities.call_gatekeeper(dc.to_wire(call)))  # type: ignore[arg-type]
        assert isinstance(replied, dc.AgentReplied)
        assert isinstance(returned, dc.GatekeeperReturned)


@pytest.mark.parametrize(
    "data", [None, [], {"result": "agent_exploded"}, {"result": "agent_replied", "wire": {}}]
)
def test_a_malformed_activity_result_fails_loudly(data: object) -> None:
    with pytest.raises((dc.MachineError, dc.PayloadError)):
        _decode_result(data)


def test_the_core_passes_through_the_workflow_sandbox() -> None:
    runner = diagnosis_workflow_runner()
    assert set(PASSTHROUGH_MODULES) <= runner.restrictions.passthrough_modules
