"""Invariants of the AIOps flow, property-tested.

* termination: for any scripted replies and errors, every run ends within the
  step budget and the node bound, with a report or a non-empty fallback; the
  executor is never retried and a technical retry re-sends identical input;
* determinism: the same scenario gives byte-identical JSON;
* the rule evaluator never raises, whatever the report (typed, raw, junk);
* round trip: a finished state survives unstructure → JSON → structure;
* whitelist by field (spec §15): host subclasses of ``Alert`` with extra
  fields send exactly the inputs the plain alerts send.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnosis_core import Locale, RunConfig, ToolInvocation, ToolLedger, from_wire, to_wire
from diagnosis_core._aiops.config import NO_PROGRESS_REPEATS
from diagnosis_core.aiops import (
    AIOPS_RULES,
    AiOpsConfig,
    AiOpsEffects,
    AiOpsMode,
    AiOpsOutcome,
    AiOpsRequest,
    AiOpsRuleEvaluation,
    AiOpsState,
    evaluate_aiops_report,
    replay_aiops,
    run_aiops,
)
from diagnosis_core.machine import AiOpsAgent, AiOpsNode
from diagnosis_core.protocol import (
    AiOpsEvidence,
    AiOpsFinding,
    AiOpsRecommendedAction,
    AiOpsReport,
    Alert,
    canonical_json,
)
from diagnosis_core.scenarios import ScriptedAgent, ScriptedResponse
from diagnosis_core.testing._values import host_subclassed

IDS = ("inv-1", "inv-2", "inv-3", "inv-4")
NAMES = ("HighLatency", "PodRestarts", "DiskFull")
SERVICES = ("pay-svc", "order-svc")
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

small_text = st.text(max_size=24)
names = st.sampled_from(NAMES) | small_text
services = st.sampled_from(SERVICES) | small_text
ids = st.lists(st.sampled_from(IDS) | small_text, max_size=3)

alerts = st.builds(
    Alert,
    name=st.sampled_from(NAMES),
    service=st.sampled_from(SERVICES),
    severity=st.sampled_from(("critical", "warning", " Critical ", "")),
    started_at=st.just("2024-05-01T10:00:00Z"),
    labels=st.dictionaries(st.sampled_from(("env", "region")), small_text, max_size=2),
    annotations=st.dictionaries(
        st.sampled_from(("summary", "description", "runbook_url")), small_text, max_size=2
    ),
)
alert_lists = st.lists(alerts, max_size=3).map(tuple)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


decisions = st.builds(
    lambda choice, reason: _json({"next": choice, "reason": reason}),
    st.sampled_from(("planner_agent", "executor_agent", "FINISH", "finish")),
    small_text,
)
plans = st.builds(
    lambda goals: _json({"steps": [{"step_id": f"s{i}", "goal": g} for i, g in enumerate(goals)]}),
    st.lists(st.sampled_from(("check p99", "read logs", " ")), max_size=3),
)
executor_outputs = st.builds(
    lambda reported, cited: _json(
        {
            "findings": [{"text": "finding", "cited_invocation_ids": cited}] if cited else [],
            "tool_invocation_ids": reported,
        }
    ),
    st.lists(st.sampled_from(IDS), max_size=3, unique=True),
    st.lists(st.sampled_from(IDS), max_size=2),
)
raw_findings = st.fixed_dictionaries(
    {"alert_name": names, "service": services, "text": small_text, "cited_invocation_ids": ids}
)
raw_evidence = st.fixed_dictionaries({"text": small_text, "cited_invocation_ids": ids})
raw_actions = st.fixed_dictionaries(
    {"text": small_text},
    optional={"alert_name": st.sampled_from(NAMES), "service": st.sampled_from(SERVICES)},
)
raw_reports = st.fixed_dictionaries(
    {
        "summary": small_text,
        "findings": st.lists(raw_findings, max_size=3),
        "evidence": st.lists(raw_evidence, max_size=2),
        "recommended_actions": st.lists(raw_actions, max_size=2),
    }
)
errors = st.sampled_from(("retryable", "non_retryable", "tool_blocked", "unknown"))
replies = st.one_of(
    decisions.map(lambda text: {"text": text}),
    plans.map(lambda text: {"text": text}),
    executor_outputs.map(lambda text: {"text": text}),
    raw_reports.map(lambda report: {"text": _json(report)}),
    st.text(max_size=40).map(lambda text: {"text": text}),
    errors.map(lambda kind: {"error": {"kind": kind, "message": "scripted"}}),
)


valid_decisions = st.sampled_from(("planner_agent", "executor_agent") * 2 + ("FINISH",)).map(
    lambda choice: _json({"next": choice, "reason": "r"})
)
valid_plans = st.lists(st.sampled_from(("check p99", "read logs")), min_size=1, max_size=2).map(
    lambda goals: _json({"steps": [{"step_id": f"s{i}", "goal": g} for i, g in enumerate(goals)]})
)
valid_executor_outputs = (
    st.lists(st.sampled_from(IDS), max_size=2, unique=True)
    .flatmap(
        lambda reported: st.tuples(
            st.just(reported), st.lists(st.sampled_from(reported)) if reported else st.just([])
        )
    )
    .map(
        lambda pair: _json(
            {
                "findings": [{"text": "f", "cited_invocation_ids": pair[1][:2]}],
                "tool_invocation_ids": pair[0],
            }
        )
    )
)
valid_reports = st.fixed_dictionaries(
    {
        "summary": st.sampled_from(("", "summary")),
        "findings": st.lists(
            st.fixed_dictionaries(
                {
                    "alert_name": st.sampled_from(NAMES),
                    "service": st.sampled_from(SERVICES),
                    "text": st.just("finding"),
                    "cited_invocation_ids": st.lists(st.sampled_from(IDS), max_size=2),
                }
            ),
            max_size=3,
        ),
        "evidence": st.lists(
            st.fixed_dictionaries(
                {
                    "text": st.just("e"),
                    "cited_invocation_ids": st.lists(st.sampled_from(IDS), min_size=1, max_size=2),
                }
            ),
            max_size=2,
        ),
        "recommended_actions": st.lists(
            raw_actions.map(lambda a: {**a, "text": "act"}).filter(
                lambda a: ("alert_name" in a) == ("service" in a)
            ),
            max_size=2,
        ),
    }
).map(_json)


def _mostly(
    valid: st.SearchStrategy[str], min_size: int, max_size: int, noise: int = 4
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Replies of which about one in ``noise`` is arbitrary, so runs get deep enough to
    reach every guard."""
    reply = st.integers(0, noise - 1).flatmap(
        lambda roll: replies if roll == noise - 1 else valid.map(lambda text: {"text": text})
    )
    return st.lists(reply, min_size=min_size, max_size=max_size)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    alert_payload = draw(alert_lists)
    return {
        "workflow": "aiops",
        "run": {"run_id": "aiops-prop", "session_id": "ops"},
        "alerts": [to_wire(alert) for alert in alert_payload],
        "config": {
            "technical_retry_limit": draw(st.integers(0, 3)),
            "max_supervisor_steps": draw(st.integers(1, 6)),
            "locale": draw(st.sampled_from([locale.value for locale in Locale])),
        },
        "responses": {
            "supervisor": draw(_mostly(valid_decisions, 6, 10, noise=10)),
            "planner": draw(_mostly(valid_plans, 1, 3)),
            "executor": draw(_mostly(valid_executor_outputs, 2, 5)),
            "reporter": draw(_mostly(valid_reports, 1, 3)),
        },
        "tool_ledger": [
            {"invocation_id": value, "tool_name": "query_logs", "success": index != 2, "output": {}}
            for index, value in enumerate(IDS[: draw(st.integers(0, len(IDS)))])
        ],
    }


