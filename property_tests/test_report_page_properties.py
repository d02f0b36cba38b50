"""Properties of the report pages (spec §16): safe file names, inert text, every reason told.

The oracles are the file system's rules and HTML's, written out here: a name
is one plain component under its kind's folder, short, never hidden; no two
ids (nor the same letters in another case) share a name; a page holds no
markup, control or surrogate it was not written with, whatever the ids and
texts of the run.
"""

from __future__ import annotations

import re
import string

from hypothesis import given
from hypothesis import strategies as st

from diagnosis_core.stores import (
    RunStory,
    SessionReport,
    failure_reasons,
    report_page_name,
    run_story_html,
    session_report_html,
)
from diagnosis_core.stores._reports import (
    AgentStep,
    EffectTiming,
    FeedbackItem,
    StoryToolCall,
    StoryToolError,
)

# Any code point, lone surrogates included (the recorder accepts them in a tool name).
any_text = st.text(st.characters(exclude_categories=()),
                   max_size=60)
ids = any_text | st.text(alphabet="./\\-_ Aa", max_size=12)

_SAFE = set(string.ascii_letters + string.digits + "_-")


@given(st.sampled_from(["sessions", "runs"]), ids)
def test_a_page_name_is_one_short_plain_file_under_its_folder(kind: str, ident: str) -> None:
    name = report_page_name(kind, ident)
    folder, _, file = name.partition("/")
    assert folder == kind and "/" not in file
    stem, dot, suffix = file.rpartition(".")
    assert dot and suffix == "html" and stem and not file.startswith((".", "-"))
    assert set(stem) <= _SAFE and len(file) <= 62


@given(ids, ids)
def test_two_ids_never_share_a_page_in_any_case(first: str, second: str) -> None:
    if first != second:
        assert (report_page_name("runs", first).lower()
                != report_page_name("runs", second).lower())


def _unsafe(page: str) -> list[str]:
    """Characters a page must not hold as written: controls (but a line break and a tab),
    surrogates, bidi controls."""
    return [char for char in page
            if (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F
            or 0xD800 <= ord(char) <= 0xDFFF or char in "\u202a\u202b\u202c\u202d\u202e"
            "\u2066\u2067\u2068\u2069\u200e\u200f\u061c"]


@given(ids, ids, any_text, any_text, any_text)
def test_a_page_is_inert_whatever_the_run_holds(
    run_id: str, session_id: str, tool: str, answer: str, message: str
) -> None:
    story = RunStory(
        run_id=run_id, session_id=session_id, workflow="chat", created_at=0.0,
        status="complete",
        effects=(EffectTiming(1, "executor", 1, 1, "finished", 2.5),),
        tool_invocations=(StoryToolCall(message, tool, False, None, None,
                                   StoryToolError(tool, message), 1.0),),
        question=answer,
        agent_steps=(AgentStep(1, "executor", 1, 1, "INVALID_OUTPUT", None, message),),
        outcome="ANSWERED", answer=answer,
        feedback=(FeedbackItem(1, message, 1, 0.0),),
    )
    for page in (run_story_html(story, generated_at=0.0),
                 session_report_html(SessionReport(session_id=session_id, runs=(story,)))):
        page.encode("utf-8")
        assert _unsafe(page) == []
        # every tag on the page is one the renderer writes, never one from the run
        tags = set(re.findall(r"<(/?[a-zA-Z][a-zA-Z0-9]*)", page))
        assert tags <= {
            "html", "head", "meta", "title", "style", "body", "nav", "a", "h1", "h2", "h3",
            "p", "div", "table", "thead", "tbody", "tr", "th", "td", "span", "ul", "li",
            "strong", "pre", "figure", "figcaption", "svg", "rect", "line", "details",
            "summary", "br",
        } | {"/" + tag for tag in ("html", "head", "title", "style", "body", "nav", "a",
                                   "h1", "h2", "h3", "p", "div", "table", "thead", "tbody",
                                   "tr", "th", "td", "span", "ul", "li", "strong", "pre",
                                   "figure", "figcaption", "svg", "rect", "line", "details",
                                   "summary")}


@given(st.lists(st.one_of(st.none(), any_text), max_size=6),
       st.lists(st.tuples(st.booleans(), any_text), max_size=4))
def test_every_step_message_and_tool_error_is_a_failure_reason_in_order(
    messages: list[str | None], tools: list[tuple[bool, str]]
) -> None:
    steps = tuple(AgentStep(seq, "executor", 1, seq, "INVALID_OUTPUT", None, message)
                  for seq, message in enumerate(messages, start=1))
    calls = tuple(StoryToolCall(f"inv-{index}", "query", ok, None, None,
                           None if ok else StoryToolError("Boom", text), None)
                  for index, (ok, text) in enumerate(tools))
    story = RunStory(run_id="r", session_id="s", workflow="chat", created_at=0.0,
                     status="complete", agent_steps=steps, tool_invocations=calls)
    expected = [f"executor (seq {seq}, INVALID_OUTPUT): {message}"
                for seq, message in enumerate(messages, start=1) if message]
    expected += [f"tool query (inv-{index}): Boom: {text}"
                 for index, (ok, text) in enumerate(tools) if not ok]
    assert failure_reasons(story) == expected
