"""The crash harness's runs, oracle and checks (``test_crash_harness.py``, ``crash_child.py``).

A *flow* is one recorded run: a chat run whose executor calls two recorded
tools (so its started executor entry is written again as each tool call
finishes, spec §12.3) or an AIOps run. Recording it through the driver's
``sink=`` gives the list of writes in order — the oracle — independently of
any store: after the first ``n`` writes are durable, the run's journal is
:func:`entries_after` ``(writes, n)``.

:func:`check_resume` is the harness's assertion, the same after a cut file
(JSON Lines) and after a killed writer process (SQLite): the stored run is
exactly the durable writes; resuming it gives the §12 outcome; nothing
whose start is durable is performed again (no executor, gatekeeper or tool
call, no call whose finished entry is durable); the run loads afterwards and
folds to the resume's result; and a second resume performs nothing and
changes nothing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import attrs
from store_support import load_example, with_ids, with_tools

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.machine as dcm
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.tools import ToolRecorder

FLOWS = ("chat", "aiops")
RUN_ID = {"chat": "crash-chat", "aiops": "crash-aiops"}
NEVER_RESENT = ("executor", "gatekeeper")  # §12: an interrupted one is folded as a failure


class Writes:
    """A sink that keeps every write in order: entries (started, progress, finished), the end."""

    def __init__(self) -> None:
        self.writes: list[Any] = []

    def write(self, entry: Any, /) -> None:
        self.writes.append(entry)


@attrs.frozen
class Reference:
    """A flow's uninterrupted run: its request, writes in order, final state and journal."""

    flow: str
    run_id: str
    request: Any
    writes: tuple[Any, ...]
    state: Any
    entries: tuple[Any, ...]


def _chat_doc(run_id: str) -> dict[str, Any]:
    return with_ids(load_example("payment_timeout"), run_id=run_id, session_id="crash")


def _aiops_doc(run_id: str) -> dict[str, Any]:
    doc = load_example("aiops_rule_violation")
    doc["run"] = {**doc.get("run", {}), "run_id": run_id, "session_id": "crash"}
    return doc


# The scenarios and requests are frozen values made from a file that does not change: each is
# validated once per process, not at every resume of the sweeps (thousands per flow). The
# scripted effects are made fresh from them for every run (``effects_after``).


@functools.cache
def _chat_scenario(run_id: str) -> Any:
    return dc.load_scenario(_chat_doc(run_id))


@functools.cache
def _aiops_scenario(run_id: str) -> Any:
    from diagnosis_core.aiops import load_aiops_scenario

    return load_aiops_scenario(_aiops_doc(run_id))


@functools.cache
def request_of(flow: str, run_id: str) -> Any:
    if flow == "chat":
        return dc.scenario_request(_chat_scenario(run_id))
    from diagnosis_core._aiops.replay import aiops_scenario_request

    return aiops_scenario_request(_aiops_scenario(run_id))


def _used(entries: tuple[Any, ...]) -> dict[str, int]:
    """How many scripted outcomes of each call the stored entries have used up."""
    used: dict[str, int] = {}
    for entry in entries:
        consumed = entry.state is dcj.EntryState.FINISHED or entry.call.value in NEVER_RESENT
        used[entry.call.value] = used.get(entry.call.value, 0) + int(consumed)
    return used


