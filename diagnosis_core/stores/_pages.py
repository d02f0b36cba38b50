"""The report as pages an operator can act on: the fleet, each session, each run (spec §16).

Three kinds of page, each one self-contained HTML file: no script, no
stylesheet, font or image fetched, a Content-Security-Policy of
``default-src 'none'`` (inline styles only), so a page renders offline and
can be mailed or archived as it is:

* the fleet page (:func:`fleet_report_html`): counts and rates of the fleet
  report, the sessions and the runs that need a look (fallback, incomplete,
  invalid) with their failure reasons, each linked to its page;
* a session page (:func:`session_report_html`): every run of the session with
  its outcome, reason and first failure reason;
* a run page (:func:`run_story_html`): steps with status, reason and message,
  effects and their time, tool calls, gatekeeper audits, verifier verdicts,
  the answer and the feedback.

:func:`write_report_pages` writes them into a folder (``index.html``,
``sessions/…``, ``runs/…``), each id under a file name made safe for any id
(:func:`report_page_name`).

Charts are HTML grids with an SVG bar each: a label never leaves its chart,
however long (it wraps, anywhere if it must), and a bar is drawn on a fixed
scale — a rate or a share on 0–100 %, a time on 0 to the chart's largest
time. Every string the store holds (an id, a tool name, an answer, a
message) is inert HTML text (:func:`html_text`): markup escaped, a lone
surrogate or a control shown as a visible ``\\uXXXX``.

:func:`failure_reasons` (in ``_story``) is the operator's "why": the trace report's messages
(a failed step's error, a gatekeeper's problem and the bindings it failed, a
tool's error, the call an unfinished run waits for, why a run is invalid),
shared by the text report and the pages.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..machine import RawResult
from ._escape import html_text
from ._reports import FleetReport, RunStory, SessionReport
from ._story import failed_bindings, failure_reasons

__all__ = [
    "fleet_report_html",
    "outcomes_by_workflow",
    "report_page_name",
    "run_story_html",
    "session_report_html",
    "when",
    "write_page",
    "write_report_pages",
]

_CSP = "default-src 'none'; style-src 'unsafe-inline'"

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.4em; margin: 0 0 .2em; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 1.6em 0 .5em; }
nav { margin-bottom: .6em; overflow-wrap: anywhere; } nav a { margin-right: 1.2em; }
.meta { color: #555; margin: 0 0 1em; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .3em 0; }
td, th { padding: 3px 10px; text-align: left; vertical-align: top;
         border-bottom: 1px solid #ddd; overflow-wrap: break-word; }
th { font-weight: 600; white-space: nowrap; } td.t { overflow-wrap: anywhere; min-width: 6em; }
td.w { overflow-wrap: anywhere; min-width: 16em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f5f5f5;
      padding: .6em .8em; margin: .3em 0; font: 13px/1.4 ui-monospace, monospace; }
.why { border-left: 4px solid #b3261e; background: #fdf3f2; padding: .3em 1em; }
.why li { overflow-wrap: anywhere; }
.bad { color: #b3261e; } .muted { color: #666; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2em 2em; align-items: flex-start; }
figure.chart { margin: 0; padding: .6em .8em; border: 1px solid #ddd; border-radius: 4px;
               flex: 1 1 34em; min-width: min-content; max-width: 60em; }
figure.chart figcaption { font-weight: 600; margin-bottom: .5em; overflow-wrap: anywhere; }
.bars { display: grid; gap: 5px 10px; align-items: center;
        grid-template-columns: fit-content(60%) minmax(7em, 1fr) auto; }
.bars .label { overflow-wrap: anywhere; }
.bars .value { font-variant-numeric: tabular-nums; }
.bars svg { display: block; width: 100%; height: 16px; }
.bars .axis { display: flex; justify-content: space-between; gap: .5em; color: #666;
              font-size: 12px; white-space: nowrap; }
.track { fill: #edf0f4; } .fill { fill: #3b6ea5; } .fill2 { fill: #1f4571; }
.tick { stroke: #fff; stroke-width: 1; }
"""


# --- safe names and times -------------------------------------------------------------


_SLUG = re.compile(r"[^A-Za-z0-9_-]+")


