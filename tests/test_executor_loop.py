"""The executor's tool loop with a scripted tool-calling model (issue 33, spec §13, §12.3, §18).

The model is a real :class:`ToolCallingModel` that replays a script
(``tool_models.py``); the tools are real functions run through the run's
:class:`ToolRecorder`; whole runs go through the package's drivers, so the
gatekeeper checks what the loop recorded.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from journal_tools_support import Crash, FileSink, read_journal
from tool_models import (
    AsyncScriptedToolModel,
    ScriptedToolModel,
    answer,
    calls,
    evidence,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core import FailureKind, ReasonCode, RunConfig, default_failure_classifier

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DOC: dict[str, Any] = json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
RUN = RunConfig("run-1", "chat-1")
OBJECT = {"type": "object", "properties": {"service": {"type": "string"}}}

LOGS = {"items": [{"message": "pay-svc: upstream timeout after 3000ms", "level": "error"}]}
METRICS = {"series": [{"summary": "p99 3400ms", "points": [180, 3400]}]}


class Tools:
    """Real tool functions that count their runs (what ``resend_executor`` must not repeat)."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def query_logs(self, service: str) -> dict[str, Any]:
        self.ran.append(f"query_logs({service})")
        return LOGS

    def query_metrics(self, service: str) -> dict[str, Any]:
        self.ran.append(f"query_metrics({service})")
        return METRICS

    def broken(self, service: str) -> dict[str, Any]:
        self.ran.append(f"broken({service})")
        raise ConnectionError(f"{service}: connection reset")

    def invalid(self, service: str) -> dict[str, Any]:
        self.ran.append(f"invalid({service})")
        raise ValueError(f"unknown service {service!r}")

    def blocked(self, service: str) -> dict[str, Any]:
        raise dc.ToolBlockedError(f"{service}: not allowed")

    def specs(self, *names: str) -> list[dct.Tool]:
        names = names or ("query_logs", "query_metrics")
        return [dct.Tool(dct.ToolSpec(name, f"the {name} tool", OBJECT), getattr(self, name))
                for name in names]


GROUNDED = evidence(
    ("inv-1", "query_logs", "$.items[0].message", "upstream timeout after 3000ms"),
    ("inv-2", "query_metrics", "$.series[0].summary", "p99 3400ms"),
)


def investigation() -> ScriptedToolModel:
    """Logs and metrics in one turn, then the grounded answer."""
    return ScriptedToolModel([
        calls(("query_logs", {"service": "pay-svc"}), ("query_metrics", {"service": "pay-svc"})),
        answer(GROUNDED),
    ])


def contents(request: dct.TurnRequest) -> list[Any]:
    return [json.loads(m.content) for m in request.messages if isinstance(m, dct.ToolMessage)]


def binding_branches(schema: Any) -> list[Any]:
    items = schema["properties"]["claims"]["items"]["properties"]["bindings"]["items"]
    return list(items["anyOf"])


# --- the loop -----------------------------------------------------------------------------------


def test_tool_calls_go_through_the_recorder_and_the_answer_is_the_final_text() -> None:
    tools, recorder, model = Tools(), dct.ToolRecorder(), investigation()
    agent = dct.executor_agent(model, tools.specs(), recorder=recorder, system_prompt="Be exact.")
    reply = agent("the input", RUN)
    assert json.loads(reply) == GROUNDED
    assert tools.ran == ["query_logs(pay-svc)", "query_metrics(pay-svc)"]
    assert [(r.invocation_id, r.tool_name, r.to_record()["input"]) for r in recorder.records()] == [
        ("inv-1", "query_logs", {"args": [], "kwargs": {"service": "pay-svc"}}),
        ("inv-2", "query_metrics", {"args": [], "kwargs": {"service": "pay-svc"}}),
    ]
    first, second = model.requests
    assert first.messages == (dct.SystemMessage("Be exact."), dct.UserMessage("the input"))
    assert [spec.name for spec in first.tools] == ["query_logs", "query_metrics"]
    assert first.config == RUN
    # The model saw the §13 envelopes, answered to its own call ids.
    assert [m.tool_call_id for m in second.messages if isinstance(m, dct.ToolMessage)] == [
        "call-1", "call-2"]
    assert contents(second) == [
        {"invocation_id": "inv-1", "tool_name": "query_logs", "output": LOGS},
        {"invocation_id": "inv-2", "tool_name": "query_metrics", "output": METRICS},
    ]
    # The gatekeeper passes every binding of the answer.
    parsed = dcp.parse_executor_evidence(reply)
    assert recorder.gatekeeper()("run-1", parsed)["status"] == "pass"


