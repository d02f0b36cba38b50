"""The kill matrix: Temporal and DBOS (SQLite, PostgreSQL), both workflows, real SIGKILL.

For every effect of a run — planner … composer, gatekeeper; supervisor …
reporter — a process is killed just before it is performed and just after it
returned (performed, not yet recorded), and for every tool call of the executor
just before and just after the tool ran (``kill_matrix_support.CrashPlan``).
A new worker (Temporal) or a new process launching DBOS on the same system
database finishes the run, and:

* the finished state is byte-identical to the uninterrupted run's, or — when
  the killed entry is one the §12 resume rule never sends again (an executor,
  a gatekeeper) — to the plain driver's run resumed from the journal cut at
  that entry (the fail-closed outcome);
* no tool ran twice, the executor was performed at most once per entry;
* each agent's counter equals the calls performed, but for the killed call:
  an LLM call performed and lost is performed once more as the same attempt,
  an executor or gatekeeper killed before it ran is counted and never performed.

The doomed processes are forked from one warm parent (``kill_matrix_process.py``)
and the cases of an engine run side by side, so each engine's matrix stays
within a few minutes of CI time on one Temporal dev server.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("temporalio")
pytest.importorskip("dbos")

from adapter_support import parent_of, process_gone
from kill_matrix_support import CrashPlan, aiops_case, chat_case, log_lines

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct

HERE = Path(__file__).resolve().parent
RESENT_AIOPS = frozenset({"supervisor", "planner", "reporter"})
_FORKED: list[int] = []  # every doomed child forked for this module
_CASE_SECONDS = 300  # one Temporal case, its worker killed and a new one finishing the run


@attrs.frozen
class Case:
    workflow: str  # "chat" | "aiops"
    point: str
    killed: int  # the index of the journal entry the kill interrupts
    agent: str  # that entry's call
    resent: bool  # the §12 rule sends it again

    @property
    def name(self) -> str:
        return f"{self.workflow}-{self.point}"


def _records(entries: Any) -> list[dict[str, Any]]:
    records = []
    for entry in entries:
        for item in entry.tool_invocations or ():
            record = item.to_record()
            record.setdefault("input", None)
            records.append(record)
    return records


def _call(entry: Any) -> str:
    return str(getattr(entry.call, "value", entry.call))


def _plain(workflow: str, run_id: str, log: Path, journal: Any = None) -> tuple[str, Any]:
    """The plain driver's run (resumed from ``journal`` when given); its JSON and journal."""
    recorders = dct.RunRecorders()
    plan = CrashPlan(None, None)
    records = _records(journal.entries) if journal is not None else []
    if workflow == "chat":
        request, effects = chat_case(run_id, recorders, log, plan)
        sink = dcj.ListJournalSink()
        state = dc.run_diagnosis(
            request, effects, journal=journal, sink=sink, tools=recorders(run_id, records)
        )
        return dc.to_json(state), sink.journal(request) if journal is None else None
    aiops_request, aiops = aiops_case(run_id, recorders, log, plan)
    aiops_sink = dcj.ListAiOpsJournalSink()
    aiops_state = dca.run_aiops(
        aiops_request, aiops, journal=journal, sink=aiops_sink, tools=recorders(run_id, records)
    )
    return dc.to_json(aiops_state), aiops_sink.journal(aiops_request) if journal is None else None


