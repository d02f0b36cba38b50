"""Wiring mistakes are ``TypeError``s before any effect runs (spec §2, §15).

A missing, ``None``, non-callable or wrong-arity effect, effects of the other
driver's kind, and a gatekeeper built over another tool recorder than
``tools=`` are the host's bugs: without these checks each ran until the
effect was called and ended as a polite fallback answer. Every refusal names
the field and what was expected, and comes before the run is written to a
sink or a store.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.stores as dcst
import diagnosis_core.tools as dct
from diagnosis_core._chat.run_recorders import refuse_foreign_gatekeeper

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
AGENT = r"\(input: str, config: RunConfig\) -> str"


def setup() -> tuple[dc.DiagnosisRequest, dc.Effects]:
    document: dict[str, Any] = json.loads(
        (EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8")
    )
    scenario = dc.load_scenario(document)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def fields(effects: object) -> dict[str, Any]:
    return {field.name: getattr(effects, field.name) for field in attrs.fields(type(effects))}


def test_a_none_composer_is_refused_naming_the_field_and_the_signature() -> None:
    _, effects = setup()
    expected = rf"^Effects\.composer: expected a callable {AGENT}, got None$"
    with pytest.raises(TypeError, match=expected):
        dc.Effects(**{**fields(effects), "composer": None})


def test_a_non_callable_gatekeeper_is_refused() -> None:
    _, effects = setup()
    with pytest.raises(
        TypeError,
        match=r"Effects\.gatekeeper: expected a callable \(run_id: str, executor_output: "
        r"ExecutorEvidence\) -> object, got dict \(not callable\)",
    ):
        dc.Effects(**{**fields(effects), "gatekeeper": {"status": "pass"}})


def test_an_agent_of_the_wrong_arity_is_refused() -> None:
    _, effects = setup()

    def planner(input: str) -> str:
        return input

    with pytest.raises(TypeError, match=rf"Effects\.planner: expected a callable {AGENT}, got "
                       r"planner\(input\), which cannot be called with 2 positional arguments$"):
        dc.Effects(**{**fields(effects), "planner": planner})
    with pytest.raises(TypeError, match=r"Effects\.verifier: expected a callable"):
        dc.Effects(**{**fields(effects), "verifier": lambda input, *, config: input})


def test_a_missing_effect_is_a_type_error_naming_it() -> None:
    _, effects = setup()
    given = fields(effects)
    del given["executor"]
    with pytest.raises(TypeError, match="executor"):
        dc.Effects(**given)


def test_callables_that_take_the_arguments_are_accepted() -> None:
    _, effects = setup()

    def defaults(input: str, config: object = None, extra: int = 0) -> str:
        return input

    def star(*args: object) -> str:
        return ""

    class Agent:
        def __call__(self, input: str, config: object, /) -> str:
            return input

    for agent in (defaults, star, Agent(), functools.partial(defaults, extra=1), print):
        # print: a builtin whose signature cannot be read is accepted as given
        dc.Effects(**{**fields(effects), "planner": agent})
    dc.Effects(**{**fields(effects), "classifier": lambda error: dc.FailureKind.RETRYABLE})
    with pytest.raises(TypeError, match=r"Effects\.classifier: expected a callable "
                       r"\(error: BaseException\) -> FailureKind"):
        dc.Effects(**{**fields(effects), "classifier": lambda: None})


def test_async_and_aiops_effects_check_their_fields_too() -> None:
    _, effects = setup()
    wrapped = dc.AsyncEffects.from_sync(effects)
    with pytest.raises(TypeError, match=r"AsyncEffects\.composer: expected a callable \(input: "
                       r"str, config: RunConfig\) -> Awaitable\[str\], got None"):
        dc.AsyncEffects(**{**fields(wrapped), "composer": None})
    scenario = dca.load_aiops_scenario(
        json.loads(sorted(EXAMPLES.glob("aiops*.json"))[0].read_text(encoding="utf-8"))
    )
    aiops = dca.aiops_scenario_effects(scenario)
    with pytest.raises(TypeError, match=rf"AiOpsEffects\.reporter: expected a callable {AGENT}"):
        dca.AiOpsEffects(**{**fields(aiops), "reporter": None})
    with pytest.raises(TypeError, match=r"AsyncAiOpsEffects\.supervisor: .*cannot be called"):
        dca.AsyncAiOpsEffects(
            **{**fields(dca.AsyncAiOpsEffects.from_sync(aiops)), "supervisor": lambda: None}
        )


def test_effects_changed_after_construction_are_refused_by_the_driver_before_any_call() -> None:
    request, effects = setup()
    object.__setattr__(effects, "composer", None)
    sink = dcj.ListJournalSink()
    with pytest.raises(TypeError, match=r"Effects\.composer: expected a callable"):
        dc.run_diagnosis(request, effects, sink=sink)
    assert sink.entries == []
    with pytest.raises(TypeError, match=r"Effects\.composer"):
        dc.iter_diagnosis(request, effects)


def test_sync_effects_given_to_the_async_driver_with_a_store_write_nothing(
    tmp_path: Path,
) -> None:
    request, effects = setup()
    store = dcst.SqliteStore(tmp_path / "runs.sqlite")
    try:
        with pytest.raises(TypeError, match="arun_diagnosis needs AsyncEffects"):
            asyncio.run(dc.arun_diagnosis(request, effects, store=store))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="run_diagnosis needs Effects"):
            dc.run_diagnosis(request, dc.AsyncEffects.from_sync(effects), store=store)  # type: ignore[arg-type]
        assert store.load(request.run.run_id) is None
        assert store.runs() == ()
        # And the right effects then run the request from scratch, in the same store.
        state = dc.run_diagnosis(request, effects, store=store)
        assert state.result.outcome is not None
        loaded = store.load(request.run.run_id)
        assert loaded is not None and loaded.journal.entries
    finally:
        store.close()


def test_a_gatekeeper_over_another_recorder_than_tools_is_refused_naming_both() -> None:
    request, effects = setup()
    other, tools = dct.ToolRecorder(), dct.ToolRecorder()
    wrong = dc.Effects(**{**fields(effects), "gatekeeper": other.gatekeeper()})
    sink = dcj.ListJournalSink()
    message = rf"gatekeeper was built over <ToolRecorder at {id(other):#x}> .* tools= is " \
        rf"<ToolRecorder at {id(tools):#x}>"
    with pytest.raises(TypeError, match=message):
        dc.run_diagnosis(request, wrong, sink=sink, tools=tools)
    with pytest.raises(TypeError, match=message):
        dc.aiter_diagnosis(request, dc.AsyncEffects.from_sync(wrong), sink=sink, tools=tools)
    assert sink.entries == []
    right = dc.Effects(**{**fields(effects), "gatekeeper": tools.gatekeeper()})
    dc.run_diagnosis(request, right, sink=sink, tools=tools)
    assert sink.entries


def test_run_recorders_gatekeepers_are_checked_against_their_factory() -> None:
    recorders, others = dct.RunRecorders(), dct.RunRecorders()
    refuse_foreign_gatekeeper(recorders.gatekeeper(), recorders, "adapter")
    with pytest.raises(TypeError, match=r"adapter: the gatekeeper was built over <RunRecorders"):
        refuse_foreign_gatekeeper(others.gatekeeper(), recorders, "adapter")
    with pytest.raises(TypeError, match="reads one ToolRecorder"):
        refuse_foreign_gatekeeper(dct.ToolRecorder().gatekeeper(), recorders, "adapter")
    refuse_foreign_gatekeeper(lambda run_id, output: {}, recorders, "adapter")  # not ours: as given


def test_unusual_callables_are_read_right_or_accepted() -> None:
    _, effects = setup()

    class Static:
        __call__ = staticmethod(lambda input, config: input)

    class Hostile:
        def __call__(self, input: str, config: object, /) -> str:
            return input

        def __getattr__(self, name: str) -> object:
            raise RuntimeError(f"no {name}")

    class Short:
        def __call__(self, input: str) -> str:
            return input

    for agent in (Static(), Hostile()):
        dc.Effects(**{**fields(effects), "planner": agent})
    with pytest.raises(TypeError, match=r"Effects\.planner: .*cannot be called with 2"):
        dc.Effects(**{**fields(effects), "planner": Short()})
