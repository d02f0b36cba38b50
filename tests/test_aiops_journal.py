"""The AIOps run journal ``aiops_journal_v2`` (v1 still read; spec §12, last bullet; §11)."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from adapters.adapter_support import golden_result

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core import JournalError, RunOptionsError
from diagnosis_core._aiops.journal import AiOpsJournalEntry
from diagnosis_core.cli import main
from diagnosis_core.journal import AiOpsJournal, EntryState
from diagnosis_core.machine import AiOpsAgent
from tests._reach import aiops as dca
from tests._reach import machine as dcm

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = b"aiops-host-key-for-tests"


def aiops_examples() -> list[Path]:
    return [
        path
        for path in sorted(EXAMPLES.glob("*.json"))
        if json.loads(path.read_text(encoding="utf-8")).get("workflow") == "aiops"
    ]


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def wire_of(journal: AiOpsJournal) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(dcj.journal_to_json(journal))
    return data


def live_run(
    document: dict[str, Any], *, key: bytes | None = None
) -> tuple[AiOpsJournal, dca.AiOpsState]:
    """A run of the scenario's agents through the journaling driver."""
    scenario = dca.load_aiops_scenario(document)
    sink = dcj.ListAiOpsJournalSink()
    request = dca.aiops_scenario_request(scenario)
    state = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), sink=sink, key=key)
    return sink.journal(request), state


def started(entry: AiOpsJournalEntry) -> AiOpsJournalEntry:
    return attrs.evolve(
        entry, state=EntryState.STARTED, outcome=None, tool_invocations=None, mac=None
    )


# --- every example: live == folded == replayed from the converted scenario ----------------


@pytest.mark.parametrize("path", aiops_examples(), ids=lambda path: path.stem)
@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_every_aiops_example_is_the_same_live_folded_and_replayed(
    path: Path, key: bytes | None
) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    live = dcp.canonical_json(dca.replay_aiops(document))
    journal = dca.record_aiops_scenario(document, key=key)
    loaded = dcj.AiOpsJournal.from_json(dcj.journal_to_json(journal))
    assert loaded == journal
    assert dcj.journal_status(loaded, key=key).describe() == "complete"
    assert dcp.canonical_json(dcj.replay_journal(loaded, key=key)) == live
    scenario = dcj.journal_to_scenario(loaded, key=key)
    assert scenario["workflow"] == "aiops"
    assert dcp.canonical_json(dca.replay_aiops(scenario)) == live
    # The journaling driver's state is the fold of what it wrote.
    recorded, state = live_run(document, key=key)
    assert dcj.fold_journal(recorded, key=key) == state
    assert dcj.fold_journal(loaded, key=key) == state


def test_the_wire_form_has_the_aiops_shape() -> None:
    journal = dca.record_aiops_scenario(example("aiops_payload_targeted.json"))
    text = dcj.journal_to_json(journal)
    data = json.loads(text)
    assert text == dcp.canonical_json(data)
    assert data["format"] == "aiops_journal_v2" == dca.AIOPS_JOURNAL_FORMAT == journal.format
    assert data["end"] == {"entries": len(data["entries"])}
    assert set(data["request"]) == {"run", "alerts", "config"}
    assert [entry["call"] for entry in data["entries"]] == [
        "supervisor", "planner", "supervisor", "executor", "supervisor", "reporter", "reporter",
    ]
    state = dcj.fold_journal(journal)
    # Each entry's hash is the trace's hash of the same input bound to the request (v2);
    # round is the step.
    request_sha = hashlib.sha256(dcp.canonical_json(data["request"]).encode("utf-8")).hexdigest()
    for entry, event in zip(data["entries"], state.events, strict=False):
        bound = (request_sha + event.input_sha256).encode("ascii")
        assert entry["input_sha256"] == hashlib.sha256(bound).hexdigest()
        assert entry["round"] == event.step and entry["attempt"] == event.attempt
    executor = data["entries"][3]
    assert [item["invocation_id"] for item in executor["tool_invocations"]] == [
        "inv-101", "inv-102", "inv-103",
    ]
    assert all("tool_invocations" not in e for e in data["entries"] if e["call"] != "executor")


