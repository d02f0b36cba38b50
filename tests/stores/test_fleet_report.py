"""The fleet report (spec §16): counts and rates from the journals, and its page in Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from store_support import chat_example_docs, scenario_of, with_ids, with_tools

import diagnosis_core as dc
from diagnosis_core.cli import main
from diagnosis_core.protocol import from_wire, to_wire
from diagnosis_core.stores import (
    FLEET_REPORT_FORMAT,
    FleetReport,
    fleet_report,
    fleet_report_html,
    format_fleet_report,
    open_store,
    record_feedback,
)
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._fleet import percentile
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
    assert "<svg" in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "<script" not in text and "src=" not in text


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_the_html_page_renders_its_charts_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium (apt-get install -y chromium)")
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    _fill(store)
    fleet = fleet_report(store)
    report: Any = to_wire(fleet)
    store.close()
    page = tmp_path / "fleet.html"
    # the page as shipped, plus (in this copy only) a probe that measures the laid-out bars
    probe = (
        "<script>addEventListener('load', () => { const out = document.createElement('pre');"
        " out.id = 'probe'; out.textContent = JSON.stringify([...document.querySelectorAll("
        "'svg.chart')].map(svg => [svg.id, svg.getBoundingClientRect().width,"
        " [...svg.querySelectorAll('rect.bar')].map(r => r.getBoundingClientRect().width)]));"
        " document.body.append(out); });</script>"
    )
    shipped = fleet_report_html(fleet)
    probed = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", shipped)
    page.write_text(probed.replace("</body>", probe + "</body>"), encoding="utf-8")
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        completed = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": profile},
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    dom = completed.stdout
    charts = re.findall(r'<svg class="chart" id="(chart-[a-z]+)"', dom)
    assert charts == ["chart-outcomes", "chart-reasons", "chart-gatekeeper", "chart-tools",
                      "chart-latency", "chart-feedback"]
    bars = len(re.findall(r'<rect class="bar"', dom))
    expected_bars = (len(report["outcomes"]) + len(report["reason_codes"]) + 3
                     + len(report["tools"]) + len(report["latency_ms"]) + 5)
    assert bars == expected_bars
    assert "Diagnosis fleet report" in dom
    measured = json.loads(html.unescape(re.search(r'<pre id="probe">(.*?)</pre>', dom)[1]))
    assert [chart[0] for chart in measured] == charts
    assert all(chart[1] > 0 for chart in measured)
    assert all(width >= 1 for chart in measured for width in chart[2])
    assert sum(len(chart[2]) for chart in measured) == expected_bars


def test_the_page_escapes_every_name_it_shows() -> None:
    hostile = '<script>alert("x")</script>&'
    report: Any = {
        "runs": {"total": 1, "complete": 1, "incomplete": 0, "invalid": 0},
        "outcomes": {hostile: 1}, "reason_codes": {},
        "gatekeeper": {"audits": 0, "rates": {"PASS": None, "LOW_CONFID": None, "REJECT": None}},
        "evidence_retry_rate": None, "fallback_rate": 0.0,
        "tools": {hostile: {"calls": 2, "failures": 1, "failure_rate": 0.5}},
        "latency_ms": {}, "feedback": {"count": 0, "mean_rating": None,
                                       "ratings": {str(n): 0 for n in range(1, 6)}},
    }
    page = fleet_report_html(from_wire(FleetReport, report))
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page
    assert page.count('<rect class="bar"') == 1 + 1 + 3 + 5
    assert page.count('class="empty">no data<') == 2


def test_the_page_shows_unencodable_and_control_characters_as_visible_escapes() -> None:
    report: Any = {
        "runs": {"total": 1, "complete": 1, "incomplete": 0, "invalid": 0},
        "outcomes": {}, "reason_codes": {},
        "gatekeeper": {"audits": 0, "rates": {"PASS": None, "LOW_CONFID": None, "REJECT": None}},
        "evidence_retry_rate": None, "fallback_rate": None,
        "tools": {"a\ud800b\x1b[2J\u202e\ufffe": {"calls": 1, "failures": 1,
                                                     "failure_rate": 1.0}},
        "latency_ms": {}, "feedback": {"count": 0, "mean_rating": None,
                                       "ratings": {str(n): 0 for n in range(1, 6)}},
    }
    page = fleet_report_html(from_wire(FleetReport, report))
    page.encode("utf-8")  # a lone surrogate no longer makes the page unwritable
    assert "a\\ud800b\\x1b[2J\\u202e\\ufffe" in page
    assert not any(char in page for char in "\ud800\x1b\u202e\ufffe")


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
