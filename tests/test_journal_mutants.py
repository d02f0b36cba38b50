"""Journal checks that the journal modules' mutation run found unpinned (spec §12, §16).

Every ``mac`` here is compared with an HMAC computed in this file from the rule
restated in ``docs/protocol.md`` (§12.2: ``started:`` / ``finished:`` / ``end:``
domains, the chain seeded with the HMAC of the request's canonical JSON) with
``hmac``/``hashlib`` alone — never with the package's signer — and every refusal
is matched on the message naming the check that refused it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm
from diagnosis_core import JournalError
from diagnosis_core.journal import EntryState, JournalCall
from tests._reach import journal as dcj
from tests._reach import stores as dcs
from tests._reach import tools as dct

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEY = b"mutation-oracle-key"
STORE_HOLDS = r"not with store= \(the store holds the run's journal\)"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return data


def setup(name: str = "payment_timeout.json") -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(load(name))
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


# --- the oracle ----------------------------------------------------------------


def canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def oracle_hmac(message: str, key: bytes = KEY) -> str:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def wire_of(journal: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(dcj.journal_to_json(journal))
    return data


def oracle_macs(wire: dict[str, Any], key: bytes = KEY) -> tuple[list[str], str | None]:
    link = oracle_hmac(canonical(wire["request"]), key)
    macs = []
    for entry in wire["entries"]:
        bare = {k: v for k, v in entry.items() if k != "mac"}
        link = oracle_hmac(f"{entry['state']}:" + link + canonical(bare), key)
        macs.append(link)
    end = wire.get("end")
    if end is None:
        return macs, None
    return macs, oracle_hmac("end:" + link + canonical({"entries": end["entries"]}), key)


def pending(journal: dcj.Journal, key: bytes | None = None) -> Any:
    """The effect the machine asks for after ``journal`` (an agent or gatekeeper call)."""
    action = dcj.journal_status(journal, key=key).action
    assert not isinstance(action, dcm.Finished)
    return action


def run_journal(
    name: str = "payment_timeout.json", key: bytes | None = KEY
) -> tuple[dc.DiagnosisRequest, dcj.Journal]:
    request, effects = setup(name)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink, key=key)
    return request, sink.journal(request)


# --- signing -----------------------------------------------------------------------


def test_signing_an_entry_that_carries_a_stale_mac_gives_the_documented_mac() -> None:
    request, journal = run_journal()
    macs, _ = oracle_macs(wire_of(journal))
    prefix = dcj.Journal(request, journal.entries[:2])
    stale = attrs.evolve(journal.entries[2], mac="0" * 64)
    assert dcj.sign_entry(prefix, stale, KEY).mac == macs[2]


def test_re_signing_a_signed_journal_under_another_key_follows_the_rule() -> None:
    _, journal = run_journal()
    other = b"another-host-key"
    resigned = dcj.sign_journal(journal, other)
    wire = wire_of(resigned)
    macs, end_mac = oracle_macs(wire, other)
    assert [e["mac"] for e in wire["entries"]] == macs
    assert wire["end"] == {"entries": len(macs), "mac": end_mac}
    dcj.fold_journal(resigned, key=other)
    with pytest.raises(JournalError, match=r"^entries\[0\]\.mac: does not match"):
        dcj.fold_journal(resigned, key=KEY)


def test_start_entry_signs_with_the_key_and_keeps_derived() -> None:
    request, journal = run_journal()
    at = next(i for i, e in enumerate(journal.entries) if e.call is JournalCall.GATEKEEPER)
    prefix = dcj.Journal(request, journal.entries[:at])
    action = pending(prefix, KEY)
    started = dcj.start_entry(prefix, action, key=KEY, derived=True)
    assert started.derived is True and started.state is EntryState.STARTED
    wire = wire_of(dcj.Journal(request, (*prefix.entries, started)))
    macs, _ = oracle_macs(wire)
    assert started.mac == macs[-1]
    assert dcj.start_entry(prefix, action, key=KEY).derived is False


def test_only_a_gatekeeper_call_can_be_derived() -> None:
    request, _ = run_journal()
    empty = dcj.Journal(request, ())
    planner = pending(empty)
    with pytest.raises(JournalError, match=r"^derived: only gatekeeper calls are derived$"):
        dcj.start_entry(empty, planner, derived=True)


def test_finish_entry_keeps_the_executor_tool_invocations() -> None:
    request, journal = run_journal(key=None)
    at = next(i for i, e in enumerate(journal.entries) if e.call is JournalCall.EXECUTOR)
    prefix = dcj.Journal(request, journal.entries[:at])
    action = pending(prefix)
    started = dcj.start_entry(prefix, action)
    invocations = dcj.recorded_tool_invocations((
        dct.ToolInvocation(invocation_id="inv-1", tool_name="query_logs", success=True,
                           output={"lines": ["ok"]}, input={"args": [], "kwargs": {}}),
    ))
    result = dcj.entry_result(journal.entries[at])
    finished = dcj.finish_entry(
        dcj.Journal(request, (*prefix.entries, started)), result, tool_invocations=invocations
    )
    assert finished.tool_invocations == invocations


# --- the head --------------------------------------------------------------------


def test_every_reader_refuses_a_journal_shorter_than_its_head() -> None:
    request, journal = run_journal()
    head = dcj.journal_head(journal)
    cut = dcj.Journal(request, journal.entries[:2])
    message = r"^head: the journal has 2 entries, the head commits to 5 \(the journal was cut\)"
    with pytest.raises(JournalError, match=message):
        dcj.fold_journal(cut, key=KEY, head=head)
    with pytest.raises(JournalError, match=message):
        dcj.replay_journal(cut, key=KEY, head=head)
    with pytest.raises(JournalError, match=message):
        dcj.journal_to_scenario(cut, key=KEY, head=head)


def aiops_journal(key: bytes | None = KEY) -> tuple[dca.AiOpsRequest, dcj.AiOpsJournal]:
    scenario = dca.load_aiops_scenario(load("aiops_rule_violation.json"))
    request = dca.aiops_scenario_request(scenario)
    sink = dcj.ListAiOpsJournalSink()
    dca.run_aiops(request, dca.aiops_scenario_effects(scenario), sink=sink, key=key)
    return request, sink.journal(request)


def test_the_aiops_fold_refuses_a_journal_shorter_than_its_head() -> None:
    request, journal = aiops_journal()
    head = dcj.journal_head(journal)
    cut = dcj.AiOpsJournal(request, journal.entries[:1])
    with pytest.raises(JournalError, match=r"^head: the journal has 1 entries, the head commits"):
        dcj.fold_journal(cut, key=KEY, head=head)


def test_the_aiops_status_reports_the_end_the_key_and_the_request_hash() -> None:
    _, journal = aiops_journal()
    wire = wire_of(journal)
    request_sha = hashlib.sha256(canonical(wire["request"]).encode("utf-8")).hexdigest()
    keyed = dcj.journal_status(journal, key=KEY)
    assert (keyed.ended, keyed.end_required, keyed.request_sha256) == (True, True, request_sha)
    assert keyed.complete
    bare = dcj.journal_status(journal)
    assert (bare.ended, bare.end_required, bare.request_sha256) == (True, False, request_sha)
    unended = attrs.evolve(journal, end=None)
    status = dcj.journal_status(unended, key=KEY)
    assert (status.ended, status.end_required, status.complete) == (False, True, False)


def test_each_request_keeps_its_own_hash_while_hashes_are_reused() -> None:
    # The request digest is computed once per request value and reused (spec §12.2
    # binds it into every entry); a journal over another request — one id apart, or
    # the same values rebuilt — must still report its own request's hash.
    _, journal = aiops_journal()
    journals = [journal]
    for number in range(70):
        run = attrs.evolve(journal.request.run, run_id=f"run-{number}")
        request = attrs.evolve(journal.request, run=run)
        journals.append(dcj.AiOpsJournal(request))
    journals.append(dcj.AiOpsJournal(attrs.evolve(journal.request)))
    for _ in range(2):
        for each in journals:
            wire = wire_of(each)
            expected = hashlib.sha256(canonical(wire["request"]).encode("utf-8")).hexdigest()
            assert dcj.journal_status(each).request_sha256 == expected
    assert len({dcj.journal_status(each).request_sha256 for each in journals}) == 71


# --- converting a journal to a scenario -----------------------------------------


class NonRetryableError(Exception):
    pass


def journal_with_gatekeeper_error(error: Exception) -> dcj.Journal:
    request, effects = setup("payment_timeout.json")

    def gatekeeper(run_id: str, executor_output: object, /) -> object:
        raise error

    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, attrs.evolve(effects, gatekeeper=gatekeeper), sink=sink)
    journal = sink.journal(request)
    assert any(isinstance(e.outcome, dcj.RecordedGatekeeperError) for e in journal.entries)
    return journal


def gatekeeper_index(journal: dcj.Journal) -> int:
    return next(
        i for i, e in enumerate(journal.entries)
        if isinstance(e.outcome, dcj.RecordedGatekeeperError)
    )


def test_a_gatekeeper_error_the_scenario_can_script_converts_to_its_message() -> None:
    journal = journal_with_gatekeeper_error(NonRetryableError("ledger unreachable"))
    scenario = dcj.journal_to_scenario(journal)
    assert scenario["gatekeeper"] == [{"error": {"message": "ledger unreachable"}}]


def test_a_gatekeeper_error_it_cannot_script_is_refused_exactly_or_kept_approximately() -> None:
    journal = journal_with_gatekeeper_error(ConnectionError("refused"))
    at = gatekeeper_index(journal)
    with pytest.raises(
        JournalError,
        match=rf"^entries\[{at}\]\.outcome\.error\.message: a §9 scenario cannot reproduce "
        r"this message exactly \(pass exact=False for an approximate scenario\)$",
    ):
        dcj.journal_to_scenario(journal)
    scenario = dcj.journal_to_scenario(journal, exact=False)
    assert scenario["gatekeeper"] == [{"error": {"message": "ConnectionError: refused"}}]


def test_an_empty_scripted_gatekeeper_message_is_not_a_scenario_message() -> None:
    journal = journal_with_gatekeeper_error(NonRetryableError())
    at = gatekeeper_index(journal)
    with pytest.raises(JournalError, match=rf"^entries\[{at}\]\.outcome\.error\.message: "):
        dcj.journal_to_scenario(journal)
    scenario = dcj.journal_to_scenario(journal, exact=False)
    assert scenario["gatekeeper"] == [{"error": {"message": "NonRetryableError"}}]


# --- the end marker's wire form -------------------------------------------------------


def test_a_malformed_end_marker_is_refused_naming_its_field() -> None:
    _, journal = run_journal()
    wire = wire_of(journal)
    missing = {**wire, "end": {"mac": wire["end"]["mac"]}}
    with pytest.raises(JournalError, match=r"^end\.entries: missing"):
        dcj.Journal.load(missing)
    bad_type = {**wire, "end": {"entries": 5, "mac": 7}}
    with pytest.raises(JournalError, match=r"^end\.mac: "):
        dcj.Journal.load(bad_type)
    bad_hex = {**wire, "end": {"entries": 5, "mac": "ABC"}}
    with pytest.raises(JournalError, match=r"^end\.mac: expected 64 lowercase hex digits"):
        dcj.Journal.load(bad_hex)


def test_a_malformed_error_message_is_refused_naming_its_path() -> None:
    journal = journal_with_gatekeeper_error(ConnectionError("refused"))
    at = gatekeeper_index(journal)
    wire = wire_of(journal)
    wire["entries"][at]["outcome"]["error"]["message"] = 5
    with pytest.raises(JournalError, match=rf"^entries\[{at}\]\.outcome\.error\.message: "):
        dcj.Journal.load(wire)


# --- the executor's tool calls, in id order ------------------------------------


def executor_with_tools(
    tools: dct.ToolRecorder, count: int
) -> Callable[[dc.DiagnosisRequest, dc.Effects], dc.Effects]:
    def make(request: dc.DiagnosisRequest, effects: dc.Effects) -> dc.Effects:
        wrapped = tools.wrap("query_logs", lambda n: {"n": n})

        def executor(input: str, config: dc.RunConfig, /) -> str:
            for n in range(count):
                wrapped(n)
            reply: str = effects.executor(input, config)
            return reply

        return attrs.evolve(effects, executor=executor)

    return make


def test_eleven_tool_calls_are_journaled_in_numeric_id_order() -> None:
    request, effects = setup()
    tools = dct.ToolRecorder()
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(
        request, executor_with_tools(tools, 11)(request, effects), sink=sink, tools=tools, key=KEY
    )
    journal = sink.journal(request)
    (executor,) = [e for e in journal.entries if e.call is JournalCall.EXECUTOR]
    assert executor.tool_invocations is not None
    assert [t.invocation_id for t in executor.tool_invocations] == [
        f"inv-{n}" for n in range(1, 12)
    ]
    macs, _ = oracle_macs(wire_of(journal))
    assert [e.mac for e in journal.entries] == macs


def test_tool_calls_finishing_out_of_order_are_journaled_in_id_order() -> None:
    request, effects = setup()
    tools = dct.ToolRecorder()
    sink = dcj.ListJournalSink()
    first_may_finish = asyncio.Event()

    async def slow(n: int) -> dict[str, int]:
        await first_may_finish.wait()
        return {"n": n}

    async def fast(n: int) -> dict[str, int]:
        first_may_finish.set()
        return {"n": n}

    slow_tool = tools.wrap_async("slow", slow)
    fast_tool = tools.wrap_async("fast", fast)
    base = dc.AsyncEffects.from_sync(effects)

    async def executor(input: str, config: dc.RunConfig, /) -> str:
        await asyncio.gather(slow_tool(1), fast_tool(2))
        reply: str = await base.executor(input, config)
        return reply

    asyncio.run(dc.arun_diagnosis(
        request, attrs.evolve(base, executor=executor), sink=sink, tools=tools
    ))
    (executor_entry,) = [
        e for e in sink.journal(request).entries if e.call is JournalCall.EXECUTOR
    ]
    assert executor_entry.tool_invocations is not None
    assert [(t.invocation_id, t.tool_name) for t in executor_entry.tool_invocations] == [
        ("inv-1", "slow"), ("inv-2", "fast"),
    ]


# --- the store sink and store= -------------------------------------------------------


class SpyStore:
    """A real SQLite store, every append recorded."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.appends: list[tuple[Any, float | None]] = []
        self.released: list[str] = []

    def claim(self, run_id: str) -> Any:
        return self.inner.claim(run_id)

    def release(self, claim: Any) -> None:
        self.released.append(claim.run_id)
        self.inner.release(claim)

    def begin(self, claim: Any, journal: Any) -> None:
        self.inner.begin(claim, journal)

    def append(self, claim: Any, entry: Any, *, duration_ms: float | None = None) -> None:
        self.appends.append((entry, duration_ms))
        self.inner.append(claim, entry, duration_ms=duration_ms)

    def load(self, run_id: str) -> Any:
        return self.inner.load(run_id)

    def runs(self, *, session_id: str | None = None, since: float | None = None) -> Any:
        return self.inner.runs(session_id=session_id, since=since)

    def add_feedback(self, run_id: str, feedback: Any) -> None:
        self.inner.add_feedback(run_id, feedback)

    def close(self) -> None:
        self.inner.close()