def test_the_ledger_comes_from_the_executor_entries() -> None:
    document = example("aiops_rule_violation.json")
    journal = dca.record_aiops_scenario(document)
    assert [inv.invocation_id for inv in dcj.aiops_journal_ledger(journal).invocations] == [
        "inv-301", "inv-302",
    ]
    # The records a resuming host seeds its recorder with, as for a chat journal.
    records = dcj.journal_tool_records(journal)
    assert [record["invocation_id"] for record in records] == ["inv-301", "inv-302"]
    assert all("input" in record for record in records)
    # Without the tool invocations the citations are not in the ledger: the rule says so.
    bare = AiOpsJournal(
        journal.request,
        tuple(attrs.evolve(entry, tool_invocations=None) for entry in journal.entries),
    )
    assert "tool_ledger" not in dcj.journal_to_scenario(bare)
    with_ledger = dcj.replay_journal(journal)["aiops_rule_evaluation"]
    without = dcj.replay_journal(bare)["aiops_rule_evaluation"]
    assert isinstance(with_ledger, dict) and isinstance(without, dict)
    assert with_ledger != without
    assert "is not in the tool ledger" in json.dumps(without)


def test_an_invocation_recorded_twice_is_refused_naming_the_entry() -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_auto_discovery.json")))
    executors = [i for i, entry in enumerate(wire["entries"]) if entry["call"] == "executor"]
    first, second = executors
    wire["entries"][second]["tool_invocations"] = wire["entries"][first]["tool_invocations"][:1]
    journal = dcj.AiOpsJournal.load(wire)
    with pytest.raises(JournalError) as caught:
        dcj.replay_journal(journal)
    assert str(caught.value).startswith(
        f"entries[{second}].tool_invocations[0].invocation_id: 'inv-201' is recorded twice"
    )


def test_a_scenario_ledger_without_an_executor_call_cannot_be_journaled() -> None:
    document = example("aiops_rule_violation.json")
    document["responses"]["supervisor"] = [{"text": '{"next": "FINISH", "reason": "r"}'}]
    with pytest.raises(JournalError, match=r"^tool_ledger: the run makes no executor call"):
        dca.record_aiops_scenario(document)


# --- fold and verify: refused journals name the entry --------------------------------------


def test_a_truncated_journal_names_the_entry() -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_payload_targeted.json")))
    del wire["entries"][1]
    with pytest.raises(JournalError, match=r"^entries\[1\]\.seq: expected 2, got 3$"):
        dcj.fold_journal(dcj.AiOpsJournal.load(wire))
    for seq, entry in enumerate(wire["entries"], start=1):
        entry["seq"] = seq
    with pytest.raises(JournalError) as caught:
        dcj.fold_journal(dcj.AiOpsJournal.load(wire))
    assert str(caught.value) == (
        "entries[1]: the run expects planner step 1 attempt 1, the journal has supervisor"
    )


def test_a_wrong_attempt_and_an_entry_after_end_are_refused() -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_payload_targeted.json")))
    wrong = copy.deepcopy(wire)
    wrong["entries"][6]["attempt"] = 3
    with pytest.raises(JournalError) as caught:
        dcj.fold_journal(dcj.AiOpsJournal.load(wrong))
    assert str(caught.value) == (
        "entries[6]: the run expects reporter step 3 attempt 2, "
        "the journal has reporter step 3 attempt 3"
    )
    extra = copy.deepcopy(wire)
    extra["entries"].append({**extra["entries"][-1], "seq": 8})
    with pytest.raises(JournalError, match=r"^entries\[7\]: the run has ended, the journal has"):
        dcj.fold_journal(dcj.AiOpsJournal.load(extra))


def test_an_edited_reply_is_caught_by_the_next_input_hash() -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_payload_targeted.json")))
    plan = json.loads(wire["entries"][1]["outcome"]["text"])
    plan["steps"][0]["goal"] = "something else"
    wire["entries"][1]["outcome"]["text"] = json.dumps(plan)
    with pytest.raises(
        JournalError, match=r"^entries\[2\]\.input_sha256: the input of supervisor step 2"
    ):
        dcj.fold_journal(dcj.AiOpsJournal.load(wire))


def test_an_edited_outcome_without_a_key_folds_to_what_the_edited_facts_imply() -> None:
    # The executor "succeeded" in the journal, but an edit says it failed: no
    # conclusion is stored, so the fold follows the edited fact to the fallback.
    wire = wire_of(dca.record_aiops_scenario(example("aiops_rule_violation.json")))
    assert wire["entries"][1]["call"] == "executor"
    wire["entries"][1]["outcome"] = {"error": {"kind": "non_retryable", "message": "boom"}}
    del wire["entries"][1]["tool_invocations"]
    wire["entries"] = wire["entries"][:2]
    wire["end"] = {"entries": 2}  # without a key, an end marker is a fact like the others
    status = dcj.journal_status(dcj.AiOpsJournal.load(wire))
    assert status.complete
    assert status.state.outcome is dca.AiOpsOutcome.FALLBACK
    assert status.state.reason_code is dca.AiOpsReasonCode.EXECUTOR_FAILED