def _scripted(entries: list[dict[str, Any]]) -> ScriptedAgent:
    responses = [
        ScriptedResponse(text=entry["text"])
        if "text" in entry
        else ScriptedResponse(error_kind=entry["error"]["kind"], error_message="scripted")
        for entry in entries
    ]
    return ScriptedAgent(responses)


def _run(scenario: dict[str, Any]) -> AiOpsState:
    config = AiOpsConfig(**scenario["config"])
    request = AiOpsRequest(
        RunConfig("aiops-prop", "ops"),
        tuple(from_wire(Alert, alert) for alert in scenario["alerts"]),
        config,
    )
    agents = {agent: _scripted(scenario["responses"][agent.value]) for agent in AiOpsAgent}
    return run_aiops(
        request,
        AiOpsEffects(
            supervisor=agents[AiOpsAgent.SUPERVISOR],
            planner=agents[AiOpsAgent.PLANNER],
            executor=agents[AiOpsAgent.EXECUTOR],
            reporter=agents[AiOpsAgent.REPORTER],
        ),
    )


@SETTINGS
@given(scenarios())
def test_every_run_ends_within_the_step_budget(scenario: dict[str, Any]) -> None:
    state = _run(scenario)
    config = state.request.config
    attempts = config.technical_retry_limit + 1
    assert state.finished
    assert 1 <= state.step <= config.max_supervisor_steps
    assert len(state.decisions) <= config.max_supervisor_steps
    assert state.calls.supervisor <= config.max_supervisor_steps * attempts
    assert len(state.events) <= config.max_node_executions
    if state.outcome is AiOpsOutcome.REPORTED:
        assert state.report is not None and state.fallback is None
    else:
        assert state.report is None and state.fallback and state.fallback.strip()
        assert state.events[-1].node is AiOpsNode.FALLBACK
    # The no-progress guard: never a fourth repeat, and a third one ends the run.
    repeats = [event.details.repeats or 0 for event in state.events]
    assert max(repeats, default=0) <= NO_PROGRESS_REPEATS
    if NO_PROGRESS_REPEATS in repeats:
        assert repeats.index(NO_PROGRESS_REPEATS) == len(repeats) - 2
    # The executor is never retried; a retry re-sends the identical input.
    previous: dict[AiOpsAgent, str] = {}
    for record in state.invocations:
        if record.agent is AiOpsAgent.EXECUTOR:
            assert record.attempt == 1
        if record.attempt > 1:
            assert record.input == previous[record.agent]
        previous[record.agent] = record.input
    assert [event.seq for event in state.events] == list(range(1, len(state.events) + 1))


