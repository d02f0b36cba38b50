"""LangChain tools recorded through the tool recorder (spec §13), in a real tool-calling loop.

The executor is a LangChain tool-calling loop: a fake chat model with tools
bound answers with tool calls, the loop executes them with the *recorded*
tools and feeds the ``ToolMessage``\\ s back, and the model's final answer is
an ``executor_evidence_v2`` citing the envelope ids. The reference
gatekeeper over ``recorder.gatekeeper()`` then passes those citations.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

import diagnosis_core as dc
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core.adapters.langchain import (
    ChatModelInvoker,
    message_text,
    recorded_tool,
    recorded_tools,
)

LOG_LINE = "gateway: upstream pay-svc timeout after 3000ms"


@tool
def query_logs(service: str, limit: int = 5) -> dict[str, Any]:
    """Search the logs of one service."""
    return {"items": [{"message": LOG_LINE, "service": service}][:limit]}


class Window(BaseModel):
    minutes: int


@tool
def query_metrics(service: str, window: Window) -> dict[str, Any]:
    """Read the p99 latency of one service over a window."""
    return {"service": service, "window_minutes": window.minutes, "p99_ms": 3012}


@tool
def flaky(service: str) -> str:
    """A tool whose backend is down."""
    raise TimeoutError("metrics backend timeout")


class ToolCallingFake(FakeMessagesListChatModel):
    """The fake chat model, able to have tools bound (as a provider model is)."""

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[Any, BaseMessage]:
        return self.bind(tools=[convert_to_openai_tool(item) for item in tools], **kwargs)


TOOL_CALLS = AIMessage(
    content="",
    tool_calls=[
        {"name": "query_logs", "args": {"service": "pay-svc"}, "id": "call-a"},
        {"name": "query_metrics", "args": {"service": "pay-svc", "window": {"minutes": 15}},
         "id": "call-b"},
    ],
)


def evidence_citing(logs_id: str, metrics_id: str) -> dict[str, Any]:
    return {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [
            {"claim_id": "c1", "text": "pay-svc calls time out after 3000 ms", "is_critical": True,
             "bindings": [{"source_invocation_id": logs_id, "tool_name": "query_logs",
                           "raw_path": "$.items[0].message",
                           "evidence_excerpt": "upstream pay-svc timeout after 3000ms"}]},
            {"claim_id": "c2", "text": "p99 latency is 3012 ms",
             "bindings": [{"source_invocation_id": metrics_id, "tool_name": "query_metrics",
                           "raw_path": "$.p99_ms", "evidence_excerpt": "3012"}]},
        ],
        "tool_trace_summary": [
            {"invocation_id": logs_id, "tool_name": "query_logs", "success": True},
            {"invocation_id": metrics_id, "tool_name": "query_metrics", "success": True},
        ],
    }


def tool_loop(model: Any, tools: list[BaseTool], question: str) -> tuple[str, list[BaseMessage]]:
    """A LangChain tool-calling loop: call the tools the model asks for until it answers."""
    bound = model.bind_tools(tools)
    by_name = {item.name: item for item in tools}
    messages: list[BaseMessage] = [HumanMessage(content=question)]
    for _ in range(5):
        reply = bound.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return message_text(reply), messages
        for call in reply.tool_calls:
            messages.append(by_name[call["name"]].invoke(call))
    raise AssertionError("the model never answered")


def envelopes(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [json.loads(m.content) for m in messages if isinstance(m, ToolMessage)]  # type: ignore[arg-type]


def test_a_tool_calling_loop_records_every_call_and_its_citations_pass_the_gatekeeper() -> None:
    recorder = dct.ToolRecorder()
    gatekeeper = recorder.gatekeeper()  # built before any tool ran: it reads the live ledger
    tools = recorded_tools(recorder, [query_logs, query_metrics])
    answer = json.dumps(evidence_citing("inv-1", "inv-2"))
    model = ToolCallingFake(responses=[TOOL_CALLS, AIMessage(content=answer)])

    text, messages = tool_loop(model, tools, "why does the payment API time out?")

    # The tool messages carry the envelopes, with ids in call order.
    assert envelopes(messages) == [
        {"invocation_id": "inv-1", "tool_name": "query_logs",
         "output": {"items": [{"message": LOG_LINE, "service": "pay-svc"}]}},
        {"invocation_id": "inv-2", "tool_name": "query_metrics",
         "output": {"service": "pay-svc", "window_minutes": 15, "p99_ms": 3012}},
    ]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_messages] == ["call-a", "call-b"]
    # The ledger holds the calls with their (JSON) arguments as input.
    assert [record.to_record() for record in recorder.records()] == [
        {"invocation_id": "inv-1", "tool_name": "query_logs", "success": True,
         "output": envelopes(messages)[0]["output"],
         "input": {"args": [], "kwargs": {"service": "pay-svc", "limit": 5}}},
        {"invocation_id": "inv-2", "tool_name": "query_metrics", "success": True,
         "output": envelopes(messages)[1]["output"],
         "input": {"args": [], "kwargs": {"service": "pay-svc", "window": {"minutes": 15}}}},
    ]

    raw = gatekeeper("run-1", dcp.parse_executor_evidence(text))
    assert raw["status"] == "pass", raw
    checked: list[dict[str, Any]] = raw["checked_bindings"]  # type: ignore[assignment]
    assert [entry["matched_text"] for entry in checked] == [
        "upstream pay-svc timeout after 3000ms", "3012",
    ]


def test_citing_an_id_the_loop_never_produced_fails_the_binding() -> None:
    recorder = dct.ToolRecorder()
    tools = recorded_tools(recorder, [query_logs, query_metrics])
    model = ToolCallingFake(responses=[
        TOOL_CALLS, AIMessage(content=json.dumps(evidence_citing("inv-1", "inv-3"))),
    ])
    text, _ = tool_loop(model, tools, "q")
    raw = recorder.gatekeeper()("run-1", dcp.parse_executor_evidence(text))
    assert (raw["status"], raw["level"], raw["reason_codes"]) == (
        "fail", "low_confid", ["INVOCATION_NOT_FOUND"]
    )


def test_the_wrapped_tool_shows_the_model_the_same_tool() -> None:
    recorder = dct.ToolRecorder()
    for original in (query_logs, query_metrics):
        wrapped = recorded_tool(recorder, original)
        assert convert_to_openai_tool(wrapped) == convert_to_openai_tool(original)


def test_a_raising_tool_is_recorded_as_failed_and_the_error_propagates() -> None:
    recorder = dct.ToolRecorder()
    [wrapped] = recorded_tools(recorder, [flaky])
    with pytest.raises(TimeoutError, match="metrics backend timeout"):
        wrapped.invoke({"name": "flaky", "args": {"service": "pay-svc"}, "id": "call-1",
                        "type": "tool_call"})
    [record] = recorder.records()
    assert (record.success, record.error) == (
        False, dct.ToolCallError("TimeoutError", "metrics backend timeout")
    )


def test_async_tool_calls_are_recorded_in_call_start_order() -> None:
    recorder = dct.ToolRecorder()
    logs, metrics = recorded_tools(recorder, [query_logs, query_metrics])

    async def both() -> list[Any]:
        return list(await asyncio.gather(
            logs.ainvoke({"service": "a"}),
            metrics.ainvoke({"service": "b", "window": {"minutes": 5}}),
        ))

    first, second = (json.loads(text) for text in asyncio.run(both()))
    assert (first["invocation_id"], second["invocation_id"]) == ("inv-1", "inv-2")
    assert [r.tool_name for r in recorder.records()] == ["query_logs", "query_metrics"]


def test_only_distinct_base_tools_are_wrapped() -> None:
    recorder = dct.ToolRecorder()
    with pytest.raises(TypeError, match=r"tools\[1\]: expected a BaseTool"):
        recorded_tools(recorder, [query_logs, len])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"tools\[1\]: duplicate tool name 'query_logs'"):
        recorded_tools(recorder, [query_logs, query_logs])


def test_the_full_chat_workflow_with_a_langchain_tool_calling_executor() -> None:
    recorder = dct.ToolRecorder()
    tools = recorded_tools(recorder, [query_logs, query_metrics])
    model = ToolCallingFake(responses=[
        TOOL_CALLS, AIMessage(content=json.dumps(evidence_citing("inv-1", "inv-2"))),
    ])

    def executor(input: str, config: dc.RunConfig, /) -> str:
        return tool_loop(model, tools, input)[0]

    def scripted(doc: dict[str, Any]) -> ChatModelInvoker:
        return ChatModelInvoker(FakeListChatModel(responses=[json.dumps(doc)]))

    effects = dc.Effects(
        planner=scripted({"steps": [{"step_id": "s1", "goal": "check the gateway logs",
                                     "tools": ["query_logs", "query_metrics"]}]}),
        executor=executor,
        verifier=scripted({"verdict": "PASS", "groundedness_score": 0.9,
                           "facts_checked": [], "allowed_claim_ids": ["c1", "c2"]}),
        composer=scripted({"answer": "pay-svc times out after 3000 ms.",
                           "cited_claim_ids": ["c1"]}),
        gatekeeper=recorder.gatekeeper(),
    )
    request = dc.DiagnosisRequest("Why does pay time out?", dc.RunConfig("r1", "s1"))
    state = dc.run_diagnosis(request, effects)
    result = state.result
    assert (result.outcome, result.gatekeeper_status) == (
        dc.Outcome.ANSWERED, dcp.GatekeeperStatus.PASS
    )
    assert result.answer == "pay-svc times out after 3000 ms."
    assert [record.invocation_id for record in recorder.records()] == ["inv-1", "inv-2"]