def report_page_name(kind: str, ident: str) -> str:
    """The page of a session or run id, relative to the report folder: safe for any id.

    ``kind`` is ``sessions`` or ``runs``. The name is the id's ASCII letters,
    digits, ``_`` and ``-`` (every other run of characters one ``-``, at most
    40) and the first 16 hex digits of the SHA-256 of the id's UTF-8 bytes (a lone
    surrogate kept as its own bytes): two ids never share a page, not even on
    a file system that ignores case, and no id (``..``, ``/``, a control, a
    thousand characters) escapes the folder or makes a name too long.
    """
    if kind not in ("sessions", "runs"):
        raise ValueError(f"kind: expected 'sessions' or 'runs', got {kind!r}")
    digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    slug = _SLUG.sub("-", ident)[:40].strip("-")
    return f"{kind}/{slug + '-' if slug else ''}{digest}.html"


def when(seconds: object) -> str:
    """A time in seconds since the epoch as ``YYYY-MM-DD HH:MM:SS UTC`` (``-`` for none)."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(float(seconds), datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return str(seconds)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _percent(rate: object) -> str:
    return "-" if not isinstance(rate, (int, float)) else f"{rate * 100:.1f} %"


def _ms(value: object) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:,.1f} ms"


def outcomes_by_workflow(report: FleetReport) -> dict[str, dict[str, int]]:
    """The fleet's outcome counts split by workflow: ``chat``, ``aiops`` (and ``other``).

    The two workflows' outcomes are disjoint sets of names (the chat
    :class:`Outcome` and the AIOps ``AiOpsOutcome``), so the split needs no
    second count; a name of neither (never written by this package) is
    ``other``.
    """
    from .. import Outcome
    from ..aiops import AiOpsOutcome

    chat = {item.value for item in Outcome}
    aiops = {item.value for item in AiOpsOutcome}
    split: dict[str, dict[str, int]] = {"chat": {}, "aiops": {}}
    for name, count in report.outcomes.items():
        workflow = "chat" if name in chat else "aiops" if name in aiops else "other"
        split.setdefault(workflow, {})[name] = count
    return split


# --- charts ---------------------------------------------------------------------------


def _bar(fractions: Sequence[float]) -> str:
    """One bar on a 0–100 scale: ``fractions`` (0..1) drawn over each other, largest first."""
    parts = ['<svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">'
             '<rect class="track" width="100" height="10"></rect>']
    for index, fraction in enumerate(fractions):
        width = min(100.0, max(0.0, fraction * 100))
        parts.append(f'<rect class="{"fill" if index == 0 else "fill2"}" '
                     f'width="{width:.3f}" height="10"></rect>')
    parts += [f'<line class="tick" x1="{x}" x2="{x}" y1="0" y2="10" '
              'vector-effect="non-scaling-stroke"></line>' for x in (25, 50, 75)]
    parts.append("</svg>")
    return "".join(parts)


def _chart(chart_id: str, title: str, rows: Sequence[tuple[str, Sequence[float], str]],
           axis: tuple[str, str, str]) -> str:
    """A bar chart: each row a label, a bar of ``fractions`` of the scale, its value shown.

    ``axis`` names the scale's start, middle and end (``0 %``, ``50 %``,
    ``100 %``). A label wraps inside its column; it is never cut.
    """
    parts = [f'<figure class="chart" id="{html_text(chart_id)}">'
             f"<figcaption>{html_text(title)}</figcaption>"]
    if not rows:
        parts.append('<p class="empty muted">no data</p></figure>')
        return "".join(parts)
    parts.append('<div class="bars">')
    for label, fractions, shown in rows:
        parts.append(f'<div class="label">{html_text(label)}</div>{_bar(fractions)}'
                     f'<div class="value">{html_text(shown)}</div>')
    parts.append('<div></div><div class="axis">'
                 + "".join(f"<span>{html_text(mark)}</span>" for mark in axis)
                 + "</div><div></div></div></figure>")
    return "".join(parts)


_RATE_AXIS = ("0 %", "50 %", "100 %")


def _share_chart(chart_id: str, title: str, counts: Mapping[str, int]) -> str:
    """Counts as shares of their total, on 0–100 %."""
    total = sum(counts.values())
    rows = [(name, [count / total if total else 0.0],
             f"{count} · {_percent(count / total if total else None)}")
            for name, count in counts.items()]
    return _chart(chart_id, f"{title} (share of {total})", rows, _RATE_AXIS)


def _time_chart(chart_id: str, title: str, rows: Sequence[tuple[str, float, float | None]]
                ) -> str:
    """Times in ms on 0 to the largest: a bar per row, an inner bar for a second time."""
    largest = max((value for _, value, _ in rows), default=0.0) or 1.0
    shaped = [(label, [value / largest] + ([] if inner is None else [inner / largest]),
               _ms(value) if inner is None else f"p50 {_ms(inner)} · p95 {_ms(value)}")
              for label, value, inner in rows]
    return _chart(chart_id, title, shaped, ("0", _ms(largest / 2), _ms(largest)))


# --- pages ----------------------------------------------------------------------------


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html_text(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def _meta(generated_at: float | None, *extra: str) -> str:
    items = [] if generated_at is None else [f"generated {when(generated_at)}"]
    items += extra
    return f'<p class="meta">{" · ".join(items)}</p>' if items else ""


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], text: Sequence[int] = (),
           wide: int | None = None) -> str:
    """A table in a scroller; cells are HTML already (escape before).

    The columns ``text`` hold stored free text (an id, a message) and wrap
    anywhere, the column ``wide`` (a reason) too but never narrower than
    16em; the others (codes, numbers) break only where they must.
    """
    head = "".join(f"<th>{html_text(name)}</th>" for name in header)

    def cell(index: int, value: str) -> str:
        if index == wide:
            return f'<td class="w">{value}</td>'
        return f'<td class="t">{value}</td>' if index in text else f"<td>{value}</td>"

    body = "".join("<tr>" + "".join(cell(index, value) for index, value in enumerate(row))
                   + "</tr>" for row in rows)
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _pairs(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of name and (escaped) value."""
    return ('<div class="scroll"><table>'
            + "".join(f'<tr><th>{html_text(name)}</th><td class="t">{value}</td></tr>'
                      for name, value in rows) + "</table></div>")


