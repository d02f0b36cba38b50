"""The fleet report (spec §16): counts and rates from the journals, and its page in Chromium.

The page is loaded in headless Chromium over the DevTools protocol
(``chromium_support``): with its own Content-Security-Policy in force, no
console error and no request; every text of every chart inside the chart's
box; each rate drawn as that fraction of its bar's track.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from chromium_support import Browser, chromium
from store_support import chat_example_docs, scenario_of, with_ids, with_tools

import diagnosis_core as dc
from diagnosis_core import from_wire, to_wire
from diagnosis_core.cli import main
from diagnosis_core.stores import (
    FleetReport,
    fleet_report,
    fleet_report_html,
    open_store,
    record_feedback,
)
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._fleet import format_fleet_report, percentile
from diagnosis_core.stores._pages import outcomes_by_workflow
from diagnosis_core.stores._reports import FLEET_REPORT_FORMAT
from diagnosis_core.tools import ToolRecorder


def _fill(store: StoreBase) -> list[dc.DiagnosisState]:
    states = []
    for index, (_, doc) in enumerate(chat_example_docs()):
        doc = with_ids(doc, run_id=f"fleet-{index}", session_id="fleet")
        request, effects = scenario_of(doc)
        recorder = ToolRecorder()
        states.append(dc.run_diagnosis(request, with_tools(effects, recorder), store=store,
                                       tools=recorder))
    record_feedback(store, "fleet-0", 5)
    record_feedback(store, "fleet-1", 1, "no")
    return states


def test_the_fleet_report_counts_what_the_runs_did(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    states = _fill(store)
    fleet = fleet_report(store)
    report: Any = to_wire(fleet)
    assert report["format"] == FLEET_REPORT_FORMAT
    assert report["runs"] == {"total": len(states), "complete": len(states), "incomplete": 0,
                              "invalid": 0}
    outcomes: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for state in states:
        outcomes[state.result.outcome.value] = outcomes.get(state.result.outcome.value, 0) + 1
        if state.result.reason_code is not None:
            code = state.result.reason_code.value
            reasons[code] = reasons.get(code, 0) + 1
    assert report["outcomes"] == outcomes and report["reason_codes"] == reasons
    audits = [a.status.value for s in states for a in s.gatekeeper_audits]
    assert report["gatekeeper"]["audits"] == len(audits)
    for status in ("PASS", "LOW_CONFID", "REJECT"):
        assert report["gatekeeper"]["rates"][status] == round(audits.count(status) / len(audits), 6)
    retried = sum(1 for s in states if s.result.evidence_retries > 0)
    assert report["evidence_retry_rate"] == round(retried / len(states), 6)
    fallbacks = sum(1 for s in states if s.result.outcome is not dc.Outcome.ANSWERED)
    assert report["fallback_rate"] == round(fallbacks / len(states), 6)
    executor_calls = sum(s.calls.executor for s in states)
    assert report["tools"] == {
        "query_logs": {"calls": executor_calls, "failures": 0, "failure_rate": 0.0},
        "query_metrics": {"calls": executor_calls, "failures": executor_calls,
                          "failure_rate": 1.0},
    }
    assert report["latency_ms"]["planner"]["count"] == sum(s.calls.planner for s in states)
    assert report["feedback"]["count"] == 2 and report["feedback"]["mean_rating"] == 3.0
    assert report["feedback"]["ratings"] == {"1": 1, "2": 0, "3": 0, "4": 0, "5": 1}
    assert fleet_report(store, since=time.time() + 60).runs.total == 0
    assert "fallback rate:" in format_fleet_report(fleet)
    store.close()


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0 and percentile(values, 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0 and percentile([], 0.5) is None


def test_report_json_and_html_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "r.jsonl")
    store = open_store(url)
    _fill(store)
    expected = json.loads(json.dumps(to_wire(fleet_report(store))))
    store.close()
    assert main(["report", "--store", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    page = tmp_path / "fleet.html"
    assert main(["report", "--store", url, "--html", str(page), "--since", "1970-01-02"]) == 0
    text = page.read_text("utf-8")
    assert "<svg" in text and "http:" not in text and "https:" not in text
    assert "<script" not in text and "src=" not in text
    assert "runs first stored since 1970-01-02 00:00:00 UTC" in text


FLEET_CHARTS = ["chart-outcomes-chat", "chart-outcomes-aiops", "chart-reasons",
                "chart-gatekeeper", "chart-tools", "chart-latency", "chart-feedback"]

# Every chart's laid-out box, the boxes of its texts (ranges over its text nodes) and the
# fraction of its track each bar fills.
_PROBE = r"""(() => [...document.querySelectorAll('.chart')].map(chart => {
  const box = chart.getBoundingClientRect();
  const texts = [];
  const walker = document.createTreeWalker(chart, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const range = document.createRange(); range.selectNodeContents(walker.currentNode);
    for (const r of range.getClientRects())
      texts.push([walker.currentNode.textContent, r.left, r.right, r.top, r.bottom]);
  }
  const bars = [...chart.querySelectorAll('svg')].map(svg => {
    const track = svg.querySelector('rect.track').getBoundingClientRect().width;
    return [...svg.querySelectorAll('rect.fill')].map(r => r.getBoundingClientRect().width / track);
  });
  return [chart.id, [box.left, box.right, box.top, box.bottom], texts, bars];
}))()"""


def test_the_html_page_renders_its_charts_in_headless_chromium(tmp_path: Path) -> None:
    if chromium() is None:
        pytest.skip("no Chromium (apt-get install -y chromium)")
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    _fill(store)
    report: Any = to_wire(fleet_report(store))
    store.close()
    # a latency label as long as the one the old page cut off at the SVG edge
    report["latency_ms"]["executor"] = {"count": 9, "p50": 1.502, "p95": 12345.678}
    fleet = from_wire(FleetReport, report)
    page = tmp_path / "fleet.html"
    page.write_text(fleet_report_html(fleet, generated_at=time.time()), encoding="utf-8")
    with Browser() as browser:
        load = browser.load(page, _PROBE)
    assert load.errors() == [] and load.other_requests() == []
    measured = load.measured
    assert [chart[0] for chart in measured] == FLEET_CHARTS
    for chart_id, (left, right, top, bottom), texts, _ in measured:
        assert texts, chart_id
        for text, text_left, text_right, text_top, text_bottom in texts:
            assert left - 0.5 <= text_left and text_right <= right + 0.5, (chart_id, text)
            assert top - 0.5 <= text_top and text_bottom <= bottom + 0.5, (chart_id, text)
    bars = {chart[0]: chart[3] for chart in measured}
    by_workflow = outcomes_by_workflow(fleet)
    assert set(by_workflow) == {"chat", "aiops"}
    assert sum(by_workflow["chat"].values()) == sum(report["outcomes"].values())
    expected_bars = {
        "chart-outcomes-chat": len(by_workflow["chat"]),
        "chart-outcomes-aiops": len(by_workflow["aiops"]),
        "chart-reasons": len(report["reason_codes"]), "chart-gatekeeper": 3,
        "chart-tools": len(report["tools"]), "chart-latency": len(report["latency_ms"]),
        "chart-feedback": 5,
    }
    assert {name: len(found) for name, found in bars.items()} == expected_bars
    # rates on 0-100 %: a bar fills its rate of the track, not a share of the largest rate
    rates = [rate for rate in report["gatekeeper"]["rates"].values()]
    assert [found[0] for found in bars["chart-gatekeeper"]] == pytest.approx(rates, abs=0.005)
    tools = [row["failure_rate"] for row in report["tools"].values()]
    assert [found[0] for found in bars["chart-tools"]] == pytest.approx(tools, abs=0.005)
    text = " ".join(item[0] for chart in measured for item in chart[2])
    assert "12,345.7 ms" in text  # the longest value is shown, whole


def _empty_report(**changes: Any) -> FleetReport:
    report: dict[str, Any] = {
        "since": None,
        "runs": {"total": 1, "complete": 1, "incomplete": 0, "invalid": 0},
        "outcomes": {}, "reason_codes": {},
        "gatekeeper": {"audits": 0, "rates": {"PASS": None, "LOW_CONFID": None, "REJECT": None}},
        "evidence_retry_rate": None, "fallback_rate": None,
        "tools": {}, "latency_ms": {},
        "feedback": {"count": 0, "mean_rating": None,
                     "ratings": {str(n): 0 for n in range(1, 6)}},
    }
    report.update(changes)
    return from_wire(FleetReport, report)


def test_the_page_escapes_every_name_it_shows() -> None:
    hostile = '<script>alert("x")</script>&'
    report = _empty_report(
        outcomes={hostile: 1}, fallback_rate=0.0,
        tools={hostile: {"calls": 2, "failures": 1, "failure_rate": 0.5}},
    )
    page = fleet_report_html(report)
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page
    assert page.count('<rect class="fill"') == 1 + 1 + 3 + 5
    # an outcome of neither workflow is drawn apart, never mixed into theirs
    assert page.count('class="empty muted">no data<') == 4 and "Other outcomes" in page


def test_the_page_shows_unencodable_and_control_characters_as_visible_escapes() -> None:
    report = _empty_report(tools={"a\ud800b\x1b[2J\u202e\ufffe": {
        "calls": 1, "failures": 1, "failure_rate": 1.0}})
    page = fleet_report_html(report)
    page.encode("utf-8")  # a lone surrogate no longer makes the page unwritable
    assert "a\\ud800b\\x1b[2J\\u202e\\ufffe" in page
    assert not any(char in page for char in "\ud800\x1b\u202e\ufffe")


def test_the_page_shows_when_it_was_made_and_which_runs_it_covers() -> None:
    page = fleet_report_html(_empty_report(since=86400.0), generated_at=1796137398.0)
    assert "generated 2026-12-01 " in page
    assert "runs first stored since 1970-01-02 00:00:00 UTC" in page
    assert "every run" in fleet_report_html(_empty_report())


def test_an_unreadable_run_is_counted_invalid_and_the_others_summed(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "runs.db"
    store = open_store(f"sqlite:///{path}")
    for index, (_, doc) in enumerate(chat_example_docs()[:3]):
        request, effects = scenario_of(with_ids(doc, run_id=f"r{index}"))
        dc.run_diagnosis(request, effects, store=store)
    alone: Any = to_wire(fleet_report(store))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_runs SET payload = 'sealed:aesgcm:AAAA' WHERE run_id = 'r1'")
    report: Any = to_wire(fleet_report(store))
    store.close()
    assert report["runs"] == {"total": 3, "complete": 2, "incomplete": 0, "invalid": 1}
    assert sum(report["outcomes"].values()) == sum(alone["outcomes"].values()) - 1
