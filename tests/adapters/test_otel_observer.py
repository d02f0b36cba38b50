"""The OpenTelemetry observer (spec §14): the span tree of a run is its trace, one to one.

Every test exports to the SDK's in-memory exporter on a fresh tracer provider
(never the global one). The runs are driven by :func:`run_observed` and its
siblings, each one call of a driver with ``observer=``, which calls the hooks
exactly where §14 puts them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings

import diagnosis_core.testing as dt

pytest.importorskip("opentelemetry.sdk")

from adapter_support import EXAMPLES_DIR, chat_example_paths, golden_result, load_doc
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import (
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import StatusCode
from otel_support import Exported

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters.otel import (
    AiOpsOpenTelemetryObserver,
    OpenTelemetryObserver,
    run_trace_context,
    trace_id_for_run,
)
from tests._reach import machine as dcm
from tests._reach import protocol as dcp

CHAT_EXAMPLES = chat_example_paths()
AIOPS_EXAMPLES = sorted(EXAMPLES_DIR.glob("aiops*.json"))
AGENTS = {"planner", "executor", "verifier", "composer"}
AIOPS_AGENTS = {"supervisor", "planner", "executor", "reporter"}
CANARY = "CANARY-7f3e9b2a"


# --- driving a run with an observer (spec §14) ----------------------------------------


def run_observed(
    request: dc.DiagnosisRequest,
    effects: dc.Effects,
    observer: object,
    *,
    state: dc.DiagnosisState | None = None,
) -> dc.DiagnosisState:
    """The sync driver with an observer."""
    return dc.run_diagnosis(request, effects, state=state, observer=observer)  # type: ignore[arg-type]


async def arun_observed(
    request: dc.DiagnosisRequest, effects: dc.AsyncEffects, observer: object
) -> dc.DiagnosisState:
    """The asyncio driver with an observer."""
    return await dc.arun_diagnosis(request, effects, observer=observer)  # type: ignore[arg-type]


def run_aiops_observed(
    request: dca.AiOpsRequest, effects: dca.AiOpsEffects, observer: dca.AiOpsObserver
) -> dca.AiOpsState:
    """The AIOps sync driver with an observer."""
    return dca.run_aiops(request, effects, observer=observer)


# --- exporting --------------------------------------------------------------------




@pytest.fixture
def exported() -> Iterator[Exported]:
    sink = Exported()
    yield sink
    sink.provider.shutdown()


def ticking_clock() -> Callable[[], int]:
    """A clock that moves 1 µs on every reading: durations are then exact counts of hooks."""
    now = [1_700_000_000_000_000_000]

    def read() -> int:
        now[0] += 1000
        return now[0]

    return read


def chat_run(path: Path) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(load_doc(path))
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def aiops_run(path: Path) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    scenario = dca.load_aiops_scenario(load_doc(path))
    return dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)


def result_json(state: dc.DiagnosisState) -> str:
    return dc.to_json(state.result)


def expected_trace_id(run_id: str) -> int:
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:16], "big")


def split_tree(
    spans: Sequence[ReadableSpan], workflow: str
) -> tuple[ReadableSpan, list[ReadableSpan]]:
    """The one run span and its children in trace order; nothing else may be there."""
    runs = [s for s in spans if s.name == f"invoke_workflow {workflow}"]
    assert len(runs) == 1, [s.name for s in spans]
    run = runs[0]
    assert run.context is not None
    children = [s for s in spans if s is not run]
    for child in children:
        assert child.parent is not None
        assert child.parent.span_id == run.context.span_id, child.name
        assert child.context is not None
        assert child.context.trace_id == run.context.trace_id
    by_start = sorted(children, key=lambda s: (s.start_time or 0))
    assert by_start == children, "children ended in another order than they started"
    return run, children


def check_one_to_one(
    children: Sequence[ReadableSpan], events: Sequence[Any], agents: set[str], position: str
) -> None:
    """Child span i is trace event i: name, diagnosis.* attributes, status."""
    assert len(children) == len(events)
    for index, (span, event) in enumerate(zip(children, events, strict=True)):
        node = event.node.value
        later = events[index + 1] if index + 1 < len(events) else None
        attributes = dict(span.attributes or {})
        if node in agents:
            assert span.name == f"invoke_agent {node}"
            assert attributes["gen_ai.operation.name"] == "invoke_agent"
            assert attributes["gen_ai.agent.name"] == node
            assert attributes["gen_ai.provider.name"] == "unknown"
        elif node == "gatekeeper":
            assert span.name == "execute_tool gatekeeper"
            assert attributes["gen_ai.operation.name"] == "execute_tool"
            assert attributes["gen_ai.tool.name"] == "gatekeeper"
        else:
            assert span.name == node
            assert "gen_ai.operation.name" not in attributes
            assert span.start_time == span.end_time, "a pure node takes no time"
        if node in agents or node == "gatekeeper":
            assert span.start_time is not None and span.end_time is not None
            assert span.end_time > span.start_time
        assert span.kind is trace.SpanKind.INTERNAL
        assert attributes["diagnosis.seq"] == event.seq
        assert attributes["diagnosis.node"] == node
        assert attributes[f"diagnosis.{position}"] == getattr(event, position)
        assert attributes["diagnosis.attempt"] == event.attempt
        assert attributes["diagnosis.status"] == event.status.value
        reason = event.reason_code.value if event.reason_code is not None else None
        assert attributes.get("diagnosis.reason_code") == reason
        assert attributes.get("diagnosis.input_sha256") == event.input_sha256
        failed = event.status.value != "COMPLETED" or (node == "gatekeeper" and reason)
        # A failed agent attempt followed by its retry ended nothing: not an error.
        retried = (
            failed and node in agents and later is not None
            and later.node == event.node and later.attempt > event.attempt
        )
        if retried:
            assert span.status.status_code is StatusCode.UNSET
            assert "error.type" not in attributes
            assert attributes["diagnosis.retried"] is True
            assert [e.name for e in span.events] == ["diagnosis.retry"]
        elif failed:
            assert span.status.status_code is StatusCode.ERROR
            assert span.status.description == (reason or event.status.value)
            assert attributes["error.type"] == (reason or event.status.value)
        else:
            assert span.status.status_code is StatusCode.UNSET
            assert "error.type" not in attributes


# --- the span tree of every bundled example -----------------------------------------


@pytest.mark.parametrize("path", CHAT_EXAMPLES, ids=lambda p: p.stem)
def test_the_span_tree_of_every_chat_example_is_its_trace(path: Path, exported: Exported) -> None:
    request, effects = chat_run(path)
    observer = OpenTelemetryObserver(exported.tracer, clock=ticking_clock())
    state = run_observed(request, effects, observer)
    run, children = split_tree(exported.spans, "diagnosis")
    check_one_to_one(children, state.events, AGENTS, "round")

    run_config = request.run
    assert run.context is not None and run.parent is not None
    assert run.context.trace_id == expected_trace_id(run_config.run_id)
    assert run.parent.is_remote
    attributes = dict(run.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert attributes["gen_ai.workflow.name"] == "diagnosis"
    assert attributes["diagnosis.run_id"] == run_config.run_id
    assert attributes["gen_ai.conversation.id"] == run_config.session_id
    assert state.outcome is not None
    assert attributes["diagnosis.outcome"] == state.outcome.value
    assert attributes["diagnosis.finished"] is True
    reason = state.reason_code.value if state.reason_code is not None else None
    assert attributes.get("diagnosis.reason_code") == reason
    if state.outcome is dc.Outcome.ANSWERED:
        assert run.status.status_code is StatusCode.UNSET
    else:
        assert run.status.status_code is StatusCode.ERROR
        assert run.status.description == reason
    assert exported.spans[-1] is run, "the run span ends with the run's last event"
    assert run.start_time is not None and run.end_time is not None
    for child in children:
        assert child.start_time is not None and child.end_time is not None
        assert run.start_time <= child.start_time <= child.end_time <= run.end_time


def test_named_examples_have_the_expected_error_spans(exported: Exported) -> None:
    """Fixed expectations, independent of the status rule the generic check restates."""
    cases = {
        "payment_timeout": ([], StatusCode.UNSET, None),
        "zh_cn_gatekeeper_unavailable": (
            [("execute_tool gatekeeper", "GATEKEEPER_UNAVAILABLE")],
            StatusCode.ERROR,
            "GATEKEEPER_UNAVAILABLE",
        ),
    }
    for stem, (errors, run_status, run_reason) in cases.items():
        exported.memory.clear()
        request, effects = chat_run(EXAMPLES_DIR / f"{stem}.json")
        run_observed(request, effects, OpenTelemetryObserver(exported.tracer))
        spans = exported.spans
        found = [
            (s.name, s.status.description)
            for s in spans
            if s.status.status_code is StatusCode.ERROR and not s.name.startswith("invoke_wo")
        ]
        assert found == errors, stem
        assert spans[-1].status.status_code is run_status
        assert spans[-1].status.description == run_reason


def test_a_composer_failing_twice_gives_one_error_span_and_a_fallback(exported: Exported) -> None:
    request, effects = chat_run(EXAMPLES_DIR / "composer_fails_twice.json")
    run_observed(request, effects, OpenTelemetryObserver(exported.tracer))
    names = [s.name for s in exported.spans]
    assert names[-3:] == [
        "invoke_agent composer",
        "post_verification_fallback",
        "invoke_workflow diagnosis",
    ]
    composers = [s for s in exported.spans if s.name == "invoke_agent composer"]
    # The first failure was retried (no error); the second ended the run's path.
    assert [s.status.status_code for s in composers] == [StatusCode.UNSET, StatusCode.ERROR]
    assert composers[1].status.description == "COMPOSER_FAILED"
    assert dict(composers[0].attributes or {})["diagnosis.retried"] is True
    assert "error.type" not in dict(composers[0].attributes or {})


@pytest.mark.parametrize("path", AIOPS_EXAMPLES, ids=lambda p: p.stem)
def test_the_span_tree_of_every_aiops_example_is_its_trace(
    path: Path, exported: Exported
) -> None:
    request, effects = aiops_run(path)
    observer = AiOpsOpenTelemetryObserver(exported.tracer, clock=ticking_clock())
    state = run_aiops_observed(request, effects, observer)
    run, children = split_tree(exported.spans, "aiops")
    check_one_to_one(children, state.events, AIOPS_AGENTS, "step")
    assert run.context is not None
    assert run.context.trace_id == expected_trace_id(request.run.run_id)
    assert state.outcome is not None
    assert dict(run.attributes or {})["diagnosis.outcome"] == state.outcome.value


async def test_the_async_driver_gives_the_same_tree(exported: Exported) -> None:
    path = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
    request, effects = chat_run(path)
    state = await arun_observed(
        request, dc.AsyncEffects.from_sync(effects), OpenTelemetryObserver(exported.tracer)
    )
    _, children = split_tree(exported.spans, "diagnosis")
    check_one_to_one(children, state.events, AGENTS, "round")
    assert any(s.name == "evidence_retry" for s in children)


def test_effect_spans_are_timed_by_the_hooks(exported: Exported) -> None:
    """Start at effect_started, end at effect_finished — not at the event that follows."""
    readings: list[int] = []
    clock = ticking_clock()

    def recording_clock() -> int:
        readings.append(clock())
        return readings[-1]

    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    run_observed(request, effects, OpenTelemetryObserver(exported.tracer, clock=recording_clock))
    _, children = split_tree(exported.spans, "diagnosis")
    planner = children[0]
    # readings: run_opened (the run span), effect_started, effect_finished,
    # event_appended (the planner's event), ...
    assert (planner.start_time, planner.end_time) == (readings[1], readings[2])


def test_one_observer_follows_consecutive_runs(exported: Exported) -> None:
    observer = OpenTelemetryObserver(exported.tracer)
    states = []
    for path in CHAT_EXAMPLES[:2]:
        request, effects = chat_run(path)
        states.append(run_observed(request, effects, observer))
    spans = exported.spans
    for state in states:
        trace_id = expected_trace_id(state.request.run.run_id)
        mine = [s for s in spans if s.context is not None and s.context.trace_id == trace_id]
        _, children = split_tree(mine, "diagnosis")
        check_one_to_one(children, state.events, AGENTS, "round")


@settings(
    max_examples=min(30, settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(document=dt.scenarios())
def test_every_generated_run_is_its_span_tree_and_is_unchanged(document: dict[str, Any]) -> None:
    """Generated scenarios (failures, retries, hostile gatekeepers): the tree is the trace."""
    scenario = dc.load_scenario(document)
    reference = dc.replay_scenario(scenario)
    sink = Exported()
    observer = OpenTelemetryObserver(sink.tracer, record_text=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = run_observed(
            dc.scenario_request(scenario), dc.scenario_effects(scenario), observer
        )
    assert result_json(state) == result_json(reference)
    _, children = split_tree(sink.spans, "diagnosis")
    check_one_to_one(children, state.events, AGENTS, "round")
    assert sink.spans[-1].name == "invoke_workflow diagnosis"


# --- no agent text unless the host opts in ------------------------------------------


def _plant(text: str) -> str:
    """The reply with the canary in it: an ignored extra field of a JSON object, else appended."""
    try:
        document = json.loads(dcp.extract_json_text(text))
    except (ValueError, dc.PayloadError):
        return text + CANARY
    if not isinstance(document, dict):
        return text + CANARY
    document["canary_note"] = CANARY
    return json.dumps(document)


def canary_run(path: Path) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    request, effects = chat_run(path)
    request = attrs.evolve(
        request,
        question=f"{request.question} {CANARY}",
        history=tuple(
            attrs.evolve(m, content=f"{m.content} {CANARY}") for m in request.history
        ),
    )

    def planted(invoker: dc.AgentInvoker) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            return _plant(invoker(input, config))

        return call

    effects = attrs.evolve(
        effects,
        **{agent.value: planted(effects.agent(agent)) for agent in dcm.AgentName},
    )
    return request, effects


def _texts(spans: Sequence[ReadableSpan]) -> list[str]:
    texts: list[str] = []
    for span in spans:
        texts.append(span.name)
        texts.append(span.status.description or "")
        texts.extend(str(v) for v in (span.attributes or {}).values())
        for event in span.events:
            texts.append(event.name)
            texts.extend(str(v) for v in (event.attributes or {}).values())
    return texts


@pytest.mark.parametrize("path", CHAT_EXAMPLES, ids=lambda p: p.stem)
def test_no_agent_text_in_attributes_unless_opted_in(path: Path) -> None:
    plain, recording = Exported(), Exported()
    request, effects = canary_run(path)
    state = run_observed(request, effects, OpenTelemetryObserver(plain.tracer))
    assert all(CANARY in record.input for record in state.invocations), "canary not planted"
    assert not [t for t in _texts(plain.spans) if CANARY in t]

    request, effects = canary_run(path)
    observer = OpenTelemetryObserver(recording.tracer, record_text=True)
    assert result_json(run_observed(request, effects, observer)) == result_json(state)
    agent_spans = [s for s in recording.spans if s.name.startswith("invoke_agent ")]
    for span in agent_spans:
        attributes = dict(span.attributes or {})
        messages = json.loads(str(attributes["gen_ai.input.messages"]))
        assert messages[0]["role"] == "user"
        assert CANARY in messages[0]["parts"][0]["content"]
    replied = [s for s in agent_spans if "gen_ai.output.messages" in (s.attributes or {})]
    assert replied, "no reply recorded"
    assert any(CANARY in str((s.attributes or {})["gen_ai.output.messages"]) for s in replied)


def test_error_text_is_recorded_only_when_opted_in() -> None:
    plain, recording = Exported(), Exported()
    path = EXAMPLES_DIR / "composer_fails_twice.json"
    request, effects = chat_run(path)
    run_observed(request, effects, OpenTelemetryObserver(plain.tracer))
    request, effects = chat_run(path)
    run_observed(request, effects, OpenTelemetryObserver(recording.tracer, record_text=True))
    assert not any("diagnosis.error" in (s.attributes or {}) for s in plain.spans)
    errors = [s for s in recording.spans if "diagnosis.error" in (s.attributes or {})]
    assert [s.name for s in errors] == ["invoke_agent composer"] * 2


# --- an observer only watches --------------------------------------------------------


class RaisingExporter(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        raise RuntimeError("collector down")

    def shutdown(self) -> None:
        return None


class RaisingTracer(trace.Tracer):
    """A tracer that fails every call: every hook of the observer raises."""

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        raise RuntimeError("tracer broken")

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer broken")


@pytest.mark.parametrize("path", CHAT_EXAMPLES, ids=lambda p: p.stem)
def test_a_raising_exporter_or_observer_never_changes_the_run(path: Path) -> None:
    request, effects = chat_run(path)
    reference = result_json(run_observed(request, effects, None))

    exporter = RaisingExporter()
    sink = Exported(exporter)
    request, effects = chat_run(path)
    assert result_json(run_observed(request, effects, OpenTelemetryObserver(sink.tracer))) == (
        reference
    )
    assert exporter.calls > 0

    request, effects = chat_run(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # logged and counted, never a warning (spec §12.5)
        state = run_observed(request, effects, OpenTelemetryObserver(RaisingTracer()))
    assert result_json(state) == reference
    assert state.observer_failures > 0


def test_the_api_alone_records_nothing_and_changes_nothing() -> None:
    """Without a configured SDK the global tracer is a no-op; the observer still runs clean."""
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    reference = result_json(run_observed(request, effects, None))
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        observer = OpenTelemetryObserver(trace.NoOpTracer())
        observed = run_observed(request, effects, observer)
    assert result_json(observed) == reference
    assert dc.to_wire(observed.result) == golden_result("payment_timeout")  # and it is right


# --- one trace per run, even across a resume -----------------------------------------


def _first_effects(
    request: dc.DiagnosisRequest, effects: dc.Effects, observer: object, count: int
) -> dc.DiagnosisState:
    """The first ``count`` effects of a run, observed (the state stays in memory: a
    stored state is display-only, spec §12)."""
    state = dcm.start_diagnosis(request)
    for _ in range(count):
        action = dcm.next_action(state)
        assert not isinstance(action, dcm.Finished)
        dcm.notify(observer, "effect_started", action)
        result = dcm.perform_effect(action, effects)
        dcm.notify(observer, "effect_finished", action, result)
        before = state.events
        state = dcm.advance(state, result)
        for event in dcm.new_events(before, state.events):
            dcm.notify(observer, "event_appended", event)
    return state


def test_a_resumed_run_stays_in_one_trace() -> None:
    first, second = Exported(), Exported()  # two processes: two providers, two exporters
    path = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
    request, effects = chat_run(path)
    before = OpenTelemetryObserver(first.tracer)
    saved = _first_effects(request, effects, before, 3)
    before.finish()
    after = OpenTelemetryObserver(second.tracer)
    state = run_observed(request, effects, after, state=saved)

    trace_id = expected_trace_id(request.run.run_id)
    assert trace_id_for_run(request.run.run_id) == trace_id
    runs = []
    children: list[ReadableSpan] = []
    for sink in (first, second):
        run, mine = split_tree(sink.spans, "diagnosis")
        runs.append(run)
        children.extend(mine)
    assert {s.context.trace_id for s in (*runs, *children) if s.context} == {trace_id}
    parents = {r.parent.span_id for r in runs if r.parent is not None}
    assert len(parents) == 1, "both run spans hang under the run's one remote parent"
    assert [dict(r.attributes or {})["diagnosis.finished"] for r in runs] == [False, True]
    check_one_to_one(children, state.events, AGENTS, "round")


def test_another_process_derives_the_same_trace_id(exported: Exported) -> None:
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    run_observed(request, effects, OpenTelemetryObserver(exported.tracer))
    code = (
        "from opentelemetry import trace\n"
        "from diagnosis_core.adapters.otel import run_trace_context\n"
        f"ctx = run_trace_context({request.run.run_id!r})\n"
        "print(format(trace.get_current_span(ctx).get_span_context().trace_id, '032x'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    trace_ids = {format(s.context.trace_id, "032x") for s in exported.spans if s.context}
    assert trace_ids == {done.stdout.strip()}


def test_finish_ends_an_open_effect_as_error_and_the_run_unfinished(exported: Exported) -> None:
    request, _ = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    action = dcm.next_action(dcm.start_diagnosis(request))
    with OpenTelemetryObserver(exported.tracer) as observer:
        observer.effect_started(action)  # type: ignore[arg-type]
    effect, run = exported.spans
    assert effect.name == "invoke_agent planner"
    assert effect.status.status_code is StatusCode.ERROR
    assert dict(run.attributes or {})["diagnosis.finished"] is False
    observer.finish()  # nothing open: a no-op
    assert len(exported.spans) == 2


def test_leaving_the_context_by_an_exception_marks_the_run_span(exported: Exported) -> None:
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    state = _first_effects(request, effects, None, 1)
    with pytest.raises(KeyError), OpenTelemetryObserver(exported.tracer) as observer:
        run_observed(request, effects, observer, state=state)  # a run on its way...
        raise KeyError("host crashed")  # ...that then crashed: nothing left open
    run = exported.spans[-1]
    assert run.name == "invoke_workflow diagnosis"
    assert dict(run.attributes or {})["diagnosis.finished"] is True
    assert run.status.status_code is StatusCode.UNSET, "the run had ended before the crash"

    exported.memory.clear()
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    with pytest.raises(KeyError), OpenTelemetryObserver(exported.tracer) as observer:
        _first_effects(request, effects, observer, 1)
        raise KeyError("host crashed")
    run = exported.spans[-1]
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "KeyError"
    assert dict(run.attributes or {})["diagnosis.finished"] is False


def test_the_effect_span_is_current_while_the_effect_runs(exported: Exported) -> None:
    seen: list[trace.SpanContext] = []
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    planner = effects.planner

    def watching(input: str, config: dc.RunConfig, /) -> str:
        seen.append(trace.get_current_span().get_span_context())
        return planner(input, config)

    run_observed(
        request, attrs.evolve(effects, planner=watching), OpenTelemetryObserver(exported.tracer)
    )
    span = next(s for s in exported.spans if s.name == "invoke_agent planner")
    assert span.context is not None
    assert [c.span_id for c in seen] == [span.context.span_id]
    assert not trace.get_current_span().get_span_context().is_valid, "context restored"


def test_a_host_span_current_at_the_start_is_linked(exported: Exported) -> None:
    request, effects = chat_run(EXAMPLES_DIR / "payment_timeout.json")
    with exported.tracer.start_as_current_span("POST /diagnose") as host:
        run_observed(request, effects, OpenTelemetryObserver(exported.tracer))
    run = next(s for s in exported.spans if s.name == "invoke_workflow diagnosis")
    assert [link.context.span_id for link in run.links] == [host.get_span_context().span_id]
    assert run.context is not None
    assert run.context.trace_id == trace_id_for_run(request.run.run_id)
    assert trace.get_current_span(run_trace_context("x")).get_span_context().is_remote


# --- the docs page's snippet runs and prints what the page says ------------------------


def test_the_docs_snippet_prints_what_the_page_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    page = (EXAMPLES_DIR.parent / "docs" / "opentelemetry.md").read_text(encoding="utf-8")
    python = page.split("```python\n", 1)[1].split("```", 1)[0]
    shown = page.split("```text\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(EXAMPLES_DIR.parent)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(python, "docs/opentelemetry.md", "exec"), {})
    assert printed.getvalue() == shown
