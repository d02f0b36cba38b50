"""Benchmarks of the LangGraph adapter, the ``langgraph`` section of ``run.py``.

1. The adapter's own glue: a run of ``redis_latency_evidence_retry`` through
   ``build_diagnosis_graph`` divided by (a bare LangGraph graph with the same
   number of no-op supersteps + the sync driver on the same run), without a
   saver, with ``InMemorySaver`` and with ``SqliteSaver`` (a file each, for
   the adapter and the bare graph). Target: at most 1.2×.
2. Checkpoint bytes per run (``SqliteSaver``, its tables' bytes for the
   thread) for ``payment_timeout`` with a 1 KB and a 1 MB executor output,
   against the journal's canonical JSON (``docs/langgraph.md``; the tested
   bound at 1 MB is 3×).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from timing import calibrate_loops, interleave

import diagnosis_core as dc
import diagnosis_core.journal as dcj

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "redis_latency_evidence_retry.json"
SIZE_EXAMPLE = ROOT / "examples" / "payment_timeout.json"


class _Scripted:
    """Effects whose agents answer from a fresh copy of the scenario's script every run."""

    def __init__(self, scenario: dc.Scenario) -> None:
        self.scenario = scenario
        self.current = dc.scenario_effects(scenario)

    def reset(self) -> None:
        self.current = dc.scenario_effects(self.scenario)

    def effects(self) -> dc.Effects:
        return dc.Effects(
            planner=lambda i, c, /: self.current.planner(i, c),
            executor=lambda i, c, /: self.current.executor(i, c),
            verifier=lambda i, c, /: self.current.verifier(i, c),
            composer=lambda i, c, /: self.current.composer(i, c),
            gatekeeper=lambda r, o, /: self.current.gatekeeper(r, o),
        )


class _Counter(TypedDict):
    n: int