def _link(href: str | None, text: object) -> str:
    shown = html_text(text)
    return shown if href is None else f'<a href="{html_text(href)}">{shown}</a>'


def _why(reasons: Sequence[str]) -> str:
    if not reasons:
        return ""
    items = "".join(f"<li>{html_text(reason)}</li>" for reason in reasons)
    return f'<div class="why"><strong>Why</strong><ul>{items}</ul></div>'


def _first_reason(story: RunStory) -> str:
    reasons = failure_reasons(story)
    return html_text(reasons[0]) if reasons else ""


def _status(story: RunStory) -> str:
    cls = "" if story.status == "complete" else ' class="bad"'
    return f"<span{cls}>{html_text(story.status)}</span>"


def _since_text(since: float | None) -> str:
    return "every run" if since is None else f"runs first stored since {when(since)}"


def _run_rows(stories: Iterable[RunStory], links: bool, prefix: str,
              with_session: bool) -> list[list[str]]:
    rows = []
    for story in stories:
        row = [_link(prefix + report_page_name("runs", story.run_id) if links else None,
                     story.run_id)]
        if with_session:
            row.append(_link(prefix + report_page_name("sessions", story.session_id)
                             if links else None, story.session_id))
        row += [html_text(story.workflow), html_text(when(story.created_at)),
                _status(story), html_text(story.outcome), html_text(story.reason_code),
                _first_reason(story)]
        rows.append(row)
    return rows


def _needs_a_look(story: RunStory) -> bool:
    return story.status != "complete" or "FALLBACK" in (story.outcome or "")


_ATTENTION_LIMIT = 500
_OUTCOME_TITLES = {"chat": "Chat outcomes", "aiops": "AIOps outcomes", "other": "Other outcomes"}


