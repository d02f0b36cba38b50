"""The tool recorder's details that a journal depends on (spec §12.3, §13).

Written against the mutants the recorder's mutation run left alive: the exact
envelope a replayed call answers with, which calls count as identical, the
exception a replayed failure raises (class, module, name, message), the error
type a live failure records, durations from the host's clock, the messages
that name a misuse, and the per-run recorders of the engine adapters.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from _builders import binding, claim, executor

from diagnosis_core import LedgerError
from diagnosis_core.protocol import parse_executor_evidence
from tests._reach import tools as dct


def invocation(
    number: int,
    tool: str,
    args: list[Any],
    *,
    output: Any = None,
    error: dct.ToolCallError | None = None,
    success: bool | None = None,
) -> dct.ToolInvocation:
    return dct.ToolInvocation(
        invocation_id=f"inv-{number}",
        tool_name=tool,
        success=error is None if success is None else success,
        output=output,
        input={"args": args, "kwargs": {}},
        error=error,
    )


class Calls:
    """A tool that counts its calls."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, service: str) -> dict[str, Any]:
        self.seen.append(service)
        return {"live": service}


# --- replay: what answers, and for which calls --------------------------------


def test_a_replayed_call_answers_with_the_recorded_envelope_without_running_the_tool() -> None:
    recorder = dct.ToolRecorder()
    recorded = invocation(1, "logs", ["pay"], output={"lines": ["recorded"], "n": [1, 2]})
    recorder.replay([recorded])
    tool = Calls()
    answer = recorder.wrap("logs", tool)("pay")
    assert answer == {
        "invocation_id": "inv-1",
        "tool_name": "logs",
        "output": {"lines": ["recorded"], "n": [1, 2]},
    }
    assert tool.seen == []
    assert recorder.records() == (recorded,)


def test_only_a_call_with_the_same_input_is_answered_from_the_record() -> None:
    recorder = dct.ToolRecorder()
    recorder.replay([invocation(1, "logs", ["pay"], output={"lines": ["recorded"]})])
    tool = Calls()
    wrapped = recorder.wrap("logs", tool)
    live_db = {"invocation_id": "inv-2", "tool_name": "logs", "output": {"live": "db"}}
    assert wrapped("db") == live_db
    assert tool.seen == ["db"]
    assert wrapped("pay")["output"] == {"lines": ["recorded"]}
    live_pay = {"invocation_id": "inv-3", "tool_name": "logs", "output": {"live": "pay"}}
    assert wrapped("pay") == live_pay
    assert tool.seen == ["db", "pay"]


def test_a_replay_that_contradicts_a_held_record_names_the_id() -> None:
    recorder = dct.ToolRecorder(records=[invocation(1, "logs", ["pay"], output={"a": 1})])
    recorder.replay([invocation(1, "logs", ["pay"], output={"a": 1})])  # the same: accepted
    with pytest.raises(LedgerError, match=r"^replay: inv-1 is recorded with other content$"):
        recorder.replay([invocation(1, "logs", ["pay"], output={"a": 2})])


def test_a_replay_of_something_else_names_its_position() -> None:
    recorder = dct.ToolRecorder()
    with pytest.raises(
        LedgerError, match=r"^replay\[1\]: expected a ToolInvocation, got dict$"
    ):
        recorder.replay([invocation(1, "logs", ["pay"]), {"invocation_id": "inv-2"}])  # type: ignore[list-item]


@pytest.mark.parametrize("bad", ["inv-0", "call-1", "inv-01"])
def test_a_replayed_id_out_of_the_numbering_names_its_position(bad: str) -> None:
    record = dct.ToolInvocation(
        invocation_id=bad, tool_name="logs", success=True, output=None,
        input={"args": [], "kwargs": {}},
    )
    with pytest.raises(
        LedgerError, match=r"^replay\[0\]\.invocation_id: expected 'inv-<n>' with n >= 1$"
    ):
        dct.ToolRecorder().replay([record])


# --- replay: the exception a recorded failure raises again --------------------


class ServiceDown(Exception):
    pass


class Outer:
    class Nested(Exception):
        pass


def replayed(error: dct.ToolCallError, *, success: bool | None = None) -> BaseException:
    recorder = dct.ToolRecorder()
    recorder.replay([invocation(1, "logs", ["pay"], error=error, success=success)])
    tool = Calls()
    with pytest.raises(BaseException) as caught:
        recorder.wrap("logs", tool)("pay")
    assert tool.seen == []
    return caught.value


def test_a_recorded_builtin_error_is_raised_as_that_builtin() -> None:
    raised = replayed(dct.ToolCallError("ValueError", "bad input"))
    assert type(raised) is ValueError and raised.args == ("bad input",)


def test_a_recorded_package_error_is_raised_as_that_error() -> None:
    raised = replayed(dct.ToolCallError(f"{LedgerError.__module__}.LedgerError", "refused"))
    assert type(raised) is LedgerError and str(raised) == "refused"