@pytest.mark.parametrize("agent", list(AiOpsAgent), ids=lambda agent: agent.value)
def test_only_the_last_entry_may_be_started_for_each_call(agent: AiOpsAgent) -> None:
    journal = dca.record_aiops_scenario(example("aiops_payload_targeted.json"))
    index = next(i for i, e in enumerate(journal.entries) if e.call is agent)
    assert index < len(journal.entries) - 1
    entries = list(journal.entries)
    entries[index] = started(entries[index])
    with pytest.raises(JournalError, match=rf"^entries\[{index}\]\.state: only the last entry"):
        dcj.fold_journal(AiOpsJournal(journal.request, tuple(entries)))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda w: w.pop("format"), "format: missing"),
        (lambda w: w.update(format="diagnosis_journal_v1"),
         "format: expected 'aiops_journal_v2' or 'aiops_journal_v1'"),
        (lambda w: w.update(extra=1), "$: unknown key 'extra'"),
        (lambda w: w["request"].pop("alerts"), "request.alerts: missing"),
        (lambda w: w["request"].update(question="q"), "request: unknown key 'question'"),
        (lambda w: w["request"]["run"].pop("session_id"), "request.run.session_id: missing"),
        (lambda w: w["request"]["alerts"][0].pop("name"), "request.alerts[0].name: missing"),
        (lambda w: w["request"]["config"].update(max_supervisor_steps=99),
         "request.config.max_supervisor_steps"),
        (lambda w: w["entries"][0].update(call="gatekeeper"), "entries[0].call: expected one of"),
        (lambda w: w["entries"][0].update(outcome={"result": 1}),
         "entries[0].outcome: unknown key 'result'"),
        (lambda w: w["entries"][0].update(tool_invocations=[]),
         "entries[0].tool_invocations: only executor entries carry them"),
        (lambda w: w["entries"][3].update(tool_invocations=[{"invocation_id": "inv-1"}]),
         "entries[3].tool_invocations[0].tool_name: missing"),
        (lambda w: w["entries"][0].update(state="started"),
         "entries[0].outcome: a started entry has none"),
    ],
)
def test_malformed_aiops_journals_are_refused_with_a_path(edit: Any, message: str) -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_payload_targeted.json")))
    edit(wire)
    with pytest.raises(JournalError) as caught:
        dcj.AiOpsJournal.load(wire)
    assert str(caught.value).startswith(message)


def test_journals_of_the_two_workflows_are_not_interchangeable() -> None:
    journal = dca.record_aiops_scenario(example("aiops_payload_targeted.json"))
    with pytest.raises(
        JournalError, match="format: expected 'diagnosis_journal_v2' or 'diagnosis_journal_v1'"
    ):
        dcj.Journal.from_json(dcj.journal_to_json(journal))
    # The journal functions take either journal and read it by its own workflow.
    folded = dcj.fold_journal(journal)
    output = dcj.replay_journal(journal)
    assert output == dca.aiops_output(folded, dcj.aiops_journal_ledger(journal))
    assert output["workflow"] == "aiops"
    assert dca.replay_aiops(dcj.journal_to_scenario(journal)) == output
    chat = dcj.Journal(dc.DiagnosisRequest("why?", journal.request.run))
    with pytest.raises(JournalError, match="the journal is incomplete"):
        dcj.replay_journal(chat)
    with pytest.raises(JournalError, match="call: expected a AiOpsAgent"):
        AiOpsJournalEntry(1, dcj.JournalCall.PLANNER, 1, 1, "0" * 64, EntryState.STARTED)  # type: ignore[arg-type]


# --- integrity ----------------------------------------------------------------------------