def ticking(*times: float) -> Callable[[], float]:
    values = iter(times)
    return lambda: next(values)


def test_the_store_sink_times_each_effect_from_its_first_started_write(tmp_path: Path) -> None:
    request, journal = run_journal(key=None)
    store = SpyStore(dcs.SqliteStore(tmp_path / "runs.db"))
    claim = store.claim(request.run.run_id)
    store.begin(claim, dcj.Journal(request))
    sink = dcs.StoreSink(store, claim, ticking(10.0, 10.5, 20.0, 20.25))
    first, second = journal.entries[0], journal.entries[1]
    started = attrs.evolve(first, state=EntryState.STARTED, outcome=None)
    sink.write(started)
    sink.write(first)  # 0.5 s after its started entry
    started2 = attrs.evolve(second, state=EntryState.STARTED, outcome=None, tool_invocations=())
    sink.write(started2)
    sink.write(started2)  # progress: the clock is not read again
    sink.write(second)  # 0.25 s after the first write of its started entry
    sink.write(dcj.JournalEnd(2))
    assert [d for _, d in store.appends] == [None, 500.0, None, None, 250.0, None]
    assert isinstance(store.appends[-1][0], dcj.JournalEnd)
    stored = store.load(request.run.run_id)
    assert stored is not None and stored.durations == (500.0, 250.0)
    store.release(claim)
    store.close()


