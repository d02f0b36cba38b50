"""The diagnosis_core benchmark suite: ``python benchmarks/run.py``.

Four comparisons, each measured side by side in this one process (see
``timing.py`` for the method) and printed as Markdown tables:

1. parse + validate ``executor_evidence_v2`` (~10 KB, ~1 MB, ~10 MB) against
   ``json.loads`` of the same text (the floor) and a strict pydantic v2 model
   (``pydantic_peer.py``, the peer);
2. scaling of the projector, the reference gatekeeper and a full replay at
   100, 1 000 and 10 000 claims (two bindings each), and the reference
   gatekeeper on one large output (2 MB × 100, 10 MB × 300 bindings);
3. one typical run (20 claims, one evidence retry, scripted effects) through
   the built-in sync driver and through the LangGraph adapter;
4. ``import diagnosis_core`` against ``import cattrs`` in fresh interpreters;
5. rejecting a 10 MB executor text (a ``NaN``, a duplicate key, a lone
   surrogate at the end, a ``NaN`` after 900 open arrays) against accepting
   one: CPU time and peak allocation (``rejection.py``, fresh interpreters);
6. folding a complete run journal (spec §12) against the live run it recorded,
   unkeyed and keyed, at 20, 1 000 and 10 000 claims;
7. the journal stores (spec §16): per-entry append cost, 1st vs 24th entry, and
   ``session_report`` over 10 000 stored runs (``stores_bench.py``);
8. the durable engines' glue: the Temporal and DBOS adapters against a bare
   workflow with as many no-op activities / steps plus the sync driver
   (``engines_bench.py``).

Every contender's result is checked for equality before anything is timed.
Nothing here is a test: timings are printed, never asserted. Options:
``--quick`` (few rounds, a smoke run),
``--only parse,scaling,large-output,drivers,import,reject,journal,stores,langgraph,engines``
(``--only stores-reports``: the store section's report rows alone) and
``--write-docs docs/benchmarks.md`` (also write the output into the page, between its
markers, so the page shows measured figures: ``tests/test_docs.py`` checks that the
page's tables have the structure this script prints).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import gc
import io
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import payloads
from timing import calibrate_loops, interleave, ratio

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core._chat.gatekeeper import normalize_gatekeeper_result
from diagnosis_core._chat.projection import project_verified_input

SECTIONS = ("parse", "scaling", "large-output", "drivers", "import", "reject", "journal",
            "stores", "langgraph", "engines")
EXTRA_SECTIONS = ("stores-reports",)
"""Sections run only when named: the store section's report rows alone (a quick re-measure)."""
TARGETS: list[tuple[str, str, bool]] = []  # (target, measured, met)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _target(
    description: str, value: float, limit: float, *, at_most: bool = True, shown: str = ""
) -> str:
    met = value <= limit if at_most else value >= limit
    TARGETS.append((description, shown or f"{value:.2f}×", met))
    return "met" if met else "MISSED"


def _overhead_ratio(overhead: float, base: float) -> str:
    """A ratio of two differences; the sync driver's is near the noise floor, so cap it."""
    if overhead == base:
        return "1×"
    if base <= 0 or overhead / base > 100:
        return "> 100×"
    return f"{overhead / base:.0f}×"


# --- machine -------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else "unknown"


