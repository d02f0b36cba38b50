"""One RunOptions value for both workflows' four driver forms (spec §12, §14, §16).

Every misuse is the same RunOptionsError in run/arun/iter/aiter of the chat and
the AIOps workflow; ``options=RunOptions(...)`` runs exactly like the same
keywords; the iterator forms take ``store=``.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Callable
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct
from diagnosis_core.stores import SqliteStore
from tests._reach import journal as dcj

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
KEY = b"k" * 32
FORMS = ("run", "arun", "iter", "aiter")


def _document(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


@attrs.frozen
class Flow:
    """One workflow as a host drives it: its request, effects, drivers and sink."""

    name: str
    request: Any
    effects: Callable[[], Any]
    async_effects: Callable[[], Any]
    drivers: dict[str, Callable[..., Any]]
    sink: Callable[[], Any]
    to_journal: Callable[[Any], str]


def _chat() -> Flow:
    scenario = dc.load_scenario(_document("payment_timeout.json"))
    return Flow(
        "diagnosis",
        dc.scenario_request(scenario),
        lambda: dc.scenario_effects(scenario),
        lambda: dc.AsyncEffects.from_sync(dc.scenario_effects(scenario)),
        {
            "run": dc.run_diagnosis, "arun": dc.arun_diagnosis,
            "iter": dc.iter_diagnosis, "aiter": dc.aiter_diagnosis,
        },
        dcj.ListJournalSink,
        dcj.journal_to_json,
    )


def _aiops() -> Flow:
    scenario = dca.load_aiops_scenario(_document("aiops_payload_targeted.json"))
    return Flow(
        "aiops",
        dca.aiops_scenario_request(scenario),
        lambda: dca.aiops_scenario_effects(scenario),
        lambda: dca.AsyncAiOpsEffects.from_sync(dca.aiops_scenario_effects(scenario)),
        {
            "run": dca.run_aiops, "arun": dca.arun_aiops,
            "iter": dca.iter_aiops, "aiter": dca.aiter_aiops,
        },
        dcj.ListAiOpsJournalSink,
        dcj.journal_to_json,
    )


FLOWS = {"diagnosis": _chat(), "aiops": _aiops()}


def _driver_name(flow: Flow, form: str) -> str:
    return str(flow.drivers[form].__name__)


def _drive(flow: Flow, form: str, **options: Any) -> str:
    """Run one form to its end; the result as canonical JSON."""
    driver = flow.drivers[form]
    asynchronous = form.startswith("a")
    effects = flow.async_effects() if asynchronous else flow.effects()
    if form == "run":
        return dc.to_json(driver(flow.request, effects, **options).result)
    if form == "arun":
        return dc.to_json(asyncio.run(driver(flow.request, effects, **options)).result)
    if form == "iter":
        return dc.to_json(list(driver(flow.request, effects, **options))[-1])

    async def collect() -> list[object]:
        return [item async for item in driver(flow.request, effects, **options)]

    return dc.to_json(asyncio.run(collect())[-1])


def _call(flow: Flow, form: str, **options: Any) -> None:
    """Call one form the way a host does; async ones are awaited."""
    driver = flow.drivers[form]
    effects = flow.async_effects() if form.startswith("a") else flow.effects()
    if form == "arun":
        asyncio.run(driver(flow.request, effects, **options))
    else:
        driver(flow.request, effects, **options)  # an iterator checks its options when called


CASES = [(flow, form) for flow in FLOWS for form in FORMS]


def _misuses(flow: Flow) -> list[tuple[str, dict[str, Any], str]]:
    state = dcm.start_diagnosis(flow.request) if flow.name == "diagnosis" else (
        dcm.start_aiops(flow.request)
    )
    sink = flow.sink()
    return [
        ("state-and-sink", {"state": state, "sink": sink},
         r"state= cannot start a journaling run"),
        ("key-alone", {"key": KEY}, r"key= and tools= record a journal; pass journal= or sink="),
        ("tools-alone", {"tools": dct.ToolRecorder()}, r"key= and tools= record a journal"),
        ("resend-executor-alone", {"resend_executor": True},
         r"resend_executor= and head= resume a journal; pass journal="),
        ("resend-executor-without-tools", {"sink": sink, "resend_executor": True},
         r"resend_executor= needs tools="),
        ("head-without-journal", {"sink": sink, "head": object()},
         r"head= checks a journal being resumed; pass journal="),
        ("store-and-sink", {"store": object(), "sink": sink}, r"sink: not with store="),
        ("store-and-state", {"store": object(), "state": state}, r"state: not with store="),
        ("options-and-keyword", {"options": dc.RunOptions(), "key": KEY},
         r"pass the run options as options= or as keywords, not both \(got options= and key=\)"),
        ("options-not-run-options", {"options": {"key": KEY}},
         r"options= must be a RunOptions, got dict"),
    ]


MISUSE_IDS = [name for name, _, _ in _misuses(FLOWS["diagnosis"])]


@pytest.mark.parametrize("misuse", MISUSE_IDS)
@pytest.mark.parametrize(("flow_name", "form"), CASES)
def test_the_same_misuse_is_the_same_error_everywhere(
    flow_name: str, form: str, misuse: str
) -> None:
    flow = FLOWS[flow_name]
    _, options, message = next(case for case in _misuses(flow) if case[0] == misuse)
    driver = _driver_name(flow, form)
    with pytest.raises(dc.RunOptionsError, match=rf"^{driver}: {message}"):
        _call(flow, form, **options)


@pytest.mark.parametrize(("flow_name", "form"), CASES)
def test_a_flag_that_is_not_a_boolean_is_refused(flow_name: str, form: str) -> None:
    """A truthy string must not re-send an executor whose tools may have run."""
    flow = FLOWS[flow_name]
    refused = r"^resend_executor: expected True or False, got str"
    with pytest.raises(dc.RunOptionsError, match=refused):
        _call(flow, form, sink=flow.sink(), tools=dct.ToolRecorder(), resend_executor="no")
    with pytest.raises(dc.RunOptionsError, match=r"^resend_gatekeeper: expected True or False"):
        dc.RunOptions(resend_gatekeeper=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("flow_name", "form"), CASES)
def test_options_run_exactly_like_the_keywords(flow_name: str, form: str) -> None:
    flow = FLOWS[flow_name]
    loose, packed = flow.sink(), flow.sink()
    by_keywords = _drive(flow, form, sink=loose, key=KEY, tools=dct.ToolRecorder())
    options = dc.RunOptions(sink=packed, key=KEY, tools=dct.ToolRecorder())
    by_options = _drive(flow, form, options=options)
    assert by_options == by_keywords == _drive(flow, form)
    assert flow.to_journal(packed.journal(flow.request)) == flow.to_journal(
        loose.journal(flow.request)
    )
    assert packed.end is not None  # the signed end marker: the journal is complete


@pytest.mark.parametrize(("flow_name", "form"), CASES)
def test_options_resume_exactly_like_the_keywords(flow_name: str, form: str) -> None:
    flow = FLOWS[flow_name]
    recorded = flow.sink()
    _drive(flow, "run", sink=recorded, key=KEY)
    cut = attrs.evolve(recorded.journal(flow.request), entries=recorded.entries[:2], end=None)
    loose, packed = flow.sink(cut.entries), flow.sink(cut.entries)
    by_keywords = _drive(flow, form, journal=cut, sink=loose, key=KEY)
    by_options = _drive(flow, form, options=dc.RunOptions(journal=cut, sink=packed, key=KEY))
    assert by_options == by_keywords
    assert flow.to_journal(packed.journal(flow.request)) == flow.to_journal(
        loose.journal(flow.request)
    )
    assert len(packed.entries) > len(cut.entries) and packed.end is not None


@pytest.mark.parametrize("form", ["iter", "aiter"])
@pytest.mark.parametrize("flow_name", list(FLOWS))
def test_the_iterator_forms_take_a_store(
    tmp_path: pathlib.Path, flow_name: str, form: str
) -> None:
    flow = FLOWS[flow_name]
    store = SqliteStore(tmp_path / "runs.db")
    try:
        pending = flow.drivers[form](
            flow.request, flow.async_effects() if form == "aiter" else flow.effects(),
            options=dc.RunOptions(store=store, key=KEY),
        )
        # Not iterated yet: the run is not claimed, another driver can run it.
        assert _drive(flow, "run", store=store, key=KEY) == _drive(flow, "run")
        del pending
        streamed = _drive(flow, form, store=store, key=KEY)  # resumed from the complete journal
        assert streamed == _drive(flow, "run")
        stored = store.load(flow.request.run.run_id)
        assert stored is not None
        assert stored.journal.end is not None and stored.journal.end.mac is not None
        assert _drive(flow, form, store=store, key=KEY) == streamed  # released after the run
    finally:
        store.close()


@pytest.mark.parametrize(("flow_name", "form"), [(f, m) for f in FLOWS for m in ("iter", "aiter")])
def test_an_iterator_refuses_a_store_that_is_not_one_when_called(
    flow_name: str, form: str
) -> None:
    flow = FLOWS[flow_name]
    with pytest.raises(dcj.StoreError, match=r"^store: expected a JournalStore, got str"):
        _call(flow, form, store="runs.db")


@pytest.mark.parametrize(("flow_name", "form"), CASES)
def test_an_unknown_keyword_is_a_type_error_naming_it(flow_name: str, form: str) -> None:
    flow = FLOWS[flow_name]
    driver = _driver_name(flow, form)
    unknown = rf"^{driver}\(\) got an unexpected keyword argument 'jounral'"
    with pytest.raises(TypeError, match=unknown):
        _call(flow, form, jounral=None)


@pytest.mark.parametrize(("flow_name", "form"), CASES)
def test_a_head_for_a_run_the_store_does_not_hold_is_refused_in_every_form(
    tmp_path: pathlib.Path, flow_name: str, form: str
) -> None:
    # The host kept the head of a run whose journal the store no longer holds (a
    # swapped or restored database): every form refuses before any effect runs,
    # and the claim is released for a later driver (spec §12.2).
    flow = FLOWS[flow_name]
    store = SqliteStore(tmp_path / "runs.db")
    head = dcj.JournalHead(3, "0" * 64)
    try:
        with pytest.raises(
            dcj.JournalError,
            match=r"^head: the store holds no journal of this run; the head commits 3 entries",
        ):
            if form in ("iter", "aiter"):
                _drive(flow, form, store=store, key=KEY, head=head)
            else:
                _call(flow, form, store=store, key=KEY, head=head)
        stored = store.load(flow.request.run.run_id)
        assert stored is None or stored.journal.entries == ()  # nothing ran
        assert _drive(flow, form, store=store, key=KEY) == _drive(flow, "run")
    finally:
        store.close()
