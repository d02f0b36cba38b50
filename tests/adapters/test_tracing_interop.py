"""Our spans and the ecosystem's in one trace: Temporal's TracingInterceptor, LangChain callbacks.

Spans go to the SDK's in-memory exporter on a fresh tracer provider (never
the global one); the interceptor and the observer share it, as a host's
process would.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Span, Tracer
from otel_support import Exported
from tools_support import tooled_effects

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct
from diagnosis_core.adapters.otel import (
    AiOpsOpenTelemetryObserver,
    OpenTelemetryObserver,
    trace_id_for_run,
)


def _ours(span: ReadableSpan) -> bool:
    return "diagnosis.run_id" in (span.attributes or {})


# --- Temporal: TracingInterceptor on the client and the worker ----------------------------


async def test_temporal_tracing_interceptor_spans_are_in_the_runs_trace(
    temporal_address: str,
) -> None:
    pytest.importorskip("temporalio")
    from temporalio.client import Client
    from temporalio.contrib.opentelemetry import TracingInterceptor

    from diagnosis_core.adapters.temporal import create_diagnosis_worker, execute_diagnosis

    exported = Exported()
    interceptor = TracingInterceptor(exported.tracer)
    plain = await Client.connect(temporal_address)
    client = Client(**{**plain.config(), "interceptors": [interceptor]})
    queue = f"interop-{uuid.uuid4()}"
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    observer = OpenTelemetryObserver(exported.tracer, activate=False)
    async with create_diagnosis_worker(
        client, effects, task_queue=queue, tools=recorders, observer=observer
    ):
        state = await execute_diagnosis(client, request, task_queue=queue)
    assert state.result.outcome is dc.Outcome.ANSWERED
    spans = exported.spans
    theirs = sorted({s.name.split(":")[0] for s in spans if not _ours(s)})
    assert {"RunActivity", "StartActivity", "StartWorkflow", "RunWorkflow"} <= set(theirs)
    assert len([s for s in spans if _ours(s)]) == 9
    trace_ids = {s.name.split(":")[0]: s.context.trace_id for s in spans if s.context}
    assert set(trace_ids.values()) == {trace_id_for_run(request.run.run_id)}, trace_ids
    # The run span is still parented on the run's remote root, and it links the
    # activity span that was current when it started.
    (run,) = [s for s in spans if s.name == "invoke_workflow diagnosis"]
    assert run.parent is not None and run.parent.is_remote
    activity_ids = {s.context.span_id for s in spans if s.name.startswith("RunActivity")}
    assert {link.context.span_id for link in run.links} <= activity_ids


async def test_temporal_aiops_run_with_the_interceptor_is_one_trace(
    temporal_address: str,
) -> None:
    pytest.importorskip("temporalio")
    from adapter_support import EXAMPLES_DIR, load_doc
    from temporalio.client import Client
    from temporalio.contrib.opentelemetry import TracingInterceptor

    from diagnosis_core.adapters.temporal_aiops import create_aiops_worker, execute_aiops

    exported = Exported()
    plain = await Client.connect(temporal_address)
    client = Client(**{**plain.config(), "interceptors": [TracingInterceptor(exported.tracer)]})
    queue = f"interop-aiops-{uuid.uuid4()}"
    scenario = dca.load_aiops_scenario(load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json"))
    request = dca.aiops_scenario_request(scenario)
    observer = AiOpsOpenTelemetryObserver(exported.tracer, activate=False)
    async with create_aiops_worker(
        client, dca.aiops_scenario_effects(scenario), task_queue=queue, observer=observer
    ):
        state = await execute_aiops(client, request, task_queue=queue)
    assert dc.to_json(state) == dc.to_json(
        dca.run_aiops(request, dca.aiops_scenario_effects(scenario))
    )
    spans = exported.spans
    assert any(s.name.startswith("StartWorkflow") for s in spans)
    assert any(s.name == "invoke_workflow aiops" for s in spans)
    assert {s.context.trace_id for s in spans if s.context} == {
        trace_id_for_run(request.run.run_id)
    }


# --- DBOS: the AIOps flow's spans come from steps, one trace -----------------------------


def test_a_dbos_aiops_run_is_one_trace_and_recovery_announces_nothing_twice(
    tmp_path: Path,
) -> None:
    pytest.importorskip("dbos")
    from adapter_support import EXAMPLES_DIR, load_doc
    from dbos import DBOS

    from diagnosis_core.adapters.dbos import configure_aiops_dbos, run_aiops_dbos

    exported = Exported()
    scenario = dca.load_aiops_scenario(load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json"))
    request = dca.aiops_scenario_request(scenario)
    configure_aiops_dbos(
        dca.aiops_scenario_effects(scenario),
        observer=AiOpsOpenTelemetryObserver(exported.tracer, activate=False),
    )
    DBOS(config={"name": "otel-aiops", "system_database_url": f"sqlite:///{tmp_path / 'd.db'}"})
    DBOS.launch()
    try:
        state = run_aiops_dbos(request)
        again = run_aiops_dbos(request)  # the same workflow id: DBOS returns the recorded run
    finally:
        DBOS.destroy()
    expected = dca.run_aiops(request, dca.aiops_scenario_effects(scenario))
    assert dc.to_json(state) == dc.to_json(expected) == dc.to_json(again)
    spans = exported.spans
    assert {s.context.trace_id for s in spans if s.context} == {
        trace_id_for_run(request.run.run_id)
    }
    names = [s.name for s in spans]
    assert names.count("invoke_workflow aiops") == 1
    # One span per trace event (all agent calls here), once: the run was not observed twice.
    assert sorted(n for n in names if n != "invoke_workflow aiops") == sorted(
        f"invoke_agent {event.node.value}" for event in expected.events
    )
    assert all(s.attributes and s.attributes["diagnosis.run_id"] == request.run.run_id
               for s in spans)


# --- LangChain: a callback handler's spans nest under the agent's span --------------------


def test_a_langchain_callback_handlers_spans_nest_under_the_agent_span() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import BaseMessage

    from diagnosis_core.adapters.langchain import chat_model_effects

    class SpanPerModelCall(BaseCallbackHandler):
        """A tracing handler as LangChain instrumentations write them: one span per call."""

        def __init__(self, tracer: Tracer) -> None:
            self.tracer = tracer
            self.open: dict[Any, Span] = {}
            self.metadata: list[dict[str, Any]] = []

        def on_chat_model_start(
            self,
            serialized: dict[str, Any],
            messages: list[list[BaseMessage]],
            *,
            run_id: Any,
            metadata: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            self.metadata.append(dict(metadata or {}))
            self.open[run_id] = self.tracer.start_span("chat fake")

        def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
            self.open.pop(run_id).end()

    exported = Exported()
    handler = SpanPerModelCall(exported.tracer)
    recorders = dct.RunRecorders()
    request, scripted = tooled_effects(recorders)
    replies = {
        agent: [scripted.agent(agent)("", request.run)]
        for agent in (dcm.AgentName.PLANNER, dcm.AgentName.VERIFIER, dcm.AgentName.COMPOSER)
    }
    models = {agent: FakeListChatModel(responses=reply) for agent, reply in replies.items()}
    effects = chat_model_effects(
        {**models, dcm.AgentName.EXECUTOR: FakeListChatModel(responses=["unused"])},
        scripted.gatekeeper,
        config={"callbacks": [handler]},
    )
    effects = dc.Effects(
        planner=effects.planner,
        executor=scripted.executor,
        verifier=effects.verifier,
        composer=effects.composer,
        gatekeeper=effects.gatekeeper,
    )
    state = dc.run_diagnosis(
        request,
        effects,
        sink=dcj.ListJournalSink(),
        tools=recorders(request.run.run_id, []),
        observer=OpenTelemetryObserver(exported.tracer),
    )
    assert state.result.outcome is dc.Outcome.ANSWERED
    spans = exported.spans
    assert {s.context.trace_id for s in spans if s.context} == {
        trace_id_for_run(request.run.run_id)
    }
    by_id = {s.context.span_id: s for s in spans if s.context}
    handled = [s for s in spans if s.name == "chat fake"]
    assert len(handled) == 3
    parents = sorted(by_id[s.parent.span_id].name for s in handled if s.parent)
    assert parents == ["invoke_agent composer", "invoke_agent planner", "invoke_agent verifier"]
    # The handler sees which run and agent it serves in LangChain's own metadata.
    assert {m["run_id"] for m in handler.metadata} == {request.run.run_id}
