"""The multi-worker load harness: W worker processes per engine, N runs, random SIGKILL.

Shared by the load test (``test_engines_under_load.py``) and the worker script
(``_worker.py``), so both sides build the same runs from the same plan.

**Runs.** A plan is a list of :class:`Run` — a chat example, the chat example
whose executor calls a real recorded tool (``tooled``), or an AIOps example —
each with its own run id. Every worker serves every run of the plan, so any
worker can pick up any run after a kill.

**Effects that do not care which process calls them.** The scripted effects of
the package play their responses in call order, which only holds inside one
process. Here a response is chosen by what the machine asked for: the agent,
the hash of the input and the attempt (read from the ``effect_started``
observer hook), looked up in a table built from the uninterrupted run of the
plain synchronous driver. A planner re-sent by another worker as the same
attempt then gets the same response, a retry the next one.

**The event log.** Every worker appends to its own file (one ``write`` per
line, ``O_APPEND``, so a SIGKILL never leaves half a line): ``S`` when an
effect starts, ``E`` when it returns, ``T`` when a tool body runs, ``R`` when
a LangGraph worker finished a run, ``X`` when it failed to drive one. Each
line: kind, wall time, pid, run id, name. From these lines the test checks
that no tool and no executor ran twice and that no run had two effects in
flight at once (two live drivers), and measures the time from each kill to
the finish of the runs that had an effect in flight on the killed worker.

**The oracle.** A run's result must be the uninterrupted one (the plain sync
driver) or, when an executor or gatekeeper call was in flight on a killed
worker, the §12 fail-closed outcome of that call: the sync driver resuming the
reference journal cut right after that call's ``started`` entry.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ADAPTERS = HERE.parent / "adapters"
if str(ADAPTERS) not in sys.path:
    sys.path.insert(0, str(ADAPTERS))

import attrs  # noqa: E402
from adapter_support import EXAMPLES_DIR, load_doc  # noqa: E402
from tools_support import honest_evidence, query_logs  # noqa: E402

import diagnosis_core as dc  # noqa: E402
import diagnosis_core.aiops as dca  # noqa: E402
import diagnosis_core.journal as dcj  # noqa: E402
import diagnosis_core.machine as dcm  # noqa: E402
import diagnosis_core.tools as dct  # noqa: E402

WORKER_SCRIPT = HERE / "_worker.py"

# The mix of every plan, in order: chat (with and without a real tool, with
# retries, rejected, unavailable gatekeeper, zh-CN) and AIOps.
MIX: tuple[tuple[str, str], ...] = (
    ("tooled", "payment_timeout.json"),
    ("chat", "redis_latency_evidence_retry.json"),
    ("aiops", "aiops_payload_targeted.json"),
    ("chat", "composer_fails_twice.json"),
    ("aiops", "aiops_auto_discovery.json"),
    ("chat", "payment_timeout.json"),
    ("chat", "db_pool_forged_citations.json"),
    ("aiops", "aiops_alertmanager.json"),
    ("chat", "tool_ledger_reference_gatekeeper.json"),
    ("aiops", "aiops_rule_violation.json"),
    ("chat", "zh_cn_gatekeeper_unavailable.json"),
)
CHAT_AGENTS = ("planner", "executor", "verifier", "composer")
AIOPS_AGENTS = ("supervisor", "planner", "executor", "reporter")
TOOL_SERVICES = ("gateway", "pay-svc")
# How long each effect and each tool call takes: long enough for kills to land in them.
EFFECT_SECONDS = (0.08, 0.2)
TOOL_SECONDS = 0.05


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Run:
    """One run of a plan: its id, its kind (``chat``, ``tooled``, ``aiops``) and its example."""

    run_id: str
    kind: str
    example: str

    def doc(self) -> dict[str, Any]:
        doc = load_doc(EXAMPLES_DIR / self.example)
        doc["run"]["run_id"] = self.run_id
        return doc

    @property
    def aiops(self) -> bool:
        return self.kind == "aiops"

    def to_json(self) -> list[str]:
        return [self.run_id, self.kind, self.example]


def make_plan(prefix: str, count: int) -> list[Run]:
    """``count`` runs cycling through :data:`MIX`, ids ``<prefix>-<index>``."""
    return [
        Run(f"{prefix}-{index:03d}", *MIX[index % len(MIX)]) for index in range(count)
    ]


def write_plan(path: Path, runs: Iterable[Run]) -> None:
    path.write_text(json.dumps([run.to_json() for run in runs]), encoding="utf-8")


def read_plan(path: Path) -> list[Run]:
    return [Run(*item) for item in json.loads(path.read_text(encoding="utf-8"))]


# --- the event log --------------------------------------------------------------------


class EventLog:
    """One worker's append-only event file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.pid = os.getpid()

    def note(self, kind: str, run_id: str, name: str) -> None:
        os.write(self._fd, f"{kind} {time.time():.6f} {self.pid} {run_id} {name}\n".encode())


