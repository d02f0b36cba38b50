"""A real model in both workflows: SmolLM2-135M on the CPU, offline (``examples/local_model.py``).

    python benchmarks/local_model_bench.py                   # 20 chat questions, 4 AIOps runs
    python benchmarks/local_model_bench.py --questions 4 --alert-sets 1   # a smoke run
    python benchmarks/local_model_bench.py --write-docs docs/benchmarks.md

Needs the ``local-model`` extra. Each chat question is built from the bundled fixtures
(``examples/fixtures``: the gateway log, pay-svc's metrics) and run through the whole
chat workflow with every reply constrained (the agents' payload schemas, the tool
choice, the per-call grounding schema); each AIOps run starts from alerts of the
Alertmanager fixture. Then every agent input of the run is sent again to the same
model *without* a constraint (the executor runs its whole tool loop again, unconstrained,
with a fresh recorder) and the package's own parser judges the reply: replies that parse
with and without constraints, on the same inputs.

Printed, as Markdown: per agent, replies that parse with and without constraints,
tokens and latency per reply; the gatekeeper's status and binding outcomes; the runs'
outcomes; and the package's own time per run against the model's (wall time of the run
minus the model's calls: the core, the recorder, the gatekeeper and the tools, which
read small files). Nothing here is a test; timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

BEGIN = "<!-- benchmarks/local_model_bench.py output: begin (generated; do not edit) -->"
END = "<!-- benchmarks/local_model_bench.py output: end -->"

# Questions a user of the payment service could ask, each answerable from the fixtures.
QUESTIONS: tuple[str, ...] = (
    "The payment API times out since 10:00. Why?",
    "Why does /api/pay return 504 since 10:00?",
    "How many gateway calls to pay-svc failed with a timeout?",
    "Is the pay-svc database connection pool exhausted?",
    "What is the p99 latency of pay-svc after 10:00?",
    "Did pay-svc latency change at 10:00?",
    "Which upstream does the gateway time out on?",
    "What error does the gateway log for /api/pay?",
    "How many requests wait for a database connection in pay-svc?",
    "Are order-svc requests affected by the payment timeouts?",
    "When did the first 504 on /api/pay happen?",
    "What timeout does the gateway use for pay-svc?",
    "Is the pay-svc pool size too small for the load?",
    "Why are customers unable to pay since 10:00?",
    "Was /api/pay healthy before 10:00?",
    "What does the gateway log show for pay-svc after 10:00?",
    "Is the payment outage caused by the database pool?",
    "How many pay-svc connections are in use?",
    "Which route fails with status 504?",
    "What should we check first about the payment timeouts?",
)

# Alerts of the Alertmanager fixture, as sets given to one AIOps run each.
ALERT_SETS: tuple[tuple[str, ...], ...] = (
    ("HighRequestLatency", "KubePodCrashLooping"),
    ("HighRequestLatency",),
    ("KubePodCrashLooping",),
    ("KubePodCrashLooping", "HighRequestLatency"),
)


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "local_model_example", ROOT / "examples" / "local_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _rate(good: int, total: int) -> str:
    return f"{good}/{total} ({100 * good / total:.0f} %)" if total else "–"


# --- free (unconstrained) replies to the same inputs ---------------------------------------------


def _parser(workflow: str, agent: str, input: str) -> Callable[[str], object]:
    import diagnosis_core.protocol as dcp

    if workflow == "aiops":
        return {
            "supervisor": dcp.parse_supervisor_decision,
            "planner": dcp.parse_aiops_plan,
            "reporter": dcp.parse_aiops_report,
            "executor": lambda text: dcp.parse_aiops_executor_output(
                text, json.loads(input).get("known_invocation_ids", [])
            ),
        }[agent]
    if agent == "planner":
        return lambda text: dcp.parse_planner_plan(text, [])
    if agent == "verifier":
        return dcp.parse_verifier_output
    if agent == "composer":
        allowed = [claim["claim_id"] for claim in json.loads(input)["allowed_claims"]]
        return lambda text: dcp.parse_composer_output(text, allowed)
    return dcp.parse_executor_evidence


def _parses(parse: Callable[[str], object], text: str) -> bool:
    try:
        parse(text)
    except Exception:  # any refusal (the package's typed errors)
        return False
    return True


def _free_replies(example: ModuleType, model: Any, run: Any) -> list[tuple[str, bool]]:
    """Each agent input of ``run`` sent again without constraints: ``(agent, parsed)``."""
    import diagnosis_core as dc
    import diagnosis_core.tools as dct
    from diagnosis_core.adapters import local_model as lm
    from diagnosis_core.prompts import system_prompt

    out: list[tuple[str, bool]] = []
    for record in run.state.invocations:
        agent = record.agent.value
        parse = _parser(run.workflow, agent, record.input)
        if agent == "executor":
            caller = lm.LocalToolCaller(
                model, constrained=False, answer_tokens=example.EVIDENCE_TOKENS,
                label="executor.free",
            )
            build = dct.executor_agent if run.workflow == "chat" else dct.aiops_executor_agent
            tools = example.CHAT_TOOLS if run.workflow == "chat" else example.AIOPS_TOOLS
            executor = build(
                caller, tools, recorder=dct.ToolRecorder(),
                system_prompt=system_prompt("executor", workflow=run.workflow).text,
                max_tool_calls=example.MAX_TOOL_CALLS, max_turns=example.MAX_TOOL_CALLS + 1,
            )
            try:
                text = executor(record.input, dc.RunConfig("free", "bench"))
            except Exception:  # the loop or the model refused: not a parsed reply
                out.append((agent, False))
                continue
        else:
            prompt = system_prompt(agent, workflow=run.workflow).text
            try:
                text = model.chat(prompt, record.input, label=f"{agent}.free").text
            except lm.LocalModelError:
                out.append((agent, False))
                continue
        out.append((agent, _parses(parse, text)))
    return out


# --- the measurements --------------------------------------------------------------------------


def _agent_of(label: str) -> str:
    return label.split(".", 1)[0]


def _runs(example: ModuleType, model: Any, questions: Sequence[str], alert_sets: int,
          free: bool) -> tuple[list[Any], list[tuple[str, str, bool]]]:
    import diagnosis_core.aiops as dca

    runs: list[Any] = []
    freely: list[tuple[str, str, bool]] = []
    for number, question in enumerate(questions, 1):
        run = example.run_chat(model, question=question, run_id=f"bench-chat-{number}")
        runs.append(run)
        if free:
            freely += [("chat", agent, ok) for agent, ok in _free_replies(example, model, run)]
        print(f"chat {number}/{len(questions)}: {run.outcome} in {run.seconds:.0f} s",
              file=sys.stderr)
    body = json.loads(example.ALERTMANAGER.read_text(encoding="utf-8"))["alertmanager"]
    alerts = {alert.name: alert for alert in dca.alerts_from_alertmanager(body).alerts}
    for number, names in enumerate(ALERT_SETS[:alert_sets], 1):
        chosen = tuple(alerts[name] for name in names)
        run = example.run_aiops(model, alerts=chosen, run_id=f"bench-aiops-{number}")
        runs.append(run)
        if free:
            freely += [("aiops", agent, ok) for agent, ok in _free_replies(example, model, run)]
        print(f"aiops {number}/{alert_sets}: {run.outcome} in {run.seconds:.0f} s",
              file=sys.stderr)
    return runs, freely


def _agent_table(runs: list[Any], freely: list[tuple[str, str, bool]]) -> str:
    parsed: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for run in runs:
        events = run.state.events
        for event in events:
            agent = event.node.value
            if agent in AGENTS:
                parsed[(run.workflow, agent)].append(event.status.value == "COMPLETED")
    free: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for workflow, agent, ok in freely:
        free[(workflow, agent)].append(ok)
    replies: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for run in runs:
        for reply in run.replies:
            if not reply.label.endswith(".free"):
                replies[(run.workflow, reply.label)].append(reply)
    rows = []
    order = [("chat", a) for a in ("planner", "executor", "verifier", "composer")] + [
        ("aiops", a) for a in ("supervisor", "planner", "executor", "reporter")
    ]
    for workflow, agent in order:
        ok = parsed.get((workflow, agent), [])
        loose = free.get((workflow, agent), [])
        if not ok and not loose:
            continue
        rows.append([
            f"{workflow} {agent}", _rate(sum(ok), len(ok)), _rate(sum(loose), len(loose)),
        ])
    table = _table(["agent", "parsed, constrained", "parsed, unconstrained (same inputs)"], rows)
    cost_rows = []
    for (workflow, label), items in sorted(replies.items()):
        tokens = [r.completion_tokens for r in items]
        prompt = [r.prompt_tokens for r in items]
        seconds = [r.seconds for r in items]
        cut = sum(r.finish_reason == "length" for r in items)
        cost_rows.append([
            f"{workflow} {label}", str(len(items)), f"{statistics.median(prompt):.0f}",
            f"{statistics.median(tokens):.0f} (max {max(tokens)})",
            f"{statistics.median(seconds):.1f} (max {max(seconds):.1f})", str(cut),
        ])
    costs = _table(
        ["reply", "replies", "prompt tokens (median)", "reply tokens (median)",
         "latency s (median)", "cut by max_tokens"], cost_rows,
    )
    return table + "\n\n" + costs


AGENTS = ("planner", "executor", "verifier", "composer", "supervisor", "reporter")


def _refusal_reason(error: str) -> str:
    """A parser's message without its path, ids and quoted values: one row per kind."""
    text = error.split(": ", 1)[-1] if re.match(r"^[$\w\[\].]+: ", error) else error
    text = re.sub(r"\([^)]*\)|'[^']*'|\"[^\"]*\"|\d+", "…", text)
    return re.sub(r"\s+", " ", text).strip()[:80]