def test_the_store_sink_without_a_clock_or_a_started_entry_measures_nothing(
    tmp_path: Path,
) -> None:
    request, journal = run_journal(key=None)
    store = SpyStore(dcs.SqliteStore(tmp_path / "runs.db"))
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        clockless = dcs.StoreSink(store, claim)
        first = journal.entries[0]
        clockless.write(attrs.evolve(first, state=EntryState.STARTED, outcome=None))
        clockless.write(first)
        timed = dcs.StoreSink(store, claim, ticking(1.0, 2.0))
        timed.write(journal.entries[1])  # finished without a started write: no time
    assert [d for _, d in store.appends] == [None, None, None]
    store.close()


def test_a_run_on_a_store_writes_its_journal_and_releases_the_claim(tmp_path: Path) -> None:
    request, effects = setup()
    store = SpyStore(dcs.SqliteStore(tmp_path / "runs.db"))
    state = dc.run_diagnosis(request, effects, store=store)
    assert store.released == [request.run.run_id]
    stored = store.load(request.run.run_id)
    assert stored is not None
    assert dc.to_json(dcj.fold_journal(stored.journal).result) == dc.to_json(state.result)
    assert all(d is not None and d >= 0 for d in stored.durations)
    # the same run again resumes the complete stored journal: nothing is appended
    before = len(store.appends)
    request, effects = setup()
    again = asyncio.run(
        dc.arun_diagnosis(request, dc.AsyncEffects.from_sync(effects), store=store)
    )
    assert dc.to_json(again.result) == dc.to_json(state.result)
    assert len(store.appends) == before
    assert store.released == [request.run.run_id] * 2
    with store.claim(request.run.run_id):  # released: it can be claimed again
        pass
    store.close()


