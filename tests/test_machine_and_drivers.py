"""The sans-IO machine's contract, the drivers, determinism and the step bound."""

from __future__ import annotations

import asyncio
import glob
import json
from pathlib import Path
from typing import Any

import pytest
from _builders import error, scenario, text
from adapters.adapter_support import golden_result

import diagnosis_core as dc
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp

EXAMPLES = sorted(glob.glob(str(Path(__file__).parent.parent / "examples" / "*.json")))
CHAT_EXAMPLES = [p for p in EXAMPLES if not Path(p).name.startswith("aiops")]


def request() -> dc.DiagnosisRequest:
    return dc.DiagnosisRequest("why?", dc.RunConfig("run-x", "chat-x"))


def test_advancing_a_finished_run_is_a_machine_error() -> None:
    state = dc.replay_scenario(dc.load_scenario(scenario()))
    assert state.finished
    with pytest.raises(dc.MachineError, match="finished"):
        dcm.advance(state, dcm.AgentReplied("{}"))
    assert isinstance(dcm.next_action(state), dcm.Finished)


def test_a_result_that_does_not_answer_the_pending_action_is_a_machine_error() -> None:
    state = dcm.start_diagnosis(request())
    with pytest.raises(dc.MachineError, match="planner"):
        dcm.advance(state, dcm.GatekeeperReturned({"status": "pass"}))


def test_an_agent_result_while_the_gatekeeper_is_pending_is_a_machine_error() -> None:
    doc = scenario()
    sc = dc.load_scenario(doc)
    effects = dc.scenario_effects(sc)
    state = dcm.start_diagnosis(dc.scenario_request(sc))
    while not isinstance(dcm.next_action(state), dcm.CallGatekeeper):
        action = dcm.next_action(state)
        assert isinstance(action, dcm.InvokeAgent)
        state = dcm.advance(state, dcm.perform_effect(action, effects))
    with pytest.raises(dc.MachineError, match="gatekeeper"):
        dcm.advance(state, dcm.AgentReplied("x"))


def test_result_of_unfinished_run_is_a_machine_error() -> None:
    with pytest.raises(dc.MachineError, match=r"^the run has not finished yet$"):
        _ = dcm.start_diagnosis(request()).result


def test_a_state_that_awaits_nothing_is_rejected() -> None:
    awaits_nothing = r"^the state awaits nothing; it was not produced by this machine$"
    with pytest.raises(dc.MachineError, match=awaits_nothing):
        dcm.next_action(dc.DiagnosisState(request=request()))
    with pytest.raises(dc.MachineError, match=awaits_nothing):
        dcm.advance(dc.DiagnosisState(request=request()), dcm.AgentReplied("x"))


def test_a_non_string_reply_is_a_machine_error_not_a_crash() -> None:
    state = dcm.start_diagnosis(request())
    with pytest.raises(dc.MachineError, match=r"AgentReplied\.text: .* got NoneType"):
        dcm.advance(state, dcm.AgentReplied(None))  # type: ignore[arg-type]


def test_the_action_carries_the_run_config() -> None:
    run = dc.RunConfig("r-1", "s-1", {"tenant": "eu"})
    action = dcm.next_action(dcm.start_diagnosis(dc.DiagnosisRequest("q", run)))
    assert isinstance(action, dcm.InvokeAgent)
    assert action.config == run
    assert dict(action.config.metadata) == {"tenant": "eu"}


def test_request_rejects_items_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="history"):
        dc.DiagnosisRequest("q", dc.RunConfig("r", "s"), history=({"role": "u"},))  # type: ignore[arg-type]


def test_default_config_step_bound_is_sixteen() -> None:
    assert dc.DiagnosisConfig().max_node_executions == 16
    assert dc.DiagnosisConfig(technical_retry_limit=0).max_node_executions == 12


def test_worst_case_run_stays_within_the_bound() -> None:
    from _builders import executor, gap_fact, gatekeeper_for, verifier

    ex = executor()
    low = text(verifier("LOW_CONFID", facts=[gap_fact()]))
    doc = scenario(
        planner=[error("retryable"), text({"steps": [{"step_id": "s", "goal": "g"}]})],
        executor_=[text(ex), text(ex)],
        verifier_=[error("retryable"), low, error("retryable"), low],
        composer_=[error("retryable"), error("retryable")],
        gatekeeper=[{"result": gatekeeper_for(ex)}] * 2,
    )
    result = dc.replay(doc)
    assert len(result["trace"]) == dc.DiagnosisConfig().max_node_executions
    assert result["outcome"] == "POST_VERIFICATION_FALLBACK"


@pytest.mark.parametrize("path", CHAT_EXAMPLES, ids=lambda p: Path(p).stem)
def test_same_scenario_replayed_twice_gives_byte_identical_json(path: str) -> None:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    first = dcp.canonical_json(dc.replay(doc))
    second = dcp.canonical_json(dc.replay(json.loads(Path(path).read_text(encoding="utf-8"))))
    assert first == second
    result = json.loads(first)
    assert (result["outcome"], result["reason_code"]) == EXAMPLE_OUTCOMES[Path(path).stem]


EXAMPLE_OUTCOMES = {
    "composer_fails_twice": ("POST_VERIFICATION_FALLBACK", "COMPOSER_FAILED"),
    "db_pool_forged_citations": ("PRE_VERIFICATION_FALLBACK", "GATEKEEPER_REJECTED"),
    "payment_timeout": ("ANSWERED", None),
    "redis_latency_evidence_retry": ("ANSWERED", None),
    "tool_ledger_reference_gatekeeper": ("ANSWERED", None),
    "zh_cn_gatekeeper_unavailable": ("PRE_VERIFICATION_FALLBACK", "GATEKEEPER_UNAVAILABLE"),
}
"""What each chat example ends in (the getting-started table of the docs)."""


