"""The pure decisions of spec §4 and §6.2–§6.5: config, projector, ceiling, gaps, retry context."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType

import pytest

from diagnosis_core import ExecutorEvidence, Verdict
from diagnosis_core.protocol import (
    BindingCheckStatus,
    CheckedBinding,
    Claim,
    EvidenceBinding,
    EvidenceStatus,
    FactCheck,
    GatekeeperStatus,
    Verification,
)
from tests._reach import diagnosis_core as dc
from tests._reach import machine as dcm
from tests._reach import protocol as dcp


def b(inv: str, tool: str = "t", path: str = "$.a", excerpt: str = "EXCERPT") -> EvidenceBinding:
    return EvidenceBinding(inv, tool, path, excerpt)


def evidence(*claims: Claim) -> ExecutorEvidence:
    status = EvidenceStatus.EVIDENCE_FOUND if claims else EvidenceStatus.NO_EVIDENCE
    return ExecutorEvidence(status, claims)


def ok(claim: str, inv: str, tool: str = "t", path: str = "$.a", text: str = "M") -> CheckedBinding:
    return CheckedBinding(claim, inv, tool, path, BindingCheckStatus.PASS, text)


def bad(claim: str, inv: str, tool: str = "t", path: str = "$.a") -> CheckedBinding:
    return CheckedBinding(claim, inv, tool, path, BindingCheckStatus.FAIL, None, "EXCERPT_MISMATCH")


# --- configuration -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "range_text"),
    [
        ("technical_retry_limit", 4, "0..3"),
        ("technical_retry_limit", -1, "0..3"),
        ("evidence_retry_limit", 2, "0..1"),
        ("history_limit", 101, "0..100"),
        ("max_item_chars", 19, "20..10000"),
        ("max_item_chars", 10001, "20..10000"),
        ("technical_retry_limit", True, "0..3"),
        ("history_limit", 1.0, "0..100"),
    ],
)
def test_out_of_range_config_names_field_and_range(
    field: str, value: object, range_text: str
) -> None:
    with pytest.raises(dc.ConfigError) as caught:
        dc.DiagnosisConfig(**{field: value})  # type: ignore[arg-type]
    assert field in str(caught.value) and range_text in str(caught.value)


def test_config_boundaries_are_accepted() -> None:
    dc.DiagnosisConfig(technical_retry_limit=3, evidence_retry_limit=0, history_limit=100,
                       max_item_chars=20, locale="zh-CN")
    with pytest.raises(dc.ConfigError, match="locale"):
        dc.DiagnosisConfig(locale="fr")  # type: ignore[arg-type]


def test_run_config_validates_and_freezes_metadata() -> None:
    run = dc.RunConfig("r", "s", {"b": "2", "a": "1"})
    with pytest.raises(TypeError):
        run.metadata["c"] = "3"  # type: ignore[index]
    assert run == dc.RunConfig("r", "s", {"a": "1", "b": "2"})
    assert hash(run) == hash(dc.RunConfig("r", "s", {"a": "1", "b": "2"}))
    with pytest.raises(dc.ConfigError, match="run_id"):
        dc.RunConfig("", "s")
    with pytest.raises(dc.ConfigError, match="metadata"):
        dc.RunConfig("r", "s", {"a": 1})  # type: ignore[dict-item]


# --- projector -----------------------------------------------------------------------


def test_projector_keeps_only_exactly_matching_passed_bindings() -> None:
    executor = evidence(
        Claim("c1", "one", (b("i1"), b("i2")), True),
        Claim("c2", "two", (b("i3"),)),
    )
    checked = [ok("c1", "i2", text="GK-TEXT"), bad("c1", "i1"), ok("c2", "i3", tool="T")]
    projected = dcm.project_verified_input(executor, checked)
    assert projected.verified_executor_output == (
        dcm.VerifiedClaim("c1", "one", True, (dcm.VerifiedBinding("i2", "t", "$.a"),)),
    )
    assert projected.verified_evidence == (dcm.VerifiedEvidence("c1", "i2", "t", "$.a", "GK-TEXT"),)
    assert dcm.count_trusted_bindings(executor, checked) == 1


@pytest.mark.parametrize(
    "entry",
    [
        ok("c1 ", "i1"), ok("c1", "i1 "), ok("c1", "i1", tool="T"), ok("c1", "i1", path="$.A"),
        ok("c2", "i1"),
    ],
)
def test_projector_matching_is_exact_string_equality(entry: CheckedBinding) -> None:
    executor = evidence(Claim("c1", "one", (b("i1"),)))
    assert dcm.project_verified_input(executor, [entry]) == dcm.VerifiedInput()


def test_projector_uses_gatekeeper_text_never_the_excerpt() -> None:
    executor = evidence(Claim("c1", "one", (b("i1", excerpt="EXECUTOR-SAYS"),)))
    projected = dcm.project_verified_input(executor, [ok("c1", "i1", text="TOOL-SAYS")])
    assert projected.verified_evidence[0].matched_text == "TOOL-SAYS"
    assert "EXECUTOR-SAYS" not in repr(projected)


def test_projector_keeps_executor_order_not_gatekeeper_order() -> None:
    executor = evidence(Claim("c2", "two", (b("i2"), b("i1"))), Claim("c1", "one", (b("i3"),)))
    checked = [ok("c1", "i3"), ok("c2", "i1"), ok("c2", "i2")]
    projected = dcm.project_verified_input(executor, checked)
    assert projected.claim_ids == ("c2", "c1")
    assert [e.source_invocation_id for e in projected.verified_evidence] == ["i2", "i1", "i3"]


def test_projector_of_no_evidence_output_is_empty() -> None:
    assert dcm.project_verified_input(evidence(), []) == dcm.VerifiedInput((), ())


def _lines_executed(function: Callable[[], object]) -> int:
    """How many lines of Python ``function`` executes: an operation count, not a time."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Callable[..., object]:
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        function()
    finally:
        sys.settrace(previous)
    return count