def test_each_turn_s_response_schema_cites_only_what_was_recorded_so_far() -> None:
    model = investigation()
    dct.executor_agent(model, Tools().specs(), recorder=dct.ToolRecorder())("in", RUN)
    first, second = (request.response_schema for request in model.requests)
    assert first is not None and second is not None
    # Before any tool call: nothing to cite, so no_evidence only.
    assert first["properties"]["evidence_status"]["enum"] == ["no_evidence"]
    assert first["properties"]["claims"]["maxItems"] == 0
    branches = binding_branches(second)
    assert [b["properties"]["source_invocation_id"]["enum"] for b in branches] == [
        ["inv-1"], ["inv-2"]]
    assert branches[0]["properties"]["raw_path"]["enum"] == [
        "$.items[0].message", "$.items[0].level"]
    assert branches[1]["properties"]["raw_path"]["enum"] == [
        "$.series[0].summary", "$.series[0].points[0]", "$.series[0].points[1]"]


def test_grounding_run_cites_earlier_calls_and_off_sends_no_schema() -> None:
    recorder = dct.ToolRecorder()
    recorder.wrap("earlier", lambda: {"a": "b"})()
    model = investigation()
    dct.executor_agent(model, Tools().specs(), recorder=recorder, grounding="run")("in", RUN)
    schema = model.requests[1].response_schema
    assert [b["properties"]["source_invocation_id"]["enum"] for b in binding_branches(schema)] == [
        ["inv-1"], ["inv-2"], ["inv-3"]]
    off = investigation()
    dct.executor_agent(off, Tools().specs(), recorder=dct.ToolRecorder(), grounding="off")("", RUN)
    assert [request.response_schema for request in off.requests] == [None, None]


def test_a_whole_run_with_the_loop_as_executor_is_answered_and_grounded() -> None:
    tools, recorder = Tools(), dct.ToolRecorder()
    scripted = dc.scenario_effects(dc.load_scenario(DOC))
    effects = attrs.evolve(
        scripted,
        executor=dct.executor_agent(investigation(), tools.specs(), recorder=recorder),
        gatekeeper=recorder.gatekeeper(),
    )
    state = dc.run_diagnosis(dc.scenario_request(dc.load_scenario(DOC)), effects)
    assert state.result.outcome is dc.Outcome.ANSWERED
    assert state.gatekeeper is not None
    assert state.gatekeeper.status is dcp.GatekeeperStatus.PASS
    checked = state.gatekeeper.checked_bindings
    assert [(b.source_invocation_id, b.matched_text) for b in checked] == [
        ("inv-1", "upstream timeout after 3000ms"), ("inv-2", "p99 3400ms")]


# --- tool errors --------------------------------------------------------------------------------


def test_a_failing_tool_is_recorded_and_told_to_the_model_with_its_classification() -> None:
    tools, recorder = Tools(), dct.ToolRecorder()
    model = ScriptedToolModel([
        calls(("broken", {"service": "a"}), ("invalid", {"service": "b"})),
        answer(evidence()),
    ])
    agent = dct.executor_agent(model, tools.specs("broken", "invalid"), recorder=recorder)
    assert json.loads(agent("in", RUN))["evidence_status"] == "no_evidence"
    assert [(r.invocation_id, r.success) for r in recorder.records()] == [
        ("inv-1", False), ("inv-2", False)]
    told = contents(model.requests[1])
    assert told == [
        {"tool_name": "broken", "error": {"type": "ConnectionError",
                                          "message": "a: connection reset", "retryable": True}},
        {"tool_name": "invalid", "error": {"type": "ValueError",
                                           "message": "unknown service 'b'", "retryable": False}},
    ]
    assert all(m.is_error for m in model.requests[1].messages if isinstance(m, dct.ToolMessage))
    # A failed invocation is not citable: the schema has no branch for it.
    schema = model.requests[1].response_schema
    assert schema is not None and schema["properties"]["evidence_status"]["enum"] == ["no_evidence"]


def test_tool_errors_raise_hands_the_exception_to_the_driver_s_classifier() -> None:
    model = ScriptedToolModel([calls(("broken", {"service": "a"}))])
    agent = dct.executor_agent(
        model, Tools().specs("broken"), recorder=dct.ToolRecorder(), tool_errors="raise"
    )
    with pytest.raises(ConnectionError) as raised:
        agent("in", RUN)
    assert default_failure_classifier(raised.value) is FailureKind.RETRYABLE