@dataclass(frozen=True)
class Event:
    kind: str
    at: float
    pid: int
    run_id: str
    name: str


def read_events(folder: Path) -> list[Event]:
    events = []
    for path in sorted(folder.glob("events-*.log")):
        for line in path.read_text(encoding="utf-8").splitlines():
            kind, at, pid, run_id, name = line.split(" ")
            events.append(Event(kind, float(at), int(pid), run_id, name))
    events.sort(key=lambda event: event.at)
    return events


# --- input-keyed scripted effects -------------------------------------------------------


class _Attempts:
    """The ``effect_started`` hook: the attempt of each agent call about to run.

    Keyed by run id, agent and input hash, so it works whichever thread the
    engine calls the hook and the effect from.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[tuple[str, str, str], int] = {}

    def effect_started(self, action: object, /) -> None:
        if isinstance(action, dcm.InvokeAgent | dcm.InvokeAiOpsAgent):
            key = (action.config.run_id, action.agent.value, digest(action.input))
            with self._lock:
                self._attempts[key] = action.attempt

    def attempt(self, run_id: str, agent: str, input_digest: str) -> int | None:
        with self._lock:
            return self._attempts.get((run_id, agent, input_digest))


class _Table:
    """A reference run's calls: (agent, input hash, attempt) -> the k-th scripted response."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str, int], int] = {}
        self.counts: dict[str, int] = defaultdict(int)
        self.current: dict[str, int] = {}

    def effect_started(self, action: object, /) -> None:
        if isinstance(action, dcm.InvokeAgent | dcm.InvokeAiOpsAgent):
            self.current[action.agent.value] = action.attempt

    def note(self, agent: str, input: str) -> None:
        index = self.counts[agent]
        self.counts[agent] += 1
        self.calls[(agent, digest(input), self.current[agent])] = index