def _projection_of(n: int) -> Callable[[], object]:
    claims = tuple(Claim(f"c{i}", "x", (b(f"i{i}"),)) for i in range(n))
    checked = [ok(f"c{i}", f"i{i}") for i in range(n)]
    executor = evidence(*claims)
    return lambda: dcm.project_verified_input(executor, checked)


def test_projector_is_linear_in_claims_and_bindings() -> None:
    n = 20000
    projected = _projection_of(n)()
    assert isinstance(projected, dcm.VerifiedInput)
    assert len(projected.verified_evidence) == n
    # Four times the claims, at most six times the work (quadratic would be sixteen).
    small, large = _lines_executed(_projection_of(500)), _lines_executed(_projection_of(2000))
    assert large <= 6 * small, (small, large)


def test_select_allowed_claims_is_intersection_in_verified_order() -> None:
    executor = evidence(Claim("c1", "one", (b("i1"),)), Claim("c2", "two", (b("i2"),)))
    verified = dcm.project_verified_input(executor, [ok("c1", "i1"), ok("c2", "i2")])
    assert dcm.select_allowed_claims(verified, ["c2", "c9", "c1", "c2"]) == (
        dcm.AllowedClaim("c1", "one"), dcm.AllowedClaim("c2", "two"),
    )


# --- ceiling ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "status", "expected"),
    [
        (Verdict.PASS, GatekeeperStatus.PASS, Verdict.PASS),
        (Verdict.PASS, GatekeeperStatus.LOW_CONFID, Verdict.LOW_CONFID),
        (Verdict.LOW_CONFID, GatekeeperStatus.PASS, Verdict.LOW_CONFID),
        (Verdict.LOW_CONFID, GatekeeperStatus.LOW_CONFID, Verdict.LOW_CONFID),
        (Verdict.REJECT, GatekeeperStatus.PASS, Verdict.REJECT),
        (Verdict.REJECT, GatekeeperStatus.LOW_CONFID, Verdict.REJECT),
        (Verdict.PASS, GatekeeperStatus.REJECT, Verdict.REJECT),
    ],
)
def test_effective_verdict_is_min_of_model_and_ceiling(
    model: Verdict, status: GatekeeperStatus, expected: Verdict
) -> None:
    assert dcm.apply_verdict_ceiling(model, dcm.verdict_ceiling(status)) is expected


