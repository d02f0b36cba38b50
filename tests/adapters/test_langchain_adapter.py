"""The LangChain adapter: chat models as agent effects, with the run config reaching them."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("langchain_core")

from adapter_support import EXAMPLES_DIR, load_doc, reference_state, scenario_of
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
    ParrotFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult

import diagnosis_core as dc
import diagnosis_core.machine as dcm
from diagnosis_core.adapters.langchain import (
    AsyncChatModelInvoker,
    ChatModelInvoker,
    ChatModelOutputError,
    async_chat_model_effects,
    chat_model_effects,
    message_text,
)

PAYMENT = EXAMPLES_DIR / "payment_timeout.json"
REDIS = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
RUN = dc.RunConfig("run-7", "chat-9", {"tenant": "shop-eu"})


class Capture(BaseCallbackHandler):
    """Records what every chat model invocation was started with."""

    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.starts.append(
            {"messages": messages[0], "tags": tags, "metadata": metadata, **kwargs}
        )


class FailsFirst(GenericFakeChatModel):
    """A fake chat model whose first call raises ``error``."""

    error: Exception
    failed: bool = False

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if not self.failed:
            self.failed = True
            raise self.error
        return super()._generate(messages, *args, **kwargs)


def _texts(doc: dict[str, Any], agent: dcm.AgentName) -> list[str]:
    return [entry["text"] for entry in doc["responses"].get(agent.value, [])]


def _models(doc: dict[str, Any]) -> dict[dcm.AgentName, BaseChatModel]:
    """One fake model per agent, replying with the scenario's scripted texts."""
    return {
        agent: FakeListChatModel(responses=_texts(doc, agent) or ["unused"])
        for agent in dcm.AgentName
    }


def test_input_is_the_only_human_message_after_the_agents_system_prompt() -> None:
    capture = Capture()
    model = GenericFakeChatModel(messages=iter(["reply"]))
    invoker = ChatModelInvoker(
        model,
        agent=dcm.AgentName.VERIFIER,
        system_prompt="You verify.",
        config={"callbacks": [capture]},
    )
    assert invoker('{"question":"why?"}', RUN) == "reply"
    (start,) = capture.starts
    assert start["messages"] == [
        SystemMessage(content="You verify."),
        HumanMessage(content='{"question":"why?"}'),
    ]


def test_run_config_reaches_the_model_as_metadata_tags_and_run_name() -> None:
    capture = Capture()
    invoker = ChatModelInvoker(
        GenericFakeChatModel(messages=iter(["reply"])),
        agent=dcm.AgentName.PLANNER,
        config={"callbacks": [capture], "tags": ["caller"], "metadata": {"team": "sre"}},
    )
    invoker("input", RUN)
    (start,) = capture.starts
    assert start["messages"] == [HumanMessage(content="input")]
    assert set(start["tags"]) == {"diagnosis_core", "planner", "caller"}
    expected = {"tenant": "shop-eu", "run_id": "run-7", "session_id": "chat-9", "team": "sre"}
    assert expected.items() <= start["metadata"].items()
    assert start["name"] == "diagnosis_core.planner"


async def test_async_invoker_sends_the_same_request() -> None:
    capture = Capture()
    invoker = AsyncChatModelInvoker(
        GenericFakeChatModel(messages=iter(["reply"])),
        agent="composer",
        config={"callbacks": [capture]},
    )
    assert await invoker("input", RUN) == "reply"
    (start,) = capture.starts
    assert set(start["tags"]) == {"diagnosis_core", "composer"}
    assert {"run_id": "run-7", "session_id": "chat-9"}.items() <= start["metadata"].items()


def test_one_model_can_serve_every_agent_and_an_invoker_needs_no_agent_name() -> None:
    capture = Capture()
    model = ParrotFakeChatModel()  # echoes the input: never a valid plan
    request, scripted = scenario_of(load_doc(PAYMENT))
    effects = chat_model_effects(model, scripted.gatekeeper, config={"callbacks": [capture]})
    state = dc.run_diagnosis(request, effects)
    assert state.result.reason_code is dc.ReasonCode.PLANNER_FAILED
    assert [set(start["tags"]) for start in capture.starts] == [
        {"diagnosis_core", "planner"}
    ] * state.calls.planner

    capture.starts.clear()
    ChatModelInvoker(model, config={"callbacks": [capture]})("input", RUN)
    (start,) = capture.starts
    assert start["tags"] == ["diagnosis_core"]
    assert start["name"] is None  # no run name of ours without an agent


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain", "plain"),
        (["{\"a\": ", {"type": "text", "text": "1}"}], '{"a": 1}'),
        ([{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "{}"}], "{}"),
    ],
)
def test_message_text_joins_the_text_parts(content: Any, text: str) -> None:
    assert message_text(AIMessage(content=content)) == text


