"""Tests of the fallback renderers and safe item rendering (spec §6.8, §10 invariant 2)."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.config import DiagnosisConfig
from diagnosis_core._chat.enums import AnswerMode, EvidenceStatus, GatekeeperStatus, ReasonCode
from diagnosis_core._chat.payloads import (
    Claim,
    EvidenceBinding,
    ExecutorEvidence,
    Hypothesis,
    ToolTraceEntry,
)
from diagnosis_core._chat.projection import AllowedClaim
from diagnosis_core._chat.rendering import (
    _TEMPLATES,
    ToolUsage,
    is_valid_tool_name,
    render_post_verification_fallback,
    render_pre_verification_fallback,
    summarize_tool_usage,
)
from diagnosis_core._kernel.enums import Locale
from diagnosis_core._kernel.machine.text import sanitize_item

EN = DiagnosisConfig()
ZH = DiagnosisConfig(locale="zh-CN")
CAP = 500

# A "&" not starting one of the three entities we emit.
BARE_AMPERSAND = re.compile(r"&(?!amp;|lt;|gt;)")

any_text = st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=300)


def pre(
    *,
    tool_trace: tuple[ToolTraceEntry, ...] = (),
    run_id: str = "run-1",
    config: DiagnosisConfig = EN,
    reason_code: ReasonCode = ReasonCode.GATEKEEPER_REJECTED,
    gatekeeper_status: GatekeeperStatus | None = GatekeeperStatus.REJECT,
    binding_counts: tuple[int, int, int] | None = (3, 1, 2),
) -> str:
    return render_pre_verification_fallback(
        reason_code=reason_code,
        run_id=run_id,
        gatekeeper_status=gatekeeper_status,
        binding_counts=binding_counts,
        tool_trace=tool_trace,
        config=config,
    )


def post(
    *,
    run_id: str = "run-1",
    config: DiagnosisConfig = EN,
    answer_mode: AnswerMode = AnswerMode.LOW_CONFIDENCE,
    allowed_claims: tuple[AllowedClaim, ...] = (AllowedClaim("c1", "Gateway times out"),),
    missing_info: tuple[str, ...] = ("pool metrics",),
    recommended_actions: tuple[str, ...] = ("check pool size",),
) -> str:
    return render_post_verification_fallback(
        run_id=run_id,
        answer_mode=answer_mode,
        allowed_claims=allowed_claims,
        missing_info=missing_info,
        recommended_actions=recommended_actions,
        config=config,
    )


def trace_line(text: str) -> str:
    return text.splitlines()[-1]


# --- sanitize_item ----------------------------------------------------------------


@pytest.mark.parametrize(
    "line_break", ["\n", "\r", "\r\n", "\t", "\v", "\f", "\x85", "\u2028", "\u2029"]
)
def test_line_break_inside_item_becomes_one_space(line_break: str) -> None:
    assert sanitize_item(f"a{line_break}b", CAP) == "a b"


@pytest.mark.parametrize(
    "control", ["\x00", "\x07", "\x1b", "\x7f", "\x9b", "\u200b", "\u202e", "\ufeff"]
)
def test_other_control_and_format_characters_are_removed(control: str) -> None:
    assert sanitize_item(f"a{control}b", CAP) == "ab"


def test_lone_surrogate_is_replaced_and_result_encodes() -> None:
    result = sanitize_item("a\ud800b", CAP)
    assert result == "a\ufffdb"
    result.encode("utf-8")


def test_ampersand_and_angle_brackets_are_html_escaped() -> None:
    assert sanitize_item("a & <b>c</b>", CAP) == "a &amp; &lt;b&gt;c&lt;\\/b&gt;"


def test_existing_entity_is_escaped_again() -> None:
    assert sanitize_item("x &lt;script&gt;", CAP) == "x &amp;lt\\;script&amp;gt\\;"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("# title", "\\# title"),
        ("- item", "\\- item"),
        ("* item", "\\* item"),
        ("+ item", "\\+ item"),
        ("| a | b |", "\\| a \\| b \\|"),
        ("```python", "\\`\\`\\`python"),
        ("~~~", "\\~\\~\\~"),
        ("___", "\\_\\_\\_"),
        ("===", "\\=\\=\\="),
        ("[a]: http://x", "\\[a\\]\\: http\\:\\/\\/x"),
        ("1. first", "1\\. first"),
        ("12) twelfth", "12\\) twelfth"),
        ("> quote", "&gt; quote"),
    ],
)
def test_line_start_markdown_marker_is_neutralised(raw: str, expected: str) -> None:
    assert sanitize_item(raw, CAP) == expected


@pytest.mark.parametrize("raw", ["2024 was fine", "3 retries", "1", "42x no"])
def test_digits_not_followed_by_a_list_delimiter_are_untouched(raw: str) -> None:
    assert sanitize_item(raw, CAP) == raw


def test_markdown_marker_after_the_start_is_escaped_too() -> None:
    # Inline constructs (links, images, emphasis, autolinks) start anywhere (§6.8 v1.1).
    assert sanitize_item("a # b - c ![i](u) *e*", CAP) == (
        "a \\# b \\- c \\!\\[i\\]\\(u\\) \\*e\\*"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("www.x.com", "www\\.x\\.com"),
        ("https://a.example/p?q=1", "https\\:\\/\\/a\\.example\\/p\\?q\\=1"),
        ("user@example.com", "user\u2060\\@example\\.com"),
        ("x\\y", "x\\\\y"),
    ],
)
def test_link_triggers_are_broken(raw: str, expected: str) -> None:
    assert sanitize_item(raw, CAP) == expected


@pytest.mark.parametrize("raw", ["GATEKEEPER_REJECTED", "run-1", "a_b-c_d", "2024-01-01"])
def test_underscore_and_hyphen_inside_a_word_stay_bare(raw: str) -> None:
    assert sanitize_item(raw, CAP) == raw


@pytest.mark.parametrize(("raw", "expected"), [("_a", "\\_a"), ("a-", "a\\-"), ("a -b", "a \\-b"),
                                               ("é_a", "é\\_a")])
def test_underscore_and_hyphen_at_a_word_edge_are_escaped(raw: str, expected: str) -> None:
    assert sanitize_item(raw, CAP) == expected


def test_leading_indent_is_stripped_before_neutralising() -> None:
    assert sanitize_item("    # code?", CAP) == "\\# code\\?"
    assert sanitize_item("\n\t- item  ", CAP) == "\\- item"


def test_line_break_cannot_start_a_new_markdown_line() -> None:
    assert sanitize_item("ok\n# injected", CAP) == "ok \\# injected"


def test_cap_is_applied_before_escaping() -> None:
    assert sanitize_item("&" * 600, 500) == "&amp;" * 499 + "…"


def test_text_of_exactly_the_cap_is_not_cut() -> None:
    assert sanitize_item("a" * 20, 20) == "a" * 20


def test_cap_counts_cleaned_text() -> None:
    # 20 visible characters plus removed controls and surrounding whitespace: not cut.
    assert sanitize_item("  " + "a\u200b" * 20 + "  \n", 20) == "a" * 20


def test_long_text_is_cut_to_cap_minus_one_plus_ellipsis() -> None:
    result = sanitize_item("abcdefghijklmnopqrstuvwxyz", 20)
    assert result == "abcdefghijklmnopqrs…"
    assert len(result) == 20


def test_max_chars_below_one_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        sanitize_item("x", 0)


@settings(max_examples=200)
@given(text=any_text, cap=st.integers(min_value=1, max_value=50))
def test_sanitize_never_raises_and_output_is_safe(text: str, cap: int) -> None:
    result = sanitize_item(text, cap)
    result.encode("utf-8")
    assert "<" not in result and ">" not in result
    assert not BARE_AMPERSAND.search(result)
    assert len(result.splitlines()) <= 1
    assert result == result.strip()


@settings(max_examples=200)
@given(
    text=st.text(alphabet=st.characters(blacklist_characters="\\"), max_size=300),
    cap=st.integers(min_value=1, max_value=50),
)
def test_cap_bounds_the_length_before_escaping(text: str, cap: int) -> None:
    result = sanitize_item(text, cap).replace("\\", "").replace("\u2060", "")
    unescaped = result.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert len(unescaped) <= cap


# --- tool names and usage -----------------------------------------------------------


@pytest.mark.parametrize("name", ["query_logs", "a", "x" * 64, "ns:tool.v2-beta", "0"])
def test_valid_tool_names(name: str) -> None:
    assert is_valid_tool_name(name)


INVALID_TOOL_NAMES = [
    "",
    "x" * 65,
    "query logs",
    "<script>",
    "quéry",
    "query\nlogs",
    "query_logs\n",
    "٣",  # Unicode digit: `\d` would accept it
    "ｑｕｅｒｙ",
]


@pytest.mark.parametrize("name", INVALID_TOOL_NAMES)
def test_invalid_tool_names_are_rejected(name: str) -> None:
    assert not is_valid_tool_name(name)


def test_tool_usage_counts_calls_and_failures_sorted_with_unnamed_last() -> None:
    trace = [
        ToolTraceEntry("query_metrics", True),
        ToolTraceEntry("bad name", False),
        ToolTraceEntry("query_logs", True),
        ToolTraceEntry("query_logs", False),
        ToolTraceEntry("<x>", True),
    ]
    assert summarize_tool_usage(trace) == (
        ToolUsage("query_logs", 2, 1),
        ToolUsage("query_metrics", 1, 0),
        ToolUsage(None, 2, 1),
    )


def test_tool_usage_of_empty_trace_is_empty() -> None:
    assert summarize_tool_usage(()) == ()


# --- pre-verification fallback --------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "placeholder"), [(EN, "(unnamed tool)"), (ZH, "（未命名工具）")]
)
@pytest.mark.parametrize("name", INVALID_TOOL_NAMES)
def test_invalid_tool_name_is_shown_as_unnamed(
    name: str, config: DiagnosisConfig, placeholder: str
) -> None:
    text = pre(tool_trace=(ToolTraceEntry(name, False),), config=config)
    assert placeholder in text
    if name:
        assert name not in text


def test_valid_tool_name_renders_unchanged_with_counts() -> None:
    trace = (ToolTraceEntry("query_logs", True), ToolTraceEntry("query_logs", False))
    assert "- query_logs: calls 2, failed 1" in pre(tool_trace=trace)
    assert "- query_logs：调用 2 次，失败 1 次" in pre(tool_trace=trace, config=ZH)


@pytest.mark.parametrize("config", [EN, ZH])
def test_pre_fallback_run_id_appears_sanitized_in_trace_line(config: DiagnosisConfig) -> None:
    assert "run-42" in trace_line(pre(run_id="run-42", config=config))
    hostile = "<b>r&1</b>\n# x"
    assert sanitize_item(hostile, CAP) in trace_line(pre(run_id=hostile, config=config))


@pytest.mark.parametrize("config", [EN, ZH])
def test_run_id_that_sanitizes_to_nothing_gets_a_placeholder(config: DiagnosisConfig) -> None:
    line = trace_line(pre(run_id="\u200b", config=config))
    assert _TEMPLATES[config.locale].shared.unknown_run in line


def test_pre_fallback_english() -> None:
    text = pre(tool_trace=(ToolTraceEntry("query_logs", True),))
    assert text.startswith("## Diagnosis could not be completed\n")
    assert "The evidence check rejected the collected evidence." in text
    assert "- Reason code: GATEKEEPER_REJECTED" in text
    assert "- Evidence check status: REJECT" in text
    assert "- Evidence bindings: 3 checked, 1 passed, 2 failed" in text
    assert trace_line(text) == "Inspect the trace of run run-1 for details."


def test_pre_fallback_chinese() -> None:
    text = pre(config=ZH)
    assert text.startswith("## 诊断未能完成\n")
    assert "证据校验拒绝了收集到的证据。" in text
    assert "- 原因代码：GATEKEEPER_REJECTED" in text
    assert "- 证据绑定：已检查 3，通过 1，失败 2" in text
    assert "- 未报告任何工具调用。" in text
    assert trace_line(text) == "请查看运行 run-1 的追踪记录以了解详情。"


def test_pre_fallback_omits_absent_gatekeeper_status_and_counts() -> None:
    text = pre(reason_code=ReasonCode.PLANNER_FAILED, gatekeeper_status=None, binding_counts=None)
    assert "Evidence check status" not in text
    assert "Evidence bindings" not in text
    assert "- No tool calls were reported." in text


@pytest.mark.parametrize("locale", list(Locale))
def test_every_reason_code_and_answer_mode_has_a_sentence(locale: Locale) -> None:
    templates = _TEMPLATES[locale]
    assert set(templates.reasons) == set(ReasonCode)
    assert set(templates.answer_modes) == set(AnswerMode)
    assert all(templates.reasons.values()) and all(templates.answer_modes.values())


@pytest.mark.parametrize("reason_code", list(ReasonCode))
@pytest.mark.parametrize("config", [EN, ZH])
def test_pre_fallback_renders_every_reason_code(
    reason_code: ReasonCode, config: DiagnosisConfig
) -> None:
    text = pre(reason_code=reason_code, config=config)
    assert _TEMPLATES[config.locale].reasons[reason_code] in text


def test_pre_fallback_signature_cannot_carry_executor_claims() -> None:
    signature = inspect.signature(render_pre_verification_fallback)
    assert set(signature.parameters) == {
        "reason_code",
        "run_id",
        "gatekeeper_status",
        "binding_counts",
        "tool_trace",
        "config",
        "earlier_round_verified",
    }
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in signature.parameters.values())
    # Exact types: the only free text is the run id, the rest is enums, ints and
    # ToolTraceEntry (whose names are filtered); nothing can hold a claim.
    assert typing.get_type_hints(render_pre_verification_fallback) == {
        "reason_code": ReasonCode,
        "run_id": str,
        "gatekeeper_status": GatekeeperStatus | None,
        "binding_counts": tuple[int, int, int] | None,
        "tool_trace": Sequence[ToolTraceEntry],
        "config": DiagnosisConfig,
        "earlier_round_verified": bool,
        "return": str,
    }


def test_pre_fallback_never_shows_executor_text_planted_in_the_trace() -> None:
    canary = "CANARY-7f3e"
    evidence = ExecutorEvidence(
        evidence_status=EvidenceStatus.EVIDENCE_FOUND,
        claims=(
            Claim(
                f"c-{canary}",
                f"claim {canary}",
                (EvidenceBinding(f"inv-{canary}", "query_logs", "$.a", f"excerpt {canary}"),),
            ),
        ),
        hypotheses=(Hypothesis(f"hypothesis {canary}", canary),),
        tool_trace_summary=(
            ToolTraceEntry("query_logs", True, invocation_id=f"inv-{canary}"),
            ToolTraceEntry(f"tool {canary}", False),
        ),
    )
    for config in (EN, ZH):
        text = pre(tool_trace=evidence.tool_trace_summary, config=config)
        assert canary not in text
        assert "query_logs" in text


@settings(max_examples=200)
@given(
    names=st.lists(any_text, max_size=5),
    run_id=any_text,
    locale=st.sampled_from(list(Locale)),
)
def test_pre_fallback_output_is_safe_for_arbitrary_names_and_run_ids(
    names: list[str], run_id: str, locale: Locale
) -> None:
    config = DiagnosisConfig(max_item_chars=20, locale=locale)
    trace = tuple(ToolTraceEntry(name, index % 2 == 0) for index, name in enumerate(names))
    text = pre(tool_trace=trace, run_id=run_id, config=config)
    text.encode("utf-8")
    assert text.strip()
    assert "<" not in text and ">" not in text
    assert not BARE_AMPERSAND.search(text)
    for name in names:
        if not is_valid_tool_name(name) and len(name) > 3:
            assert f"- {name}" not in text


# --- post-verification fallback -------------------------------------------------------


def test_post_fallback_english() -> None:
    text = post()
    assert text.startswith("## Diagnosis summary (fallback)\n")
    assert "- Answer mode: LOW_CONFIDENCE — low confidence;" in text
    assert "- Gateway times out" in text
    assert "- pool metrics" in text
    assert "- check pool size" in text
    assert trace_line(text) == "Inspect the trace of run run-1 for details."


def test_post_fallback_chinese() -> None:
    text = post(config=ZH)
    assert text.startswith("## 诊断摘要（兜底回答）\n")
    assert "- 回答模式：LOW_CONFIDENCE — 低置信度" in text
    assert "### 已验证的结论" in text
    assert "- Gateway times out" in text
    assert trace_line(text) == "请查看运行 run-1 的追踪记录以了解详情。"


@pytest.mark.parametrize("mode", list(AnswerMode))
@pytest.mark.parametrize("config", [EN, ZH])
def test_post_fallback_states_every_answer_mode(mode: AnswerMode, config: DiagnosisConfig) -> None:
    text = post(answer_mode=mode, config=config)
    assert mode.value in text
    assert _TEMPLATES[config.locale].answer_modes[mode] in text


@pytest.mark.parametrize(("config", "none_line"), [(EN, "- None."), (ZH, "- 无。")])
def test_post_fallback_empty_sections_read_none(config: DiagnosisConfig, none_line: str) -> None:
    text = post(config=config, allowed_claims=(), missing_info=(), recommended_actions=("\u200b",))
    assert text.count(none_line) == 3


def test_post_fallback_shows_claim_text_but_not_claim_id() -> None:
    text = post(allowed_claims=(AllowedClaim("claim-id-xyz", "verified text"),))
    assert "- verified text" in text
    assert "claim-id-xyz" not in text


def test_post_fallback_items_are_sanitized() -> None:
    text = post(
        allowed_claims=(AllowedClaim("c1", "# <b>bold</b>\nline"),),
        missing_info=("1. first",),
        recommended_actions=("x" * 30,),
        config=DiagnosisConfig(max_item_chars=20),
    )
    assert "- \\# &lt;b&gt;bold&lt;\\/b&gt; line" in text
    assert "- 1\\. first" in text
    assert "- " + "x" * 19 + "…" in text


@settings(max_examples=200)
@given(
    items=st.lists(any_text, max_size=4),
    run_id=any_text,
    locale=st.sampled_from(list(Locale)),
    mode=st.sampled_from(list(AnswerMode)),
)
def test_post_fallback_never_raises_and_output_is_safe(
    items: list[str], run_id: str, locale: Locale, mode: AnswerMode
) -> None:
    text = post(
        run_id=run_id,
        answer_mode=mode,
        allowed_claims=tuple(AllowedClaim(f"c{i}", item) for i, item in enumerate(items)),
        missing_info=tuple(items),
        recommended_actions=tuple(reversed(items)),
        config=DiagnosisConfig(max_item_chars=20, locale=locale),
    )
    text.encode("utf-8")
    assert text.strip()
    assert "<" not in text and ">" not in text
    assert not BARE_AMPERSAND.search(text)


PRE_WITH_TOOLS = """## Diagnosis could not be completed