def fleet_report_html(
    report: FleetReport,
    *,
    generated_at: float | None = None,
    sessions: Sequence[SessionReport] | None = None,
) -> str:
    """The fleet page: the fleet report's counts and rates as charts, and what needs a look.

    With ``sessions`` (the session reports of the sessions to show) the page
    lists every one and the runs that need a look (fallback, incomplete or
    invalid; the newest 500) with their first failure reason, each linked to
    the page :func:`write_report_pages` writes beside it. ``generated_at``
    (seconds since the epoch) is shown with the report's ``since`` window.
    """
    runs = report.runs
    gate = report.gatekeeper
    feedback = report.feedback
    charts = [
        _share_chart(f"chart-outcomes-{name}", _OUTCOME_TITLES[name], counts)
        for name, counts in outcomes_by_workflow(report).items()
    ]
    charts += [
        _share_chart("chart-reasons", "Reason codes", report.reason_codes),
        _chart("chart-gatekeeper", f"Gatekeeper status rate (of {gate.audits} audits)",
               [(name, [rate or 0.0], _percent(rate)) for name, rate in gate.rates.items()],
               _RATE_AXIS),
        _chart("chart-tools", "Tool failure rate",
               [(name, [row.failure_rate or 0.0], f"{_percent(row.failure_rate)} of {row.calls}")
                for name, row in report.tools.items()], _RATE_AXIS),
        _time_chart("chart-latency", "Latency per call (p95, p50 inside)",
                    [(name, float(row.p95 or 0.0), float(row.p50 or 0.0))
                     for name, row in report.latency_ms.items()]),
        _share_chart("chart-feedback", "Feedback ratings",
                     {f"{stars} star(s)": count for stars, count in feedback.ratings.items()}),
    ]
    mean = "-" if feedback.mean_rating is None else str(feedback.mean_rating)
    summary = _pairs([
        ("runs", html_text(runs.total)),
        ("complete", html_text(runs.complete)),
        ("incomplete", html_text(runs.incomplete)),
        ("invalid", html_text(runs.invalid)),
        ("evidence retry rate", html_text(_percent(report.evidence_retry_rate))),
        ("fallback rate", html_text(_percent(report.fallback_rate))),
        ("gatekeeper audits", html_text(gate.audits)),
        ("feedback", html_text(f"{feedback.count} rating(s), mean {mean}")),
    ])
    body = [
        "<h1>Diagnosis fleet report</h1>",
        _meta(generated_at, html_text(_since_text(report.since))),
        f"<section>{summary}</section>",
        f'<h2>Charts</h2><div class="charts">{"".join(charts)}</div>',
    ]
    if sessions is not None:
        body.append(_fleet_tables(sessions))
    return _page("Diagnosis fleet report", "".join(body))


def _fleet_tables(sessions: Sequence[SessionReport]) -> str:
    stories = [story for session in sessions for story in session.runs]
    attention = sorted((story for story in stories if _needs_a_look(story)),
                       key=lambda story: -story.created_at)
    shown = attention[:_ATTENTION_LIMIT]
    parts = [f"<h2>Runs that need a look ({len(attention)})</h2>"]
    if len(attention) > len(shown):
        parts.append(f'<p class="muted">the newest {len(shown)}; every run is on its '
                     "session's page</p>")
    if shown:
        parts.append(_table(
            ("run", "session", "workflow", "first stored", "status", "outcome", "reason",
             "why"), _run_rows(shown, True, "", True), (0, 1), 7))
    else:
        parts.append('<p class="muted">none: every run ended with an answer or a report</p>')
    rows = []
    for session in sessions:
        statuses = [story.status for story in session.runs]
        rows.append([
            _link(report_page_name("sessions", session.session_id), session.session_id),
            html_text(len(session.runs)), html_text(statuses.count("complete")),
            html_text(statuses.count("incomplete")), html_text(statuses.count("invalid")),
            html_text(sum(1 for story in session.runs if _needs_a_look(story))),
            html_text(when(max((story.created_at for story in session.runs), default=None))),
        ])
    parts.append(f"<h2>Sessions ({len(sessions)})</h2>")
    parts.append(_table(("session", "runs", "complete", "incomplete", "invalid",
                         "need a look", "last run"), rows, (0,)))
    return "".join(parts)


def _effect_ms(story: RunStory) -> float:
    return float(sum(effect.duration_ms or 0.0 for effect in story.effects))


