"""One definition of a storable JSON value, enforced when a tool returns (spec §12.1).

The tool recorder, the ledger, the journal and the gatekeeper codec share the
definition of ``diagnosis_core._facts``: a tool output outside it is a failed
call with a typed error at the moment the tool returns — never a success that
the journal discovers later.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct
from diagnosis_core import LedgerError
from diagnosis_core._kernel.wire.facts import MAX_JSON_DEPTH, storable_problem
from diagnosis_core.journal import EntryState, JournalCall

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PAIR = "\ud83d" + "\ude00"


def nested(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def setup() -> tuple[dc.DiagnosisRequest, dc.Effects]:
    document = json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
    scenario = dc.load_scenario(document)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def test_a_3000_deep_tool_output_is_a_failed_call_and_the_journaling_run_finishes() -> None:
    request, plain = setup()
    tools = dct.ToolRecorder()
    deep = tools.wrap("query_logs", lambda: nested(3000))
    raised: list[str] = []

    def executor(input: str, config: dc.RunConfig, /) -> str:
        try:
            deep()
        except LedgerError as error:
            raised.append(str(error))
        return plain.executor(input, config)

    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(
        request, attrs.evolve(plain, executor=executor), sink=sink, tools=tools
    )
    assert state.finished
    assert raised and "nesting deeper than" in raised[0] and "recorded as failed" in raised[0]
    (record,) = tools.to_records()
    assert record["success"] is False and record["output"] is None
    assert record["error"] == {"type": "LedgerError", "message": record["error"]["message"]}  # type: ignore[index]
    journal = dcj.Journal.from_json(dcj.journal_to_json(sink.journal(request)))
    executor_entry = next(e for e in journal.entries if e.call == JournalCall.EXECUTOR)
    assert executor_entry.state == EntryState.FINISHED
    assert executor_entry.tool_invocations is not None
    assert executor_entry.tool_invocations[0].success is False


@pytest.mark.parametrize(
    "bad",
    [nested(MAX_JSON_DEPTH + 1), {"text": "a" + PAIR}, {"a" + PAIR: 1}, [10**5000], {1: "x"},
     float("nan")],
    ids=["deep", "pair", "pair-key", "digits", "int-key", "nan"],
)
def test_outputs_outside_the_definition_are_failed_calls_when_the_tool_returns(bad: object) -> None:
    recorder = dct.ToolRecorder()
    with pytest.raises(LedgerError, match="recorded as failed"):
        recorder.wrap("t", lambda: bad)()
    (record,) = recorder.to_records()
    assert record["success"] is False and record["output"] is None
    assert isinstance(record["error"], dict) and record["error"]["type"] == "LedgerError"
    # What is recorded is storable: the journal writes and reloads it.
    text = json.dumps(record, ensure_ascii=False)
    assert json.loads(text) == record


def test_the_deepest_storable_output_is_recorded_and_reloads() -> None:
    recorder = dct.ToolRecorder()
    envelope = recorder.wrap("t", lambda: nested(MAX_JSON_DEPTH))()
    assert envelope["output"] == nested(MAX_JSON_DEPTH)
    (record,) = recorder.to_records()
    assert record["success"] is True
    assert dct.ToolRecorder.from_records(recorder.to_records()).records() == recorder.records()


def test_an_input_outside_the_definition_is_refused_before_the_tool_runs() -> None:
    ran: list[object] = []
    recorder = dct.ToolRecorder()
    tool = recorder.wrap("t", lambda value: ran.append(value))
    with pytest.raises(LedgerError, match="nesting deeper than"):
        tool(nested(MAX_JSON_DEPTH + 5))
    with pytest.raises(LedgerError, match="surrogate pair"):
        tool("x" + PAIR)
    assert ran == [] and recorder.records() == ()


def test_a_tool_error_message_holding_a_pair_is_stored_as_the_fact_codec_stores_it() -> None:
    recorder = dct.ToolRecorder()

    def fails() -> None:
        raise RuntimeError("boom " + PAIR)

    with pytest.raises(RuntimeError):
        recorder.wrap("t", fails)()
    (record,) = recorder.to_records()
    message = record["error"]["message"]  # type: ignore[index]
    assert message == "boom \ud83d\ufffd\ude00"
    assert json.loads(json.dumps(message)) == message


def test_the_ledger_of_a_scenario_uses_the_same_definition() -> None:
    with pytest.raises(LedgerError, match="nesting deeper than"):
        dc.ToolInvocation("inv-1", "t", True, nested(MAX_JSON_DEPTH + 1))
    assert storable_problem(nested(MAX_JSON_DEPTH)) is None
    assert storable_problem(nested(MAX_JSON_DEPTH + 1)) == f"nesting deeper than {MAX_JSON_DEPTH}"