def _refusal_table(runs: list[Any]) -> str:
    """Constrained replies the package refused, per agent and reason (what the schema left)."""
    reasons: Counter[str] = Counter()
    for run in runs:
        for event in run.state.events:
            if event.node.value in AGENTS and event.status.value != "COMPLETED":
                error = event.details.error or event.reason_code or event.status.value
                reasons[(run.workflow, event.node.value, _refusal_reason(str(error)))] += 1
    rows = [[f"{workflow} {agent}", reason, str(count)]
            for (workflow, agent, reason), count in sorted(reasons.items())]
    if not rows:
        return "No constrained reply was refused."
    return _table(["agent", "why the package refused the reply", "replies"], rows)


def _gatekeeper_table(runs: list[Any]) -> str:
    statuses: Counter[str] = Counter()
    bindings: Counter[str] = Counter()
    for run in runs:
        if run.workflow != "chat":
            continue
        if not run.state.gatekeeper_audits:
            statuses["not reached"] += 1
        for audit in run.state.gatekeeper_audits:
            statuses[f"{audit.status.value} (round {audit.round})"] += 1
            raw: Any = json.loads(audit.raw_result.json_text) if audit.raw_result else {}
            for binding in raw.get("checked_bindings", []) if isinstance(raw, dict) else []:
                reason = binding.get("reason")
                key = binding["status"] if binding["status"] == "pass" else (
                    f"fail: {str(reason).split(':')[0][:40] if reason else '?'}"
                )
                bindings[key] += 1
    left = _table(["gatekeeper status", "audits"],
                  [[k, str(v)] for k, v in sorted(statuses.items())])
    right = _table(["checked binding", "count"],
                   [[k, str(v)] for k, v in sorted(bindings.items())])
    return left + "\n\n" + right


