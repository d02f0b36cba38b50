"""Tools journaled as they finish, the opt-in executor resume, derived gatekeeper facts.

Spec §12.3 and §12.4, for both workflows: each finished tool call reaches the
sink before the executor returns; a crash mid-executor leaves a durable record
of every finished tool call; ``resend_executor=True`` re-sends the executor
and answers each identical tool call from the journal (no tool call recorded
as finished ever runs twice); and a gatekeeper that is the package's
reference gatekeeper over the run's own recorder is re-derived when folded.
The kill matrix SIGKILLs a real child process at every tool call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from journal_tools_support import (
    CALLS,
    DOC,
    Crash,
    FileSink,
    effects_with_tools,
    read_journal,
    request_of,
    side_lines,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core import JournalError, ReasonCode
from diagnosis_core.journal import EntryState, JournalCall
from tests._reach import journal as dcj

ROOT = Path(__file__).resolve().parent.parent
KEY = b"tools-journal-test-key"
UNINTERRUPTED = dcp.canonical_json(dc.replay(DOC))
EXPECTED_SIDE = [f"{name}({service})" for name, service in CALLS]
FINISHED_IDS = [f"inv-{n}" for n in range(1, len(CALLS) + 1)]


def result_json(state: dc.DiagnosisState) -> str:
    return dcp.canonical_json(dc.to_wire(state.result))


# --- each finished tool call reaches the sink before the executor returns -------------------


def test_each_tool_call_is_in_the_sink_before_the_next_one_starts(tmp_path: Path) -> None:
    tools = dct.ToolRecorder()
    sink = dcj.ListJournalSink()
    effects = effects_with_tools(tmp_path / "side", tools)
    seen: list[list[str]] = []
    inner = effects.executor

    def watched_tool(service: str) -> dict[str, Any]:
        last = sink.entries[-1]
        assert last.call is JournalCall.EXECUTOR and last.state is EntryState.STARTED
        seen.append([item.invocation_id for item in last.tool_invocations or ()])
        return {"service": service}

    probe = tools.wrap("probe", watched_tool)

    def executor(input: str, config: dc.RunConfig, /) -> str:
        probe("a")
        reply = inner(input, config)
        probe("b")
        return reply

    request = request_of()
    state = dc.run_diagnosis(
        request, attrs.evolve(effects, executor=executor), sink=sink, key=KEY, tools=tools
    )
    assert result_json(state) == UNINTERRUPTED
    # Before probe("b") ran, the sink listed probe("a") and every call of CALLS.
    assert seen == [[], ["inv-1", *[f"inv-{n}" for n in range(2, len(CALLS) + 2)]]]
    executor_entry = sink.journal(request).entries[1]
    assert [i.invocation_id for i in executor_entry.tool_invocations or ()] == [
        f"inv-{n}" for n in range(1, len(CALLS) + 3)
    ]
    failed = (executor_entry.tool_invocations or ())[4]
    assert (failed.tool_name, failed.success) == ("query_traces", False)
    assert failed.error == dcj.RecordedToolError("ValueError", "no traces for pay-svc")
    assert dcj.journal_status(sink.journal(request), key=KEY).complete


@pytest.mark.parametrize("die_at", range(len(CALLS) + 1))
def test_a_crash_mid_executor_leaves_every_finished_tool_call(tmp_path: Path, die_at: int) -> None:
    journal_file, side = tmp_path / "journal.jsonl", tmp_path / "side"
    tools = dct.ToolRecorder()
    with pytest.raises(Crash):
        dc.run_diagnosis(
            request_of(), effects_with_tools(side, tools),
            sink=FileSink(journal_file, die_at=die_at, signal_kill=False), key=KEY, tools=tools,
        )
    journal = read_journal(journal_file)
    status = dcj.journal_status(journal, key=KEY)
    assert status.interrupted is not None and status.interrupted.call is JournalCall.EXECUTOR
    listed = status.interrupted.tool_invocations or ()
    assert [item.invocation_id for item in listed] == FINISHED_IDS[:die_at]
    assert side_lines(side) == EXPECTED_SIDE[:die_at]
    # Default resume: fail closed, and the failed entry still lists the tool calls.
    again = dct.ToolRecorder.from_records(dcj.journal_tool_records(journal))
    sink = dcj.ListJournalSink(journal.entries)
    state = dc.run_diagnosis(
        request_of(), effects_with_tools(side, again), journal=journal, sink=sink, key=KEY,
        tools=again,
    )
    assert state.result.reason_code is ReasonCode.EXECUTOR_FAILED
    assert side_lines(side) == EXPECTED_SIDE[:die_at]  # no tool ran again
    finished = sink.entries[1]
    assert finished.state is EntryState.FINISHED
    assert finished.outcome == dcj.RecordedAgentError(
        dc.FailureKind.NON_RETRYABLE, dcj.INTERRUPTED_MESSAGE
    )
    assert [item.invocation_id for item in finished.tool_invocations or ()] == FINISHED_IDS[:die_at]
    assert dcj.journal_status(sink.journal(request_of()), key=KEY).complete


@pytest.mark.parametrize("die_at", range(len(CALLS) + 1))
def test_resend_executor_answers_recorded_tool_calls_from_the_journal(
    tmp_path: Path, die_at: int
) -> None:
    journal_file, side = tmp_path / "journal.jsonl", tmp_path / "side"
    tools = dct.ToolRecorder()
    with pytest.raises(Crash):
        dc.run_diagnosis(
            request_of(), effects_with_tools(side, tools),
            sink=FileSink(journal_file, die_at=die_at, signal_kill=False), tools=tools,
        )
    journal = read_journal(journal_file)
    again = dct.ToolRecorder()  # a fresh recorder: the journal is the only record
    sink = dcj.ListJournalSink(journal.entries)
    state = dc.run_diagnosis(
        request_of(), effects_with_tools(side, again), journal=journal, sink=sink,
        tools=again, resend_executor=True,
    )
    assert result_json(state) == UNINTERRUPTED
    assert side_lines(side) == EXPECTED_SIDE  # every call ran exactly once, across both
    executor_entry = sink.entries[1]
    assert [i.invocation_id for i in executor_entry.tool_invocations or ()] == FINISHED_IDS
    assert [r.invocation_id for r in again.records()] == FINISHED_IDS
    assert dcj.fold_journal(sink.journal(request_of())) == state


def test_resend_executor_needs_the_tool_recorder_and_a_v2_journal(tmp_path: Path) -> None:
    scenario = dc.load_scenario(DOC)
    request, effects = dc.scenario_request(scenario), dc.scenario_effects(scenario)
    with pytest.raises(dc.RunOptionsError, match=r"^run_diagnosis: resend_executor= needs tools="):
        dc.run_diagnosis(request, effects, sink=dcj.ListJournalSink(), resend_executor=True)
    fixture = Path(__file__).resolve().parent / "fixtures" / "journal_v1" / "payment_timeout.json"
    wire = json.loads(fixture.read_text(encoding="utf-8"))
    wire["entries"] = wire["entries"][:2]
    wire["entries"][1]["state"] = "started"
    del wire["entries"][1]["outcome"]
    v1 = dcj.Journal.load(wire)
    with pytest.raises(JournalError, match=r"^resend_executor: a diagnosis_journal_v1 journal"):
        dc.run_diagnosis(request, effects, journal=v1, tools=dct.ToolRecorder(),
                         resend_executor=True)
    # The default resume of a v1 journal is unchanged.
    state = dc.run_diagnosis(request, effects, journal=v1)
    assert state.result.reason_code is ReasonCode.EXECUTOR_FAILED


def test_a_replayed_tool_error_is_raised_again_with_its_recorded_class() -> None:
    recorder = dct.ToolRecorder()
    ran: list[str] = []

    def flaky(x: int) -> int:
        ran.append(f"flaky({x})")
        raise KeyError(x)

    class Custom(Exception):
        pass

    def custom() -> None:
        ran.append("custom")
        raise Custom("boom")

    wrapped, wrapped_custom = recorder.wrap("flaky", flaky), recorder.wrap("custom", custom)
    calls: tuple[Any, ...] = (lambda: wrapped(1), wrapped_custom)
    for call in calls:
        with pytest.raises(Exception):  # noqa: B017 - the live exceptions
            call()
    replaying = dct.ToolRecorder()
    replaying.replay(recorder.records())
    again, again_custom = replaying.wrap("flaky", flaky), replaying.wrap("custom", custom)
    with pytest.raises(KeyError, match="1"):
        again(1)
    with pytest.raises(dct.ReplayedToolError, match=r"^boom$") as caught:
        again_custom()
    assert type(caught.value).__name__ == "Custom"
    assert caught.value.recorded_type.endswith("Custom")
    assert ran == ["flaky(1)", "custom"]  # nothing ran twice
    # Not identical (another input): runs, and gets the next id.
    with pytest.raises(KeyError):
        again(2)
    assert ran[-1] == "flaky(2)" and replaying.records()[-1].invocation_id == "inv-3"


def test_the_aiops_driver_journals_tools_as_they_finish_and_resends_the_executor(
    tmp_path: Path,
) -> None:
    document = json.loads((ROOT / "examples" / "aiops_payload_targeted.json").read_text("utf-8"))
    scenario = dca.load_aiops_scenario(document)
    request = dca.aiops_scenario_request(scenario)
    side = tmp_path / "side"

    # Agents that answer by their exact input (a new process's scripted doubles would
    # start from their first reply): recorded from one uninterrupted run.
    replies: dict[str, list[str]] = {}
    recording = dca.aiops_scenario_effects(scenario)

    def recorded(agent: dcm.AiOpsAgent) -> Any:
        def call(text: str, config: dc.RunConfig, /) -> str:
            reply: str = recording.agent(agent)(text, config)
            replies.setdefault(text, []).append(reply)
            return reply

        return call

    dca.run_aiops(request, dca.AiOpsEffects(*(recorded(agent) for agent in dcm.AiOpsAgent)))

    def effects(recorder: dct.ToolRecorder) -> dca.AiOpsEffects:
        queues = {text: list(items) for text, items in replies.items()}

        def by_input(text: str, config: dc.RunConfig, /) -> str:
            return queues[text].pop(0)

        scripted = dca.AiOpsEffects(by_input, by_input, by_input, by_input)

        def run(service: str) -> dict[str, str]:
            side.open("a").write(f"logs({service})\n")
            return {"service": service}

        logs = recorder.wrap("logs", run)

        def executor(input: str, config: dc.RunConfig, /) -> str:
            logs("a")
            logs("b")
            reply: str = scripted.executor(input, config)
            return reply

        return attrs.evolve(scripted, executor=executor)

    class Dying(dcj.ListAiOpsJournalSink):
        def write(self, record: Any, /) -> None:
            super().write(record)
            listed = getattr(record, "tool_invocations", None) or ()
            if getattr(record, "state", None) is EntryState.STARTED and len(listed) == 1:
                raise Crash("died")

    dying, first = Dying(), dct.ToolRecorder()
    with pytest.raises(Crash):
        dca.run_aiops(request, effects(first), sink=dying, key=KEY, tools=first)
    journal = dying.journal(request)
    status = dcj.journal_status(journal, key=KEY)
    assert status.interrupted is not None
    assert [i.invocation_id for i in status.interrupted.tool_invocations or ()] == ["inv-1"]
    assert side.read_text().splitlines() == ["logs(a)"]
    # Default: fail closed, the finished tool call kept on the failed entry.
    failed_sink = dcj.ListAiOpsJournalSink(journal.entries)
    again = dct.ToolRecorder()
    state = dca.run_aiops(request, effects(again), journal=journal, sink=failed_sink, key=KEY,
                          tools=again)
    assert state.reason_code is dca.AiOpsReasonCode.EXECUTOR_FAILED
    executor_entry = next(e for e in failed_sink.entries if e.call is dcm.AiOpsAgent.EXECUTOR)
    assert [i.invocation_id for i in executor_entry.tool_invocations or ()] == ["inv-1"]
    assert side.read_text().splitlines() == ["logs(a)"]
    # resend_executor: the uninterrupted result, logs("a") answered from the journal.
    resent_sink = dcj.ListAiOpsJournalSink(journal.entries)
    again = dct.ToolRecorder()
    state = dca.run_aiops(request, effects(again), journal=journal, sink=resent_sink, key=KEY,
                          tools=again, resend_executor=True)
    uninterrupted = dca.run_aiops(request, effects(dct.ToolRecorder()))
    assert dc.to_json(state.result) == dc.to_json(uninterrupted.result)
    assert side.read_text().splitlines() == ["logs(a)", "logs(b)", "logs(a)", "logs(b)"]
    resent = resent_sink.journal(request)
    assert dcj.journal_status(resent, key=KEY).complete
    with pytest.raises(TypeError, match="resend_executor= needs tools="):
        dca.run_aiops(request, effects(dct.ToolRecorder()), journal=journal, resend_executor=True)


# --- the reference gatekeeper over the run's own recorder is re-derived (spec §12.4) ---------


def derived_run(key: bytes | None = None, before: bool = False) -> tuple[
    dc.DiagnosisRequest, dcj.Journal, dc.DiagnosisState
]:
    """payment_timeout with real tools and ``tools.gatekeeper()`` as the gatekeeper."""
    tools = dct.ToolRecorder()
    if before:
        tools.wrap("warm_up", lambda: 1)()  # a call the journal does not hold
    logs = tools.wrap(
        "query_logs", lambda: {"items": [{"message": "gateway: upstream timeout after 3000ms"}]}
    )
    metrics = tools.wrap("query_metrics", lambda: {"series": [{"summary": "p99 3400ms at 10:01"}]})
    scripted = dc.scenario_effects(dc.load_scenario(DOC))
    first = 2 if before else 1

    def executor(input: str, config: dc.RunConfig, /) -> str:
        logs()
        metrics()
        reply: str = scripted.executor(input, config)
        return reply.replace("inv-7", f"inv-{first}").replace("inv-8", f"inv-{first + 1}")

    effects = attrs.evolve(scripted, executor=executor, gatekeeper=tools.gatekeeper())
    sink = dcj.ListJournalSink()
    request = request_of()
    state = dc.run_diagnosis(request, effects, sink=sink, key=key, tools=tools)
    return request, sink.journal(request), state


def test_the_journal_says_the_gatekeeper_is_derived_and_fold_re_derives_it() -> None:
    _, journal, state = derived_run()
    assert state.result.outcome is dc.Outcome.ANSWERED
    gatekeeper = journal.entries[2]
    assert gatekeeper.call is JournalCall.GATEKEEPER and gatekeeper.derived
    wire = json.loads(dcj.journal_to_json(journal))
    assert wire["entries"][2]["derived"] is True
    assert all("derived" not in entry for i, entry in enumerate(wire["entries"]) if i != 2)
    assert dcj.fold_journal(dcj.Journal.load(wire)) == state


def test_a_pass_whose_matched_text_is_in_no_recorded_output_no_longer_folds() -> None:
    _, journal, _ = derived_run()
    wire = json.loads(dcj.journal_to_json(journal))
    # The recorded log line no longer holds the matched text: the stored pass contradicts it.
    wire["entries"][1]["tool_invocations"][0]["output"] = {"items": [{"message": "all fine"}]}
    with pytest.raises(JournalError, match=r"^entries\[2\]\.outcome\.result: differs from the "
                       "reference gatekeeper's result over the recorded tool invocations"):
        dcj.fold_journal(dcj.Journal.load(wire))
    with pytest.raises(JournalError, match=r"^entries\[2\]\.outcome\.result: differs"):
        dcj.replay_journal(dcj.Journal.load(wire))
    # A stored verdict edited on its own: refused the same way.
    wire = json.loads(dcj.journal_to_json(journal))
    result = wire["entries"][2]["outcome"]["result"]
    result["checked_bindings"][0]["matched_text"] = "anything at all"
    with pytest.raises(JournalError, match=r"^entries\[2\]\.outcome\.result: differs"):
        dcj.fold_journal(dcj.Journal.load(wire))
    # Only an interrupted derived call may be an error (the resume rule writes it).
    wire = json.loads(dcj.journal_to_json(journal))
    wire["entries"][2]["outcome"] = {"error": {"message": "TimeoutError: slow"}}
    with pytest.raises(JournalError, match=r"^entries\[2\]\.outcome: a derived gatekeeper call"):
        dcj.fold_journal(dcj.Journal.load(wire))


def test_with_a_key_the_derived_flag_cannot_be_dropped() -> None:
    _, journal, _ = derived_run(key=KEY)
    wire = json.loads(dcj.journal_to_json(journal))
    del wire["entries"][2]["derived"]
    with pytest.raises(JournalError, match=r"^entries\[2\]\.mac: does not match"):
        dcj.fold_journal(dcj.Journal.load(wire), key=KEY)


def test_a_gatekeeper_whose_ledger_is_not_the_journal_s_stays_a_fact() -> None:
    _, journal, state = derived_run(before=True)
    assert not journal.entries[2].derived
    assert state.result.outcome is dc.Outcome.ANSWERED
    assert dcj.fold_journal(journal) == state


# --- the kill matrix: SIGKILL at every tool call, resume in a new process --------------------


def child(job: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parent / "journal_kill_child.py"),
         json.dumps(job)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.parametrize("resend", [True, False], ids=["resend_executor", "default"])
@pytest.mark.parametrize("die_at", range(len(CALLS) + 1))
def test_sigkill_at_every_tool_call_then_resume_in_a_new_process(
    tmp_path: Path, die_at: int, resend: bool
) -> None:
    journal_file, side, out = tmp_path / "journal.jsonl", tmp_path / "side", tmp_path / "out"
    job = {"op": "run", "journal": str(journal_file), "side": str(side), "die_at": die_at,
           "key": KEY.hex(), "out": str(out)}
    killed = child(job)
    assert killed.returncode == -9, killed.stderr
    assert not out.exists()
    assert side_lines(side) == EXPECTED_SIDE[:die_at]
    interrupted = dcj.journal_status(read_journal(journal_file), key=KEY).interrupted
    assert interrupted is not None and interrupted.call is JournalCall.EXECUTOR
    listed = [item.invocation_id for item in interrupted.tool_invocations or ()]
    assert listed == FINISHED_IDS[:die_at]
    resumed = child({**job, "op": "resume", "resend_executor": resend, "die_at": None})
    assert resumed.returncode == 0, resumed.stderr
    journal = read_journal(journal_file)
    status = dcj.journal_status(journal, key=KEY)
    assert status.complete
    executor_tools = [item.invocation_id for item in journal.entries[1].tool_invocations or ()]
    if resend:
        assert dcp.canonical_json(json.loads(out.read_text("utf-8"))) == UNINTERRUPTED
        assert side_lines(side) == EXPECTED_SIDE  # each tool call ran exactly once
        assert executor_tools == FINISHED_IDS
    else:
        result = json.loads(out.read_text("utf-8"))
        assert result["reason_code"] == "EXECUTOR_FAILED"
        assert side_lines(side) == EXPECTED_SIDE[:die_at]
        assert executor_tools == FINISHED_IDS[:die_at]  # every finished tool call listed
    assert result_json(status.state) == dcp.canonical_json(json.loads(out.read_text("utf-8")))


# --- heads taken at every write, tool calls included (spec §12.2) ----------------------------


def test_a_head_taken_at_any_write_accepts_the_journal_that_went_on(tmp_path: Path) -> None:
    tools = dct.ToolRecorder()
    heads: list[dcj.JournalHead] = []
    sink = dcj.ListJournalSink()

    class Heads:
        def write(self, record: Any, /) -> None:
            sink.write(record)
            seq = record.entries if isinstance(record, dcj.JournalEnd) else record.seq
            heads.append(dcj.JournalHead(seq, record.mac))

    request = request_of()
    dc.run_diagnosis(request, effects_with_tools(tmp_path / "side", tools), sink=Heads(),
                     key=KEY, tools=tools)
    journal = sink.journal(request)
    executor_writes = [h for h in heads if h.entries == 2]
    assert len(executor_writes) == len(CALLS) + 2  # started, one per tool call, finished
    for head in heads:
        dcj.journal_status(journal, key=KEY, head=head)
    # A journal rolled back to the executor's started entry with 2 tool calls diverges
    # from a head taken after the third one finished.
    started = attrs.evolve(
        journal.entries[1], state=EntryState.STARTED, outcome=None, mac=None,
        tool_invocations=(journal.entries[1].tool_invocations or ())[:2],
    )
    rolled = dcj.Journal(request, (journal.entries[0],))
    rolled = dcj.append_entry(rolled, dcj.sign_entry(rolled, started, KEY))
    dcj.journal_status(rolled, key=KEY, head=executor_writes[2])  # the head of that write
    with pytest.raises(JournalError, match=r"^head: the journal diverges from the head at entr"):
        dcj.journal_status(rolled, key=KEY, head=executor_writes[3])


def test_heads_and_end_markers_refuse_what_they_cannot_be_taken_of() -> None:
    scenario = dc.load_scenario(DOC)
    request = dc.scenario_request(scenario)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, dc.scenario_effects(scenario), sink=sink)
    unsigned = sink.journal(request)
    with pytest.raises(JournalError, match=r"^end\.mac: missing; an unsigned journal has no head"):
        dcj.journal_head(unsigned)
    with pytest.raises(JournalError, match=r"^entries\[4\]\.mac: missing; no head"):
        dcj.journal_head(attrs.evolve(unsigned, end=None))
    with pytest.raises(JournalError, match=r"^entries: empty; there is no head"):
        dcj.journal_head(dcj.Journal(request))
    recorder = dcj.JournalRecorder(attrs.evolve(unsigned, end=None), key=KEY)
    with pytest.raises(JournalError, match=r"^entries\[4\]\.mac: missing; cannot sign the end"):
        recorder.close()
    started = dcj.Journal(request, (attrs.evolve(
        unsigned.entries[0], state=EntryState.STARTED, outcome=None),))
    with pytest.raises(JournalError, match=r"^entries\[0\]: started; the journal cannot end"):
        dcj.JournalRecorder(started, key=KEY).close()
    v1 = dcj.Journal(request, unsigned.entries, format=dcj.JOURNAL_FORMAT_V1)
    assert dcj.JournalRecorder(v1, key=KEY).close() is None  # a v1 journal has no marker
    empty = dcj.JournalRecorder(dcj.Journal(request), key=KEY)
    end = empty.close()
    assert end is not None and end.entries == 0 and empty.head == dcj.JournalHead(0, end.mac or "")
    signed = dcj.sign_journal(unsigned, KEY)
    with pytest.raises(JournalError, match=r"^head: expected a JournalHead, got str"):
        dcj.journal_status(signed, key=KEY, head="5:abc")  # type: ignore[arg-type]
    with pytest.raises(JournalError, match=r"^head: the journal diverges from the head \(entr"):
        dcj.journal_status(attrs.evolve(signed, end=None), key=KEY,
                           head=dcj.JournalHead(0, signed.entries[0].mac or ""))
    for entries, mac, message in [
        (True, "0" * 64, "head.entries: expected an integer >= 0"),
        (-1, "0" * 64, "head.entries: expected an integer >= 0"),
        (1, "A" * 64, "head.mac: expected 64 lowercase hex digits"),
        (1, "0" * 63, "head.mac: expected 64 lowercase hex digits"),
    ]:
        with pytest.raises(JournalError, match="^" + message):
            dcj.JournalHead(entries, mac)
