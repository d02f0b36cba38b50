"""Observers only watch (spec §12.5, §14).

A hook that raises is reported through ``logging`` (logger
``diagnosis_core.observe``) and counted, never raised — even when the host
turns warnings into errors — and a hook never receives a value the machine
reads afterwards.
"""

from __future__ import annotations

import asyncio
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from adapters.adapter_support import golden_result

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core import Outcome, ReasonCode
from diagnosis_core.journal import EntryState

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def setup(document: dict[str, Any]) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(document)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


class Raising:
    def effect_started(self, action: object, /) -> None:
        raise RuntimeError("down")

    def effect_finished(self, action: object, result: object, /) -> None:
        raise ValueError("down")

    def event_appended(self, event: object, /) -> None:
        raise KeyError("down")


def test_a_raising_observer_never_escapes_a_driver_under_warnings_as_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    document = load("redis_latency_evidence_retry.json")
    expected = dc.to_json(dc.run_diagnosis(*setup(document)).result)
    request, effects = setup(document)
    sink = dcj.ListJournalSink()
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, "diagnosis_core.observe"):
        warnings.simplefilter("error")
        state = dc.run_diagnosis(request, effects, sink=sink, observer=Raising())
    assert dc.to_json(state.result) == expected
    entries = sink.journal(request).entries
    assert all(entry.state == EntryState.FINISHED for entry in entries)
    records = [r for r in caplog.records if r.name == "diagnosis_core.observe"]
    assert records and "effect_started raised RuntimeError: down" in records[0].getMessage()
    effects_performed = len(entries)
    assert state.observer_failures == 2 * effects_performed + len(state.events)
    report = dc.build_trace_report(state)
    assert report.observer_failures == state.observer_failures
    assert json.loads(dc.to_json(report))["observer_failures"] == state.observer_failures


def test_the_other_drivers_keep_a_raising_observer_inside_too() -> None:
    document = load("payment_timeout.json")
    expected = dc.to_json(dc.run_diagnosis(*setup(document)).result)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        request, effects = setup(document)
        items = list(dc.iter_diagnosis(request, effects, observer=Raising()))
        assert dc.to_json(items[-1]) == expected

        async def run() -> tuple[dc.DiagnosisState, list[object]]:
            request, effects = setup(document)
            state = await dc.arun_diagnosis(
                request, dc.AsyncEffects.from_sync(effects), observer=Raising()
            )
            request, effects = setup(document)
            streamed = [
                item async for item in dc.aiter_diagnosis(
                    request, dc.AsyncEffects.from_sync(effects), observer=Raising()
                )
            ]
            return state, streamed

        state, streamed = asyncio.run(run())
    assert dc.to_json(state.result) == expected
    assert dc.to_json(streamed[-1]) == expected


def test_without_observer_failures_the_trace_report_bytes_are_unchanged() -> None:
    state = dc.run_diagnosis(*setup(load("payment_timeout.json")))
    assert state.observer_failures == 0
    text = dc.to_json(dc.build_trace_report(state))
    assert "observer_failures" not in text
    assert "observer_failures" not in dc.to_json(state)


class EditsTheGatekeeperResult:
    """Turns every gatekeeper result it is shown into a clean PASS of nothing."""

    def effect_finished(self, action: object, result: object, /) -> None:
        if isinstance(result, dcm.GatekeeperReturned) and isinstance(result.raw, dict):
            result.raw.clear()
            result.raw.update({"status": "pass", "checked_bindings": [], "reason_codes": []})


def test_an_observer_editing_the_gatekeeper_result_changes_neither_run_nor_journal() -> None:
    document = load("db_pool_forged_citations.json")
    plain = dc.run_diagnosis(*setup(document))
    request, effects = setup(document)
    sink = dcj.ListJournalSink()
    watched = dc.run_diagnosis(request, effects, sink=sink, observer=EditsTheGatekeeperResult())
    assert dc.to_json(watched.result) == dc.to_json(plain.result)
    folded = dcj.fold_journal(dcj.Journal.from_json(dcj.journal_to_json(sink.journal(request))))
    assert dc.to_json(folded.result) == dc.to_json(plain.result)
    request, effects = setup(document)
    unjournaled = dc.run_diagnosis(request, effects, observer=EditsTheGatekeeperResult())
    assert dc.to_json(unjournaled.result) == dc.to_json(plain.result)
    # The run the observer could not change is the one the corpus holds (a REJECT).
    assert dc.to_wire(plain.result) == golden_result("db_pool_forged_citations")


def test_an_observer_editing_a_reject_cannot_turn_it_into_an_answer() -> None:
    document = load("db_pool_forged_citations.json")
    request, effects = setup(document)
    state = dc.run_diagnosis(request, effects, observer=EditsTheGatekeeperResult())
    plain = dc.run_diagnosis(*setup(document))
    assert state.result.outcome is plain.result.outcome
    assert state.result.reason_code is plain.result.reason_code
    # And that is still the REJECT it was (not an answer both runs agree on).
    assert state.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_REJECTED


def test_the_observer_warning_class_stays_importable() -> None:
    assert issubclass(dc.ObserverWarning, RuntimeWarning)


def test_a_hook_whose_exception_cannot_be_printed_is_still_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    class Observer:
        def event_appended(self, event: object, /) -> None:
            raise Unprintable

    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, "diagnosis_core.observe"):
        warnings.simplefilter("error")
        state = dc.run_diagnosis(*setup(load("payment_timeout.json")), observer=Observer())
    assert state.result.outcome is Outcome.ANSWERED or state.result.reason_code in ReasonCode
    assert any("Unprintable" in r.getMessage() for r in caplog.records)
