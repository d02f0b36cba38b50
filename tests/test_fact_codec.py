"""One fact codec: the machine sees what the journal stores, live and reloaded (spec §12.1).

A Python string may hold a high surrogate followed by a low surrogate as two
code points. JSON writes them ``\\ud83d\\ude00``, which every decoder reads
back as the one character U+1F600, so a stored fact holding them would change
meaning on reload. These tests pin that every path — live, journaled,
reloaded, resumed, signed — sees the same fact.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import _builders as b
import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp
from diagnosis_core import ReasonCode
from diagnosis_core.journal import JournalCall

PAIR = "\ud83d" + "\ude00"  # two code points, not the one character U+1F600
KEY = b"fact-codec-key"


def setup(document: dict[str, Any]) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(document)
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def result_json(state: dc.DiagnosisState) -> str:
    return dc.to_json(state.result)


def pair_gatekeeper() -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """A PASS scenario whose gatekeeper result holds the pair in a ``matched_text``."""
    executor = b.executor()
    result = b.gatekeeper_for(executor)
    result["checked_bindings"][0]["matched_text"] += PAIR
    request, effects = setup(b.scenario(executor_=[b.text(executor)]))

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        return copy.deepcopy(result)  # a fresh copy, the pair kept as two code points

    assert PAIR in gatekeeper("run-1", None)["checked_bindings"][0]["matched_text"]  # type: ignore[arg-type,index]
    return request, attrs.evolve(effects, gatekeeper=gatekeeper)


def reloaded(sink: dcj.ListJournalSink, request: dc.DiagnosisRequest) -> dcj.Journal:
    text = dcj.journal_to_json(sink.journal(request))
    text.encode("utf-8")  # what a store writes
    return dcj.Journal.from_json(text)


def test_a_gatekeeper_result_holding_a_surrogate_pair_is_invalid_live_and_reloaded() -> None:
    request, effects = pair_gatekeeper()
    live = dc.run_diagnosis(request, effects)
    assert live.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT

    sink = dcj.ListJournalSink()
    journaled = dc.run_diagnosis(request, pair_gatekeeper()[1], sink=sink)
    assert result_json(journaled) == result_json(live)
    folded = dcj.fold_journal(reloaded(sink, request))
    assert folded.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    assert result_json(folded) == result_json(live)


def test_a_journal_cut_after_the_gatekeeper_resumes_to_the_live_outcome() -> None:
    request, effects = pair_gatekeeper()
    live = dc.run_diagnosis(request, effects)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, pair_gatekeeper()[1], sink=sink)
    journal = reloaded(sink, request)
    cut = next(
        index for index, entry in enumerate(journal.entries)
        if entry.call == JournalCall.GATEKEEPER and entry.outcome is not None
    )
    prefix = attrs.evolve(journal, entries=journal.entries[: cut + 1])
    resumed = dc.run_diagnosis(request, pair_gatekeeper()[1], journal=prefix)
    assert resumed.result.outcome is live.result.outcome
    assert result_json(resumed) == result_json(live)
    assert resumed.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT  # what both must be


def test_a_signed_journal_holding_a_surrogate_pair_verifies_after_reload() -> None:
    request, effects = pair_gatekeeper()
    sink = dcj.ListJournalSink()
    live = dc.run_diagnosis(request, effects, sink=sink, key=KEY)
    folded = dcj.fold_journal(reloaded(sink, request), key=KEY)
    assert result_json(folded) == result_json(live)
    # What both must be (spec §5, §12.1): the pair is a surrogate pair, not a character.
    assert live.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT
    assert folded.result.gatekeeper_status is dcp.GatekeeperStatus.REJECT


def test_a_state_holding_facts_with_surrogate_pairs_round_trips() -> None:
    def planner(input: str, config: dc.RunConfig, /) -> str:
        raise ValueError("planner down " + PAIR)

    for failing in (False, True):
        request, effects = pair_gatekeeper()
        chosen = attrs.evolve(effects, planner=planner) if failing else effects
        state = dc.run_diagnosis(request, chosen)
        text = dc.to_json(state)
        text.encode("utf-8")
        assert dc.from_json(dc.DiagnosisState, text) == state
        report = dc.build_trace_report(state)
        assert dc.from_json(dc.TraceReport, dc.to_json(report)) == report
        assert dc.from_json(dc.DiagnosisResult, dc.to_json(state.result)) == state.result


def test_an_agent_error_message_holding_a_pair_is_the_same_fact_live_and_reloaded() -> None:
    def executor(input: str, config: dc.RunConfig, /) -> str:
        raise ConnectionError("reset by peer " + PAIR)

    def fresh() -> tuple[dc.DiagnosisRequest, dc.Effects]:
        request, effects = setup(b.scenario())
        return request, attrs.evolve(effects, executor=executor)

    request, effects = fresh()
    sink = dcj.ListJournalSink()
    live = dc.run_diagnosis(request, effects, sink=sink, key=KEY)
    unjournaled = dc.run_diagnosis(request, fresh()[1])
    folded = dcj.fold_journal(reloaded(sink, request), key=KEY)
    assert result_json(unjournaled) == result_json(live) == result_json(folded)
    assert dc.from_json(dc.DiagnosisState, dc.to_json(live)) == live
    # What all three must say: the executor failed once, its message stored as §12.1
    # stores a pair (U+FFFD between the halves, so JSON cannot read back another text).
    assert folded.result.reason_code is ReasonCode.EXECUTOR_FAILED
    assert folded.result.calls.executor == 1
    errors = [event.details.error for event in folded.events if event.details.error]
    assert errors == ["ConnectionError: reset by peer \ud83d\ufffd\ude00"]


def test_an_agent_reply_holding_a_pair_is_invalid_output_live_and_reloaded() -> None:
    executor = b.executor()
    executor["claims"][0]["text"] += PAIR
    reply = json.dumps(executor, ensure_ascii=False)
    assert PAIR in reply
    def fresh() -> tuple[dc.DiagnosisRequest, dc.Effects]:
        request, effects = setup(b.scenario())
        return request, attrs.evolve(effects, executor=lambda input, config: reply)

    request, effects = fresh()
    sink = dcj.ListJournalSink()
    live = dc.run_diagnosis(request, effects, sink=sink)
    unjournaled = dc.run_diagnosis(request, fresh()[1])
    folded = dcj.fold_journal(reloaded(sink, request))
    assert unjournaled.result.reason_code is not None
    assert result_json(unjournaled) == result_json(live) == result_json(folded)


async def _arun(request: dc.DiagnosisRequest, effects: dc.Effects) -> dc.DiagnosisState:
    return await dc.arun_diagnosis(request, dc.AsyncEffects.from_sync(effects))


def test_the_asyncio_driver_sees_the_same_fact() -> None:
    import asyncio

    request, effects = pair_gatekeeper()
    live = dc.run_diagnosis(request, effects)
    seen = asyncio.run(_arun(request, pair_gatekeeper()[1]))
    assert result_json(seen) == result_json(live)
    assert seen.result.reason_code is ReasonCode.GATEKEEPER_INVALID_RESULT  # not the sync's echo
    assert seen.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK


def test_a_fact_without_surrogate_pairs_is_stored_byte_for_byte_as_before() -> None:
    request, effects = setup(b.scenario())
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink)
    journal = sink.journal(request)
    gatekeeper = [e for e in journal.entries if e.call is JournalCall.GATEKEEPER][-1]
    assert isinstance(gatekeeper.outcome, dcj.RecordedGatekeeperResult)
    expected = b.gatekeeper_for(b.executor())
    assert gatekeeper.outcome.result_json == dcp.canonical_json(expected)


@pytest.mark.parametrize(
    "field",
    ["question", "history", "skills", "run_id", "metadata"],
)
def test_a_request_holding_a_surrogate_pair_is_refused_when_built(field: str) -> None:
    """Request material JSON cannot store would change on reload: refused (spec §12.1)."""
    run = dc.RunConfig("run-1", "chat-1", {"tenant": "x"})
    text = "a" + PAIR
    arguments: dict[str, Any] = {"question": "q", "run": run}
    if field == "question":
        arguments["question"] = text
    elif field == "history":
        arguments["history"] = (dc.HistoryMessage("user", text),)
    elif field == "skills":
        arguments["skills"] = (dc.Skill(text, "d"),)
    elif field == "run_id":
        arguments["run"] = dc.RunConfig(text, "chat-1")
    else:
        arguments["run"] = dc.RunConfig("run-1", "chat-1", {text: "v"})
    with pytest.raises(dc.ConfigError, match="surrogate"):
        dc.DiagnosisRequest(**arguments)
    lone = dc.DiagnosisRequest(question="q\ud800", run=run)  # a lone one is stored exactly
    assert dc.from_json(dc.DiagnosisRequest, dc.to_json(lone)) == lone


def test_an_aiops_request_holding_a_surrogate_pair_is_refused_when_built() -> None:
    from tests._reach import aiops as dca

    with pytest.raises(dc.ConfigError, match="surrogate"):
        dca.AiOpsRequest(dc.RunConfig("run-1" + PAIR, "s"))


def test_an_aiops_agent_error_holding_a_pair_folds_from_the_reloaded_journal() -> None:
    from tests._reach import aiops as dca

    document = json.loads(
        (Path(__file__).resolve().parent.parent / "examples" / "aiops_payload_targeted.json")
        .read_text(encoding="utf-8")
    )
    scenario = dca.load_aiops_scenario(document)
    request = dca.aiops_scenario_request(scenario)

    def fresh() -> dca.AiOpsEffects:
        effects = dca.aiops_scenario_effects(scenario)

        def planner(input: str, config: dc.RunConfig, /) -> str:
            raise ConnectionError("reset " + PAIR)

        return attrs.evolve(effects, planner=planner)

    plain = dca.run_aiops(request, fresh())
    sink = dcj.ListAiOpsJournalSink()
    live = dca.run_aiops(request, fresh(), sink=sink, key=KEY)
    assert dc.to_json(live.result) == dc.to_json(plain.result)
    text = dcj.journal_to_json(dcj.AiOpsJournal(request, tuple(sink.entries)))
    folded = dcj.fold_journal(dcj.AiOpsJournal.from_json(text), key=KEY)
    assert folded == live
    assert dc.from_json(dca.AiOpsState, dc.to_json(live)) == live
    # What all must say: the planner failed twice (one retry), each message stored as
    # §12.1 stores a pair (U+FFFD between the halves).
    assert folded.result.reason_code is not None
    assert folded.result.reason_code.value == "PLANNER_FAILED"
    assert folded.result.calls.planner == 2 and folded.result.calls.executor == 0
    errors = [event.details.error for event in folded.events if event.details.error]
    assert errors == ["ConnectionError: reset \ud83d\ufffd\ude00"] * 2


@pytest.mark.parametrize("reply", [None, 7, b"{}"])
def test_a_reply_that_is_not_text_is_the_same_fact_live_journaled_and_folded(
    reply: object,
) -> None:
    """The journal records it as a non-retryable ``TypeError``; the live run sees that too."""

    def fresh() -> tuple[dc.DiagnosisRequest, dc.Effects]:
        request, effects = setup(b.scenario())
        return request, attrs.evolve(effects, planner=lambda input, config: reply)

    request, effects = fresh()
    unjournaled = dc.run_diagnosis(request, effects)
    assert unjournaled.result.reason_code is ReasonCode.PLANNER_FAILED
    sink = dcj.ListJournalSink()
    journaled = dc.run_diagnosis(request, fresh()[1], sink=sink)
    folded = dcj.fold_journal(reloaded(sink, request))
    assert result_json(unjournaled) == result_json(journaled) == result_json(folded)
    name = type(reply).__name__
    assert f"TypeError: the agent returned {name}, not message text" in result_json(folded)