@pytest.mark.parametrize(
    "message",
    [
        "not a message",
        AIMessage(content=[{"type": "text", "text": 42}]),
        AIMessage.model_construct(content=[42]),
        AIMessage.model_construct(content={"text": "x"}),
        AIMessage(content=""),
        AIMessage(content=" \n"),
        AIMessage(content=[]),
        AIMessage(content=[{"type": "tool_use", "id": "t1", "name": "query_logs", "input": {}}]),
        AIMessage(content="", tool_calls=[{"name": "query_logs", "args": {}, "id": "t1"}]),
    ],
)
def test_a_reply_without_usable_text_raises_a_typed_error(message: object) -> None:
    with pytest.raises(ChatModelOutputError):
        message_text(message)


def test_a_reply_without_usable_text_fails_the_agent_non_retryably() -> None:
    doc = load_doc(PAYMENT)
    models = _models(doc)
    models[dcm.AgentName.PLANNER] = GenericFakeChatModel(
        messages=iter([AIMessage(content=[{"type": "text", "text": None}])])
    )
    _, scripted = scenario_of(doc)
    request = dc.scenario_request(dc.load_scenario(doc))
    state = dc.run_diagnosis(request, chat_model_effects(models, scripted.gatekeeper))
    assert state.result.reason_code is dc.ReasonCode.PLANNER_FAILED
    assert state.events[0].status is dcm.NodeStatus.NON_RETRYABLE_FAILED
    assert dc.default_failure_classifier(ChatModelOutputError("x")) is dc.FailureKind.NON_RETRYABLE


def test_a_tool_call_only_reply_is_a_chat_model_output_error_not_an_empty_output() -> None:
    doc = load_doc(PAYMENT)
    models = _models(doc)
    tool_call = {"name": "query_logs", "args": {"service": "pay-svc"}, "id": "call-1"}
    models[dcm.AgentName.PLANNER] = GenericFakeChatModel(
        messages=iter([AIMessage(content="", tool_calls=[tool_call])])
    )
    _, scripted = scenario_of(doc)
    request = dc.scenario_request(dc.load_scenario(doc))
    state = dc.run_diagnosis(request, chat_model_effects(models, scripted.gatekeeper))
    assert state.result.reason_code is dc.ReasonCode.PLANNER_FAILED
    first = state.events[0]
    assert first.status is dcm.NodeStatus.NON_RETRYABLE_FAILED  # not INVALID_OUTPUT "$: empty"
    with pytest.raises(ChatModelOutputError, match="only tool calls: 'query_logs'"):
        message_text(AIMessage(content="", tool_calls=[tool_call]))


def test_an_example_runs_end_to_end_through_fake_chat_models() -> None:
    doc = load_doc(REDIS)  # two executor and verifier replies: the evidence retry
    request, scripted = scenario_of(doc)
    capture = Capture()
    effects = chat_model_effects(
        _models(doc),
        scripted.gatekeeper,
        system_prompts={dcm.AgentName.EXECUTOR: "Use the tools."},
        config={"callbacks": [capture]},
    )
    state = dc.run_diagnosis(request, effects)
    assert dc.to_json(state.result) == dc.to_json(reference_state(doc).result)

    invoked = [(record.agent.value, record.input) for record in state.invocations]
    agents = {agent.value for agent in dcm.AgentName}
    seen = [
        ((set(start["tags"]) & agents).pop(), start["messages"][-1].content)
        for start in capture.starts
    ]
    assert seen == invoked
    for start in capture.starts:
        assert {"run_id": request.run.run_id, "session_id": request.run.session_id}.items() <= (
            start["metadata"].items()
        )
        has_prompt = isinstance(start["messages"][0], SystemMessage)
        assert has_prompt == ("executor" in start["tags"])


async def test_a_model_error_is_classified_and_retried_with_the_identical_input() -> None:
    doc = load_doc(PAYMENT)
    models = _models(doc)
    composer = _texts(doc, dcm.AgentName.COMPOSER)
    models[dcm.AgentName.COMPOSER] = FailsFirst(
        messages=iter(composer), error=TimeoutError("model overloaded")
    )
    request, scripted = scenario_of(doc)
    effects = async_chat_model_effects(models, dc.AsyncEffects.from_sync(scripted).gatekeeper)
    state = await dc.arun_diagnosis(request, effects)
    assert state.result.outcome is dc.Outcome.ANSWERED
    composer_calls = [r for r in state.invocations if r.agent is dcm.AgentName.COMPOSER]
    assert [r.attempt for r in composer_calls] == [1, 2]
    assert composer_calls[0].input == composer_calls[1].input
    retried = [e for e in state.events if e.node is dcm.NodeName.COMPOSER]
    assert retried[0].status is dcm.NodeStatus.RETRYABLE_FAILED