def _outcome_table(runs: list[Any]) -> str:
    outcomes: Counter[str] = Counter()
    for run in runs:
        state = run.state
        if run.workflow == "chat":
            verdict = state.result.effective_verdict
            shown = verdict.value if verdict else "-"
            reason = state.result.reason_code.value if state.result.reason_code else "-"
            outcomes[f"chat {run.outcome} (effective verdict {shown}, reason {reason})"] += 1
        else:
            passed = "-" if run.evaluation is None else str(run.evaluation.passed)
            reason = state.reason_code.value if state.reason_code else "-"
            outcomes[f"aiops {run.outcome} (reason {reason}, rules passed {passed})"] += 1
    return _table(["outcome", "runs"], [[k, str(v)] for k, v in sorted(outcomes.items())])


def _time_table(runs: list[Any]) -> str:
    rows = []
    for workflow in ("chat", "aiops"):
        chosen = [run for run in runs if run.workflow == workflow]
        if not chosen:
            continue
        model = [sum(r.seconds for r in run.replies) for run in chosen]
        core = [run.seconds - m for run, m in zip(chosen, model, strict=True)]
        share = [c / run.seconds for run, c in zip(chosen, core, strict=True)]
        calls = [len(run.replies) for run in chosen]
        rows.append([
            workflow, str(len(chosen)), f"{statistics.median(calls):.0f}",
            f"{statistics.median([run.seconds for run in chosen]):.1f}",
            f"{statistics.median(model):.1f}",
            f"{1000 * statistics.median(core):.0f}",
            f"{100 * statistics.median(share):.2f} %",
        ])
    return _table(
        ["workflow", "runs", "model calls per run (median)", "run s (median)",
         "model s (median)", "package + tools ms (median)", "package share (median)"],
        rows,
    )