def _signed_edits() -> list[Any]:
    def outcome(w: dict[str, Any]) -> None:
        w["entries"][0]["outcome"]["text"] += " "

    def alert(w: dict[str, Any]) -> None:
        w["request"]["alerts"][0]["severity"] = "warning"

    def tool(w: dict[str, Any]) -> None:
        w["entries"][3]["tool_invocations"][0]["success"] = False

    def drop_last(w: dict[str, Any]) -> None:
        w["entries"].pop()
        del w["end"]

    def mac(w: dict[str, Any]) -> None:
        w["entries"][2]["mac"] = "0" * 64

    def unsigned(w: dict[str, Any]) -> None:
        del w["entries"][4]["mac"]

    return [outcome, alert, tool, drop_last, mac, unsigned]


@pytest.mark.parametrize("edit", _signed_edits(), ids=lambda edit: edit.__name__)
def test_a_signed_journal_is_refused_after_any_edit(edit: Any) -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_payload_targeted.json"), key=KEY))
    assert dcj.journal_status(dcj.AiOpsJournal.load(wire), key=KEY).complete
    edit(wire)
    journal = dcj.AiOpsJournal.load(wire)
    if edit.__name__ == "drop_last":  # a valid prefix: it verifies, and is incomplete
        status = dcj.journal_status(journal, key=KEY)
        assert status.describe() == "incomplete: ends before reporter step 3 attempt 2"
        with pytest.raises(JournalError, match="incomplete"):
            dcj.replay_journal(journal, key=KEY)
        return
    with pytest.raises(JournalError, match=r"^entries\[\d+\]\.mac: "):
        dcj.fold_journal(journal, key=KEY)
    with pytest.raises(JournalError, match="mac"):
        dcj.journal_to_scenario(journal, key=KEY)


def test_every_entry_of_a_signed_journal_verifies_and_a_wrong_key_does_not() -> None:
    journal = dca.record_aiops_scenario(example("aiops_auto_discovery.json"), key=KEY)
    assert all(entry.mac for entry in journal.entries)
    assert dcj.sign_journal(journal, KEY) == journal
    with pytest.raises(JournalError, match=r"^entries\[0\]\.mac: does not match"):
        dcj.fold_journal(journal, key=b"another key")


# --- resume --------------------------------------------------------------------------------


def _interrupted_at(journal: AiOpsJournal, index: int) -> AiOpsJournal:
    return AiOpsJournal(
        journal.request, (*journal.entries[:index], started(journal.entries[index]))
    )


@pytest.mark.parametrize("agent", [AiOpsAgent.SUPERVISOR, AiOpsAgent.PLANNER, AiOpsAgent.REPORTER])
def test_an_interrupted_llm_call_is_resent_as_the_same_attempt(agent: AiOpsAgent) -> None:
    document = example("aiops_auto_discovery.json")
    complete = dca.record_aiops_scenario(document)
    index = max(i for i, e in enumerate(complete.entries) if e.call is agent)
    journal = _interrupted_at(complete, index)
    status = dcj.journal_status(journal)
    assert status.interrupted == journal.entries[-1]
    assert status.describe().startswith(f"incomplete: interrupted during {agent.value} step")
    resumed, state = dcj.resume_journal(journal)
    assert resumed == journal
    action = dcm.next_aiops_action(state)
    assert isinstance(action, dcm.InvokeAiOpsAgent)
    assert (action.agent, action.step, action.attempt) == (
        agent, complete.entries[index].round, complete.entries[index].attempt,
    )
    # The driver resumes from the journal: the call is re-sent, its seq reused.
    scenario = dca.load_aiops_scenario(document)
    calls = [e.call for e in complete.entries[:index]]
    effects = _effects_after(scenario, calls)
    sink = dcj.ListAiOpsJournalSink()
    final = dca.run_aiops(state.request, effects, journal=journal, sink=sink)
    assert sink.entries[0].seq == index + 1
    whole = AiOpsJournal(state.request, (*journal.entries[:index], *sink.entries))
    assert dcj.fold_journal(whole) == final
    assert dcp.canonical_json(dca.aiops_replay_output(scenario, final)) == dcp.canonical_json(
        dca.replay_aiops(document)
    )


