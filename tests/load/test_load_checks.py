"""The load harness's own oracle and checks, without an engine (fast lane).

The load test is only as good as what it would notice: these tests feed the
checks event logs and results that break each rule once, and run the
harness's input-keyed effects through the plain sync driver (they must give
the reference run, or every comparison of the load test would be moot).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _harness import (
    MIX,
    Event,
    EventLog,
    Finished,
    Kill,
    Run,
    WorkerEffects,
    check_runs,
    kill_to_done,
    make_plan,
    percentile,
    read_events,
    reference,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj

RUN = Run("check-000", "tooled", "payment_timeout.json")


@pytest.fixture(scope="module")
def ref() -> object:
    return reference(RUN)


def _events(*lines: str) -> list[Event]:
    events = []
    for line in lines:
        kind, at, pid, name = line.split()
        events.append(Event(kind, float(at), int(pid), RUN.run_id, name))
    return events


CLEAN = (
    "S 1 10 planner", "E 2 10 planner", "S 3 10 executor", "T 3.5 10 gateway",
    "T 3.6 10 pay-svc", "E 4 10 executor", "S 5 11 gatekeeper", "E 6 11 gatekeeper",
    "S 7 11 verifier", "E 8 11 verifier", "S 9 12 composer", "E 10 12 composer",
)


def _check(ref: object, events: list[Event], result: str, kills: list[Kill]) -> list[str]:
    done = Finished("{}", result, 20.0)
    return check_runs({RUN.run_id: ref}, {RUN.run_id: done}, events, kills)  # type: ignore[dict-item]


def test_the_uninterrupted_run_passes(ref: object) -> None:
    assert _check(ref, _events(*CLEAN), ref.result_json, []) == []  # type: ignore[attr-defined]


def test_an_unfinished_run_is_reported(ref: object) -> None:
    problems = check_runs({RUN.run_id: ref}, {}, [], [])  # type: ignore[dict-item]
    assert problems == [f"{RUN.run_id}: not finished"]


def test_a_tool_performed_twice_is_reported(ref: object) -> None:
    events = _events(*CLEAN, "T 11 12 gateway")
    problems = _check(ref, events, ref.result_json, [])  # type: ignore[attr-defined]
    assert problems == [f"{RUN.run_id}: tool calls performed twice: ['gateway']"]


def test_an_executor_sent_twice_is_reported(ref: object) -> None:
    events = _events(*CLEAN, "S 11 12 executor", "E 12 12 executor")
    problems = _check(ref, events, ref.result_json, [])  # type: ignore[attr-defined]
    assert f"{RUN.run_id}: the executor ran 2 times" in problems


def test_two_live_drivers_of_one_run_are_reported(ref: object) -> None:
    events = _events(*CLEAN[:-2], "S 7.5 13 verifier", "E 8.5 13 verifier", *CLEAN[-2:])
    problems = _check(ref, events, ref.result_json, [])  # type: ignore[attr-defined]
    assert any("two live drivers" in problem for problem in problems), problems


def test_an_effect_of_a_killed_worker_ends_at_its_kill(ref: object) -> None:
    # The verifier on pid 11 was cut by the kill at 7.5; pid 13 re-sent it after.
    events = _events(*CLEAN[:-4], "S 7 11 verifier", "S 8 13 verifier", "E 9 13 verifier",
                     *CLEAN[-2:])
    kills = [Kill(7.5, 1, 11)]
    assert _check(ref, events, ref.result_json, kills) == []  # type: ignore[attr-defined]
    assert _check(ref, events, ref.result_json, []) != []  # type: ignore[attr-defined]
    finished = {RUN.run_id: Finished("{}", "", 20.0)}
    assert kill_to_done(finished, events, kills) == [12.5]


def test_a_fail_closed_outcome_needs_a_kill_that_cut_that_call(ref: object) -> None:
    (failed,) = [text for text, call in ref.fail_closed.items() if call == "executor"]  # type: ignore[attr-defined]
    assert '"reason_code":"EXECUTOR_FAILED"' in failed
    events = _events("S 1 10 planner", "E 2 10 planner", "S 3 10 executor", "T 3.5 10 gateway")
    assert _check(ref, events, failed, [Kill(3.7, 0, 10)]) == []
    problems = _check(ref, events, failed, [])
    assert problems == [
        f"{RUN.run_id}: the fail-closed outcome of an interrupted executor, "
        "but no kill cut a executor"
    ]


def test_any_other_result_is_reported(ref: object) -> None:
    problems = _check(ref, _events(*CLEAN), '{"answer":"something else"}', [])
    assert len(problems) == 1 and "unexpected result" in problems[0]


def test_percentiles_are_of_the_values() -> None:
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([float(n) for n in range(1, 101)], 0.5) == pytest.approx(50.5, abs=0.5)


@pytest.mark.parametrize("kind_example", MIX, ids=[f"{k}-{e}" for k, e in MIX])
def test_the_input_keyed_effects_give_the_reference_run(
    tmp_path: Path, kind_example: tuple[str, str]
) -> None:
    run = Run("keyed-000", *kind_example)
    effects = WorkerEffects([run], EventLog(tmp_path / "events-1.log"), seed=1)
    if run.aiops:
        request = dca.aiops_scenario_request(dca.load_aiops_scenario(run.doc()))
        state: object = dca.run_aiops(request, effects.aiops(), observer=effects.attempts)
    else:
        request = dc.scenario_request(dc.load_scenario(run.doc()))
        recorder = effects.recorders(run.run_id, [])
        state = dc.run_diagnosis(
            request, effects.chat(), observer=effects.attempts, tools=recorder,
            sink=dcj.ListJournalSink(),
        )
    assert dc.to_json(state.result) == reference(run).result_json  # type: ignore[attr-defined]
    events = read_events(tmp_path)
    assert events and {e.kind for e in events} <= {"S", "E", "T"}


def test_a_plan_mixes_chat_tools_and_aiops() -> None:
    kinds = {run.kind for run in make_plan("p", 30)}
    assert kinds == {"chat", "tooled", "aiops"}
