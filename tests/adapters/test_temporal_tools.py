"""Temporal: the tool ledger travels with the workflow's journal (spec §13) and observers.

The recorder lives in no worker's memory: every executor and gatekeeper
activity rebuilds the run's recorder from the ledger the workflow's journal
holds, so a gatekeeper on any worker — a new one after a kill — reads the
whole ledger, and the executor's entry carries the tool calls of its call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("temporalio")

from temporalio.client import Client
from temporalio.testing import ActivityEnvironment
from tools_support import reference_tooled_state, tooled_effects

import diagnosis_core as dc
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct
from diagnosis_core import JsonValue
from diagnosis_core.adapters._engine import CHAT
from diagnosis_core.adapters.temporal import (
    DiagnosisActivities,
    DiagnosisWorkflow,
    create_diagnosis_worker,
    start_diagnosis_workflow,
)
from tests._reach import journal as dcj


class Seeding(dct.RunRecorders):
    """RunRecorders that note the invocation ids each recorder was seeded with."""

    def __init__(self) -> None:
        super().__init__()
        self.seeded: list[list[str]] = []

    def __call__(self, run_id: str, records: Sequence[dict[str, JsonValue]], /) -> dct.ToolRecorder:
        self.seeded.append([str(record["invocation_id"]) for record in records])
        return super().__call__(run_id, records)


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def effect_started(self, action: object, /) -> None:
        self.calls.append(("effect_started", json.dumps(dc.to_wire(action), sort_keys=True)))

    def effect_finished(self, action: object, result: object, /) -> None:
        self.calls.append(("effect_finished", type(result).__name__))


async def test_the_executor_entry_carries_its_tools_and_the_gatekeeper_reads_the_journal(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    queue = f"diagnosis-tools-{uuid.uuid4()}"
    recorders = Seeding()
    request, effects = tooled_effects(recorders)
    observer = Recording()
    async with create_diagnosis_worker(
        client, effects, task_queue=queue, tools=recorders, observer=observer
    ):
        handle = await start_diagnosis_workflow(client, request, task_queue=queue)
        state = dc.from_wire(dc.DiagnosisState, await handle.result())
        journal = dcj.Journal.load(await handle.query(DiagnosisWorkflow.diagnosis_journal))
    assert state.result.outcome is dc.Outcome.ANSWERED
    assert dc.to_json(state) == dc.to_json(reference_tooled_state())
    assert dc.to_json(dcj.fold_journal(journal)) == dc.to_json(state)
    executor = [e for e in journal.entries if e.call is dcj.JournalCall.EXECUTOR]
    assert [[i.invocation_id for i in e.tool_invocations or ()] for e in executor] == [
        ["inv-1", "inv-2"]
    ]
    # The executor's recorder started empty; the gatekeeper's was rebuilt from the journal.
    assert recorders.seeded == [[], ["inv-1", "inv-2"]]
    started = [json.loads(text) for hook, text in observer.calls if hook == "effect_started"]
    assert [a.get("agent", "gatekeeper") for a in started] == [
        "planner", "executor", "gatekeeper", "verifier", "composer",
    ]
    assert [hook for hook, _ in observer.calls] == ["effect_started", "effect_finished"] * 5


def _actions(recorders: dct.RunRecorders) -> tuple[dcm.InvokeAgent, dc.Effects, Any]:
    request, effects = tooled_effects(recorders)
    state = dcm.start_diagnosis(request)
    state = dcm.advance(state, dcm.AgentReplied(effects.planner(
        dcm.next_action(state).input, request.run)))  # type: ignore[union-attr]
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent) and action.agent is dcm.AgentName.EXECUTOR
    return action, effects, state


async def test_a_gatekeeper_activity_on_a_fresh_worker_reads_the_ledger_it_is_given() -> None:
    first = dct.RunRecorders()
    action, effects, state = _actions(first)
    activities = DiagnosisActivities(effects, tools=first)
    data = await ActivityEnvironment().run(
        activities.invoke_agent, dc.to_wire(action), []  # type: ignore[arg-type]
    )
    records = data["tool_invocations"]
    assert [r["invocation_id"] for r in records] == ["inv-1", "inv-2"]
    expected = dcj.expected_call(action)
    outcome, invocations, _ = CHAT.recorded(data, expected)
    assert invocations is not None and len(invocations) == 2
    assert isinstance(outcome, dcj.RecordedReply)
    state = dcm.advance(state, dcm.AgentReplied(outcome.text))
    call = dcm.next_action(state)
    assert isinstance(call, dcm.CallGatekeeper)

    fresh = dct.RunRecorders()  # another worker: nothing of the first in memory
    _, fresh_effects, _ = _actions(fresh)
    gatekeeper = DiagnosisActivities(fresh_effects, tools=fresh)
    honest = await ActivityEnvironment().run(
        gatekeeper.call_gatekeeper, dc.to_wire(call), records  # type: ignore[arg-type]
    )
    assert honest["outcome"]["result"]["status"] == "pass"
    empty = await ActivityEnvironment().run(
        gatekeeper.call_gatekeeper, dc.to_wire(call), []  # type: ignore[arg-type]
    )
    assert empty["outcome"]["result"]["status"] == "fail"  # the bug an empty ledger causes


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.update(tool_invocations=[{"invocation_id": "x"}]), "tool_invocations"),
        (lambda d: d.update(tool_invocations="no"), "tool_invocations"),
        (lambda d: d.update(extra=1), "not the recorded facts of an effect"),
    ],
)
def test_an_activity_result_with_malformed_tool_calls_is_refused(change: Any, problem: str) -> None:
    action, _, _ = _actions(dct.RunRecorders())
    expected = dcj.expected_call(action)
    data: dict[str, Any] = {"input_sha256": expected.input_sha256,
                            "outcome": dcj.outcome_to_wire(dcj.RecordedReply("x"))}
    change(data)
    with pytest.raises(dc.JournalError, match=problem):
        CHAT.recorded(data, expected)


def test_tool_calls_on_a_gatekeeper_result_are_refused() -> None:
    gatekeeper = dcj.ExpectedCall(dcj.JournalCall.GATEKEEPER, 1, 1, "0" * 64)
    data: dict[str, Any] = {"input_sha256": "0" * 64, "tool_invocations": [],
                            "outcome": {"result": "{}"}}
    with pytest.raises(dc.JournalError, match="only executor calls record tool calls"):
        CHAT.recorded(data, gatekeeper)
