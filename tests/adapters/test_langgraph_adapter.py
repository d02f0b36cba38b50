"""The LangGraph adapter on the run journal: graph shape, state = facts, resume, forgeries."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, golden_result, load_doc, reference_state, scenario_of
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from langgraph_support import edit_entry, forge_checkpoint

import diagnosis_core as dc
import diagnosis_core.machine as dcm
import diagnosis_core.scenarios as dcs
from diagnosis_core.adapters.langgraph import (
    EFFECT_NODES,
    EXECUTOR_NODE,
    GATEKEEPER_NODE,
    PLANNER_NODE,
    VERIFIER_NODE,
    aresume_diagnosis_graph,
    arun_diagnosis_graph,
    build_diagnosis_graph,
    diagnosis_journal_of,
    diagnosis_state_graph,
    diagnosis_state_of,
    graph_input,
    graph_run_config,
    recursion_limit_for,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)
from tests._reach import journal as dcj

REDIS = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
PAYMENT = EXAMPLES_DIR / "payment_timeout.json"
KEY = b"host key"


class Crash(BaseException):
    """What a process dying mid-effect looks like from inside: nothing after it runs."""


def _text(doc: dict[str, Any], agent: str, index: int = 0) -> str:
    text: str = doc["responses"][agent][index]["text"]
    return text


def _config(thread: str = "t") -> Any:
    return graph_run_config(dc.DiagnosisConfig(), thread_id=thread)


# --- shape and state -------------------------------------------------------------------


def test_graph_has_one_node_per_agent_and_one_for_the_gatekeeper() -> None:
    _, effects = scenario_of(load_doc(PAYMENT))
    nodes = set(build_diagnosis_graph(effects).get_graph().nodes)
    assert nodes == {"__start__", *EFFECT_NODES, "__end__"}
    assert EFFECT_NODES == ("planner", "executor", "verifier", "composer", "gatekeeper")


def test_graph_state_holds_the_request_and_the_journal_only() -> None:
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    values = build_diagnosis_graph(effects).invoke(
        graph_input(request), graph_run_config(request.config)
    )
    assert set(values) <= {"request", "journal", "trace"}
    assert values.get("trace", []) == []  # trace events travel in updates only
    texts = [values["request"], *values["journal"]]
    assert all(isinstance(text, str) and text.isascii() for text in texts)
    journal = diagnosis_journal_of(values)
    assert [entry.state for entry in journal.entries] == [dcj.EntryState.FINISHED] * 5
    expected = reference_state(doc)
    assert dcj.replay_journal(journal) == json.loads(dc.to_json(expected.result))
    assert dc.to_json(diagnosis_state_of(values)) == dc.to_json(expected)


def test_stream_updates_name_the_agent_and_carry_one_entry_and_its_trace_events() -> None:
    doc = load_doc(REDIS)
    request, effects = scenario_of(doc)
    graph = build_diagnosis_graph(effects)
    updates = list(graph.stream(graph_input(request), graph_run_config(request.config)))
    expected = reference_state(doc)
    events: list[Any] = []
    for started, finished in zip(updates[::2], updates[1::2], strict=True):
        [(node, update)] = started.items()
        assert finished.keys() == {node}
        [started_text] = update["journal"]
        [finished_text] = finished[node]["journal"]
        begun, done = json.loads(started_text), json.loads(finished_text)
        assert begun["call"] == done["call"] == node
        assert (begun["state"], done["state"]) == ("started", "finished")
        assert begun["seq"] == done["seq"] and "outcome" not in begun
        assert "trace" not in update
        events += [json.loads(text) for text in finished[node]["trace"]]
    assert [next(iter(u)) for u in updates[::2]] == [
        "planner", "executor", "gatekeeper", "verifier",
        "executor", "gatekeeper", "verifier", "composer",
    ]
    assert events == dc.to_wire(list(expected.events))


# --- resume ------------------------------------------------------------------------------


def test_interrupted_run_resumes_from_sqlite_in_a_new_graph_like_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    doc = load_doc(REDIS)  # two executor rounds: two gatekeeper calls, two interrupts
    request, effects = scenario_of(doc)  # the outside world: it outlives every graph
    gatekeeper = effects.gatekeeper
    assert isinstance(gatekeeper, dcs.ScriptedGatekeeper)
    database = tmp_path / "checkpoints.sqlite"

    connection = sqlite3.connect(database, check_same_thread=False)
    graph = build_diagnosis_graph(
        effects, checkpointer=SqliteSaver(connection), interrupt_after=[GATEKEEPER_NODE]
    )
    state = run_diagnosis_graph(graph, request, thread_id="thread-1")
    connection.close()
    assert not state.finished and state.calls.gatekeeper == 1 == gatekeeper.calls

    resumes = 0
    while not state.finished:
        resumes += 1
        connection = sqlite3.connect(database, check_same_thread=False)
        fresh = build_diagnosis_graph(
            effects, checkpointer=SqliteSaver(connection), interrupt_after=[GATEKEEPER_NODE]
        )
        state = resume_diagnosis_graph(fresh, thread_id="thread-1")
        connection.close()

    assert resumes == 2
    assert gatekeeper.calls == 2 == state.calls.gatekeeper  # once per round, never replayed
    expected = reference_state(doc)
    assert dc.to_json(state.result) == dc.to_json(expected.result)
    assert dc.to_json(state) == dc.to_json(expected)


def test_interrupt_before_stops_before_the_started_entry_so_a_new_graph_performs_it() -> None:
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    saver = InMemorySaver()
    graph = build_diagnosis_graph(effects, checkpointer=saver, interrupt_before=[EXECUTOR_NODE])
    state = run_diagnosis_graph(graph, request, thread_id="t")
    assert isinstance(dcm.next_action(state), dcm.InvokeAgent)
    values = graph.get_state(_config()).values
    assert [json.loads(t)["call"] for t in values["journal"]] == ["planner"]
    assert graph.invoke(None, _config())["journal"] == values["journal"]  # stops there again
    resumer = build_diagnosis_graph(effects, checkpointer=saver)
    state = resume_diagnosis_graph(resumer, thread_id="t")
    assert dc.to_json(state) == dc.to_json(reference_state(doc))


def _crash_in(
    doc: dict[str, Any], agent: str
) -> tuple[dc.DiagnosisRequest, dc.Effects, list[int]]:
    """Effects whose ``agent`` (or gatekeeper) dies during its first call; the list counts calls."""
    request, effects = scenario_of(doc)
    calls: list[int] = []
    if agent == "gatekeeper":
        inner_gatekeeper = effects.gatekeeper

        def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
            calls.append(1)
            if len(calls) == 1:
                raise Crash
            return inner_gatekeeper(run_id, output)

        return request, attrs.evolve(effects, gatekeeper=gatekeeper), calls
    inner = effects.agent(dcm.AgentName(agent))

    def call(input: str, config: dc.RunConfig, /) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise Crash
        return inner(input, config)

    return request, attrs.evolve(effects, **{agent: call}), calls


@pytest.mark.parametrize("same_graph", [True, False], ids=["same-graph", "new-graph"])
def test_an_executor_that_died_mid_call_is_never_called_again(same_graph: bool) -> None:
    doc = load_doc(PAYMENT)
    request, effects, calls = _crash_in(doc, "executor")
    saver = InMemorySaver()
    graph = build_diagnosis_graph(effects, checkpointer=saver)
    with pytest.raises(Crash):
        run_diagnosis_graph(graph, request, thread_id="t")
    last = json.loads(graph.get_state(_config()).values["journal"][-1])
    assert (last["call"], last["state"]) == ("executor", "started")
    resumer = graph if same_graph else build_diagnosis_graph(effects, checkpointer=saver)
    state = resume_diagnosis_graph(resumer, thread_id="t")
    assert calls == [1]
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
    assert state.calls.executor == 1 and state.calls.gatekeeper == 0
    entry = diagnosis_journal_of(graph.get_state(_config()).values).entries[1]
    interrupted = dcj.RecordedAgentError(dc.FailureKind.NON_RETRYABLE, dcj.INTERRUPTED_MESSAGE)
    assert entry.outcome == interrupted


@pytest.mark.parametrize("resend", [False, True])
def test_a_gatekeeper_that_died_mid_call_fails_closed_unless_the_host_re_sends_it(
    resend: bool,
) -> None:
    doc = load_doc(PAYMENT)
    request, effects, calls = _crash_in(doc, "gatekeeper")
    saver = InMemorySaver()
    with pytest.raises(Crash):
        run_diagnosis_graph(build_diagnosis_graph(effects, checkpointer=saver), request)
    graph = build_diagnosis_graph(effects, checkpointer=saver, resend_gatekeeper=resend)
    state = resume_diagnosis_graph(graph, thread_id=request.run.run_id)
    if resend:
        assert calls == [1, 1]
        assert dc.to_json(state) == dc.to_json(reference_state(doc))
    else:
        assert calls == [1]
        assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE


def test_an_llm_call_that_died_mid_call_is_re_sent_as_the_same_attempt() -> None:
    doc = load_doc(PAYMENT)
    request, effects, calls = _crash_in(doc, "verifier")
    saver = InMemorySaver()
    with pytest.raises(Crash):
        run_diagnosis_graph(build_diagnosis_graph(effects, checkpointer=saver), request)
    graph = build_diagnosis_graph(effects, checkpointer=saver)
    state = resume_diagnosis_graph(graph, thread_id=request.run.run_id)
    assert calls == [1, 1] and state.calls.verifier == 1
    assert dc.to_json(state) == dc.to_json(reference_state(doc))


def test_checkpoints_are_written_before_each_effect_runs_and_durability_is_a_parameter() -> None:
    saver = InMemorySaver()
    seen: list[list[tuple[str, str]]] = []

    def watched(run_id: str) -> tuple[dc.DiagnosisRequest, dc.Effects]:
        """Effects whose executor notes the stored journal of its thread when it is called."""
        request, effects = scenario_of(load_doc(PAYMENT))
        inner = effects.executor

        def executor(input: str, config: dc.RunConfig, /) -> str:
            saved = saver.get_tuple(_config(config.run_id))
            texts = saved.checkpoint["channel_values"]["journal"] if saved else []
            seen.append([(json.loads(t)["call"], json.loads(t)["state"]) for t in texts])
            return inner(input, config)

        run = attrs.evolve(request.run, run_id=run_id)
        return attrs.evolve(request, run=run), attrs.evolve(effects, executor=executor)

    request, effects = watched("r1")
    graph = build_diagnosis_graph(effects, checkpointer=saver)
    assert graph.config["configurable"]["__pregel_durability"] == "sync"
    run_diagnosis_graph(graph, request)
    assert seen == [[("planner", "finished"), ("executor", "started")]]
    request, effects = watched("r2")
    exit_graph = build_diagnosis_graph(effects, checkpointer=saver, durability="exit")
    run_diagnosis_graph(exit_graph, request)
    assert seen[-1] == []  # "exit": nothing is written before the run stops
    request, effects = watched("r3")
    sync_graph = build_diagnosis_graph(effects, checkpointer=saver)
    run_diagnosis_graph(sync_graph, request, durability="exit")
    assert seen[-1] == [] and len(seen) == 3
    assert diagnosis_state_of(saver.get_tuple(_config("r3")).checkpoint["channel_values"]).finished


def test_a_thread_keeps_its_request_and_a_finished_run_is_not_performed_again() -> None:
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    graph = build_diagnosis_graph(effects, checkpointer=InMemorySaver())
    first = run_diagnosis_graph(graph, request, thread_id="t")
    again = run_diagnosis_graph(graph, request, thread_id="t")  # the scripts are used up
    assert dc.to_json(again) == dc.to_json(first) == dc.to_json(reference_state(doc))
    other = attrs.evolve(request, question="another question")
    with pytest.raises(dc.MachineError, match="another run's request"):
        run_diagnosis_graph(graph, other, thread_id="t")


def test_checkpoints_keep_unpaired_surrogates_and_huge_integers_exactly(tmp_path: Path) -> None:
    doc = load_doc(PAYMENT)
    verifier = json.loads(_text(doc, "verifier"))
    verifier["critical_fact_count"] = 2**70
    doc["responses"]["verifier"] = [{"text": json.dumps(verifier)}]
    doc["question"] += " \x00 nul and \U0001f600"
    request, effects = scenario_of(doc)
    planner = effects.planner
    failed: list[bool] = []

    def flaky(input: str, config: dc.RunConfig, /) -> str:
        if not failed:
            failed.append(True)
            raise TimeoutError("bad byte \ud800 from the model")
        return planner(input, config)

    effects = attrs.evolve(effects, planner=flaky)
    database = tmp_path / "checkpoints.sqlite"
    with SqliteSaver.from_conn_string(str(database)) as saver:
        finished = run_diagnosis_graph(build_diagnosis_graph(effects, checkpointer=saver), request)
    assert r"\ud800" in dc.to_json(finished)
    assert finished.evaluation is not None
    assert finished.evaluation.output.critical_fact_count == 2**70

    with SqliteSaver.from_conn_string(str(database)) as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        config = graph_run_config(request.config, thread_id=request.run.run_id)
        restored = diagnosis_state_of(graph.get_state(config).values)
    assert restored == finished
    assert restored.request == request


async def test_async_effects_run_and_resume_with_ainvoke() -> None:
    doc = load_doc(REDIS)
    request, effects = scenario_of(doc)
    async_effects = dc.AsyncEffects.from_sync(effects)
    saver = InMemorySaver()
    graph = build_diagnosis_graph(
        async_effects, checkpointer=saver, interrupt_before=[GATEKEEPER_NODE]
    )
    state = await arun_diagnosis_graph(graph, request, thread_id="t")
    assert isinstance(dcm.next_action(state), dcm.CallGatekeeper)
    resumed = build_diagnosis_graph(async_effects, checkpointer=saver)
    state = await aresume_diagnosis_graph(resumed, thread_id="t")
    assert dc.to_json(state) == dc.to_json(reference_state(doc))


def test_the_longest_run_stays_within_the_recursion_limit_from_the_config() -> None:
    """technical_retry_limit 3 with every retry used and an evidence retry."""
    doc = load_doc(REDIS)
    doc["config"] = {"technical_retry_limit": 3}
    retryable = {"error": {"kind": "retryable", "message": "overloaded"}}
    responses = doc["responses"]
    responses["planner"] = [retryable] * 3 + responses["planner"]
    responses["verifier"] = (
        [retryable] * 3 + responses["verifier"][:1] + [retryable] * 3 + responses["verifier"][1:]
    )
    responses["composer"] = [retryable] * 4
    request, effects = scenario_of(doc)
    graph = build_diagnosis_graph(effects)
    config = graph_run_config(request.config)
    steps = list(graph.stream(graph_input(request), config, stream_mode="updates"))
    state = reference_state(doc)
    assert state.result.outcome is dc.Outcome.POST_VERIFICATION_FALLBACK
    calls = state.calls
    effects_performed = (
        calls.planner + calls.executor + calls.gatekeeper + calls.verifier + calls.composer
    )
    assert len(steps) == 2 * effects_performed == 40
    assert len(steps) < recursion_limit_for(request.config) == config["recursion_limit"]
    request, effects = scenario_of(doc)
    values = build_diagnosis_graph(effects).invoke(graph_input(request), config)
    assert dc.to_json(diagnosis_state_of(values).result) == dc.to_json(state.result)


# --- refusals ----------------------------------------------------------------------------


def test_start_leads_to_the_first_node_which_sends_any_other_run_where_its_journal_leads(
) -> None:
    """One plain edge from START; the first node re-routes a run that awaits another effect.

    A host that sends the run to the planner while it awaits the gatekeeper
    gets the run its journal implies: the planner node performs nothing and
    the gatekeeper runs next; a finished run sent there ends at once.
    """
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    graph = build_diagnosis_graph(
        effects, checkpointer=InMemorySaver(), interrupt_after=[EXECUTOR_NODE]
    )
    starts = [edge.target for edge in graph.get_graph().edges if edge.source == "__start__"]
    assert starts == [PLANNER_NODE]
    paused = run_diagnosis_graph(graph, request, thread_id="t")
    assert isinstance(dcm.next_action(paused), dcm.CallGatekeeper)
    config = graph_run_config(request.config, thread_id="t")
    nodes = [
        name
        for update in graph.stream(Command(goto=PLANNER_NODE), config, stream_mode="updates")
        for name in update
    ]
    # Re-routed (nothing performed, no planner called), to the gatekeeper's node, where the
    # run's interrupt point after the executor holds it again.
    assert sorted(nodes) == ["__interrupt__", PLANNER_NODE]
    assert graph.get_state(config).next == (GATEKEEPER_NODE,)
    graph.invoke(Command(resume=True), config)
    state = diagnosis_state_of(graph.get_state(config).values)
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    assert list(graph.stream(Command(goto=PLANNER_NODE), config, stream_mode="updates")) == [
        {PLANNER_NODE: None}
    ]


def test_a_node_sent_a_run_that_awaits_another_effect_refuses_it() -> None:
    request, effects = scenario_of(load_doc(PAYMENT))
    graph = build_diagnosis_graph(
        effects, checkpointer=InMemorySaver(), interrupt_before=[PLANNER_NODE]
    )
    state = run_diagnosis_graph(graph, request, thread_id="t")
    assert isinstance(dcm.next_action(state), dcm.InvokeAgent)  # the planner is pending
    config = graph_run_config(request.config, thread_id="t")
    with pytest.raises(
        dc.MachineError, match="the gatekeeper node ran while the run awaits planner round 1"
    ):
        graph.invoke(Command(goto=GATEKEEPER_NODE), config)


def test_graph_input_without_a_request_is_a_machine_error() -> None:
    _, effects = scenario_of(load_doc(PAYMENT))
    with pytest.raises(dc.MachineError, match="graph_input"):
        build_diagnosis_graph(effects).invoke({})
    with pytest.raises(dc.MachineError, match="no run"):
        diagnosis_state_of({})


def test_interrupts_name_effect_nodes_only() -> None:
    _, effects = scenario_of(load_doc(PAYMENT))
    with pytest.raises(ValueError, match="interrupt_before: unknown node"):
        build_diagnosis_graph(effects, interrupt_before=["agent"])
    with pytest.raises(ValueError, match="interrupt_after: unknown node"):
        build_diagnosis_graph(effects, interrupt_after=["start"])


def _values(doc: dict[str, Any]) -> dict[str, Any]:
    request, effects = scenario_of(doc)
    values: dict[str, Any] = build_diagnosis_graph(effects).invoke(
        graph_input(request), graph_run_config(request.config)
    )
    return values


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ('{"seq":1,', r"entries\[0\]: not valid JSON"),
        ("null", r"entries\[0\]: expected an object"),
        ('{"seq":1,"seq":1}', r"entries\[0\]: not valid JSON \(duplicate key"),
        (7, r"entries\[0\]: expected JSON text, got int"),
    ],
)
def test_a_damaged_checkpointed_journal_fails_loudly(entry: object, match: str) -> None:
    values = _values(load_doc(PAYMENT))
    with pytest.raises(dcj.JournalError, match=match):
        diagnosis_state_of({**values, "journal": [entry, *values["journal"][1:]]})
    with pytest.raises(dcj.JournalError, match="request: not valid JSON"):
        diagnosis_state_of({**values, "request": '{"question": '})


def test_run_config_keeps_the_callers_settings() -> None:
    config = dc.DiagnosisConfig(technical_retry_limit=3)
    merged = graph_run_config(
        config, thread_id="t", base={"tags": ["x"], "configurable": {"user": "u"}}
    )
    assert merged["tags"] == ["x"]
    assert merged["configurable"] == {"user": "u", "thread_id": "t"}
    assert merged["recursion_limit"] == recursion_limit_for(config) > 25


def test_the_uncompiled_graph_compiles_to_the_same_run() -> None:
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    graph = diagnosis_state_graph(effects).compile()
    values = graph.invoke(graph_input(request), graph_run_config(request.config))
    assert dc.to_json(diagnosis_state_of(values)) == dc.to_json(reference_state(doc))
    assert dc.to_wire(diagnosis_state_of(values).result) == golden_result("payment_timeout")


# --- forged checkpoints ------------------------------------------------------------------


def _stopped_after_gatekeeper(
    tmp_path: Path, doc: dict[str, Any], key: bytes | None = None
) -> tuple[Path, dc.DiagnosisRequest]:
    request, effects = scenario_of(doc)
    database = tmp_path / "checkpoints.sqlite"
    with SqliteSaver.from_conn_string(str(database)) as saver:
        graph = build_diagnosis_graph(
            effects, checkpointer=saver, interrupt_after=[GATEKEEPER_NODE], key=key
        )
        assert not run_diagnosis_graph(graph, request, thread_id="t").finished
    return database, request


def _resume(database: Path, doc: dict[str, Any], key: bytes | None = None) -> dc.DiagnosisState:
    _, effects = scenario_of(doc)
    with SqliteSaver.from_conn_string(str(database)) as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver, key=key)
        return resume_diagnosis_graph(graph, thread_id="t")


def _forge(database: Path, edit: Any) -> None:
    with SqliteSaver.from_conn_string(str(database)) as saver:
        forge_checkpoint(saver, "t", edit)


def _set_status_pass(wire: dict[str, Any]) -> None:
    wire["outcome"]["result"]["status"] = "pass"
    wire["outcome"]["result"].pop("level", None)


def test_a_forged_gatekeeper_pass_without_a_key_gives_what_the_edited_facts_imply(
    tmp_path: Path,
) -> None:
    """The old attack: "gatekeeper PASS" in the checkpoint. Now it is a fact to normalize,
    and a binding the gatekeeper failed stays unverified: never an allowed claim."""
    doc = load_doc(REDIS)
    database, _ = _stopped_after_gatekeeper(tmp_path, doc)
    _forge(database, edit_entry(-1, _set_status_pass))
    state = _resume(database, doc)
    edited = load_doc(REDIS)
    edited["gatekeeper"][0]["result"]["status"] = "pass"
    edited["gatekeeper"][0]["result"].pop("level")
    implied = reference_state(edited)  # the sync driver, fed the edited fact live
    assert dc.to_json(state) == dc.to_json(implied)
    # "pass" next to a binding it marks "fail" is not a result the core trusts: nothing
    # reaches the verifier or the composer, and the answer is the fallback.
    assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_INVALID_RESULT
    assert state.result.outcome is dc.Outcome.PRE_VERIFICATION_FALLBACK
    assert state.calls.verifier == state.calls.composer == 0 and state.verified is None


@pytest.mark.parametrize(
    ("index", "change", "match"),
    [
        (0, lambda w: w["outcome"].update(text=w["outcome"]["text"].replace("s1", "s9")),
         r"entries\[1\]\.input_sha256"),
        (1, lambda w: w.update(input_sha256="0" * 64), r"entries\[1\]\.input_sha256"),
        (-1, lambda w: w.update(attempt=-200), r"entries\[2\]\.attempt: expected an integer >= 1"),
        (-1, lambda w: w.update(attempt=2), "the run expects gatekeeper round 1 attempt 1"),
        (0, lambda w: w.update(seq=2), r"entries\[0\]\.seq"),
    ],
    ids=["planner-outcome", "input-hash", "attempt-minus-200", "attempt-2", "seq"],
)
def test_a_checkpoint_edited_to_change_a_fact_the_run_depends_on_is_refused(
    tmp_path: Path, index: int, change: Any, match: str
) -> None:
    doc = load_doc(PAYMENT)
    database, _ = _stopped_after_gatekeeper(tmp_path, doc)
    _forge(database, edit_entry(index, change))
    with pytest.raises(dcj.JournalError, match=match):
        _resume(database, doc)


@pytest.mark.parametrize(
    "edit",
    [
        edit_entry(-1, _set_status_pass),
        edit_entry(-1, lambda w: w["outcome"]["result"].update(reason_codes=["X"])),
        edit_entry(-1, lambda w: w.update(mac="0" * 64)),
        edit_entry(-1, lambda w: w.pop("mac")),
    ],
    ids=["gatekeeper-pass", "any-outcome-byte", "wrong-mac", "no-mac"],
)
def test_with_a_key_any_edit_of_a_checkpoint_is_refused(tmp_path: Path, edit: Any) -> None:
    doc = load_doc(REDIS)
    database, _ = _stopped_after_gatekeeper(tmp_path, doc, key=KEY)
    _forge(database, edit)
    with pytest.raises(dcj.JournalError, match=r"entries\[2\]\.mac"):
        _resume(database, doc, key=KEY)


def test_with_a_key_an_edited_request_is_refused(tmp_path: Path) -> None:
    doc = load_doc(PAYMENT)
    database, request = _stopped_after_gatekeeper(tmp_path, doc, key=KEY)
    with SqliteSaver.from_conn_string(str(database)) as saver:
        saved = saver.get_tuple(_config())
        assert saved is not None
        text = saved.checkpoint["channel_values"]["request"]
    edited = text.replace(json.dumps(request.question)[1:-1], "what is 2 + 2?")
    assert edited != text
    values = {**saved.checkpoint["channel_values"], "request": edited}
    with pytest.raises(dcj.JournalError, match="mac"):
        diagnosis_state_of(values, key=KEY)
    with pytest.raises(dcj.JournalError, match="input_sha256"):  # without a key: the hashes
        diagnosis_state_of(values)
    assert not diagnosis_state_of(saved.checkpoint["channel_values"], key=KEY).finished
    assert diagnosis_state_of(saved.checkpoint["channel_values"]).round == 1


def test_a_checkpoint_whose_stored_next_step_is_stale_goes_where_its_facts_lead() -> None:
    """Without a key a dropped last entry still verifies (a prefix of the run): the gatekeeper,
    which is read-only, is called again, not the step LangGraph had stored as next."""
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    saver = InMemorySaver()
    graph = build_diagnosis_graph(effects, checkpointer=saver, interrupt_before=[VERIFIER_NODE])
    run_diagnosis_graph(graph, request, thread_id="t")
    assert graph.get_state(_config()).next == (VERIFIER_NODE,)
    forge_checkpoint(saver, "t", lambda texts: texts[:-1])
    _, fresh = scenario_of(doc)
    state = resume_diagnosis_graph(build_diagnosis_graph(fresh, checkpointer=saver), thread_id="t")
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    assert dc.to_wire(state.result) == golden_result("payment_timeout")


async def test_an_async_resume_of_a_stale_checkpoint_goes_where_its_facts_lead() -> None:
    doc = load_doc(PAYMENT)
    request, effects = scenario_of(doc)
    saver = InMemorySaver()
    graph = build_diagnosis_graph(
        dc.AsyncEffects.from_sync(effects), checkpointer=saver, interrupt_before=[VERIFIER_NODE]
    )
    await arun_diagnosis_graph(graph, request, thread_id="t")
    forge_checkpoint(saver, "t", lambda texts: texts[:-1])
    _, fresh = scenario_of(doc)
    resumer = build_diagnosis_graph(dc.AsyncEffects.from_sync(fresh), checkpointer=saver)
    state = await aresume_diagnosis_graph(resumer, thread_id="t")
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    assert dc.to_wire(state.result) == golden_result("payment_timeout")


def test_non_ascii_gatekeeper_results_are_stored_as_ascii_text_and_come_back_exactly() -> None:
    doc = load_doc(PAYMENT)
    doc["gatekeeper"][0]["result"]["checked_bindings"][0]["matched_text"] += " é \U0001f600"
    values = _values(doc)
    assert all(text.isascii() for text in values["journal"])
    result = diagnosis_journal_of(values).entries[2].outcome
    assert isinstance(result, dcj.RecordedGatekeeperResult)
    assert result.result == doc["gatekeeper"][0]["result"]
    assert dc.to_json(diagnosis_state_of(values)) == dc.to_json(reference_state(doc))
    with pytest.raises(dcj.JournalError, match="journal: expected a list"):
        diagnosis_state_of({**values, "journal": "entries"})


def test_a_graph_not_built_here_and_a_small_fold_cache_still_give_the_same_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import diagnosis_core.adapters._langgraph_core as adapter

    monkeypatch.setattr(adapter, "_FOLD_CACHE_SIZE", 2)  # folds are evicted: folded again
    doc = load_doc(REDIS)
    request, effects = scenario_of(doc)
    saver = InMemorySaver()
    graph = diagnosis_state_graph(effects).compile(checkpointer=saver)  # not registered
    state = run_diagnosis_graph(graph, request, thread_id="t")
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    assert dc.to_json(resume_diagnosis_graph(graph, thread_id="t")) == dc.to_json(state)
    request, effects = scenario_of(doc)
    plain = build_diagnosis_graph(effects)  # no checkpointer: durability is left out
    assert run_diagnosis_graph(plain, request, durability="sync").finished


def test_a_run_started_by_the_helpers_starts_from_the_request_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run helpers fold a new run from the request they were given, not from its text.

    The first step finds that fold by the exact request text, so a run's
    request is never decoded and checked again in the process that wrote
    it; a resume in a new graph (no fold remembered) still decodes it.
    """
    import diagnosis_core.adapters._langgraph_core as adapter

    decoded: list[str] = []
    real_decode = adapter._decode

    def decode(value: object, where: str) -> Any:
        decoded.append(where)
        return real_decode(value, where)

    monkeypatch.setattr(adapter, "_decode", decode)
    doc = load_doc(REDIS)
    for run in (run_diagnosis_graph, _arun):
        request, effects = scenario_of(doc)
        saver = InMemorySaver()
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        state = run(graph, request)
        assert dc.to_json(state) == dc.to_json(reference_state(doc))
        assert decoded == []
        again = build_diagnosis_graph(scenario_of(doc)[1], checkpointer=saver)
        resumed = resume_diagnosis_graph(again, thread_id=request.run.run_id)
        assert dc.to_json(resumed) == dc.to_json(state)
        assert "request" in decoded
        decoded.clear()


def _arun(graph: Any, request: dc.DiagnosisRequest) -> dc.DiagnosisState:
    return asyncio.run(arun_diagnosis_graph(graph, request))
