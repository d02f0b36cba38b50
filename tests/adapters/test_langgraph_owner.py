"""No lost run, one live owner per thread (LangGraph, both workflows; real processes).

* A worker SIGKILLed after LangGraph saved a run's input checkpoint and
  before step 0 leaves a thread with no request in its state; resuming it
  runs the run from that input (it used to be refused forever).
* While a worker drives a thread, a second live worker's run or resume of
  the same thread is refused with ThreadBusyError naming the owner, or waits
  when given ``wait_for_owner``; the owner's death (SIGKILL) frees the thread
  at once — SQLite (flock next to the database) and PostgreSQL (session
  advisory lock on a dedicated connection).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, load_doc, reference_state
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_support import (
    ForkServer,
    recording_aiops_effects,
    recording_effects,
    side_counts,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters._langgraph_owner import _THREAD_NAMESPACE as THREAD_NAMESPACE
from diagnosis_core.adapters.langgraph import (
    ThreadBusyError,
    build_diagnosis_graph,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)
from diagnosis_core.adapters.langgraph_aiops import build_aiops_graph, resume_aiops_graph
from diagnosis_core.journal import RunClaimedError
from diagnosis_core.stores import Claims, _ownership
from diagnosis_core.stores._ownership import advisory_key, exited_here

DOC = load_doc(EXAMPLES_DIR / "payment_timeout.json")
AIOPS_DOC = load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json")


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


def _job(tmp_path: Path, saver: dict[str, str], kill: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "op": "run", "doc": DOC, "thread": f"thread-{tmp_path.name}", "saver": saver,
        "side": str(tmp_path / "side.jsonl"), "kill": kill, "key": None,
        "out": str(tmp_path / "out"), **extra,
    }


@contextlib.contextmanager
def _sqlite(tmp_path: Path) -> Iterator[Any]:
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
        yield saver


# --- no lost run ---------------------------------------------------------------------------


def test_a_chat_run_killed_between_its_input_checkpoint_and_step_0_resumes(
    forks: ForkServer, tmp_path: Path
) -> None:
    job = _job(tmp_path, {"sqlite": str(tmp_path / "c.sqlite")}, ["input", 0, "input"])
    assert forks.run(job) == [{"code": None, "signal": 9}]
    assert side_counts(job["side"])["planner"] == 0  # nothing ran
    _, effects = recording_effects(DOC, job["side"])
    with _sqlite(tmp_path) as saver:
        stored = saver.get_tuple({"configurable": {"thread_id": job["thread"]}})
        assert stored is not None and stored.metadata["source"] == "input"
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        state = resume_diagnosis_graph(graph, thread_id=job["thread"])
    assert dc.to_json(state) == dc.to_json(reference_state(DOC))
    counts = side_counts(job["side"])
    assert counts["executor"] == 1 and counts["planner"] == state.calls.planner


def test_an_aiops_run_killed_between_its_input_checkpoint_and_step_0_resumes(
    forks: ForkServer, tmp_path: Path
) -> None:
    job = _job(
        tmp_path, {"sqlite": str(tmp_path / "c.sqlite")}, ["input", 0, "input"],
        doc=AIOPS_DOC, workflow="aiops",
    )
    assert forks.run(job) == [{"code": None, "signal": 9}]
    _, effects = recording_aiops_effects(AIOPS_DOC, job["side"])
    with _sqlite(tmp_path) as saver:
        state = resume_aiops_graph(
            build_aiops_graph(effects, checkpointer=saver), thread_id=job["thread"]
        )
    scenario = dca.load_aiops_scenario(AIOPS_DOC)
    expected = dca.run_aiops(
        dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)
    )
    assert dc.to_json(state) == dc.to_json(expected)
    assert side_counts(job["side"])["executor"] == state.calls.executor


def test_a_thread_nobody_started_is_still_refused(tmp_path: Path) -> None:
    _, effects = recording_effects(DOC, str(tmp_path / "side.jsonl"))
    with _sqlite(tmp_path) as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        with pytest.raises(dc.MachineError, match="'nobody' is unknown"):
            resume_diagnosis_graph(graph, thread_id="nobody")


# --- one live owner --------------------------------------------------------------------------


class Holder:
    """A worker process driving a thread, stalled inside its planner call."""

    def __init__(self, forks: ForkServer, job: dict[str, Any]) -> None:
        self.outcome: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=lambda: self.outcome.extend(forks.run(job)))
        self.thread.start()
        marker = Path(job["side"] + ".stalled")
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline and self.thread.is_alive(), "never stalled"
            time.sleep(0.02)
        time.sleep(0.05)  # the pid is written before the text is complete on some file systems
        self.pid = int(marker.read_text(encoding="utf-8"))

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.thread.join(timeout=60)
        assert self.outcome == [{"code": None, "signal": 9}]


def _second_worker_is_refused_then_takes_over(
    forks: ForkServer, tmp_path: Path, saver_spec: dict[str, str], open_saver: Any
) -> None:
    job = _job(tmp_path, saver_spec, ["planner", 0, "stall"])
    holder = Holder(forks, job)
    _, effects = recording_effects(DOC, job["side"])
    request, _ = recording_effects(DOC, str(tmp_path / "unused.jsonl"))
    try:
        with open_saver() as saver:
            graph = build_diagnosis_graph(effects, checkpointer=saver)
            owner = f"pid {holder.pid} on "
            with pytest.raises(ThreadBusyError, match=rf"thread '{job['thread']}'.*{owner}"):
                resume_diagnosis_graph(graph, thread_id=job["thread"])
            with pytest.raises(RunClaimedError, match="driven by another live worker"):
                run_diagnosis_graph(graph, request, thread_id=job["thread"])
            started = time.monotonic()
            with pytest.raises(ThreadBusyError):
                resume_diagnosis_graph(graph, thread_id=job["thread"], wait_for_owner=0.3)
            assert time.monotonic() - started >= 0.3
    finally:
        holder.kill()
    # The owner died: its lock went with it. On PostgreSQL the server may not have ended the
    # dead connection's session yet (a resume at once was refused, naming the killed pid, in
    # one run of the whole suite): the claimant waits for the server when the holder is a
    # process of this host that has exited, so no wait is passed here.
    with open_saver() as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        state = resume_diagnosis_graph(graph, thread_id=job["thread"])
    assert dc.to_json(state) == dc.to_json(reference_state(DOC))
    counts = side_counts(job["side"])
    assert counts["planner"] == state.calls.planner + 1  # performed, lost, re-sent
    assert counts["executor"] == 1


def _a_waiting_worker_takes_over_when_the_owner_dies(
    forks: ForkServer, tmp_path: Path, saver_spec: dict[str, str], open_saver: Any
) -> None:
    job = _job(tmp_path, saver_spec, ["planner", 0, "stall"])
    holder = Holder(forks, job)
    _, effects = recording_effects(DOC, job["side"])
    result: list[Any] = []

    def wait_and_resume() -> None:
        with open_saver() as saver:
            graph = build_diagnosis_graph(effects, checkpointer=saver)
            result.append(
                resume_diagnosis_graph(graph, thread_id=job["thread"], wait_for_owner=60)
            )

    waiter = threading.Thread(target=wait_and_resume)
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and not result  # it waits for the owner
    holder.kill()
    waiter.join(timeout=60)
    assert result and dc.to_json(result[0]) == dc.to_json(reference_state(DOC))


def test_sqlite_one_live_owner_per_thread(forks: ForkServer, tmp_path: Path) -> None:
    _second_worker_is_refused_then_takes_over(
        forks, tmp_path, {"sqlite": str(tmp_path / "c.sqlite")}, lambda: _sqlite(tmp_path)
    )


def test_sqlite_a_waiting_worker_takes_over(forks: ForkServer, tmp_path: Path) -> None:
    _a_waiting_worker_takes_over_when_the_owner_dies(
        forks, tmp_path, {"sqlite": str(tmp_path / "c.sqlite")}, lambda: _sqlite(tmp_path)
    )


def test_two_drivers_in_one_process_are_refused_too() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from diagnosis_core.adapters._langgraph_owner import owner

    saver = InMemorySaver()
    with owner(saver, "t", None):
        busy = pytest.raises(ThreadBusyError, match=rf"thread 't'.*pid {os.getpid()} on ")
        with busy, owner(saver, "t", None):
            pass
        with owner(saver, "other", None):
            pass
    with owner(saver, "t", None):  # released on exit
        pass


@pytest.fixture(scope="module")
def conninfo() -> Iterator[str]:
    pytest.importorskip("langgraph.checkpoint.postgres")
    pytest.importorskip("psycopg")
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph_support import postgres_server

    try:
        with postgres_server() as info:
            with PostgresSaver.from_conn_string(info) as saver:
                saver.setup()
            yield info
    except LookupError as error:
        pytest.skip(str(error))


def _postgres(conninfo: str) -> Any:
    from langgraph.checkpoint.postgres import PostgresSaver

    return PostgresSaver.from_conn_string(conninfo)


def test_postgres_one_live_owner_per_thread(
    forks: ForkServer, tmp_path: Path, conninfo: str
) -> None:
    _second_worker_is_refused_then_takes_over(
        forks, tmp_path, {"postgres": conninfo}, lambda: _postgres(conninfo)
    )


def test_postgres_a_waiting_worker_takes_over(
    forks: ForkServer, tmp_path: Path, conninfo: str
) -> None:
    _a_waiting_worker_takes_over_when_the_owner_dies(
        forks, tmp_path, {"postgres": conninfo}, lambda: _postgres(conninfo)
    )


# --- an exited owner whose PostgreSQL session lingers ----------------------------------------


def _exited_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


@contextlib.contextmanager
def _held_as(conninfo: str, holder: str, name: str) -> Iterator[Any]:
    """A connection named ``holder`` holding ``name``'s thread lock (a stand-in owner)."""
    import psycopg

    conn = psycopg.connect(conninfo, autocommit=True)
    try:
        conn.execute("SELECT set_config('application_name', %s, false)", (holder,))
        conn.execute("SELECT pg_advisory_lock(%s)", (advisory_key(THREAD_NAMESPACE, name),))
        yield conn
    finally:
        conn.close()