def _caches() -> str:
    sizes = []
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind != "Instruction":
            sizes.append(f"L{level} {size}")
    return ", ".join(sizes) or "unknown"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe_machine() -> None:
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        nproc = ""
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print("## Machine\n")
    print(_table(["", ""], [
        ["CPU", _cpu_model()],
        ["nproc", nproc or str(os.cpu_count())],
        ["caches (per core / shared)", _caches()],
        ["Python", f"{platform.python_implementation()} {platform.python_version()}"],
        ["OS", f"{platform.system()} {platform.release()}"],
        ["packages", ", ".join(f"{name} {_version(name)}" for name in
                               ("attrs", "cattrs", "pydantic", "pydantic-core", "langgraph"))],
        ["date (UTC)", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")],
        ["load average at start", load],
        ["clock", "process CPU time; best of N samples (median shown next to it)"],
    ]))
    print()


# --- 1. parse + validate ------------------------------------------------------------


def _same_evidence(core: dc.ExecutorEvidence, peer: Any) -> bool:
    def binding_keys(claims: Any) -> list[tuple[str, ...]]:
        return [
            (claim.claim_id, claim.text, str(claim.is_critical), binding.source_invocation_id,
             binding.tool_name, binding.raw_path, binding.evidence_excerpt)
            for claim in claims for binding in claim.bindings
        ]

    return (
        binding_keys(core.claims) == binding_keys(peer.claims)
        and [(h.text, h.missing_evidence) for h in core.hypotheses]
        == [(h.text, h.missing_evidence) for h in peer.hypotheses]
        and [(t.invocation_id, t.tool_name, t.success) for t in core.tool_trace_summary]
        == [(t.invocation_id, t.tool_name, t.success) for t in peer.tool_trace_summary]
    )


def _check_parsers_agree(text: str, claims: int) -> None:
    from pydantic_peer import PeerExecutorEvidence

    core = dcp.parse_executor_evidence(text)
    peer = PeerExecutorEvidence.model_validate_json(text)
    assert json.loads(text) == payloads.evidence_document(claims)
    assert len(core.claims) == claims and _same_evidence(core, peer)


def bench_parse(quick: bool) -> None:
    from pydantic_peer import PeerExecutorEvidence

    print("## 1. Parse + validate `executor_evidence_v2`\n")
    cases = (("~10 KB", 10_000, 60), ("~1 MB", 1_000_000, 60), ("~10 MB", 10_000_000, 11))
    rows = []
    for label, size, rounds in cases:
        text, claims = payloads.text_of_size(size)
        _check_parsers_agree(text, claims)  # its objects are gone before timing starts
        contenders: dict[str, Callable[[], object]] = {
            "json.loads": functools.partial(json.loads, text),
            "diagnosis_core": functools.partial(dcp.parse_executor_evidence, text),
            "pydantic": functools.partial(PeerExecutorEvidence.model_validate_json, text),
        }
        loops = {name: calibrate_loops(function, 0.02) for name, function in contenders.items()}
        samples = interleave(contenders, rounds=3 if quick else rounds, loops=loops)
        floor, core_s = samples["json.loads"], samples["diagnosis_core"]
        peer_s = samples["pydantic"]
        vs_floor, vs_floor_median = ratio(core_s, floor)
        vs_peer, vs_peer_median = ratio(core_s, peer_s)
        status = ""
        if size == 10_000:
            status = f"≤3× json.loads: {_target('parse 10 KB ≤ 3× json.loads', vs_floor, 3.0)}"
        if size == 1_000_000:
            status = (f"≤3× json.loads: {_target('parse 1 MB ≤ 3× json.loads', vs_floor, 3.0)}; "
                      f"≤1.5× pydantic: {_target('parse 1 MB ≤ 1.5× pydantic', vs_peer, 1.5)}")
        rows.append([
            f"{label} ({len(text.encode()):,} B, {claims:,} claims)",
            f"{_ms(floor.best)} / {_ms(floor.median)}",
            f"{_ms(core_s.best)} / {_ms(core_s.median)}",
            f"{_ms(peer_s.best)} / {_ms(peer_s.median)}",
            f"**{vs_floor:.2f}×** ({vs_floor_median:.2f}×)",
            f"**{vs_peer:.2f}×** ({vs_peer_median:.2f}×)",
            f"{len(samples['json.loads'].times)}",
            status,
        ])
        del text, contenders, samples
        gc.collect()
    print(_table(
        ["payload", "json.loads ms best / median", "diagnosis_core ms", "pydantic ms",
         "core ÷ json.loads best (median of ratios)", "core ÷ pydantic", "rounds", "target"],
        rows,
    ))
    print()


# --- 2. scaling -----------------------------------------------------------------------

Key = tuple[str, ...]


def _dict_join(left: list[Key], right: list[Key]) -> int:
    """Machine reference: a bare dict hash join over the same number of 4-string keys."""
    table: dict[Key, int] = {}
    for key in left:
        table.setdefault(key, 1)
    return sum(1 for key in right if key in table)


def _copy(text: str) -> str:
    return text.encode().decode()  # an equal string that is another object


def _projector_inputs(claims: int) -> dict[str, Callable[[], object]]:
    document = payloads.evidence_document(claims)
    evidence = dcp.parse_executor_evidence(json.dumps(document, ensure_ascii=False))
    raw = payloads.gatekeeper_result_passing_all(document)
    checked = normalize_gatekeeper_result(raw).checked_bindings
    assert len(project_verified_input(evidence, checked).verified_evidence) == 2 * claims
    return {"project_verified_input": lambda: project_verified_input(evidence, checked)}


def _gatekeeper_inputs(claims: int) -> dict[str, Callable[[], object]]:
    text = json.dumps(payloads.evidence_document(claims), ensure_ascii=False)
    evidence = dcp.parse_executor_evidence(text)
    gatekeeper = dc.ReferenceGatekeeper(dct.ledger_from_records(payloads.ledger_records(claims)))
    verdict = gatekeeper("run-bench", evidence)
    checked = verdict["checked_bindings"]
    assert verdict["status"] == "pass" and isinstance(checked, list) and len(checked) == 2 * claims
    return {
        "ReferenceGatekeeper(ledger)(run_id, output)": lambda: gatekeeper("run-bench", evidence)
    }


def _replay_inputs(claims: int) -> dict[str, Callable[[], object]]:
    scenario = payloads.replay_scenario_document(claims)
    result = dc.replay(scenario)
    assert result["outcome"] == "ANSWERED" and result["gatekeeper_status"] == "PASS"

    def replay_collector_paused() -> object:
        gc.disable()
        try:
            return dc.replay(scenario)
        finally:
            gc.enable()

    return {
        "replay(scenario), scripted gatekeeper": lambda: dc.replay(scenario),
        "diagnostic: the same replay, collector paused": replay_collector_paused,
    }


def _reference_inputs(claims: int) -> dict[str, Callable[[], object]]:
    document = payloads.evidence_document(claims)
    left: list[Key] = [
        (c["claim_id"], b["source_invocation_id"], b["tool_name"], b["raw_path"])
        for c in document["claims"] for b in c["bindings"]
    ]
    right: list[Key] = [tuple(_copy(part) for part in key) for key in left]
    assert _dict_join(left, right) == 2 * claims
    return {"diagnostic: bare dict join of the same keys": lambda: _dict_join(left, right)}


def _one_large_output_case(megabytes: int, bindings: int) -> tuple[Any, Any, str]:
    """One ``megabytes`` MB ledger output cited by ``bindings`` bindings (spec §9 v1.1)."""
    line = "ts=2024-01-01T10:00:00Z   level=error\t upstream timeout  after {} ms\n"
    lines = [line.format(index) for index in range(megabytes * 1_000_000 // len(line))]
    text = "".join(lines)
    ledger = dct.ledger_from_records([{"invocation_id": "inv-1", "tool_name": "query_logs",
                                      "success": True, "output": {"log": text}}])
    step = len(lines) // bindings
    claims = [{"claim_id": f"c{index}", "text": "t", "bindings": [
        {"source_invocation_id": "inv-1", "tool_name": "query_logs", "raw_path": "$.log",
         "evidence_excerpt": f"upstream timeout after {index * step} ms"}]}
        for index in range(bindings)]
    document = {"schema_version": "executor_evidence_v2", "evidence_status": "evidence_found",
                "claims": claims}
    executor_text = json.dumps(document)
    return dc.ReferenceGatekeeper(ledger), dcp.parse_executor_evidence(executor_text), executor_text


def bench_one_large_output(quick: bool) -> None:
    """Many bindings on one large output: linear in output + bindings, not their product."""
    import time

    print("## 2b. Reference gatekeeper: many bindings on one large output\n")
    cases = ((2, 100), (10, 300)) if not quick else ((2, 100),)
    rows = []
    for megabytes, bindings in cases:
        gatekeeper, evidence, executor_text = _one_large_output_case(megabytes, bindings)
        verdict = gatekeeper("run-bench", evidence)
        assert verdict["status"] == "pass", verdict["reason_codes"]
        best = math.inf
        for _ in range(1 if quick else 3):
            start = time.perf_counter()
            gatekeeper("run-bench", evidence)
            best = min(best, time.perf_counter() - start)
        rows.append([f"{megabytes} MB", str(bindings), f"{len(executor_text) / 1e3:.0f} KB",
                     _ms(best)])
        del gatekeeper, evidence
        gc.collect()
    print(_table(["output", "bindings", "executor text", "best (ms)"], rows) + "\n")


def bench_scaling(quick: bool) -> None:
    print("## 2. Scaling (2 bindings per claim)\n")
    sizes = (100, 1_000, 10_000)
    best: dict[str, list[float]] = {}
    rounds = 3 if quick else 15
    # Each component and size is measured with only its own inputs alive, as in
    # a process serving that run; every sample starts after a full collection
    # (see timing.interleave).
    for group in (_projector_inputs, _gatekeeper_inputs, _replay_inputs, _reference_inputs):
        for claims in sizes:
            contenders = group(claims)
            loops = {name: calibrate_loops(function, 0.02) for name, function in contenders.items()}
            samples = interleave(contenders, rounds=rounds, loops=loops, collect=True)
            for name, sample in samples.items():
                best.setdefault(name, []).append(sample.best)
            del contenders, samples
            gc.collect()
    rows = []
    for component, values in best.items():
        steps = [values[index + 1] / values[index] for index in range(len(values) - 1)]
        row = [component] + [_ms(value) for value in values]
        row += [f"{step:.1f}×" for step in steps]
        row.append(" / ".join(f"{value / claims * 1e6:.1f}"
                              for value, claims in zip(values, sizes, strict=True)))
        if component.startswith("diagnostic"):
            row.append("(not a target)")
        else:
            row.append(", ".join(
                _target(f"{component.split('(')[0]} {sizes[i]:,}→{sizes[i + 1]:,} ≤ 11×", step, 11)
                for i, step in enumerate(steps)
            ))
        rows.append(row)
    print(_table(
        ["component", "n=100 ms", "n=1 000 ms", "n=10 000 ms", "100→1 000", "1 000→10 000",
         "µs per claim", "≤ 11× per 10× step"],
        rows,
    ))
    print(f"\nBest of {rounds} samples per cell; each sample starts after `gc.collect()`.\n")


# --- 3. sync driver vs LangGraph -----------------------------------------------------


class _Rewindable:
    """Effects whose scripted doubles are replaced before each run (same cost for both drivers)."""

    def __init__(self, scenario: dc.Scenario) -> None:
        self.scenario = scenario
        self.current = dc.scenario_effects(scenario)
        self.effects = dc.Effects(
            planner=lambda text, config: self.current.planner(text, config),
            executor=lambda text, config: self.current.executor(text, config),
            verifier=lambda text, config: self.current.verifier(text, config),
            composer=lambda text, config: self.current.composer(text, config),
            gatekeeper=lambda run_id, output: self.current.gatekeeper(run_id, output),
        )

    def rewind(self) -> dc.Effects:
        self.current = dc.scenario_effects(self.scenario)
        return self.effects


def _recorded_results(request: dc.DiagnosisRequest, effects: dc.Effects) -> list[Any]:
    """The effect results of one run, in order, to replay into the machine alone."""
    state, results = dcm.start_diagnosis(request), []
    while not isinstance(action := dcm.next_action(state), dcm.Finished):
        result = dcm.perform_effect(action, effects)
        results.append(result)
        state = dcm.advance(state, result)
    return results


# The previous adapter design (the whole DiagnosisState as JSON text in the graph
# state, rewritten at every node) wrote this many serialized bytes, in this many
# checkpoint and pending-write payloads, for the run of section 3 (measured once
# with InMemorySaver, langgraph 1.2.24, before the adapter moved to the journal).
_PREVIOUS_DESIGN_CHECKPOINT_BYTES = (1_840_356, 180)


def _checkpoint_bytes(
    adapter: Any, request: dc.DiagnosisRequest, effects: dc.Effects
) -> tuple[int, int]:
    """Serialized bytes (and payloads) one run hands its checkpointer: checkpoints and writes."""
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    written = [0, 0]
    dumps = saver.serde.dumps_typed

    def counting(value: Any) -> tuple[str, bytes]:
        kind, data = dumps(value)
        written[0] += len(data)
        written[1] += 1
        return kind, data

    saver.serde.dumps_typed = counting  # type: ignore[method-assign]
    graph = adapter.build_diagnosis_graph(effects, checkpointer=saver)
    adapter.run_diagnosis_graph(graph, request, thread_id="bytes")
    return written[0], written[1]


def bench_drivers(quick: bool) -> None:
    print("## 3. One typical run: sync driver vs LangGraph adapter\n")
    try:
        from langgraph.checkpoint.memory import InMemorySaver

        from diagnosis_core.adapters import langgraph as adapter
    except ImportError as error:
        print(f"LangGraph adapter not available ({error}); pending.\n")
        TARGETS.append(("LangGraph run ÷ sync driver run ≤ 3×", "pending", False))
        return
    scenario = dc.load_scenario(payloads.replay_scenario_document(20, evidence_retry=True))
    request = dc.scenario_request(scenario)
    rewindable = _Rewindable(scenario)
    plain = adapter.build_diagnosis_graph(rewindable.effects)
    saved = adapter.build_diagnosis_graph(rewindable.effects, checkpointer=InMemorySaver())
    counter = iter(range(10**9))
    results = _recorded_results(request, rewindable.rewind())

    def machine() -> dc.DiagnosisState:
        rewindable.rewind()  # same setup cost as the drivers below
        state = dcm.start_diagnosis(request)
        for result in results:
            dcm.next_action(state)
            state = dcm.advance(state, result)
        return state

    def core() -> dc.DiagnosisState:
        return dc.run_diagnosis(request, rewindable.rewind())

    def graph() -> dc.DiagnosisState:
        rewindable.rewind()
        return adapter.run_diagnosis_graph(plain, request, thread_id="bench")

    def graph_saved() -> dc.DiagnosisState:
        rewindable.rewind()
        return adapter.run_diagnosis_graph(saved, request, thread_id=f"bench-{next(counter)}")

    expected = dc.to_json(core().result)
    result = json.loads(expected)
    assert result["outcome"] == "ANSWERED" and result["evidence_retries"] == 1
    for function in (machine, graph, graph_saved):
        assert dc.to_json(function().result) == expected
    contenders = {
        "core machine alone (recorded results fed to advance)": machine,
        "sync driver `run_diagnosis`": core,
        "LangGraph `run_diagnosis_graph`": graph,
        "LangGraph + InMemorySaver": graph_saved,
    }
    loops = {name: calibrate_loops(function, 0.05) for name, function in contenders.items()}
    samples = interleave(contenders, rounds=3 if quick else 31, loops=loops)
    names = list(contenders)
    floor, base = samples[names[0]], samples[names[1]]
    base_overhead = base.best - floor.best
    rows = []
    for name, sample in samples.items():
        times, median_ratio = ratio(sample, base)
        overhead = sample.best - floor.best
        row = [name, _ms(sample.best), _ms(sample.median), f"{times:.2f}× ({median_ratio:.2f}×)"]
        if name == names[0]:
            row += ["—", "—"]
        else:
            row += [f"{overhead * 1e3:.3f}", _overhead_ratio(overhead, base_overhead)]
        rows.append(row)
    _target("LangGraph run ÷ sync driver run ≤ 3×", ratio(samples[names[2]], base)[0], 3.0)
    print(f"Run: 20 claims, one evidence retry; {len(result['trace'])} trace events, "
          f"{sum(result['calls'].values())} effect calls; result JSON byte-identical on all "
          "four.\n")
    print(_table(["", "ms per run best", "median", "÷ sync driver best (median of ratios)",
                  "driver + trivial effects above the machine, ms", "÷ sync driver's"], rows))
    print()
    now, payloads_now = _checkpoint_bytes(adapter, request, rewindable.rewind())
    before, payloads_before = _PREVIOUS_DESIGN_CHECKPOINT_BYTES
    print("Checkpoint bytes one run hands `InMemorySaver` (every checkpoint and pending write, "
          "as serialized):\n")
    print(_table(["design", "bytes per run", "payloads", "÷ journal design"], [
        ["derived state as JSON text (previous, measured once)", f"{before:,}",
         str(payloads_before), f"{before / now:.2f}×"],
        ["request + journal entries (now)", f"{now:,}", str(payloads_now), "1.00×"],
    ]))
    print()


# --- 4. import time -------------------------------------------------------------------


def _import_us(module: str, env: dict[str, str]) -> int:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True, text=True, env=env, check=True,
    )
    for line in reversed(completed.stderr.splitlines()):
        parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise RuntimeError(f"no import time line for {module}")


def _import_cpu_s(module: str, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of a fresh ``python -c "import module"``.

    CPU time is the figure that stays meaningful on a loaded machine: wall time
    also counts the time the process waited for a core.
    """
    code = f"import {module}" if module else "pass"
    process = subprocess.Popen([sys.executable, "-c", code], env=env)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"python -c {code!r} failed")
    return usage.ru_utime + usage.ru_stime


def bench_import(quick: bool) -> None:
    print("## 4. Import time (fresh interpreters, side by side)\n")
    modules = ("diagnosis_core", "cattrs", "diagnosis_core.aiops")
    with tempfile.TemporaryDirectory() as cache:
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        env["PYTHONPYCACHEPREFIX"] = cache  # bytecode cached for all, outside the repository
        for module in modules:
            _import_us(module, env)  # compile and cache bytecode
        times: dict[str, list[int]] = {module: [] for module in modules}
        cpu: dict[str, list[float]] = {module: [] for module in ("", *modules)}
        for index in range(5 if quick else 31):
            order = modules if index % 2 == 0 else tuple(reversed(modules))
            for module in order:
                times[module].append(_import_us(module, env))
                cpu[module].append(_import_cpu_s(module, env))
            cpu[""].append(_import_cpu_s("", env))
    startup = min(cpu[""])
    rows = []
    for module in modules:
        values = times[module]
        rows.append([f"`import {module}`", f"{min(values) / 1000:.1f}",
                     f"{statistics.median(values) / 1000:.1f}",
                     f"{(min(cpu[module]) - startup) * 1000:.1f}"])

    def wall_ratio(pick: Callable[[list[int]], float]) -> float:
        return pick(times["diagnosis_core"]) / pick(times["cattrs"])

    cpu_ratio = (min(cpu["diagnosis_core"]) - startup) / (min(cpu["cattrs"]) - startup)
    rows.append(["ratio diagnosis_core ÷ cattrs", f"{wall_ratio(min):.2f}×",
                 f"{wall_ratio(statistics.median):.2f}×", f"{cpu_ratio:.2f}×"])
    print(_table(["", "wall ms best", "wall ms median", "CPU ms best"], rows))
    print(f"\n{len(times['cattrs'])} interleaved runs each. Wall: `-X importtime`, cumulative. "
          "CPU: user + system time of the child less an empty interpreter's. "
          "`import diagnosis_core` includes attrs and cattrs, which it imports, and not "
          "`diagnosis_core.aiops` (the last row), which it leaves out.\n")
    _target("import diagnosis_core ≤ 2× import cattrs (wall, best)", wall_ratio(min), 2.0)
    _target("import diagnosis_core ≤ 2× import cattrs (CPU, best)", cpu_ratio, 2.0)


# --- 5. rejection --------------------------------------------------------------------


def bench_reject(quick: bool) -> None:
    import rejection

    size = 1_000_000 if quick else 10_000_000
    print(f"## 5. Rejecting a {size / 1e6:.0f} MB executor text\n")
    text, results = rejection.table(size)
    print(text)
    print()
    accept = next(r for r in results if r["case"] == "accept")
    for result in results:
        if result["case"] == "accept":
            continue
        seconds, peak = float(result["seconds"]), float(result["peak_kib"])
        _target(f"reject {result['case']} < 2 s", seconds, 2.0, shown=f"{seconds:.2f} s")
        multiple = peak / max(1.0, float(accept["peak_kib"]))
        _target(f"reject {result['case']} < 10× accepting memory", multiple, 10.0,
                shown=f"{multiple:.1f}×")


# --- 6. journal fold vs live run ---------------------------------------------------------


def _journal_of(request: dc.DiagnosisRequest, effects: dc.Effects) -> dcj.Journal:
    recorder = dcj.JournalRecorder(dcj.Journal(request))
    state = dcm.start_diagnosis(request)
    while not isinstance(action := dcm.next_action(state), dcm.Finished):
        recorder.begin(action)
        state = dcm.advance(state, recorder.end(dcm.perform_effect(action, effects)))
    recorder.close()  # the end marker: a signed journal is complete only with it
    return recorder.journal


def bench_journal(quick: bool) -> None:
    print("## 6. Folding a complete journal vs the live run\n")
    rows = []
    for claims in (20, 1000, 10000):
        scenario = dc.load_scenario(payloads.replay_scenario_document(claims, evidence_retry=True))
        request = dc.scenario_request(scenario)
        journal = _journal_of(request, dc.scenario_effects(scenario))
        text = dcj.journal_to_json(journal)
        key = b"benchmark-key"
        signed = dcj.sign_journal(journal, key)
        assert dcj.journal_status(signed, key=key).complete

        def live() -> dc.DiagnosisState:
            return dc.run_diagnosis(request, dc.scenario_effects(scenario))  # noqa: B023

        def fold() -> dc.DiagnosisState:
            return dcj.fold_journal(journal)  # noqa: B023

        def fold_signed() -> dc.DiagnosisState:
            return dcj.fold_journal(signed, key=key)  # noqa: B023

        def load_and_fold() -> dc.DiagnosisState:
            return dcj.fold_journal(dcj.Journal.from_json(text))  # noqa: B023

        expected = live()
        for function in (fold, fold_signed, load_and_fold):
            assert function() == expected
        contenders = {"live run `run_diagnosis`": live, "`fold_journal`": fold,
                      "`fold_journal(key=…)`": fold_signed,
                      "`Journal.from_json` + `fold_journal`": load_and_fold}
        loops = {name: calibrate_loops(function, 0.05) for name, function in contenders.items()}
        samples = interleave(contenders, rounds=3 if quick else 21, loops=loops)
        base = samples["live run `run_diagnosis`"]
        for name, sample in samples.items():
            times, median_ratio = ratio(sample, base)
            rows.append([f"{claims} claims: {name}", _ms(sample.best), _ms(sample.median),
                         f"{times:.2f}× ({median_ratio:.2f}×)"])
        _target(f"fold of a complete journal ÷ live run ≤ 1.2× ({claims} claims)",
                ratio(samples["`fold_journal`"], base)[0], 1.2)
        _target(f"keyed fold ÷ live run ≤ 1.2× ({claims} claims)",
                ratio(samples["`fold_journal(key=…)`"], base)[0], 1.2)
    print(_table(["", "ms best", "ms median", "÷ live run best (median of ratios)"], rows))
    print("\nSame scenario (one evidence retry); the folded state equals the live one.\n")


def bench_stores(quick: bool) -> None:
    from stores_bench import bench_stores as run_stores

    run_stores(quick, _table, _target, _ms)


def bench_store_reports(quick: bool) -> None:
    from stores_bench import bench_stores as run_stores

    run_stores(quick, _table, _target, _ms, appends=False)


def bench_langgraph(quick: bool) -> None:
    from langgraph_bench import bench_langgraph as run_langgraph

    run_langgraph(quick, _table, _target, _ms)


def bench_engines(quick: bool) -> None:
    from engines_bench import bench_engines as run_engines

    run_engines(quick, _table, _target, _ms)


# --- main -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections among {', '.join(SECTIONS)}")
    parser.add_argument("--write-docs", metavar="PAGE", type=Path,
                        help="also write the output into PAGE between its benchmark markers")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(SECTIONS) - set(EXTRA_SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if args.write_docs is None:
        run(chosen, args.quick)
        return
    output = _Tee(sys.stdout)
    with contextlib.redirect_stdout(output):
        run(chosen, args.quick)
    command = " ".join(["python benchmarks/run.py", *sys.argv[1:]])
    write_docs(args.write_docs, output.getvalue(), command)


BEGIN = "<!-- benchmarks/run.py output: begin (generated; do not edit) -->"
END = "<!-- benchmarks/run.py output: end -->"


class _Tee(io.StringIO):
    """Keeps what is printed and prints it too, so a long run shows progress."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text)
        self._stream.flush()
        return super().write(text)


def write_docs(page: Path, output: str, command: str) -> None:
    """Put ``output`` (headings one level down) between the page's markers."""
    text = page.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{page}: no {BEGIN!r} … {END!r} markers")
    body = _escape_brackets(re.sub(r"^## ", "### ", output.strip(), flags=re.MULTILINE))
    block = f"{BEGIN}\n\nGenerated by `{command}`.\n\n{body}\n\n"
    page.write_text(text[:start] + block + text[end:], encoding="utf-8")


def _escape_brackets(markdown: str) -> str:
    """``[`` outside code spans as ``\\[``: a path like ``$[0][1]`` is not a link."""
    parts = markdown.split("`")
    return "`".join(
        part.replace("[", "\\[") if index % 2 == 0 else part for index, part in enumerate(parts)
    )


def run(chosen: list[str], quick: bool) -> None:
    describe_machine()
    runners = {"parse": bench_parse, "scaling": bench_scaling,
               "large-output": bench_one_large_output, "drivers": bench_drivers,
               "import": bench_import, "reject": bench_reject, "journal": bench_journal,
               "stores": bench_stores, "stores-reports": bench_store_reports,
               "langgraph": bench_langgraph, "engines": bench_engines}
    for name in (*SECTIONS, *EXTRA_SECTIONS):
        if name in chosen:
            runners[name](quick)
    print("## Targets\n")
    rows = [[target, measured, "met" if met else "MISSED"] for target, measured, met in TARGETS]
    print(_table(["target", "measured", "status"], rows))


if __name__ == "__main__":
    main()