def test_an_unknown_name_of_the_package_errors_is_a_replayed_error() -> None:
    recorded_type = f"{LedgerError.__module__}.NoSuchError"
    raised = replayed(dct.ToolCallError(recorded_type, "gone"))
    assert isinstance(raised, dct.ReplayedToolError)
    assert type(raised).__name__ == "NoSuchError"
    assert type(raised).__module__ == LedgerError.__module__
    assert raised.recorded_type == recorded_type and str(raised) == "gone"


def test_a_recorded_error_of_another_class_is_a_replayed_error_named_like_it() -> None:
    recorded_type = f"{ServiceDown.__module__}.{ServiceDown.__qualname__}"
    raised = replayed(dct.ToolCallError(recorded_type, "timeout after 3 s"))
    assert isinstance(raised, dct.ReplayedToolError)
    cls = type(raised)
    assert cls.__name__ == "ServiceDown"
    assert cls.__qualname__ == "ServiceDown"
    assert cls.__module__ == ServiceDown.__module__
    assert raised.recorded_type == recorded_type
    assert raised.message == "timeout after 3 s"
    assert raised.args == ("timeout after 3 s",)
    assert str(raised) == "timeout after 3 s"


def test_an_unknown_builtin_name_or_a_builtin_wanting_other_arguments_is_replayed() -> None:
    raised = replayed(dct.ToolCallError("NoSuchError", "gone"))
    assert isinstance(raised, dct.ReplayedToolError)
    assert (type(raised).__name__, type(raised).__qualname__) == ("NoSuchError", "NoSuchError")
    assert type(raised).__module__ == "builtins"
    raised = replayed(dct.ToolCallError("UnicodeDecodeError", "bad byte"))
    assert isinstance(raised, dct.ReplayedToolError)
    assert type(raised).__name__ == "UnicodeDecodeError" and str(raised) == "bad byte"
    assert type(raised).__module__ == "builtins"


def test_an_empty_recorded_type_is_a_plain_replayed_error() -> None:
    raised = replayed(dct.ToolCallError("", "no type"))
    assert isinstance(raised, dct.ReplayedToolError)
    assert type(raised).__name__ == "ReplayedToolError"
    assert str(raised) == "no type"


def test_a_failed_record_without_an_error_raises_an_empty_replayed_error() -> None:
    raised = replayed(None, success=False)  # type: ignore[arg-type]
    assert isinstance(raised, dct.ReplayedToolError)
    assert type(raised).__name__ == "ReplayedToolError"
    assert type(raised).__module__ == "builtins"
    assert raised.recorded_type == "ReplayedToolError"
    assert str(raised) == "" and raised.message == ""


# --- what a live failure records ----------------------------------------------


def recorded_error(error: BaseException) -> dct.ToolCallError:
    recorder = dct.ToolRecorder()

    def tool() -> object:
        raise error

    with pytest.raises(type(error)):
        recorder.wrap("t", tool)()
    (record,) = recorder.records()
    assert record.success is False and record.error is not None
    return record.error


def test_a_live_failure_records_the_module_qualified_class_name() -> None:
    assert recorded_error(ValueError("x")) == dct.ToolCallError("ValueError", "x")
    assert recorded_error(ServiceDown("y")).type == f"{__name__}.ServiceDown"
    assert recorded_error(Outer.Nested("z")).type == f"{__name__}.Outer.Nested"


def test_a_class_without_a_module_records_its_bare_name() -> None:
    blank = type("Blank", (Exception,), {"__module__": ""})
    assert recorded_error(blank("b")).type == "Blank"


# --- inputs and durations ---------------------------------------------------------


def ticking(*times: float) -> Callable[[], float]:
    values = itertools.chain(times, itertools.repeat(times[-1]))
    return lambda: next(values)


def test_a_record_holds_the_call_input_and_the_host_clock_duration() -> None:
    recorder = dct.ToolRecorder(clock=ticking(10.0, 12.5))
    recorder.wrap("logs", Calls())("pay")
    (record,) = recorder.to_records()
    assert record["input"] == {"args": ["pay"], "kwargs": {}}
    assert record["duration_ms"] == 2500


def test_a_recorder_from_records_keeps_its_clock_and_continues_the_numbering() -> None:
    existing = [
        {"invocation_id": "inv-4", "tool_name": "logs", "success": True, "output": None,
         "input": {"args": [], "kwargs": {}}},
    ]
    recorder = dct.ToolRecorder.from_records(existing, clock=ticking(1.0, 1.75))
    answer = recorder.wrap("logs", Calls())("pay")
    assert answer["invocation_id"] == "inv-5"
    assert recorder.records()[-1].duration_ms == 750


