"""No stored state is a source of truth (spec §12): ``state=`` takes only a state built here.

A state read back with ``from_json`` is for display. The drivers refuse it —
before any effect — so an edited counter or a forged answer never runs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from adapters.adapter_support import golden_result

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm
from diagnosis_core import MachineError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REFUSED = r"state: not a state the machine built in this process"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


class Counting:
    def __init__(self, effects: dc.Effects) -> None:
        self.calls = 0
        self._effects = effects

    def effects(self) -> dc.Effects:
        def wrap(name: str) -> Any:
            inner = getattr(self._effects, name)

            def call(*args: Any) -> Any:
                self.calls += 1
                return inner(*args)

            return call

        names = ("planner", "executor", "verifier", "composer", "gatekeeper")
        return attrs.evolve(self._effects, **{name: wrap(name) for name in names})


def setup() -> tuple[dc.DiagnosisRequest, Counting]:
    scenario = dc.load_scenario(load("payment_timeout.json"))
    return dc.scenario_request(scenario), Counting(dc.scenario_effects(scenario))


def after_planner(request: dc.DiagnosisRequest, effects: dc.Effects) -> dc.DiagnosisState:
    state = dcm.start_diagnosis(request)
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent)
    return dcm.advance(state, dcm.perform_effect(action, effects))


def test_a_stored_state_with_an_edited_attempt_is_refused_before_any_effect() -> None:
    request, counting = setup()
    state = after_planner(request, counting.effects())
    wire = json.loads(dc.to_json(state))
    wire["pending"]["attempt"] = -200
    forged = dc.from_json(dc.DiagnosisState, json.dumps(wire))
    before = counting.calls
    with pytest.raises(MachineError, match=REFUSED):
        dc.run_diagnosis(request, counting.effects(), state=forged)
    assert counting.calls == before


def test_a_stored_answered_state_with_an_empty_answer_is_refused() -> None:
    request, counting = setup()
    finished = dc.run_diagnosis(request, counting.effects())
    wire = json.loads(dc.to_json(finished))
    assert wire["outcome"] == "ANSWERED"
    wire["answer"] = ""
    forged = dc.from_json(dc.DiagnosisState, json.dumps(wire))
    with pytest.raises(MachineError, match=REFUSED):
        dc.run_diagnosis(request, counting.effects(), state=forged)


def test_even_an_unedited_stored_state_is_display_only() -> None:
    request, counting = setup()
    state = after_planner(request, counting.effects())
    stored = dc.from_json(dc.DiagnosisState, dc.to_json(state))
    assert stored == state  # equal for display …
    effects = counting.effects()
    with pytest.raises(MachineError, match=REFUSED):
        dc.run_diagnosis(request, effects, state=stored)
    with pytest.raises(MachineError, match=REFUSED):
        dc.iter_diagnosis(request, effects, state=stored)
    with pytest.raises(MachineError, match=REFUSED):
        dc.aiter_diagnosis(request, dc.AsyncEffects.from_sync(effects), state=stored)
    with pytest.raises(MachineError, match=REFUSED):
        asyncio.run(dc.arun_diagnosis(request, dc.AsyncEffects.from_sync(effects), state=stored))
    with pytest.raises(MachineError, match=REFUSED):  # … and so is a host's edit of a live one
        dc.run_diagnosis(request, effects, state=attrs.evolve(state, round=0))


def test_a_state_the_machine_built_here_resumes() -> None:
    request, counting = setup()
    reference = dc.run_diagnosis(*setup()[:1], setup()[1].effects())
    state = after_planner(request, counting.effects())
    resumed = dc.run_diagnosis(request, counting.effects(), state=state)
    assert dc.to_json(resumed.result) == dc.to_json(reference.result)
    assert dc.to_wire(resumed.result) == golden_result("payment_timeout")  # and it is right


def test_the_aiops_drivers_refuse_a_stored_state_too() -> None:
    document = load("aiops_payload_targeted.json")
    scenario = dca.load_aiops_scenario(document)
    request = dca.aiops_scenario_request(scenario)
    state = dcm.start_aiops(request)
    stored = dc.from_json(dca.AiOpsState, dc.to_json(state))
    effects = dca.aiops_scenario_effects(scenario)
    with pytest.raises(MachineError, match=REFUSED):
        dca.run_aiops(request, effects, state=stored)
    with pytest.raises(MachineError, match=REFUSED):
        asyncio.run(
            dca.arun_aiops(request, dca.AsyncAiOpsEffects.from_sync(effects), state=stored)
        )
    dca.run_aiops(request, effects, state=state)  # built here: accepted