def _claims(conninfo: str) -> Any:
    return Claims.on_postgres(conninfo, THREAD_NAMESPACE)


def test_postgres_a_claimant_waits_while_the_server_ends_an_exited_owners_session(
    conninfo: str,
) -> None:
    with _held_as(conninfo, f"pid {_exited_pid()} on {socket.gethostname()}", "t-exited") as held:
        timer = threading.Timer(0.5, held.close)  # the server ends the session, late
        timer.start()
        started = time.monotonic()
        handle, holder = _claims(conninfo).try_acquire("t-exited")
        timer.join()
    assert holder is None and handle is not None  # taken over, not refused
    assert time.monotonic() - started >= 0.4
    handle.close()


def test_postgres_a_live_owner_is_refused_at_once(conninfo: str) -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with _held_as(conninfo, f"pid {alive.pid} on {socket.gethostname()}", "t-live"):
            started = time.monotonic()
            handle, holder = _claims(conninfo).try_acquire("t-live")
            assert time.monotonic() - started < 2
    finally:
        alive.kill()
        alive.wait(timeout=60)
    assert handle is None and holder is not None
    assert holder.startswith(f"pid {alive.pid} on ") and "exited" not in holder


def test_postgres_an_owner_of_another_host_is_refused_at_once(conninfo: str) -> None:
    with _held_as(conninfo, f"pid {_exited_pid()} on another-host", "t-remote"):
        started = time.monotonic()
        handle, holder = _claims(conninfo).try_acquire("t-remote")
        assert time.monotonic() - started < 2
    assert handle is None and holder is not None
    assert " on another-host (server pid " in holder and "exited" not in holder


def test_postgres_an_exited_owners_session_that_stays_is_refused_after_the_grace(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ownership, "DEAD_OWNER_GRACE", 0.3)
    pid = _exited_pid()
    with _held_as(conninfo, f"pid {pid} on {socket.gethostname()}", "t-stays"):
        started = time.monotonic()
        handle, holder = _claims(conninfo).try_acquire("t-stays")
        assert time.monotonic() - started >= 0.3
    assert handle is None and holder is not None
    assert holder.startswith(f"pid {pid} on ") and "the process has exited" in holder


def test_exited_here_tells_only_an_exited_process_of_this_host() -> None:
    host = socket.gethostname()
    assert exited_here(f"pid {_exited_pid()} on {host}")
    assert not exited_here(f"pid {os.getpid()} on {host}")  # this process
    assert not exited_here(f"pid {os.getppid()} on {host}")  # alive
    assert not exited_here(f"pid {_exited_pid()} on not-{host}")
    assert not exited_here(f"pid {_exited_pid()} on {host[:-1]}")  # a truncated name
    assert not exited_here("someone else")
    assert not exited_here("pid x on " + host)