def test_store_refuses_the_options_it_replaces_and_what_is_not_a_store(tmp_path: Path) -> None:
    request, effects = setup()
    store = dcs.SqliteStore(tmp_path / "runs.db")
    with pytest.raises(
        ValueError,
        match=rf"^run_diagnosis: sink: {STORE_HOLDS}$",
    ):
        dc.run_diagnosis(request, effects, store=store, sink=dcj.ListJournalSink())
    with pytest.raises(
        ValueError,
        match=rf"^arun_diagnosis: journal: {STORE_HOLDS}$",
    ):
        asyncio.run(dc.arun_diagnosis(
            request, dc.AsyncEffects.from_sync(effects), store=store,
            journal=dcj.Journal(request),
        ))
    with pytest.raises(dcj.StoreError, match=r"^store: expected a JournalStore, got int$"):
        dc.run_diagnosis(request, effects, store=5)  # type: ignore[arg-type]
    store.close()


def test_a_store_holding_the_other_workflow_s_journal_is_refused_and_released(
    tmp_path: Path,
) -> None:
    aiops_request, aiops = aiops_journal(key=None)
    store = SpyStore(dcs.SqliteStore(tmp_path / "runs.db"))
    with store.claim(aiops_request.run.run_id) as claim:
        store.begin(claim, dcj.AiOpsJournal(aiops_request))
        for entry in aiops.entries:
            store.append(claim, entry)
    request, effects = setup()
    request = attrs.evolve(request, run=attrs.evolve(request.run, run_id=aiops_request.run.run_id))
    with pytest.raises(
        JournalError,
        match=rf"^run '{aiops_request.run.run_id}': the store holds a aiops_journal_v2 journal$",
    ):
        dc.run_diagnosis(request, effects, store=store)
    assert store.released[-1] == aiops_request.run.run_id
    with store.claim(aiops_request.run.run_id):
        pass
    store.close()



