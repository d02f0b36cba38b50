"""The reference gatekeeper over a tool-invocation ledger (spec §9)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.enums import EvidenceStatus, GatekeeperStatus, ReasonCode
from diagnosis_core._chat.gatekeeper import normalize_gatekeeper_result
from diagnosis_core._chat.payloads import Claim, EvidenceBinding, ExecutorEvidence
from diagnosis_core._chat.reference_gatekeeper import (
    UNRESOLVED,
    BindingFailure,
    ReferenceGatekeeper,
    check_binding,
    match_excerpt,
    parse_raw_path,
    resolve_raw_path,
)
from diagnosis_core._kernel.errors import LedgerError
from diagnosis_core._kernel.tools.ledger import (
    ToolInvocation,
    ToolLedger,
    canonical_key,
    ledger_from_records,
)
from diagnosis_core.protocol import canonical_json

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from("ab \t\n\u00a0.'[]$0"), max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet="ab' .", max_size=3), children, max_size=4)
    ),
    max_leaves=25,
)
SEGMENT = st.one_of(
    st.sampled_from(["a", "b", "a b"]).map(lambda k: f".{k}" if " " not in k else f"['{k}']"),
    st.integers(0, 3).map(lambda i: f"[{i}]"),
    st.text(alphabet="ab.[]'$0-* \\", max_size=3),
)
PATH = st.lists(SEGMENT, max_size=4).map(lambda parts: "$" + "".join(parts)) | st.text(max_size=8)
TEXT = st.one_of(
    st.text(alphabet=st.sampled_from("ab \t\n\u00a0\u2003x1.tr"), max_size=12),
    st.text(max_size=6),
)


LOG_OUTPUT = {
    "items": [
        {"message": "upstream  timeout\tafter\n3000ms", "level": "ERROR", "count": 17},
        {"message": "pool exhausted", "ratio": 1.5, "ok": True, "none": None},
    ],
    "odd key": {"a'b": "x", "": "empty key"},
}


def invocation(
    invocation_id: str = "inv-1",
    tool_name: str = "query_logs",
    success: bool = True,
    output: object = LOG_OUTPUT,
) -> ToolInvocation:
    return ToolInvocation(invocation_id, tool_name, success, output)


LEDGER = ToolLedger(
    (
        invocation(),
        invocation("inv-failed", success=False),
        invocation("inv-metrics", "query_metrics", output={"p99": 3012, "ok": False}),
    )
)


def binding(
    excerpt: str = "upstream timeout after 3000ms",
    raw_path: str = "$.items[0].message",
    invocation_id: str = "inv-1",
    tool_name: str = "query_logs",
) -> EvidenceBinding:
    return EvidenceBinding(invocation_id, tool_name, raw_path, excerpt)


def evidence(*claims: Sequence[EvidenceBinding]) -> ExecutorEvidence:
    if not claims:
        return ExecutorEvidence(EvidenceStatus.NO_EVIDENCE, ())
    return ExecutorEvidence(
        EvidenceStatus.EVIDENCE_FOUND,
        tuple(Claim(f"c{i}", f"claim {i}", tuple(b)) for i, b in enumerate(claims)),
    )


def check(b: EvidenceBinding, ledger: ToolLedger = LEDGER) -> tuple[str | None, str | None]:
    checked = check_binding(ledger, "c1", b)
    assert checked.key == ("c1", b.source_invocation_id, b.tool_name, b.raw_path)
    return checked.reason, checked.matched_text


# --- reason codes, in order -----------------------------------------------------


def test_matching_binding_passes_with_the_recorded_span() -> None:
    assert check(binding()) == (None, "upstream  timeout\tafter\n3000ms")


def test_unknown_invocation_is_not_found() -> None:
    assert check(binding(invocation_id="inv-404"))[0] == "INVOCATION_NOT_FOUND"


def test_failed_invocation_is_invocation_failed_even_if_the_text_matches() -> None:
    assert check(binding(invocation_id="inv-failed"))[0] == "INVOCATION_FAILED"


def test_other_tool_name_is_tool_mismatch() -> None:
    assert check(binding(tool_name="query_metrics"))[0] == "TOOL_MISMATCH"
    assert check(binding(tool_name="Query_Logs"))[0] == "TOOL_MISMATCH"


def test_missing_path_is_raw_path_unresolved() -> None:
    assert check(binding(raw_path="$.items[5].message"))[0] == "RAW_PATH_UNRESOLVED"


def test_absent_excerpt_is_excerpt_mismatch() -> None:
    assert check(binding(excerpt="downstream timeout"))[0] == "EXCERPT_MISMATCH"


def test_checks_run_in_the_documented_order() -> None:
    assert [code.value for code in BindingFailure] == [
        "INVOCATION_NOT_FOUND",
        "INVOCATION_FAILED",
        "TOOL_MISMATCH",
        "RAW_PATH_UNRESOLVED",
        "EXCERPT_MISMATCH",
    ]
    everything_wrong = binding("nope", "$[", "inv-failed", "other_tool")
    assert check(everything_wrong)[0] == "INVOCATION_FAILED"
    assert check(binding("nope", "$[", "inv-1", "other_tool"))[0] == "TOOL_MISMATCH"
    assert check(binding("nope", "$[", "inv-1"))[0] == "RAW_PATH_UNRESOLVED"


# --- raw paths --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$", ()),
        ("$.items", ("items",)),
        ("$.items[0].message", ("items", 0, "message")),
        ("$._a-b_9", ("_a-b_9",)),
        ("$['odd key']", ("odd key",)),
        ("$['a.b[0]\"x\"']", ('a.b[0]"x"',)),
        ("$['']", ("",)),
        ("$['naïve\n']", ("naïve\n",)),
        ("$[0][10][123]", (0, 10, 123)),
        ("$.a['b'][2].c", ("a", "b", 2, "c")),
    ],
)
def test_valid_paths_parse(path: str, segments: tuple[object, ...]) -> None:
    assert parse_raw_path(path) == segments


@pytest.mark.parametrize(
    "path",
    [
        "",
        "$..x",
        "$[-1]",
        "$['a",
        "$['a']]",
        "$.",
        "$x",
        "$[*]",
        "$.*",
        "$[01]",
        "$[00]",
        "$[1.0]",
        "$[+1]",
        "$[٣]",
        "$.naïve",
        "$.1abc",
        "$.a b",
        " $.a",
        "$.a ",
        "$ .a",
        "$[ 0]",
        "$[0 ]",
        "$.a\n",
        '$["a"]',
        "$['a\\'b']",
        "$['a'b']",
        "items[0]",
        "$.a.",
        "$[]",
        "$[" + "9" * 5000 + "]",
    ],
)
def test_invalid_paths_do_not_parse(path: str) -> None:
    assert parse_raw_path(path) is None
    assert resolve_raw_path(LOG_OUTPUT, path) is UNRESOLVED
    assert check(binding(raw_path=path))[0] == "RAW_PATH_UNRESOLVED"


def test_bracket_names_reach_keys_dot_names_cannot() -> None:
    assert resolve_raw_path(LOG_OUTPUT, "$['odd key']['']") == "empty key"
    assert check(binding("empty key", "$['odd key']['']")) == (None, "empty key")


def test_keys_match_only_objects_and_indexes_only_arrays() -> None:
    output = {"list": ["zero", "one"], "map": {"0": "key zero"}}
    assert resolve_raw_path(output, "$.list[1]") == "one"
    assert resolve_raw_path(output, "$.list['0']") is UNRESOLVED
    assert resolve_raw_path(output, "$.map['0']") == "key zero"
    assert resolve_raw_path(output, "$.map[0]") is UNRESOLVED
    assert resolve_raw_path("text", "$[0]") is UNRESOLVED
    assert resolve_raw_path(output, "$.list.x") is UNRESOLVED


def test_resolution_works_on_frozen_and_plain_values() -> None:
    frozen = invocation().output
    assert isinstance(frozen, MappingProxyType)
    assert resolve_raw_path(frozen, "$.items[1].ratio") == 1.5
    assert resolve_raw_path(LOG_OUTPUT, "$.items[1].ratio") == 1.5
    assert resolve_raw_path(LOG_OUTPUT, "$") is LOG_OUTPUT


@pytest.mark.parametrize("path", ["$.items[1].none", "$.items[1]", "$.items", "$"])
def test_null_object_or_array_value_is_unresolved(path: str) -> None:
    assert check(binding("pool", path))[0] == "RAW_PATH_UNRESOLVED"


def test_the_deepest_storable_output_resolves_and_a_deeper_one_is_refused() -> None:
    from diagnosis_core._kernel.wire.facts import MAX_JSON_DEPTH

    depth = MAX_JSON_DEPTH // 2  # each level is an object and an array
    output: Any = "bottom line"
    for _ in range(depth):
        output = {"n": [output]}
    ledger = ToolLedger((invocation(output=output),))
    path = "$" + ".n[0]" * depth
    assert check(binding("bottom line", path), ledger) == (None, "bottom line")
    assert check(binding("bottom line", path + ".n"), ledger)[0] == "RAW_PATH_UNRESOLVED"
    # One level more is not a storable JSON value (spec §12.1): refused when recorded.
    with pytest.raises(LedgerError, match=f"output: .*nesting deeper than {MAX_JSON_DEPTH}"):
        invocation(output={"n": [output]})


# --- excerpt matching --------------------------------------------------------------


def test_backslash_s_is_exactly_str_isspace() -> None:
    pattern = re.compile(r"\s")
    mismatches = [
        c for c in range(sys.maxunicode + 1) if bool(pattern.match(chr(c))) != chr(c).isspace()
    ]
    assert mismatches == []


@pytest.mark.parametrize(
    ("text", "excerpt", "span"),
    [
        ("a  b\tc\n\n d e", "b c d", "b\tc\n\n d"),
        ("x upstream\u00a0\u2003timeout y", "upstream timeout", "upstream\u00a0\u2003timeout"),
        ("timeout after", "timeout\t\tafter", "timeout after"),
        ("up  timeout after", " timeout ", "  timeout "),
        ("alpha   beta", "alpha beta", "alpha   beta"),
        ("alpha beta", "alpha\r\n\tbeta", "alpha beta"),
        ("  lead and trail  ", "lead and trail", "lead and trail"),
        ("xxtimeoutyy", "timeout", "timeout"),
        ("ab  cd", "b c", "b  c"),
        ("naïve\u3000café", "naïve café", "naïve\u3000café"),
    ],
)
def test_whitespace_runs_fold_and_the_span_is_exact(text: str, excerpt: str, span: str) -> None:
    assert match_excerpt(text, excerpt) == span
    assert span in text


@pytest.mark.parametrize(
    ("text", "excerpt"),
    [
        ("ab", "a b"),
        ("a b", "ab"),
        ("Timeout", "timeout"),
        ("anything", "   "),
        ("anything", ""),
        ("\t\n", "\n"),
        ("caf\u00e9", "cafe\u0301"),
    ],
)
def test_non_matches(text: str, excerpt: str) -> None:
    assert match_excerpt(text, excerpt) is None


def test_whitespace_only_excerpt_is_excerpt_mismatch() -> None:
    assert check(binding(" \t\n"))[0] == "EXCERPT_MISMATCH"


def test_first_match_is_chosen() -> None:
    text = "one  two | one two | one\ttwo"
    assert match_excerpt(text, "one two") == "one  two"
    ledger = ToolLedger((invocation(output={"m": "z one\ntwo one two"}),))
    assert check(binding("one two", "$.m"), ledger) == (None, "one\ntwo")


def test_span_position_is_exact_after_many_runs() -> None:
    text = "a\t\tb  c   d    TARGET  x   e"
    assert match_excerpt(text, "TARGET x") == "TARGET  x"
    text = "   ".join(["w"] * 1000) + "  needle\n\nin  w"
    assert match_excerpt(text, "needle in") == "needle\n\nin"


@pytest.mark.parametrize(
    ("path", "excerpt", "span"),
    [
        ("$.items[0].count", "17", "17"),
        ("$.items[0].count", "1", "1"),
        ("$.items[1].ratio", "1.5", "1.5"),
        ("$.items[1].ok", "true", "true"),
    ],
)
def test_numbers_and_booleans_match_their_json_text(path: str, excerpt: str, span: str) -> None:
    assert check(binding(excerpt, path)) == (None, span)


@pytest.mark.parametrize(
    ("path", "excerpt"),
    [("$.items[1].ok", "True"), ("$.items[1].ratio", "1.50"), ("$.items[0].count", "17.0")],
)
def test_numbers_and_booleans_do_not_match_python_text(path: str, excerpt: str) -> None:
    assert check(binding(excerpt, path))[0] == "EXCERPT_MISMATCH"


def test_false_and_integer_values_of_another_tool() -> None:
    ledger_binding = binding("3012", "$.p99", "inv-metrics", "query_metrics")
    assert check(ledger_binding) == (None, "3012")
    assert check(binding("false", "$.ok", "inv-metrics", "query_metrics")) == (None, "false")


def test_span_with_a_lone_surrogate_is_never_reported() -> None:
    ledger = ToolLedger((invocation(output={"m": "bad \ud800 text"}),))
    assert check(binding("bad \ud800 text", "$.m"), ledger)[0] == "EXCERPT_MISMATCH"
    assert check(binding("text", "$.m"), ledger) == (None, "text")
    raw = ReferenceGatekeeper(ledger)("run", evidence([binding("bad \ud800", "$.m")]))
    assert normalize_gatekeeper_result(raw).reason_code is ReasonCode.GATEKEEPER_REJECTED


def test_huge_adversarial_output_is_linear() -> None:
    text = "a \t" * 1_500_000 + "a  b"
    assert match_excerpt(text, "a " * 200 + "b") is not None
    assert match_excerpt(text, "a " * 200 + "c") is None
    ledger = ToolLedger((invocation(output={"log": "x" * 10_000_000 + " needle  here"}),))
    assert check(binding("needle here", "$.log"), ledger) == (None, "needle  here")


# --- the whole gatekeeper -------------------------------------------------------------


def test_all_bindings_pass_is_pass() -> None:
    raw = ReferenceGatekeeper(LEDGER)(
        "run-1", evidence([binding()], [binding("pool", "$.items[1].message")])
    )
    assert raw["status"] == "pass"
    assert raw["level"] is None
    assert raw["reason_codes"] == []
    assert raw["checked_bindings"] == [
        {
            "claim_id": "c0",
            "source_invocation_id": "inv-1",
            "tool_name": "query_logs",
            "raw_path": "$.items[0].message",
            "status": "pass",
            "matched_text": "upstream  timeout\tafter\n3000ms",
            "reason": None,
        },
        {
            "claim_id": "c1",
            "source_invocation_id": "inv-1",
            "tool_name": "query_logs",
            "raw_path": "$.items[1].message",
            "status": "pass",
            "matched_text": "pool",
            "reason": None,
        },
    ]


def test_some_bindings_pass_is_low_confid_with_sorted_unique_codes() -> None:
    executor_output = evidence(
        [binding(), binding("zzz", "$.items[1].message"), binding(invocation_id="nope")],
        [binding("y", "$.items[0].level"), binding(tool_name="other")],
    )
    raw = ReferenceGatekeeper(LEDGER)("run-1", executor_output)
    assert (raw["status"], raw["level"]) == ("fail", "low_confid")
    assert raw["reason_codes"] == ["EXCERPT_MISMATCH", "INVOCATION_NOT_FOUND", "TOOL_MISMATCH"]
    entries = raw["checked_bindings"]
    assert isinstance(entries, list)
    assert [(e["claim_id"], e["status"], e["reason"]) for e in entries] == [
        ("c0", "pass", None),
        ("c0", "fail", "EXCERPT_MISMATCH"),
        ("c0", "fail", "INVOCATION_NOT_FOUND"),
        ("c1", "fail", "EXCERPT_MISMATCH"),
        ("c1", "fail", "TOOL_MISMATCH"),
    ]
    assert all(e["matched_text"] is None for e in entries if e["status"] == "fail")


def test_no_binding_passes_is_reject() -> None:
    raw = ReferenceGatekeeper(LEDGER)("run-1", evidence([binding(invocation_id="inv-failed")]))
    assert (raw["status"], raw["level"]) == ("fail", "reject")
    assert raw["reason_codes"] == ["INVOCATION_FAILED"]


def test_zero_bindings_is_pass() -> None:
    raw = ReferenceGatekeeper(ToolLedger())("run-1", evidence())
    assert raw == {"status": "pass", "level": None, "checked_bindings": [], "reason_codes": []}


def test_duplicate_binding_keys_are_reported_once_and_fail_closed() -> None:
    executor_output = evidence([binding(), binding("not there")])
    raw = ReferenceGatekeeper(LEDGER)("run-1", executor_output)
    entries = raw["checked_bindings"]
    assert isinstance(entries, list) and len(entries) == 1
    assert entries[0]["reason"] == "EXCERPT_MISMATCH"
    assert raw["status"] == "fail"


def test_result_does_not_depend_on_run_id() -> None:
    gatekeeper = ReferenceGatekeeper(LEDGER)
    executor_output = evidence([binding(), binding("x")])
    assert gatekeeper("a", executor_output) == gatekeeper("b", executor_output)
    # Two bindings with one key, one of them mismatched: the key fails (fail closed).
    assert gatekeeper("b", executor_output) == {
        "status": "fail",
        "level": "reject",
        "checked_bindings": [
            {"claim_id": "c0", "source_invocation_id": "inv-1", "tool_name": "query_logs",
             "raw_path": "$.items[0].message", "status": "fail", "matched_text": None,
             "reason": "EXCERPT_MISMATCH"},
        ],
        "reason_codes": ["EXCERPT_MISMATCH"],
    }


@pytest.mark.parametrize(
    ("claims", "status", "reason"),
    [
        ([[binding()]], GatekeeperStatus.PASS, None),
        ([], GatekeeperStatus.PASS, None),
        ([[binding()], [binding("zzz", "$.items[1].message")]], GatekeeperStatus.LOW_CONFID, None),
        ([[binding("zzz")]], GatekeeperStatus.REJECT, ReasonCode.GATEKEEPER_REJECTED),
    ],
)
def test_reference_result_normalizes_to_the_matching_status(
    claims: list[list[EvidenceBinding]], status: GatekeeperStatus, reason: ReasonCode | None
) -> None:
    raw = ReferenceGatekeeper(LEDGER)("run-1", evidence(*claims))
    normalized = normalize_gatekeeper_result(raw)
    assert (normalized.status, normalized.reason_code) == (status, reason)
    assert normalized.checked == len(raw["checked_bindings"])  # type: ignore[arg-type]


# --- ledger -------------------------------------------------------------------------


def test_duplicate_invocation_id_is_a_ledger_error() -> None:
    with pytest.raises(LedgerError, match=r"invocations\[1\]\.invocation_id: duplicate 'inv-1'"):
        ToolLedger((invocation(), invocation(output="other")))


def test_ledger_get_is_by_exact_id() -> None:
    assert LEDGER.get("inv-1") is LEDGER.invocations[0]
    assert LEDGER.get("INV-1") is None
    assert LEDGER.get(7) is None  # type: ignore[arg-type]
    assert len(LEDGER.invocations) == 3


def test_ledger_rejects_non_invocations() -> None:
    with pytest.raises(LedgerError, match=r"invocations\[0\]: expected a ToolInvocation"):
        ToolLedger(({"invocation_id": "x"},))  # type: ignore[arg-type]


def test_invocations_are_immutable_hashable_values() -> None:
    first = invocation(output={"a": [1, {"b": "x"}]})
    same = invocation(output={"a": (1, MappingProxyType({"b": "x"}))})
    other = invocation(output={"a": [1, {"b": "y"}]})
    assert first == same and hash(first) == hash(same)
    assert first != other
    assert invocation(output=1) != invocation(output=True) != invocation(output=1.0)
    assert len({LEDGER, ToolLedger(LEDGER.invocations)}) == 1
    output = first.output
    assert isinstance(output, MappingProxyType)
    with pytest.raises(TypeError):
        output["a"] = 1  # type: ignore[index]
    assert output["a"] == (1, {"b": "x"})


def test_deep_invocations_compare_and_hash_without_recursion() -> None:
    output: Any = {"leaf": "x"}
    for _ in range(255):  # 511 containers: the deepest storable value (spec §12.1)
        output = {"k": [output]}
    first = invocation(output=output)
    second = invocation(output=first.to_record()["output"])
    assert first == second and hash(first) == hash(second)


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_equality_key_is_the_canonical_text(value: object) -> None:
    frozen = invocation(output=value).output
    assert canonical_key(frozen) == canonical_json(value)


def test_object_key_order_is_kept() -> None:
    recorded = invocation(output={"z": 1, "a": {"y": 2, "b": 3}})
    output = recorded.to_record()["output"]
    assert isinstance(output, dict)
    assert list(output) == ["z", "a"] and list(output["a"]) == ["y", "b"]


def test_scalar_subclasses_are_recorded_as_plain_values() -> None:
    class Text(str):
        def __str__(self) -> str:
            return "spoofed"

    class Number(int):
        def __int__(self) -> int:
            return 666

    recorded = invocation(output={"t": Text("real"), "n": Number(5)})
    assert recorded.to_record()["output"] == {"t": "real", "n": 5}
    assert type(resolve_raw_path(recorded.output, "$.t")) is str


def test_invocation_copies_the_callers_output() -> None:
    source: dict[str, Any] = {"log": ["line"]}
    recorded = invocation(output=source)
    source["log"].append("tampered")
    assert recorded.to_record()["output"] == {"log": ["line"]}


def test_to_record_round_trips() -> None:
    records = [
        {
            "invocation_id": "inv-1",
            "tool_name": "query_logs",
            "success": True,
            "output": LOG_OUTPUT,
            "input": {"query": "timeout", "limit": 10},
            "error": None,
            "duration_ms": 35,
        },
        {"invocation_id": "inv-2", "tool_name": "t", "success": False, "output": None},
        {
            "invocation_id": "inv-3",
            "tool_name": "t",
            "success": False,
            "output": None,
            "input": {"args": [], "kwargs": {}},
            "error": {"type": "TimeoutError", "message": "slow"},
            "duration_ms": 2.5,
        },
    ]
    ledger = ledger_from_records(records)
    back = [entry.to_record() for entry in ledger.invocations]
    assert back[0] == {k: v for k, v in records[0].items() if v is not None}
    assert back[1:] == records[1:]
    assert ledger_from_records(back) == ledger


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ({1: "x"}, r"output: not a JSON value at \$: object key of type int"),
        ({"a": {1, 2}}, r"output: not a JSON value at \$\.a: unsupported type set"),
        ([float("inf")], r"output: not a JSON value at \$\[0\]: non-finite number"),
        ({"a b": [b"x"]}, r"at \$\['a b'\]\[0\]: unsupported type bytes"),
    ],
)
def test_non_json_output_is_a_ledger_error(output: object, problem: str) -> None:
    with pytest.raises(LedgerError, match=problem):
        invocation(output=output)


def test_cyclic_output_is_a_ledger_error() -> None:
    cyclic: dict[str, Any] = {"a": []}
    cyclic["a"].append(cyclic)
    with pytest.raises(LedgerError, match=r"\$\.a\[0\]: circular reference"):
        invocation(output=cyclic)
    shared = ["x"]
    assert invocation(output=[shared, shared]).to_record()["output"] == [["x"], ["x"]]


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        ("nope", r"^tool_ledger: expected an array"),
        ([None], r"^tool_ledger\[0\]: expected an object"),
        (
            [{"tool_name": "t", "success": True, "output": 1}],
            r"^tool_ledger\[0\]\.invocation_id: missing",
        ),
        (
            [{"invocation_id": "", "tool_name": "t", "success": True, "output": 1}],
            r"invocation_id: expected a non-empty",
        ),
        (
            [{"invocation_id": 5, "tool_name": "t", "success": True, "output": 1}],
            r"invocation_id: expected a non-empty",
        ),
        (
            [{"invocation_id": "i", "success": True, "output": 1}],
            r"^tool_ledger\[0\]\.tool_name: missing",
        ),
        (
            [{"invocation_id": "i", "tool_name": 1, "success": True, "output": 1}],
            r"tool_name: expected a non-empty string, got number",
        ),
        ([{"invocation_id": "i", "tool_name": "t", "output": 1}], r"\.success: missing"),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": 1, "output": 1}],
            r"success: expected a boolean",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": True}],
            r"^tool_ledger\[0\]\.output: missing",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": True, "output": 1, "extra": 1}],
            r"^tool_ledger\[0\]\.extra: unknown key$",
        ),
        (
            [
                {
                    "invocation_id": "i",
                    "tool_name": "t",
                    "success": True,
                    "output": 1,
                    "duration_ms": "1.5",
                }
            ],
            r"^tool_ledger\[0\]\.duration_ms: expected a number >= 0, got string$",
        ),
        (
            [
                {
                    "invocation_id": "i",
                    "tool_name": "t",
                    "success": True,
                    "output": 1,
                    "duration_ms": True,
                }
            ],
            r"duration_ms: expected a number >= 0, got boolean",
        ),
        (
            [
                {
                    "invocation_id": "i",
                    "tool_name": "t",
                    "success": True,
                    "output": 1,
                    "duration_ms": -1,
                }
            ],
            r"duration_ms: expected a number >= 0, got -1",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": True, "output": 1, "error": 3}],
            r"^tool_ledger\[0\]\.error: expected an object, got number$",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": False, "output": 1,
              "error": "timeout"}],
            r"^tool_ledger\[0\]\.error: expected an object, got string$",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": True, "output": 1,
              "error": {"type": "E", "message": "m"}}],
            r"^tool_ledger\[0\]\.error: present on a successful call$",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": False, "output": 1,
              "error": {"type": "E", "message": 2}}],
            r"^tool_ledger\[0\]\.error\.message: expected a string, got number$",
        ),
        (
            [{"invocation_id": "i", "tool_name": "", "success": True, "output": 1}],
            r"^tool_ledger\[0\]\.tool_name: expected a non-empty string",
        ),
        (
            [{"invocation_id": "i", "tool_name": "t", "success": True, "output": 10**4300}],
            r"^tool_ledger\[0\]\.output: not a JSON value at \$: an integer of more than 4300",
        ),
        (
            [
                {
                    "invocation_id": "i",
                    "tool_name": "t",
                    "success": True,
                    "output": 1,
                    "input": {2: 1},
                }
            ],
            r"^tool_ledger\[0\]\.input: not a JSON value",
        ),
    ],
)
def test_malformed_records_name_the_path(records: object, problem: str) -> None:
    with pytest.raises(LedgerError, match=problem):
        ledger_from_records(records)  # type: ignore[arg-type]


def test_duplicate_record_id_names_the_record() -> None:
    records = [
        {"invocation_id": f"inv-{i}", "tool_name": "t", "success": True, "output": i}
        for i in range(3)
    ]
    records.append({"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": 9})
    with pytest.raises(LedgerError, match=r"^tool_ledger\[3\]\.invocation_id: duplicate 'inv-1'$"):
        ledger_from_records(records)


def test_null_optional_fields_mean_absent_and_null_output_is_kept() -> None:
    ledger = ledger_from_records(
        [
            {
                "invocation_id": "i",
                "tool_name": "t",
                "success": True,
                "output": None,
                "input": None,
                "error": None,
                "duration_ms": None,
            }
        ]
    )
    recorded = ledger.get("i")
    assert recorded is not None and recorded.output is None and recorded.input is None
    assert recorded.error is None and recorded.duration_ms is None


@pytest.mark.parametrize(
    "key", ["input_params", "output_preview", "output_length", "trace_id", "extra"]
)
def test_pre_section_13_record_keys_are_refused_by_name(key: str) -> None:
    # Fail closed: the older names are not read as aliases of the §13 fields.
    record = {"invocation_id": "i", "tool_name": "t", "success": True, "output": 1, key: "v"}
    with pytest.raises(LedgerError, match=rf"^tool_ledger\[0\]\.{key}: unknown key$"):
        ledger_from_records([record])


# --- never raises ---------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(output=JSON, path=PATH, excerpt=TEXT, success=st.booleans(), tool=st.sampled_from("tu"))
def test_reference_gatekeeper_never_raises_and_always_normalizes(
    output: object, path: str, excerpt: str, success: bool, tool: str
) -> None:
    ledger = ToolLedger((ToolInvocation("inv", "t", success, output),))
    # The executor parser guarantees non-empty strings in a binding (spec §5.2).
    executor_output = evidence([EvidenceBinding("inv", tool, path or "$", excerpt or "a")])
    raw = ReferenceGatekeeper(ledger)("run", executor_output)
    normalized = normalize_gatekeeper_result(raw)
    [entry] = normalized.checked_bindings
    if entry.passed:
        assert normalized.status is GatekeeperStatus.PASS
        value = resolve_raw_path(output, path or "$")
        text = value if isinstance(value, str) else json.dumps(value)
        assert entry.matched_text is not None and entry.matched_text in text
        assert " ".join(entry.matched_text.split()) == " ".join((excerpt or "a").split())
    else:
        assert normalized.reason_code is ReasonCode.GATEKEEPER_REJECTED
        assert raw["reason_codes"] == [entry.reason]


def _fold_by_hand(text: str) -> str:
    """Each run of ``str.isspace`` characters becomes one space; nothing is stripped."""
    folded: list[str] = []
    for char in text:
        if not char.isspace():
            folded.append(char)
        elif not folded or folded[-1] != " ":  # a " " in ``folded`` is always a run
            folded.append(" ")
    return "".join(folded)


def first_span_by_brute_force(text: str, excerpt: str) -> str | None:
    """The earliest-starting, then shortest span whose folding equals the folded excerpt.

    Folding is not stripping (spec §9 v1.1): an edge space of the excerpt must
    meet whitespace in the span. A span starting with whitespace must take the
    whole run (it starts where the run starts).
    """
    needle = _fold_by_hand(excerpt)
    if all(char == " " for char in needle):
        return None
    for i in range(len(text)):
        for j in range(i + 1, len(text) + 1):
            if _fold_by_hand(text[i:j]) == needle:
                return text[i:j]
    return None


@settings(max_examples=300, deadline=None)
@given(text=TEXT, excerpt=TEXT)
def test_match_is_the_first_folded_span(text: str, excerpt: str) -> None:
    expected = first_span_by_brute_force(text, excerpt)
    span = match_excerpt(text, excerpt)
    assert span == expected
    if span is not None:
        start = text.find(span)
        assert first_span_by_brute_force(text[:start] + span[:-1], excerpt) is None