def test_a_blocked_tool_ends_the_run_with_executor_tool_blocked() -> None:
    recorder = dct.ToolRecorder()
    model = ScriptedToolModel([calls(("blocked", {"service": "a"}))])
    scripted = dc.scenario_effects(dc.load_scenario(DOC))
    effects = attrs.evolve(
        scripted,
        executor=dct.executor_agent(model, Tools().specs("blocked"), recorder=recorder),
        gatekeeper=recorder.gatekeeper(),
    )
    state = dc.run_diagnosis(dc.scenario_request(dc.load_scenario(DOC)), effects)
    assert state.result.reason_code is ReasonCode.EXECUTOR_TOOL_BLOCKED
    assert [(r.tool_name, r.success) for r in recorder.records()] == [("blocked", False)]


def test_unknown_tools_and_unstorable_arguments_are_answered_and_never_run() -> None:
    tools, recorder = Tools(), dct.ToolRecorder()
    model = ScriptedToolModel([
        calls(("drop_table", {}), ("query_logs", {"service": {1, 2}})),  # type: ignore[dict-item]
        answer(evidence()),
    ])
    dct.executor_agent(model, tools.specs(), recorder=recorder)("in", RUN)
    assert tools.ran == [] and recorder.records() == ()
    unknown, unstorable = contents(model.requests[1])
    assert unknown["error"]["type"] == "UnknownTool"
    assert "query_logs, query_metrics" in unknown["error"]["message"]
    assert unstorable["error"]["type"] == "diagnosis_core._kernel.errors.LedgerError"


def test_a_model_error_reaches_the_driver_unchanged() -> None:
    def down(request: dct.TurnRequest) -> dct.ModelTurn:
        raise TimeoutError("model down")

    agent = dct.executor_agent(ScriptedToolModel([down]), Tools().specs(),
                               recorder=dct.ToolRecorder())
    with pytest.raises(TimeoutError, match="model down"):
        agent("in", RUN)


# --- limits -------------------------------------------------------------------------------------


def endless(n: int) -> ScriptedToolModel:
    return ScriptedToolModel([calls(("query_logs", {"service": f"s{i}"})) for i in range(n)])


def test_max_tool_calls_offers_a_last_turn_without_tools_then_fails_non_retryable() -> None:
    tools = Tools()
    model = endless(5)
    agent = dct.executor_agent(model, tools.specs(), recorder=dct.ToolRecorder(),
                               max_tool_calls=2, max_turns=10)
    with pytest.raises(dct.ToolLoopLimitError, match=r"^max_tool_calls: ") as raised:
        agent("in", RUN)
    assert (raised.value.limit, raised.value.value) == ("max_tool_calls", 2)
    assert default_failure_classifier(raised.value) is FailureKind.NON_RETRYABLE
    assert tools.ran == ["query_logs(s0)", "query_logs(s1)"]
    assert [len(request.tools) for request in model.requests] == [2, 2, 0]


def test_calls_beyond_the_tool_budget_in_one_turn_are_not_run() -> None:
    tools = Tools()
    model = ScriptedToolModel([
        calls(*[("query_logs", {"service": f"s{i}"}) for i in range(3)]),
        answer(evidence()),
    ])
    dct.executor_agent(model, tools.specs(), recorder=dct.ToolRecorder(), max_tool_calls=2)(
        "in", RUN)
    assert tools.ran == ["query_logs(s0)", "query_logs(s1)"]
    assert contents(model.requests[1])[2]["error"]["type"] == "ToolCallLimit"
    assert model.requests[1].tools == ()


def test_max_turns_offers_a_last_turn_without_tools_then_fails_non_retryable() -> None:
    model = endless(5)
    agent = dct.executor_agent(model, Tools().specs(), recorder=dct.ToolRecorder(),
                               max_turns=3, max_tool_calls=10)
    with pytest.raises(dct.ToolLoopLimitError, match=r"^max_turns: ") as raised:
        agent("in", RUN)
    assert raised.value.limit == "max_turns"
    assert [len(request.tools) for request in model.requests] == [2, 2, 0]


def test_a_model_that_answers_on_its_last_turn_is_not_a_failure() -> None:
    model = ScriptedToolModel([calls(("query_logs", {"service": "a"})), answer(evidence())])
    reply = dct.executor_agent(model, Tools().specs(), recorder=dct.ToolRecorder(), max_turns=2)(
        "in", RUN)
    assert json.loads(reply)["evidence_status"] == "no_evidence"