@SETTINGS
@given(scenarios())
def test_finished_states_round_trip_through_json(scenario: dict[str, Any]) -> None:
    state = _run(scenario)
    assert from_wire(AiOpsState, json.loads(canonical_json(to_wire(state)))) == state


@SETTINGS
@given(scenarios())
def test_replay_is_byte_identical(scenario: dict[str, Any]) -> None:
    first = canonical_json(replay_aiops(scenario))
    assert canonical_json(replay_aiops(json.loads(_json(scenario)))) == first


# --- the evaluator never raises ----------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | small_text,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ("summary", "findings", "evidence", "recommended_actions", "text", "alert_name")
            )
            | small_text,
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)
typed_reports = st.builds(
    AiOpsReport,
    summary=st.text(max_size=30),
    findings=st.lists(
        st.builds(AiOpsFinding, names, services, small_text, ids.map(tuple)), max_size=3
    ).map(tuple),
    evidence=st.lists(st.builds(AiOpsEvidence, small_text, ids.map(tuple)), max_size=3).map(tuple),
    recommended_actions=st.lists(
        st.builds(
            AiOpsRecommendedAction,
            small_text,
            st.none() | st.sampled_from(NAMES),
            st.none() | st.sampled_from(SERVICES),
        ),
        max_size=2,
    ).map(tuple),
)
junk = st.one_of(json_values, st.integers(), st.builds(object), st.sets(st.integers(), max_size=2))
ill_typed_reports = st.builds(AiOpsReport, junk, junk, junk, junk)
ledgers = st.lists(
    st.builds(
        ToolInvocation, st.sampled_from(IDS), st.just("query_logs"), st.booleans(), st.none()
    ),
    max_size=4,
    unique_by=lambda invocation: invocation.invocation_id,
).map(lambda invocations: ToolLedger(tuple(invocations)))
any_reports = st.one_of(
    typed_reports,
    typed_reports.map(to_wire),
    raw_reports,
    json_values,
    ill_typed_reports,
)