def _logged(effects: Any, names: tuple[str, ...], log: list[str]) -> Any:
    def wrap(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            log.append(name)
            return call(*args)
        return run

    return attrs.evolve(effects, **{name: wrap(name, getattr(effects, name)) for name in names})


def effects_after(flow: str, run_id: str, entries: tuple[Any, ...], log: list[str],
                  recorder: ToolRecorder | None) -> Any:
    """Scripted effects continuing after the outcomes ``entries`` used; each call is logged."""
    used = _used(entries)
    if flow == "chat":
        scenario = _chat_scenario(run_id)
        responses = {agent: scenario.responses[agent][used.get(agent.value, 0):]
                     for agent in dcm.AgentName}
        gatekeeper = scenario.gatekeeper[used.get("gatekeeper", 0):]
        effects = dc.scenario_effects(
            attrs.evolve(scenario, responses=responses, gatekeeper=gatekeeper))
        effects = _logged(effects, ("planner", "executor", "gatekeeper", "verifier", "composer"),
                          log)
        assert recorder is not None
        tool_log = _ToolLog(log)
        return with_tools(effects, tool_log.wrapping(recorder))
    from diagnosis_core._aiops.replay import aiops_scenario_effects
    from diagnosis_core.machine import AiOpsAgent

    scenario = _aiops_scenario(run_id)
    responses = {agent: scenario.responses[agent][used.get(agent.value, 0):]
                 for agent in AiOpsAgent}
    effects = aiops_scenario_effects(attrs.evolve(scenario, responses=responses))
    return _logged(effects, tuple(agent.value for agent in AiOpsAgent), log)


class _ToolLog:
    """Logs ``tool:<name>`` each time a wrapped tool actually runs."""

    def __init__(self, log: list[str]) -> None:
        self._log = log

    def wrapping(self, recorder: ToolRecorder) -> Any:
        log = self._log

        class Wrapping:
            def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
                def logged(*args: Any, **kwargs: Any) -> Any:
                    log.append(f"tool:{name}")
                    return function(*args, **kwargs)
                return recorder.wrap(name, logged)

        return Wrapping()


def run_flow(flow: str, request: Any, effects: Any, *, store: Any = None, sink: Any = None,
             tools: ToolRecorder | None = None) -> Any:
    if flow == "chat":
        return dc.run_diagnosis(request, effects, store=store, sink=sink, tools=tools)
    from diagnosis_core.aiops import run_aiops

    return run_aiops(request, effects, store=store, sink=sink)


def fold(journal: Any) -> Any:
    return dcj.fold_journal(journal)


def recorder_of(flow: str, journal: Any) -> ToolRecorder | None:
    if flow != "chat":
        return None
    return ToolRecorder.from_records(dcj.journal_tool_records(journal) if journal else [])


def reference(flow: str, run_id: str | None = None) -> Reference:
    """The flow's uninterrupted run, recorded write by write through the driver's sink.

    A frozen value, recorded once per process and flow (the SQLite sweep asks for it at every
    kill).
    """
    return _reference(flow, run_id or RUN_ID[flow])


@functools.cache
def _reference(flow: str, run_id: str) -> Reference:
    request = request_of(flow, run_id)
    writes = Writes()
    listed = dcj.ListJournalSink()

    class Both:
        def write(self, entry: Any, /) -> None:
            writes.write(entry)
            listed.write(entry)

    log: list[str] = []
    recorder = recorder_of(flow, None)
    state = run_flow(flow, request, effects_after(flow, run_id, (), log, recorder), sink=Both(),
                     tools=recorder)
    entries = tuple(entry for entry in writes.writes if not isinstance(entry, dcj.JournalEnd))
    by_seq = {entry.seq: entry for entry in entries}
    return Reference(flow, run_id, request, tuple(writes.writes), state,
                     tuple(by_seq[seq] for seq in sorted(by_seq)))


def entries_after(writes: tuple[Any, ...], count: int) -> tuple[Any, ...]:
    """The journal's entries once the first ``count`` writes are durable (the end aside)."""
    by_seq: dict[int, Any] = {}
    for entry in writes[:count]:
        if not isinstance(entry, dcj.JournalEnd):
            by_seq[entry.seq] = entry
    return tuple(by_seq[seq] for seq in sorted(by_seq))


def result_json(state: Any) -> str:
    return dc.to_json(state.result)


def check_resume(ref: Reference, open_store: Callable[[], StoreBase], durable: int | None,
                 where: str, check_reader: Callable[[StoreBase], None] | None = None) -> None:
    """The harness's assertion after a crash that left ``durable`` writes (None: not even the run).

    ``open_store`` opens the crashed store afresh (a new process would). ``check_reader``,
    when given, is called with the store opened afresh after the resume, once it has
    loaded the run (what the store itself reports of the file, e.g. its torn lines).
    """
    flow, run_id = ref.flow, ref.run_id
    store = open_store()
    try:
        before = store.load(run_id)
        expected = () if durable is None else entries_after(ref.writes, durable)
        if durable is None:
            assert before is None, where
        else:
            assert before is not None, where
            assert before.journal.entries == expected, where
        log: list[str] = []
        stored_entries = before.journal.entries if before is not None else ()
        recorder = recorder_of(flow, before.journal if before is not None else None)
        effects = effects_after(flow, run_id, stored_entries, log, recorder)
        state = run_flow(flow, ref.request, effects, store=store, tools=recorder)
    finally:
        store.close()
    last = expected[-1] if expected else None
    interrupted = last if last is not None and last.state is dcj.EntryState.STARTED else None
    # the §12 outcome, and nothing whose start is durable performed again
    if interrupted is not None and interrupted.call.value in NEVER_RESENT:
        code = "EXECUTOR_FAILED" if interrupted.call.value == "executor" else (
            "GATEKEEPER_UNAVAILABLE")
        assert str(state.result.reason_code) == code, where
        assert interrupted.call.value not in log[:1], (where, log)
        assert not any(name.startswith("tool:") for name in log), (where, log)
    else:
        assert result_json(state) == result_json(ref.state), where
        done = sum(entry.state is dcj.EntryState.FINISHED for entry in expected)
        performed = [name for name in log if not name.startswith("tool:")]
        assert performed == [entry.call.value for entry in ref.entries[done:]], (where, log)
        tools = [name for name in log if name.startswith("tool:")]
        expected_tools = [f"tool:{item.tool_name}" for entry in ref.entries[done:]
                          for item in entry.tool_invocations or ()]
        assert tools == expected_tools, (where, log)
    # the run loads afterwards, whole, and a second resume changes nothing
    reader = open_store()
    try:
        after = reader.load(run_id)
        assert after is not None, where
        if check_reader is not None:
            check_reader(reader)
        entries = after.journal.entries
        assert [entry.seq for entry in entries] == list(range(1, len(entries) + 1)), where
        assert all(entry.state is dcj.EntryState.FINISHED for entry in entries), where
        assert after.journal.end is not None, where
        assert fold(after.journal) == state, where
        if interrupted is None:
            assert entries == ref.entries, where
        snapshot = _snapshot(reader)
        log.clear()
        again_recorder = recorder_of(flow, after.journal)
        again = run_flow(flow, ref.request,
                         effects_after(flow, run_id, entries, log, again_recorder),
                         store=reader, tools=again_recorder)
        assert again == state and log == [], (where, log)
        assert _snapshot(reader) == snapshot, where
    finally:
        reader.close()


def _snapshot(store: StoreBase) -> object:
    """What a store holds, byte for byte where it is one file."""
    from diagnosis_core.stores._jsonl import JsonlStore
    from diagnosis_core.stores._sqlite import SqliteStore

    if isinstance(store, JsonlStore):
        return store.path.read_bytes()
    assert isinstance(store, SqliteStore)
    rows = []
    for table in ("diagnosis_runs", "diagnosis_entries", "diagnosis_feedback"):
        rows.append(store._db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
    return json.dumps(rows)