The evidence check rejected the collected evidence.

- Reason code: GATEKEEPER_REJECTED
- Evidence check status: REJECT
- Evidence bindings: 3 checked, 1 passed, 2 failed

### Tool calls

- a: calls 1, failed 1
- b: calls 1, failed 0
- (unnamed tool): calls 1, failed 0

No finding was verified, so this answer contains no diagnosis.

Inspect the trace of run run-1 for details."""

POST_LOW_CONFIDENCE = """## Diagnosis summary (fallback)

The final answer could not be written, so the verified material is listed below.

- Answer mode: LOW_CONFIDENCE — low confidence; the findings below are only partly \
supported by evidence.

### Verified findings

- Gateway times out

### Missing information

- pool metrics

### Recommended actions

- check pool size

Inspect the trace of run run-1 for details."""


def test_renderers_are_deterministic() -> None:
    """The same text for the same facts, whatever order the tools were called in.

    Pinned to the text itself (spec §8's English wording, tools by name, the
    unnamed tool last), so two equally wrong renderings cannot pass.
    """
    trace = (ToolTraceEntry("b", True), ToolTraceEntry("a", False), ToolTraceEntry("", True))
    assert pre(tool_trace=trace) == PRE_WITH_TOOLS
    assert pre(tool_trace=tuple(reversed(trace))) == PRE_WITH_TOOLS
    assert post() == POST_LOW_CONFIDENCE
    assert post() == POST_LOW_CONFIDENCE  # a second call: nothing carried over