# --- the resume rule, the request seed, sinks and entries -----------------------------


def test_the_resume_rule_re_sends_agents_and_the_gatekeeper_only_when_asked() -> None:
    for call in (JournalCall.PLANNER, JournalCall.VERIFIER, JournalCall.COMPOSER):
        assert dcj.resent_on_resume(call) is True
        assert dcj.resent_on_resume(call, resend_gatekeeper=True) is True
    assert dcj.resent_on_resume(JournalCall.GATEKEEPER) is False
    assert dcj.resent_on_resume(JournalCall.GATEKEEPER, resend_gatekeeper=True) is True
    assert dcj.resent_on_resume(JournalCall.EXECUTOR) is False


def test_asking_to_re_send_the_gatekeeper_never_re_sends_the_executor() -> None:
    # The LangGraph and DBOS adapters ask this rule whether to perform an
    # interrupted effect again, passing the host's resend_gatekeeper: an
    # interrupted executor must stay failed (its tools may have run).
    assert dcj.resent_on_resume(JournalCall.EXECUTOR, resend_gatekeeper=True) is False


def test_the_request_seed_is_the_hmac_of_the_request_canonical_json() -> None:
    request, journal = run_journal()
    wire = wire_of(journal)
    assert dcj.request_mac(request, KEY) == oracle_hmac(canonical(wire["request"]))
    assert dcj.request_mac(request, b"other") == oracle_hmac(canonical(wire["request"]), b"other")


