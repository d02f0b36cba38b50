"""Messages a prompt engineer (or a host) can act on.

What a model's reply gets when it is not the JSON the protocol asks for: one message
naming the problem, where it is and, when there is one way to read it, the fix; the
stdlib's wording ("Expecting value", "Unterminated string starting at") never shows.
And the mistakes a host can make — resuming an unknown thread, passing the journal of
another request — say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core._kernel.wire.json import loads_strict, parse_json_object
from diagnosis_core.testing import executor_evidences
from tests._reach import protocol as dcp

ROOT = Path(__file__).resolve().parent.parent
PAYMENT = json.loads((ROOT / "examples" / "payment_timeout.json").read_text("utf-8"))
VERIFIER = json.loads(PAYMENT["responses"]["verifier"][0]["text"])
ONLY = " — send only the JSON"
CUT = " — the reply looks truncated (the model's output limit?); send the whole JSON"

# The stdlib's words and artefacts, none of which a message may carry.
STDLIB = ("Expecting", "Unterminated", "Extra data", "delimiter", "at at", "starting at",
          "Invalid control", "char ")


def problem_of(text: str) -> str:
    with pytest.raises(dc.PayloadError) as info:
        parse_json_object(text)
    assert info.value.path == "$"
    return info.value.problem


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        # prose before the JSON
        (
            'Sure! Here is the plan you asked for:\n{"steps": []}',
            'expected JSON; the text starts with prose "Sure! Here is the pl…" '
            "(the JSON starts at line 2 column 1)" + ONLY,
        ),
        ("I cannot answer.", 'expected JSON; the text is prose: "I cannot answer."' + ONLY),
        # prose after the JSON
        (
            '{"steps": []}\n\nLet me know if you need more!',
            'more text after the JSON, at line 3 column 1: "Let me know if you n…"' + ONLY,
        ),
        (
            '```json\n{"steps": []}\n```\nHope this helps.',
            'text after the code fence: "Hope this helps."' + ONLY,
        ),
        # a truncated reply
        (
            '{"steps": [{"step_id": "s1", "goal": "Find the gat',
            "the JSON is cut off: the text ends inside a string at line 1 column 51, "
            "with '}]}' still to close" + CUT,
        ),
        (
            '{"verdict": "PASS", "groundedness_score": 0.',
            "the JSON is cut off: the text ends early at line 1 column 45, with '}' still to close"
            + CUT,
        ),
        (
            '{\n  "answer": "x",\n  "used_claim_ids": [\n',
            "the JSON is cut off: the text ends early at line 3 column 22, with ']}' still to close"
            + CUT,
        ),
        # a fence in another language
        (
            '```python\n{"steps": []}\n```',
            "a code fence labelled 'python' at line 1: only a ```json fence (or the bare JSON) "
            "is accepted — label the fence json",
        ),
        # an array where an object is expected
        (
            '[{"steps": []}]',
            "expected a JSON object, got an array holding one object — send that object "
            "without the [ ] around it",
        ),
        # JSON a model writes as Python, or by hand
        ('{"a": True}', "invalid JSON at line 1 column 7: True is Python; JSON writes true"),
        ('{"a": None}', "invalid JSON at line 1 column 7: None is Python; JSON writes null"),
        (
            "{'a': 1}",
            "invalid JSON at line 1 column 2: single quotes; JSON strings and keys take double "
            "quotes",
        ),
        (
            '{"a": [1, 2,]}',
            "invalid JSON at line 1 column 13: a comma before ']'; remove the trailing comma",
        ),
        (
            '{"a": 1 "b": 2}',
            "invalid JSON at line 1 column 9: a comma is missing between two values",
        ),
        ('{"a" 1}', 'invalid JSON at line 1 column 6: expected \':\' after the key, found "1}"'),
        (
            '{"a": "one\ttwo"}',
            "invalid JSON at line 1 column 11: a raw control character U+0009 in a string; "
            "escape it (\\n, \\t, \\u00XX)",
        ),
        ('{"a": "\\q"}', "invalid JSON at line 1 column 8: an invalid escape \\q in a string"),
        ('{"a": }', 'invalid JSON at line 1 column 7: expected a value, found "}"'),
    ],
)
def test_each_malformed_reply_gets_one_actionable_message(reply: str, problem: str) -> None:
    assert problem_of(reply) == problem


def test_a_byte_order_mark_is_named_by_every_parser() -> None:
    # json.loads refuses it before decoding; the parsers' kept decoders must too.
    expected = "invalid JSON at line 1 column 1: unexpected UTF-8 BOM (decode using utf-8-sig)"
    assert problem_of('\ufeff{"steps": []}') == expected
    for parse in (dcp.loads_strict, dcp.loads_stored, dcp.parse_executor_evidence):
        with pytest.raises(dc.PayloadError) as info:
            parse('\ufeff{"schema_version": "executor_evidence_v2"}')
        assert (info.value.path, info.value.problem) == ("$", expected)


def test_a_key_in_the_wrong_case_names_the_key_to_write() -> None:
    wrong = {("Verdict" if key == "verdict" else key): value for key, value in VERIFIER.items()}
    with pytest.raises(dc.PayloadError) as info:
        dcp.parse_verifier_output(json.dumps(wrong))
    assert str(info.value) == (
        "verdict: missing — the object has 'Verdict'; keys must match exactly: write 'verdict'"
    )


def test_a_nested_key_in_another_spelling_is_named_at_its_path() -> None:
    evidence = json.loads(PAYMENT["responses"]["executor"][0]["text"])
    binding = evidence["claims"][0]["bindings"][0]
    binding["rawPath"] = binding.pop("raw_path")
    with pytest.raises(dc.PayloadError) as info:
        dcp.parse_executor_evidence(json.dumps(evidence))
    assert str(info.value) == (
        "claims[0].bindings[0].raw_path: missing — the object has 'rawPath'; keys must match "
        "exactly: write 'raw_path'"
    )


def test_a_missing_key_with_no_near_spelling_stays_missing() -> None:
    without = {key: value for key, value in VERIFIER.items() if key != "verdict"}
    with pytest.raises(dc.PayloadError) as info:
        dcp.parse_verifier_output(json.dumps(without))
    assert str(info.value) == "verdict: missing"


def test_the_message_reaches_the_trace_as_the_node_error() -> None:
    request = dc.DiagnosisRequest("q", dc.RunConfig("run-1", "chat-1"))
    state = dcm.advance(dcm.start_diagnosis(request), dcm.AgentReplied('Sure!\n{"steps": []}'))
    assert state.events[-1].details.error == (
        '$: expected JSON; the text starts with prose "Sure!" '
        "(the JSON starts at line 2 column 1)" + ONLY
    )


@settings(max_examples=60)
@given(evidence=executor_evidences(), data=st.data())
def test_every_cut_of_a_reply_is_reported_as_truncated(
    evidence: dc.ExecutorEvidence, data: st.DataObject
) -> None:
    # Oracle: a proper prefix of a compact JSON object is never a whole document,
    # and it ends where the text was cut, whatever the cut splits (a string, an
    # escape, a number, a literal, a key).
    text = json.dumps(dc.to_wire(evidence), separators=(",", ":"))
    cut = data.draw(st.integers(1, len(text) - 1))
    problem = problem_of(text[:cut])
    assert problem.startswith("the JSON is cut off: the text ends "), problem
    assert problem.endswith(CUT)


@settings(max_examples=200)
@given(
    evidence=executor_evidences(),
    edit=st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.text(max_size=3)),
)
def test_no_message_carries_the_stdlib_wording(
    evidence: dc.ExecutorEvidence, edit: tuple[int, int, str]
) -> None:
    text = json.dumps(dc.to_wire(evidence), indent=1)
    at, removed, inserted = edit
    at %= len(text)
    broken = text[:at] + inserted + text[at + removed :]
    try:
        loads_strict(broken)
    except dc.PayloadError as error:
        assert not [word for word in STDLIB if word in error.problem], error.problem


# --- what a host can get wrong -------------------------------------------------------


def _payment() -> tuple[dc.DiagnosisRequest, dc.Scenario]:
    scenario = dc.load_scenario(PAYMENT)
    return dc.scenario_request(scenario), scenario


def test_the_journal_of_another_request_says_whose_it_is() -> None:
    request, scenario = _payment()
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
    other = attrs.evolve(request, run=dc.RunConfig("run-2", "chat-2"))
    with pytest.raises(dc.JournalError) as info:
        dc.run_diagnosis(other, dc.scenario_effects(scenario), journal=sink.journal(request))
    assert str(info.value) == (
        "request: the journal is of another request (different run; the journal's run_id is "
        "'run-payment-001', this request's 'run-2') — resume with the journal's own request "
        "(journal.request), or start this request without journal="
    )


def test_an_unknown_thread_is_named_as_unknown() -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import InMemorySaver

    from diagnosis_core.adapters.langgraph import build_diagnosis_graph, resume_diagnosis_graph

    _, scenario = _payment()
    graph = build_diagnosis_graph(dc.scenario_effects(scenario), checkpointer=InMemorySaver())
    with pytest.raises(dc.MachineError, match=r"^thread_id 'nope' is unknown to this graph's "):
        resume_diagnosis_graph(graph, thread_id="nope")