class _SnapshotSink(dcj.ListJournalSink):
    """A journal sink that keeps the entry list after every write (the cuts of the oracle)."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[tuple[Any, ...]] = []

    def write(self, entry: Any, /) -> None:
        super().write(entry)
        self.snapshots.append(tuple(self.entries))


class _AiOpsSnapshotSink(dcj.ListAiOpsJournalSink):
    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[tuple[Any, ...]] = []

    def write(self, entry: Any, /) -> None:
        super().write(entry)
        self.snapshots.append(tuple(self.entries))


@dataclass
class Reference:
    """What the plain sync driver makes of a run: the state and the §12 fail-closed outcomes."""

    run: Run
    request: Any
    state_json: str
    result_json: str
    table: dict[tuple[str, str, int], int]
    # fail-closed result JSON -> the call whose interruption gives it
    fail_closed: dict[str, str] = field(default_factory=dict)
    executor_calls: int = 0
    gatekeeper_calls: int = 0
    # a scripted gatekeeper's answers by the hash of the evidence it was given
    gatekeeper_table: dict[str, tuple[bool, Any]] = field(default_factory=dict)


def _tooled_executor(
    recorders: dct.RunRecorders, log: EventLog | None
) -> Callable[[str, dc.RunConfig], str]:
    def executor(input: str, config: dc.RunConfig, /) -> str:
        def logged_query(service: str) -> dict[str, Any]:
            if log is not None:
                log.note("T", config.run_id, service)
                time.sleep(TOOL_SECONDS)
            return query_logs(service)

        tool = recorders.recorder(config.run_id).wrap("query_logs", logged_query)
        gateway, service = tool(TOOL_SERVICES[0]), tool(TOOL_SERVICES[1])
        return honest_evidence(gateway["invocation_id"], service["invocation_id"])

    return executor


def _chat_scenario(run: Run) -> Any:
    return dc.load_scenario(run.doc())


def _aiops_scenario(run: Run) -> Any:
    return dca.load_aiops_scenario(run.doc())


def reference(run: Run) -> Reference:
    """The run through the plain synchronous driver, and its fail-closed alternatives."""
    table = _Table()
    if run.aiops:
        scenario = _aiops_scenario(run)
        request = dca.aiops_scenario_request(scenario)
        scripted = dca.aiops_scenario_effects(scenario)
        noted = {name: _noting(table, name, getattr(scripted, name)) for name in AIOPS_AGENTS}
        effects = attrs.evolve(scripted, **noted)
        sink = _AiOpsSnapshotSink()
        state = dca.run_aiops(request, effects, sink=sink, observer=table)
        ref = Reference(run, request, dc.to_json(state), dc.to_json(state.result), table.calls)
        for snapshot in sink.snapshots:
            last = snapshot[-1]
            if last.state is dcj.EntryState.STARTED and last.call.value == "executor":
                cut = dcj.AiOpsJournal(request, snapshot)
                resumed = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), journal=cut)
                ref.fail_closed[dc.to_json(resumed.result)] = "executor"
        ref.executor_calls = table.counts["executor"]
        return ref
    scenario = _chat_scenario(run)
    request = dc.scenario_request(scenario)
    scripted = dc.scenario_effects(scenario)
    recorders = dct.RunRecorders()
    tools = None
    if run.kind == "tooled":
        scripted = attrs.evolve(
            scripted, executor=_tooled_executor(recorders, None), gatekeeper=recorders.gatekeeper()
        )
        tools = recorders(request.run.run_id, [])
    gatekeeper_calls: list[int] = []
    gatekeeper_table: dict[str, tuple[bool, Any]] = {}
    inner_gatekeeper = scripted.gatekeeper

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        gatekeeper_calls.append(1)
        try:
            answer = inner_gatekeeper(run_id, output)
        except Exception as error:
            gatekeeper_table[digest(dc.to_json(output))] = (False, error)
            raise
        gatekeeper_table[digest(dc.to_json(output))] = (True, answer)
        return answer

    effects = attrs.evolve(
        scripted,
        gatekeeper=gatekeeper,
        **{name: _noting(table, name, getattr(scripted, name)) for name in CHAT_AGENTS},
    )
    sink = _SnapshotSink()
    state = dc.run_diagnosis(request, effects, sink=sink, tools=tools, observer=table)
    ref = Reference(run, request, dc.to_json(state), dc.to_json(state.result), table.calls)
    for snapshot in sink.snapshots:
        last = snapshot[-1]
        call = last.call.value
        if last.state is dcj.EntryState.STARTED and call in ("executor", "gatekeeper"):
            cut = dcj.Journal(request, snapshot)
            fresh = dct.RunRecorders()
            again = dc.scenario_effects(scenario)
            if run.kind == "tooled":
                again = attrs.evolve(
                    again, executor=_tooled_executor(fresh, None), gatekeeper=fresh.gatekeeper()
                )
            resumed = dc.run_diagnosis(
                request, again, journal=cut,
                tools=fresh(request.run.run_id, dcj.journal_tool_records(cut)),
            )
            ref.fail_closed[dc.to_json(resumed.result)] = call
    ref.executor_calls = table.counts["executor"]
    ref.gatekeeper_calls = len(gatekeeper_calls)
    ref.gatekeeper_table = gatekeeper_table
    return ref


def _noting(
    table: _Table, name: str, call: Callable[[str, dc.RunConfig], str]
) -> Callable[[str, dc.RunConfig], str]:
    def noted(input: str, config: dc.RunConfig, /) -> str:
        table.note(name, input)
        return call(input, config)

    return noted


def _answering(answers: dict[str, tuple[bool, Any]]) -> Callable[[str, Any], object]:
    """A scripted gatekeeper that answers by the evidence it is given, not by call order."""

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        found = answers.get(digest(dc.to_json(output)))
        if found is None:
            raise RuntimeError("load: evidence the reference gatekeeper never saw")
        ok, answer = found
        if not ok:
            raise answer
        return answer

    return gatekeeper


class WorkerEffects:
    """The effects one worker process serves every run of a plan with.

    ``chat`` / ``aiops`` route each call by run id; agents answer from the
    reference table (see the module docstring), the gatekeeper is the run's
    own (scripted, or the reference gatekeeper over the run's recorded ledger
    for ``tooled`` runs). Every call is logged (``S`` / ``E``), each tool body
    too (``T``).
    """

    def __init__(self, runs: Sequence[Run], log: EventLog, *, seed: int) -> None:
        self.log = log
        self.random = random.Random(seed)
        self.recorders = dct.RunRecorders()
        self.attempts = _Attempts()
        self._runs = {run.run_id: run for run in runs}
        self._responses: dict[str, tuple[Any, dict[tuple[str, str, int], int]]] = {}
        self._gatekeepers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _prepare(self, run_id: str) -> None:
        """The reference of a run, built on its first call in this process (a fast start)."""
        with self._lock:
            if run_id in self._responses:
                return
            run = self._runs[run_id]
            ref = reference(run)
            scenario = _aiops_scenario(run) if run.aiops else _chat_scenario(run)
            if run.kind == "tooled":
                self._gatekeepers[run_id] = self.recorders.gatekeeper()
            elif not run.aiops and scenario.tool_ledger is not None:
                self._gatekeepers[run_id] = dc.scenario_effects(scenario).gatekeeper
            elif not run.aiops:
                self._gatekeepers[run_id] = _answering(ref.gatekeeper_table)
            self._responses[run_id] = (scenario, ref.table)

    def _pause(self) -> None:
        with self._lock:
            seconds = self.random.uniform(*EFFECT_SECONDS)
        time.sleep(seconds)

    def _agent(self, name: str) -> Callable[[str, dc.RunConfig], str]:
        def call(input: str, config: dc.RunConfig, /) -> str:
            run_id = config.run_id
            run = self._runs[run_id]
            self._prepare(run_id)
            if run.kind == "tooled" and name == "executor":
                self.log.note("S", run_id, name)
                try:
                    self._pause()
                    return _tooled_executor(self.recorders, self.log)(input, config)
                finally:
                    self.log.note("E", run_id, name)
            scenario, table = self._responses[run_id]
            input_digest = digest(input)
            attempt = self.attempts.attempt(run_id, name, input_digest)
            self.log.note("S", run_id, name)
            try:
                self._pause()
                if attempt is None:
                    raise dc.NonRetryableError(f"load: no effect_started hook for {name}")
                index = table.get((name, input_digest, attempt))
                if index is None:
                    raise dc.NonRetryableError(f"load: {name} attempt {attempt} is not scripted")
                agent = dcm.AiOpsAgent(name) if run.aiops else dcm.AgentName(name)
                text: str = scenario.responses[agent][index].perform()
                return text
            finally:
                self.log.note("E", run_id, name)

        return call

    def _gatekeeper(self, run_id: str, output: dc.ExecutorEvidence, /) -> object:
        self._prepare(run_id)
        gatekeeper = self._gatekeepers[run_id]
        self.log.note("S", run_id, "gatekeeper")
        try:
            self._pause()
            return gatekeeper(run_id, output)
        finally:
            self.log.note("E", run_id, "gatekeeper")

    def chat(self) -> dc.Effects:
        return dc.Effects(
            planner=self._agent("planner"),
            executor=self._agent("executor"),
            verifier=self._agent("verifier"),
            composer=self._agent("composer"),
            gatekeeper=self._gatekeeper,
        )

    def aiops(self) -> dca.AiOpsEffects:
        return dca.AiOpsEffects(
            supervisor=self._agent("supervisor"),
            planner=self._agent("planner"),
            executor=self._agent("executor"),
            reporter=self._agent("reporter"),
        )


# --- worker processes -------------------------------------------------------------------


def worker_environment() -> dict[str, str]:
    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, str(HERE), str(ADAPTERS), env.get("PYTHONPATH", "")])
    return env


@dataclass
class Kill:
    at: float
    slot: int
    pid: int


class Pool:
    """W worker processes (slots); a killed slot is started again with the same slot number."""

    def __init__(self, engine: str, settings: Path, folder: Path, workers: int) -> None:
        self.engine, self.settings, self.folder, self.workers = engine, settings, folder, workers
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.kills: list[Kill] = []
        self.started = 0

    def start(self, slot: int) -> subprocess.Popen[bytes]:
        self.started += 1
        out = (self.folder / f"worker-{slot}-{self.started}.out").open("wb")
        process = subprocess.Popen(
            [sys.executable, str(WORKER_SCRIPT), self.engine, str(self.settings), str(slot)],
            env=worker_environment(), stdout=out, stderr=subprocess.STDOUT,
        )
        out.close()
        self.processes[slot] = process
        return process

    def wait_ready(
        self, processes: Iterable[subprocess.Popen[bytes]], timeout: float = 120
    ) -> None:
        deadline = time.monotonic() + timeout
        for process in processes:
            ready = self.folder / f"ready-{process.pid}"
            while not ready.exists():
                if process.poll() is not None:
                    raise RuntimeError(f"a {self.engine} worker exited: {self.output()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"a {self.engine} worker is not ready: {self.output()}")
                time.sleep(0.05)

    def start_all(self, *, one_first: bool = False) -> None:
        slots = list(range(self.workers))
        if one_first:  # the first one creates the schema
            self.wait_ready([self.start(slots.pop(0))])
        self.wait_ready([self.start(slot) for slot in slots])

    def ready(self, slot: int) -> bool:
        process = self.processes[slot]
        return process.poll() is None and (self.folder / f"ready-{process.pid}").exists()

    def kill(self, slot: int) -> Kill:
        process = self.processes[slot]
        at = time.time()
        process.send_signal(signal.SIGKILL)
        process.wait()
        kill = Kill(at, slot, process.pid)
        self.kills.append(kill)
        return kill

    def check_alive(self) -> None:
        for slot, process in self.processes.items():
            if process.poll() is not None and not any(k.pid == process.pid for k in self.kills):
                raise RuntimeError(f"worker {slot} exited by itself: {self.output()}")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()

    def output(self) -> str:
        texts = [p.read_text(errors="replace")[-3000:] for p in sorted(self.folder.glob("*.out"))]
        return "\n---\n".join(t for t in texts if t.strip())


def open_effects(folder: Path, kills: Sequence[Kill], at: float) -> dict[int, set[str]]:
    """The runs with an effect started and not returned, per pid, at wall time ``at``."""
    killed = {k.pid for k in kills if k.at <= at}
    busy: dict[int, set[str]] = defaultdict(set)
    for event in read_events(folder):
        if event.at > at or event.pid in killed:
            continue
        if event.kind == "S":
            busy[event.pid].add(event.run_id)
        elif event.kind == "E":
            busy[event.pid].discard(event.run_id)
    return busy


_CATCH_TRIES = 50
"""How often a kill looks for a worker it can stop mid-effect before it takes any ready one."""


def chaos(
    pool: Pool,
    kills: int,
    in_flight: Callable[[], bool],
    rng: random.Random,
    submitted: threading.Event,
    *,
    between: tuple[float, float] = (0.3, 1.2),
) -> None:
    """SIGKILL ``kills`` workers at random instants while runs are in flight; restart each.

    The victim is a random ready worker with an effect in flight (any ready
    worker when none has); its slot is started again at once. A kill never
    takes the last ready worker, so one always serves while the others
    restart. The first kill comes after every run was submitted.
    """
    submitted.wait()
    for _ in range(kills):
        time.sleep(rng.uniform(*between))
        while in_flight() and sum(pool.ready(slot) for slot in pool.processes) < 2:
            time.sleep(0.05)  # never the last serving worker: another one carries the runs
        if not in_flight():
            return
        live = {p.pid: slot for slot, p in pool.processes.items() if pool.ready(slot)}
        if not live:
            continue
        pool.kill(_victim(pool, live, rng))
        pool.start(pool.kills[-1].slot)


def _victim(pool: Pool, live: dict[int, int], rng: random.Random) -> int:
    """A ready worker stopped (SIGSTOP) with an effect in flight; any ready one if none is.

    The effects are short, so a worker seen busy had often returned by the time it was
    killed, and a run could end with no kill having cut an effect (the check that the
    kills met effects then failed, once in a fresh-clone round). A stopped worker makes
    no progress: its log, read after the stop, says what is in flight at the kill.
    """
    for _ in range(_CATCH_TRIES):
        busy = open_effects(pool.folder, pool.kills, time.time())
        candidates = sorted(slot for pid, slot in live.items() if busy.get(pid))
        if candidates:
            slot = rng.choice(candidates)
            process = pool.processes[slot]
            process.send_signal(signal.SIGSTOP)
            if open_effects(pool.folder, pool.kills, time.time()).get(process.pid):
                return slot  # stopped mid-effect: the SIGKILL cuts it
            process.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    return rng.choice(sorted(live.values()))


# --- the checks -------------------------------------------------------------------------


@dataclass
class Finished:
    """A finished run as the engine returned it: its state JSON, result JSON and finish time."""

    state_json: str
    result_json: str
    done_at: float


def check_runs(
    refs: dict[str, Reference],
    finished: dict[str, Finished],
    events: Sequence[Event],
    kills: Sequence[Kill],
) -> list[str]:
    """Every violation of the load test's contract (empty when it held)."""
    problems: list[str] = []
    killed = {k.pid: k.at for k in kills}
    by_run: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_run[event.run_id].append(event)
    for run_id, ref in refs.items():
        done = finished.get(run_id)
        if done is None:
            problems.append(f"{run_id}: not finished")
            continue
        run_events = by_run.get(run_id, [])
        open_on_killed = _interrupted_calls(run_events, killed)
        if done.result_json != ref.result_json:
            call = ref.fail_closed.get(done.result_json)
            if call is None:
                problems.append(
                    f"{run_id} ({ref.run.example}): unexpected result {done.result_json[:300]}"
                )
            elif call not in open_on_killed:
                problems.append(
                    f"{run_id}: the fail-closed outcome of an interrupted {call}, "
                    f"but no kill cut a {call}"
                )
        starts = defaultdict(int)
        for event in run_events:
            if event.kind == "S":
                starts[event.name] += 1
        if starts["executor"] > ref.executor_calls:
            problems.append(f"{run_id}: the executor ran {starts['executor']} times")
        if starts["gatekeeper"] > ref.gatekeeper_calls:
            problems.append(f"{run_id}: the gatekeeper ran {starts['gatekeeper']} times")
        tools = defaultdict(int)
        for event in run_events:
            if event.kind == "T":
                tools[event.name] += 1
        twice = sorted(name for name, count in tools.items() if count > 1)
        if twice:
            problems.append(f"{run_id}: tool calls performed twice: {twice}")
        problems.extend(_overlaps(run_id, run_events, killed))
        problems.extend(
            f"{run_id}: a worker failed to drive it ({event.name})"
            for event in run_events
            if event.kind == "X"
        )
    return problems


