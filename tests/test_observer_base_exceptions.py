"""Observers only watch, even when a hook raises a ``BaseException`` (spec §12.5).

``KeyboardInterrupt``, ``SystemExit`` and ``GeneratorExit`` from a hook still
stop the run (Ctrl-C works), but no hook runs between a journal's ``started``
entry and its effect: the journal left behind never holds a ``started`` entry
for an effect that was not performed, so resuming it never reports an
interruption that did not happen (the executor's would end ``EXECUTOR_FAILED``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct
from diagnosis_core.journal import EntryState

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HOOKS = ("run_opened", "effect_started", "tools_recorded", "effect_finished", "event_appended")
EXCEPTIONS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def setup() -> tuple[dc.DiagnosisRequest, dc.Effects]:
    document: dict[str, Any] = json.loads(
        (EXAMPLES / "redis_latency_evidence_retry.json").read_text(encoding="utf-8")
    )
    scenario = dc.load_scenario(document)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


class Performed:
    """Effects that log each effect as it is performed (by the action's name and round)."""

    def __init__(self, effects: dc.Effects) -> None:
        self.log: list[str] = []
        self.inner = effects

    def effects(self) -> dc.Effects:
        def agent(name: str) -> dc.AgentInvoker:
            def call(input: str, config: dc.RunConfig, /) -> str:
                self.log.append(name)
                invoker: dc.AgentInvoker = getattr(self.inner, name)
                return invoker(input, config)

            return call

        def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
            self.log.append("gatekeeper")
            return self.inner.gatekeeper(run_id, output)

        return dc.Effects(
            planner=agent("planner"), executor=agent("executor"), verifier=agent("verifier"),
            composer=agent("composer"), gatekeeper=gatekeeper,
        )


class Stopping:
    """An observer whose ``hook`` raises ``error`` the first time it sees the executor's effect.

    ``run_opened`` and ``event_appended`` name no effect: they raise on their first call.
    """

    def __init__(self, hook: str, error: type[BaseException]) -> None:
        self.hook, self.error, self.raised = hook, error, False

    def _maybe(self, hook: str, action: object = None) -> None:
        if hook != self.hook or self.raised:
            return
        if action is not None and not (
            isinstance(action, dcm.InvokeAgent) and action.agent is dcm.AgentName.EXECUTOR
        ):
            return
        self.raised = True
        raise self.error("stop")

    def run_opened(self, run: object, /) -> None:
        self._maybe("run_opened")

    def effect_started(self, action: object, /) -> None:
        self._maybe("effect_started", action)

    def tools_recorded(self, action: object, invocations: object, /) -> None:
        self._maybe("tools_recorded", action)

    def effect_finished(self, action: object, result: object, /) -> None:
        self._maybe("effect_finished", action)

    def event_appended(self, event: object, /) -> None:
        self._maybe("event_appended")


def _name(entry: dcj.JournalEntry) -> str:
    return "gatekeeper" if entry.call is dcj.JournalCall.GATEKEEPER else entry.call.value


@pytest.mark.parametrize("error", EXCEPTIONS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("hook", HOOKS)
def test_a_hook_raising_a_base_exception_stops_the_run_and_leaves_no_false_interruption(
    hook: str, error: type[BaseException]
) -> None:
    request, plain = setup()
    expected = dc.to_json(dc.run_diagnosis(request, plain).result)
    request, scripted = setup()
    performed = Performed(scripted)
    sink = dcj.ListJournalSink()
    observer = Stopping(hook, error)
    with pytest.raises(error):
        dc.run_diagnosis(
            request, performed.effects(), sink=sink, tools=dct.ToolRecorder(), observer=observer
        )
    assert observer.raised
    entries = sink.journal(request).entries
    # Each entry (a finished one, or the started one an interruption leaves last) is
    # an effect that was performed, and each performed effect has its entry.
    assert [_name(entry) for entry in entries] == performed.log
    assert all(entry.state is EntryState.FINISHED for entry in entries[:-1])
    # Resumed (the scripted agents go on from where they were), the run ends as if
    # never stopped: no effect is reported interrupted, none is performed twice.
    resumed = dc.run_diagnosis(
        request, performed.effects(), journal=sink.journal(request), sink=sink,
        tools=dct.ToolRecorder(),
    )
    assert resumed.result.reason_code is not dc.ReasonCode.EXECUTOR_FAILED
    assert dc.to_json(resumed.result) == expected
    assert [_name(entry) for entry in sink.journal(request).entries] == performed.log


@pytest.mark.parametrize("error", EXCEPTIONS, ids=lambda e: e.__name__)
def test_effect_started_is_called_before_the_started_entry(error: type[BaseException]) -> None:
    request, scripted = setup()
    performed = Performed(scripted)
    sink = dcj.ListJournalSink()
    with pytest.raises(error):
        dc.run_diagnosis(
            request, performed.effects(), sink=sink, observer=Stopping("effect_started", error)
        )
    entries = sink.journal(request).entries
    assert all(entry.state is EntryState.FINISHED for entry in entries)
    assert "executor" not in performed.log
    assert [entry.call for entry in entries] == [dcj.JournalCall.PLANNER]


@pytest.mark.parametrize("error", EXCEPTIONS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("hook", ["effect_started", "tools_recorded", "effect_finished"])
def test_the_aiops_drivers_leave_no_false_interruption_either(
    hook: str, error: type[BaseException]
) -> None:
    path = sorted(EXAMPLES.glob("aiops*.json"))[0]
    scenario = dca.load_aiops_scenario(json.loads(path.read_text(encoding="utf-8")))
    request = dca.aiops_scenario_request(scenario)
    expected = dc.to_json(dca.run_aiops(request, dca.aiops_scenario_effects(scenario)).result)
    scripted = dca.aiops_scenario_effects(scenario)
    log: list[str] = []

    def agent(name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            log.append(name)
            invoker: dc.AgentInvoker = getattr(scripted, name)
            return invoker(input, config)

        return call

    effects = dca.AiOpsEffects(**{a.value: agent(a.value) for a in dcm.AiOpsAgent})

    class Stop:
        raised = False

        def _maybe(self, name: str, action: dcm.InvokeAiOpsAgent) -> None:
            if name == hook and not self.raised and action.agent is dcm.AiOpsAgent.EXECUTOR:
                self.raised = True
                raise error("stop")

        def effect_started(self, action: dcm.InvokeAiOpsAgent, /) -> None:
            self._maybe("effect_started", action)

        def tools_recorded(self, action: dcm.InvokeAiOpsAgent, invocations: object, /) -> None:
            self._maybe("tools_recorded", action)

        def effect_finished(self, action: dcm.InvokeAiOpsAgent, result: object, /) -> None:
            self._maybe("effect_finished", action)

    sink = dcj.ListAiOpsJournalSink()
    stop = Stop()
    with pytest.raises(error):
        dca.run_aiops(request, effects, sink=sink, tools=dct.ToolRecorder(), observer=stop)
    assert stop.raised
    assert [entry.call.value for entry in sink.journal(request).entries] == log
    resumed = dca.run_aiops(
        request, effects, journal=sink.journal(request), sink=sink, tools=dct.ToolRecorder()
    )
    assert dc.to_json(resumed.result) == expected
    assert [entry.call.value for entry in sink.journal(request).entries] == log
