"""OpenTelemetry on every engine: one trace per run, tool spans, retries that ended nothing.

The spans are exported to the SDK's in-memory exporter on a fresh tracer
provider per "process" (never the global one).
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from otel_support import Exported
from tools_support import tooled_effects

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct
from diagnosis_core.adapters.langchain import ChatModelInvoker, chat_model_effects
from diagnosis_core.adapters.langgraph import (
    EXECUTOR_NODE,
    build_diagnosis_graph,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)
from diagnosis_core.adapters.otel import (
    DEFAULT_PROVIDER_NAME,
    OpenTelemetryObserver,
    provider_names,
    trace_id_for_run,
)


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _errors(spans: tuple[ReadableSpan, ...]) -> list[str]:
    return [s.name for s in spans if s.status.status_code is StatusCode.ERROR]


# --- the plain drivers ------------------------------------------------------------------


def test_a_resumed_run_whose_first_hook_is_an_event_is_in_the_runs_trace() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink, tools=recorders(request.run.run_id, []))
    journal = sink.journal(request)
    # Cut after the executor's started entry: the resume settles it as interrupted,
    # so the resumed process's first hooks are event_appended (no effect runs first).
    index = next(i for i, e in enumerate(journal.entries) if e.call is dcj.JournalCall.EXECUTOR)
    started = attrs.evolve(
        journal.entries[index], state=dcj.EntryState.STARTED, outcome=None,
        tool_invocations=None,
    )
    cut = dcj.Journal(request, (*journal.entries[:index], started))
    exported = Exported()
    observer = OpenTelemetryObserver(exported.tracer)
    state = dc.run_diagnosis(request, effects, journal=cut, sink=dcj.ListJournalSink(),
                             observer=observer)
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
    trace_id = trace_id_for_run(request.run.run_id)
    assert {s.context.trace_id for s in exported.spans if s.context} == {trace_id}
    assert all(_attributes(s)["diagnosis.run_id"] == request.run.run_id for s in exported.spans)
    (run,) = [s for s in exported.spans if s.name == "invoke_workflow diagnosis"]
    assert run.parent is not None and run.parent.is_remote


def test_each_recorded_tool_call_is_a_child_span_of_its_executor_span() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    plain_executor = effects.executor

    def executor(input: str, config: dc.RunConfig, /) -> str:
        def broken(service: str) -> object:
            raise ConnectionError("logs backend down")

        with pytest.raises(ConnectionError):
            recorders.recorder(config.run_id).wrap("query_traces", broken)("pay-svc")
        return plain_executor(input, config)

    exported = Exported()
    state = dc.run_diagnosis(
        request, attrs.evolve(effects, executor=executor), sink=dcj.ListJournalSink(),
        tools=recorders(request.run.run_id, []), observer=OpenTelemetryObserver(exported.tracer),
    )
    assert state.result.outcome is dc.Outcome.ANSWERED
    spans = exported.spans
    (executor_span,) = [s for s in spans if s.name == "invoke_agent executor"]
    tools = [s for s in spans if s.name.startswith("execute_tool ") and "gatekeeper" not in s.name]
    assert [(s.name, _attributes(s)["gen_ai.tool.call.id"]) for s in tools] == [
        ("execute_tool query_traces", "inv-1"),
        ("execute_tool query_logs", "inv-2"),
        ("execute_tool query_logs", "inv-3"),
    ]
    assert executor_span.context is not None
    for span in tools:
        assert span.parent is not None and span.parent.span_id == executor_span.context.span_id
        assert _attributes(span)["gen_ai.operation.name"] == "execute_tool"
        assert _attributes(span)["gen_ai.tool.type"] == "function"
        assert "error.type" not in _attributes(span)
    assert tools[0].status.status_code is StatusCode.ERROR
    assert _attributes(tools[0])["diagnosis.tool.error_type"] == "ConnectionError"
    assert [s.status.status_code for s in tools[1:]] == [StatusCode.UNSET] * 2
    assert _errors(spans) == ["execute_tool query_traces"]


def test_a_planner_retried_once_in_an_answered_run_is_no_error_span() -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    calls: list[int] = []

    def flaky(input: str, config: dc.RunConfig, /) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError("upstream overloaded")
        return effects.planner(input, config)

    exported = Exported()
    state = dc.run_diagnosis(
        request, attrs.evolve(effects, planner=flaky), sink=dcj.ListJournalSink(),
        tools=recorders(request.run.run_id, []), observer=OpenTelemetryObserver(exported.tracer),
    )
    assert state.result.outcome is dc.Outcome.ANSWERED and len(calls) == 2
    assert _errors(exported.spans) == []
    planners = [s for s in exported.spans if s.name == "invoke_agent planner"]
    assert [_attributes(s).get("diagnosis.retried") for s in planners] == [True, None]
    assert [e.name for e in planners[0].events] == ["diagnosis.retry"]
    assert all("error.type" not in _attributes(s) for s in exported.spans)


def test_every_agent_span_names_its_provider() -> None:
    model = FakeListChatModel(responses=["x"])
    invoker = ChatModelInvoker(model)
    assert invoker.provider_name == "fakelistchatmodel"
    effects = chat_model_effects(model, gatekeeper=lambda run_id, output: {"status": "pass"})
    names = provider_names(effects)
    assert names == dict.fromkeys(("composer", "executor", "planner", "verifier"),
                                  "fakelistchatmodel")
    recorders = dct.RunRecorders()
    request, scripted = tooled_effects(recorders)
    exported = Exported()
    observer = OpenTelemetryObserver(exported.tracer, provider_name={"planner": "openai"})
    dc.run_diagnosis(request, scripted, sink=dcj.ListJournalSink(),
                     tools=recorders(request.run.run_id, []), observer=observer)
    agents = {s.name: _attributes(s)["gen_ai.provider.name"]
              for s in exported.spans if s.name.startswith("invoke_agent")}
    assert agents == {
        "invoke_agent planner": "openai",
        "invoke_agent executor": DEFAULT_PROVIDER_NAME,
        "invoke_agent verifier": DEFAULT_PROVIDER_NAME,
        "invoke_agent composer": DEFAULT_PROVIDER_NAME,
    }


# --- LangGraph: one trace across a resume in a fresh graph ------------------------------


def test_a_langgraph_run_resumed_in_a_fresh_graph_is_one_trace(tmp_path: Path) -> None:
    database = tmp_path / "checkpoints.sqlite"
    first, second = Exported(), Exported()
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    connection = sqlite3.connect(database, check_same_thread=False)
    observer = OpenTelemetryObserver(first.tracer)
    graph = build_diagnosis_graph(
        effects, checkpointer=SqliteSaver(connection), interrupt_after=[EXECUTOR_NODE],
        tools=recorders, observer=observer,
    )
    run_diagnosis_graph(graph, request)
    observer.finish()
    connection.close()

    fresh = dct.RunRecorders()
    _, fresh_effects = tooled_effects(fresh)
    connection = sqlite3.connect(database, check_same_thread=False)
    resumer = build_diagnosis_graph(
        fresh_effects, checkpointer=SqliteSaver(connection), tools=fresh,
        observer=OpenTelemetryObserver(second.tracer),
    )
    state = resume_diagnosis_graph(resumer, thread_id=request.run.run_id)
    connection.close()
    assert state.result.outcome is dc.Outcome.ANSWERED
    spans = (*first.spans, *second.spans)
    assert {s.context.trace_id for s in spans if s.context} == {
        trace_id_for_run(request.run.run_id)
    }
    names = [s.name for s in spans]
    assert names.count("invoke_workflow diagnosis") == 2
    assert names.count("execute_tool query_logs") == 2  # in the first process, once each
    assert [s.name for s in first.spans].count("execute_tool query_logs") == 2
    assert _errors(spans) == []
    for name in ("planner", "executor", "verifier", "composer"):
        assert names.count(f"invoke_agent {name}") == 1
    assert names.count("execute_tool gatekeeper") == 1


# --- Temporal: spans from activities, never from workflow code ---------------------------


async def test_a_temporal_run_is_one_trace_with_its_tool_spans(temporal_address: str) -> None:
    pytest.importorskip("temporalio")
    from temporalio.client import Client
    from temporalio.worker import Replayer

    from diagnosis_core.adapters.temporal import (
        DiagnosisWorkflow,
        create_diagnosis_worker,
        diagnosis_workflow_runner,
        start_diagnosis_workflow,
    )

    client = await Client.connect(temporal_address)
    queue = f"diagnosis-otel-{uuid.uuid4()}"
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    exported = Exported()
    observer = OpenTelemetryObserver(exported.tracer, activate=False)
    async with create_diagnosis_worker(
        client, effects, task_queue=queue, tools=recorders, observer=observer
    ):
        handle = await start_diagnosis_workflow(client, request, task_queue=queue)
        state = dc.from_wire(dc.DiagnosisState, await handle.result())
    assert state.result.outcome is dc.Outcome.ANSWERED
    spans = exported.spans
    assert {s.context.trace_id for s in spans if s.context} == {
        trace_id_for_run(request.run.run_id)
    }
    names = sorted(s.name for s in spans)
    assert names == sorted([
        "invoke_workflow diagnosis", "invoke_agent planner", "invoke_agent executor",
        "execute_tool query_logs", "execute_tool query_logs", "execute_tool gatekeeper",
        "verified_input", "invoke_agent verifier", "invoke_agent composer",
    ])
    (run,) = [s for s in spans if s.name == "invoke_workflow diagnosis"]
    assert _attributes(run)["diagnosis.finished"] is True
    assert _attributes(run)["diagnosis.outcome"] == "ANSWERED"
    assert _errors(spans) == []
    # Replaying the history runs the workflow code again and no activity: no new span.
    history = await handle.fetch_history()
    before = len(exported.spans)
    await Replayer(
        workflows=[DiagnosisWorkflow], workflow_runner=diagnosis_workflow_runner()
    ).replay_workflow(history)
    assert len(exported.spans) == before
