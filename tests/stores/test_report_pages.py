"""The report an operator can act on (spec §16): failure reasons everywhere, linked pages.

The oracle of a failure reason is the run's own trace report, built from an
uninterrupted run without a store: every event's ``error`` must reach
``sessions show`` (text and JSON), the ``runs resume`` table and the pages.
The pages are checked as files (every link leads to a page written beside
it, every stored string inert) and in headless Chromium (every text of a
chart inside its chart's box, no console error, no request) — the latter in
``test_fleet_report.py`` and here, through ``chromium_support``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest
from chromium_support import Browser, chromium
from store_support import chat_example_docs, load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core import from_wire, to_wire
from diagnosis_core.cli import main
from diagnosis_core.stores import (
    FleetReport,
    RunStory,
    SessionReport,
    failure_reasons,
    fleet_report,
    fleet_report_html,
    open_store,
    record_feedback,
    report_page_name,
    run_story_html,
    session_report,
    session_report_html,
)
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._reports import StoryToolCall, StoryToolError
from diagnosis_core.tools import ToolRecorder

LONG_TOOL = "query_" + "cluster_wide_latency_histogram_" * 5 + "v2"
HOSTILE_SESSION = "ops <b>&amp;</b> /../../etc/passwd " + "s" * 150
LONG_RUN = "run-" + "0123456789abcdef" * 12


def _with_long_tool(effects: dc.Effects, recorder: ToolRecorder) -> dc.Effects:
    """The recorded tools of ``with_tools`` and one more with a long name, before each executor."""
    import attrs

    tool = recorder.wrap(LONG_TOOL, lambda service: {"p99": [1, 2, 3], "service": service})
    base = with_tools(effects, recorder)

    def run_tools(input: str, config: dc.RunConfig, /) -> str:
        tool("pay-svc")
        return base.executor(input, config)

    return attrs.evolve(base, executor=run_tools)


def _fill(store: StoreBase) -> dict[str, dc.DiagnosisState]:
    """Every chat example (one session each, tools recorded), an AIOps run, an unfinished run,
    a run with hostile long ids, an unreadable run; the chat states by run id."""
    from diagnosis_core._aiops.replay import aiops_scenario_effects, aiops_scenario_request
    from diagnosis_core.aiops import load_aiops_scenario, run_aiops

    states = {}
    for index, (name, doc) in enumerate(chat_example_docs()):
        run_id = f"{LONG_RUN if index == 0 else 'pages'}-{index}-{name}"
        session = HOSTILE_SESSION if index < 2 else f"session-{name}"
        request, effects = scenario_of(with_ids(doc, run_id=run_id, session_id=session))
        recorder = ToolRecorder()
        states[run_id] = dc.run_diagnosis(request, _with_long_tool(effects, recorder),
                                          store=store, tools=recorder)
    record_feedback(store, _long_run(states), 2, "<script>alert(1)</script> wrong \u202e answer")
    doc = load_example("aiops_payload_targeted")
    doc["run"] = {**doc.get("run", {}), "run_id": "pages-aiops", "session_id": "ops"}
    scenario = load_aiops_scenario(doc)
    run_aiops(aiops_scenario_request(scenario), aiops_scenario_effects(scenario), store=store)
    request, _ = scenario_of(with_ids(load_example("payment_timeout"), run_id="pages-unfinished",
                                      session_id="ops"))
    with store.claim("pages-unfinished") as claim:
        store.begin(claim, dcj.Journal(request))
    request, effects = scenario_of(with_ids(load_example("payment_timeout"),
                                            run_id="pages-unreadable", session_id="ops"))
    dc.run_diagnosis(request, effects, store=store)
    return states


def _long_run(runs: Any) -> str:
    return next(run_id for run_id in runs if run_id.startswith(LONG_RUN))


def _break(path: Path, run_id: str) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE diagnosis_runs SET payload = 'sealed:aesgcm:AAAA' WHERE run_id = ?",
                   (run_id,))


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dc.DiagnosisState]]:
    path = tmp_path_factory.mktemp("pages") / "runs.db"
    store = open_store(f"sqlite:///{path}")
    states = _fill(store)
    store.close()
    _break(path, "pages-unreadable")
    return f"sqlite:///{path}", states


def _trace_errors(state: dc.DiagnosisState) -> list[str]:
    return [event.details.error for event in dc.build_trace_report(state).events
            if event.details.error is not None]


def _stories(url: str) -> dict[str, RunStory]:
    store = open_store(url)
    try:
        sessions = {summary.session_id for summary in store.runs()}
        return {story.run_id: story for session in sorted(sessions)
                for story in session_report(store, session).runs}
    finally:
        store.close()


# --- failure reasons ----------------------------------------------------------------------


def test_every_trace_message_is_a_failure_reason_of_its_run(
    filled: tuple[str, dict[str, dc.DiagnosisState]],
) -> None:
    url, states = filled
    stories = _stories(url)
    seen_errors = 0
    for run_id, state in states.items():
        story = stories[run_id]
        reasons = failure_reasons(story)
        errors = _trace_errors(state)
        seen_errors += len(errors)
        for error in errors:
            assert any(reason.endswith(f": {error}") for reason in reasons), (run_id, error)
        assert [step.message for step in story.agent_steps if step.message] == errors
        # the failing tool's error is a reason of every run that called it
        assert any("RuntimeError: metrics backend down for pay-svc" in reason
                   for reason in reasons)
    assert seen_errors >= 3  # the bundled examples do fail: a composer, a gatekeeper
    forged = next(story for run_id, story in stories.items() if "forged" in run_id)
    assert ("gatekeeper round 1: claim c1: INVOCATION_NOT_FOUND (query_metrics inv-404)"
            in failure_reasons(forged))
    assert failure_reasons(stories["pages-unfinished"]) == [
        f"not finished: {stories['pages-unfinished'].next_call}"]
    (invalid,) = failure_reasons(stories["pages-unreadable"])
    assert invalid.startswith("invalid: ") and "pages-unreadable" in invalid
    answered = next(story for run_id, story in stories.items() if "payment_timeout" in run_id)
    assert answered.outcome == "ANSWERED"
    assert [reason for reason in failure_reasons(answered) if "metrics backend" not in reason
            ] == []


def test_sessions_show_tells_why_in_text_and_json(
    filled: tuple[str, dict[str, dc.DiagnosisState]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, states = filled
    composer = next(run_id for run_id in states if "composer_fails_twice" in run_id)
    session = states[composer].request.run.session_id
    assert main(["sessions", "show", session, "--store", url, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    (story,) = [story for story in runs if story["run_id"] == composer]
    assert [step["message"] for step in story["agent_steps"] if step["message"]] == (
        _trace_errors(states[composer]))
    assert main(["sessions", "show", session, "--store", url]) == 0
    text = capsys.readouterr().out
    text = text[text.index(f"== run {composer} "):]
    why = text[text.index("   why:\n"):text.index("   answer:\n")]
    for error in _trace_errors(states[composer]):
        assert error in why
    assert "composer (seq 6, RETRYABLE_FAILED, COMPOSER_FAILED): ScriptedError" in why


def test_the_runs_resume_table_has_each_steps_message(
    filled: tuple[str, dict[str, dc.DiagnosisState]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, states = filled
    for run_id, state in states.items():
        assert main(["runs", "resume", run_id, "--store", url]) == 0
        out = capsys.readouterr().out
        table = out[out.index("\nseq  node"):].strip("\n").split("\n\nwhy:\n")[0].splitlines()
        errors = _trace_errors(state)
        if "forged" in run_id:  # a rejection has no error: its failed bindings are the why
            assert "gatekeeper round 1: claim c1: INVOCATION_NOT_FOUND (query_metrics inv-404)" in (
                out)
        if not errors:
            assert not table[0].rstrip().endswith("message")
            continue
        assert table[0].split() == ["seq", "node", "round", "attempt", "status", "reason",
                                    "message"]
        column = table[0].index("message")
        messages = {int(row.split()[0]): row[column:] for row in table[1:]}
        for event in state.events:
            assert messages[event.seq] == (event.details.error or "")
    # a tool's error, which has no step of its own, is under "why"
    assert "tool query_metrics (" in out and "RuntimeError: metrics backend down" in out


# --- the pages as files ---------------------------------------------------------------------


_NAME = re.compile(r"^(sessions|runs)/([A-Za-z0-9_][A-Za-z0-9_-]{0,39}-)?[0-9a-f]{16}\.html$")


@pytest.mark.parametrize("ident", [
    "..", ".", "/", "a/../../b", "\\..\\x", "\x00", "\ud800", "é", "A", "a", "x" * 1000,
    ".hidden", "-", "con", "run:1?*<>|\"", " ", "\u202e",
])
def test_a_page_name_is_safe_for_any_id(ident: str) -> None:
    for kind in ("sessions", "runs"):
        name = report_page_name(kind, ident)
        assert _NAME.match(name), name
        assert len(name) <= 80 and name.count("/") == 1


def test_different_ids_never_share_a_page_not_even_by_case() -> None:
    idents = ["A", "a", "a/b", "a-b", "a b", "a\ud800", "a\udc00", "..", "", "x" * 40 + "1",
              "x" * 40 + "2"]
    names = {report_page_name("runs", ident).lower() for ident in idents}
    assert len(names) == len(idents)


def _hrefs(page: Path) -> list[str]:
    return re.findall(r'href="([^"]*)"', page.read_text("utf-8"))


def test_report_html_into_a_folder_writes_every_page_linked(
    filled: tuple[str, dict[str, dc.DiagnosisState]], tmp_path: Path
) -> None:
    url, _ = filled
    site = tmp_path / "site"
    assert main(["report", "--store", url, "--html", str(site)]) == 0
    stories = _stories(url)
    sessions = {story.session_id for story in stories.values()}
    assert sorted(p.name for p in (site / "sessions").iterdir()) == sorted(
        Path(report_page_name("sessions", s)).name for s in sessions)
    assert sorted(p.name for p in (site / "runs").iterdir()) == sorted(
        Path(report_page_name("runs", r)).name for r in stories)
    pages = [site / "index.html", *(site / "sessions").iterdir(), *(site / "runs").iterdir()]
    # private like the store's files, each written whole (no temporary file left)
    assert {page.stat().st_mode & 0o777 for page in pages} == {0o600}
    assert not [p for p in site.rglob(".page-*")]
    linked = set()
    for page in pages:
        text = page.read_text("utf-8")
        assert "<script" not in text and " src=" not in text and "url(" not in text
        assert "Content-Security-Policy" in text and "default-src 'none'" in text
        for href in _hrefs(page):
            target = (page.parent / href).resolve()
            assert target.is_file() and site.resolve() in target.parents, (page, href)
            linked.add(target)
    # every session page is linked from the fleet page, every run page from its session's
    assert {p.resolve() for p in (site / "sessions").iterdir()} <= linked
    assert {p.resolve() for p in (site / "runs").iterdir()} <= linked
    index = (site / "index.html").read_text("utf-8")
    assert "generated 20" in index and "every run" in index
    # the old form: a path ending in .html is the fleet page alone
    single = tmp_path / "fleet.html"
    assert main(["report", "--store", url, "--html", str(single), "--since", "1970-01-02"]) == 0
    text = single.read_text("utf-8")
    assert single.stat().st_mode & 0o777 == 0o600
    assert "runs first stored since 1970-01-02 00:00:00 UTC" in text
    assert not (tmp_path / "sessions").exists() and "href=" not in text


def test_report_html_that_cannot_be_written_is_one_line(
    filled: tuple[str, dict[str, dc.DiagnosisState]], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, _ = filled
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["report", "--store", url, "--html", str(blocker / "site")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("diagnosis-core: cannot write ") and err.count("\n") == 1


def test_every_stored_string_on_the_pages_is_inert(
    filled: tuple[str, dict[str, dc.DiagnosisState]],
) -> None:
    url, _ = filled
    stories = _stories(url)
    story = stories[_long_run(stories)]
    hostile = "<script>alert('x')</script>&\ud800\x1b[2J\u202e"
    story = attrs.evolve(
        story, answer=hostile, question=hostile,
        tool_invocations=(attrs.evolve(story.tool_invocations[0], tool_name=hostile),
                          *story.tool_invocations[1:]),
        agent_steps=(attrs.evolve(story.agent_steps[0], message=hostile),
                     *story.agent_steps[1:]),
    )
    page = run_story_html(story, generated_at=0.0)
    page.encode("utf-8")
    assert "<script" not in page and "\ud800" not in page and "\x1b" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;\\ud800\\x1b[2J\\u202e" in page
    page = session_report_html(SessionReport(session_id=hostile, runs=(story,)),
                               generated_at=0.0)
    page.encode("utf-8")
    assert "<script" not in page and "\\ud800" in page


# --- the pages in headless Chromium ----------------------------------------------------------


MEASURE = r"""(() => {
  const inside = (r, box) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5
    && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
  const charts = [...document.querySelectorAll('.chart')].map(chart => {
    const box = chart.getBoundingClientRect();
    const walker = document.createTreeWalker(chart, NodeFilter.SHOW_TEXT);
    const outside = []; let texts = 0;
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (!node.textContent.trim()) continue;
      texts++;
      const range = document.createRange(); range.selectNodeContents(node);
      for (const r of range.getClientRects())
        if (!inside(r, box)) outside.push([node.textContent.slice(0, 60), r.left, r.right,
                                           box.left, box.right]);
    }
    const bars = [...chart.querySelectorAll('svg')].map(svg => {
      const track = svg.querySelector('rect.track').getBoundingClientRect();
      return {inside: inside(svg.getBoundingClientRect(), box),
              fills: [...svg.querySelectorAll('rect.fill, rect.fill2')].map(
                r => r.getBoundingClientRect().width / track.width)};
    });
    const labels = [...chart.querySelectorAll('.label')].map(l => l.textContent);
    return {id: chart.id, width: box.width, texts, outside, bars, labels};
  });
  return {charts, overflow: document.documentElement.scrollWidth - window.innerWidth,
          title: document.title};
})()"""


def _check(load: Any, *, charts: int) -> dict[str, Any]:
    measured: dict[str, Any] = load.measured
    assert load.errors() == [], load.errors()
    assert load.other_requests() == [], load.other_requests()
    assert len(measured["charts"]) >= charts
    for chart in measured["charts"]:
        assert chart["width"] > 0 and chart["texts"] >= 1, chart["id"]
        assert chart["outside"] == [], (chart["id"], chart["outside"][:3])
        assert all(bar["inside"] for bar in chart["bars"]), chart["id"]
    assert measured["overflow"] <= 0
    return measured


def _stress_report(report: FleetReport) -> FleetReport:
    """``report`` with many bars and the longest, least breakable names a store can hold."""
    stressed: Any = to_wire(report)
    names = [LONG_TOOL * 2, "工具名称" * 30, "\ud800<script>" + "W" * 80, "\u202eevil " * 20]
    for index in range(40):
        name = f"{names[index % len(names)]}-{index}"
        stressed["tools"][name] = {"calls": 17, "failures": index % 3,
                                   "failure_rate": round((index % 3) / 17, 6)}
        stressed["latency_ms"][name] = {"count": 3, "p50": 1.502 * index, "p95": 3.25 * index}
        stressed["reason_codes"]["REASON_" + "VERY_LONG_REASON_CODE_" * 6 + str(index)] = index
    stressed["tools"]["rare_failure"] = {"calls": 17, "failures": 1, "failure_rate": 0.058824}
    return from_wire(FleetReport, stressed)


def _stress_story(story: RunStory) -> RunStory:
    calls = tuple(
        StoryToolCall(invocation_id=f"inv-{'x' * 90}-{index}", tool_name=LONG_TOOL * 3,
                 success=False, input=None, output=None, duration_ms=1000.0 + index,
                 error=StoryToolError("TimeoutError", "deadline " * 40))
        for index in range(60))
    return attrs.evolve(story, tool_invocations=story.tool_invocations + calls)


def test_every_page_renders_in_chromium_with_every_label_inside_its_chart(
    filled: tuple[str, dict[str, dc.DiagnosisState]], tmp_path: Path
) -> None:
    if chromium() is None:
        pytest.skip("no Chromium (apt-get install -y chromium)")
    url, _ = filled
    site = tmp_path / "site"
    assert main(["report", "--store", url, "--html", str(site)]) == 0
    store = open_store(url)
    report = fleet_report(store)
    store.close()
    stories = _stories(url)
    stress = tmp_path / "stress"
    stress.mkdir()
    (stress / "fleet.html").write_text(
        fleet_report_html(_stress_report(report), generated_at=0.0), encoding="utf-8")
    (stress / "run.html").write_text(
        run_story_html(_stress_story(stories[_long_run(stories)]), generated_at=0.0, links=False),
        encoding="utf-8")
    pages = {
        "fleet": (site / "index.html", 7),
        "session": (site / report_page_name("sessions", HOSTILE_SESSION), 1),
        "run": (site / report_page_name("runs", _long_run(stories)), 1),
        "aiops run": (site / report_page_name("runs", "pages-aiops"), 1),
        "unfinished run": (site / report_page_name("runs", "pages-unfinished"), 1),
        "invalid run": (site / report_page_name("runs", "pages-unreadable"), 0),
        "stressed fleet": (stress / "fleet.html", 7),
        "stressed run": (stress / "run.html", 2),
    }
    with Browser() as browser:
        for name, (page, charts) in pages.items():
            for width in (1280, 390):
                try:
                    measured = _check(browser.load(page, MEASURE, width=width), charts=charts)
                except AssertionError as error:
                    raise AssertionError(f"{name} at {width} px: {error}") from None
                if name == "stressed fleet":
                    # rates on 0-100 %: a 5.9 % failure rate is 5.9 % of the bar's track
                    (tools,) = [c for c in measured["charts"] if c["id"] == "chart-tools"]
                    fills = dict(zip(tools["labels"], tools["bars"], strict=True))
                    assert fills["rare_failure"]["fills"][0] == pytest.approx(0.058824,
                                                                              abs=0.002)
                    assert len(tools["bars"]) == len(report.tools) + 41


def test_the_browser_check_sees_a_cut_label_a_console_error_and_a_request(
    tmp_path: Path,
) -> None:
    """The checks above can fail: on the old page's kind of chart, and on a page that logs
    and fetches, the same probe and harness report each fault."""
    if chromium() is None:
        pytest.skip("no Chromium (apt-get install -y chromium)")
    page = tmp_path / "faulty.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>f</title></head><body>"
        "<svg class='chart' id='chart-cut' width='200' height='40'><text x='0' y='20'>"
        "executor p50 1.502 p95 12345.678 and more</text></svg>"
        "<script>console.error('broken')</script>"
        "<img src='http://127.0.0.1:9/pixel.png' alt=''></body></html>", encoding="utf-8")
    probe = MEASURE.replace("svg.querySelector('rect.track')", "(svg.querySelector('rect.track')"
                            " || svg)")
    with Browser() as browser:
        load = browser.load(page, probe)
    (chart,) = load.measured["charts"]
    assert chart["outside"] and chart["outside"][0][0].startswith("executor p50")
    assert any("broken" in str(error) for error in load.errors())
    assert load.other_requests() == ["http://127.0.0.1:9/pixel.png"]


def test_a_hostile_failure_message_is_one_inert_line_in_every_text_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = with_ids(load_example("composer_fails_twice"), run_id="hostile-run",
                   session_id="hostile-session")
    doc["responses"]["composer"][0]["error"]["message"] = "boom\x1b[2J\nforged: line\u202e"
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = open_store(url)
    request, effects = scenario_of(doc)
    dc.run_diagnosis(request, effects, store=store)
    store.close()
    for command in (["runs", "resume", "hostile-run"], ["sessions", "show", "hostile-session"]):
        assert main([*command, "--store", url]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out
        assert "boom\\x1b[2J\\nforged: line\\u202e" in out
        assert not any(line.startswith("forged") for line in out.splitlines())