def _bare_graph(steps: int, checkpointer: Any) -> Any:
    """A LangGraph graph of ``steps`` no-op supersteps (one node going to itself)."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command

    def step(state: _Counter) -> Command[str]:
        count = state["n"] + 1
        return Command(update={"n": count}, goto=END if count >= steps else "step")

    graph: Any = StateGraph(_Counter)
    graph.add_node("step", step, destinations=("step", END))
    graph.add_edge(START, "step")
    return graph.compile(checkpointer=checkpointer)


def bench_glue(quick: bool, table: Callable[..., str], target: Callable[..., str],
               ms: Callable[[float], str]) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from diagnosis_core.adapters.langgraph import build_diagnosis_graph, run_diagnosis_graph

    scenario = dc.load_scenario(json.loads(EXAMPLE.read_text(encoding="utf-8")))
    request = dc.scenario_request(scenario)
    scripted = _Scripted(scenario)
    effects = scripted.effects()
    reference = dc.run_diagnosis(request, dc.scenario_effects(scenario))
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
    steps = 2 * len(sink.entries)  # every effect takes two supersteps
    threads = itertools.count()
    rows = []
    folder = tempfile.TemporaryDirectory()
    connections: list[sqlite3.Connection] = []
    files = itertools.count()

    def sqlite_saver() -> SqliteSaver:
        connection = sqlite3.connect(
            Path(folder.name) / f"c{next(files)}.sqlite", check_same_thread=False
        )
        connections.append(connection)
        return SqliteSaver(connection)

    savers: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("no saver", lambda: None),
        ("InMemorySaver", InMemorySaver),
        ("SqliteSaver", sqlite_saver),
    )
    for label, saver_factory in savers:
        graph = build_diagnosis_graph(effects, checkpointer=saver_factory())
        bare = _bare_graph(steps, saver_factory())
        bare_config = {"recursion_limit": steps + 5}

        def adapter(graph: Any = graph) -> object:
            scripted.reset()
            return run_diagnosis_graph(graph, request, thread_id=f"t{next(threads)}")

        def driver() -> object:
            scripted.reset()
            return dc.run_diagnosis(request, effects)

        def journaling_driver() -> object:
            # The adapter journals every effect; this comparator does the same work.
            scripted.reset()
            return dc.run_diagnosis(request, effects, sink=dcj.ListJournalSink())

        def bare_run(bare: Any = bare, limit: dict[str, int] = bare_config) -> object:
            config = {**limit, "configurable": {"thread_id": f"b{next(threads)}"}}
            return bare.invoke({"n": 0}, config)

        state = adapter()
        assert isinstance(state, dc.DiagnosisState)
        assert dc.to_json(state.result) == dc.to_json(reference.result)
        contenders = {"adapter": adapter, "bare graph": bare_run, "sync driver": driver,
                      "journaling driver": journaling_driver}
        loops = {name: calibrate_loops(f, 0.05) for name, f in contenders.items()}
        samples = interleave(contenders, rounds=3 if quick else 21, loops=loops)
        ratios = []
        for comparator in ("sync driver", "journaling driver"):
            base = samples["bare graph"].best + samples[comparator].best
            per_round = sorted(
                a / (b + d) for a, b, d in zip(samples["adapter"].times,
                                              samples["bare graph"].times,
                                              samples[comparator].times, strict=True)
            )
            ratios.append((samples["adapter"].best / base, per_round[len(per_round) // 2]))
        (glue, median), (journaled, journaled_median) = ratios
        status = target(f"LangGraph adapter ÷ (bare graph + sync driver), {label}", glue, 1.2)
        rows.append([
            label, str(steps), ms(samples["bare graph"].best), ms(samples["sync driver"].best),
            ms(samples["journaling driver"].best), ms(samples["adapter"].best),
            f"{glue:.2f}× ({median:.2f}×)", f"{journaled:.2f}× ({journaled_median:.2f}×)",
            status,
        ])
    for connection in connections:
        connection.close()
    folder.cleanup()
    print(table(["saver", "supersteps", "bare graph ms", "sync driver ms",
                 "journaling driver ms", "adapter ms",
                 "adapter ÷ (bare + driver) best (median)",
                 "adapter ÷ (bare + journaling driver) best (median)", "≤ 1.2×"], rows))
    print("\nThe journaling driver is the sync driver writing the same journal the adapter "
          "keeps (`sink=ListJournalSink()`): the second ratio is the glue beyond the journal.\n")


def bench_bytes(table: Callable[..., str]) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from diagnosis_core.adapters.langgraph import (
        build_diagnosis_graph,
        diagnosis_graph_values,
        diagnosis_journal_of,
        run_diagnosis_graph,
    )

    sys.path.insert(0, str(ROOT / "tests" / "adapters"))
    from langgraph_support import doc_with_executor_output, sqlite_saver_bytes

    base = json.loads(SIZE_EXAMPLE.read_text(encoding="utf-8"))
    rows = []
    for label, size in (("1 KB", 1 << 10), ("1 MB", 1 << 20)):
        scenario = dc.load_scenario(doc_with_executor_output(base, size))
        request = dc.scenario_request(scenario)
        with tempfile.TemporaryDirectory() as folder:
            connection = sqlite3.connect(Path(folder) / "c.sqlite", check_same_thread=False)
            graph = build_diagnosis_graph(
                dc.scenario_effects(scenario), checkpointer=SqliteSaver(connection)
            )
            run_diagnosis_graph(graph, request)
            thread = request.run.run_id
            journal = diagnosis_journal_of(diagnosis_graph_values(graph, thread_id=thread))
            journal_bytes = len(dcj.journal_to_json(journal).encode("utf-8"))
            written = sqlite_saver_bytes(connection, thread)
            connection.close()
        rows.append([label, f"{journal_bytes:,}", f"{written:,}",
                     f"{written / journal_bytes:.2f}×"])
    print(table(["executor output", "journal bytes (canonical JSON)",
                 "SqliteSaver bytes per run", "÷ journal"], rows))


def bench_langgraph(quick: bool, table: Callable[..., str], target: Callable[..., str],
                    ms: Callable[[float], str]) -> None:
    print("## LangGraph adapter\n")
    try:
        import langgraph  # noqa: F401
    except ImportError:
        print("The `langgraph` extra is not installed: skipped.\n")
        return
    bench_glue(quick, table, target, ms)
    print("\nThe adapter's own glue: `redis_latency_evidence_retry` through "
          "`run_diagnosis_graph`, against a bare graph of the same number of no-op "
          "supersteps plus the sync driver on the same run.\n")
    bench_bytes(table)
    print("\nCheckpoint bytes per run, `payment_timeout` with a padded executor output "
          "(`docs/langgraph.md`).\n")
