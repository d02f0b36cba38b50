"""Kill matrix on LangGraph, both workflows, with real tools (spec §12, §13).

A worker process runs a run whose executor calls two file-logged tools
through the run's recorder (``tools=``), and SIGKILLs itself before, during
or after one effect (``after``: once the checkpoint holding its finished
entry is written) or one tool call. A new process — this one, with new
recorders, a new graph and a new saver connection — resumes the thread.

* The result is the uninterrupted run's, or the §12 fail-closed outcome of
  the killed effect (an executor, or a tool inside it: ``EXECUTOR_FAILED``;
  a chat gatekeeper: ``GATEKEEPER_UNAVAILABLE``).
* No tool is performed twice (the tool log is written with fsync, across
  processes), and the executor runs at most once.
* The ledger crosses the process: the chat gatekeeper that runs after a
  resume is the reference gatekeeper over the recorders this process rebuilt
  from the checkpoint (an empty ledger would be ``GATEKEEPER_REJECTED``); the
  AIOps rule evaluation over the journal's ledger equals the uninterrupted
  run's.
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, load_doc
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_support import (
    ForkServer,
    recording_aiops_effects,
    recording_effects,
    side_counts,
    tool_lines,
    tooled_aiops,
    tooled_chat,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct
from diagnosis_core.adapters.langgraph import (
    build_diagnosis_graph,
    diagnosis_graph_values,
    diagnosis_journal_of,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)
from diagnosis_core.adapters.langgraph_aiops import (
    aiops_graph_values,
    aiops_journal_of,
    build_aiops_graph,
    resume_aiops_graph,
    run_aiops_graph,
)

CHAT_DOC = load_doc(EXAMPLES_DIR / "payment_timeout.json")
AIOPS_DOC = load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json")
POINTS = ("before", "during", "after")
CHAT_EFFECTS = ("planner", "executor", "gatekeeper", "verifier", "composer")
AIOPS_EFFECTS = ("supervisor", "planner", "executor", "reporter")


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


def _graph(workflow: str, side: str, log: str, saver: Any) -> tuple[Any, Any, dct.RunRecorders]:
    recorders = dct.RunRecorders()
    if workflow == "aiops":
        request, effects = recording_aiops_effects(AIOPS_DOC, side)
        effects = tooled_aiops(effects, recorders, log, None)
        return request, build_aiops_graph(effects, checkpointer=saver, tools=recorders), recorders
    request, effects = recording_effects(CHAT_DOC, side)
    effects = tooled_chat(effects, recorders, log, None)
    return request, build_diagnosis_graph(effects, checkpointer=saver, tools=recorders), recorders


def _uninterrupted(workflow: str, tmp_path: Path) -> tuple[Any, Any]:
    """The uninterrupted run (its state) and its journal, with the same tools."""
    folder = tmp_path / "reference"
    folder.mkdir()
    with sqlite3.connect(folder / "c.sqlite", check_same_thread=False) as connection:
        saver = SqliteSaver(connection)
        request, graph, _ = _graph(
            workflow, str(folder / "side"), str(folder / "tools"), saver
        )
        if workflow == "aiops":
            state = run_aiops_graph(graph, request)
            values = aiops_graph_values(graph, thread_id=request.run.run_id)
            return state, aiops_journal_of(values)
        state = run_diagnosis_graph(graph, request)
        values = diagnosis_graph_values(graph, thread_id=request.run.run_id)
        return state, diagnosis_journal_of(values)


_REFERENCES: dict[str, tuple[Any, Any]] = {}


def _reference(workflow: str, tmp_path: Path) -> tuple[Any, Any]:
    if workflow not in _REFERENCES:
        _REFERENCES[workflow] = _uninterrupted(workflow, tmp_path)
    return _REFERENCES[workflow]


def _matrix(workflow: str) -> list[tuple[str, str, Any, str]]:
    effects = AIOPS_EFFECTS if workflow == "aiops" else CHAT_EFFECTS
    cases = [(workflow, "effect", call, point) for call in effects for point in POINTS]
    cases += [(workflow, "tool", index, point) for index in (0, 1) for point in POINTS]
    return cases


MATRIX = _matrix("chat") + _matrix("aiops")


@pytest.mark.parametrize("case", MATRIX, ids=["-".join(map(str, case)) for case in MATRIX])
def test_a_worker_killed_anywhere_resumes_in_a_new_process(
    forks: ForkServer, tmp_path: Path, case: tuple[str, str, Any, str]
) -> None:
    workflow, kind, where, point = case
    aiops = workflow == "aiops"
    database, side, log = tmp_path / "c.sqlite", tmp_path / "side.jsonl", tmp_path / "tools.log"
    job = {
        "op": "run", "doc": AIOPS_DOC if aiops else CHAT_DOC, "thread": "t",
        "saver": {"sqlite": str(database)}, "side": str(side), "key": None,
        "kill": [where, 0, point] if kind == "effect" else None,
        "tool_kill": [where, point] if kind == "tool" else None,
        "tools": str(log), "workflow": workflow, "out": str(tmp_path / "out"),
    }
    [outcome] = forks.run(job)
    out = tmp_path / "out"
    assert outcome == {"code": None, "signal": 9}, out.read_text() if out.exists() else outcome
    with sqlite3.connect(database, check_same_thread=False) as connection:
        saver = SqliteSaver(connection)
        _, graph, recorders = _graph(workflow, str(side), str(log), saver)
        resume = resume_aiops_graph if aiops else resume_diagnosis_graph
        state = resume(graph, thread_id="t")
        values = (aiops_graph_values if aiops else diagnosis_graph_values)(graph, thread_id="t")
        journal = (aiops_journal_of if aiops else diagnosis_journal_of)(values)
    reference, reference_journal = _reference(workflow, tmp_path)

    performed = collections.Counter(line.split()[1] for line in tool_lines(log))
    assert all(count == 1 for count in performed.values()), performed  # no tool twice
    assert side_counts(side)["executor"] <= 1

    executor_killed = kind == "tool" or (where == "executor" and point != "after")
    gatekeeper_killed = not aiops and where == "gatekeeper" and point != "after"
    if executor_killed:
        assert state.result.reason_code.value == "EXECUTOR_FAILED"
    elif gatekeeper_killed:
        assert state.result.reason_code.value == "GATEKEEPER_UNAVAILABLE"
    else:
        assert dc.to_json(state) == dc.to_json(reference)
        assert len(performed) == 2
    if not executor_killed:  # the ledger crossed the process with the journal
        ledger = [
            item.invocation_id
            for entry in journal.entries
            for item in entry.tool_invocations or ()
        ]
        assert ledger == ["inv-1", "inv-2"]
        if aiops:
            assert dc.to_json(
                dca.evaluate_aiops_run(state, dcj.aiops_journal_ledger(journal))
            ) == dc.to_json(
                dca.evaluate_aiops_run(reference, dcj.aiops_journal_ledger(reference_journal))
            )
        else:
            assert state.result.reason_code is not dc.ReasonCode.GATEKEEPER_REJECTED
            gatekeeper_here = where in ("planner", "executor") and kind == "effect"
            if gatekeeper_here:  # this process's recorder was rebuilt from the checkpoint
                run_id = state.request.run.run_id
                assert [r.invocation_id for r in recorders.recorder(run_id).records()] == [
                    "inv-1", "inv-2",
                ]
