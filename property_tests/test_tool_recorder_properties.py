"""Properties of the tool recorder (spec §13).

The oracle is a list each test appends to itself, in the order it makes the
calls; it never reads the recorder to decide what the recorder should hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core.tools import ToolRecorder

json_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(
    allow_nan=False, allow_infinity=False
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=6,
)


class Boom(Exception):
    """A tool failure the test can recognise by identity."""


# One call: which tool, its positional and keyword arguments, and either the
# output it returns or the message of the exception it raises.
calls = st.lists(
    st.tuples(
        st.sampled_from(["query_logs", "query_metrics", "search_kb"]),
        st.lists(json_values, max_size=2),
        st.dictionaries(st.sampled_from(["a", "b", "limit"]), json_values, max_size=2),
        st.one_of(
            st.tuples(st.just("ok"), json_values),
            st.tuples(st.just("raise"), st.text(max_size=10)),
        ),
    ),
    max_size=12,
)


def _tool(behaviour: tuple[str, Any]) -> Any:
    kind, value = behaviour

    def tool(*_: object, **__: object) -> object:
        if kind == "raise":
            raise Boom(value)
        return value

    return tool


@given(calls)
def test_ledger_equals_the_calls_made_and_ids_are_dense(plan: list[Any]) -> None:
    recorder = ToolRecorder()
    oracle: list[dict[str, Any]] = []
    for position, (name, args, kwargs, behaviour) in enumerate(plan, 1):
        wrapped = recorder.wrap(name, _tool(behaviour))
        expected: dict[str, Any] = {
            "invocation_id": f"inv-{position}",
            "tool_name": name,
            "input": {"args": args, "kwargs": kwargs},
        }
        if behaviour[0] == "ok":
            envelope = wrapped(*args, **kwargs)
            assert envelope == {"invocation_id": f"inv-{position}", "tool_name": name,
                                "output": behaviour[1]}
            expected.update(success=True, output=behaviour[1])
        else:
            try:
                wrapped(*args, **kwargs)
            except Boom as error:
                assert error.args == (behaviour[1],)  # the tool's own exception, unchanged
            else:
                raise AssertionError("the exception was swallowed")
            expected.update(
                success=False, output=None,
                error={"type": f"{__name__}.Boom", "message": behaviour[1]},
            )
        oracle.append(expected)
    assert recorder.to_records() == oracle
    ids = [record.invocation_id for record in recorder.records()]
    assert ids == [f"inv-{n}" for n in range(1, len(plan) + 1)]
    ledger = recorder.ledger()
    assert [invocation.invocation_id for invocation in ledger.invocations] == ids
    for entry in oracle:
        invocation = ledger.get(entry["invocation_id"])
        assert invocation is not None and invocation.success is entry["success"]


@given(calls, st.integers(0, 12))
def test_since_a_mark_is_exactly_the_later_calls(plan: list[Any], cut: int) -> None:
    recorder = ToolRecorder()
    mark = None
    for position, (name, args, kwargs, behaviour) in enumerate(plan):
        if position == cut:
            mark = recorder.mark()
        with contextlib.suppress(Boom):
            recorder.wrap(name, _tool(behaviour))(*args, **kwargs)
    if mark is None:
        mark = recorder.mark()
    later = [f"inv-{n}" for n in range(min(cut, len(plan)) + 1, len(plan) + 1)]
    assert [record.invocation_id for record in recorder.since(mark)] == later


@given(calls)
def test_resumed_recorder_holds_the_same_entries_and_continues_numbering(plan: list[Any]) -> None:
    recorder = ToolRecorder()
    for name, args, kwargs, behaviour in plan:
        with contextlib.suppress(Boom):
            recorder.wrap(name, _tool(behaviour))(*args, **kwargs)
    resumed = ToolRecorder.from_records(recorder.to_records())
    assert resumed.records() == recorder.records()
    assert resumed.wrap("t", lambda: 0)()["invocation_id"] == f"inv-{len(plan) + 1}"


@settings(max_examples=50)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=20), st.randoms(use_true_random=False))
def test_gathered_async_tools_get_distinct_ids_in_call_start_order(
    yields: list[int], rnd: Any
) -> None:
    recorder = ToolRecorder()
    started: list[int] = []  # the oracle: call n appends n when its body starts

    async def tool(n: int) -> int:
        started.append(n)
        for _ in range(yields[n]):
            await asyncio.sleep(0)
        if rnd.random() < 0.3:
            raise Boom(str(n))
        return n

    wrapped = recorder.wrap_async("fetch", tool)

    async def main() -> list[Any]:
        return await asyncio.gather(*(wrapped(n) for n in range(len(yields))),
                                    return_exceptions=True)

    results = asyncio.run(main())
    records = recorder.records()
    ids = [record.invocation_id for record in records]
    assert ids == [f"inv-{k}" for k in range(1, len(yields) + 1)]
    # the k-th call started got inv-k, whichever order the calls finished in
    by_id = {record.invocation_id: record for record in records}
    for k, n in enumerate(started, 1):
        record = by_id[f"inv-{k}"]
        assert record.input == {"args": (n,), "kwargs": {}}
        outcome = results[n]
        if isinstance(outcome, Boom):
            assert record.success is False and record.error is not None
            assert record.error.message == str(n)
        else:
            assert outcome == {"invocation_id": f"inv-{k}", "tool_name": "fetch", "output": n}
            assert record.success is True and record.output == n


@settings(max_examples=20)
@given(st.integers(2, 6), st.integers(1, 30))
def test_threads_get_unique_dense_ids_and_every_call_is_recorded(
    threads_count: int, per_thread: int
) -> None:
    recorder = ToolRecorder()
    wrapped = recorder.wrap("t", lambda n: n)
    barrier = threading.Barrier(threads_count)
    made: list[int] = []
    made_lock = threading.Lock()

    def worker(base: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            envelope = wrapped(base + i)
            with made_lock:
                made.append(base + i)
            assert envelope["output"] == base + i

    workers = [threading.Thread(target=worker, args=(t * 1000,)) for t in range(threads_count)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    records = recorder.records()
    total = threads_count * per_thread
    assert [record.invocation_id for record in records] == [f"inv-{k}" for k in range(1, total + 1)]
    assert sorted(record.output for record in records) == sorted(made)  # type: ignore[type-var]
    assert len(made) == total
