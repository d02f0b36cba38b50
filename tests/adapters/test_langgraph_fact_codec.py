"""The LangGraph adapter sees the fact the journal stores (spec §12.1).

A gatekeeper result holding a high and a low surrogate as two code points
is invalid live; a run stopped after the gatekeeper and resumed by a fresh
graph from its SQLite checkpoints must end the same way, not ``ANSWERED``.
"""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path

import attrs
import pytest

pytest.importorskip("langgraph")

from adapter_support import EXAMPLES_DIR, load_doc, scenario_of
from langgraph.checkpoint.sqlite import SqliteSaver

import diagnosis_core as dc
from diagnosis_core import ReasonCode
from diagnosis_core.adapters.langgraph import (
    GATEKEEPER_NODE,
    build_diagnosis_graph,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)

PAIR = "\ud83d" + "\ude00"


def test_a_surrogate_pair_in_a_gatekeeper_result_is_invalid_after_a_fresh_graph_resumes(
    tmp_path: Path,
) -> None:
    doc = load_doc(EXAMPLES_DIR / "payment_timeout.json")
    request, effects = scenario_of(doc)
    result = copy.deepcopy(doc["gatekeeper"][0]["result"])
    result["checked_bindings"][0]["matched_text"] += PAIR

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        return copy.deepcopy(result)

    effects = attrs.evolve(effects, gatekeeper=gatekeeper)
    live = dc.run_diagnosis(request, attrs.evolve(scenario_of(doc)[1], gatekeeper=gatekeeper))
    assert live.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT

    database = tmp_path / "checkpoints.sqlite"
    connection = sqlite3.connect(database, check_same_thread=False)
    graph = build_diagnosis_graph(
        effects, checkpointer=SqliteSaver(connection), interrupt_after=[GATEKEEPER_NODE]
    )
    state = run_diagnosis_graph(graph, request, thread_id="pair")  # stops after the gatekeeper
    connection.close()
    assert state.calls.gatekeeper == 1
    # The state the graph reports is the fold of its checkpointed journal: the
    # stored result must still be invalid (the pair read back as U+1F600 was a PASS).
    assert state.gatekeeper is not None
    assert state.gatekeeper.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT

    connection = sqlite3.connect(database, check_same_thread=False)
    fresh = build_diagnosis_graph(effects, checkpointer=SqliteSaver(connection))
    resumed = resume_diagnosis_graph(fresh, thread_id="pair")
    connection.close()
    assert resumed.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    assert dc.to_json(resumed.result) == dc.to_json(live.result)