def interrupted(events: Sequence[Event], kills: Sequence[Kill]) -> int:
    """How many effect calls were in flight on a worker when it was killed."""
    killed = {k.pid: k.at for k in kills}
    by_run: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_run[event.run_id].append(event)
    return sum(
        1
        for run_events in by_run.values()
        for start, end, pid, _ in effect_intervals(run_events, killed)
        if pid in killed and end == killed[pid]
    )


def _interrupted_calls(run_events: Sequence[Event], killed: dict[int, float]) -> set[str]:
    """The calls of a run that a kill may have cut before the engine recorded their outcome.

    A kill cuts the run it lands in: the killed worker logged the run's last
    event before the kill. The call it may have cut is one never started
    again after the kill: the call in flight, one that returned but whose
    outcome did not reach the engine's store yet, or the next call, whose
    ``started`` entry was committed and whose effect had not begun. The §12
    rule settles each of them like a call in flight.
    """
    cut: set[str] = set()
    for at in sorted(killed.values()):
        before = [event for event in run_events if event.at < at]
        if not before or before[-1].pid not in {p for p, t in killed.items() if t == at}:
            continue
        later = {event.name for event in run_events if event.at > at and event.kind == "S"}
        cut.update({"executor", "gatekeeper"} - later)
    return cut


