"""The parts both workflows build from one kernel definition: the same behaviour in each."""

from __future__ import annotations

import asyncio
import inspect
from typing import cast

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core import ConfigError, DiagnosisConfig, ExecutorEvidence, RunConfig
from diagnosis_core._aiops.routing import AiOpsRoutingFacts
from diagnosis_core._chat.routing import RoutingFacts
from diagnosis_core._kernel.driving.effects import check_effects_kind
from diagnosis_core._kernel.machine.classify import default_failure_classifier
from diagnosis_core._kernel.machine.tables import RouteRow, StatusRoutingFacts
from diagnosis_core.aiops import AiOpsConfig
from diagnosis_core.machine import AiOpsRoute, NodeStatus, Route

_RUN = RunConfig(run_id="run-1", session_id="session-1")


def _echo(name: str) -> dc.AgentInvoker:
    def agent(input: str, config: RunConfig, /) -> str:
        return f"{name}:{input}:{config.run_id}"

    return agent


def _aiops_effects() -> dca.AiOpsEffects:
    return dca.AiOpsEffects(
        supervisor=_echo("supervisor"), planner=_echo("planner"),
        executor=_echo("executor"), reporter=_echo("reporter"),
    )


def _classifier(error: BaseException) -> dc.FailureKind:
    return dc.FailureKind.NON_RETRYABLE


def test_chat_from_sync_wraps_every_effect_and_keeps_the_classifier() -> None:
    def gatekeeper(run_id: str, executor_output: object, /) -> object:
        return {"run": run_id, "seen": executor_output}

    sync = dc.Effects(
        planner=_echo("planner"), executor=_echo("executor"), verifier=_echo("verifier"),
        composer=_echo("composer"), gatekeeper=gatekeeper, classifier=_classifier,
    )
    wrapped = dc.AsyncEffects.from_sync(sync)
    assert type(wrapped) is dc.AsyncEffects
    assert wrapped.classifier is _classifier
    for name in ("planner", "executor", "verifier", "composer"):
        call = getattr(wrapped, name)
        assert inspect.iscoroutinefunction(call), name
        assert asyncio.run(call("in", _RUN)) == f"{name}:in:run-1"
    evidence = cast("ExecutorEvidence", "evidence")  # passed through untouched

    async def check() -> object:
        return await wrapped.gatekeeper("run-1", evidence)

    assert asyncio.run(check()) == {
        "run": "run-1", "seen": "evidence",
    }
    names = ("planner", "executor", "verifier", "composer", "gatekeeper")
    check_effects_kind(
        wrapped, dc.AsyncEffects, names, asynchronous=True, driver="d", other_driver="o"
    )


def test_aiops_from_sync_wraps_every_agent_and_keeps_the_default_classifier() -> None:
    names = ("supervisor", "planner", "executor", "reporter")
    sync = _aiops_effects()
    wrapped = dca.AsyncAiOpsEffects.from_sync(sync)
    assert type(wrapped) is dca.AsyncAiOpsEffects
    assert wrapped.classifier is default_failure_classifier
    for name in names:
        assert asyncio.run(getattr(wrapped, name)("x", _RUN)) == f"{name}:x:run-1"
    check_effects_kind(
        wrapped, dca.AsyncAiOpsEffects, names, asynchronous=True, driver="d", other_driver="o"
    )


def test_from_sync_of_the_other_workflows_effects_names_the_missing_effect() -> None:
    aiops = _aiops_effects()
    with pytest.raises(AttributeError, match="verifier"):
        dc.AsyncEffects.from_sync(aiops)  # type: ignore[arg-type]


def test_both_routing_tables_have_the_kernel_row_fields_in_order() -> None:
    row_fields = [field.name for field in attrs.fields(RouteRow)]
    assert row_fields == [
        "after", "condition", "next", "reason", "reason_from_node", "same_input",
    ]
    assert [field.name for field in attrs.fields(Route)] == row_fields
    assert [field.name for field in attrs.fields(AiOpsRoute)] == row_fields


def test_routing_facts_start_with_the_status_and_the_retry_budget() -> None:
    for kind in (RoutingFacts, AiOpsRoutingFacts):
        assert issubclass(kind, StatusRoutingFacts)
        assert [field.name for field in attrs.fields(kind)][:2] == ["status", "retries_left"]
        facts = kind(NodeStatus.COMPLETED, True)
        assert (facts.status, facts.retries_left) == (NodeStatus.COMPLETED, True)
        assert kind() == kind(None, False)


@pytest.mark.parametrize("kind", [DiagnosisConfig, AiOpsConfig])
def test_both_configurations_bound_the_shared_fields_alike(
    kind: type[DiagnosisConfig] | type[AiOpsConfig],
) -> None:
    made = kind()
    assert (made.technical_retry_limit, made.max_item_chars) == (1, 500)
    with pytest.raises(ConfigError, match=r"^technical_retry_limit: 4 is outside .* 0\.\.3$"):
        kind(technical_retry_limit=4)
    with pytest.raises(ConfigError, match=r"^max_item_chars: 19 is outside .* 20\.\.10000$"):
        kind(max_item_chars=19)
    edge = kind(technical_retry_limit=3, max_item_chars=10000)
    assert (edge.technical_retry_limit, edge.max_item_chars) == (3, 10000)
