"""What each observer hook is shown, and when (spec §12.5, §14).

Written against the mutants the observer modules' mutation run left alive:
every hook's name and arguments, the order of the hooks around each effect,
the events a resumed run announces (only the new ones), the failure count
(zero for an observer whose hooks return, exact for one whose hooks raise, in
every driver), and the exact text of the log record a failing hook leaves.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
import diagnosis_core.tools as dct
from diagnosis_core.journal import EntryState

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LOGGER = "diagnosis_core.observe"
TAIL = "; the run continues unchanged"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def setup(name: str) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(load(name))
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


class Recording:
    """Every hook call, in order, with its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def run_opened(self, *args: Any) -> None:
        self.calls.append(("run_opened", args))

    def effect_started(self, *args: Any) -> None:
        self.calls.append(("effect_started", args))

    def effect_finished(self, *args: Any) -> None:
        self.calls.append(("effect_finished", args))

    def event_appended(self, *args: Any) -> None:
        self.calls.append(("event_appended", args))

    def tools_recorded(self, *args: Any) -> None:
        self.calls.append(("tools_recorded", args))

    def named(self, hook: str) -> list[tuple[Any, ...]]:
        return [args for name, args in self.calls if name == hook]

    def events(self) -> list[Any]:
        assert all(len(args) == 1 for args in self.named("event_appended"))
        return [args[0] for args in self.named("event_appended")]


class Raising:
    def effect_started(self, action: object, /) -> None:
        raise RuntimeError("down")

    def effect_finished(self, action: object, result: object, /) -> None:
        raise ValueError("down")

    def event_appended(self, event: object, /) -> None:
        raise KeyError("down")


def check_effect_hooks(observer: Recording, effects: int) -> None:
    """started(a) -> finished(a, r) -> the events, per effect; nothing else interleaved."""
    effect_calls = [(n, a) for n, a in observer.calls if n.startswith("effect_")]
    assert len(effect_calls) == 2 * effects
    for (first, started), (second, finished) in zip(
        effect_calls[::2], effect_calls[1::2], strict=True
    ):
        assert (first, second) == ("effect_started", "effect_finished")
        assert len(started) == 1 and len(finished) == 2
        assert started[0] is not None and started[0] == finished[0]
        assert finished[1] is not None


def drivers() -> dict[str, Callable[..., dc.DiagnosisState | None]]:
    def run(request: dc.DiagnosisRequest, effects: dc.Effects, **kw: Any) -> dc.DiagnosisState:
        return dc.run_diagnosis(request, effects, **kw)

    def iterate(request: dc.DiagnosisRequest, effects: dc.Effects, **kw: Any) -> None:
        list(dc.iter_diagnosis(request, effects, **kw))

    def arun(request: dc.DiagnosisRequest, effects: dc.Effects, **kw: Any) -> dc.DiagnosisState:
        return asyncio.run(
            dc.arun_diagnosis(request, dc.AsyncEffects.from_sync(effects), **kw)
        )

    def aiterate(request: dc.DiagnosisRequest, effects: dc.Effects, **kw: Any) -> None:
        async def go() -> None:
            async for _ in dc.aiter_diagnosis(request, dc.AsyncEffects.from_sync(effects), **kw):
                pass

        asyncio.run(go())

    return {"run": run, "iter": iterate, "arun": arun, "aiter": aiterate}


@pytest.mark.parametrize("driver", ["run", "iter", "arun", "aiter"])
@pytest.mark.parametrize("journaled", [False, True])
def test_every_driver_shows_each_hook_its_own_arguments_in_order(
    driver: str, journaled: bool
) -> None:
    name = "redis_latency_evidence_retry.json"
    plain = dc.run_diagnosis(*setup(name))
    request, effects = setup(name)
    observer = Recording()
    sink = dcj.ListJournalSink()
    kwargs: dict[str, Any] = {"observer": observer}
    if journaled:
        kwargs["sink"] = sink
    state = drivers()[driver](request, effects, **kwargs)
    assert observer.calls[0] == ("run_opened", (request.run,))
    assert observer.events() == list(plain.events)
    effects_performed = len(sink.journal(request).entries) if journaled else None
    if effects_performed is None:
        effects_performed = len(observer.named("effect_started"))
        assert effects_performed >= 5
    check_effect_hooks(observer, effects_performed)
    # each effect's events come after its effect_finished and before the next effect
    names = [n for n, _ in observer.calls]
    assert names[1] == "effect_started"
    assert names[-1] == "event_appended"
    if state is not None:  # a hook that returned is not a failure
        assert state.observer_failures == 0