def _effects_after(scenario: dca.AiOpsScenario, done: list[AiOpsAgent]) -> dca.AiOpsEffects:
    """Scripted agents with the replies already consumed by ``done`` removed."""
    responses = {
        agent: scenario.responses[agent][done.count(agent):] for agent in AiOpsAgent
    }
    return dca.aiops_scenario_effects(attrs.evolve(scenario, responses=responses))


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_an_interrupted_executor_call_fails_closed_and_is_never_resent(key: bytes | None) -> None:
    document = example("aiops_payload_targeted.json")
    complete = dca.record_aiops_scenario(document, key=key)
    index = next(i for i, e in enumerate(complete.entries) if e.call is AiOpsAgent.EXECUTOR)
    journal = _interrupted_at(complete, index)
    if key is not None:
        journal = dcj.sign_journal(journal, key)
    resumed, state = dcj.resume_journal(journal, key=key)
    last = resumed.entries[-1]
    assert last.seq == index + 1 and last.state is EntryState.FINISHED
    assert last.outcome == dcj.RecordedAgentError(
        dc.FailureKind.NON_RETRYABLE, "interrupted: outcome unknown"
    )
    assert dcj.fold_journal(resumed, key=key) == state
    # The driver never calls the executor again.
    def executor(text: str, config: dc.RunConfig) -> str:
        raise AssertionError("the executor was re-sent")

    scenario = dca.load_aiops_scenario(document)
    effects = attrs.evolve(
        _effects_after(scenario, [e.call for e in complete.entries[:index]]), executor=executor
    )
    sink = dcj.ListAiOpsJournalSink()
    final = dca.run_aiops(state.request, effects, journal=journal, sink=sink, key=key)
    assert sink.entries[0] == last
    assert final.outcome is dca.AiOpsOutcome.FALLBACK
    assert final.reason_code is dca.AiOpsReasonCode.EXECUTOR_FAILED
    assert final.calls.executor == 1
    whole = AiOpsJournal(state.request, (*journal.entries[:index], *sink.entries))
    assert dcj.fold_journal(whole, key=key) == final


# --- the journaling drivers -----------------------------------------------------------------


def test_the_sink_gets_the_started_entry_before_the_agent_runs() -> None:
    scenario = dca.load_aiops_scenario(example("aiops_payload_targeted.json"))
    sink = dcj.ListAiOpsJournalSink()
    scripted = dca.aiops_scenario_effects(scenario)
    seen: list[tuple[str, int]] = []

    def watch(agent: AiOpsAgent) -> Any:
        inner = scripted.agent(agent)

        def invoke(text: str, config: dc.RunConfig) -> str:
            last = sink.entries[-1]
            assert last.state is EntryState.STARTED and last.call is agent
            # v2: the input hash is bound to the request (SHA-256 of the two hex digests)
            bound = hashlib.sha256(
                (request_sha + hashlib.sha256(text.encode("utf-8")).hexdigest()).encode("ascii")
            ).hexdigest()
            assert last.input_sha256 == bound
            seen.append((agent.value, last.seq))
            reply: str = inner(text, config)
            return reply

        return invoke

    effects = dca.AiOpsEffects(*(watch(agent) for agent in AiOpsAgent))
    request = dca.aiops_scenario_request(scenario)
    request_text = dcp.canonical_json(dcj.aiops_request_to_wire(request))
    request_sha = hashlib.sha256(request_text.encode("utf-8")).hexdigest()
    state = dca.run_aiops(request, effects, sink=sink)
    assert [seq for _, seq in seen] == list(range(1, len(sink.entries) + 1))
    assert all(entry.state is EntryState.FINISHED for entry in sink.entries)
    assert sink.end == dcj.JournalEnd(len(sink.entries))
    assert dcj.fold_journal(AiOpsJournal(request, tuple(sink.entries))) == state


def test_the_async_driver_writes_the_same_journal() -> None:
    scenario = dca.load_aiops_scenario(example("aiops_auto_discovery.json"))
    request = dca.aiops_scenario_request(scenario)
    sync_sink, async_sink = dcj.ListAiOpsJournalSink(), dcj.ListAiOpsJournalSink()
    state = dca.run_aiops(request, dca.aiops_scenario_effects(scenario), sink=sync_sink, key=KEY)
    effects = dca.AsyncAiOpsEffects.from_sync(dca.aiops_scenario_effects(scenario))
    astate = asyncio.run(dca.arun_aiops(request, effects, sink=async_sink, key=KEY))
    assert astate == state
    assert async_sink.entries == sync_sink.entries
    assert dc.to_wire(astate.result) == golden_result("aiops_auto_discovery")
    # One finished entry per agent call, in the corpus's order of the calls.
    golden_agents = [item["agent"] for item in golden_result("aiops_auto_discovery")["invocations"]]
    assert [(entry.call.value, entry.state.value) for entry in async_sink.entries] == [
        (agent, "finished") for agent in golden_agents
    ]


