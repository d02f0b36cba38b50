"""SIGKILL at every point of a LangGraph run, resume in a new process (spec §12 *Resume*).

A child process runs ``payment_timeout`` with the SQLite checkpointer and
effects that append every call to a side file (append + fsync), and SIGKILLs
itself before, during (recorded, not returned) or after (the checkpoint
holding its finished entry is written) one of the run's five effects. This
process — a new one, with a new graph and saver — resumes the run. Then:

* the result is the uninterrupted run's, byte for byte, or the fail-closed
  outcome of §12 for an interrupted executor (``EXECUTOR_FAILED``) or
  gatekeeper (``GATEKEEPER_UNAVAILABLE``);
* the executor ran at most once (the side file's executor records);
* every ``calls`` counter equals the calls the side file recorded, except
  the call that was interrupted: an LLM call killed *during* the effect was
  performed and then re-sent as the same attempt (one record more than its
  counter), an executor or gatekeeper call killed *before* it ran is counted
  because its outcome is unknown (one record less).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, load_doc, reference_state
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_support import KILL_POINTS, ForkServer, recording_effects, side_counts

import diagnosis_core as dc
from diagnosis_core.adapters.langgraph import build_diagnosis_graph, resume_diagnosis_graph

DOC = load_doc(EXAMPLES_DIR / "payment_timeout.json")
EFFECTS = ("planner", "executor", "gatekeeper", "verifier", "composer")
KEY = b"host key of the kill tests"
LLM = {"planner", "verifier", "composer"}


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


def kill_and_resume(
    forks: ForkServer,
    tmp_path: Path,
    kill: tuple[str, int, str],
    *,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    doc: dict[str, Any] = DOC,
) -> tuple[dc.DiagnosisState, dict[str, int]]:
    """Run in a child killed at ``kill``; resume here; the state and the side file's counts."""
    database, side, out = tmp_path / "checkpoints.sqlite", tmp_path / "side.jsonl", tmp_path / "out"
    job = {
        "op": "run", "doc": doc, "thread": "thread-1", "saver": {"sqlite": str(database)},
        "side": str(side), "kill": list(kill), "key": key.hex() if key else None,
        "resend_gatekeeper": resend_gatekeeper, "out": str(out),
    }
    [outcome] = forks.run(job)
    assert outcome == {"code": None, "signal": 9}, out.read_text() if out.exists() else outcome
    _, effects = recording_effects(doc, str(side))
    with SqliteSaver.from_conn_string(str(database)) as saver:
        graph = build_diagnosis_graph(
            effects, checkpointer=saver, key=key, resend_gatekeeper=resend_gatekeeper
        )
        state = resume_diagnosis_graph(graph, thread_id="thread-1")
    return state, side_counts(side)


def check(
    state: dc.DiagnosisState, side: dict[str, int], kill: tuple[str, int, str],
    *, resend_gatekeeper: bool = False,
) -> None:
    call, _, point = kill
    reference = reference_state(DOC)
    counters = dc.to_wire(state.calls)
    assert isinstance(counters, dict)
    fails_closed = point != "after" and (
        call == "executor" or (call == "gatekeeper" and not resend_gatekeeper)
    )
    if fails_closed:
        expected = (
            dc.ReasonCode.EXECUTOR_FAILED if call == "executor"
            else dc.ReasonCode.GATEKEEPER_UNAVAILABLE
        )
        assert state.result.reason_code is expected
        assert state.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    else:
        assert dc.to_json(state.result) == dc.to_json(reference.result)
        assert dc.to_json(state) == dc.to_json(reference)
    assert side["executor"] <= 1  # its tools never ran twice
    for name in EFFECTS:
        extra = 0
        if name == call and point == "during" and (name in LLM or resend_gatekeeper):
            extra = 1  # performed, lost with the process, re-sent as the same attempt
        if name == call and point == "before" and fails_closed:
            extra = -1  # never ran, but counted: nobody can know it did not
        assert side[name] == counters[name] + extra, (name, side, counters)


MATRIX = [(call, 0, point) for call in EFFECTS for point in KILL_POINTS]


@pytest.mark.parametrize("kill", MATRIX, ids=["-".join(map(str, k)) for k in MATRIX])
def test_a_run_killed_anywhere_resumes_in_a_new_process_as_section_12_says(
    forks: ForkServer, tmp_path: Path, kill: tuple[str, int, str]
) -> None:
    state, side = kill_and_resume(forks, tmp_path, kill)
    check(state, side, kill)


SIGNED = [("executor", 0, "during"), ("verifier", 0, "during"), ("gatekeeper", 0, "after")]


@pytest.mark.parametrize("kill", SIGNED, ids=["-".join(map(str, k)) for k in SIGNED])
def test_a_signed_run_killed_and_resumed_verifies_its_chain(
    forks: ForkServer, tmp_path: Path, kill: tuple[str, int, str]
) -> None:
    state, side = kill_and_resume(forks, tmp_path, kill, key=KEY)
    check(state, side, kill)
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        texts = saver.get_tuple({"configurable": {"thread_id": "thread-1"}}).checkpoint[
            "channel_values"]["journal"]
    assert all("mac" in json.loads(text) for text in texts)


@pytest.mark.parametrize("point", ["before", "during"])
def test_an_interrupted_gatekeeper_is_re_sent_when_the_host_chooses_so(
    forks: ForkServer, tmp_path: Path, point: str
) -> None:
    kill = ("gatekeeper", 0, point)
    state, side = kill_and_resume(forks, tmp_path, kill, resend_gatekeeper=True)
    check(state, side, kill, resend_gatekeeper=True)
