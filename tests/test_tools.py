"""The tool recorder (spec §13): ids, ledger entries, envelopes, the live gatekeeper."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from _builders import binding, claim, executor

from diagnosis_core import LedgerError, ReferenceGatekeeper, ToolBlockedError, ToolInvocation
from diagnosis_core._kernel.tools.recorder import ToolCallRecord
from diagnosis_core.protocol import parse_executor_evidence
from diagnosis_core.tools import ToolCallError, ToolRecorder, ledger_from_records


def query_logs(service: str, *, limit: int = 10) -> dict[str, Any]:
    return {"items": [{"message": f"{service}: upstream timeout after 3000ms"}], "limit": limit}


def evidence_citing(*invocation_ids: str) -> Any:
    claims = [
        claim(f"c{i}", bindings=[binding(inv=inv, tool="query_logs", path="$.items[0].message",
                                          excerpt="upstream timeout after 3000ms")])
        for i, inv in enumerate(invocation_ids, 1)
    ]
    return parse_executor_evidence(json.dumps(executor(claims)))


# --- the scenario ---------------------------------------------------------------------


def test_gatekeeper_built_before_any_tool_call_sees_tools_called_later() -> None:
    recorder = ToolRecorder()
    gatekeeper = recorder.gatekeeper()  # built at start-up, before any tool ran
    tool = recorder.wrap("query_logs", query_logs)
    envelope = tool("pay-svc")
    assert envelope["invocation_id"] == "inv-1"
    result = gatekeeper("run-1", evidence_citing(envelope["invocation_id"]))
    assert result["status"] == "pass", result
    assert result["reason_codes"] == []


def test_a_frozen_ledger_copy_is_the_bug_the_live_gatekeeper_fixes() -> None:
    recorder = ToolRecorder()
    frozen = ReferenceGatekeeper(recorder.ledger())
    recorder.wrap("query_logs", query_logs)("pay-svc")
    assert frozen("run-1", evidence_citing("inv-1"))["reason_codes"] == ["INVOCATION_NOT_FOUND"]
    assert recorder.gatekeeper()("run-1", evidence_citing("inv-1"))["status"] == "pass"


def test_live_gatekeeper_rejects_a_citation_of_a_call_not_made_yet() -> None:
    recorder = ToolRecorder()
    gatekeeper = recorder.gatekeeper()
    assert gatekeeper("run-1", evidence_citing("inv-1"))["status"] == "fail"
    recorder.wrap("query_logs", query_logs)("pay-svc")
    assert gatekeeper("run-1", evidence_citing("inv-1"))["status"] == "pass"


# --- entries and envelopes ---


def test_entry_records_input_as_args_and_kwargs_and_the_envelope_carries_the_output() -> None:
    recorder = ToolRecorder()
    envelope = recorder.wrap("query_logs", query_logs)("pay-svc", limit=3)
    assert envelope == {
        "invocation_id": "inv-1",
        "tool_name": "query_logs",
        "output": {"items": [{"message": "pay-svc: upstream timeout after 3000ms"}], "limit": 3},
    }
    assert recorder.to_records() == [
        {
            "invocation_id": "inv-1",
            "tool_name": "query_logs",
            "success": True,
            "output": envelope["output"],
            "input": {"args": ["pay-svc"], "kwargs": {"limit": 3}},
        }
    ]


def test_envelope_output_is_the_recorded_copy_not_the_tools_object() -> None:
    shared = {"items": ("a", "b")}
    recorder = ToolRecorder()
    envelope = recorder.wrap("t", lambda: shared)()
    assert envelope["output"] == {"items": ["a", "b"]}  # a tuple is recorded as an array
    shared["items"] = ("changed",)
    assert recorder.to_records()[0]["output"] == {"items": ["a", "b"]}


def test_tool_exception_is_recorded_and_reraised_unchanged() -> None:
    failure = ToolBlockedError("policy says no")
    recorder = ToolRecorder()

    def blocked() -> None:
        raise failure

    with pytest.raises(ToolBlockedError) as caught:
        recorder.wrap("query_db", blocked)()
    assert caught.value is failure
    (entry,) = recorder.to_records()
    assert entry["success"] is False and entry["output"] is None
    assert entry["error"] == {"type": "diagnosis_core._kernel.errors.ToolBlockedError",
                              "message": "policy says no"}
    assert recorder.ledger().get("inv-1") is not None


def test_builtin_exception_type_is_its_bare_name() -> None:
    recorder = ToolRecorder()
    with pytest.raises(TimeoutError):
        recorder.wrap("t", _raise(TimeoutError("slow")))()
    assert recorder.to_records()[0]["error"] == {"type": "TimeoutError", "message": "slow"}


def _raise(error: BaseException) -> Any:
    def tool(*_: object, **__: object) -> None:
        raise error

    return tool


def test_unprintable_exception_is_still_recorded() -> None:
    class Weird(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    recorder = ToolRecorder()
    with pytest.raises(Weird):
        recorder.wrap("t", _raise(Weird()))()
    error = recorder.to_records()[0]["error"]
    assert isinstance(error, dict) and error["message"] == "<unprintable Weird>"


def test_non_json_output_is_recorded_as_failed_and_raises_ledger_error() -> None:
    ran: list[int] = []

    def tool() -> object:
        ran.append(1)
        return {"blob": b"\x00"}

    recorder = ToolRecorder()
    with pytest.raises(LedgerError, match=r"inv-1 \(t\).*bytes.*recorded as failed"):
        recorder.wrap("t", tool)()
    assert ran == [1]
    (entry,) = recorder.to_records()
    assert entry["success"] is False and entry["output"] is None
    error = entry["error"]
    assert isinstance(error, dict) and error["type"] == "LedgerError"
    assert "$.blob" in str(error["message"])


@pytest.mark.parametrize(
    "bad", [float("nan"), {1: "x"}, {"s": {1, 2}}, 10**5000], ids=["nan", "key", "set", "huge"]
)
def test_non_json_output_kinds_all_fail_closed(bad: object) -> None:
    recorder = ToolRecorder()
    with pytest.raises(
        LedgerError, match=r"^inv-1 \(t\): the tool's output: not a JSON value at \$.*; recorded"
    ):
        recorder.wrap("t", lambda: bad)()
    assert recorder.to_records()[0]["success"] is False


def test_non_json_input_is_refused_before_the_tool_runs_and_takes_no_id() -> None:
    ran: list[object] = []
    recorder = ToolRecorder()
    tool = recorder.wrap("t", lambda value: ran.append(value))
    with pytest.raises(LedgerError, match=r"input: .*args.*bytes"):
        tool(b"raw")
    assert ran == [] and recorder.records() == ()
    tool("ok")
    assert [r.invocation_id for r in recorder.records()] == ["inv-1"]


def test_cyclic_output_fails_closed() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    recorder = ToolRecorder()
    with pytest.raises(LedgerError, match="circular"):
        recorder.wrap("t", lambda: cyclic)()


def test_wrap_keeps_name_and_doc_and_refuses_coroutine_functions() -> None:
    recorder = ToolRecorder()
    wrapped = recorder.wrap("query_logs", query_logs)
    assert wrapped.__name__ == "query_logs"

    async def atool() -> int:
        return 1

    with pytest.raises(TypeError, match="wrap_async"):
        recorder.wrap("a", atool)  # type: ignore[arg-type]
    with pytest.raises(LedgerError, match="tool_name"):
        recorder.wrap("", query_logs)


def test_sync_tool_returning_a_coroutine_is_a_non_json_output() -> None:
    async def atool() -> int:
        return 1

    recorder = ToolRecorder()
    with pytest.raises(LedgerError, match="not a JSON value at \\$: unsupported type coroutine"):
        recorder.wrap("a", lambda: atool())()
    assert recorder.to_records()[0]["success"] is False


# --- clock ---


def test_duration_only_with_a_clock() -> None:
    ticks = iter([10.0, 10.25])
    recorder = ToolRecorder(clock=lambda: next(ticks))
    recorder.wrap("t", lambda: 1)()
    assert recorder.to_records()[0]["duration_ms"] == 250
    plain = ToolRecorder()
    plain.wrap("t", lambda: 1)()
    assert "duration_ms" not in plain.to_records()[0]


def test_a_clock_that_breaks_after_the_call_costs_only_the_duration() -> None:
    calls = iter([1.0])

    def clock() -> float:
        return next(calls)  # StopIteration the second time

    recorder = ToolRecorder(clock=clock)
    assert recorder.wrap("t", lambda: 1)()["output"] == 1
    assert "duration_ms" not in recorder.to_records()[0]


def test_a_backwards_clock_gives_zero_not_a_negative_duration() -> None:
    ticks = iter([5.0, 4.0])
    recorder = ToolRecorder(clock=lambda: next(ticks))
    recorder.wrap("t", lambda: 1)()
    assert recorder.to_records()[0]["duration_ms"] == 0


# --- async and concurrency ---


async def test_async_tools_in_one_gather_get_ids_in_start_order() -> None:
    recorder = ToolRecorder()

    async def fetch(n: int) -> int:
        for _ in range(5 - n):
            await asyncio.sleep(0)
        return n

    tool = recorder.wrap_async("fetch", fetch)
    envelopes = await asyncio.gather(*(tool(n) for n in range(5)))
    assert [e["invocation_id"] for e in envelopes] == [f"inv-{n + 1}" for n in range(5)]
    assert [e["output"] for e in envelopes] == list(range(5))
    assert [r.output for r in recorder.records()] == list(range(5))


async def test_async_exception_recorded_and_reraised() -> None:
    failure = ConnectionError("refused")

    async def tool() -> None:
        await asyncio.sleep(0)
        raise failure

    recorder = ToolRecorder()
    with pytest.raises(ConnectionError) as caught:
        await recorder.wrap_async("t", tool)()
    assert caught.value is failure
    assert recorder.to_records()[0]["error"] == {"type": "ConnectionError", "message": "refused"}


async def test_cancelled_async_tool_is_recorded_as_failed() -> None:
    started = asyncio.Event()

    async def tool() -> None:
        started.set()
        await asyncio.sleep(3600)

    recorder = ToolRecorder()
    task = asyncio.ensure_future(recorder.wrap_async("t", tool)())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    error = recorder.to_records()[0]["error"]
    assert isinstance(error, dict) and error["type"] == "asyncio.exceptions.CancelledError"


async def test_async_wrapper_of_a_function_returning_no_awaitable_fails_closed() -> None:
    recorder = ToolRecorder()
    with pytest.raises(TypeError, match="not an awaitable"):
        await recorder.wrap_async("t", lambda: 1)()  # type: ignore[arg-type, return-value]
    assert recorder.to_records()[0]["success"] is False


def test_threads_get_distinct_dense_ids() -> None:
    recorder = ToolRecorder()
    tool = recorder.wrap("t", lambda n: n)
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(50):
            tool(n * 100 + i)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = recorder.records()
    assert [r.invocation_id for r in records] == [f"inv-{i}" for i in range(1, 401)]
    assert sorted(r.output for r in records) == sorted(n * 100 + i for n in range(8)
                                                       for i in range(50))


# --- marks and resuming ---


def test_since_a_mark_gives_the_calls_started_after_it() -> None:
    recorder = ToolRecorder()
    tool = recorder.wrap("t", lambda n: n)
    tool(1)
    mark = recorder.mark()
    tool(2)
    tool(3)
    assert [r.invocation_id for r in recorder.since(mark)] == ["inv-2", "inv-3"]
    with pytest.raises(LedgerError, match="not taken on this recorder"):
        ToolRecorder().since(mark)


def test_resumed_recorder_continues_numbering_and_keeps_the_ledger() -> None:
    first = ToolRecorder()
    first.wrap("query_logs", query_logs)("pay-svc")
    first.wrap("t", _raise(ValueError("x")))
    records = json.loads(json.dumps(first.to_records()))
    resumed = ToolRecorder.from_records(records)
    assert resumed.to_records() == first.to_records()
    assert resumed.gatekeeper()("run-1", evidence_citing("inv-1"))["status"] == "pass"
    assert resumed.wrap("t", lambda: 0)()["invocation_id"] == "inv-2"


def test_records_round_trip_through_the_wire_form() -> None:
    recorder = ToolRecorder(clock=iter([0.0, 0.5, 1.0, 1.0]).__next__)
    recorder.wrap("query_logs", query_logs)("a", limit=1)
    with pytest.raises(KeyError):
        recorder.wrap("t", _raise(KeyError("k")))()
    again = ToolRecorder.from_records(recorder.to_records())
    assert again.records() == recorder.records()


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"invocation_id": "inv-1"}], r"records\[0\]\.tool_name: missing"),
        ([{"invocation_id": "x", "tool_name": "t", "success": True, "output": 1, "input": None}],
         r"records\[0\]\.invocation_id: expected 'inv-<n>'"),
        ([{"invocation_id": "inv-01", "tool_name": "t", "success": True, "output": 1,
           "input": None}], "inv-<n>"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": 1,
           "input": None}] * 2, r"records\[1\].*duplicate"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": 1,
           "input": None, "extra": 1}], r"^records\[0\]\.extra: unknown key$"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": None,
           "input": None, "error": {"type": "E", "message": "m"}}],
         r"^records\[0\]\.error: present on a successful call$"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": False, "output": None,
           "input": None, "error": {"type": "E"}}], r"^records\[0\]\.error\.message: missing$"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": 1,
           "input": None, "duration_ms": -1}], "duration_ms"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": 1,
           "input": None, "duration_ms": True}], "duration_ms"),
        ([{"invocation_id": "inv-1", "tool_name": "t", "success": True, "output": float("inf"),
           "input": None}], r"records\[0\]\.output"),
        ({"invocation_id": "inv-1"}, "expected an array"),
    ],
)
def test_from_records_is_strict(records: Any, message: str) -> None:
    with pytest.raises(LedgerError, match=message):
        ToolRecorder.from_records(records)


def test_a_record_is_frozen_and_compared_by_its_json() -> None:
    record = ToolCallRecord("inv-1", "t", True, output={"a": [1]}, input=None)
    assert record == ToolCallRecord("inv-1", "t", True, output={"a": [1]}, input=None)
    assert record != ToolCallRecord("inv-1", "t", True, output={"a": [2]}, input=None)
    with pytest.raises(TypeError):
        record.output["a"] = 2  # type: ignore[index]
    # One record type: the recorder's entries are the ledger's (spec §13).
    assert ToolCallRecord is ToolInvocation
    failed = ToolCallRecord("inv-1", "t", False, output=None, input=None)
    assert failed.error is None  # a hand-written failed entry may omit why
    with pytest.raises(LedgerError, match="present on a successful call"):
        ToolCallRecord("inv-1", "t", True, output=None, input=None,
                       error=ToolCallError("E", "m"))


def test_recorder_ledger_is_accepted_by_ledger_from_records_via_invocations() -> None:
    recorder = ToolRecorder()
    recorder.wrap("query_logs", query_logs)("pay-svc")
    rebuilt = ledger_from_records([i.to_record() for i in recorder.ledger().invocations])
    assert rebuilt == recorder.ledger()


def test_to_records_load_unchanged_with_the_audit_fields() -> None:
    # One ledger format (spec §13 = §9 v1.1): the recorder's wire entries are ledger records.
    ticks = iter([0.0, 0.25, 1.0, 1.5])
    recorder = ToolRecorder(clock=lambda: next(ticks))
    recorder.wrap("query_logs", query_logs)("pay-svc", limit=3)
    with pytest.raises(TimeoutError):
        recorder.wrap("query_metrics", _raise(TimeoutError("slow")))("p99")
    records = recorder.to_records()
    ledger = ledger_from_records(records)
    assert ledger == recorder.ledger()
    assert [entry.to_record() for entry in ledger.invocations] == records
    failed = ledger.get("inv-2")
    assert failed is not None
    assert failed.error == ToolCallError("TimeoutError", "slow")
    assert failed.to_record()["input"] == {"args": ["p99"], "kwargs": {}}
    assert (ledger.get("inv-1").duration_ms, failed.duration_ms) == (250, 500)  # type: ignore[union-attr]
