"""Walk every row of ``ROUTING_TABLE`` through the machine (spec §7).

For each row of the spec's table there is a run built to take it. A spy on the
machine's ``choose_route`` records the row chosen at every step, and the trace
shows where the run really went: the row's ``next`` must be the node that ran
next (END: nothing ran), a ``same_input`` row must re-send the identical input,
and a fallback row must hand over its reason. Finally the rows exercised must
be the whole table, and the table must be the spec's, so a changed, added or
removed row fails here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

import diagnosis_core._chat.machine as machine_module
from diagnosis_core import (
    DiagnosisConfig,
    DiagnosisRequest,
    Effects,
    ReasonCode,
    RunConfig,
    Skill,
    ToolBlockedError,
    run_diagnosis,
)
from diagnosis_core._chat.routing import Condition, RoutingFacts
from diagnosis_core.machine import ROUTING_TABLE, NodeName, Route
from diagnosis_core.testing import FakeGatekeeper, ScriptedInvoker, passing_gatekeeper
from diagnosis_core.testing._doubles import Reply

N, C, PRE = NodeName, Condition, NodeName.PRE_VERIFICATION_FALLBACK

SPEC_TABLE = (
    Route(None, C.ALWAYS, N.PLANNER),
    Route(N.PLANNER, C.COMPLETED, N.EXECUTOR),
    Route(N.PLANNER, C.RETRY_LEFT, N.PLANNER, same_input=True),
    Route(N.PLANNER, C.OTHERWISE, PRE, ReasonCode.PLANNER_FAILED),
    Route(N.EXECUTOR, C.COMPLETED, N.GATEKEEPER),
    Route(N.EXECUTOR, C.ANY_FAILURE, PRE, reason_from_node=True),
    Route(N.GATEKEEPER, C.GATEKEEPER_PASS, N.VERIFIED_INPUT),
    Route(N.GATEKEEPER, C.LOW_CONFID_TRUSTED, N.VERIFIED_INPUT),
    Route(N.GATEKEEPER, C.LOW_CONFID_UNTRUSTED, PRE, ReasonCode.NO_TRUSTED_EVIDENCE),
    Route(N.GATEKEEPER, C.GATEKEEPER_REJECT, PRE, reason_from_node=True),
    Route(N.VERIFIED_INPUT, C.ALWAYS, N.VERIFIER),
    Route(N.VERIFIER, C.RETRY_LEFT, N.VERIFIER, same_input=True),
    Route(N.VERIFIER, C.NON_RETRYABLE_OR_EXHAUSTED, PRE, ReasonCode.VERIFIER_FAILED),
    Route(N.VERIFIER, C.EVIDENCE_GAP, N.EVIDENCE_RETRY),
    Route(N.VERIFIER, C.COMPLETED_OTHERWISE, N.COMPOSER),
    Route(N.EVIDENCE_RETRY, C.ALWAYS, N.EXECUTOR),
    Route(N.COMPOSER, C.COMPLETED, None),
    Route(N.COMPOSER, C.RETRY_LEFT, N.COMPOSER, same_input=True),
    Route(N.COMPOSER, C.OTHERWISE, N.POST_VERIFICATION_FALLBACK, ReasonCode.COMPOSER_FAILED),
    Route(PRE, C.ALWAYS, None),
    Route(N.POST_VERIFICATION_FALLBACK, C.ALWAYS, None),
)

# --- payloads -------------------------------------------------------------------------

PLAN = json.dumps({"steps": [{"step_id": "s1", "goal": "read the gateway logs"}]})


def binding(invocation: str) -> dict[str, str]:
    return {"source_invocation_id": invocation, "tool_name": "query_logs",
            "raw_path": "$.items[0].message", "evidence_excerpt": "timeout after 3000ms"}


EVIDENCE = json.dumps(
    {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [
            {"claim_id": "c1", "text": "gateway times out", "is_critical": True,
             "bindings": [binding("inv-1")]},
            {"claim_id": "c2", "text": "pool is exhausted", "bindings": [binding("inv-2")]},
        ],
    }
)


def checked(claim_id: str, invocation: str, status: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"claim_id": claim_id, "source_invocation_id": invocation,
                             "tool_name": "query_logs", "raw_path": "$.items[0].message",
                             "status": status}
    if status == "pass":
        entry["matched_text"] = "timeout after 3000ms"
    return entry


LOW_TRUSTED = {"status": "fail", "level": "low_confid",
               "checked_bindings": [checked("c1", "inv-1", "pass"), checked("c2", "inv-2", "fail")]}
LOW_UNTRUSTED = {"status": "fail", "level": "low_confid",
                 "checked_bindings": [checked("c1", "inv-other", "pass")]}
REJECTED = {"status": "fail", "level": "reject", "checked_bindings": []}


def verifier(verdict: str = "PASS", gap: bool = False) -> str:
    verification = "indirect_support" if gap else "direct_support"
    return json.dumps(
        {"verdict": verdict, "groundedness_score": 0.7, "allowed_claim_ids": ["c1"],
         "facts_checked": [{"claim_id": "c1", "fact": "times out", "is_critical": True,
                            "verification": verification}]}
    )


COMPOSER = json.dumps({"answer": "The gateway times out calling pay-svc.", "cited_claim_ids": []})
TIMEOUT = TimeoutError("agent timed out")


@attrs.frozen
class Run:
    """One scripted run, meant to take ``row``."""

    row: Route
    planner: tuple[Reply, ...] = (PLAN,)
    executor: tuple[Reply, ...] = (EVIDENCE,)
    gatekeeper: tuple[object, ...] = ()
    verifier: tuple[Reply, ...] = (verifier(),)
    composer: tuple[Reply, ...] = (COMPOSER,)

    def execute(self) -> Any:
        request = DiagnosisRequest(
            question="Why does the payment API time out?",
            run=RunConfig("run-walk", "chat-walk"),
            skills=(Skill("payment-timeout", "playbook"),),
            config=DiagnosisConfig(technical_retry_limit=1, evidence_retry_limit=1),
        )
        effects = Effects(
            planner=ScriptedInvoker(self.planner),
            executor=ScriptedInvoker(self.executor),
            verifier=ScriptedInvoker(self.verifier),
            composer=ScriptedInvoker(self.composer),
            gatekeeper=FakeGatekeeper(self.gatekeeper, respond=passing_gatekeeper),
        )
        return run_diagnosis(request, effects)


def row(index: int) -> Route:
    return SPEC_TABLE[index]


RUNS = (
    Run(row(0)),
    Run(row(1)),
    Run(row(2), planner=(TIMEOUT, PLAN)),
    Run(row(3), planner=(ValueError("unknown failure"),)),
    Run(row(4)),
    Run(row(5), executor=(ToolBlockedError("blocked"),)),
    Run(row(6)),
    Run(row(7), gatekeeper=(LOW_TRUSTED,)),
    Run(row(8), gatekeeper=(LOW_UNTRUSTED,)),
    Run(row(9), gatekeeper=(REJECTED,)),
    Run(row(10)),
    Run(row(11), verifier=("not json", verifier())),
    Run(row(12), verifier=(TIMEOUT, TIMEOUT)),
    Run(row(13), gatekeeper=(LOW_TRUSTED,), verifier=(verifier("PASS", gap=True), verifier())),
    Run(row(14)),
    Run(row(15), executor=(EVIDENCE,) * 2, verifier=(verifier("LOW_CONFID", True), verifier())),
    Run(row(16)),
    Run(row(17), composer=('{"answer": "  "}', COMPOSER)),
    Run(row(18), composer=(TIMEOUT, TIMEOUT)),
    Run(row(19), planner=(ValueError("unknown failure"),)),
    Run(row(20), composer=(ValueError("unknown failure"),)),
)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[Route]:
    taken: list[Route] = []
    original: Callable[..., Route] = machine_module.choose_route  # type: ignore[attr-defined]

    def recording(after: NodeName | None, facts: RoutingFacts, *args: Any) -> Route:
        chosen = original(after, facts, *args)
        taken.append(chosen)
        return chosen

    monkeypatch.setattr(machine_module, "choose_route", recording)
    return taken


def _check_transitions(taken: list[Route], state: Any) -> None:
    """Row k (k ≥ 1) is chosen after event k; the next event is the row's ``next``."""
    events = state.events
    assert len(taken) == len(events) + 1  # the start row, then one row per executed node
    assert taken[0].after is None and taken[0].next is events[0].node
    for index, event in enumerate(events):
        chosen = taken[index + 1]
        following = events[index + 1] if index + 1 < len(events) else None
        assert chosen.after is event.node
        assert chosen.next is (following.node if following else None), (chosen, following)
        if chosen.same_input:
            assert following is not None and following.attempt == event.attempt + 1
            assert following.input_sha256 == event.input_sha256
        if chosen.reason is not None:
            assert following is not None and following.reason_code is chosen.reason
        if chosen.reason_from_node:
            assert following is not None and following.reason_code is event.reason_code


@pytest.mark.parametrize("run", RUNS, ids=lambda run: f"{run.row.after}-{run.row.condition.name}")
def test_the_run_built_for_a_row_takes_it_and_goes_where_it_says(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _spy(monkeypatch)
    state = run.execute()
    assert run.row in taken
    _check_transitions(taken, state)


def test_the_rows_exercised_are_exactly_the_spec_table(monkeypatch: pytest.MonkeyPatch) -> None:
    exercised: set[Route] = set()
    for run in RUNS:
        taken = _spy(monkeypatch)
        state = run.execute()
        _check_transitions(taken, state)
        exercised.update(taken)
        monkeypatch.undo()
    assert [run.row for run in RUNS] == list(SPEC_TABLE)
    assert exercised == set(SPEC_TABLE)
    assert ROUTING_TABLE == SPEC_TABLE
