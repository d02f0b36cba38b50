"""The LangGraph adapter on PostgreSQL (``langgraph-checkpoint-postgres``): a real server.

The module starts its own PostgreSQL cluster (``initdb`` + ``pg_ctl`` of the
Debian ``postgresql`` package, run as the ``postgres`` user when we are root)
on 127.0.0.1 and a free port, and stops it at the end. The tests skip only
where no server binary exists. They are the core tests of the SQLite ones: a
run of every example, exact round trips, a kill and a resume in another
process, forged checkpoints, and two worker processes resuming two runs from
one database at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.postgres")
pytest.importorskip("psycopg")

from adapter_support import EXAMPLES_DIR, chat_example_paths, load_doc, reference_state, scenario_of
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph_support import (
    ForkServer,
    edit_entry,
    forge_checkpoint,
    postgres_server,
    recording_effects,
    side_counts,
)
from test_langgraph_kill import check

import diagnosis_core as dc
from diagnosis_core.adapters.langgraph import (
    GATEKEEPER_NODE,
    build_diagnosis_graph,
    diagnosis_state_of,
    graph_run_config,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)
from tests._reach import journal as dcj

PAYMENT = load_doc(EXAMPLES_DIR / "payment_timeout.json")
KEY = b"postgres host key"


@pytest.fixture(scope="module")
def conninfo() -> Iterator[str]:
    try:
        with postgres_server() as info:
            with PostgresSaver.from_conn_string(info) as saver:
                saver.setup()
            yield info
    except LookupError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


@pytest.fixture
def saver(conninfo: str) -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(conninfo) as opened:
        yield opened


def _thread(tmp_path: Path) -> str:
    return f"thread-{tmp_path.name}"


@pytest.mark.parametrize("path", chat_example_paths(), ids=lambda p: p.stem)
def test_every_example_runs_through_postgres_like_the_sync_driver(
    saver: PostgresSaver, tmp_path: Path, path: Path
) -> None:
    doc = load_doc(path)
    request, effects = scenario_of(doc)
    graph = build_diagnosis_graph(effects, checkpointer=saver)
    state = run_diagnosis_graph(graph, request, thread_id=_thread(tmp_path))
    assert dc.to_json(state.result) == dc.to_json(reference_state(doc).result)
    stored = saver.get_tuple(graph_run_config(request.config, thread_id=_thread(tmp_path)))
    assert stored is not None
    assert diagnosis_state_of(stored.checkpoint["channel_values"]) == state


def test_postgres_keeps_nul_surrogates_and_huge_integers_exactly(
    saver: PostgresSaver, tmp_path: Path
) -> None:
    doc = load_doc(EXAMPLES_DIR / "payment_timeout.json")
    verifier = json.loads(doc["responses"]["verifier"][0]["text"])
    verifier["critical_fact_count"] = 2**70
    doc["responses"]["verifier"] = [{"text": json.dumps(verifier)}]
    doc["question"] += " \x00 and \U0001f600"  # jsonb refuses \u0000; text keeps it
    request, effects = scenario_of(doc)
    planner, failed = effects.planner, []

    def flaky(input: str, config: dc.RunConfig, /) -> str:
        if not failed:
            failed.append(True)
            raise TimeoutError("bad byte \ud800 from the model")
        return planner(input, config)

    thread = _thread(tmp_path)
    graph = build_diagnosis_graph(attrs.evolve(effects, planner=flaky), checkpointer=saver)
    state = run_diagnosis_graph(graph, request, thread_id=thread)
    assert r"\ud800" in dc.to_json(state) and state.calls.planner == 2
    assert state.evaluation is not None
    assert state.evaluation.output.critical_fact_count == 2**70
    stored = saver.get_tuple(graph_run_config(request.config, thread_id=thread))
    assert stored is not None
    restored = diagnosis_state_of(stored.checkpoint["channel_values"])
    assert restored == state and restored.request.question == request.question


KILLS = [("executor", 0, "during"), ("verifier", 0, "during"), ("gatekeeper", 0, "after")]


@pytest.mark.parametrize("kill", KILLS, ids=["-".join(map(str, k)) for k in KILLS])
def test_a_run_killed_in_a_child_resumes_from_postgres_in_this_process(
    forks: ForkServer, conninfo: str, tmp_path: Path, kill: tuple[str, int, str]
) -> None:
    side, thread = tmp_path / "side.jsonl", _thread(tmp_path)
    job = _job(conninfo, tmp_path, thread, "run", kill)
    assert forks.run(job) == [{"code": None, "signal": 9}]
    _, effects = recording_effects(PAYMENT, str(side))
    with PostgresSaver.from_conn_string(conninfo) as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver, key=KEY)
        state = resume_diagnosis_graph(graph, thread_id=thread)
    check(state, side_counts(side), kill)


def _job(
    conninfo: str, folder: Path, thread: str, op: str, kill: tuple[str, int, str] | None
) -> dict[str, Any]:
    return {
        "op": op, "doc": PAYMENT, "thread": thread, "saver": {"postgres": conninfo},
        "side": str(folder / "side.jsonl"), "kill": list(kill) if kill else None,
        "key": KEY.hex(), "out": str(folder / f"{op}.json"),
    }


def test_two_worker_processes_resume_two_runs_from_one_database(
    forks: ForkServer, conninfo: str, tmp_path: Path
) -> None:
    kills = {"a": ("verifier", 0, "during"), "b": ("executor", 0, "after")}
    folders = {name: tmp_path / name for name in kills}
    for folder in folders.values():
        folder.mkdir()
    threads = {name: f"{_thread(tmp_path)}-{name}" for name in kills}
    jobs = [_job(conninfo, folders[n], threads[n], "run", kill) for n, kill in kills.items()]
    started = forks.run(*jobs)
    assert started == [{"code": None, "signal": 9}] * 2
    resumed = forks.run(  # two processes at once, one database
        *(_job(conninfo, folders[n], threads[n], "resume", None) for n in kills)
    )
    assert resumed == [{"code": 0, "signal": None}] * 2, [
        (folder / "resume.json").read_text() for folder in folders.values()
    ]
    expected = dc.to_json(reference_state(PAYMENT).result)
    for name, kill in kills.items():
        out = json.loads((folders[name] / "resume.json").read_text())
        assert out["result"] == expected
        side = side_counts(folders[name] / "side.jsonl")
        counters = out["calls"]
        assert side["executor"] == counters["executor"] == 1
        resent = 1 if kill[2] == "during" else 0
        assert side[kill[0]] == counters[kill[0]] + resent


@pytest.mark.parametrize(
    ("key", "change", "match"),
    [
        (KEY, lambda w: w["outcome"]["result"].update(status="pass"), r"entries\[2\]\.mac"),
        (None, lambda w: w.update(input_sha256="f" * 64), r"entries\[2\]\.input_sha256"),
        (None, lambda w: w.update(attempt=-200), r"entries\[2\]\.attempt"),
    ],
    ids=["signed-pass", "input-hash", "attempt"],
)
def test_a_forged_postgres_checkpoint_is_refused_on_resume(
    saver: PostgresSaver, tmp_path: Path, key: bytes | None, change: Any, match: str
) -> None:
    doc = load_doc(EXAMPLES_DIR / "redis_latency_evidence_retry.json")
    request, effects = scenario_of(doc)
    thread = _thread(tmp_path)
    graph = build_diagnosis_graph(
        effects, checkpointer=saver, interrupt_after=[GATEKEEPER_NODE], key=key
    )
    assert not run_diagnosis_graph(graph, request, thread_id=thread).finished
    forge_checkpoint(saver, thread, edit_entry(-1, change))
    _, fresh = scenario_of(doc)
    with pytest.raises(dcj.JournalError, match=match):
        resume_diagnosis_graph(
            build_diagnosis_graph(fresh, checkpointer=saver, key=key), thread_id=thread
        )