def session_report_html(
    report: SessionReport, *, generated_at: float | None = None, links: bool = True
) -> str:
    """A session page: every run of the session report with its outcome and first reason.

    With ``links`` each run links to its page and the fleet page (the layout
    :func:`write_report_pages` writes).
    """
    runs = report.runs
    nav = '<nav><a href="../index.html">fleet report</a></nav>' if links else ""
    timed = [(story.run_id, _effect_ms(story), None) for story in runs
             if story.status != "invalid"]
    body = [
        nav, f"<h1>Session {html_text(report.session_id)}</h1>",
        _meta(generated_at, html_text(f"{len(runs)} run(s)")),
        _table(("run", "workflow", "first stored", "status", "outcome", "reason", "why"),
               _run_rows(runs, links, "../", False), (0,), 6),
        '<h2>Time</h2><div class="charts">',
        _time_chart("chart-run-time", "Effect time per run", timed), "</div>",
    ]
    return _page(f"Session {report.session_id}", "".join(body))


def _steps_table(story: RunStory) -> str:
    counter = "round" if story.workflow == "chat" else "step"
    rows = [[html_text(step.seq), html_text(step.node), html_text(step.round),
             html_text(step.attempt), html_text(step.status), html_text(step.reason_code),
             html_text(step.message or "")]
            for step in story.agent_steps]
    return _table(("seq", "node", counter, "attempt", "status", "reason", "message"), rows,
                  wide=6)


def _tools_table(story: RunStory) -> str:
    rows = []
    for tool in story.tool_invocations:
        error = "" if tool.error is None else f"{tool.error.type}: {tool.error.message}"
        rows.append([html_text(tool.invocation_id), html_text(tool.tool_name),
                     "ok" if tool.success else '<span class="bad">failed</span>',
                     html_text(error), html_text(_ms(tool.duration_ms))])
    if not rows:
        return '<p class="muted">no tool calls</p>'
    return _table(("invocation", "tool", "result", "error", "time"), rows, (0, 1), 3)


def _raw_text(raw: RawResult | None) -> str:
    if raw is None:
        return "none: the gatekeeper raised"
    try:
        return json.dumps(json.loads(raw.json_text), ensure_ascii=False, indent=1,
                          sort_keys=True)
    except (ValueError, RecursionError):
        return raw.json_text


def _audits(story: RunStory) -> str:
    if not story.gatekeeper_audits:
        return '<p class="muted">no gatekeeper audit</p>'
    parts = []
    for audit in story.gatekeeper_audits:
        failed = failed_bindings(audit.raw_result)
        reason = None if audit.reason_code is None else audit.reason_code.value
        rows = [
            ("status", html_text(audit.status.value)),
            ("reason", html_text(reason)),
            ("bindings", html_text(f"{audit.passed} of {audit.checked} passed, "
                                   f"{audit.failed} failed, "
                                   f"{audit.trusted_bindings} trusted")),
        ]
        if audit.error:
            rows.append(("error", html_text(audit.error)))
        if audit.problem:
            rows.append(("problem", html_text(audit.problem)))
        if failed:
            rows.append(("failed", "<br>".join(html_text(item) for item in failed)))
        parts.append(f"<h3>Round {html_text(audit.round)}</h3>{_pairs(rows)}"
                     "<details><summary>raw result</summary>"
                     f"<pre>{html_text(_raw_text(audit.raw_result))}</pre></details>")
    return "".join(parts)


def _verdicts(story: RunStory) -> str:
    rows = [[html_text(row.round), html_text(row.attempt), html_text(row.status),
             html_text(row.reason_code), html_text(row.model_verdict), html_text(row.ceiling),
             html_text(row.effective_verdict), html_text(row.groundedness_score),
             html_text(", ".join(row.unknown_claim_ids))]
            for row in story.verifier_evaluations]
    if not rows:
        return '<p class="muted">no verifier evaluation</p>'
    return _table(("round", "attempt", "status", "reason", "model", "ceiling", "effective",
                   "groundedness", "unknown claims"), rows, (8,))


