"""Gatekeeper result parsing and normalization (spec §6.1)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.enums import BindingCheckStatus, GatekeeperStatus, ReasonCode
from diagnosis_core._chat.gatekeeper import (
    NormalizedGatekeeperResult,
    gatekeeper_unavailable,
    normalize_gatekeeper_result,
    parse_gatekeeper_result,
)
from diagnosis_core._kernel.errors import PayloadError

INVALID = ReasonCode.GATEKEEPER_INVALID_RESULT


def entry(index: int = 0, status: str = "pass", **overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "claim_id": f"c{index}",
        "source_invocation_id": f"inv-{index}",
        "tool_name": "query_logs",
        "raw_path": "$.items[0].message",
        "status": status,
        "matched_text": "upstream timeout" if status.strip().lower() == "pass" else None,
        "reason": None if status.strip().lower() == "pass" else "EXCERPT_MISMATCH",
    }
    base.update(overrides)
    return base


def result(status: object = "pass", level: object = None, *entries: object) -> dict[str, object]:
    return {"status": status, "level": level, "checked_bindings": list(entries)}


def assert_invalid(normalized: NormalizedGatekeeperResult, problem_part: str = "") -> None:
    assert normalized.status is GatekeeperStatus.REJECT
    assert normalized.reason_code is INVALID
    assert normalized.checked_bindings == ()
    assert (normalized.checked, normalized.passed, normalized.failed) == (0, 0, 0)
    assert normalized.problem is not None
    assert problem_part in normalized.problem


# --- the table -------------------------------------------------------------------


@pytest.mark.parametrize("level", ["absent", None, "pass"])
def test_pass_without_failed_binding_is_pass(level: object) -> None:
    raw: dict[str, object] = {"status": "pass", "checked_bindings": [entry(0), entry(1)]}
    if level != "absent":
        raw["level"] = level
    normalized = normalize_gatekeeper_result(raw)
    assert normalized.status is GatekeeperStatus.PASS
    assert normalized.reason_code is None
    assert normalized.problem is None
    assert (normalized.checked, normalized.passed, normalized.failed) == (2, 2, 0)
    assert [b.claim_id for b in normalized.checked_bindings] == ["c0", "c1"]


def test_pass_with_zero_bindings_is_pass() -> None:
    normalized = normalize_gatekeeper_result({"status": "pass"})
    assert normalized.status is GatekeeperStatus.PASS
    assert (normalized.checked, normalized.passed, normalized.failed) == (0, 0, 0)


def test_fail_low_confid_is_low_confid_with_counts() -> None:
    normalized = normalize_gatekeeper_result(
        result("fail", "low_confid", entry(0), entry(1, "fail"), entry(2, "fail"))
    )
    assert normalized.status is GatekeeperStatus.LOW_CONFID
    assert normalized.reason_code is None
    assert (normalized.checked, normalized.passed, normalized.failed) == (3, 1, 2)
    assert len(normalized.checked_bindings) == 3


def test_fail_reject_is_rejected() -> None:
    normalized = normalize_gatekeeper_result(result("fail", "reject", entry(0, "fail")))
    assert normalized.status is GatekeeperStatus.REJECT
    assert normalized.reason_code is ReasonCode.GATEKEEPER_REJECTED
    assert (normalized.checked, normalized.passed, normalized.failed) == (1, 0, 1)
    assert normalized.checked_bindings[0].status is BindingCheckStatus.FAIL


def test_raising_gatekeeper_is_unavailable() -> None:
    normalized = gatekeeper_unavailable(TimeoutError("gatekeeper timed out"))
    assert normalized.status is GatekeeperStatus.REJECT
    assert normalized.reason_code is ReasonCode.GATEKEEPER_UNAVAILABLE
    assert normalized.problem == "TimeoutError: gatekeeper timed out"
    assert normalized.checked_bindings == ()


def test_unavailable_from_a_message_keeps_it() -> None:
    normalized = gatekeeper_unavailable("connection refused")
    assert normalized.reason_code is ReasonCode.GATEKEEPER_UNAVAILABLE
    assert normalized.problem == "connection refused"


def test_unavailable_survives_an_unprintable_exception() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    normalized = gatekeeper_unavailable(Unprintable())
    assert normalized.problem == "Unprintable: <unprintable>"


def test_unavailable_caps_and_cleans_the_problem() -> None:
    normalized = gatekeeper_unavailable(ValueError("x" * 5000 + "\ud800"))
    assert normalized.problem is not None
    assert len(normalized.problem) == 1000
    assert normalized.problem.endswith("…")
    assert gatekeeper_unavailable("bad \udfff").problem == "bad \ufffd"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (None, "$: expected an object"),
        ([], "$: expected an object"),
        ("pass", "$: expected an object"),
        ({}, "status: missing"),
        ({"status": None}, "status: missing"),
        ({"status": 1}, "status: expected a string"),
        ({"status": "passed"}, "status: expected one of pass, fail"),
        ({"status": ""}, "status: expected one of pass, fail"),
        ({"status": "pass", "level": 3}, "level: expected a string"),
        ({"status": "fail", "level": "low"}, "level: expected one of"),
        ({"status": "pass", "level": "maybe"}, "level: expected one of"),
        ({"status": "pass", "checked_bindings": {}}, "checked_bindings: expected an array"),
        ({"status": "pass", "checked_bindings": "[]"}, "checked_bindings: expected an array"),
    ],
)
def test_malformed_top_level_is_invalid(raw: object, problem: str) -> None:
    assert_invalid(normalize_gatekeeper_result(raw), problem)


@pytest.mark.parametrize("level", [None, "absent", "pass"])
def test_fail_without_a_failure_level_is_invalid(level: object) -> None:
    raw: dict[str, object] = {"status": "fail", "checked_bindings": [entry(0, "fail")]}
    if level != "absent":
        raw["level"] = level
    assert_invalid(normalize_gatekeeper_result(raw), "level")


@pytest.mark.parametrize("level", ["reject", "low_confid", " REJECT "])
def test_pass_with_a_failure_level_is_invalid(level: str) -> None:
    assert_invalid(normalize_gatekeeper_result(result("pass", level, entry(0))), "contradicts")


def test_pass_with_a_failed_binding_is_invalid() -> None:
    raw = result("pass", None, entry(0), entry(1, "fail"))
    assert_invalid(normalize_gatekeeper_result(raw), "checked_bindings[1]")


# --- malformed entries --------------------------------------------------------------

MALFORMED_ENTRIES: list[tuple[object, str]] = [
    ("not an object", "checked_bindings[1]: expected an object"),
    (None, "checked_bindings[1]: expected an object"),
    ([entry(1)], "checked_bindings[1]: expected an object"),
    (entry(1, claim_id=None), "checked_bindings[1].claim_id: missing"),
    ({k: v for k, v in entry(1).items() if k != "claim_id"}, "claim_id: missing"),
    (entry(1, claim_id=7), "checked_bindings[1].claim_id: expected a string"),
    (entry(1, claim_id=""), "checked_bindings[1].claim_id: expected a non-empty string"),
    (entry(1, source_invocation_id=["inv"]), "source_invocation_id: expected a string"),
    ({k: v for k, v in entry(1).items() if k != "tool_name"}, "tool_name: missing"),
    (entry(1, raw_path=b"$.a"), "checked_bindings[1].raw_path: expected a string"),
    (entry(1, raw_path="$.\ud800"), "raw_path: contains an unpaired surrogate"),
    ({k: v for k, v in entry(1).items() if k != "status"}, "checked_bindings[1].status: missing"),
    (entry(1, status="ok"), "checked_bindings[1].status: expected one of pass, fail"),
    ({**entry(1), "status": True}, "checked_bindings[1].status: expected a string"),
    (entry(1, matched_text=None), "checked_bindings[1].matched_text: missing"),
    (
        {k: v for k, v in entry(1).items() if k != "matched_text"},
        "checked_bindings[1].matched_text: missing",
    ),
    (entry(1, matched_text=""), "checked_bindings[1].matched_text: expected a non-empty string"),
    (entry(1, matched_text=3), "checked_bindings[1].matched_text: expected a string"),
    (entry(1, "fail", matched_text=3), "checked_bindings[1].matched_text: expected a string"),
    (entry(1, matched_text="x\udc00"), "matched_text: contains an unpaired surrogate"),
    (entry(1, reason=5), "checked_bindings[1].reason: expected a string"),
    (entry(1, "fail", reason={"code": 1}), "checked_bindings[1].reason: expected a string"),
    (entry(0), "checked_bindings[1]: duplicate key of checked_bindings[0]"),
]


@pytest.mark.parametrize(("bad", "problem"), MALFORMED_ENTRIES)
def test_malformed_entry_is_invalid(bad: object, problem: str) -> None:
    raw = result("fail", "low_confid", entry(0), bad)
    assert_invalid(normalize_gatekeeper_result(raw), problem)
    with pytest.raises(PayloadError) as caught:
        parse_gatekeeper_result(raw)
    assert problem in str(caught.value)


def test_keys_differing_in_case_or_space_are_not_duplicates() -> None:
    raw = result("pass", None, entry(0), entry(0, claim_id="C0"), entry(0, claim_id="c0 "))
    assert normalize_gatekeeper_result(raw).checked == 3


def test_failed_entry_needs_no_matched_text_or_reason() -> None:
    bare = {k: v for k, v in entry(1, "fail").items() if k not in ("matched_text", "reason")}
    normalized = normalize_gatekeeper_result(result("fail", "reject", bare))
    assert normalized.reason_code is ReasonCode.GATEKEEPER_REJECTED
    assert normalized.checked_bindings[0].matched_text is None
    assert normalized.checked_bindings[0].reason is None


def test_extra_keys_are_ignored() -> None:
    extra: dict[object, object] = {7: "x"}
    extra.update(entry(0), score=0.3)
    raw = result("pass", None, extra)
    raw["extra"] = {"anything": [1, 2]}
    raw[None] = "non-string key"  # type: ignore[index]
    assert normalize_gatekeeper_result(raw).status is GatekeeperStatus.PASS


def test_entry_strings_are_kept_exactly() -> None:
    raw = result("pass", None, entry(0, claim_id=" c0 ", matched_text="  spaced\t"))
    binding = normalize_gatekeeper_result(raw).checked_bindings[0]
    assert binding.claim_id == " c0 "
    assert binding.matched_text == "  spaced\t"


# --- case and whitespace ----------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "level", "expected"),
    [
        (" PASS ", None, GatekeeperStatus.PASS),
        ("Pass", "\tPASS\n", GatekeeperStatus.PASS),
        ("Fail", "LOW_CONFID", GatekeeperStatus.LOW_CONFID),
        ("\nFAIL", " Low_Confid ", GatekeeperStatus.LOW_CONFID),
        ("fail ", "REJECT", GatekeeperStatus.REJECT),
    ],
)
def test_status_and_level_ignore_case_and_whitespace(
    status: str, level: str | None, expected: GatekeeperStatus
) -> None:
    entries = [entry(0, " PASS ")] if expected is not GatekeeperStatus.REJECT else []
    assert normalize_gatekeeper_result(result(status, level, *entries)).status is expected


@pytest.mark.parametrize(("raw_status", "passed"), [(" PASS ", True), ("Fail", False)])
def test_entry_status_ignores_case_and_whitespace(raw_status: str, passed: bool) -> None:
    raw = result("fail", "low_confid", entry(0), entry(1, raw_status))
    normalized = normalize_gatekeeper_result(raw)
    assert normalized.status is GatekeeperStatus.LOW_CONFID
    assert normalized.checked_bindings[1].passed is passed


def test_parse_returns_stripped_lower_case_words() -> None:
    parsed = parse_gatekeeper_result(result(" FAIL ", " Low_Confid", entry(0, "PASS")))
    assert (parsed.status, parsed.level) == ("fail", "low_confid")
    assert parsed.checked_bindings[0].status is BindingCheckStatus.PASS


# --- reason codes (audit only) --------------------------------------------------


def test_reason_codes_are_kept_for_audit() -> None:
    raw = result("fail", "reject", entry(0, "fail"))
    raw["reason_codes"] = ["EXCERPT_MISMATCH", "TOOL_MISMATCH"]
    assert parse_gatekeeper_result(raw).reason_codes == ("EXCERPT_MISMATCH", "TOOL_MISMATCH")


@pytest.mark.parametrize(
    ("codes", "kept"),
    [
        ("EXCERPT_MISMATCH", ()),
        ({"a": 1}, ()),
        (None, ()),
        (["A", 3, None, "B\ud800", "C"], ("A", "C")),
    ],
)
def test_malformed_reason_codes_never_change_the_verdict(
    codes: object, kept: tuple[str, ...]
) -> None:
    raw = result("pass", None, entry(0))
    raw["reason_codes"] = codes
    assert parse_gatekeeper_result(raw).reason_codes == kept
    assert normalize_gatekeeper_result(raw).status is GatekeeperStatus.PASS


# --- hostile inputs -----------------------------------------------------------------


def test_self_referencing_dict_is_invalid_not_a_crash() -> None:
    raw: dict[str, Any] = {"status": "pass"}
    raw["checked_bindings"] = [raw]
    raw["level"] = raw
    assert_invalid(normalize_gatekeeper_result(raw))
    loop: dict[str, Any] = {"status": "fail", "level": "reject"}
    loop["checked_bindings"] = [loop]
    assert_invalid(normalize_gatekeeper_result(loop), "checked_bindings[0].claim_id: missing")


def test_self_referencing_list_is_invalid_not_a_crash() -> None:
    entries: list[object] = []
    entries.append(entries)
    assert_invalid(normalize_gatekeeper_result(result("pass", None, *entries)))


def test_tuples_count_as_arrays() -> None:
    raw = {"status": "pass", "checked_bindings": (entry(0),), "reason_codes": ("X",)}
    normalized = normalize_gatekeeper_result(raw)
    assert normalized.status is GatekeeperStatus.PASS
    assert normalized.checked == 1


class HostileMapping(Mapping[object, object]):
    def __getitem__(self, key: object) -> object:
        raise RuntimeError("no items for you")

    def __iter__(self) -> Iterator[object]:
        raise RuntimeError("no keys either")

    def __len__(self) -> int:
        return 1


def test_hostile_mapping_is_invalid() -> None:
    assert_invalid(normalize_gatekeeper_result(HostileMapping()), "unreadable")
    with pytest.raises(PayloadError):
        parse_gatekeeper_result(HostileMapping())
    assert_invalid(normalize_gatekeeper_result(result("pass", None, HostileMapping())))


def test_huge_result_is_normalized() -> None:
    entries = [entry(i) for i in range(20_000)]
    normalized = normalize_gatekeeper_result(result("pass", None, *entries))
    assert normalized.checked == normalized.passed == 20_000
    big = normalize_gatekeeper_result(result("pass", None, entry(0, matched_text="x" * 5_000_000)))
    assert big.status is GatekeeperStatus.PASS


def test_deeply_nested_extra_value_is_ignored() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(50_000):
        child: list[object] = []
        node.append(child)
        node = child
    raw = result("pass", None, {**entry(0), "extra": deep})
    raw["extra"] = deep
    assert normalize_gatekeeper_result(raw).status is GatekeeperStatus.PASS


def test_normalize_does_not_mutate_its_input() -> None:
    raw = result(" Fail ", "LOW_CONFID", entry(0), entry(1, "fail"))
    before = copy.deepcopy(raw)
    normalize_gatekeeper_result(raw)
    assert raw == before


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["pass", "fail", " PASS", "low_confid", "reject", "Fail"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "status",
                    "level",
                    "checked_bindings",
                    "claim_id",
                    "source_invocation_id",
                    "tool_name",
                    "raw_path",
                    "matched_text",
                    "reason",
                    "reason_codes",
                ]
            )
            | st.text(max_size=3),
            children,
            max_size=8,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_value_normalizes_without_raising(raw: object) -> None:
    normalized = normalize_gatekeeper_result(raw)
    assert isinstance(normalized.status, GatekeeperStatus)
    assert (normalized.reason_code is None) == (normalized.status is not GatekeeperStatus.REJECT)
    assert normalized.checked == normalized.passed + normalized.failed
    if normalized.reason_code is INVALID:
        assert normalized.checked_bindings == ()


ENTRY = st.fixed_dictionaries(
    {
        "claim_id": st.sampled_from(["c1", "c2"]),
        "source_invocation_id": st.just("inv-1"),
        "tool_name": st.just("t"),
        "raw_path": st.sampled_from(["$.a", "$.b"]),
        "status": st.sampled_from(["pass", "fail", " PASS ", "Fail"]),
        "matched_text": st.sampled_from([None, "", "text"]),
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["pass", "fail", "PASS ", "other"]),
    st.sampled_from([None, "pass", "low_confid", "reject", "REJECT", "bogus"]),
    st.lists(ENTRY, max_size=4),
)
def test_normalized_status_agrees_with_the_table(
    status: str, level: str | None, entries: list[dict[str, object]]
) -> None:
    normalized = normalize_gatekeeper_result(result(status, level, *entries))
    word, lvl = status.strip().lower(), (level or "").strip().lower() or None
    statuses = [str(e["status"]).strip().lower() for e in entries]
    keys = [(e["claim_id"], e["raw_path"]) for e in entries]
    well_formed = (
        word in ("pass", "fail")
        and lvl in (None, "pass", "low_confid", "reject")
        and len(set(keys)) == len(keys)
        and all(s == "fail" or e["matched_text"] for s, e in zip(statuses, entries, strict=True))
    )
    if not well_formed:
        assert normalized.reason_code is INVALID
    elif word == "pass":
        ok = lvl in (None, "pass") and "fail" not in statuses
        assert normalized.status is (GatekeeperStatus.PASS if ok else GatekeeperStatus.REJECT)
    elif lvl == "low_confid":
        assert normalized.status is GatekeeperStatus.LOW_CONFID
    elif lvl == "reject":
        assert normalized.reason_code is ReasonCode.GATEKEEPER_REJECTED
    else:
        assert normalized.reason_code is INVALID
