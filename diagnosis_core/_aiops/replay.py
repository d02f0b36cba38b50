"""Replay scenarios of the AIOps flow (spec §11, in the style of spec §9).

An AIOps scenario scripts every agent of a run as JSON and names the
workflow at the top level::

    {"workflow": "aiops",
     "run": {"run_id": "aiops-1", "session_id": "ops-7", "metadata": {}},
     "alerts": [{"name": "HighLatency", "service": "pay-svc", "severity": "critical",
                 "labels": {"env": "prod"}, "started_at": "2024-05-01T10:00:00Z"}],
     "config": {"technical_retry_limit": 1, "max_supervisor_steps": 8,
                "max_item_chars": 500, "locale": "en"},
     "responses": {"supervisor": [{"text": "…"}], "planner": […],
                   "executor": […], "reporter": […]},
     "tool_ledger": [{"invocation_id": "inv-1", "tool_name": "query_metrics",
                      "success": true, "output": …}]}

* ``workflow`` is required and must be ``"aiops"``; ``alerts`` is optional
  (absent, null or empty: ``AUTO_DISCOVERY``); each alert needs non-empty
  string ``name`` and ``service``, string ``severity`` and ``started_at``,
  and optional ``labels`` and ``annotations`` (objects of strings).
* Instead of ``alerts``, a scenario may give ``alertmanager``: an
  Alertmanager webhook payload (version ``"4"``), whose firing entries become
  the alerts (:func:`alerts_from_alertmanager`). Both given is a
  :class:`ScenarioError`; so is every problem of the payload, its path
  prefixed ``alertmanager.`` and the :class:`AlertmanagerPayloadError` as
  its ``__cause__``.
* ``responses.<agent>`` entries are the chat scenario's: ``{"text": …}`` or
  ``{"error": {"kind", "message"?}}``, consumed in call order; a call with
  nothing left behaves as a ``non_retryable`` error.
* ``tool_ledger`` (the chat scenario's records, ids unique) is what the rule
  evaluator checks citations against; absent means an empty ledger.
* Strict: unknown keys (top level, ``run``, ``config``, ``responses``,
  entries, alerts) and every malformed value are a :class:`ScenarioError`
  naming the path; an invalid ``config`` value too.

:func:`replay_aiops` returns one JSON-compatible object: ``workflow``,
``mode``, ``outcome``, ``reason_code``, ``report``, ``fallback``,
``supervisor_steps``, ``tool_invocation_ids``, ``calls`` (all four agents),
``trace``, ``invocations`` and ``aiops_rule_evaluation`` (null for a
fallback).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._kernel.machine.config import RunConfig
from .._kernel.machine.tables import text_cell, trace_table_lines
from .._kernel.scenario.document import SCENARIO, check_known_keys, expect_object, scenario_error
from .._kernel.scenario.scripted import (
    ScriptedResponse,
    frozen_responses,
    load_responses_section,
    load_tool_ledger,
    scripted_agents,
)
from .._kernel.tools.ledger import ToolLedger
from .._kernel.wire.json import JsonValue, describe_value
from .config import AiOpsConfig
from .drivers import AiOpsEffects, run_aiops
from .enums import AiOpsAgent
from .machine import AiOpsRequest, AiOpsResult, AiOpsState
from .payloads import Alert
from .rendering import render_aiops_report
from .request_codec import aiops_request_from_document
from .rules import AiOpsRuleEvaluation
from .workflow import AIOPS_WORKFLOW, aiops_output

__all__ = [
    "AiOpsScenario",
    "aiops_replay_output",
    "aiops_scenario_effects",
    "aiops_scenario_request",
    "load_aiops_scenario",
    "replay_aiops",
    "replay_aiops_scenario",
]

_TOP_KEYS = frozenset(
    {"workflow", "run", "alerts", "alertmanager", "config", "responses", "tool_ledger"}
)


@attrs.frozen
class AiOpsScenario:
    """A validated AIOps replay scenario; ``responses`` is a read-only mapping."""

    run: RunConfig
    alerts: tuple[Alert, ...]
    config: AiOpsConfig
    responses: Mapping[AiOpsAgent, tuple[ScriptedResponse, ...]] = attrs.field(
        converter=frozen_responses
    )
    tool_ledger: ToolLedger = attrs.field(factory=ToolLedger)


# --- validation -------------------------------------------------------------------


def load_aiops_scenario(data: object) -> AiOpsScenario:
    """Validate an AIOps scenario document strictly; every problem names its path."""
    top = expect_object(data, "$")
    if "workflow" not in top:
        raise scenario_error("workflow", "missing")
    if top["workflow"] != AIOPS_WORKFLOW.name:
        raise scenario_error(
            "workflow", f"expected {AIOPS_WORKFLOW.name!r}, got {describe_value(top['workflow'])}"
        )
    check_known_keys(top, _TOP_KEYS, "")
    ledger = ToolLedger()
    if top.get("tool_ledger") is not None:
        ledger = load_tool_ledger(top["tool_ledger"])
    request = aiops_request_from_document(top, SCENARIO)
    return AiOpsScenario(
        run=request.run,
        alerts=request.alerts,
        config=request.config,
        responses=load_responses_section(top, AiOpsAgent),
        tool_ledger=ledger,
    )


# --- running ----------------------------------------------------------------------


def aiops_scenario_request(scenario: AiOpsScenario) -> AiOpsRequest:
    """The :class:`AiOpsRequest` a scenario describes."""
    return AiOpsRequest(run=scenario.run, alerts=scenario.alerts, config=scenario.config)


def aiops_scenario_effects(scenario: AiOpsScenario) -> AiOpsEffects:
    """Fresh scripted agents for one run of ``scenario``."""
    return AiOpsEffects(**scripted_agents(scenario.responses, AiOpsAgent))


def replay_aiops_scenario(scenario: AiOpsScenario) -> AiOpsState:
    """Run a validated scenario through the synchronous driver; the finished state."""
    return run_aiops(aiops_scenario_request(scenario), aiops_scenario_effects(scenario))


def aiops_replay_output(scenario: AiOpsScenario, state: AiOpsState) -> dict[str, JsonValue]:
    """The replay output object of a finished run, with its rule evaluation."""
    return aiops_output(state, scenario.tool_ledger)


def replay_aiops(scenario: Mapping[str, Any]) -> dict[str, JsonValue]:
    """Run an AIOps scenario document and return the JSON-compatible result.

    Raises :class:`ScenarioError` (a ``ValueError``) naming the path when the
    scenario is malformed. The same scenario always gives the same result.
    """
    loaded = load_aiops_scenario(scenario)
    return aiops_replay_output(loaded, replay_aiops_scenario(loaded))


# --- the readable form (command line) ---------------------------------------------


def format_aiops_result(
    result: AiOpsResult, evaluation: AiOpsRuleEvaluation | None, config: AiOpsConfig
) -> str:
    """The readable form of a run (what ``diagnosis-core run`` prints, spec §11).

    The report (or the fallback text), the outcome, the rule evaluation and
    the trace as a table.
    """
    body = render_aiops_report(result.report, config) if result.report else result.fallback or ""
    calls = result.calls
    lines = [body.rstrip(), "", "-" * 72]
    lines.append(
        f"workflow: aiops   mode: {result.mode.value}   outcome: {result.outcome.value}   "
        f"reason: {text_cell(result.reason_code)}"
    )
    lines.append(
        f"supervisor steps: {result.supervisor_steps}   "
        f"tool invocations: {len(result.tool_invocation_ids)}"
    )
    lines.append(
        f"calls: supervisor={calls.supervisor} planner={calls.planner} "
        f"executor={calls.executor} reporter={calls.reporter}"
    )
    if evaluation is None:
        lines.append("rule evaluation: - (no report)")
    else:
        verdict = "passed" if evaluation.passed else "failed"
        lines.append(f"rule evaluation: {verdict}   score: {evaluation.score:.2f}")
        lines += [
            f"  {violation.rule_id}: {violation.message}" for violation in evaluation.violations
        ]
    lines.append("")
    lines += trace_table_lines(result.trace, "step")
    return "\n".join(lines) + "\n"
