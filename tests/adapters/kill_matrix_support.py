"""The kill matrix's effects: a file-backed log, a counting tool and a crash plan.

Every effect and every tool call goes through here, in whichever process runs
it. A *crash plan* names one point of one run — ``before:I`` / ``after:I`` (the
I-th effect of the run, counted in the doomed process from the run's start) or
``tool-before:J`` / ``tool-after:J`` (the J-th tool call) — at which the process
SIGKILLs itself: a real kill, at an exact instant. The log file (one per run,
lines appended and closed before anything else happens) survives the kill:

* ``call <effect>`` before an effect is performed, ``done <effect>`` after it
  returned (and after an ``after:`` kill point): the counts of performed and
  completed calls across processes;
* ``tool <service>`` when a tool call is performed (the counting tool).

A scripted agent answers with the response of its index = the number of its
``done`` lines, so a call resent after its process died gets the reply the
lost call would have got — as a real model would answer the identical input.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from adapter_support import EXAMPLES_DIR, load_doc
from tools_support import honest_evidence, query_logs

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.tools as dct

PAYMENT = EXAMPLES_DIR / "payment_timeout.json"
AIOPS = EXAMPLES_DIR / "aiops_payload_targeted.json"
CHAT_AGENTS = ("planner", "executor", "verifier", "composer")
AIOPS_AGENTS = ("supervisor", "planner", "executor", "reporter")


class CrashPlan:
    """Where this process dies: one point, or none (a recovering process)."""

    def __init__(self, point: str | None, fired: Path | None) -> None:
        self.point, self.fired = point, fired
        self.effects = 0
        self.tools = 0

    def at(self, point: str) -> None:
        if point == self.point:
            if self.fired is not None:
                self.fired.write_text(point, encoding="utf-8")
            os.kill(os.getpid(), signal.SIGKILL)


def _note(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as file:
        file.write(line + "\n")


def log_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _indexed(fresh: Callable[[], Any], name: str, log: Path) -> dc.AgentInvoker:
    """The scripted agent ``name`` answering with its response number ``done`` count."""

    def call(input: str, config: dc.RunConfig, /) -> str:
        agent = getattr(fresh(), name)
        for _ in range(log_lines(log).count(f"done {name}")):
            try:  # skip the responses of completed calls
                agent(input, config)
            except Exception:  # a scripted error is a response too
                continue
        reply: str = agent(input, config)
        return reply

    return call


def _effect(name: str, inner: Callable[..., Any], log: Path, plan: CrashPlan) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        index = plan.effects
        plan.effects += 1
        plan.at(f"before:{index}")
        _note(log, f"call {name}")
        try:
            return inner(*args)
        finally:
            plan.at(f"after:{index}")
            _note(log, f"done {name}")

    return call


def _tool(log: Path, plan: CrashPlan) -> Callable[[str], dict[str, Any]]:
    def tool(service: str) -> dict[str, Any]:
        index = plan.tools
        plan.tools += 1
        plan.at(f"tool-before:{index}")
        _note(log, f"tool {service}")
        result = query_logs(service)
        plan.at(f"tool-after:{index}")
        return result

    return tool


def chat_case(
    run_id: str, recorders: dct.RunRecorders, log: Path, plan: CrashPlan
) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """The payment example as run ``run_id``: a tool-calling executor, the ledger gatekeeper."""
    doc = load_doc(PAYMENT)
    doc["run"]["run_id"] = run_id
    scenario = dc.load_scenario(doc)

    def fresh() -> dc.Effects:
        return dc.scenario_effects(scenario)

    tool = _tool(log, plan)

    def executor(input: str, config: dc.RunConfig, /) -> str:
        wrapped = recorders.recorder(config.run_id).wrap("query_logs", tool)
        gateway, service = wrapped("gateway"), wrapped("pay-svc")
        return honest_evidence(gateway["invocation_id"], service["invocation_id"])

    agents = {name: _effect(name, _indexed(fresh, name, log), log, plan) for name in CHAT_AGENTS}
    agents["executor"] = _effect("executor", executor, log, plan)
    effects = attrs.evolve(
        fresh(), **agents, gatekeeper=_effect("gatekeeper", recorders.gatekeeper(), log, plan)
    )
    return dc.scenario_request(scenario), effects


def aiops_case(
    run_id: str, recorders: dct.RunRecorders, log: Path, plan: CrashPlan
) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    """The targeted AIOps example as run ``run_id``; its executor calls two recorded tools."""
    doc = load_doc(AIOPS)
    doc["run"]["run_id"] = run_id
    scenario = dca.load_aiops_scenario(doc)

    def fresh() -> dca.AiOpsEffects:
        return dca.aiops_scenario_effects(scenario)

    tool = _tool(log, plan)
    scripted_executor = _indexed(fresh, "executor", log)

    def executor(input: str, config: dc.RunConfig, /) -> str:
        wrapped = recorders.recorder(config.run_id).wrap("query_logs", tool)
        wrapped("gateway")
        wrapped("pay-svc")
        return scripted_executor(input, config)

    agents = {name: _effect(name, _indexed(fresh, name, log), log, plan) for name in AIOPS_AGENTS}
    agents["executor"] = _effect("executor", executor, log, plan)
    return dca.aiops_scenario_request(scenario), attrs.evolve(fresh(), **agents)