def test_a_list_sink_built_with_an_end_keeps_it() -> None:
    request, journal = run_journal(key=None)
    sink = dcj.ListJournalSink(journal.entries, dcj.JournalEnd(len(journal.entries)))
    assert sink.journal(request).end == dcj.JournalEnd(len(journal.entries))
    assert dcj.ListJournalSink(journal.entries).journal(request).end is None


def test_appending_and_finishing_name_what_is_wrong() -> None:
    request, journal = run_journal(key=None)
    entries = journal.entries
    with pytest.raises(JournalError, match=r"^seq: expected 3, got 4$"):
        dcj.append_entry(dcj.Journal(request, entries[:2]), entries[3])
    with pytest.raises(JournalError, match=r"^entries\[1\]: finished; it cannot be replaced$"):
        dcj.append_entry(dcj.Journal(request, entries[:2]), entries[1])
    with pytest.raises(
        JournalError, match=r"^the journal's last entry is not started; nothing to finish$"
    ):
        dcj.finish_entry(dcj.Journal(request, entries[:2]), dcj.entry_result(entries[0]))


def test_an_entry_refuses_fields_that_do_not_fit_its_call() -> None:
    _, journal = run_journal(key=None)
    planner, gatekeeper = journal.entries[0], journal.entries[2]
    assert gatekeeper.call is JournalCall.GATEKEEPER
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: attrs.evolve(planner, mac="XYZ"), r"^mac: expected 64 lowercase hex digits$"),
        (lambda: attrs.evolve(planner, derived=True),
         r"^derived: only gatekeeper entries are derived$"),
        (lambda: attrs.evolve(planner, tool_invocations=()),
         r"^tool_invocations: only executor entries carry them$"),
        (lambda: attrs.evolve(planner, outcome=None),
         r"^outcome: missing \(a finished entry has one\)$"),
        (lambda: attrs.evolve(planner, outcome=gatekeeper.outcome),
         r'^outcome: expected "text" or "error" for a planner call$'),
        (lambda: attrs.evolve(gatekeeper, outcome=planner.outcome),
         r'^outcome: expected "result" or "error" for a gatekeeper call$'),
    ]
    for make, message in cases:
        with pytest.raises(JournalError, match=message):
            make()