def test_verdict_order_and_answer_modes() -> None:
    assert Verdict.REJECT < Verdict.LOW_CONFID < Verdict.PASS
    assert Verdict.PASS >= Verdict.PASS and not Verdict.PASS <= Verdict.LOW_CONFID
    assert Verdict.PASS.__lt__("PASS") is NotImplemented
    assert dcm.answer_mode_for(Verdict.PASS) is dc.AnswerMode.NORMAL
    assert dcm.answer_mode_for(Verdict.LOW_CONFID) is dc.AnswerMode.LOW_CONFIDENCE
    assert dcm.answer_mode_for(Verdict.REJECT) is dc.AnswerMode.DEGRADED


# --- gaps and retry context ------------------------------------------------------------


def fact(cid: str, verification: Verification, critical: bool = True, text: str = "f") -> FactCheck:
    return FactCheck(cid, text, critical, verification)


def test_only_critical_no_evidence_or_indirect_support_facts_are_gaps() -> None:
    facts = [
        fact("c1", Verification.NO_EVIDENCE),
        fact("c2", Verification.INDIRECT_SUPPORT),
        fact("c3", Verification.DIRECT_SUPPORT),
        fact("c4", Verification.CONTRADICTED),
        fact("c5", Verification.NO_EVIDENCE, critical=False),
        fact("c1", Verification.NO_EVIDENCE),
        fact("c1", Verification.NO_EVIDENCE, text="other"),
    ]
    gaps = dcp.extract_evidence_gaps(facts)
    assert gaps == (
        dcp.EvidenceGap("c1", "f", Verification.NO_EVIDENCE),
        dcp.EvidenceGap("c2", "f", Verification.INDIRECT_SUPPORT),
        dcp.EvidenceGap("c1", "other", Verification.NO_EVIDENCE),
    )


def test_retry_context_refs_are_unique_and_sorted_and_constraints_fixed() -> None:
    executor = evidence(
        Claim("c1", "one", (b("i9", tool="z"), b("i2", tool="a", path="$.b"))),
        Claim("c2", "two", (b("i1", tool="a"), b("i2", tool="a"))),
    )
    checked = [ok("c1", "i9", tool="z"), ok("c1", "i2", tool="a", path="$.b"),
               ok("c2", "i1", tool="a"), ok("c2", "i2", tool="a")]
    verified = dcm.project_verified_input(executor, checked)
    gap = dcp.EvidenceGap("c1", "f", Verification.NO_EVIDENCE)
    context = dcp.build_retry_context(verified, [gap, gap])
    assert context.completed_query_refs == (
        dcp.QueryRef("a", "i1"), dcp.QueryRef("a", "i2"), dcp.QueryRef("z", "i9"),
    )
    assert context.gaps == (gap,)
    assert [c.value for c in context.constraints] == [
        "AT_MOST_ONCE", "NO_REPEAT_SUCCESSFUL_QUERIES", "INCREMENTAL_QUERIES_ONLY",
        "PRESERVE_PRIOR_VERIFIED_CLAIMS", "RETURN_FULL_EXECUTOR_EVIDENCE_V2_SNAPSHOT",
    ]
    assert context.prior_verified_executor_output == verified.verified_executor_output
    assert context.prior_verified_evidence == verified.verified_evidence