@pytest.mark.parametrize("path", CHAT_EXAMPLES, ids=lambda p: Path(p).stem)
def test_sync_and_async_drivers_agree_on_every_example(path: str) -> None:
    sc = dc.load_scenario(json.loads(Path(path).read_text(encoding="utf-8")))
    sync_state = dc.run_diagnosis(dc.scenario_request(sc), dc.scenario_effects(sc))
    async_effects = dc.AsyncEffects.from_sync(dc.scenario_effects(sc))
    async_state = asyncio.run(dc.arun_diagnosis(dc.scenario_request(sc), async_effects))
    assert dc.to_json(sync_state.result) == dc.to_json(async_state.result)
    assert sync_state == async_state
    # Both are the result the golden corpus holds, not merely the same one.
    assert dc.to_wire(async_state.result) == golden_result(Path(path).stem)


def test_drivers_continue_from_a_state_built_here_and_refuse_a_saved_one() -> None:
    sc = dc.load_scenario(scenario())
    effects = dc.scenario_effects(sc)
    state = dcm.start_diagnosis(dc.scenario_request(sc))
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent)
    state = dcm.advance(state, dcm.perform_effect(action, effects))
    saved = dc.from_json(dc.DiagnosisState, dc.to_json(state))
    with pytest.raises(dc.MachineError, match="not a state the machine built"):
        dc.run_diagnosis(dc.scenario_request(sc), effects, state=saved)  # display-only (§12)
    resumed = dc.run_diagnosis(dc.scenario_request(sc), effects, state=state)
    assert resumed.result.outcome is dc.Outcome.ANSWERED
    assert resumed.calls.planner == 1


class _Broken(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


def test_drivers_turn_effect_exceptions_into_results() -> None:
    def planner(input: str, config: dc.RunConfig) -> str:
        raise _Broken()

    def never(input: str, config: dc.RunConfig) -> str:
        raise AssertionError("not reached")

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence) -> object:
        raise AssertionError("not reached")

    effects = dc.Effects(planner, never, never, never, gatekeeper)
    state = dc.run_diagnosis(request(), effects)
    assert state.result.reason_code is dc.ReasonCode.PLANNER_FAILED
    assert state.events[0].details.error == "_Broken: <unprintable>"


def test_a_raising_classifier_counts_as_non_retryable() -> None:
    calls: list[str] = []

    def planner(input: str, config: dc.RunConfig) -> str:
        calls.append(input)
        raise TimeoutError("slow")

    def classifier(error: BaseException) -> dc.FailureKind:
        raise ValueError("classifier bug")

    def unused(*args: object) -> str:
        raise AssertionError

    effects = dc.Effects(planner, unused, unused, unused, unused, classifier=classifier)
    state = dc.run_diagnosis(request(), effects)
    assert len(calls) == 1
    assert state.events[0].status is dcm.NodeStatus.NON_RETRYABLE_FAILED


def test_async_driver_propagates_cancellation() -> None:
    async def planner(input: str, config: dc.RunConfig) -> str:
        raise asyncio.CancelledError

    async def unused(*args: object) -> str:
        raise AssertionError

    effects = dc.AsyncEffects(planner, unused, unused, unused, unused)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(dc.arun_diagnosis(request(), effects))


def test_trace_report_aggregates_the_run_and_serializes_in_one_call() -> None:
    state = dc.replay_scenario(dc.load_scenario(scenario()))
    report = dc.build_trace_report(state)
    wire: dict[str, Any] = json.loads(dc.to_json(report))
    assert wire["run_id"] == "run-1" and wire["session_id"] == "chat-42"
    assert wire["question"] == "Payment API times out since 10:00, why?"
    assert wire["outcome"] == "ANSWERED"
    assert wire["answer"] == state.result.answer
    (audit,) = wire["gatekeeper_audits"]
    assert audit["raw_result"]["status"] == "pass"
    assert audit["status"] == "PASS" and audit["round"] == 1
    (evaluation,) = wire["verifier_evaluations"]
    assert evaluation["model_verdict"] == "PASS" and evaluation["effective_verdict"] == "PASS"
    assert dc.from_json(dc.TraceReport, dc.to_json(report)) == report


def test_unserializable_raw_gatekeeper_result_is_audited_by_its_repr() -> None:
    state = dcm.start_diagnosis(dc.scenario_request(dc.load_scenario(scenario())))
    effects = dc.scenario_effects(dc.load_scenario(scenario()))
    while not isinstance(dcm.next_action(state), dcm.CallGatekeeper):
        action = dcm.next_action(state)
        assert isinstance(action, dcm.InvokeAgent)
        state = dcm.advance(state, dcm.perform_effect(action, effects))
    cyclic: dict[str, Any] = {"status": "pass"}
    cyclic["self"] = cyclic
    state = dcm.advance(state, dcm.GatekeeperReturned(cyclic))
    audit = state.gatekeeper_audits[-1]
    assert audit.raw_result is not None
    assert "unserializable" in json.loads(audit.raw_result.json_text)
    assert dc.from_json(dc.DiagnosisState, dc.to_json(state)) == state


def test_gatekeeper_event_details_carry_raw_and_normalized_status() -> None:
    result = dc.replay(scenario())
    details = result["trace"][2]["details"]
    assert details == {
        "raw_status": "pass", "status": "PASS", "checked": 1, "passed": 1, "failed": 0,
        "trusted_bindings": 1,
    }
    assert result["trace"][0]["details"] == {}
    verifier_details = result["trace"][4]["details"]
    assert set(verifier_details) == {
        "model_verdict", "effective_verdict", "ceiling", "groundedness_score",
        "unknown_claim_ids",
    }
