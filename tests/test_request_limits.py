"""A request no journal or store can keep, or a question over the limit, never runs (§12.1).

A lone surrogate code point anywhere in a request (its question, run or
session id, metadata, history, skills; an AIOps alert) is not UTF-8: the
SQLite and PostgreSQL stores used to fail with a bare ``UnicodeEncodeError``
and the journal never loaded back. A question longer than
``RunOptions.max_question_chars`` would be sent to every agent and stored in
every journal. Both are a :class:`PayloadError` naming the field, raised by
every driver before any effect runs and before anything is written.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp
import diagnosis_core.stores as dcst
from diagnosis_core._kernel.driving.options import DEFAULT_MAX_QUESTION_CHARS

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LONE = "\ud800"


def setup() -> tuple[dc.DiagnosisRequest, dc.Effects, list[str]]:
    document: dict[str, Any] = json.loads(
        (EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8")
    )
    scenario = dc.load_scenario(document)
    effects = dc.scenario_effects(scenario)
    calls: list[str] = []

    def counted(name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            calls.append(name)
            invoker: dc.AgentInvoker = getattr(effects, name)
            return invoker(input, config)

        return call

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        calls.append("gatekeeper")
        return effects.gatekeeper(run_id, output)

    counting = dc.Effects(
        planner=counted("planner"), executor=counted("executor"),
        verifier=counted("verifier"), composer=counted("composer"), gatekeeper=gatekeeper,
    )
    return dc.scenario_request(scenario), counting, calls


def _with_run(request: dc.DiagnosisRequest, **changes: Any) -> dc.DiagnosisRequest:
    return attrs.evolve(request, run=attrs.evolve(request.run, **changes))


def unstorable(request: dc.DiagnosisRequest) -> list[tuple[str, dc.DiagnosisRequest]]:
    return [
        ("request.question", attrs.evolve(request, question=f"why{LONE}?")),
        ("request.run.run_id", _with_run(request, run_id=f"run-{LONE}")),
        ("request.run.session_id", _with_run(request, session_id=f"s{LONE}")),
        ("request.run.metadata.tenant", _with_run(request, metadata={"tenant": LONE})),
        ("request.run.metadata", _with_run(request, metadata={f"k{LONE}": "v"})),
        ("request.history[0]", attrs.evolve(
            request, history=(dc.HistoryMessage(role="user", content=f"hi {LONE}"),))),
    ]


@pytest.mark.parametrize("index", range(6))
def test_a_lone_surrogate_anywhere_in_the_request_is_refused_before_any_effect(
    index: int, tmp_path: Path
) -> None:
    request, effects, calls = setup()
    field, bad = unstorable(request)[index]
    sink = dcj.ListJournalSink()
    with pytest.raises(dc.PayloadError, match="lone surrogate") as raised:
        dc.run_diagnosis(bad, effects, sink=sink)
    assert raised.value.path.startswith(field)
    with pytest.raises(dc.PayloadError, match="lone surrogate"):
        asyncio.run(dc.arun_diagnosis(bad, dc.AsyncEffects.from_sync(effects)))
    with pytest.raises(dc.PayloadError, match="lone surrogate"):
        dc.iter_diagnosis(bad, effects)
    store = dcst.SqliteStore(tmp_path / "runs.sqlite")
    try:
        with pytest.raises(dc.PayloadError, match="lone surrogate"):
            dc.run_diagnosis(bad, effects, store=store)
        assert store.runs() == ()
    finally:
        store.close()
    assert calls == [] and sink.entries == []


def test_an_aiops_alert_with_a_lone_surrogate_is_refused_before_any_agent() -> None:
    path = sorted(EXAMPLES.glob("aiops*.json"))[0]
    scenario = dca.load_aiops_scenario(json.loads(path.read_text(encoding="utf-8")))
    request = dca.aiops_scenario_request(scenario)
    alert = dcp.Alert(name="HighLatency", service=f"api{LONE}", severity="critical",
                      started_at="2024-01-01T00:00:00Z")
    bad = attrs.evolve(request, alerts=(alert,))
    with pytest.raises(dc.PayloadError, match=r"request\.alerts\[0\]\.service: holds a lone"):
        dca.run_aiops(bad, dca.aiops_scenario_effects(scenario))


def test_a_question_over_the_limit_is_refused_before_any_effect(tmp_path: Path) -> None:
    request, effects, calls = setup()
    assert DEFAULT_MAX_QUESTION_CHARS == 100_000
    assert dc.RunOptions().max_question_chars == DEFAULT_MAX_QUESTION_CHARS
    long = attrs.evolve(request, question="x" * (DEFAULT_MAX_QUESTION_CHARS + 1))
    with pytest.raises(dc.PayloadError, match=r"^request\.question: 100001 characters, over "
                       r"the limit of 100000 \(run_diagnosis: max_question_chars=\)$"):
        dc.run_diagnosis(long, effects)
    store = dcst.SqliteStore(tmp_path / "runs.sqlite")
    try:
        with pytest.raises(dc.PayloadError, match="over the limit"):
            dc.run_diagnosis(long, effects, store=store)
        assert store.runs() == ()
    finally:
        store.close()
    short = attrs.evolve(request, question="x" * 11)
    with pytest.raises(dc.PayloadError, match="11 characters, over the limit of 10"):
        dc.run_diagnosis(short, effects, max_question_chars=10)
    with pytest.raises(dc.PayloadError, match="over the limit of 10"):
        dc.run_diagnosis(short, effects, options=dc.RunOptions(max_question_chars=10))
    assert calls == []
    dc.run_diagnosis(short, effects, max_question_chars=11)  # at the limit: runs
    assert calls


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_the_question_limit_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(dc.RunOptionsError, match="max_question_chars: expected a positive int"):
        dc.RunOptions(max_question_chars=bad)  # type: ignore[arg-type]