def test_an_unstorable_output_is_recorded_as_failed_with_its_input() -> None:
    recorder = dct.ToolRecorder(clock=ticking(3.0, 3.5))
    with pytest.raises(LedgerError, match=r"^inv-1 \(t\): the tool's .*; recorded as failed$"):
        recorder.wrap("t", lambda service: {"v": float("nan")})("pay")
    (record,) = recorder.to_records()
    assert record["success"] is False
    assert record["error"] == {"type": "LedgerError", "message": record["error"]["message"]}  # type: ignore[index,call-overload]
    assert record["input"] == {"args": ["pay"], "kwargs": {}}
    assert record["duration_ms"] == 500


# --- misuse is named ---------------------------------------------------------------


def test_misuse_messages_name_what_was_wrong() -> None:
    recorder = dct.ToolRecorder()
    with pytest.raises(TypeError, match=r"^listen: expected a callable or None$"):
        recorder.listen(42)  # type: ignore[arg-type]
    with pytest.raises(LedgerError, match=r"^tool_name: expected a non-empty string$"):
        recorder.wrap("", Calls())
    with pytest.raises(LedgerError, match=r"^since: the mark was not taken on this recorder$"):
        recorder.since(dct.ToolRecorder().mark())
    with pytest.raises(LedgerError, match=r"^records: expected an array, got str$"):
        dct.ToolRecorder.from_records("inv-1")
    with pytest.raises(
        LedgerError, match=r"^records\[0\]: expected a ToolInvocation, got dict$"
    ):
        dct.ToolRecorder(records=[{"invocation_id": "inv-1"}])  # type: ignore[list-item]


# --- one recorder per run (engines) -----------------------------------------


def record(number: int) -> dict[str, Any]:
    return {"invocation_id": f"inv-{number}", "tool_name": "logs", "success": True,
            "output": {"n": number}, "input": {"args": [], "kwargs": {}}}


@pytest.mark.parametrize("limit", [0, -1, True, 1.5, "2"])
def test_run_recorders_refuse_a_limit_that_is_not_a_positive_int(limit: Any) -> None:
    with pytest.raises(ValueError, match=r"^limit: expected a positive int, got "):
        dct.RunRecorders(limit=limit)


def test_run_recorders_with_a_limit_of_one_keep_the_latest_run() -> None:
    recorders = dct.RunRecorders(limit=1)
    recorders("a", [])
    latest = recorders("b", [])
    assert recorders.recorder("b") is latest
    with pytest.raises(LookupError, match="'a'"):
        recorders.recorder("a")


def test_run_recorders_seed_each_run_with_its_records_and_the_clock() -> None:
    recorders = dct.RunRecorders(clock=ticking(5.0, 5.25))
    made = recorders("run-a", [record(1), record(2)])
    assert recorders.recorder("run-a") is made
    assert [r.invocation_id for r in made.records()] == ["inv-1", "inv-2"]
    assert made.wrap("logs", Calls())("x")["invocation_id"] == "inv-3"
    assert made.records()[-1].duration_ms == 250
    again = recorders("run-a", [])
    assert recorders.recorder("run-a") is again and again is not made


def test_run_recorders_keep_the_most_recent_runs_up_to_the_limit() -> None:
    recorders = dct.RunRecorders(limit=2)
    recorders("a", [])
    recorders("b", [])
    recorders("a", [])  # renewed: now the most recent
    recorders("c", [])
    assert recorders.recorder("a") and recorders.recorder("c")
    with pytest.raises(LookupError, match=r"^no tool recorder for run 'b' \(was tools= given\?\)$"):
        recorders.recorder("b")


def test_run_recorders_forget_a_run_and_a_missing_run_is_no_error() -> None:
    recorders = dct.RunRecorders()
    recorders("a", [])
    recorders("b", [])
    recorders.forget("a")
    recorders.forget("never")
    with pytest.raises(LookupError, match="'a'"):
        recorders.recorder("a")
    assert recorders.recorder("b") is not None


def test_the_run_recorders_gatekeeper_checks_against_the_ledger_of_the_run_called() -> None:
    recorders = dct.RunRecorders()
    logged: dict[str, Any] = {"invocation_id": "inv-1", "tool_name": "query_logs", "success": True,
              "output": {"items": [{"message": "upstream timeout after 3000ms"}]},
              "input": {"args": [], "kwargs": {}}}
    recorders("a", [logged])
    recorders("b", [])
    gatekeeper = recorders.gatekeeper()
    claims = [claim("c1", bindings=[binding(inv="inv-1", tool="query_logs",
                                             path="$.items[0].message",
                                             excerpt="upstream timeout after 3000ms")])]
    evidence = parse_executor_evidence(json.dumps(executor(claims)))
    assert gatekeeper("a", evidence)["status"] == "pass"
    assert gatekeeper("b", evidence)["reason_codes"] == ["INVOCATION_NOT_FOUND"]
    with pytest.raises(LookupError, match="'z'"):
        gatekeeper("z", evidence)
