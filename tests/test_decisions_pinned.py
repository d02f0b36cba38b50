"""Decisions that only a mutant showed to be unpinned, each pinned by a test of its own.

Every test here is named for the behaviour it pins and fails on the mutant that
changed that behaviour while the rest of the suite passed (mutation testing of
the decision modules; see ``docs/testing.md``, *Mutation testing*). Expected
values are literals or plain rules written out here, never another call to the
package.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, SupportsIndex

import pytest
import requests
import urllib3

import diagnosis_core as dc
import diagnosis_core.machine as dcm
from diagnosis_core import (
    ConfigError,
    FailureKind,
    PayloadError,
    RunConfig,
    ToolLedger,
    Verdict,
    default_failure_classifier,
)
from diagnosis_core._aiops.routing import AiOpsRoutingFacts, choose_aiops_route
from diagnosis_core._aiops.rules import AiOpsRuleContext, AiOpsRuleViolation
from diagnosis_core._chat.gatekeeper import normalize_gatekeeper_result, snapshot_raw_result
from diagnosis_core._chat.routing import RoutingFacts, choose_route
from diagnosis_core.aiops import (
    AIOPS_RULES,
    AiOpsMode,
    AiOpsRequest,
    AiOpsRule,
    AiOpsRuleEvaluation,
    evaluate_aiops_report,
)
from diagnosis_core.machine import (
    AgentFailed,
    AiOpsAgent,
    AiOpsNode,
    GatekeeperReturned,
    NodeName,
    NodeStatus,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from diagnosis_core.protocol import (
    AiOpsReport,
    Alert,
    GatekeeperStatus,
    SupervisorChoice,
    parse_executor_evidence,
    parse_verifier_output,
)
from tests.test_decision_details import CHECKED
from tests.test_hardening_gatekeeper import EVIDENCE_WITH_TOOLS, _at_round_two

RETRYABLE, NON_RETRYABLE = FailureKind.RETRYABLE, FailureKind.NON_RETRYABLE


# --- _kernel/machine/classify.py: the HTTP client table and the status boundaries -------------


def test_a_requests_ssl_error_wrapping_a_timeout_is_not_retried() -> None:
    """The SSLError row says NON_RETRYABLE, not "classify the wrapped reason"."""
    error = requests.exceptions.SSLError("handshake")
    error.reason = TimeoutError("handshake timed out")  # type: ignore[attr-defined]
    assert default_failure_classifier(error) is NON_RETRYABLE


def test_a_requests_ssl_error_wrapping_a_max_retry_error_is_not_retried() -> None:
    inner = urllib3.exceptions.MaxRetryError(None, "/", TimeoutError("slow"))  # type: ignore[arg-type]
    error = requests.exceptions.SSLError(inner)
    error.reason = inner.reason  # type: ignore[attr-defined]
    assert default_failure_classifier(error) is NON_RETRYABLE


class _StatusConnectionError(ConnectionError):
    """A ``ConnectionError`` (retryable by rule 5) carrying an HTTP status (rule 4)."""

    def __init__(self, status_code: object = None, status: object = None) -> None:
        super().__init__("status")
        self.status_code = status_code
        self.status = status


class _StatusError(Exception):
    """An unknown exception (non-retryable by rule 6) carrying an HTTP status."""

    def __init__(self, status_code: object = None, status: object = None) -> None:
        super().__init__("status")
        self.status_code = status_code
        self.status = status


def test_status_400_is_non_retryable_even_on_a_connection_error() -> None:
    assert default_failure_classifier(_StatusConnectionError(400)) is NON_RETRYABLE


def test_status_499_is_non_retryable_even_on_a_connection_error() -> None:
    assert default_failure_classifier(_StatusConnectionError(499)) is NON_RETRYABLE


def test_status_399_is_no_client_error_so_a_connection_error_stays_retryable() -> None:
    assert default_failure_classifier(_StatusConnectionError(399)) is RETRYABLE


def test_status_500_and_599_are_retryable_on_an_unknown_exception() -> None:
    assert default_failure_classifier(_StatusError(500)) is RETRYABLE
    assert default_failure_classifier(_StatusError(599)) is RETRYABLE


def test_status_499_is_not_a_server_error_on_an_unknown_exception() -> None:
    assert default_failure_classifier(_StatusError(499)) is NON_RETRYABLE


def test_status_600_is_not_a_status_so_the_next_attribute_decides() -> None:
    # ``status_code`` 600 is outside 100..599: ``status`` (503) is read instead.
    assert default_failure_classifier(_StatusError(600, 503)) is RETRYABLE
    assert default_failure_classifier(_StatusConnectionError(600, 404)) is NON_RETRYABLE


def test_status_599_is_a_status_so_the_next_attribute_is_not_read() -> None:
    assert default_failure_classifier(_StatusConnectionError(599, 404)) is RETRYABLE


def test_status_99_is_not_a_status_so_the_next_attribute_decides() -> None:
    assert default_failure_classifier(_StatusError(99, 503)) is RETRYABLE


def test_status_100_is_a_status_so_the_next_attribute_is_not_read() -> None:
    # 100 is a status (neither 4xx nor 5xx): rule 4 says nothing, ``status`` is not read.
    assert default_failure_classifier(_StatusError(100, 503)) is NON_RETRYABLE
    assert default_failure_classifier(_StatusConnectionError(100, 404)) is RETRYABLE


@pytest.mark.parametrize(("status", "expected"), [(407, NON_RETRYABLE), (408, RETRYABLE),
                                                  (409, RETRYABLE), (410, NON_RETRYABLE),
                                                  (428, NON_RETRYABLE), (429, RETRYABLE),
                                                  (430, NON_RETRYABLE)])
def test_only_408_409_and_429_of_the_4xx_statuses_are_retryable(
    status: int, expected: FailureKind
) -> None:
    assert default_failure_classifier(_StatusError(status)) is expected


# --- _chat/machine.py: the request string check and GatekeeperReturned equality --------

SURROGATE_PAIR = "\ud83d\ude00"  # JSON reads it back as one other character (U+1F600)


def test_a_surrogate_pair_in_the_session_id_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"request\.run\.session_id"):
        dc.DiagnosisRequest("q", RunConfig("run-1", f"chat{SURROGATE_PAIR}"))


@pytest.mark.parametrize(
    ("request_args", "place"),
    [
        ({"question": SURROGATE_PAIR}, "question"),
        ({"run_id": SURROGATE_PAIR}, "run.run_id"),
        ({"metadata": {"k": SURROGATE_PAIR}}, "run.metadata.k"),
    ],
)
def test_a_surrogate_pair_anywhere_in_the_request_is_refused(
    request_args: dict[str, Any], place: str
) -> None:
    run = RunConfig(request_args.get("run_id", "run-1"), "chat-1", request_args.get("metadata", {}))
    with pytest.raises(ConfigError, match=rf"request\.{place}"):
        dc.DiagnosisRequest(request_args.get("question", "q"), run)


def test_a_lone_surrogate_in_the_session_id_is_not_a_pair_and_is_kept() -> None:
    request = dc.DiagnosisRequest("q", RunConfig("run-1", "chat\ud83d"))
    assert request.run.session_id == "chat\ud83d"


def test_gatekeeper_returned_origin_is_never_part_of_equality() -> None:
    marker = object()
    plain = GatekeeperReturned({"status": "pass"})
    marked = GatekeeperReturned({"status": "pass"}, origin=marker)
    assert plain == marked
    assert hash(GatekeeperReturned(("pass",))) == hash(GatekeeperReturned(("pass",), origin=marker))


# --- _chat/machine.py: the round-2 REJECT fallback wording ------------------------------

ROUND_TWO_REJECT_ANSWER = (
    "## Diagnosis could not be completed\n\n"
    "The evidence check rejected the collected evidence.\n\n"
    "- Reason code: GATEKEEPER_REJECTED\n"
    "- Evidence check status: REJECT\n"
    "- Evidence bindings: 1 checked, 0 passed, 1 failed\n\n"
    "### Tool calls\n\n"
    "- query_logs: calls 1, failed 0\n\n"
    "An earlier round verified findings, but the evidence retry failed, "
    "so this answer contains no diagnosis.\n\n"
    "Inspect the trace of run run-1 for details."
)


def test_a_round_two_reject_fallback_shows_the_round_two_status_counts_and_tools() -> None:
    state = dcm.advance(_at_round_two(), dcm.AgentReplied(EVIDENCE_WITH_TOOLS))
    failed = {**CHECKED, "status": "fail", "matched_text": None}
    rejected = {"status": "fail", "level": "reject", "checked_bindings": [failed]}
    state = dcm.advance(state, GatekeeperReturned(rejected))
    assert state.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert state.reason_code is dc.ReasonCode.GATEKEEPER_REJECTED
    assert state.answer == ROUND_TWO_REJECT_ANSWER


# --- _chat/parsing.py: critical_fact_count --------------------------------------------

_VERIFIER = {"verdict": "PASS", "groundedness_score": 1, "facts_checked": [],
             "allowed_claim_ids": []}


def test_a_critical_fact_count_of_zero_is_accepted() -> None:
    output = parse_verifier_output(json.dumps({**_VERIFIER, "critical_fact_count": 0}))
    assert output.critical_fact_count == 0


def test_a_negative_critical_fact_count_is_refused_naming_the_field() -> None:
    with pytest.raises(PayloadError, match="critical_fact_count") as caught:
        parse_verifier_output(json.dumps({**_VERIFIER, "critical_fact_count": -1}))
    assert caught.value.reason == "critical_fact_count: -1 is negative"


# --- _chat/routing.py: the defaults of the public RoutingFacts --------------------------


def test_routing_facts_default_to_no_gap_and_no_evidence_retry_left() -> None:
    facts = RoutingFacts()
    assert (facts.gap_count, facts.evidence_retry_left) == (0, False)
    assert (facts.gatekeeper_status, facts.trusted_bindings, facts.effective_verdict) == (
        None, 0, None)
    assert (facts.status, facts.retries_left) == (None, False)


def test_a_low_confid_verdict_with_a_retry_left_but_no_gap_given_goes_to_the_composer() -> None:
    facts = RoutingFacts(status=NodeStatus.COMPLETED, effective_verdict=Verdict.LOW_CONFID,
                         evidence_retry_left=True)
    assert choose_route(NodeName.VERIFIER, facts).next is NodeName.COMPOSER


def test_a_low_confid_verdict_with_a_gap_but_no_retry_given_goes_to_the_composer() -> None:
    facts = RoutingFacts(status=NodeStatus.COMPLETED, effective_verdict=Verdict.LOW_CONFID,
                         gap_count=1)
    assert choose_route(NodeName.VERIFIER, facts).next is NodeName.COMPOSER


def test_a_low_confid_verdict_with_a_gap_and_a_retry_left_goes_to_evidence_retry() -> None:
    facts = RoutingFacts(status=NodeStatus.COMPLETED, effective_verdict=Verdict.LOW_CONFID,
                         gap_count=1, evidence_retry_left=True)
    assert choose_route(NodeName.VERIFIER, facts).next is NodeName.EVIDENCE_RETRY


# --- _chat/gatekeeper.py: host mappings and list/tuple subclasses -----------------------


class PairMapping(Mapping[object, object]):
    """A host mapping that keeps ``1`` and ``1.0`` apart (keys compared by type and value)."""

    def __init__(self, pairs: list[tuple[object, object]]) -> None:
        self._pairs = pairs

    def __getitem__(self, key: object) -> object:
        for known, value in self._pairs:
            if type(known) is type(key) and known == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[object]:
        return iter([key for key, _ in self._pairs])

    def __len__(self) -> int:
        return len(self._pairs)


def test_keys_1_and_1_0_of_a_host_mapping_are_refused_not_merged() -> None:
    snapshot = snapshot_raw_result(PairMapping([(1, "a"), (1.0, "b")]))
    assert snapshot.value is None
    assert snapshot.problem == "unreadable result (two keys of a PairMapping read as one)"


def test_a_host_mapping_with_distinct_keys_is_copied_to_a_plain_dict() -> None:
    snapshot = snapshot_raw_result(PairMapping([(1, "a"), ("1", "b")]))
    assert snapshot.problem is None
    assert snapshot.value == {1: "a", "1": "b"} and type(snapshot.value) is dict


class PassList(list[object]):
    """A well-behaved list subclass."""


class PassTuple(tuple[object, ...]):
    """A well-behaved tuple subclass."""


class ShortList(list[object]):
    """A list subclass whose ``len`` disagrees with its iteration."""

    def __len__(self) -> int:
        return super().__len__() - 1


class LyingList(list[object]):
    """A list subclass whose ``[]`` disagrees with its iteration."""

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        return "other"


PASSED_RESULT = {"status": "pass", "level": None,
                 "checked_bindings": [{**CHECKED, "matched_text": "timeout"}]}


@pytest.mark.parametrize("array", [PassList, PassTuple])
def test_a_well_behaved_list_or_tuple_subclass_reads_like_a_list(array: type[Any]) -> None:
    raw = {**PASSED_RESULT, "checked_bindings": array([dict(CHECKED)])}
    snapshot = snapshot_raw_result(raw)
    assert snapshot.problem is None
    assert snapshot.value == {**PASSED_RESULT, "checked_bindings": [dict(CHECKED)]}
    assert type(snapshot.value["checked_bindings"]) is list
    normalized = normalize_gatekeeper_result(raw)
    assert normalized.status is GatekeeperStatus.PASS
    assert (normalized.checked, normalized.passed, normalized.failed) == (1, 1, 0)


@pytest.mark.parametrize("array", [ShortList, LyingList])
def test_a_list_subclass_whose_protocols_disagree_is_unreadable(array: type[Any]) -> None:
    raw = {**PASSED_RESULT, "checked_bindings": array([dict(CHECKED), dict(CHECKED)])}
    snapshot = snapshot_raw_result(raw)
    assert snapshot.value is None
    assert snapshot.problem == f"unreadable result (inconsistent {array.__name__})"
    normalized = normalize_gatekeeper_result(raw)
    assert normalized.status is GatekeeperStatus.REJECT
    assert normalized.reason_code is dc.ReasonCode.GATEKEEPER_INVALID_RESULT


# --- _aiops/rules.py: reading any report --------------------------------------------------

_CALM = (Alert("PodRestarts", "order-svc", "warning", "2024-05-01T10:04:00Z"),)


class _RaisingGet(dict[str, object]):
    def get(self, *args: object, **kwargs: object) -> object:
        raise TypeError("get is broken")


def test_a_malformed_report_dict_whose_get_raises_is_judged_never_raised() -> None:
    # Malformed (no findings), so the lenient reader asks ``get``, which raises:
    # the whole report then counts as empty (its summary too), and nothing raises.
    evaluation = evaluate_aiops_report(
        _RaisingGet(summary="s"), mode=AiOpsMode.AUTO_DISCOVERY, alerts=(), ledger=ToolLedger(())
    )
    assert evaluation == AiOpsRuleEvaluation(
        passed=False,
        score=0.0,
        violations=(
            AiOpsRuleViolation(
                "report_well_formed", "the report is not a valid aiops_report: findings: missing"
            ),
            AiOpsRuleViolation("summary_present", "the summary is missing or blank"),
            AiOpsRuleViolation("evidence_present", "the evidence section is missing or empty"),
            AiOpsRuleViolation(
                "recommended_actions_present",
                "the recommended actions section is missing or empty",
            ),
        ),
    )


def _seen_report(wire: object) -> AiOpsReport:
    """The report the rules were given for ``wire`` (a rule that records its context)."""
    seen: list[AiOpsReport] = []

    def record(context: AiOpsRuleContext) -> list[str]:
        seen.append(context.report)
        return []

    rule = AiOpsRule("record", "records the report read", lambda _: True, record)
    evaluate_aiops_report(wire, mode=AiOpsMode.AUTO_DISCOVERY, alerts=(), ledger=ToolLedger(()),
                          rules=(rule,))
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("section", [7, 2.5, True, None, {"text": "x"}, "evidence"])
def test_a_section_that_is_not_a_list_reads_as_empty_and_keeps_the_rest(section: object) -> None:
    evidence = {"text": "pool 20/20", "cited_invocation_ids": ["inv-1"]}
    report = _seen_report({"summary": "kept", "findings": section, "evidence": [evidence],
                           "recommended_actions": section})
    assert report.summary == "kept"
    assert report.findings == () and report.recommended_actions == ()
    assert [(item.text, item.cited_invocation_ids) for item in report.evidence] == [
        ("pool 20/20", ("inv-1",))]


def test_a_tuple_section_is_read_like_a_list() -> None:
    evidence = {"text": "pool 20/20", "cited_invocation_ids": ["inv-1"]}
    report = _seen_report({"summary": 3, "findings": None, "evidence": (evidence, "junk"),
                           "recommended_actions": []})
    assert report.summary == ""
    assert [item.text for item in report.evidence] == ["pool 20/20"]


def test_the_default_rules_are_the_nine_documented_ones_in_order() -> None:
    assert [rule.id for rule in AIOPS_RULES] == [
        "report_well_formed",
        "summary_present",
        "evidence_present",
        "recommended_actions_present",
        "payload_alerts_addressed",
        "no_foreign_alert_subject",
        "cited_invocations_succeeded",
        "findings_cite_invocations",
        "critical_alerts_have_actions",
    ]


def test_an_empty_rule_set_scores_one_and_passes() -> None:
    evaluation = evaluate_aiops_report(
        {}, mode=AiOpsMode.AUTO_DISCOVERY, alerts=(), ledger=ToolLedger(()), rules=()
    )
    assert evaluation == AiOpsRuleEvaluation(passed=True, score=1.0, violations=())


# --- _aiops/machine.py: the fallback step after a first-call supervisor failure -----------


def test_a_first_call_supervisor_failure_falls_back_at_step_one() -> None:
    request = AiOpsRequest(RunConfig("aiops-1", "ops-7"), _CALM)
    state = start_aiops(request)
    action = next_aiops_action(state)
    assert action is not None and action.agent is AiOpsAgent.SUPERVISOR  # type: ignore[union-attr]
    state = advance_aiops(state, AgentFailed(FailureKind.NON_RETRYABLE, "down"))
    trace = [(event.node.value, event.step, event.attempt, event.status.value,
              event.reason_code.value if event.reason_code else None) for event in state.events]
    assert trace == [
        ("supervisor", 1, 1, "NON_RETRYABLE_FAILED", "SUPERVISOR_FAILED"),
        ("fallback", 1, 1, "COMPLETED", "SUPERVISOR_FAILED"),
    ]


# --- _aiops/rules.py: a ledger source is read when the report is judged -------------------

_CITING = {"summary": "s", "findings": [], "recommended_actions": [{"text": "a"}],
           "evidence": [{"text": "pool 20/20", "cited_invocation_ids": ["inv-1"]}]}


class _GrowingLedger:
    """A host ledger source (what a ToolRecorder is to the evaluator): read on demand."""

    def __init__(self) -> None:
        self.invocations: list[dc.ToolInvocation] = []
        self.reads = 0

    def ledger(self) -> ToolLedger:
        self.reads += 1
        return ToolLedger(tuple(self.invocations))


def test_a_ledger_source_is_read_once_when_the_report_is_judged() -> None:
    source = _GrowingLedger()
    source.invocations.append(dc.ToolInvocation("inv-1", "query_logs", True, {"m": 1}))
    evaluation = evaluate_aiops_report(_CITING, mode=AiOpsMode.AUTO_DISCOVERY, alerts=(),
                                       ledger=source)
    assert evaluation == AiOpsRuleEvaluation(passed=True, score=1.0, violations=())
    assert source.reads == 1


def test_a_citation_missing_from_the_source_ledger_is_a_violation() -> None:
    evaluation = evaluate_aiops_report(_CITING, mode=AiOpsMode.AUTO_DISCOVERY, alerts=(),
                                       ledger=_GrowingLedger())
    assert evaluation.violations == (AiOpsRuleViolation(
        "cited_invocations_succeeded",
        "evidence[0].cited_invocation_ids[0]: 'inv-1' is not in the tool ledger"),)


class _WrongLedger:
    def ledger(self) -> object:
        return ()


def test_a_source_whose_ledger_is_not_a_tool_ledger_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"_WrongLedger\.ledger\(\) returned tuple"):
        evaluate_aiops_report(_CITING, mode=AiOpsMode.AUTO_DISCOVERY, alerts=(),
                              ledger=_WrongLedger())  # type: ignore[arg-type]


# --- _aiops/machine.py: the executor's trace details ---------------------------------------


def test_the_executor_event_counts_its_findings_and_all_and_new_invocations() -> None:
    request = AiOpsRequest(RunConfig("aiops-1", "ops-7"), _CALM)
    state = start_aiops(request)
    plan = json.dumps({"steps": [{"step_id": "s1", "goal": "g", "tools": ["query_logs"]}]})
    finding = {"alert_name": "PodRestarts", "service": "order-svc", "text": "OOMKilled",
               "cited_invocation_ids": ["inv-1"]}
    replies = [
        json.dumps({"next": "planner_agent", "reason": "r"}),
        plan,
        json.dumps({"next": "executor_agent", "reason": "r"}),
        json.dumps({"findings": [finding], "tool_invocation_ids": ["inv-1", "inv-2"]}),
        json.dumps({"next": "executor_agent", "reason": "r"}),
        json.dumps({"findings": [], "tool_invocation_ids": ["inv-2", "inv-3", "inv-1"]}),
    ]
    for reply in replies:
        state = advance_aiops(state, dcm.AgentReplied(reply))
    executor = [event.details for event in state.events if event.node.value == "executor"]
    assert [(d.findings, d.tool_invocations, d.new_tool_invocations) for d in executor] == [
        (1, 2, 2), (0, 3, 1)]


# --- _chat/gatekeeper.py: what counts as "the same" value, an unnamed exception ------------


class CopyingList(list[object]):
    """A list subclass whose ``[]`` returns an equal copy, not the item it iterates."""

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        item = super().__getitem__(index)
        return dict(item) if isinstance(item, dict) else item


def test_a_list_subclass_whose_index_gives_an_equal_copy_is_unreadable() -> None:
    # Sameness is identity (or equality of exact scalars): a host __eq__ is never asked.
    raw = {**PASSED_RESULT, "checked_bindings": CopyingList([dict(CHECKED)])}
    snapshot = snapshot_raw_result(raw)
    assert snapshot.value is None
    assert snapshot.problem == "unreadable result (inconsistent CopyingList)"


class _Nameless(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class _NamelessError(Exception, metaclass=_Nameless):
    pass


def test_a_gatekeeper_error_whose_type_has_no_readable_name_is_named_base_exception() -> None:
    from diagnosis_core._chat.gatekeeper import gatekeeper_unavailable

    result = gatekeeper_unavailable(_NamelessError("boom"))
    assert result.status is GatekeeperStatus.REJECT
    assert result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert result.problem == "BaseException: boom"


# --- class-level defaults and validators of the public request and state types ---------------


def test_an_unavailable_gatekeeper_result_counts_no_binding() -> None:
    from diagnosis_core._chat.gatekeeper import gatekeeper_unavailable

    result = gatekeeper_unavailable("down")
    assert (result.checked, result.passed, result.failed, result.checked_bindings) == (
        0, 0, 0, ())
    assert result.problem == "down"


def test_a_request_question_must_be_a_string_and_its_run_a_run_config() -> None:
    with pytest.raises(TypeError, match="question"):
        dc.DiagnosisRequest(7, RunConfig("r", "s"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="run"):
        dc.DiagnosisRequest("q", ("r", "s"))  # type: ignore[arg-type]


def test_request_skills_and_history_given_as_lists_are_stored_as_tuples() -> None:
    skill = dc.Skill("payment-timeout", "what to check")
    request = dc.DiagnosisRequest("q", RunConfig("r", "s"), skills=[skill])
    assert request.skills == (skill,) and type(request.skills) is tuple
    assert request.history == () and dc.DiagnosisRequest("q", RunConfig("r", "s")).skills == ()


def test_aiops_request_alerts_given_as_a_list_are_stored_as_a_tuple() -> None:
    request = AiOpsRequest(RunConfig("r", "s"), list(_CALM))
    assert request.alerts == _CALM and type(request.alerts) is tuple
    assert AiOpsRequest(RunConfig("r", "s")).alerts == ()


def test_a_fresh_state_counts_no_observer_failure_and_waits_for_step_one() -> None:
    state = dcm.start_diagnosis(dc.DiagnosisRequest("q", RunConfig("r", "s")))
    assert (state.answer, state.reason_code, state.observer_failures) == (None, None, 0)
    aiops = start_aiops(AiOpsRequest(RunConfig("r", "s"), _CALM))
    assert (aiops.step, aiops.repeats, aiops.decisions, aiops.plan) == (1, 0, (), None)


# --- _chat/parsing.py: which empty binding field is named -------------------------------------

_BINDING = {"source_invocation_id": "inv-1", "tool_name": "query_logs",
            "raw_path": "$.items[0].message", "evidence_excerpt": "timeout"}


@pytest.mark.parametrize(
    ("emptied", "named"),
    [
        (("source_invocation_id", "tool_name", "raw_path", "evidence_excerpt"),
         "source_invocation_id"),
        (("tool_name", "raw_path", "evidence_excerpt"), "tool_name"),
        (("raw_path", "evidence_excerpt"), "raw_path"),
        (("evidence_excerpt",), "evidence_excerpt"),
    ],
)
def test_of_several_empty_binding_fields_the_first_in_wire_order_is_named(
    emptied: tuple[str, ...], named: str
) -> None:
    binding = {**_BINDING, **dict.fromkeys(emptied, "")}
    text = json.dumps({"schema_version": "executor_evidence_v2",
                       "evidence_status": "evidence_found",
                       "claims": [{"claim_id": "c1", "text": "t", "bindings": [binding]}]})
    with pytest.raises(PayloadError) as caught:
        parse_executor_evidence(text)
    assert caught.value.path == f"claims[0].bindings[0].{named}"


# --- _chat/machine.py: what the verifier is shown, what its trace event records ---------------


def _at_verifier_after_low_confid() -> dc.DiagnosisState:
    from tests.test_decision_details import at_gatekeeper

    low = {"status": "fail", "level": "low_confid", "checked_bindings": [CHECKED]}
    return dcm.advance(at_gatekeeper(), GatekeeperReturned(low))


def test_the_verifier_is_shown_the_gatekeeper_status_its_ceiling_and_counts() -> None:
    action = dcm.next_action(_at_verifier_after_low_confid())
    assert isinstance(action, dcm.InvokeAgent) and action.agent is dcm.AgentName.VERIFIER
    assert json.loads(action.input)["gatekeeper"] == {
        "status": "LOW_CONFID", "ceiling": "LOW_CONFID", "checked": 1, "passed": 1, "failed": 0}


def test_the_verifier_event_records_the_verdicts_the_ceiling_and_the_score() -> None:
    reply = {"verdict": "PASS", "groundedness_score": 0.25, "facts_checked": [],
             "allowed_claim_ids": ["c1"]}
    state = dcm.advance(_at_verifier_after_low_confid(), dcm.AgentReplied(json.dumps(reply)))
    details = [event for event in state.events if event.node is NodeName.VERIFIER][-1].details
    assert (details.model_verdict, details.effective_verdict, details.ceiling,
            details.groundedness_score) == (Verdict.PASS, Verdict.LOW_CONFID, Verdict.LOW_CONFID,
                                            0.25)


# --- _chat/gatekeeper.py: a host mapping's get must agree when given a default ----------------


class DefaultLyingMapping(PairMapping):
    """``get(key)`` finds the key, ``get(key, default)`` pretends it is absent."""

    def get(self, key: object, *default: object) -> object:
        return default[0] if default else self[key]


def test_a_host_mapping_whose_get_with_a_default_disagrees_is_unreadable() -> None:
    snapshot = snapshot_raw_result(DefaultLyingMapping([("status", "pass")]))
    assert snapshot.value is None
    assert snapshot.problem == "unreadable result (inconsistent DefaultLyingMapping)"


# --- _aiops/routing.py: the order of the supervisor's rows --------------------------------


@pytest.mark.parametrize(
    ("choice", "last_step", "repeats", "expected"),
    [
        # FINISH first: a finished run is reported even on its last step or when repeating.
        ("FINISH", True, 3, ("reporter", None)),
        # then no progress, then the budget, then the agent chosen
        ("planner_agent", True, 3, ("fallback", "NO_PROGRESS")),
        ("planner_agent", True, 0, ("fallback", "STEP_BUDGET_EXHAUSTED")),
        ("executor_agent", True, 0, ("fallback", "STEP_BUDGET_EXHAUSTED")),
        ("planner_agent", False, 2, ("planner", None)),
        ("executor_agent", False, 0, ("executor", None)),
    ],
)
def test_the_supervisor_rows_apply_finish_then_no_progress_then_the_budget_then_the_choice(
    choice: str, last_step: bool, repeats: int, expected: tuple[str, str | None]
) -> None:
    facts = AiOpsRoutingFacts(status=NodeStatus.COMPLETED, choice=SupervisorChoice(choice),
                              last_step=last_step, repeats=repeats)
    route = choose_aiops_route(AiOpsNode.SUPERVISOR, facts)
    assert (route.next.value if route.next else None,
            route.reason.value if route.reason else None) == expected


# --- _chat/gatekeeper.py: the keyword tables, in their order ----------------------------------


def test_an_unknown_level_is_refused_listing_the_three_levels_in_order() -> None:
    from diagnosis_core._chat.gatekeeper import parse_gatekeeper_result

    with pytest.raises(PayloadError) as caught:
        parse_gatekeeper_result({"status": "fail", "level": "low"})
    assert str(caught.value) == "level: expected one of pass, low_confid, reject"


@pytest.mark.parametrize(
    ("removed", "named"),
    [
        (("claim_id", "source_invocation_id", "tool_name", "raw_path"), "claim_id"),
        (("source_invocation_id", "tool_name", "raw_path"), "source_invocation_id"),
        (("tool_name", "raw_path"), "tool_name"),
        (("raw_path",), "raw_path"),
    ],
)
def test_of_several_missing_binding_ids_the_first_in_wire_order_is_named(
    removed: tuple[str, ...], named: str
) -> None:
    from diagnosis_core._chat.gatekeeper import parse_gatekeeper_result

    entry = {key: value for key, value in CHECKED.items() if key not in removed}
    with pytest.raises(PayloadError) as caught:
        parse_gatekeeper_result({"status": "pass", "checked_bindings": [entry]})
    assert str(caught.value) == f"checked_bindings[0].{named}: missing"


# --- _aiops/routing.py: the table itself, row by row, in order ---------------------------------

AIOPS_ROWS = [  # (after, condition, next, reason, reason_from_node, same_input), spec §11
    (None, "ALWAYS", "supervisor", None, False, False),
    ("supervisor", "RETRY_LEFT", "supervisor", None, False, True),
    ("supervisor", "OTHER_FAILURE", "fallback", "SUPERVISOR_FAILED", False, False),
    ("supervisor", "FINISH", "reporter", None, False, False),
    ("supervisor", "NO_PROGRESS", "fallback", "NO_PROGRESS", False, False),
    ("supervisor", "BUDGET_EXHAUSTED", "fallback", "STEP_BUDGET_EXHAUSTED", False, False),
    ("supervisor", "PLANNER_AGENT", "planner", None, False, False),
    ("supervisor", "EXECUTOR_AGENT", "executor", None, False, False),
    ("planner", "COMPLETED", "supervisor", None, False, False),
    ("planner", "RETRY_LEFT", "planner", None, False, True),
    ("planner", "OTHERWISE", "fallback", "PLANNER_FAILED", False, False),
    ("executor", "COMPLETED", "supervisor", None, False, False),
    ("executor", "ANY_FAILURE", "fallback", None, True, False),
    ("reporter", "COMPLETED", None, None, False, False),
    ("reporter", "RETRY_LEFT", "reporter", None, False, True),
    ("reporter", "OTHERWISE", "fallback", "REPORTER_FAILED", False, False),
    ("fallback", "ALWAYS", None, None, False, False),
]


def test_the_aiops_routing_table_is_the_spec_table_row_by_row() -> None:
    from diagnosis_core.machine import AIOPS_ROUTING_TABLE

    rows = [(row.after.value if row.after else None, row.condition.name,
             row.next.value if row.next else None, row.reason.value if row.reason else None,
             row.reason_from_node, row.same_input) for row in AIOPS_ROUTING_TABLE]
    assert rows == AIOPS_ROWS
