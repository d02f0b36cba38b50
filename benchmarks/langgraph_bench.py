"""Benchmarks of the LangGraph adapter, the ``langgraph`` section of ``run.py``.

1. The adapter's own glue: a run of ``redis_latency_evidence_retry`` through
   ``build_diagnosis_graph`` divided by (a bare LangGraph graph with the same
   number of no-op supersteps + the sync driver on the same run), without a
   saver, with ``InMemorySaver`` and with ``SqliteSaver`` (a file each, for
   the adapter and the bare graph; the bare graph runs with the adapter's
   checkpoint durability, ``sync``). Target: at most 1.2×. Timed, and counted
   in instructions (``instructions.py``), which do not drift with the
   machine's load. A third contender, *machine in graph*, is the same graph
   shape with no adapter at all: nodes that step the sync driver's machine
   (no journal, no checks); its time over (bare + driver) is what running the
   machine inside LangGraph's loop costs before any glue.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

from timing import calibrate_loops, interleave

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "redis_latency_evidence_retry.json"
SIZE_EXAMPLE = ROOT / "examples" / "payment_timeout.json"
SAVERS = ("no saver", "InMemorySaver", "SqliteSaver")


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


def _node_of(action: object) -> str:
    return action.agent.value if isinstance(action, dcm.InvokeAgent) else "gatekeeper"


def _machine_graph(
    requests: Iterator[dc.DiagnosisRequest], effects: dc.Effects, checkpointer: Any
) -> Any:
    """The adapter's graph shape with no adapter: nodes that step the sync driver's machine.

    The same state channels and nodes, two supersteps per effect (the first
    writes a placeholder started entry, the second performs the effect,
    advances the machine and replaces it); no journal, no resume rule,
    nothing checked. The machine's
    state lives in this closure, so a run must not be resumed.
    """
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command

    from diagnosis_core.adapters.langgraph import DiagnosisGraphState

    held: dict[str, Any] = {}

    def node(values: Any) -> Command[str]:
        journal = values.get("journal") or []
        if not journal:  # a new run (START leads to the planner, as the adapter's does)
            held["state"] = dcm.start_diagnosis(next(requests))
        if not journal or journal[-1].endswith('"finished"}'):  # phase one: a started entry
            entry = f'{{"seq":{len(journal) + 1},"state":"started"}}'
            return Command(update={"journal": [entry]},
                           goto=_node_of(dcm.next_action(held["state"])))
        state = held["state"]
        state = held["state"] = dcm.advance(state, dcm.perform_effect(dcm.next_action(state),
                                                                      effects))
        action = dcm.next_action(state)
        goto = END if isinstance(action, dcm.Finished) else _node_of(action)
        entry = f'{{"seq":{len(journal)},"state":"finished"}}'  # replaces the started one
        return Command(update={"journal": [entry]}, goto=goto)

    names = ("planner", "executor", "gatekeeper", "verifier", "composer")
    graph: Any = StateGraph(DiagnosisGraphState)
    for name in names:
        graph.add_node(name, node, destinations=(*names, END))
    graph.add_edge(START, "planner")
    return graph.compile(checkpointer=checkpointer)


class _Setup:
    """The scenario, its scripted effects, one saver factory per row, and the contenders."""

    def __init__(self) -> None:
        self.scenario = dc.load_scenario(json.loads(EXAMPLE.read_text(encoding="utf-8")))
        self.request = dc.scenario_request(self.scenario)
        # Each run has its own run id, as in production (nothing is found by a request
        # seen before); every contender cycles through the same requests.
        wire = dc.to_wire(self.request)
        assert isinstance(wire, dict)
        self.requests = [
            dc.from_wire(dc.DiagnosisRequest,
                         {**wire, "run": {**wire["run"], "run_id": f"bench-{index}"}})
            for index in range(1024)
        ]
        self.scripted = _Scripted(self.scenario)
        self.effects = self.scripted.effects()
        self.reference = dc.run_diagnosis(self.request, dc.scenario_effects(self.scenario))
        sink = dcj.ListJournalSink()
        dc.run_diagnosis(self.request, dc.scenario_effects(self.scenario), sink=sink)
        self.steps = 2 * len(sink.entries)  # every effect takes two supersteps
        self.threads = itertools.count()
        self.folder = tempfile.TemporaryDirectory()
        self.connections: list[sqlite3.Connection] = []
        self.files = itertools.count()

    def saver(self, label: str) -> Any:
        if label == "no saver":
            return None
        if label == "InMemorySaver":
            from langgraph.checkpoint.memory import InMemorySaver

            return InMemorySaver()
        from langgraph.checkpoint.sqlite import SqliteSaver

        connection = sqlite3.connect(
            Path(self.folder.name) / f"c{next(self.files)}.sqlite", check_same_thread=False
        )
        self.connections.append(connection)
        return SqliteSaver(connection)

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.folder.cleanup()

    def contenders(self, label: str) -> dict[str, Callable[[], object]]:
        """Adapter, bare graph, machine in graph, sync driver, journaling driver (checked)."""
        from diagnosis_core.adapters.langgraph import build_diagnosis_graph, run_diagnosis_graph

        scripted, effects = self.scripted, self.effects
        requests = itertools.cycle(self.requests)
        graph = build_diagnosis_graph(effects, checkpointer=self.saver(label))
        bare = _bare_graph(self.steps, self.saver(label))
        machine = _machine_graph(requests, effects, self.saver(label))
        # The adapter's runs are durable step by step; the bare graphs run the same way.
        durability = {} if label == "no saver" else {"durability": "sync"}
        limit = {"recursion_limit": self.steps + 5}
        threads = self.threads

        def adapter() -> object:
            scripted.reset()
            return run_diagnosis_graph(graph, next(requests), thread_id=f"t{next(threads)}")

        def bare_run() -> object:
            config = {**limit, "configurable": {"thread_id": f"b{next(threads)}"}}
            return bare.invoke({"n": 0}, config, **durability)

        def machine_run() -> object:
            scripted.reset()
            config = {**limit, "configurable": {"thread_id": f"m{next(threads)}"}}
            return machine.invoke({"request": "r"}, config, **durability)

        def driver() -> object:
            scripted.reset()
            return dc.run_diagnosis(next(requests), effects)

        def journaling_driver() -> object:
            # The adapter journals every effect; this comparator does the same work.
            scripted.reset()
            return dc.run_diagnosis(next(requests), effects, sink=dcj.ListJournalSink())

        state = adapter()
        assert isinstance(state, dc.DiagnosisState)
        scripted.reset()
        assert dc.to_json(state) == dc.to_json(dc.run_diagnosis(state.request, effects))
        assert dc.to_json(state.result) == dc.to_json(self.reference.result)
        assert len(machine_run()["journal"]) == self.steps // 2  # type: ignore[index]
        return {"adapter": adapter, "bare graph": bare_run, "machine in graph": machine_run,
                "sync driver": driver, "journaling driver": journaling_driver}


def contender(argument: str) -> tuple[Callable[[], object], Callable[[], None]]:
    """``instructions.py``'s factory: ``"<contender>|<saver>"``, e.g. ``"adapter|no saver"``."""
    name, _, label = argument.partition("|")
    setup = _Setup()
    return setup.contenders(label)[name], setup.close