def test_the_tool_recorder_puts_each_executor_calls_tools_on_its_entry() -> None:
    scenario = dca.load_aiops_scenario(example("aiops_auto_discovery.json"))
    recorder = dct.ToolRecorder()
    query = recorder.wrap("query_alerts", lambda: {"alerts": ["NodeDiskPressure"]})
    scripted = dca.aiops_scenario_effects(scenario)

    def executor(text: str, config: dc.RunConfig) -> str:
        query()
        reply: str = scripted.executor(text, config)
        return reply

    sink = dcj.ListAiOpsJournalSink()
    request = dca.aiops_scenario_request(scenario)
    dca.run_aiops(request, attrs.evolve(scripted, executor=executor), sink=sink, tools=recorder)
    executors = [entry for entry in sink.entries if entry.call is AiOpsAgent.EXECUTOR]
    assert [[t.invocation_id for t in e.tool_invocations or ()] for e in executors] == [
        ["inv-1"], ["inv-2"],
    ]
    journal = AiOpsJournal(request, tuple(sink.entries))
    assert [i.invocation_id for i in dcj.aiops_journal_ledger(journal).invocations] == [
        "inv-1", "inv-2",
    ]


def test_driver_misuse_is_refused_before_any_agent_runs() -> None:
    scenario = dca.load_aiops_scenario(example("aiops_payload_targeted.json"))
    request = dca.aiops_scenario_request(scenario)
    effects = dca.aiops_scenario_effects(scenario)
    journal = dca.record_aiops_scenario(example("aiops_payload_targeted.json"))
    with pytest.raises(RunOptionsError, match="run_aiops: key= and tools= record a journal"):
        dca.run_aiops(request, effects, key=KEY)
    with pytest.raises(RunOptionsError, match="pass state= or journal=/sink=, not both"):
        dca.run_aiops(request, effects, state=dcm.start_aiops(request), journal=journal)
    other = attrs.evolve(request, alerts=())
    with pytest.raises(
        JournalError, match=r"^request: the journal is of another request \(different alerts;"
    ):
        dca.run_aiops(other, effects, journal=journal)
    with pytest.raises(JournalError, match="mac: missing"):
        dca.run_aiops(request, effects, journal=journal, key=KEY)
    # A complete journal: nothing left to do, the same state.
    assert dca.run_aiops(request, effects, journal=journal) == dcj.fold_journal(journal)


# --- command line ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", aiops_examples(), ids=lambda path: path.stem)
def test_the_cli_replays_a_journal_byte_identically(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal_file = tmp_path / "journal.json"
    journal = dca.record_aiops_scenario(json.loads(path.read_text(encoding="utf-8")))
    journal_file.write_text(dcj.journal_to_json(journal), encoding="utf-8")
    assert main(["run", "--json", str(path)]) == 0
    live = capsys.readouterr().out
    assert main(["run", "--json", str(journal_file)]) == 0
    assert capsys.readouterr().out == live
    assert main(["run", str(path)]) == 0
    readable = capsys.readouterr().out
    assert main(["run", str(journal_file)]) == 0
    assert capsys.readouterr().out == readable


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda w: w["entries"].pop(1), "entries[1].seq: expected 2, got 3"),
        (lambda w: (w["entries"].__delitem__(slice(4, None)), w.pop("end")),
         "the journal is incomplete: ends before supervisor step 3 attempt 1"),
        (lambda w: w["entries"][3].update(state="started", outcome=None),
         "entries[3].outcome: a started entry has none"),
    ],
)
def test_the_cli_refuses_a_bad_journal_with_exit_2(
    edit: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = wire_of(dca.record_aiops_scenario(example("aiops_payload_targeted.json")))
    edit(wire)
    journal_file = tmp_path / "journal.json"
    journal_file.write_text(json.dumps(wire), encoding="utf-8")
    assert main(["run", "--json", str(journal_file)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"diagnosis-core: invalid journal: {message}\n"


def test_the_cli_says_where_an_interrupted_journal_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    complete = dca.record_aiops_scenario(example("aiops_payload_targeted.json"))
    journal = _interrupted_at(complete, 3)
    journal_file = tmp_path / "journal.json"
    journal_file.write_text(dcj.journal_to_json(journal), encoding="utf-8")
    assert main(["run", str(journal_file)]) == 2
    assert capsys.readouterr().err == (
        "diagnosis-core: invalid journal: the journal is incomplete: "
        "interrupted during executor step 2 attempt 1\n"
    )