def test_a_journal_refuses_an_unknown_format_naming_the_known_ones() -> None:
    request, _ = run_journal(key=None)
    with pytest.raises(
        JournalError,
        match=r"^format: expected one of 'diagnosis_journal_v2', 'diagnosis_journal_v1', "
        r"got 'x'$",
    ):
        dcj.Journal(request, format="x")
    with pytest.raises(TypeError, match=r"<class 'str'>"):
        dcj.Journal("nope")  # type: ignore[arg-type]


def test_a_gatekeeper_outcome_loads_as_a_result_and_an_agent_one_refuses_it() -> None:
    loaded = dcj.load_outcome({"result": {"status": "pass"}}, "x", gatekeeper=True)
    assert isinstance(loaded, dcj.RecordedGatekeeperResult)
    assert loaded.result_json == '{"status":"pass"}'
    with pytest.raises(JournalError, match=r"^x: unknown key 'result'$"):
        dcj.load_outcome({"result": {"status": "pass"}}, "x", gatekeeper=False)


def test_malformed_entry_fields_are_refused_naming_their_path() -> None:
    _, journal = run_journal(key=None)
    wire = wire_of(journal)
    tool = {"invocation_id": "inv-1", "tool_name": "q", "success": True, "output": None,
            "input": {"args": [], "kwargs": {}}}

    def edited(edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
        data = json.loads(json.dumps(wire))
        edit(data)
        return data  # type: ignore[no-any-return]

    cases: list[tuple[dict[str, Any], str]] = [
        (edited(lambda d: d["entries"][0].update(state="done")),
         r"^entries\[0\]\.state: expected one of 'started', 'finished', got 'done'$"),
        (edited(lambda d: d["entries"][0].update(call=5)),
         r"^entries\[0\]\.call: expected a string, got number$"),
        (edited(lambda d: d["entries"][2].update(derived=False)),
         r"^entries\[2\]\.derived: expected true, got false$"),
        (edited(lambda d: d["entries"][1].update(tool_invocations={})),
         r"^entries\[1\]\.tool_invocations: expected an array, got object$"),
        (edited(lambda d: d["entries"][1].update(
            tool_invocations=[{k: v for k, v in tool.items() if k != "success"}])),
         r"^entries\[1\]\.tool_invocations\[0\]\.success: missing$"),
        (edited(lambda d: d["entries"][1].update(
            tool_invocations=[{k: v for k, v in tool.items() if k != "output"}])),
         r"^entries\[1\]\.tool_invocations\[0\]\.output: missing$"),
        (edited(lambda d: d.pop("request")), r"^request: missing$"),
        (edited(lambda d: d.pop("entries")), r"^entries: missing$"),
    ]
    for data, message in cases:
        with pytest.raises(JournalError, match=message):
            dcj.Journal.load(data)


class Crash(BaseException):
    """A process dying mid-effect."""


def test_a_langgraph_host_that_re_sends_the_gatekeeper_never_runs_the_executor_twice() -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import InMemorySaver

    from diagnosis_core.adapters.langgraph import (
        build_diagnosis_graph,
        resume_diagnosis_graph,
        run_diagnosis_graph,
    )

    request, effects = setup()
    calls: list[str] = []

    def dying(input: str, config: dc.RunConfig, /) -> str:
        calls.append("executor")
        raise Crash

    saver = InMemorySaver()
    graph = build_diagnosis_graph(
        attrs.evolve(effects, executor=dying), checkpointer=saver, resend_gatekeeper=True
    )
    with pytest.raises(Crash):
        run_diagnosis_graph(graph, request)
    _, fresh = setup()

    def counted(input: str, config: dc.RunConfig, /) -> str:
        calls.append("executor")
        reply: str = fresh.executor(input, config)
        return reply

    resumer = build_diagnosis_graph(
        attrs.evolve(fresh, executor=counted), checkpointer=saver, resend_gatekeeper=True
    )
    state = resume_diagnosis_graph(resumer, thread_id=request.run.run_id)
    assert calls == ["executor"]
    assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED


def test_an_effect_that_took_no_time_is_stored_as_zero(tmp_path: Path) -> None:
    request, journal = run_journal(key=None)
    store = SpyStore(dcs.SqliteStore(tmp_path / "runs.db"))
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        sink = dcs.StoreSink(store, claim, ticking(7.0, 7.0))
        first = journal.entries[0]
        sink.write(attrs.evolve(first, state=EntryState.STARTED, outcome=None))
        sink.write(first)
    assert [d for _, d in store.appends] == [None, 0.0]
    store.close()


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_each_driver_writes_a_timed_journal_to_a_store_and_resumes_from_it(
    tmp_path: Path, driver: str
) -> None:
    def go(store: Any) -> dc.DiagnosisState:
        request, effects = setup()
        if driver == "run":
            return dc.run_diagnosis(request, effects, store=store)
        return asyncio.run(
            dc.arun_diagnosis(request, dc.AsyncEffects.from_sync(effects), store=store)
        )

    store = SpyStore(dcs.SqliteStore(tmp_path / "runs.db"))
    state = go(store)
    request, _ = setup()
    stored = store.load(request.run.run_id)
    assert stored is not None and len(stored.journal.entries) == 5
    assert stored.journal.end == dcj.JournalEnd(5)
    assert all(isinstance(d, float) and d >= 0 for d in stored.durations)
    written = len(store.appends)
    assert written == 11  # five started, five finished, the end marker
    again = go(store)  # resumed from the stored, complete journal: nothing runs or is written
    assert len(store.appends) == written
    assert dc.to_json(again.result) == dc.to_json(state.result)
    store.close()


def test_a_resumed_v1_journal_records_the_executor_tool_calls_at_its_end() -> None:
    fixture = Path(__file__).resolve().parent / "fixtures" / "journal_v1" / "payment_timeout.json"
    journal = dcj.Journal.from_json(fixture.read_text(encoding="utf-8"))
    assert journal.format == dcj.JOURNAL_FORMAT_V1
    at = next(i for i, e in enumerate(journal.entries) if e.call is JournalCall.EXECUTOR)
    cut = dcj.Journal(journal.request, journal.entries[:at], format=journal.format)
    request, effects = setup()
    assert request == journal.request
    assert dcj.journal_tool_records(cut) == []
    tools = dct.ToolRecorder()
    sink = dcj.ListJournalSink(cut.entries)
    dc.run_diagnosis(
        request, executor_with_tools(tools, 3)(request, effects), journal=cut, sink=sink,
        tools=tools,
    )
    resumed = sink.journal(request)
    (executor,) = [e for e in resumed.entries if e.call is JournalCall.EXECUTOR]
    assert executor.tool_invocations is not None
    assert [(t.invocation_id, t.tool_name) for t in executor.tool_invocations] == [
        ("inv-1", "query_logs"), ("inv-2", "query_logs"), ("inv-3", "query_logs"),
    ]