def report(runs: list[Any], freely: list[tuple[str, str, bool]], started: datetime.datetime,
           seconds: float) -> str:
    load = os.getloadavg()
    lines = [
        f"Run {started:%Y-%m-%d %H:%M} UTC, {seconds / 60:.0f} min, on {platform.machine()} "
        f"({os.cpu_count()} cores, shared: load average {load[0]:.1f} at the end), "
        f"Python {platform.python_version()}, SmolLM2-135M-Instruct Q4_1, two threads, "
        "greedy decoding.",
        "",
        "### Replies that parse, per agent",
        "",
        _agent_table(runs, freely),
        "",
        "Constrained replies the package refused, and why (the parsers' and the machine's "
        "words, paths and values left out):",
        "",
        _refusal_table(runs),
        "",
        "### The gatekeeper (chat)",
        "",
        _gatekeeper_table(runs),
        "",
        "### Outcomes",
        "",
        _outcome_table(runs),
        "",
        "### The package's time against the model's",
        "",
        _time_table(runs),
    ]
    return "\n".join(lines)


def write_docs(page: Path, text: str) -> None:
    content = page.read_text(encoding="utf-8")
    if BEGIN not in content or END not in content:
        raise SystemExit(f"{page}: the markers of this benchmark's section are missing")
    head, rest = content.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    page.write_text(f"{head}{BEGIN}\n\n{text}\n\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--alert-sets", type=int, default=len(ALERT_SETS))
    parser.add_argument("--no-free", action="store_true",
                        help="skip the unconstrained replies to the same inputs")
    parser.add_argument("--write-docs", type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    example = _example()
    model = example.load_model()
    started = datetime.datetime.now(datetime.UTC)
    import time

    clock = time.perf_counter()
    runs, freely = _runs(example, model, QUESTIONS[: args.questions], args.alert_sets,
                         not args.no_free)
    text = report(runs, freely, started, time.perf_counter() - clock)
    print(text)
    if args.write_docs is not None:
        write_docs(args.write_docs, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