def test_the_gatekeeper_result_an_observer_is_shown_is_the_one_returned() -> None:
    name = "db_pool_forged_citations.json"
    request, effects = setup(name)
    returned: list[object] = []
    gatekeeper = effects.gatekeeper

    def spy(run_id: str, executor_output: Any, /) -> object:
        value = gatekeeper(run_id, executor_output)
        returned.append(json.loads(json.dumps(value)))
        return value

    observer = Recording()
    dc.run_diagnosis(request, attrs.evolve(effects, gatekeeper=spy), observer=observer)
    shown = [
        args[1].raw
        for args in observer.named("effect_finished")
        if isinstance(args[1], dcm.GatekeeperReturned)
    ]
    assert returned and shown == returned


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_raising_observer_is_counted_exactly_by_every_blocking_driver(driver: str) -> None:
    name = "payment_timeout.json"
    request, effects = setup(name)
    sink = dcj.ListJournalSink()
    state = drivers()[driver](request, effects, sink=sink, observer=Raising())
    assert state is not None
    entries = len(sink.journal(request).entries)
    assert state.observer_failures == 2 * entries + len(state.events)
    request, effects = setup(name)
    unwatched = drivers()[driver](request, effects, sink=dcj.ListJournalSink())
    assert unwatched is not None and unwatched.observer_failures == 0


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_the_executor_tools_hook_names_the_executor_call_and_its_recorded_tools(
    tmp_path: Path, driver: str
) -> None:
    from journal_tools_support import DOC, effects_with_tools

    scenario = dc.load_scenario(DOC)
    request = dc.scenario_request(scenario)
    tools = dct.ToolRecorder()
    sink = dcj.ListJournalSink()
    observer = Recording()
    drivers()[driver](
        request, effects_with_tools(tmp_path / "side", tools), sink=sink, tools=tools,
        observer=observer,
    )
    recorded = observer.named("tools_recorded")
    journal = sink.journal(request)
    executor = [e for e in journal.entries if e.tool_invocations is not None]
    assert len(recorded) == len(executor) == 1
    action, invocations = recorded[0]
    assert isinstance(action, dcm.InvokeAgent) and action.agent is dcm.AgentName.EXECUTOR
    assert tuple(invocations) == executor[0].tool_invocations
    assert len(invocations) == 5


def _interrupted(entry: dcj.JournalEntry) -> dcj.JournalEntry:
    return attrs.evolve(
        entry, state=EntryState.STARTED, outcome=None, tool_invocations=None, mac=None
    )


@pytest.mark.parametrize("cut", [2, 3, 4])
def test_a_resumed_run_announces_only_the_events_it_adds(cut: int) -> None:
    name = "redis_latency_evidence_retry.json"
    request, effects = setup(name)
    sink = dcj.ListJournalSink()
    full = dc.run_diagnosis(request, effects, sink=sink)
    entries = sink.journal(request).entries
    prefix = dcj.Journal(request, entries[:cut])
    known = len(dcj.journal_status(prefix).state.events)
    assert 0 < known < len(full.events)
    observer = Recording()
    request, effects = setup(name)
    resumed = dc.run_diagnosis(request, effects, journal=prefix, observer=observer)
    assert observer.calls[0] == ("run_opened", (request.run,))
    assert observer.events() == list(resumed.events[known:])
    assert resumed.observer_failures == 0