class Clock:
    """A host clock the test moves: each model turn takes ``step`` seconds."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_deadline_ends_the_loop_with_a_retryable_timeout() -> None:
    clock, tools = Clock(), Tools()

    def slow_tool(service: str) -> dict[str, Any]:
        clock.now += 4.0
        return tools.query_logs(service)

    spec = dct.Tool(dct.ToolSpec("query_logs", "logs", OBJECT), slow_tool)
    model = endless(5)
    agent = dct.executor_agent(model, [spec], recorder=dct.ToolRecorder(), deadline_s=10.0,
                               clock=clock)
    with pytest.raises(dct.ToolLoopDeadlineError, match=r"^deadline_s: 10 s spent before turn 4"):
        agent("in", RUN)
    assert [request.time_left_s for request in model.requests] == [10.0, 6.0, 2.0]
    assert default_failure_classifier(dct.ToolLoopDeadlineError(1.0, "x")) is FailureKind.RETRYABLE


def test_the_deadline_is_checked_before_each_tool_call() -> None:
    clock, tools = Clock(), Tools()

    def slow_tool(service: str) -> dict[str, Any]:
        clock.now += 6.0
        return tools.query_logs(service)

    spec = dct.Tool(dct.ToolSpec("query_logs", "logs", OBJECT), slow_tool)
    model = ScriptedToolModel([calls(*[("query_logs", {"service": f"s{i}"}) for i in range(3)])])
    agent = dct.executor_agent(model, [spec], recorder=dct.ToolRecorder(), deadline_s=10.0,
                               clock=clock)
    with pytest.raises(dct.ToolLoopDeadlineError, match="before tool call 'query_logs'"):
        agent("in", RUN)
    assert tools.ran == ["query_logs(s0)", "query_logs(s1)"]


def test_the_async_loop_cancels_a_model_call_at_the_deadline() -> None:
    model = AsyncScriptedToolModel([answer(evidence())], delay=30.0)
    agent = dct.async_executor_agent(model, Tools().specs(), recorder=dct.ToolRecorder(),
                                     deadline_s=0.2)
    with pytest.raises(dct.ToolLoopDeadlineError, match="in turn 1"):
        asyncio.run(asyncio.wait_for(agent("in", RUN), timeout=20))


def test_the_async_loop_awaits_coroutine_tools_and_calls_plain_ones() -> None:
    tools, recorder = Tools(), dct.ToolRecorder()

    async def query_metrics(service: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return tools.query_metrics(service)

    mixed = [tools.specs("query_logs")[0],
             dct.Tool(dct.ToolSpec("query_metrics", "metrics", OBJECT), query_metrics)]
    model = AsyncScriptedToolModel([
        calls(("query_logs", {"service": "pay-svc"}), ("query_metrics", {"service": "pay-svc"})),
        answer(GROUNDED),
    ])
    agent = dct.async_executor_agent(model, mixed, recorder=recorder)
    reply = asyncio.run(asyncio.wait_for(agent("in", RUN), timeout=20))
    assert json.loads(reply) == GROUNDED
    assert [r.invocation_id for r in recorder.records()] == ["inv-1", "inv-2"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_tool_calls": 0}, "max_tool_calls: expected a positive int"),
        ({"max_turns": True}, "max_turns: expected a positive int"),
        ({"deadline_s": 0}, "deadline_s: expected seconds > 0"),
        ({"grounding": "all"}, "grounding: expected 'call', 'run' or 'off'"),
        ({"tool_errors": "ignore"}, "tool_errors: expected 'report' or 'raise'"),
        ({"profile": "llama"}, "unknown schema profile 'llama'"),
    ],
)
def test_bad_settings_are_refused_at_construction(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dct.executor_agent(ScriptedToolModel([]), Tools().specs(), recorder=dct.ToolRecorder(),
                           **change)


_CONSTRUCTORS = [
    (dct.executor_agent, ScriptedToolModel, "call"),
    (dct.async_executor_agent, AsyncScriptedToolModel, "call"),
    (dct.aiops_executor_agent, ScriptedToolModel, "run"),
    (dct.async_aiops_executor_agent, AsyncScriptedToolModel, "run"),
]


@pytest.mark.parametrize(("constructor", "model", "grounding"), _CONSTRUCTORS)
def test_each_executor_constructor_refuses_an_unknown_keyword_as_python_does(
    constructor: Any, model: Any, grounding: str
) -> None:
    name = constructor.__name__
    unknown = rf"^{name}\(\) got an unexpected keyword argument 'max_turn'$"
    with pytest.raises(TypeError, match=unknown):
        constructor(model([]), Tools().specs(), recorder=dct.ToolRecorder(), max_turn=3, nope=1)


@pytest.mark.parametrize(("constructor", "model", "grounding"), _CONSTRUCTORS)
def test_each_executor_constructor_keeps_its_documented_defaults(
    constructor: Any, model: Any, grounding: str
) -> None:
    import time

    from diagnosis_core._executor.grounding import GroundingLimits

    settings = constructor(model([]), Tools().specs(), recorder=dct.ToolRecorder())._settings
    assert (settings.system_prompt, settings.max_tool_calls, settings.max_turns) == (None, 8, 10)
    assert (settings.deadline_s, settings.grounding, settings.profile) == (
        120.0, grounding, "openai-strict"
    )
    assert settings.limits == GroundingLimits()
    assert settings.classifier is default_failure_classifier
    assert (settings.tool_errors, settings.clock) == ("report", time.monotonic)


def test_bad_tools_and_recorders_are_refused_at_construction() -> None:
    tools = Tools()
    with pytest.raises(ValueError, match=r"tools\[1\]: duplicate tool name 'query_logs'"):
        dct.executor_agent(ScriptedToolModel([]), tools.specs("query_logs", "query_logs"),
                           recorder=dct.ToolRecorder())
    with pytest.raises(TypeError, match=r"tools\[0\]: expected a Tool"):
        dct.executor_agent(ScriptedToolModel([]), [tools.query_logs],  # type: ignore[list-item]
                           recorder=dct.ToolRecorder())
    with pytest.raises(TypeError, match="recorder: expected a ToolRecorder or RunRecorders"):
        dct.executor_agent(ScriptedToolModel([]), tools.specs(), recorder=object())  # type: ignore[arg-type]

    async def coroutine_tool() -> None:
        return None

    spec = dct.Tool(dct.ToolSpec("c", "c"), coroutine_tool)
    with pytest.raises(TypeError, match="is a coroutine function; use the async executor"):
        dct.executor_agent(ScriptedToolModel([]), [spec], recorder=dct.ToolRecorder())


def test_turn_values_validate_on_construction() -> None:
    with pytest.raises(ValueError, match=r"^tool_calls\[1\]\.id: duplicate 'a'"):
        dct.ModelTurn(tool_calls=[dct.ToolCall("a", "x"), dct.ToolCall("a", "y")])
    with pytest.raises(ValueError, match=r"^id: expected a non-empty string"):
        dct.ToolCall("", "x")
    with pytest.raises(TypeError, match=r"^arguments: expected a JSON object, got list"):
        dct.ToolCall("a", "x", [1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^messages\[0\]: expected SystemMessage or"):
        dct.TurnRequest(messages=["hello"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"^time_left_s: expected seconds >= 0"):
        dct.TurnRequest(messages=[], time_left_s=-1.0)
    with pytest.raises(TypeError, match="the model returned dict, not a ModelTurn"):
        dct.executor_agent(ScriptedToolModel([lambda r: {}]),  # type: ignore[list-item]
                           Tools().specs(), recorder=dct.ToolRecorder())("in", RUN)


# --- engines: the run's recorder found by run id -----------------------------------------------


def test_with_run_recorders_each_run_uses_its_own_recorder() -> None:
    recorders = dct.RunRecorders()
    first, second = recorders("run-1", []), recorders("run-2", [])
    agent = dct.executor_agent(investigation(), Tools().specs(), recorder=recorders)
    agent("in", RunConfig("run-2", "chat"))
    assert first.records() == () and len(second.records()) == 2
    with pytest.raises(LookupError, match="no tool recorder for run 'run-3'"):
        dct.executor_agent(investigation(), Tools().specs(), recorder=recorders)(
            "in", RunConfig("run-3", "chat"))


# --- resend_executor: recorded calls replay (spec §12.3) ---------------------------------------


def loop_effects(tools: Tools, recorder: dct.ToolRecorder) -> dc.Effects:
    scripted = dc.scenario_effects(dc.load_scenario(DOC))
    model = ScriptedToolModel([
        calls(("query_logs", {"service": "pay-svc"})),
        calls(("query_metrics", {"service": "pay-svc"})),
        answer(GROUNDED),
    ])
    return attrs.evolve(
        scripted,
        executor=dct.executor_agent(model, tools.specs(), recorder=recorder),
        gatekeeper=recorder.gatekeeper(),
    )


def test_resend_executor_replays_the_recorded_calls_and_gives_the_same_evidence(
    tmp_path: Path,
) -> None:
    request = dc.scenario_request(dc.load_scenario(DOC))
    clean_tools, clean = Tools(), dct.ToolRecorder()
    uninterrupted = dc.run_diagnosis(request, loop_effects(clean_tools, clean),
                                     sink=dcj.ListJournalSink(), tools=clean)
    assert uninterrupted.result.outcome is dc.Outcome.ANSWERED
    # The process dies once the first tool call is durable (inside the loop).
    tools, first = Tools(), dct.ToolRecorder()
    journal_file = tmp_path / "journal.jsonl"
    with pytest.raises(Crash):
        dc.run_diagnosis(request, loop_effects(tools, first),
                         sink=FileSink(journal_file, die_at=1, signal_kill=False), tools=first)
    assert tools.ran == ["query_logs(pay-svc)"]
    journal = read_journal(journal_file)
    again = dct.ToolRecorder()  # a new process: the journal is the only record
    sink = dcj.ListJournalSink(journal.entries)
    state = dc.run_diagnosis(request, loop_effects(tools, again), journal=journal, sink=sink,
                             tools=again, resend_executor=True)
    # query_logs was answered from the journal; only query_metrics ran.
    assert tools.ran == ["query_logs(pay-svc)", "query_metrics(pay-svc)"]
    assert dc.to_json(state.result) == dc.to_json(uninterrupted.result)
    assert state.executor_output == uninterrupted.executor_output
    assert [r.to_record() for r in again.records()] == [r.to_record() for r in clean.records()]


# --- the AIOps executor ---------------------------------------------------------------------


def test_the_aiops_executor_loop_constrains_citations_to_successful_invocations() -> None:
    tools, recorder = Tools(), dct.ToolRecorder()
    recorder.wrap("earlier", lambda: {"a": "b"})()

    def report(request: dct.TurnRequest) -> dct.ModelTurn:
        made = [c["invocation_id"] for c in contents(request) if "invocation_id" in c]
        return answer({"tool_invocation_ids": made,
                       "findings": [{"text": "pay-svc times out", "cited_invocation_ids": made}]})

    model = ScriptedToolModel([
        calls(("query_logs", {"service": "pay-svc"}), ("broken", {"service": "x"})),
        report,
    ])
    agent = dct.aiops_executor_agent(model, tools.specs("query_logs", "broken"),
                                     recorder=recorder)
    reply = json.loads(agent("in", RUN))
    assert reply["tool_invocation_ids"] == ["inv-2"]
    schema = model.requests[1].response_schema
    assert schema is not None
    finding = schema["properties"]["findings"]["items"]
    # "run" grounding: the earlier step's invocation is citable, the failed one is not.
    assert finding["properties"]["cited_invocation_ids"]["items"]["enum"] == ["inv-1", "inv-2"]


def test_a_whole_aiops_run_with_the_loop_as_executor_is_reported() -> None:
    aiops_doc = json.loads((EXAMPLES / "aiops_payload_targeted.json").read_text(encoding="utf-8"))
    scenario = dca.load_aiops_scenario(aiops_doc)
    tools, recorder = Tools(), dct.ToolRecorder()

    def step(request: dct.TurnRequest) -> dct.ModelTurn:
        made = [c["invocation_id"] for c in contents(request)]
        if not made:
            return calls(("query_logs", {"service": "pay-svc"}))
        return answer({"tool_invocation_ids": made,
                       "findings": [{"text": "pay-svc times out", "cited_invocation_ids": made}]})

    model = ScriptedToolModel([step] * 20)
    effects = attrs.evolve(
        dca.aiops_scenario_effects(scenario),
        executor=dct.aiops_executor_agent(model, tools.specs(), recorder=recorder),
    )
    state = dca.run_aiops(dca.aiops_scenario_request(scenario), effects, tools=recorder,
                          sink=dcj.ListAiOpsJournalSink())
    assert state.reason_code is None
    assert tools.ran and [r.success for r in recorder.records()] == [True] * len(tools.ran)


def test_the_async_loop_accepts_a_synchronous_model() -> None:
    agent = dct.async_executor_agent(investigation(), Tools().specs(),  # type: ignore[arg-type]
                                     recorder=dct.ToolRecorder())
    assert json.loads(asyncio.run(asyncio.wait_for(agent("in", RUN), timeout=20))) == GROUNDED
