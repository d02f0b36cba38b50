"""Regression tests: hostile gatekeeper values, reference-gatekeeper cost, fresh fallback facts.

* hostile raw results are read through one defensive snapshot (spec §15):
  never a crash, a named exception type, one reading for everything;
* the reference gatekeeper folds each cited output once (spec §9 v1.1);
* a round-2 pre-verification fallback reports round 2 (spec §15).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
from diagnosis_core import ReasonCode
from diagnosis_core._chat import reference_gatekeeper as reference
from diagnosis_core._chat.rendering import _TEMPLATES
from diagnosis_core.machine import GatekeeperReturned, NodeName
from diagnosis_core.protocol import GatekeeperStatus
from diagnosis_core.testing import gatekeeper_raw_results, hostile_gatekeeper_values
from tests._reach import tools as dct
from tests.test_decision_details import CHECKED, at_gatekeeper

# --- hostile raw results -------------------------------------------------------------

METHODS = ("get", "items", "__iter__", "__getitem__", "keys", "values", "__len__")


def _raising_dict(method: str) -> type[dict[str, object]]:
    def raise_(self: object, *args: object) -> object:
        raise ZeroDivisionError(method)

    return type(f"Raising_{method.strip('_')}", (dict,), {method: raise_})


class _RaisingIterList(list[object]):
    def __iter__(self) -> Iterator[object]:
        raise OverflowError("no iteration")


class _HostileStr(str):
    __slots__ = ()

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no equality")


def _gatekeeper_event(state: dc.DiagnosisState) -> dc.TraceEvent:
    return [event for event in state.events if event.node is NodeName.GATEKEEPER][-1]


def _assert_unreadable(state: dc.DiagnosisState, error_type: str) -> None:
    assert state.gatekeeper is not None
    assert state.gatekeeper.status is GatekeeperStatus.REJECT
    assert state.gatekeeper.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    detail = _gatekeeper_event(state).details.error
    assert detail is not None and f"({error_type})" in detail
    assert state.finished and state.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    audit = state.gatekeeper_audits[-1].raw_result
    assert audit is not None and "unserializable" in json.loads(audit.json_text)
    assert dc.from_json(dc.DiagnosisState, dc.to_json(state)) == state


@pytest.mark.parametrize("method", METHODS)
def test_a_dict_subclass_with_a_raising_method_is_an_invalid_result(method: str) -> None:
    raw = _raising_dict(method)(status="pass", checked_bindings=[CHECKED])
    _assert_unreadable(dcm.advance(at_gatekeeper(), GatekeeperReturned(raw)), "ZeroDivisionError")


@pytest.mark.parametrize("method", METHODS)
def test_a_raising_dict_subclass_inside_checked_bindings_is_an_invalid_result(method: str) -> None:
    raw = {"status": "pass", "checked_bindings": [_raising_dict(method)(CHECKED)]}
    _assert_unreadable(dcm.advance(at_gatekeeper(), GatekeeperReturned(raw)), "ZeroDivisionError")


def test_a_list_subclass_whose_iteration_raises_is_an_invalid_result() -> None:
    raw = {"status": "pass", "checked_bindings": _RaisingIterList([CHECKED])}
    _assert_unreadable(dcm.advance(at_gatekeeper(), GatekeeperReturned(raw)), "OverflowError")


def test_string_subclasses_reach_the_trace_as_plain_strings() -> None:
    raw = {"status": _HostileStr(" PASS "), "level": _HostileStr("pass"),
           "checked_bindings": [{**CHECKED, "claim_id": _HostileStr("c1")}]}
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned(raw))
    details = _gatekeeper_event(state).details
    assert type(details.raw_status) is str and details.raw_status == " PASS "
    assert type(details.raw_level) is str and details.raw_level == "pass"
    assert state.gatekeeper is not None and state.gatekeeper.status is GatekeeperStatus.PASS
    (entry,) = state.gatekeeper.checked_bindings
    assert type(entry.claim_id) is str
    assert dc.from_json(dc.DiagnosisState, dc.to_json(state)) == state


def test_normalization_and_audit_read_the_same_snapshot() -> None:
    """A mapping that answers differently on each read cannot show two faces."""

    class FlipFlop(dict[str, object]):
        reads = 0

        def get(self, key: str, default: object = None) -> object:
            FlipFlop.reads += 1
            return "pass" if FlipFlop.reads == 1 else "fail"

    flip_flop = FlipFlop(status="fail", level="reject")
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned(flip_flop))
    assert state.gatekeeper is not None
    assert state.gatekeeper.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    assert state.gatekeeper.problem == "$: unreadable result (inconsistent FlipFlop)"


def test_a_host_mapping_is_read_once_per_protocol() -> None:
    """The snapshot is the only reader: each read protocol runs once, not once per consumer."""
    calls: list[str] = []

    class Counting(dict[str, object]):
        def items(self):  # type: ignore[no-untyped-def, override]
            calls.append("items")
            return super().items()

    state = dcm.advance(at_gatekeeper(), GatekeeperReturned(Counting(status="pass")))
    assert calls == ["items"]
    assert state.gatekeeper is not None and state.gatekeeper.status is GatekeeperStatus.PASS


# --- the freshest facts win ----------------------------------------------------------

EVIDENCE_WITH_TOOLS = json.dumps(
    {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [
            {"claim_id": "c1", "text": "CANARY claim text", "is_critical": True,
             "bindings": [{"source_invocation_id": "inv-1", "tool_name": "query_logs",
                           "raw_path": "$.items[0].message", "evidence_excerpt": "timeout"}]}
        ],
        "tool_trace_summary": [{"tool_name": "query_logs", "success": True}],
    }
)
GAP = {"verdict": "PASS", "groundedness_score": 0.5, "allowed_claim_ids": ["c1"],
       "facts_checked": [{"claim_id": "c1", "fact": "f", "is_critical": True,
                          "verification": "no_evidence"}]}


def _at_round_two(locale: str = "en") -> dc.DiagnosisState:
    config = dc.DiagnosisConfig(locale=dc.Locale(locale))
    request = dc.DiagnosisRequest("Why?", dc.RunConfig("run-1", "chat-1"), config=config)
    state = dcm.start_diagnosis(request)
    state = dcm.advance(state, dcm.AgentReplied('{"steps": [{"step_id": "s1", "goal": "g"}]}'))
    state = dcm.advance(state, dcm.AgentReplied(EVIDENCE_WITH_TOOLS))
    low = {"status": "fail", "level": "low_confid", "checked_bindings": [CHECKED]}
    state = dcm.advance(state, GatekeeperReturned(low))
    state = dcm.advance(state, dcm.AgentReplied(json.dumps(GAP)))
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent) and action.round == 2
    return state


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_a_round_two_executor_failure_shows_no_round_one_facts(locale: str) -> None:
    failed = dcm.AgentFailed(dc.FailureKind.NON_RETRYABLE, "boom")
    state = dcm.advance(_at_round_two(locale), failed)
    assert state.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    answer = state.answer
    assert answer is not None
    for round_one_fact in ("LOW_CONFID", "query_logs", "1"):  # status, tool overview, counts
        assert round_one_fact not in answer.replace("run-1", "")
    assert "CANARY" not in answer
    if locale == "en":
        assert "No finding was verified" not in answer
        assert "An earlier round verified findings, but the evidence retry failed" in answer
        assert "No tool calls were reported." in answer
    else:
        assert "没有任何结论通过验证" not in answer
        assert "较早的一轮已验证了部分结论，但证据重试失败" in answer


def test_a_round_two_gatekeeper_rejection_shows_round_two_facts() -> None:
    state = dcm.advance(_at_round_two(), dcm.AgentReplied(EVIDENCE_WITH_TOOLS.replace(
        '"query_logs", "success": true', '"search_metrics", "success": false')))
    rejected = {"status": "fail", "level": "reject",
                "checked_bindings": [{**CHECKED, "status": "fail", "matched_text": None}]}
    state = dcm.advance(state, GatekeeperReturned(rejected))
    answer = state.answer
    assert answer is not None and state.reason_code is ReasonCode.GATEKEEPER_REJECTED
    assert "- Evidence check status: REJECT" in answer
    assert "- Evidence bindings: 1 checked, 0 passed, 1 failed" in answer
    assert "- search_metrics: calls 1, failed 1" in answer and "query_logs" not in answer
    assert "An earlier round verified findings" in answer


def test_a_round_one_fallback_still_says_nothing_was_verified() -> None:
    state = dcm.advance(at_gatekeeper(), GatekeeperReturned({"status": "fail", "level": "reject"}))
    assert state.answer is not None and "No finding was verified" in state.answer


_TOOLS = st.lists(
    st.fixed_dictionaries({"tool_name": st.sampled_from(["query_logs", "search_metrics", "x y"]),
                           "success": st.booleans()}),
    max_size=3,
)
_ROUND_TWO_GATEKEEPER = st.one_of(
    st.builds(GatekeeperReturned, gatekeeper_raw_results(dcp.parse_executor_evidence(
        EVIDENCE_WITH_TOOLS))),
    st.builds(GatekeeperReturned, hostile_gatekeeper_values()),
    st.builds(dcm.GatekeeperFailed, st.text(max_size=10)),
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    locale=st.sampled_from(["en", "zh-CN"]),
    executor_fails=st.sampled_from(list(dc.FailureKind)) | st.none(),
    tools=_TOOLS,
    gatekeeper=_ROUND_TWO_GATEKEEPER,
    verifier_fails=st.booleans(),
)
def test_every_round_two_pre_verification_fallback_shows_round_two_facts(
    locale: str,
    executor_fails: dc.FailureKind | None,
    tools: list[dict[str, object]],
    gatekeeper: GatekeeperReturned | dcm.GatekeeperFailed,
    verifier_fails: bool,
) -> None:
    state = _at_round_two(locale)
    document = {**json.loads(EVIDENCE_WITH_TOOLS), "tool_trace_summary": tools}
    replies: list[object] = [
        dcm.AgentFailed(executor_fails, "boom") if executor_fails else dcm.AgentReplied(
            json.dumps(document)),
        gatekeeper,
    ]
    while not state.finished:
        action = dcm.next_action(state)
        if replies:
            reply = replies.pop(0)
        elif isinstance(action, dcm.InvokeAgent) and not verifier_fails:
            reply = dcm.AgentReplied(json.dumps(GAP))
        else:
            reply = dcm.AgentFailed(dc.FailureKind.NON_RETRYABLE, "late")
        agent_reply = isinstance(reply, dcm.AgentReplied | dcm.AgentFailed)
        if isinstance(action, dcm.InvokeAgent) and not agent_reply:
            reply = dcm.AgentFailed(dc.FailureKind.NON_RETRYABLE, "retry")
        state = dcm.advance(state, reply)  # type: ignore[arg-type]
    assume(state.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK and state.round == 2)
    events = state.events
    templates = _TEMPLATES[dc.Locale(locale)]
    answer = state.answer
    assert answer is not None and "CANARY" not in answer
    lines = answer.split("\n")
    status_prefix = templates.gatekeeper_line.split("{")[0]
    round_two_gatekeeper = [e for e in events if e.node is NodeName.GATEKEEPER and e.round == 2]
    shown = [line for line in lines if line.startswith(status_prefix)]
    if round_two_gatekeeper:
        status = round_two_gatekeeper[-1].details.status
        assert status is not None
        assert shown == [templates.gatekeeper_line.format(status=status.value)]
    else:
        assert shown == []
        assert not any(line.startswith(templates.bindings_line.split("{")[0]) for line in lines)
    executor_completed = any(
        e.node is NodeName.EXECUTOR and e.round == 2 and e.status is dcm.NodeStatus.COMPLETED
        for e in events
    )
    named = sorted({str(tool["tool_name"]) for tool in tools if tool["tool_name"] != "x y"})
    if not executor_completed or not tools:
        assert templates.no_tools in lines
    else:
        for name in named:
            assert any(line.startswith(f"- {name}") for line in lines)
    assert "query_logs" not in answer or "query_logs" in named
    # Round 1 verified a claim (its trusted binding reached the verifier): never "nothing".
    assert templates.pre_note_earlier_round in lines
    assert templates.pre_note not in lines


# --- reference gatekeeper cost -------------------------------------------------------



def _oracle_match(text: str, excerpt: str) -> str | None:
    """First span of ``text`` matching the folded excerpt (spec §9 v1.1: folded, not stripped).

    Each folded space between words stands for any whitespace run; a leading one
    for the whole run before the first word, a trailing one for one whitespace
    character after the last.
    """
    needle = re.sub(r"\s+", " ", excerpt)
    if not needle.strip():
        return None
    parts = needle.split(" ")
    pattern = r"\s+".join(re.escape(part) for part in parts)
    if needle.endswith(" "):
        pattern = pattern[: -len(r"\s+")] + r"\s"
    found = re.search(pattern, text)
    return None if found is None else found.group()


def _large_case(bindings: int, size: int) -> tuple[dc.ToolLedger, dc.ExecutorEvidence, str]:
    lines = [f"line {index}:   upstream\t timeout  after {index} ms" for index in range(size)]
    text = "\n".join(lines)
    ledger = dct.ledger_from_records(
        [{"invocation_id": "inv-1", "tool_name": "query_logs", "success": True,
          "output": {"log": text}}]
    )
    claims = [
        {"claim_id": f"c{index}", "text": "t", "bindings": [
            {"source_invocation_id": "inv-1", "tool_name": "query_logs", "raw_path": "$.log",
             "evidence_excerpt": f"line {index * size // bindings}: upstream timeout"}]}
        for index in range(bindings)
    ]
    document = {"schema_version": "executor_evidence_v2", "evidence_status": "evidence_found",
                "claims": claims}
    return ledger, dcp.parse_executor_evidence(json.dumps(document)), text


def test_many_bindings_on_one_large_output_fold_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, evidence, text = _large_case(bindings=100, size=2_000)
    folded: list[int] = []
    real_fold = reference._fold

    def counting_fold(value: str) -> str:
        folded.append(len(value))
        return real_fold(value)

    monkeypatch.setattr(reference, "_fold", counting_fold)
    raw = dc.ReferenceGatekeeper(ledger)("run-1", evidence)
    assert folded.count(len(text)) == 1  # the output, once; the rest are the short excerpts
    assert sum(folded) <= len(text) + 100 * 40
    entries = raw["checked_bindings"]
    assert isinstance(entries, list) and len(entries) == 100
    for entry, claim in zip(entries, evidence.claims, strict=True):
        assert entry["status"] == "pass"
        assert entry["matched_text"] == _oracle_match(text, claim.bindings[0].evidence_excerpt)


_SPACED = st.text("ab \t\n\u3000\xa0", max_size=40)


@given(text=_SPACED, excerpt=_SPACED)
def test_the_reused_fold_matches_like_the_whitespace_regex(text: str, excerpt: str) -> None:
    expected = _oracle_match(text, excerpt)
    assert dct.match_excerpt(text, excerpt) == expected
    cache = reference._CheckCache()
    assert cache.match(text, excerpt) == expected
    assert cache.match(text, excerpt + "a") == _oracle_match(text, excerpt + "a")
    assert len(cache.folded) == 1


# --- narrow excepts: a bug of the package surfaces ------------------------------------


def test_a_bug_in_the_binding_check_is_not_a_failed_binding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ledger, evidence, _ = _large_case(bindings=1, size=2)

    def broken(value: object) -> str | None:
        raise AssertionError("bug")

    monkeypatch.setattr(reference, "_scalar_text", broken)
    with pytest.raises(AssertionError):
        dct.check_binding(ledger, "c0", evidence.claims[0].bindings[0])


def test_a_bug_in_the_result_parser_is_not_an_unreadable_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from diagnosis_core._chat import gatekeeper as _gatekeeper

    def broken(value: object) -> object:
        raise AssertionError("bug")

    monkeypatch.setattr(_gatekeeper, "_parse_checked_bindings", broken)
    with pytest.raises(AssertionError):
        dcp.parse_gatekeeper_result({"status": "pass"})


def test_a_hostile_host_mapping_still_does_not_resolve() -> None:
    class Raising(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("no get")

    assert dct.resolve_raw_path(Raising(a="x"), "$.a") is reference.UNRESOLVED
    assert dct.resolve_raw_path(_RaisingIterList(["x"]), "$[0]") == "x"