def test_a_completed_interrupted_entry_is_written_first_and_its_events_announced() -> None:
    name = "redis_latency_evidence_retry.json"
    request, effects = setup(name)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink)
    entries = sink.journal(request).entries
    at = next(i for i, e in enumerate(entries) if e.call is dcj.JournalCall.EXECUTOR)
    executor = entries[at]
    journal = dcj.Journal(request, (*entries[:at], _interrupted(executor)))
    known = len(dcj.journal_status(journal).state.events)
    observer = Recording()
    resumed_sink = dcj.ListJournalSink()
    request, effects = setup(name)
    state = dc.run_diagnosis(
        request, effects, journal=journal, sink=resumed_sink, observer=observer
    )
    written = resumed_sink.journal(request).entries
    assert written[0].state is EntryState.FINISHED
    assert written[0].call == executor.call and written[0].attempt == executor.attempt
    assert isinstance(written[0].outcome, dcj.RecordedAgentError)  # the interruption
    assert dcj.INTERRUPTED_MESSAGE in written[0].outcome.message
    assert observer.events() == list(state.events[known:])
    assert len(observer.events()) > 0


# --- AIOps ---------------------------------------------------------------------


def aiops_setup(name: str) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    scenario = dca.load_aiops_scenario(load(name))
    return dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)


@pytest.mark.parametrize("cut", [1, 2])
def test_a_resumed_aiops_run_announces_the_events_its_resume_appended(cut: int) -> None:
    name = "aiops_rule_violation.json"
    request, effects = aiops_setup(name)
    sink = dcj.ListAiOpsJournalSink()
    dca.run_aiops(request, effects, sink=sink)
    entries = sink.journal(request).entries
    journal = dcj.AiOpsJournal(
        request,
        (*entries[:cut], attrs.evolve(
            entries[cut], state=EntryState.STARTED, outcome=None, tool_invocations=None, mac=None
        )),
    )
    known = len(dcj.journal_status(journal).state.events)
    observer = Recording()
    request, effects = aiops_setup(name)
    state = dca.run_aiops(request, effects, journal=journal, observer=observer)
    assert observer.events() == list(state.events[known:])
    assert observer.events()


# --- the log record a failing hook leaves ------------------------------------


class Fails:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def event_appended(self, *args: object) -> None:
        raise self.error


def logged(caplog: pytest.LogCaptureFixture, error: Exception) -> str:
    caplog.clear()
    with caplog.at_level(logging.WARNING, LOGGER):
        dcm.notify(Fails(error), "event_appended", 1)
    records = [r for r in caplog.records if r.name == LOGGER]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    return records[0].getMessage()


def test_the_log_record_names_the_hook_the_type_and_the_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    head = "observer hook event_appended raised "
    assert logged(caplog, RuntimeError("down")) == head + "RuntimeError: down" + TAIL
    assert logged(caplog, RuntimeError()) == head + "RuntimeError" + TAIL
    exact = "x" * 500
    assert logged(caplog, ValueError(exact)) == head + "ValueError: " + exact + TAIL
    long = "y" * 501
    assert logged(caplog, ValueError(long)) == head + "ValueError: " + "y" * 500 + "…" + TAIL


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_an_unprintable_exception_is_named_and_marked(caplog: pytest.LogCaptureFixture) -> None:
    assert logged(caplog, Unprintable()) == (
        "observer hook event_appended raised Unprintable (unprintable)" + TAIL
    )


class BrokenFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        raise RuntimeError("logging is down")


def test_a_broken_logging_setup_does_not_let_a_hook_failure_escape() -> None:
    logger = logging.getLogger(LOGGER)
    broken = BrokenFilter()
    logger.addFilter(broken)
    try:
        dcm.notify(Fails(RuntimeError("down")), "event_appended", 1)
        request, effects = setup("payment_timeout.json")
        state = dc.run_diagnosis(request, effects, observer=Raising())
    finally:
        logger.removeFilter(broken)
    assert state.observer_failures > 0
    assert state.result.outcome is dc.run_diagnosis(*setup("payment_timeout.json")).result.outcome


class HostileName(type):
    """A metaclass whose classes cannot tell their name."""

    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class Nameless(Exception, metaclass=HostileName):
    pass


def test_an_exception_whose_type_has_no_name_is_logged_as_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert logged(caplog, Nameless("down")) == (
        "observer hook event_appended raised Exception: down" + TAIL
    )