def effect_intervals(
    run_events: Sequence[Event], killed: dict[int, float]
) -> list[tuple[float, float, int, str]]:
    """``(start, end, pid, call)`` of each effect of a run; a killed one ends at its kill."""
    opened: dict[tuple[int, str], list[float]] = defaultdict(list)
    intervals = []
    for event in run_events:
        key = (event.pid, event.name)
        if event.kind == "S":
            opened[key].append(event.at)
        elif event.kind == "E" and opened[key]:
            intervals.append((opened[key].pop(), event.at, event.pid, event.name))
    for (pid, name), starts in opened.items():
        for start in starts:
            intervals.append((start, killed.get(pid, float("inf")), pid, name))
    intervals.sort()
    return intervals


def _overlaps(run_id: str, run_events: Sequence[Event], killed: dict[int, float]) -> list[str]:
    """Two effects of one run in flight at once: two live drivers of one run."""
    problems = []
    intervals = effect_intervals(run_events, killed)
    for before, after in itertools.pairwise(intervals):
        if after[0] < before[1]:
            problems.append(
                f"{run_id}: {before[3]} on pid {before[2]} and {after[3]} on pid {after[2]} "
                "were in flight at once (two live drivers)"
            )
    return problems


# --- the figures ------------------------------------------------------------------------