def _cases(workflow: str, scratch: Path) -> list[Case]:
    _, journal = _plain(workflow, "reference", scratch / f"{workflow}-reference.log")
    entries = journal.entries
    executors = [i for i, entry in enumerate(entries) if _call(entry) == "executor"]
    points = [(f"{when}:{i}", i) for i in range(len(entries)) for when in ("before", "after")]
    points += [
        (f"tool-{when}:{j}", executors[j // 2])
        for j in range(2 * len(executors))
        for when in ("before", "after")
    ]
    cases = []
    for point, killed in points:
        agent = _call(entries[killed])
        resent = (
            dcj.resent_on_resume(entries[killed].call)
            if workflow == "chat"
            else agent in RESENT_AIOPS
        )
        cases.append(Case(workflow, point, killed, agent, resent))
    return cases


def _expected(case: Case, run_id: str, scratch: Path) -> str:
    """The uninterrupted run's JSON, or the fail-closed outcome of the killed entry."""
    uninterrupted, journal = _plain(case.workflow, run_id, scratch / f"{run_id}.reference.log")
    if case.resent:
        return uninterrupted
    # The fail-closed outcome: the plain driver resumes the journal cut at the killed
    # entry, left started, and settles it by the §12 rule.
    entries = journal.entries
    started = attrs.evolve(
        entries[case.killed], state=dcj.EntryState.STARTED, outcome=None, tool_invocations=None
    )
    cut = attrs.evolve(journal, entries=(*entries[: case.killed], started), end=None)
    log = scratch / f"{run_id}.cut.log"
    log.write_text(
        "".join(f"done {_call(entry)}\n" for entry in entries[: case.killed]), encoding="utf-8"
    )
    expected, _ = _plain(case.workflow, run_id, log, cut)
    return expected


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    scratch = tmp_path_factory.mktemp("references")
    found = [*_cases("chat", scratch), *_cases("aiops", scratch)]
    only = os.environ.get("KILL_MATRIX_ONLY")  # e.g. "chat-after:0", to look at one case
    if only:
        return [case for case in found if case.name == only]
    # Both kinds of outcome are exercised for both workflows.
    for workflow in ("chat", "aiops"):
        kinds = {case.resent for case in found if case.workflow == workflow}
        assert kinds == {True, False}, workflow
    return found


@pytest.fixture(scope="module")
def forker() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "kill_matrix_process.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    try:
        yield process
    finally:
        # A child whose point was never reached (a failed case) goes too; only a child of
        # this forker is killed (a pid may have been reused), and it may vanish meanwhile.
        for pid in _FORKED:
            if parent_of(pid) == process.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def _fork(forker: subprocess.Popen[str], order: dict[str, Any]) -> int:
    assert forker.stdin is not None and forker.stdout is not None
    forker.stdin.write(json.dumps(order) + "\n")
    forker.stdin.flush()
    pid = int(forker.stdout.readline())
    _FORKED.append(pid)
    return pid


def _dead(pid: int) -> bool:
    # The doomed child may vanish at any instant, even between the opening and the reading
    # of its /proc/PID/stat (ProcessLookupError): adapter_support.process_gone.
    return process_gone(pid)


def _wait_killed(fired: Path, pid: int, deadline: float) -> None:
    while not (fired.exists() and _dead(pid)):
        assert time.monotonic() < deadline, f"{fired.name}: the process was not killed in time"
        time.sleep(0.05)


def _check(case: Case, run_id: str, state_json: str, journal: Any, log: Path) -> None:
    assert state_json == _expected(case, run_id, log.parent), case.name
    lines = log_lines(log)
    performed = collections.Counter(line.split()[1] for line in lines if line.startswith("call "))
    entries = collections.Counter(_call(entry) for entry in journal.entries)
    tools = collections.Counter(line for line in lines if line.startswith("tool "))
    # No tool twice: each service at most once per executor call performed, which is
    # at most once per executor entry.
    assert performed["executor"] <= entries["executor"], case.name
    assert all(count <= performed["executor"] for count in tools.values()), (case.name, tools)
    when = case.point.split(":")[0]
    for agent, count in entries.items():
        delta = 0
        if agent == case.agent and when == "after" and case.resent:
            delta = 1  # performed, lost, performed again as the same attempt
        if agent == case.agent and when == "before" and not case.resent:
            delta = -1  # begun, never performed, settled as interrupted
        assert performed[agent] == count + delta, (case.name, agent, performed, entries)


# --- Temporal ------------------------------------------------------------------------------


async def _temporal_case(
    client: Any, address: str, forker: subprocess.Popen[str], case: Case, scratch: Path
) -> None:
    from diagnosis_core.adapters.temporal import (
        DiagnosisWorkflow,
        create_diagnosis_worker,
        start_diagnosis_workflow,
    )
    from diagnosis_core.adapters.temporal_aiops import (
        AiOpsWorkflow,
        create_aiops_worker,
        start_aiops_workflow,
    )

    run_id = f"kill-{case.name}-{uuid.uuid4().hex[:6]}".replace(":", "-")
    queue, log, fired = run_id, scratch / f"{run_id}.log", scratch / f"{run_id}.fired"
    recorders = dct.RunRecorders()
    heartbeat = timedelta(seconds=2)
    if case.workflow == "chat":
        request, effects = chat_case(run_id, recorders, log, CrashPlan(None, None))
        handle: Any = await start_diagnosis_workflow(
            client, request, task_queue=queue, heartbeat_timeout=heartbeat
        )
    else:
        aiops_request, aiops = aiops_case(run_id, recorders, log, CrashPlan(None, None))
        handle = await start_aiops_workflow(
            client, aiops_request, task_queue=queue, heartbeat_timeout=heartbeat
        )
    order = {"engine": "temporal", "workflow": case.workflow, "run_id": run_id,
             "point": case.point, "log": str(log), "fired": str(fired),
             "address": address, "queue": queue}
    pid = _fork(forker, order)
    deadline = time.monotonic() + 60
    while not (fired.exists() and _dead(pid)):
        assert time.monotonic() < deadline, f"{case.name}: the process was not killed in time"
        await asyncio.sleep(0.05)
    if case.workflow == "chat":
        worker = create_diagnosis_worker(client, effects, task_queue=queue, tools=recorders)
    else:
        worker = create_aiops_worker(client, aiops, task_queue=queue, tools=recorders)
    async with worker:
        result = await handle.result()
        if case.workflow == "chat":
            journal: Any = dcj.Journal.load(await handle.query(DiagnosisWorkflow.diagnosis_journal))
            state_json = dc.to_json(dc.from_wire(dc.DiagnosisState, result))
        else:
            journal = dcj.AiOpsJournal.load(await handle.query(AiOpsWorkflow.aiops_journal))
            state_json = dc.to_json(dc.from_wire(dca.AiOpsState, result))
    _check(case, run_id, state_json, journal, log)


async def test_temporal_kill_matrix(
    temporal_address: str,
    forker: subprocess.Popen[str],
    cases: list[Case],
    tmp_path: Path,
) -> None:
    from temporalio.client import Client

    client = await Client.connect(temporal_address)
    gate = asyncio.Semaphore(8)

    async def one(case: Case) -> None:
        async with gate, asyncio.timeout(_CASE_SECONDS):
            await _temporal_case(client, temporal_address, forker, case, tmp_path)

    # A failed case cancels the others (a TaskGroup, not gather, which would leave them
    # running into the event loop's teardown), and no case waits past its own deadline.
    async with asyncio.TaskGroup() as group:
        for case in cases:
            group.create_task(one(case))


# --- DBOS ----------------------------------------------------------------------------------


_BATCH = 6  # DBOS processes side by side on two cores, doomed or recovering


def _dbos_matrix(
    forker: subprocess.Popen[str], cases: list[Case], scratch: Path, database: Any
) -> None:
    doomed = []  # (case, its order, the doomed process)
    for index, case in enumerate(cases):
        run_id = f"kill-{index}-{case.name}".replace(":", "-")
        url, schema = database(index)
        order = {"engine": "dbos", "workflow": case.workflow, "run_id": run_id,
                 "point": case.point, "log": str(scratch / f"{run_id}.log"),
                 "fired": str(scratch / f"{run_id}.fired"),
                 "database_url": url, "schema": schema}
        doomed.append((case, order, _fork(forker, order)))
        if len(doomed) % _BATCH == 0:
            for _, placed, pid in doomed[-_BATCH:]:
                _wait_killed(Path(placed["fired"]), pid, time.monotonic() + 60)
    for _, placed, pid in doomed:
        _wait_killed(Path(placed["fired"]), pid, time.monotonic() + 60)
    # Each killed run is finished by a new process: a DBOS launch on the same system
    # database recovers it (kill_matrix_process.py, "dbos-recover").
    for start in range(0, len(doomed), _BATCH):
        recovering = []
        for case, order, _ in doomed[start : start + _BATCH]:
            out = scratch / f"{order['run_id']}.recovered.json"
            pid = _fork(forker, {**order, "engine": "dbos-recover", "out": str(out)})
            recovering.append((case, order, out, pid))
        for case, order, out, pid in recovering:
            recovered = _recovered(out, pid, case)
            if case.workflow == "chat":
                journal: Any = dcj.Journal.load(recovered["journal"])
                state_json = dc.to_json(dc.from_wire(dc.DiagnosisState, recovered["result"]))
            else:
                journal = dcj.AiOpsJournal.load(recovered["journal"])
                state_json = dc.to_json(dc.from_wire(dca.AiOpsState, recovered["result"]))
            _check(case, order["run_id"], state_json, journal, Path(order["log"]))


def _recovered(out: Path, pid: int, case: Case) -> dict[str, Any]:
    """What the recovering process wrote: the run's result and journal, or its traceback."""
    deadline = time.monotonic() + 120
    while not out.exists():
        assert not _dead(pid) or out.exists(), f"{case.name}: the recovering process died"
        assert time.monotonic() < deadline, f"{case.name}: the run was not recovered in time"
        time.sleep(0.05)
    recovered: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in recovered, f"{case.name}: recovering failed:\n{recovered.get('error')}"
    return recovered


def test_dbos_kill_matrix_on_sqlite(
    forker: subprocess.Popen[str], cases: list[Case], tmp_path: Path
) -> None:
    def database(index: int) -> tuple[str, None]:
        return f"sqlite:///{tmp_path / f'dbos-{index}.sqlite'}", None

    _dbos_matrix(forker, cases, tmp_path, database)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    pytest.importorskip("psycopg")
    from langgraph_support import postgres_server_url

    try:
        with postgres_server_url() as url:
            yield url
    except LookupError as error:
        pytest.skip(str(error))


def test_dbos_kill_matrix_on_postgres(
    forker: subprocess.Popen[str], cases: list[Case], tmp_path: Path, postgres_url: str
) -> None:
    def database(index: int) -> tuple[str, str]:
        return postgres_url, f"kill_{index}"

    _dbos_matrix(forker, cases, tmp_path, database)