def bench_glue(quick: bool, table: Callable[..., str], target: Callable[..., str],
               ms: Callable[[float], str]) -> None:
    setup = _Setup()
    rows = []
    for label in SAVERS:
        contenders = setup.contenders(label)
        loops = {name: calibrate_loops(f, 0.05) for name, f in contenders.items()}
        samples = interleave(contenders, rounds=3 if quick else 21, loops=loops)

        def over(top: str, comparator: str, samples: Any = samples) -> tuple[float, float]:
            base = samples["bare graph"].best + samples[comparator].best
            per_round = sorted(
                a / (b + d) for a, b, d in zip(samples[top].times,
                                              samples["bare graph"].times,
                                              samples[comparator].times, strict=True)
            )
            return samples[top].best / base, per_round[len(per_round) // 2]

        glue, median = over("adapter", "sync driver")
        journaled, journaled_median = over("adapter", "journaling driver")
        floor, floor_median = over("machine in graph", "sync driver")
        status = target(f"LangGraph adapter ÷ (bare graph + sync driver), {label}", glue, 1.2)
        best = {name: ms(found.best) for name, found in samples.items()}
        rows.append([
            label, str(setup.steps), best["bare graph"], best["sync driver"],
            best["journaling driver"], best["machine in graph"], best["adapter"],
            f"{glue:.2f}× ({median:.2f}×)", f"{journaled:.2f}× ({journaled_median:.2f}×)",
            f"{floor:.2f}× ({floor_median:.2f}×)", status,
        ])
    setup.close()
    print(table(["saver", "supersteps", "bare graph ms", "sync driver ms",
                 "journaling driver ms", "machine in graph ms", "adapter ms",
                 "adapter ÷ (bare + driver) best (median)",
                 "adapter ÷ (bare + journaling driver) best (median)",
                 "machine in graph ÷ (bare + driver) best (median)", "≤ 1.2×"], rows))
    print("\nThe journaling driver is the sync driver writing the same journal the adapter "
          "keeps (`sink=ListJournalSink()`): the second ratio is the glue beyond the journal. "
          "*Machine in graph* runs the same machine in the same graph shape with no adapter "
          "(see the module docstring): its ratio is the cost of interleaving the machine "
          "with LangGraph's loop on this machine, before any glue.\n")


def bench_glue_instructions(quick: bool, table: Callable[..., str],
                            target: Callable[..., str]) -> None:
    """The glue ratios in instructions per run (``instructions.py``): no drift, no noise."""
    import instructions

    missing = instructions.unavailable()
    if missing is not None:
        print(f"Instruction counts skipped: {missing}.\n")
        return
    calls = 2 if quick else 5

    def counted(name: str, label: str) -> float:
        return instructions.count("langgraph_bench", "contender", f"{name}|{label}", calls)

    driver = counted("sync driver", "no saver")
    journaling = counted("journaling driver", "no saver")
    rows = []
    for label in SAVERS:
        adapter, bare = counted("adapter", label), counted("bare graph", label)
        glue, journaled = adapter / (bare + driver), adapter / (bare + journaling)
        status = target(f"LangGraph adapter ÷ (bare graph + sync driver), instructions, {label}",
                        glue, 1.2)
        rows.append([label, f"{bare / 1e6:.2f}", f"{driver / 1e6:.2f}",
                     f"{journaling / 1e6:.2f}", f"{adapter / 1e6:.2f}", f"{glue:.3f}×",
                     f"{journaled:.3f}×", status])
    print(table(["saver", "bare graph M instr.", "sync driver M instr.",
                 "journaling driver M instr.", "adapter M instr.",
                 "adapter ÷ (bare + driver)", "adapter ÷ (bare + journaling driver)",
                 "≤ 1.2×"], rows))
    print(f"\nMillions of instructions per run, counted by callgrind in every thread (a "
          f"saver's writes included; {calls} runs after three warm-up runs; the counts repeat "
          f"to within about 0.5 %).\n")


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
    print("The adapter's own glue: `redis_latency_evidence_retry` through "
          "`run_diagnosis_graph`, against a bare graph of the same number of no-op "
          "supersteps plus the sync driver on the same run. In instructions:\n")
    bench_glue_instructions(quick, table, target)
    bench_bytes(table)
    print("\nCheckpoint bytes per run, `payment_timeout` with a padded executor output "
          "(`docs/langgraph.md`).\n")