def _feedback(story: RunStory) -> str:
    rows = [[html_text(f"{item.rating}/5"), html_text(item.comment or ""),
             html_text(item.after_seq), html_text(when(item.recorded_at))]
            for item in story.feedback]
    if not rows:
        return '<p class="muted">no feedback</p>'
    return _table(("rating", "comment", "after seq", "recorded"), rows, (1,))


def run_story_html(
    story: RunStory, *, generated_at: float | None = None, links: bool = True
) -> str:
    """A run page: the whole story of one run of a session report, and why it went so.

    With ``links`` it links to its session's page and the fleet page (the
    layout :func:`write_report_pages` writes).
    """
    nav = ""
    if links:
        nav = ('<nav><a href="../index.html">fleet report</a>'
               + _link("../" + report_page_name("sessions", story.session_id),
                       f"session {story.session_id}") + "</nav>")
    body = [nav, f"<h1>Run {html_text(story.run_id)}</h1>",
            _meta(generated_at, html_text(f"{story.workflow} run"),
                  html_text(f"first stored {when(story.created_at)}"))]
    facts = [("session", html_text(story.session_id)), ("status", _status(story))]
    if story.status == "invalid":
        body += [_pairs(facts), _why(failure_reasons(story))]
        return _page(f"Run {story.run_id}", "".join(body))
    facts += [("outcome", html_text(story.outcome)), ("reason", html_text(story.reason_code))]
    if story.next_call:
        facts.append(("waits for", html_text(story.next_call)))
    facts.append(("effects", html_text(f"{len(story.effects)}, {_ms(_effect_ms(story))}")))
    body += [_pairs(facts), _why(failure_reasons(story))]
    if story.question is not None:
        body.append(f"<h2>Question</h2><pre>{html_text(story.question)}</pre>")
    body += ["<h2>Steps</h2>", _steps_table(story)]
    effect_rows = [(f"{effect.seq} {effect.call} (round {effect.round}, "
                    f"attempt {effect.attempt})"
                    + ("" if effect.state == "finished" else " interrupted"),
                    float(effect.duration_ms or 0.0), None) for effect in story.effects]
    tool_rows = [(f"{tool.tool_name} {tool.invocation_id}", float(tool.duration_ms), None)
                 for tool in story.tool_invocations if tool.duration_ms is not None]
    body += ['<h2>Time</h2><div class="charts">',
             _time_chart("chart-effects", "Time per effect", effect_rows)]
    if tool_rows:
        body.append(_time_chart("chart-tool-time", "Time per tool call", tool_rows))
    body += ["</div>", "<h2>Tool calls</h2>", _tools_table(story)]
    if story.workflow == "chat":
        body += ["<h2>Gatekeeper audits</h2>", _audits(story),
                 "<h2>Verifier verdicts</h2>", _verdicts(story)]
    if story.answer is not None:
        body.append(f"<h2>Answer</h2><pre>{html_text(story.answer)}</pre>")
    body += ["<h2>Feedback</h2>", _feedback(story)]
    return _page(f"Run {story.run_id}", "".join(body))


def write_page(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a reader never sees half a page).

    The page is private (``0600``), like every file of a store: it holds the
    same facts (questions, answers, tool errors).
    """
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=".page-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_report_pages(
    folder: str | os.PathLike[str],
    report: FleetReport,
    sessions: Sequence[SessionReport],
    *,
    generated_at: float | None = None,
) -> list[Path]:
    """Write the fleet page as ``index.html`` and a page per session and per run; the paths.

    ``sessions`` are the session reports of the sessions to show (each run
    of each gets its page). The folder is created if needed; pages already
    there under the same names are replaced, each whole. Raises
    :class:`OSError` when a page cannot be written.
    """
    root = Path(folder)
    (root / "sessions").mkdir(parents=True, exist_ok=True)
    (root / "runs").mkdir(exist_ok=True)
    written = [root / "index.html"]
    write_page(written[0], fleet_report_html(report, generated_at=generated_at, sessions=sessions))
    for session in sessions:
        path = root / report_page_name("sessions", session.session_id)
        write_page(path, session_report_html(session, generated_at=generated_at))
        written.append(path)
        for story in session.runs:
            path = root / report_page_name("runs", story.run_id)
            write_page(path, run_story_html(story, generated_at=generated_at))
            written.append(path)
    return written