def kill_to_done(
    finished: dict[str, Finished], events: Sequence[Event], kills: Sequence[Kill]
) -> list[float]:
    """Seconds from each kill to the finish of each run that was in flight on the killed worker.

    A run was in flight on a worker when an effect of it had started there and
    not returned at the kill: the kill cut that effect, and the figure is how
    long the engine took to notice, settle it by the §12 rule and finish the run.
    """
    seconds = []
    for kill in kills:
        opened: dict[str, int] = defaultdict(int)
        for event in events:
            if event.at >= kill.at:
                break
            if event.pid == kill.pid and event.kind in ("S", "E"):
                opened[event.run_id] += 1 if event.kind == "S" else -1
        seconds.extend(
            finished[run_id].done_at - kill.at
            for run_id, count in opened.items()
            if count > 0 and run_id in finished
        )
    return seconds


def percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[round(fraction * 100) - 1]


@dataclass
class Row:
    engine: str
    runs: int
    workers: int
    kills: int
    plain_rate: float
    kill_rate: float
    recovery: list[float]
    interrupted: int = 0
    fail_closed: int = 0
    note: str = ""

    def cells(self) -> list[str]:
        p50, p95 = percentile(self.recovery, 0.50), percentile(self.recovery, 0.95)
        return [
            self.engine, str(self.runs), str(self.workers), str(self.kills),
            f"{self.plain_rate:.2f}", f"{self.kill_rate:.2f}",
            "-" if p50 is None else f"{p50:.1f} s", "-" if p95 is None else f"{p95:.1f} s",
            str(self.interrupted), str(self.fail_closed), self.note,
        ]


HEADER = [
    "engine", "runs", "workers", "kills", "runs/s no kills", "runs/s kills",
    "kill-to-done p50", "p95", "effects cut", "fail-closed runs", "",
]


def table(rows: Sequence[Row]) -> str:
    lines = [HEADER, *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def state_of(run: Run, wire: Any, done_at: float) -> Finished:
    """A finished run from the state's wire form an engine returned."""
    state = dc.from_wire(dca.AiOpsState if run.aiops else dc.DiagnosisState, wire)
    return Finished(dc.to_json(state), dc.to_json(state.result), done_at)
