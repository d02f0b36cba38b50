"""The Temporal adapter against a real local dev server (started once per session).

Workers are killed mid-run here — shut down, and SIGKILLed in a child
process: the run must survive on a new worker without losing state, without
calling the gatekeeper or the executor twice, and without Temporal ever
retrying an effect behind the core's back. The workflow's journal (its
query) must fold to its final state like any journal (spec §12).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio")

import attrs
from adapter_support import (
    EXAMPLES_DIR,
    RoutedEffects,
    chat_example_paths,
    load_doc,
    logged_effects,
    scenario_of,
    side_lines,
)
from temporalio import activity
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.scenarios as dcs
from diagnosis_core.adapters._engine import CHAT
from diagnosis_core.adapters._temporal_common import PASSTHROUGH_MODULES
from diagnosis_core.adapters.temporal import (
    INTERRUPTED_RESENDS,
    INVOKE_AGENT_ACTIVITY,
    DiagnosisActivities,
    DiagnosisWorkflow,
    DiagnosisWorkflowInput,
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


async def _journal(handle: WorkflowHandle[Any, Any]) -> dcj.Journal:
    """The run's journal, read through the workflow's query and loaded strictly."""
    return dcj.Journal.load(await handle.query(DiagnosisWorkflow.diagnosis_journal))


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
            handle = await start_diagnosis_workflow(
                client, request, task_queue=queue, workflow_id=f"{queue}-{request.run.run_id}"
            )
            state = dc.from_wire(dc.DiagnosisState, await handle.result())
            journal = await _journal(handle)
        expected = dc.run_diagnosis(*scenario_of(doc))
        assert dc.to_json(state.result) == dc.to_json(expected.result)
        assert dc.to_json(state) == dc.to_json(expected)
        # The query's journal folds like any journal, to the workflow's final state,
        # and replays to the same §9 output.
        assert dc.to_json(dcj.fold_journal(journal)) == dc.to_json(state)
        assert dcj.journal_status(journal).complete
        assert json.dumps(dcj.replay_journal(journal)) == json.dumps(dc.to_wire(state.result))
        assert len(journal.entries) == sum(
            getattr(state.calls, name)
            for name in ("planner", "executor", "verifier", "composer", "gatekeeper")
        )


async def test_a_new_worker_finishes_a_run_whose_first_worker_shut_down_mid_call(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    doc = load_doc(REDIS)  # two rounds: the gatekeeper must run exactly twice
    request, scripted = scenario_of(doc)  # the outside world, shared by both workers
    gatekeeper = scripted.gatekeeper
    assert isinstance(gatekeeper, dcs.ScriptedGatekeeper)
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
    journal = await _journal(handle)  # the verifier call in flight is a started entry
    status = dcj.journal_status(journal)
    assert status.interrupted is not None and status.interrupted.call is dcj.JournalCall.VERIFIER
    assert dc.to_json(status.state) == dc.to_json(mid_run)

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
    assert failure.status is dcm.NodeStatus.NON_RETRYABLE_FAILED
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


# --- a SIGKILLed worker ---------------------------------------------------------------

WORKER_PROCESS = Path(__file__).resolve().parent / "temporal_worker_process.py"
KILL_HEARTBEAT_TIMEOUT = timedelta(seconds=3)


def _doc_with_run_id(path: Path, run_id: str) -> dict[str, Any]:
    doc = load_doc(path)
    doc["run"]["run_id"] = run_id
    return doc


def _resumed_reference(doc: dict[str, Any], interrupted: dcj.JournalCall) -> dc.DiagnosisState:
    """The run of ``doc`` whose process died during its first ``interrupted`` call, resumed.

    The oracle is the journal's own resume rule and the sync driver: record the
    run with the journal builder up to the call, leave that entry ``started``,
    apply :func:`resume_journal` and finish with the sync driver.
    """
    request, effects = scenario_of(doc)
    recorder = dcj.JournalRecorder(dcj.Journal(request))
    state = dcm.start_diagnosis(request)
    while True:
        action = dcm.next_action(state)
        assert not isinstance(action, dcm.Finished)
        entry = recorder.begin(action)
        if entry.call is interrupted:
            break
        state = dcm.advance(state, recorder.end(dcm.perform_effect(action, effects)))
    _, resumed = dcj.resume_journal(recorder.journal)
    return dc.run_diagnosis(request, effects, state=resumed)


async def test_a_sigkilled_worker_is_noticed_within_the_heartbeat_timeout(
    temporal_address: str, tmp_path: Path
) -> None:
    """Three runs, each killed during another effect, finish on a new worker in seconds.

    §12 resume rule: the interrupted verifier is sent again as the same attempt
    (the result equals the uninterrupted run's), the interrupted executor is
    never sent again (EXECUTOR_FAILED, ``interrupted: outcome unknown``), the
    interrupted gatekeeper is GATEKEEPER_UNAVAILABLE.
    """
    client = await Client.connect(temporal_address)
    queue, side = _queue(), tmp_path / "calls.txt"
    tag = uuid.uuid4().hex[:8]
    hangs = {
        f"kill-executor-{tag}": dcj.JournalCall.EXECUTOR,
        f"kill-gatekeeper-{tag}": dcj.JournalCall.GATEKEEPER,
        f"kill-verifier-{tag}": dcj.JournalCall.VERIFIER,
    }
    plan = [[str(PAYMENT), run_id, call.value] for run_id, call in hangs.items()]
    doomed = subprocess.Popen(
        [sys.executable, str(WORKER_PROCESS), temporal_address, queue, str(side), json.dumps(plan)]
    )
    try:
        handles = {
            run_id: await start_diagnosis_workflow(
                client,
                scenario_of(_doc_with_run_id(PAYMENT, run_id))[0],
                task_queue=queue,
                workflow_id=f"{queue}-{run_id}",
                heartbeat_timeout=KILL_HEARTBEAT_TIMEOUT,
            )
            for run_id in hangs
        }
        deadline = time.monotonic() + 60
        while {(run, call.value) for run, call in hangs.items()} - {
            (run, name) for _, run, name in side_lines(side)
        }:
            assert doomed.poll() is None and time.monotonic() < deadline, side_lines(side)
            await asyncio.sleep(0.05)
    finally:
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
    killed = time.monotonic()

    routed = RoutedEffects()
    for run_id in hangs:
        doc = _doc_with_run_id(PAYMENT, run_id)
        routed.add(doc, logged_effects(scenario_of(doc)[1], side, "survivor"))
    async with create_diagnosis_worker(client, routed.effects(), task_queue=queue):
        states = {
            run_id: dc.from_wire(dc.DiagnosisState, await asyncio.wait_for(handle.result(), 60))
            for run_id, handle in handles.items()
        }
        journals = {run_id: await _journal(handle) for run_id, handle in handles.items()}
    elapsed = time.monotonic() - killed
    assert elapsed < 30, f"the runs took {elapsed:.1f} s after the kill"

    calls = side_lines(side)
    for run_id, call in hangs.items():
        doc, state = _doc_with_run_id(PAYMENT, run_id), states[run_id]
        expected = _resumed_reference(doc, call)
        assert dc.to_json(state.result) == dc.to_json(expected.result), run_id
        assert dc.to_json(dcj.fold_journal(journals[run_id])) == dc.to_json(state)
        executors = [who for who, run, name in calls if run == run_id and name == "executor"]
        assert executors == ["doomed"]  # the executor ran once, and never again
    assert states[f"kill-executor-{tag}"].result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
    executor_entry = journals[f"kill-executor-{tag}"].entries[1]
    assert executor_entry.outcome == dcj.RecordedAgentError(
        dc.FailureKind.NON_RETRYABLE, dcj.INTERRUPTED_MESSAGE
    )
    gatekeeper_run = states[f"kill-gatekeeper-{tag}"]
    assert gatekeeper_run.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert gatekeeper_run.calls.gatekeeper == 1
    verifier_run = states[f"kill-verifier-{tag}"]
    reference = dc.run_diagnosis(*scenario_of(_doc_with_run_id(PAYMENT, f"kill-verifier-{tag}")))
    assert dc.to_json(verifier_run.result) == dc.to_json(reference.result)
    verifier_calls = [
        who for who, run, name in calls if run == f"kill-verifier-{tag}" and name == "verifier"
    ]
    assert verifier_calls == ["doomed", "survivor"]
    assert verifier_run.calls.verifier == 1  # re-sent as the same attempt


# --- validation before starting, and inputs that cannot be decoded -------------------


async def _workflow_exists(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        assert error.status is RPCStatusCode.NOT_FOUND
        return False
    return True


def _bad_requests() -> list[tuple[dc.DiagnosisRequest | dict[str, Any], str]]:
    request, _ = scenario_of(load_doc(PAYMENT))
    wire = dc.to_wire(request)
    assert isinstance(wire, dict)
    limit = json.loads(json.dumps(wire))
    limit["config"]["technical_retry_limit"] = 99
    misspelt = {**json.loads(json.dumps(wire)), "confg": {}}
    no_question = {key: value for key, value in wire.items() if key != "question"}
    forged = attrs.evolve(request)
    object.__setattr__(forged, "question", 5)  # past the validators: the wire form says so
    return [
        (limit, "config.technical_retry_limit: 99 is outside the range 0..3"),
        (no_question, "question: missing"),
        (misspelt, "confg: unknown key"),
        (forged, "question: expected a string"),
        # What the drivers refuse (the same check, on the client): nothing reaches history.
        (attrs.evolve(request, question="x" * 100_001), "over the limit of 100000"),
        (attrs.evolve(request, run=attrs.evolve(request.run, session_id="s\ud800")),
         "request.run.session_id: holds a lone surrogate"),
        (attrs.evolve(request, run=attrs.evolve(request.run, metadata={"k": "\ud800"})),
         "request.run.metadata.k: holds a lone surrogate"),
    ]


async def test_a_request_that_is_not_valid_is_refused_and_nothing_is_started(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    queue = _queue()
    for index, (request, problem) in enumerate(_bad_requests()):
        for start in (start_diagnosis_workflow, execute_diagnosis):
            workflow_id = f"{queue}-{index}-{start.__name__}"
            with pytest.raises(dc.PayloadError) as caught:
                await start(client, request, task_queue=queue, workflow_id=workflow_id)
            assert problem in str(caught.value)
            assert not await _workflow_exists(client, workflow_id)
    request, _ = scenario_of(load_doc(PAYMENT))
    for timeouts in ({"heartbeat_timeout": timedelta(0)}, {"agent_timeout": timedelta(-1)}):
        with pytest.raises(dc.ConfigError):
            await start_diagnosis_workflow(
                client, request, task_queue=queue, workflow_id=f"{queue}-t", **timeouts
            )
    assert not await _workflow_exists(client, f"{queue}-t")


async def test_a_wire_request_runs_like_the_request_itself(temporal_address: str) -> None:
    client = await Client.connect(temporal_address)
    request, effects = scenario_of(load_doc(PAYMENT))
    queue = _queue()
    async with create_diagnosis_worker(client, effects, task_queue=queue):
        wire = dc.to_wire(request)
        assert isinstance(wire, dict)
        state = await execute_diagnosis(
            client, wire, task_queue=queue, workflow_id=f"{queue}-wire"
        )
    expected = dc.run_diagnosis(*scenario_of(load_doc(PAYMENT)))
    assert dc.to_json(state.result) == dc.to_json(expected.result)


async def test_a_workflow_whose_input_cannot_be_decoded_fails_instead_of_retrying(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    request, effects = scenario_of(load_doc(PAYMENT))
    good = dataclasses.asdict(DiagnosisWorkflowInput.of(request))
    # What the workflow decodes itself is a DiagnosisInputError; what Temporal's
    # converter cannot even make a DiagnosisWorkflowInput of is its TypeError.
    checked = "DiagnosisInputError"
    raw_inputs: list[tuple[object, str]] = [
        *(({**good, "request": bad}, checked) for bad, _ in _bad_requests()[:3]),
        ({**good, "heartbeat_timeout_seconds": -1}, checked),
        ({**good, "agent_timeout_seconds": math.inf}, checked),
        ("not an object", "TypeError"),
        ({}, "TypeError"),
        ({**good, "heartbeat_timeout_seconds": "soon"}, "TypeError"),
    ]
    queue = _queue()
    async with create_diagnosis_worker(client, effects, task_queue=queue):
        for index, (raw, failure_type) in enumerate(raw_inputs):
            handle = await client.start_workflow(
                "DiagnosisWorkflow", raw, id=f"{queue}-raw-{index}", task_queue=queue
            )
            started = time.monotonic()
            with pytest.raises(WorkflowFailureError) as caught:
                await asyncio.wait_for(handle.result(), 15)
            assert time.monotonic() - started < 5, raw
            cause = caught.value.cause
            assert isinstance(cause, ApplicationError), raw
            assert cause.type == failure_type, (raw, cause)
            if failure_type == checked:
                assert cause.non_retryable
                with pytest.raises(WorkflowQueryFailedError, match="not a valid diagnosis"):
                    await handle.query(DiagnosisWorkflow.diagnosis_journal)


async def test_a_malformed_activity_result_fails_the_workflow(temporal_address: str) -> None:
    @activity.defn(name=INVOKE_AGENT_ACTIVITY)
    async def impostor(action: dict[str, Any]) -> dict[str, Any]:
        return {"input_sha256": "0" * 64, "outcome": {"text": "{}"}}

    client = await Client.connect(temporal_address)
    request, _ = scenario_of(load_doc(PAYMENT))
    queue = _queue()
    async with Worker(
        client,
        task_queue=queue,
        workflows=[DiagnosisWorkflow],
        activities=[impostor],
        workflow_runner=diagnosis_workflow_runner(),
    ):
        handle = await start_diagnosis_workflow(
            client, request, task_queue=queue, workflow_id=f"{queue}-impostor"
        )
        with pytest.raises(WorkflowFailureError) as caught:
            await asyncio.wait_for(handle.result(), 15)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "JournalError"
    assert "planner round 1 attempt 1" in str(cause)


async def test_an_llm_call_lost_again_and_again_is_resent_then_fails_closed(
    temporal_address: str,
) -> None:
    """A planner whose activity never heartbeats: re-sent identically, then a failure."""
    sent: list[dict[str, Any]] = []

    @activity.defn(name=INVOKE_AGENT_ACTIVITY)
    async def silent(action: dict[str, Any]) -> dict[str, Any]:
        sent.append(action)
        await asyncio.sleep(3600)  # no heartbeat: the server counts this worker as lost
        raise AssertionError("unreachable")  # pragma: no cover

    client = await Client.connect(temporal_address)
    request, _ = scenario_of(load_doc(PAYMENT))
    queue = _queue()
    async with Worker(
        client,
        task_queue=queue,
        workflows=[DiagnosisWorkflow],
        activities=[silent],
        workflow_runner=diagnosis_workflow_runner(),
    ):
        handle = await start_diagnosis_workflow(
            client,
            request,
            task_queue=queue,
            workflow_id=f"{queue}-silent",
            heartbeat_timeout=timedelta(seconds=1),
        )
        state = dc.from_wire(dc.DiagnosisState, await asyncio.wait_for(handle.result(), 60))
        journal = await _journal(handle)
    assert len(sent) == 1 + INTERRUPTED_RESENDS
    assert all(action == sent[0] for action in sent)  # the identical input every time
    assert journal.entries[0].outcome == dcj.RecordedAgentError(
        dc.FailureKind.NON_RETRYABLE, dcj.INTERRUPTED_MESSAGE
    )
    assert state.calls.planner == 1 and len(journal.entries) == 1
    assert dc.to_json(dcj.fold_journal(journal)) == dc.to_json(state)


# --- activities without a server ---------------------------------------------------------


def _pending_actions(doc: dict[str, Any]) -> tuple[dcm.InvokeAgent, dcm.CallGatekeeper]:
    request, effects = scenario_of(doc)
    state = dcm.start_diagnosis(request)
    first = dcm.next_action(state)
    assert isinstance(first, dcm.InvokeAgent)
    while not isinstance(action := dcm.next_action(state), dcm.CallGatekeeper):
        assert isinstance(action, dcm.InvokeAgent)
        state = dcm.advance(state, dcm.perform_effect(action, effects))
    return first, action


def _effects(**changes: Any) -> dc.Effects:
    _, effects = scenario_of(load_doc(PAYMENT))
    return attrs.evolve(effects, **changes)


async def _outcome(
    activities: DiagnosisActivities,
    action: dcm.InvokeAgent | dcm.CallGatekeeper,
    environment: ActivityEnvironment | None = None,
) -> dcj.JournalOutcome:
    """Run the activity of ``action`` as a worker would; the outcome its result records."""
    environment = environment or ActivityEnvironment()
    run = activities.invoke_agent if isinstance(action, dcm.InvokeAgent) else (
        activities.call_gatekeeper
    )
    data = await environment.run(run, dc.to_wire(action))  # type: ignore[arg-type]
    return CHAT.recorded(data, dcj.expected_call(action))[0]


async def test_an_agent_error_comes_back_as_a_classified_result_not_an_activity_failure() -> None:
    def overloaded(input: str, config: dc.RunConfig, /) -> str:
        raise TimeoutError("overloaded")

    agent, _ = _pending_actions(load_doc(PAYMENT))
    outcome = await _outcome(DiagnosisActivities(_effects(planner=overloaded)), agent)
    assert outcome == dcj.RecordedAgentError(dc.FailureKind.RETRYABLE, "TimeoutError: overloaded")


async def test_a_reply_that_is_not_text_is_recorded_as_the_journal_records_it() -> None:
    def not_text(input: str, config: dc.RunConfig, /) -> str:
        return b"bytes"  # type: ignore[return-value]

    agent, _ = _pending_actions(load_doc(PAYMENT))
    outcome = await _outcome(DiagnosisActivities(_effects(planner=not_text)), agent)
    assert outcome == dcj.outcome_of(dcm.AgentReplied(b"bytes"))  # type: ignore[arg-type]
    assert isinstance(outcome, dcj.RecordedAgentError)
    assert outcome.kind is dc.FailureKind.NON_RETRYABLE


@pytest.mark.parametrize("raw", [{"status": "pass", "extra": {1, 2}}, {"status": math.nan}])
async def test_a_gatekeeper_result_that_is_not_json_is_recorded_as_the_journal_records_it(
    raw: object,
) -> None:
    def odd_gatekeeper(run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
        return raw

    _, call = _pending_actions(load_doc(PAYMENT))
    outcome = await _outcome(DiagnosisActivities(_effects(gatekeeper=odd_gatekeeper)), call)
    assert outcome == dcj.outcome_of(dcm.GatekeeperReturned(raw))
    assert isinstance(outcome, dcj.RecordedGatekeeperResult)
    assert isinstance(outcome.result, dict) and "unserializable" in outcome.result


async def test_sync_and_async_effects_give_the_same_activity_results() -> None:
    agent, call = _pending_actions(load_doc(PAYMENT))
    outcomes = []
    for effects in (_effects(), dc.AsyncEffects.from_sync(_effects())):
        activities = DiagnosisActivities(effects)
        outcomes.append((await _outcome(activities, agent), await _outcome(activities, call)))
    assert outcomes[0] == outcomes[1]
    replied, returned = outcomes[0]
    assert isinstance(replied, dcj.RecordedReply)
    assert isinstance(returned, dcj.RecordedGatekeeperResult)


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(
    ("interval", "heartbeat_timeout", "least"),
    [
        (timedelta(milliseconds=40), None, 6),  # the configured interval
        (None, timedelta(milliseconds=150), 4),  # default: a third of the heartbeat timeout
        (timedelta(seconds=60), timedelta(milliseconds=150), 3),  # never above half of it
    ],
)
async def test_an_activity_heartbeats_while_its_effect_runs(
    asynchronous: bool,
    interval: timedelta | None,
    heartbeat_timeout: timedelta | None,
    least: int,
) -> None:
    def slow_planner(input: str, config: dc.RunConfig, /) -> str:
        time.sleep(0.4)
        return "{}"

    async def slow_async_planner(input: str, config: dc.RunConfig, /) -> str:
        await asyncio.sleep(0.4)
        return "{}"

    effects: dc.Effects | dc.AsyncEffects = _effects(planner=slow_planner)
    if asynchronous:
        effects = attrs.evolve(dc.AsyncEffects.from_sync(_effects()), planner=slow_async_planner)
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, heartbeat_timeout=heartbeat_timeout)
    beats: list[float] = []
    environment.on_heartbeat = lambda *details: beats.append(time.monotonic())
    agent, _ = _pending_actions(load_doc(PAYMENT))
    activities = DiagnosisActivities(effects, heartbeat_interval=interval)
    assert await _outcome(activities, agent, environment) == dcj.RecordedReply("{}")
    assert len(beats) >= least, beats


async def test_a_cancelled_activity_cancels_its_async_effect() -> None:
    cancelled = asyncio.Event()

    async def endless(input: str, config: dc.RunConfig, /) -> str:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")  # pragma: no cover

    effects = attrs.evolve(dc.AsyncEffects.from_sync(_effects()), planner=endless)
    environment = ActivityEnvironment()
    agent, _ = _pending_actions(load_doc(PAYMENT))
    running = asyncio.ensure_future(
        environment.run(DiagnosisActivities(effects).invoke_agent, dc.to_wire(agent))  # type: ignore[arg-type]
    )
    await asyncio.sleep(0.05)
    environment.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert cancelled.is_set()


def test_a_heartbeat_interval_that_is_not_positive_is_refused() -> None:
    with pytest.raises(dc.ConfigError, match="heartbeat_interval"):
        DiagnosisActivities(_effects(), heartbeat_interval=timedelta(0))


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"outcome": {"text": "{}"}},
        {"input_sha256": "0" * 64, "outcome": {"text": "{}"}},
        {"input_sha256": "<right>", "outcome": {"result": {}}},
        {"input_sha256": "<right>", "outcome": {"text": "{}"}, "extra": 1},
    ],
)
def test_a_malformed_activity_result_fails_loudly(data: object) -> None:
    agent, _ = _pending_actions(load_doc(PAYMENT))
    expected = dcj.expected_call(agent)
    if isinstance(data, dict) and data.get("input_sha256") == "<right>":
        data = {**data, "input_sha256": expected.input_sha256}
    with pytest.raises(dc.JournalError):
        CHAT.recorded(data, expected)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda wire: wire["config"].update(x=1), "config.x: unknown key"),
        (lambda wire: wire["history"][1].update(extra=1), "history[1].extra: unknown key"),
        (lambda wire: wire["run"].update(runid="r"), "run.runid: unknown key"),
    ],
)
def test_a_wire_request_with_an_unknown_key_is_refused(change: Any, problem: str) -> None:
    request, _ = scenario_of(load_doc(PAYMENT))
    wire = json.loads(json.dumps(dc.to_wire(request)))
    change(wire)
    with pytest.raises(dc.PayloadError) as caught:
        DiagnosisWorkflowInput.of(wire)
    assert str(caught.value) == problem


@pytest.mark.parametrize(
    "timeouts",
    [
        {"agent_timeout_seconds": True},
        {"gatekeeper_timeout_seconds": "60"},
        {"heartbeat_timeout_seconds": math.nan},
        {"heartbeat_timeout_seconds": 0},
    ],
)
def test_a_workflow_with_bad_timeouts_refuses_every_query(timeouts: dict[str, Any]) -> None:
    request, _ = scenario_of(load_doc(PAYMENT))
    good = DiagnosisWorkflowInput.of(request)
    run = DiagnosisWorkflow(dataclasses.replace(good, **timeouts))
    for query in (run.diagnosis_state, run.diagnosis_journal):
        with pytest.raises(ApplicationError, match=next(iter(timeouts))):
            query()


def test_the_core_passes_through_the_workflow_sandbox() -> None:
    runner = diagnosis_workflow_runner()
    assert set(PASSTHROUGH_MODULES) <= runner.restrictions.passthrough_modules


async def _task_timeout(client: Client, workflow_id: str) -> float:
    """The workflow task timeout the server holds for a started run, in seconds."""
    description = await client.get_workflow_handle(workflow_id).describe()
    config = description.raw_description.execution_config
    return float(config.default_workflow_task_timeout.ToTimedelta().total_seconds())


async def test_the_host_sets_the_workflow_task_timeout_of_a_run(temporal_address: str) -> None:
    """A dead worker's workflow task waits this long for it (Temporal's default: 10 s)."""
    client = await Client.connect(temporal_address)
    queue = _queue()  # no worker: the runs stay where they were started
    request, _ = scenario_of(load_doc(PAYMENT))
    await start_diagnosis_workflow(
        client, request, task_queue=queue, workflow_id=f"{queue}-set",
        workflow_task_timeout=timedelta(seconds=4),
    )
    await start_diagnosis_workflow(client, request, task_queue=queue, workflow_id=f"{queue}-dflt")
    assert await _task_timeout(client, f"{queue}-set") == 4.0
    assert await _task_timeout(client, f"{queue}-dflt") == 10.0
    for bad in (timedelta(0), timedelta(seconds=-1)):
        for start in (start_diagnosis_workflow, execute_diagnosis):
            with pytest.raises(dc.ConfigError, match="workflow_task_timeout: expected a positive"):
                await start(
                    client, request, task_queue=queue, workflow_id=f"{queue}-bad",
                    workflow_task_timeout=bad,
                )
    assert not await _workflow_exists(client, f"{queue}-bad")
    for handle_id in (f"{queue}-set", f"{queue}-dflt"):
        await client.get_workflow_handle(handle_id).terminate("test over")
