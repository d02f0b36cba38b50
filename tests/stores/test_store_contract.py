"""The journal store contract (spec §16): one suite for the JSON Lines, SQLite, PostgreSQL stores.

Every test runs against each store kind (``store_kind``): recording and
resuming through the drivers, the append rules, exclusive claims (also across
processes), listing, feedback, and the entry codec.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_support import (
    ROOT,
    chat_example_docs,
    failing_effects,
    load_example,
    scenario_of,
    with_ids,
)

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core.journal import RunClaimedError, StoreError, entry_from_json, entry_to_json
from diagnosis_core.stores import open_store, record_feedback
from diagnosis_core.stores._base import StoreBase

KEY = b"store contract key"


def _reference(doc: dict[str, object]) -> tuple[dc.DiagnosisState, dcj.Journal]:
    request, effects = scenario_of(doc)
    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(request, effects, sink=sink)
    return state, sink.journal(request)


@pytest.mark.parametrize(("name", "doc"), chat_example_docs(), ids=lambda v: str(v)[:30])
def test_every_example_records_the_journal_the_list_sink_records(
    store: StoreBase, name: str, doc: dict[str, object]
) -> None:
    doc = with_ids(doc)
    expected_state, expected_journal = _reference(doc)
    request, effects = scenario_of(doc)
    state = dc.run_diagnosis(request, effects, store=store)
    assert dc.to_json(state.result) == dc.to_json(expected_state.result)
    stored = store.load(request.run.run_id)
    assert stored is not None
    assert stored.journal == expected_journal
    assert dcj.journal_to_json(stored.journal) == dcj.journal_to_json(expected_journal)
    assert len(stored.durations) == len(expected_journal.entries)
    assert all(d is not None and d >= 0 for d in stored.durations)
    assert stored.session_id == request.run.session_id


def test_a_complete_run_folds_from_the_store_without_any_effect(store: StoreBase) -> None:
    doc = with_ids(load_example("redis_latency_evidence_retry"))
    request, effects = scenario_of(doc)
    first = dc.run_diagnosis(request, effects, store=store)
    again = dc.run_diagnosis(request, failing_effects(), store=store)
    assert again == first
    assert store.runs(session_id=request.run.session_id)[0].entry_count == len(
        store.load(request.run.run_id).journal.entries  # type: ignore[union-attr]
    )


def test_signed_runs_verify_from_the_store_and_a_wrong_key_is_refused(store: StoreBase) -> None:
    doc = with_ids(load_example("payment_timeout"))
    request, effects = scenario_of(doc)
    state = dc.run_diagnosis(request, effects, store=store, key=KEY)
    stored = store.load(request.run.run_id)
    assert stored is not None and all(entry.mac for entry in stored.journal.entries)
    assert dcj.fold_journal(stored.journal, key=KEY) == state
    with pytest.raises(dc.JournalError, match=r"entries\[0\]\.mac: does not match"):
        dc.run_diagnosis(request, failing_effects(), store=store, key=b"another key")


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_an_interrupted_run_resumes_by_the_resume_rule(store: StoreBase, cut: int) -> None:
    """The journal ends with a started entry: §12 decides what resuming does."""
    doc = with_ids(load_example("payment_timeout"))
    expected_state, journal = _reference(doc)
    request, _ = scenario_of(doc)
    interrupted = journal.entries[cut - 1]
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        for entry in journal.entries[: cut - 1]:
            store.append(claim, entry)
        store.append(claim, dcj.JournalEntry(
            interrupted.seq, interrupted.call, interrupted.round, interrupted.attempt,
            interrupted.input_sha256, dcj.EntryState.STARTED,
        ))
    calls: list[str] = []
    _, effects = scenario_of(doc)

    def counting(name: str, agent: dc.AgentInvoker) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            calls.append(name)
            return agent(input, config)
        return call

    # a fresh script that skips the responses already used by the finished entries
    scenario = dc.load_scenario(doc)
    import attrs

    used = {agent: sum(1 for e in journal.entries[: cut - 1] if e.call.value == agent.value)
            for agent in dcm.AgentName}
    responses = {agent: scenario.responses[agent][used[agent]:] for agent in dcm.AgentName}
    resumed = attrs.evolve(scenario, responses=responses)
    effects = dc.scenario_effects(resumed)
    effects = attrs.evolve(effects, **{
        name: counting(name, getattr(effects, name))
        for name in ("planner", "executor", "verifier", "composer")
    })
    state = dc.run_diagnosis(request, effects, store=store)
    stored = store.load(request.run.run_id)
    assert stored is not None
    assert stored.journal.entries[-1].state is dcj.EntryState.FINISHED
    assert [e.seq for e in stored.journal.entries] == list(
        range(1, len(stored.journal.entries) + 1)
    )
    if interrupted.call is dcj.JournalCall.EXECUTOR:
        assert "executor" not in calls  # never re-sent
        assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
    elif interrupted.call is dcj.JournalCall.GATEKEEPER:
        assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    else:
        assert dc.to_json(state.result) == dc.to_json(expected_state.result)
    assert dcj.fold_journal(stored.journal) == state


def test_appends_must_follow_and_a_finished_entry_is_never_replaced(store: StoreBase) -> None:
    doc = with_ids(load_example("payment_timeout"))
    _, journal = _reference(doc)
    request, _ = scenario_of(doc)
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        with pytest.raises(StoreError, match="entry 2 does not follow entry 0"):
            store.append(claim, journal.entries[1])
        store.append(claim, journal.entries[0])
        with pytest.raises(StoreError, match="entry 1 is finished; a stored fact is never"):
            store.append(claim, journal.entries[0])
    with pytest.raises(StoreError, match="the claim is not held"):
        store.append(claim, journal.entries[1])
    stored = store.load(request.run.run_id)
    assert stored is not None and stored.journal.entries == journal.entries[:1]


def test_a_second_writer_is_refused_while_the_first_holds_the_run(url: str) -> None:
    first, second = open_store(url), open_store(url)
    try:
        doc = with_ids(load_example("payment_timeout"))
        request, effects = scenario_of(doc)
        with first.claim(request.run.run_id):
            with pytest.raises(RunClaimedError, match="another live writer holds it"):
                second.claim(request.run.run_id)
            with pytest.raises(RunClaimedError):
                dc.run_diagnosis(request, failing_effects(), store=second)
            with pytest.raises(RunClaimedError, match="already claimed by this store"):
                first.claim(request.run.run_id)
        state = dc.run_diagnosis(request, effects, store=second)
        assert state.result.outcome is dc.Outcome.ANSWERED
    finally:
        first.close()
        second.close()


_HOLDER = """
import sys, time
from diagnosis_core.stores import open_store
store = open_store(sys.argv[1])
claim = store.claim(sys.argv[2])
print("held", flush=True)
time.sleep(120)
"""


def test_a_killed_holder_frees_the_run_for_exactly_one_claimant(url: str) -> None:
    run_id = f"run-held-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, url, run_id],
                              stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = open_store(url)
        with pytest.raises(RunClaimedError):
            store.claim(run_id)
        holder.kill()
        holder.wait(30)
        deadline = time.monotonic() + 20
        while True:  # the PostgreSQL server notices the closed socket almost at once
            try:
                claim = store.claim(run_id)
                break
            except RunClaimedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        other = open_store(url)
        with pytest.raises(RunClaimedError):
            other.claim(run_id)
        store.release(claim)
        other.close()
        store.close()
    finally:
        holder.kill()
        holder.wait(30)


def test_runs_are_listed_by_session_and_time_in_the_order_first_stored(store: StoreBase) -> None:
    session = f"session-{time.monotonic_ns()}"
    names = ["payment_timeout", "composer_fails_twice", "db_pool_forged_citations"]
    run_ids = []
    for index, name in enumerate(names):
        doc = with_ids(load_example(name), run_id=f"{session}-{index}", session_id=session)
        request, effects = scenario_of(doc)
        dc.run_diagnosis(request, effects, store=store)
        run_ids.append(request.run.run_id)
        if index == 0:
            time.sleep(0.01)
            middle = time.time()
    listed = store.runs(session_id=session)
    assert [item.run_id for item in listed] == run_ids
    assert [item.run_id for item in store.runs(session_id=session, since=middle)] == run_ids[1:]
    assert store.runs(session_id=f"{session}-none") == ()
    assert store.load("no-such-run") is None


def test_feedback_follows_the_end_is_checked_and_never_changes_the_fold(store: StoreBase) -> None:
    doc = with_ids(load_example("payment_timeout"))
    request, effects = scenario_of(doc)
    state = dc.run_diagnosis(request, effects, store=store, key=KEY)
    with pytest.raises(StoreError, match="rating: expected an integer from 1 to 5, got 6"):
        record_feedback(store, request.run.run_id, 6)
    with pytest.raises(StoreError, match="not in the store"):
        record_feedback(store, "no-such-run", 3)
    first = record_feedback(store, request.run.run_id, 5, "spot on", key=KEY)
    second = record_feedback(store, request.run.run_id, 2, None, key=KEY)
    assert first.mac is not None and second.mac is not None and first.mac != second.mac
    stored = store.load(request.run.run_id)
    assert stored is not None
    assert [(f.rating, f.comment) for f in stored.feedback] == [(5, "spot on"), (2, None)]
    assert dcj.fold_journal(stored.journal, key=KEY) == state
    assert dc.run_diagnosis(request, failing_effects(), store=store, key=KEY) == state


def test_feedback_before_the_run_ended_is_refused(store: StoreBase) -> None:
    doc = with_ids(load_example("payment_timeout"))
    _, journal = _reference(doc)
    request, _ = scenario_of(doc)
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        store.append(claim, journal.entries[0])
    with pytest.raises(StoreError, match="has not ended"):
        record_feedback(store, request.run.run_id, 4)


def test_the_store_refuses_another_request_under_a_stored_run_id(store: StoreBase) -> None:
    doc = with_ids(load_example("payment_timeout"))
    request, effects = scenario_of(doc)
    dc.run_diagnosis(request, effects, store=store)
    other = dict(doc, question="a different question")
    other_request, _ = scenario_of(other)
    with pytest.raises(dc.JournalError, match="request: the journal is of another request"):
        dc.run_diagnosis(other_request, failing_effects(), store=store)


def test_store_options_that_conflict_are_refused(store: StoreBase) -> None:
    doc = with_ids(load_example("payment_timeout"))
    request, effects = scenario_of(doc)
    with pytest.raises(ValueError, match="sink: not with store="):
        dc.run_diagnosis(request, effects, store=store, sink=dcj.ListJournalSink())


def test_arun_diagnosis_records_into_the_store(store: StoreBase) -> None:
    import asyncio

    doc = with_ids(load_example("payment_timeout"))
    expected, journal = _reference(doc)
    request, effects = scenario_of(doc)

    def lift(call: object) -> object:
        async def run(*args: object) -> object:
            return call(*args)  # type: ignore[operator]
        return run

    async_effects = dc.AsyncEffects(
        planner=lift(effects.planner), executor=lift(effects.executor),  # type: ignore[arg-type]
        verifier=lift(effects.verifier), composer=lift(effects.composer),  # type: ignore[arg-type]
        gatekeeper=lift(effects.gatekeeper),  # type: ignore[arg-type]
    )
    state = asyncio.run(dc.arun_diagnosis(request, async_effects, store=store))
    assert state == expected
    stored = store.load(request.run.run_id)
    assert stored is not None and stored.journal == journal


def test_the_aiops_driver_records_into_the_store(store: StoreBase) -> None:
    from diagnosis_core._aiops.replay import aiops_scenario_effects, aiops_scenario_request
    from diagnosis_core.aiops import load_aiops_scenario, replay_aiops_scenario

    doc = load_example("aiops_payload_targeted")
    doc["run"] = {**doc.get("run", {}), "run_id": f"aiops-{time.monotonic_ns()}",
                  "session_id": "aiops-session"}
    scenario = load_aiops_scenario(doc)
    expected = replay_aiops_scenario(scenario)
    from diagnosis_core.aiops import run_aiops

    request = aiops_scenario_request(scenario)
    state = run_aiops(request, aiops_scenario_effects(scenario), store=store)
    assert state.result == expected.result
    stored = store.load(request.run.run_id)
    assert stored is not None and stored.format == "aiops_journal_v2"
    assert dcj.fold_journal(stored.journal) == state


def test_entry_codec_round_trips_exactly_and_names_bad_paths() -> None:
    _, journal = _reference(load_example("tool_ledger_reference_gatekeeper"))
    signed = dcj.sign_journal(journal, KEY)
    for entry in signed.entries:
        text = entry_to_json(entry)
        assert "\n" not in text
        assert entry_from_json(text) == entry
        assert json.loads(text) == dcj.journal_to_wire(signed)["entries"][entry.seq - 1]
    assert dcj.entry_to_json is entry_to_json and dcj.entry_from_json is entry_from_json
    with pytest.raises(dc.JournalError, match=r"entry\.outcome: missing"):
        entry_from_json('{"seq":1,"call":"planner","round":1,"attempt":1,'
                        f'"input_sha256":"{"a" * 64}","state":"finished"}}')
    with pytest.raises(dc.JournalError, match=r"entry: invalid JSON|entry.*JSON"):
        entry_from_json('{"seq":')


def test_store_urls_name_the_three_stores(tmp_path: Path) -> None:
    from diagnosis_core.stores import JsonlStore, SqliteStore

    assert isinstance(open_store(str(tmp_path / "a.jsonl")), JsonlStore)
    assert isinstance(open_store(f"sqlite:///{tmp_path / 'a.db'}"), SqliteStore)
    for bad in ("mysql://x", str(tmp_path / "a.txt"), "sqlite:///", ""):
        with pytest.raises(StoreError, match="store URL"):
            open_store(bad)


def test_feedback_on_a_run_the_store_never_saw_is_refused(store: StoreBase) -> None:
    from diagnosis_core.journal import Feedback

    with pytest.raises(StoreError, match="run 'never-stored': not in the store"):
        store.add_feedback("never-stored", Feedback(3, None, 1))


def test_an_unreachable_database_is_a_store_error() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError, match="cannot open the PostgreSQL store"):
        open_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
