"""The AIOps drivers are the kernel's one loop: observer, iterator forms, journal (spec §12, §14).

The oracle of every check is the blocking driver without options: a stream, an
observer or a journal may only watch or record the same run.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import pytest
from adapters.adapter_support import golden_result

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("aiops*.json"))


def _run(path: Path) -> tuple[dca.AiOpsRequest, dca.AiOpsScenario]:
    scenario = dca.load_aiops_scenario(json.loads(path.read_text(encoding="utf-8")))
    return dca.aiops_scenario_request(scenario), scenario


class Recording:
    """An observer that writes down every hook call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def effect_started(self, action: dcm.InvokeAiOpsAgent, /) -> None:
        self.calls.append(("started", action))

    def effect_finished(
        self, action: dcm.InvokeAiOpsAgent, result: dcm.AgentReplied | dcm.AgentFailed, /
    ) -> None:
        self.calls.append(("finished", result))

    def event_appended(self, event: dca.AiOpsTraceEvent, /) -> None:
        self.calls.append(("event", event))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_an_observer_sees_every_agent_call_and_every_event_of_the_same_run(path: Path) -> None:
    request, scenario = _run(path)
    plain = dca.run_aiops(request, dca.aiops_scenario_effects(scenario))
    observer = Recording()
    watched = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), observer=observer)
    assert watched == plain
    events = [value for kind, value in observer.calls if kind == "event"]
    assert events == list(plain.events)
    started = [value for kind, value in observer.calls if kind == "started"]
    assert len(started) == len(plain.invocations) > 0
    assert all(isinstance(action, dcm.InvokeAiOpsAgent) for action in started)
    kinds = [kind for kind, _ in observer.calls]
    for index, kind in enumerate(kinds):  # every effect: started, then finished
        if kind == "started":
            assert kinds[index + 1] == "finished"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_iterator_yields_the_trace_then_the_result(path: Path) -> None:
    request, scenario = _run(path)
    plain = dca.run_aiops(request, dca.aiops_scenario_effects(scenario))
    items = list(dca.iter_aiops(request, dca.aiops_scenario_effects(scenario)))
    assert items[:-1] == list(plain.events)
    assert items[-1] == plain.result
    assert dc.to_wire(items[-1]) == golden_result(path.stem)  # the corpus's, not just the same


async def test_the_async_forms_match_the_sync_driver() -> None:
    request, scenario = _run(EXAMPLES[0])
    plain = dca.run_aiops(request, dca.aiops_scenario_effects(scenario))
    effects = dca.AsyncAiOpsEffects.from_sync(dca.aiops_scenario_effects(scenario))
    observer = Recording()
    state = await dca.arun_aiops(request, effects, observer=observer)
    assert state == plain
    assert [value for kind, value in observer.calls if kind == "event"] == list(plain.events)
    effects = dca.AsyncAiOpsEffects.from_sync(dca.aiops_scenario_effects(scenario))
    items = [item async for item in dca.aiter_aiops(request, effects)]
    assert items[:-1] == list(plain.events) and items[-1] == plain.result


def test_a_journaling_run_with_an_observer_records_the_same_journal() -> None:
    request, scenario = _run(EXAMPLES[0])
    plain_sink, watched_sink = dcj.ListAiOpsJournalSink(), dcj.ListAiOpsJournalSink()
    key = b"k" * 32
    plain = dca.run_aiops(
        request, dca.aiops_scenario_effects(scenario), sink=plain_sink, key=key,
        tools=dct.ToolRecorder(),
    )
    observer = Recording()
    watched = dca.run_aiops(
        request, dca.aiops_scenario_effects(scenario), sink=watched_sink, key=key,
        tools=dct.ToolRecorder(), observer=observer,
    )
    assert watched == plain
    assert watched_sink.entries == plain_sink.entries
    assert dc.to_wire(watched.result) == golden_result(EXAMPLES[0].stem)
    assert [value for kind, value in observer.calls if kind == "event"] == list(plain.events)


def test_a_resumed_run_announces_only_what_this_process_appends() -> None:
    request, scenario = _run(EXAMPLES[0])
    sink = dcj.ListAiOpsJournalSink()
    finished = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), sink=sink)
    journal = dcj.AiOpsJournal(request, tuple(sink.entries))
    half = dcj.AiOpsJournal(journal.request, journal.entries[: len(journal.entries) // 2])
    resumed_at = dcj.journal_status(half).state
    assert len(resumed_at.events) > 0 and finished.events
    blocking = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), journal=half)
    items = list(dca.iter_aiops(request, dca.aiops_scenario_effects(scenario), journal=half))
    assert items[-1] == blocking.result
    assert items[:-1] == list(blocking.events[len(resumed_at.events) :])
    assert blocking.events[: len(resumed_at.events)] == resumed_at.events


def test_a_hook_that_raises_is_reported_and_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    request, scenario = _run(EXAMPLES[0])
    plain = dca.run_aiops(request, dca.aiops_scenario_effects(scenario))

    class Broken(Recording):
        def event_appended(self, event: dca.AiOpsTraceEvent, /) -> None:
            raise RuntimeError("exporter down")

    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, "diagnosis_core.observe"):
        warnings.simplefilter("error")  # a host's -W error never turns the report into a raise
        state = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), observer=Broken())
    assert state == plain
    assert caplog.records and all("exporter down" in r.getMessage() for r in caplog.records)


def test_misuse_is_refused_before_any_agent_runs() -> None:
    request, scenario = _run(EXAMPLES[0])
    effects = dca.aiops_scenario_effects(scenario)
    with pytest.raises(TypeError, match="aiter_aiops needs AsyncAiOpsEffects"):
        dca.aiter_aiops(request, effects)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="iter_aiops needs AiOpsEffects"):
        dca.iter_aiops(request, dca.AsyncAiOpsEffects.from_sync(effects))  # type: ignore[arg-type]
