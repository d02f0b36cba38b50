"""The LangChain bridge of the executor's tool loop: a chat model with ``bind_tools`` (issue 33).

LangChain's own fake chat model (``FakeMessagesListChatModel``), given a
``bind_tools`` as a provider model has, answers with tool calls and then the
evidence; :func:`tool_calling_model` makes it a ``ToolCallingModel`` and
``executor_agent`` runs it with LangChain tools (:func:`loop_tools`) through
the run's recorder.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from pydantic import Field

import diagnosis_core as dc
import diagnosis_core.tools as dct
from diagnosis_core.adapters.langchain import (
    AsyncLangChainToolModel,
    ChatModelOutputError,
    loop_tools,
    model_turn,
    tool_calling_model,
)

RUN = dc.RunConfig("run-7", "chat-9", {"tenant": "shop-eu"})
LOG_LINE = "gateway: upstream pay-svc timeout after 3000ms"


@tool
def query_logs(service: str, limit: int = 5) -> dict[str, Any]:
    """Search the logs of one service."""
    return {"items": [{"message": LOG_LINE, "service": service}][:limit]}


@tool
def flaky(service: str) -> str:
    """A tool whose backend is down."""
    raise TimeoutError("metrics backend timeout")


class ToolCallingFake(FakeMessagesListChatModel):
    """LangChain's fake chat model with ``bind_tools``; it keeps what each call was given."""

    seen: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[Any, BaseMessage]:
        return self.bind(tools=list(tools), **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append((list(messages), dict(kwargs)))
        return super()._generate(messages, stop, run_manager, **kwargs)


def evidence(invocation_id: str) -> str:
    return json.dumps({
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [{"claim_id": "c1", "text": "pay-svc times out", "is_critical": True,
                    "bindings": [{"source_invocation_id": invocation_id, "tool_name": "query_logs",
                                  "raw_path": "$.items[0].message",
                                  "evidence_excerpt": "upstream pay-svc timeout after 3000ms"}]}],
    })


def fake(*responses: BaseMessage) -> ToolCallingFake:
    return ToolCallingFake(responses=list(responses))


def test_a_langchain_model_with_bind_tools_runs_the_executor_loop() -> None:
    recorder = dct.ToolRecorder()
    model = fake(
        AIMessage(content="", tool_calls=[
            {"name": "query_logs", "args": {"service": "pay-svc"}, "id": "call-a"}]),
        AIMessage(content=evidence("inv-1")),
    )
    agent = dct.executor_agent(
        tool_calling_model(model), loop_tools([query_logs]), recorder=recorder,
        system_prompt="You are the executor.",
    )
    reply = agent("the input", RUN)
    assert json.loads(reply)["claims"][0]["bindings"][0]["source_invocation_id"] == "inv-1"
    [record] = recorder.records()
    assert record.to_record()["input"] == {"args": [], "kwargs": {"service": "pay-svc"}}
    assert record.to_record()["output"] == {"items": [{"message": LOG_LINE, "service": "pay-svc"}]}
    (first, first_kwargs), (second, _) = model.seen
    assert [type(m) for m in first] == [SystemMessage, HumanMessage]
    assert [t["function"]["name"] for t in first_kwargs["tools"]] == ["query_logs"]
    assert first_kwargs["tools"][0]["function"]["parameters"]["required"] == ["service"]
    # The second call sees the model's tool call and the envelope, answered by call id.
    assert isinstance(second[2], AIMessage) and second[2].tool_calls[0]["id"] == "call-a"
    answer = second[3]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "call-a"
    assert json.loads(str(answer.content))["invocation_id"] == "inv-1"
    assert recorder.gatekeeper()("run-7", dc.protocol.parse_executor_evidence(reply))[
        "status"] == "pass"


def test_tool_errors_reach_the_langchain_model_as_error_tool_messages() -> None:
    model = fake(
        AIMessage(content="", tool_calls=[{"name": "flaky", "args": {"service": "a"}, "id": "x"}]),
        AIMessage(content='{"schema_version": "executor_evidence_v2", '
                          '"evidence_status": "no_evidence", "claims": []}'),
    )
    recorder = dct.ToolRecorder()
    dct.executor_agent(tool_calling_model(model), loop_tools([flaky]), recorder=recorder)("i", RUN)
    answer = model.seen[1][0][-1]
    assert isinstance(answer, ToolMessage) and answer.status == "error"
    assert json.loads(str(answer.content))["error"] == {
        "type": "TimeoutError", "message": "metrics backend timeout", "retryable": True}
    assert [(r.tool_name, r.success) for r in recorder.records()] == [("flaky", False)]


def test_openai_response_format_binds_the_grounding_schema_next_to_the_tools() -> None:
    model = fake(
        AIMessage(content="", tool_calls=[{"name": "query_logs", "args": {"service": "a"},
                                           "id": "c"}]),
        AIMessage(content=evidence("inv-1")),
    )
    bridge = tool_calling_model(model, response_format="openai", bind_kwargs={"strict": True})
    dct.executor_agent(bridge, loop_tools([query_logs]), recorder=dct.ToolRecorder())("i", RUN)
    kwargs = model.seen[1][1]
    assert kwargs["strict"] is True
    response_format = kwargs["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    bindings = schema["properties"]["claims"]["items"]["properties"]["bindings"]["items"]
    assert [b["properties"]["source_invocation_id"]["enum"] for b in bindings["anyOf"]] == [
        ["inv-1"]]


def test_the_last_turn_binds_no_tools() -> None:
    model = fake(
        AIMessage(content="", tool_calls=[{"name": "query_logs", "args": {"service": "a"},
                                           "id": "c"}]),
        AIMessage(content=evidence("inv-1")),
    )
    dct.executor_agent(tool_calling_model(model), loop_tools([query_logs]),
                       recorder=dct.ToolRecorder(), max_turns=2)("i", RUN)
    assert "tools" in model.seen[0][1] and "tools" not in model.seen[1][1]


def test_the_async_bridge_uses_ainvoke() -> None:
    model = fake(
        AIMessage(content="", tool_calls=[{"name": "query_logs", "args": {"service": "b"},
                                           "id": "c"}]),
        AIMessage(content=evidence("inv-1")),
    )
    agent = dct.async_executor_agent(AsyncLangChainToolModel(model), loop_tools([query_logs]),
                                     recorder=dct.ToolRecorder())
    reply = asyncio.run(asyncio.wait_for(agent("i", RUN), timeout=20))
    assert json.loads(reply)["evidence_status"] == "evidence_found"


def test_the_aiops_executor_runs_on_the_langchain_bridge() -> None:
    model = fake(
        AIMessage(content="", tool_calls=[{"name": "query_logs", "args": {"service": "a"},
                                           "id": "c"}]),
        AIMessage(content=json.dumps({"tool_invocation_ids": ["inv-1"], "findings": [
            {"text": "timeouts", "cited_invocation_ids": ["inv-1"]}]})),
    )
    agent = dct.aiops_executor_agent(tool_calling_model(model), loop_tools([query_logs]),
                                     recorder=dct.ToolRecorder())
    assert json.loads(agent("i", RUN))["tool_invocation_ids"] == ["inv-1"]


def test_replies_become_model_turns_or_typed_errors() -> None:
    turn = model_turn(AIMessage(content="", tool_calls=[{"name": "a", "args": {}, "id": None}]), 3)
    assert turn.tool_calls == (dct.ToolCall("lc-3-0", "a", {}),)
    assert model_turn(AIMessage(content="done")) == dct.ModelTurn(text="done")
    with pytest.raises(ChatModelOutputError, match="the reply has no text"):
        model_turn(AIMessage(content="  "))
    broken = AIMessage(content="", invalid_tool_calls=[
        {"name": "a", "args": "{not json", "id": "1", "error": "bad", "type": "invalid_tool_call"}])
    with pytest.raises(ChatModelOutputError, match="arguments do not parse: 'a'"):
        model_turn(broken)
    with pytest.raises(ChatModelOutputError, match="expected a chat message"):
        model_turn("text")
    with pytest.raises(TypeError, match="expected a LangChain BaseChatModel"):
        tool_calling_model("gpt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="response_format: expected None, 'openai'"):
        tool_calling_model(fake(), response_format="anthropic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"tools\[1\]: duplicate tool name 'query_logs'"):
        loop_tools([query_logs, query_logs])
