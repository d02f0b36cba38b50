"""An observer that edits the gatekeeper result it is shown changes no engine's run (§12.5).

The drivers show ``effect_finished`` a private copy of a gatekeeper result
(``observed_result``). The LangGraph node and the Temporal / DBOS effect
step used to show the machine's own result — and fed it to the machine, or
recorded it, *after* the hook: an observer that turned a REJECT into a clean
PASS turned the run of ``db_pool_forged_citations`` into a verifier call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("temporalio")
pytest.importorskip("dbos")

from adapter_support import EXAMPLES_DIR, golden_result, load_doc, scenario_of
from dbos import DBOS
from langgraph.checkpoint.memory import InMemorySaver
from temporalio.testing import ActivityEnvironment

import diagnosis_core as dc
import diagnosis_core.adapters.dbos as dbos_adapter
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core.adapters import langgraph as lg
from diagnosis_core.adapters._engine import CHAT
from diagnosis_core.adapters.temporal import DiagnosisActivities

FORGED = EXAMPLES_DIR / "db_pool_forged_citations.json"
EXPECTED = golden_result("db_pool_forged_citations")  # a REJECT: GATEKEEPER_REJECTED


class EditsTheGatekeeperResult:
    """Turns every gatekeeper result it is shown into a clean PASS of nothing."""

    def __init__(self) -> None:
        self.edited = 0

    def effect_finished(self, action: object, result: object, /) -> None:
        if isinstance(result, dcm.GatekeeperReturned) and isinstance(result.raw, dict):
            result.raw.clear()
            result.raw.update({"status": "pass", "checked_bindings": [], "reason_codes": []})
            self.edited += 1


def test_the_langgraph_graph_runs_as_if_nobody_watched() -> None:
    request, effects = scenario_of(load_doc(FORGED))
    observer = EditsTheGatekeeperResult()
    graph = lg.build_diagnosis_graph(effects, checkpointer=InMemorySaver(), observer=observer)
    state = lg.run_diagnosis_graph(graph, request)
    assert observer.edited == 1
    assert dc.to_wire(state.result) == EXPECTED
    assert dc.to_wire(dcj.fold_journal(state_journal(graph, request)).result) == EXPECTED


def state_journal(graph: Any, request: dc.DiagnosisRequest) -> dcj.Journal:
    values = lg.diagnosis_graph_values(graph, thread_id=request.run.run_id)
    return lg.diagnosis_journal_of(values)


def test_the_async_langgraph_graph_runs_as_if_nobody_watched() -> None:
    request, effects = scenario_of(load_doc(FORGED))
    observer = EditsTheGatekeeperResult()
    graph = lg.build_diagnosis_graph(dc.AsyncEffects.from_sync(effects), observer=observer)
    state = asyncio.run(lg.arun_diagnosis_graph(graph, request))
    assert observer.edited == 1
    assert dc.to_wire(state.result) == EXPECTED


def _gatekeeper_call(request: dc.DiagnosisRequest, effects: dc.Effects) -> dcm.CallGatekeeper:
    """The run's gatekeeper call, reached by the sans-IO machine and the scripted effects."""
    state = dcm.start_diagnosis(request)
    while True:
        action = dcm.next_action(state)
        if isinstance(action, dcm.CallGatekeeper):
            return action
        assert not isinstance(action, dcm.Finished)
        state = dcm.advance(state, dcm.perform_effect(action, effects))


def test_a_temporal_gatekeeper_activity_records_the_result_the_gatekeeper_gave() -> None:
    request, effects = scenario_of(load_doc(FORGED))
    action = _gatekeeper_call(request, effects)
    expected = CHAT.recorded(
        asyncio.run(ActivityEnvironment().run(
            DiagnosisActivities(scenario_of(load_doc(FORGED))[1]).call_gatekeeper,
            dc.to_wire(action),
        )),
        dcj.expected_call(action),
    )[0]
    assert isinstance(expected, dcj.RecordedGatekeeperResult)
    assert json.loads(expected.result_json)["status"] != "pass"  # the scripted REJECT
    observer = EditsTheGatekeeperResult()
    activities = DiagnosisActivities(scenario_of(load_doc(FORGED))[1], observer=observer)
    data = asyncio.run(ActivityEnvironment().run(activities.call_gatekeeper, dc.to_wire(action)))
    assert observer.edited == 1
    assert CHAT.recorded(data, dcj.expected_call(action))[0] == expected


@pytest.fixture
def launched_dbos(tmp_path: Path) -> Iterator[EditsTheGatekeeperResult]:
    _, effects = scenario_of(load_doc(FORGED))
    observer = EditsTheGatekeeperResult()
    hosts = dbos_adapter._CHAT.host
    dbos_adapter.configure_diagnosis_dbos(effects, observer=observer)
    DBOS(config={"name": "diagnosis-observed", "system_database_url":
                 f"sqlite:///{tmp_path / 'dbos.sqlite'}"})
    DBOS.launch()
    try:
        yield observer
    finally:
        DBOS.destroy()
        dbos_adapter._CHAT.host = hosts


def test_a_dbos_run_records_the_result_the_gatekeeper_gave(
    launched_dbos: EditsTheGatekeeperResult,
) -> None:
    request, _ = scenario_of(load_doc(FORGED))
    state = dbos_adapter.run_diagnosis_dbos(request)
    assert launched_dbos.edited == 1
    assert dc.to_wire(state.result) == EXPECTED
    journal = dbos_adapter.dbos_diagnosis_journal(f"diagnosis-{request.run.run_id}")
    assert dc.to_wire(dcj.fold_journal(journal).result) == EXPECTED