@SETTINGS
@given(any_reports, st.sampled_from(AiOpsMode), alert_lists, ledgers)
def test_the_evaluator_never_raises(
    report: object, mode: AiOpsMode, alert_payload: tuple[Alert, ...], ledger: ToolLedger
) -> None:
    evaluation = evaluate_aiops_report(report, mode=mode, alerts=alert_payload, ledger=ledger)
    assert isinstance(evaluation, AiOpsRuleEvaluation)
    assert 0.0 <= evaluation.score <= 1.0
    assert evaluation.passed == (evaluation.violations == ())
    assert evaluation.passed == (evaluation.score == 1.0)
    known = {rule.id for rule in AIOPS_RULES}
    assert {violation.rule_id for violation in evaluation.violations} <= known
    wire = canonical_json(to_wire(evaluation))
    assert from_wire(AiOpsRuleEvaluation, json.loads(wire)) == evaluation


@SETTINGS
@given(typed_reports, alert_lists, ledgers)
def test_typed_and_wire_reports_are_judged_alike(
    report: AiOpsReport, alert_payload: tuple[Alert, ...], ledger: ToolLedger
) -> None:
    mode = AiOpsMode.PAYLOAD_TARGETED if alert_payload else AiOpsMode.AUTO_DISCOVERY
    typed = evaluate_aiops_report(report, mode=mode, alerts=alert_payload, ledger=ledger)
    raw = evaluate_aiops_report(to_wire(report), mode=mode, alerts=alert_payload, ledger=ledger)
    assert typed == raw
    # An oracle of its own for the rules that read one section each (spec §11), so
    # two equally wrong judgements cannot pass.
    broken = {violation.rule_id for violation in typed.violations}
    assert ("summary_present" in broken) == (report.summary.strip() == "")
    assert ("evidence_present" in broken) == (len(report.evidence) == 0)
    assert ("recommended_actions_present" in broken) == (len(report.recommended_actions) == 0)
    succeeded = {item.invocation_id for item in ledger.invocations if item.success}
    cited = [cited_id for part in (*report.findings, *report.evidence)
             for cited_id in part.cited_invocation_ids]
    assert ("cited_invocations_succeeded" in broken) == any(c not in succeeded for c in cited)
    uncited = any(not finding.cited_invocation_ids for finding in report.findings)
    assert ("findings_cite_invocations" in broken) == uncited
    assert typed.passed == (typed.violations == ())


# --- spec §15: host subclasses of Alert contribute their whitelisted fields only -----

ALERT_SECRET = "ALERT-SUBCLASS-SECRET-\u2af7"


def _run_with_subclassed_alerts(scenario: dict[str, Any]) -> tuple[AiOpsState, AiOpsState]:
    """The run of ``scenario`` with plain alerts, and again with host-subclassed alerts."""
    plain = _run(scenario)
    subclassed = attrs.evolve(
        plain.request,
        alerts=tuple(host_subclassed(alert, ALERT_SECRET) for alert in plain.request.alerts),
    )
    agents = {agent: _scripted(scenario["responses"][agent.value]) for agent in AiOpsAgent}
    state = run_aiops(
        subclassed,
        AiOpsEffects(
            supervisor=agents[AiOpsAgent.SUPERVISOR],
            planner=agents[AiOpsAgent.PLANNER],
            executor=agents[AiOpsAgent.EXECUTOR],
            reporter=agents[AiOpsAgent.REPORTER],
        ),
    )
    return plain, state


@SETTINGS
@given(scenarios())
def test_subclassed_alerts_send_exactly_the_plain_alerts_inputs(scenario: dict[str, Any]) -> None:
    plain, subclassed = _run_with_subclassed_alerts(scenario)
    for record in subclassed.invocations:
        assert ALERT_SECRET not in record.input, record.agent
        assert "private_notes" not in record.input and '"body"' not in record.input
    # Whitelisted by field: the inputs are those of the same alerts as plain values.
    assert [r.input for r in subclassed.invocations] == [r.input for r in plain.invocations]
