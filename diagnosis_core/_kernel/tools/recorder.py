"""The tool recorder: the one place the executor's tool calls go through (spec §13).

The executor's tools are the evidence. A claim "the logs say X" is only
trusted when the gatekeeper finds X in what a recorded tool really returned,
so every tool call must be recorded, under an id the executor model can cite.
:class:`ToolRecorder` wraps tool callables (sync with :meth:`ToolRecorder.wrap`,
async with :meth:`ToolRecorder.wrap_async`); a wrapped tool keeps its
signature (``ParamSpec``) and returns the envelope
``{"invocation_id", "tool_name", "output"}`` instead of the bare output.

This module is host-facing plumbing, not part of the pure decision core: it
holds mutable state (one recorder per run) and a lock. It never reads a clock
itself; ``duration_ms`` is recorded only when the host passes one
(``ToolRecorder(clock=time.monotonic)``, seconds as a float).

Guarantees and the decisions behind them:

* **Ids.** ``inv-1``, ``inv-2``, … assigned in call *start* order, under a
  :class:`threading.Lock` and before the tool runs (for an async tool:
  synchronously, before the first ``await``), so parallel calls of one
  executor turn — ``asyncio.gather`` or threads — get distinct, dense ids in
  the order they were started.
* **Input.** Recorded as ``{"args": [...], "kwargs": {...}}`` — always that
  shape, so positional and keyword calls are never confused. An argument
  that is not a storable JSON value (bytes, a set, a non-string key, NaN, a
  cycle, an integer of more than 4300 digits, nesting deeper than 512, a
  string holding a surrogate pair: the one definition of spec §12.1 in
  ``_facts.py``, which the ledger and the journal share) fails closed: the
  call is *refused* with a :class:`LedgerError` before an id is assigned and
  before the tool runs
  (a call we cannot record faithfully must not happen). Tuples are recorded
  as arrays; ``str``/``int``/``float`` subclasses as the plain value.
* **Output.** A storable JSON value (the same definition), recorded
  deep-copied; the envelope carries the recorded copy, so the model sees
  exactly what the gatekeeper will check. Any other tool output fails
  closed: the tool already ran, so the call *is* recorded — as failed, the
  moment the tool returns, never later when the journal would fail to write
  or read it back (``success`` false, ``output`` null, ``error``
  ``{"type": "LedgerError", "message": …}``) — and the caller gets a
  :class:`LedgerError`; the output never reaches the model uncited.
* **Errors.** A tool that raises (any ``BaseException``, cancellation
  included: the tool may have had side effects) is recorded as failed with
  ``error`` ``{"type": <module-qualified class name, builtins bare>,
  "message": str(error)}`` and the exception is re-raised unchanged (a
  :class:`ToolBlockedError` still means ``EXECUTOR_TOOL_BLOCKED``).
* **One format.** A recorded call *is* a ledger entry: a
  :class:`ToolInvocation` (``ToolCallRecord`` is the same type), so
  :meth:`ToolRecorder.to_records` loads with ``ledger_from_records``
  unchanged and a scenario's ``tool_ledger`` keeps the audit fields.
* **Ledger.** :meth:`ToolRecorder.ledger` is a :class:`ToolLedger` snapshot
  of the calls *finished* so far, in id order (deterministic whatever the
  completion order); the chat workflow's recorder adds ``gatekeeper()``, a
  reference gatekeeper that takes that snapshot *at call time*, so one built
  at start-up sees tools called later (``_chat/reference_gatekeeper.py``).
* **Marks.** :meth:`ToolRecorder.mark` / :meth:`ToolRecorder.since` give the
  calls started after a point and finished by now (what an executor journal
  entry carries, spec §12). :meth:`ToolRecorder.from_records` rebuilds a
  recorder from §13 entries (a resumed run) and numbering continues after
  the highest id.
* **Journaled as they finish** (spec §12.3). :meth:`ToolRecorder.listen`
  installs a callback the recorder calls with each record as soon as it is
  stored — before the wrapped tool returns to the executor — so a journaling
  driver can hand it to the sink. A callback that raises makes the tool call
  raise (the record is kept; the output never reaches the model unjournaled).
* **Replay** (spec §12.3, ``resend_executor``). :meth:`ToolRecorder.replay`
  holds the tool calls an interrupted executor call recorded: while it is
  set, a call identical to one of them — same tool name, same canonical
  input, same occurrence number among identical calls — is answered from the
  record (the recorded envelope, or the recorded error raised again: the
  same built-in or package exception class, otherwise a
  :class:`ReplayedToolError` under the recorded class name) and the tool
  does not run; any other call runs and gets the next id.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, ParamSpec, Self, TypedDict

import attrs

from .. import errors as _errors
from ..errors import LedgerError
from ..public import defined_in
from ..wire.facts import repair_text
from ..wire.json import JsonValue, canonical_json
from .ledger import (
    ToolCallError,
    ToolInvocation,
    ToolLedger,
    canonical_key,
    freeze_json_field,
    invocation_from_record,
    thaw_json,
)

__all__ = [
    "RecorderMark",
    "ReplayedToolError",
    "ToolCallError",
    "ToolCallRecord",
    "ToolEnvelope",
    "ToolRecorder",
    "error_message",
    "error_type",
]

P = ParamSpec("P")

_ID = re.compile(r"inv-([1-9][0-9]{0,17})")


class ToolEnvelope(TypedDict):
    """What a wrapped tool returns to the executor model (spec §13)."""

    invocation_id: str
    tool_name: str
    output: JsonValue


ToolCallRecord = ToolInvocation
"""The recorder's name for a ledger entry: the same type as :class:`ToolInvocation` (spec §13)."""


def error_type(error: BaseException) -> str:
    cls = type(error)
    # A package class is recorded under the module that defines it, as it always
    # was (the journal's bytes), not the public namespace it names (§12.3).
    module = getattr(cls, "__module__", "")
    if isinstance(module, str) and module.startswith("diagnosis_core"):
        module = defined_in(cls)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in ("builtins", "", None) else f"{module}.{name}"


def error_message(error: BaseException) -> str:
    try:
        message = str(error)
    except Exception:
        return f"<unprintable {type(error).__name__}>"
    return repair_text(message)  # stored as the fact codec stores it (spec §12.1)


class ReplayedToolError(Exception):
    """A recorded tool error raised again by a replayed call (spec §12.3).

    Used when the recorded class is neither a built-in exception nor one of
    the package's: a subclass named like the recorded class is raised, so
    the executor's failure reads ``Class: message`` as it did live.
    ``recorded_type`` is the recorded (module-qualified) class name.
    """

    def __init__(self, recorded_type: str, message: str) -> None:
        super().__init__(message)
        self.recorded_type = recorded_type
        self.message = message

    def __str__(self) -> str:
        return self.message


def replayed_error(error: ToolCallError) -> BaseException:
    """The exception a replayed call raises for a recorded tool error."""
    module, _, name = error.type.rpartition(".")
    found: object = None
    if not module:
        found = getattr(builtins, name, None)
    else:
        candidate = getattr(_errors, name, None)
        # Recorded where it is defined, or under its public namespace.
        if module == _errors.__name__ or (
            isinstance(candidate, type) and candidate.__module__ == module
        ):
            found = candidate
    if isinstance(found, type) and issubclass(found, Exception):
        try:
            return found(error.message)
        except Exception:  # an exception class that wants other arguments
            pass
    short = name.rpartition(".")[2] or "ReplayedToolError"
    namespace = {"__module__": module or "builtins", "__qualname__": name}
    cls: type[ReplayedToolError] = type(short, (ReplayedToolError,), namespace)
    return cls(error.type, error.message)


@attrs.frozen
class RecorderMark:
    """A point in a recorder's call sequence (the number of ids assigned so far)."""

    position: int
    recorder_id: int = attrs.field(repr=False)


def _sequence_number(record: object, where: str) -> int:
    """A record's number in its run (from its ``inv-<n>`` id); anything else is refused."""
    if not isinstance(record, ToolInvocation):
        raise LedgerError(f"{where}: expected a ToolInvocation, got {type(record).__name__}")
    invocation_id = record.invocation_id
    match = _ID.fullmatch(invocation_id) if isinstance(invocation_id, str) else None
    if match is None:
        raise LedgerError(f"{where}.invocation_id: expected 'inv-<n>' with n >= 1")
    return int(match.group(1))


def _envelope(record: ToolInvocation) -> ToolEnvelope:
    """The envelope of a recorded successful call: what the model sees and may cite."""
    return {
        "invocation_id": record.invocation_id,
        "tool_name": record.tool_name,
        "output": thaw_json(record.output),  # type: ignore[typeddict-item]
    }


def _record_from_wire(record: object, where: str) -> ToolInvocation:
    try:
        return invocation_from_record(record)
    except LedgerError as error:
        raise LedgerError(f"{where}{error}") from None


class ToolRecorder:
    """Records every tool call of one run and numbers it (spec §13).

    Create one per run (``ToolRecorder()``, or ``ToolRecorder(clock=time.monotonic)``
    to record durations), wrap the executor's tools with it, and give
    :meth:`gatekeeper` to the driver. Thread-safe and asyncio-safe; the
    guarantees are in the module docstring.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        records: Iterable[ToolInvocation] = (),
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._finished: dict[int, ToolInvocation] = {}
        self._next = 1
        self._ledger: ToolLedger | None = None
        self._listener: Callable[[ToolInvocation], None] | None = None
        self._replay: dict[tuple[str, str], list[ToolInvocation]] = {}
        for position, record in enumerate(records):
            number = _sequence_number(record, f"records[{position}]")
            if number in self._finished:
                raise LedgerError(
                    f"records[{position}].invocation_id: duplicate {record.invocation_id!r}"
                )
            self._finished[number] = record
            self._next = max(self._next, number + 1)

    @classmethod
    def from_records(
        cls, records: Sequence[object], *, clock: Callable[[], float] | None = None
    ) -> Self:
        """A recorder holding existing §13 entries (e.g. from a run journal).

        Strict like a scenario (the rules of ``ledger_from_records``): unknown
        keys, a missing field, ``error`` on a successful call are
        :class:`LedgerError`\\ s naming the entry; and, for the numbering, an
        id not of the form ``inv-<n>`` or a duplicate id. Numbering continues
        after the highest id (gaps are allowed: a call still running when an
        entry was written is not in it). Returns the class it is called on
        (``diagnosis_core.tools.ToolRecorder.from_records`` is one with
        :meth:`~diagnosis_core.tools.ToolRecorder.gatekeeper`).
        """
        if not isinstance(records, list | tuple):
            raise LedgerError(f"records: expected an array, got {type(records).__name__}")
        parsed = [_record_from_wire(record, f"records[{i}]") for i, record in enumerate(records)]
        return cls(clock=clock, records=parsed)

    # --- journaling hooks (spec §12.3) -------------------------------------------

    def listen(self, callback: Callable[[ToolInvocation], None] | None) -> None:
        """Call ``callback`` with each record as soon as it is stored (None: stop).

        Called in the tool's thread, before the wrapped tool returns; a
        callback that raises makes the call raise (the record is kept).
        """
        if callback is not None and not callable(callback):
            raise TypeError("listen: expected a callable or None")
        with self._lock:
            self._listener = callback

    def replay(self, records: Sequence[ToolInvocation]) -> None:
        """Answer calls identical to ``records`` from them instead of running the tool.

        ``records`` are the tool calls an interrupted executor call recorded
        (ordered by id); each is added to this recorder's records when it is
        not there yet (an id it holds with other content is a
        :class:`LedgerError`), and numbering continues after the highest id.
        Identical means same tool name, same canonical input and same
        occurrence number among identical calls. ``replay(())`` stops.
        """
        table: dict[tuple[str, str], list[ToolInvocation]] = {}
        checked = []
        for position, record in enumerate(records):
            number = _sequence_number(record, f"replay[{position}]")
            table.setdefault((record.tool_name, canonical_key(record.input)), []).append(record)
            checked.append((number, record))
        with self._lock:
            for number, record in checked:
                held = self._finished.get(number)
                if held is not None and held != record:
                    raise LedgerError(
                        f"replay: {record.invocation_id} is recorded with other content"
                    )
            for number, record in checked:
                self._finished[number] = record
                self._next = max(self._next, number + 1)
            self._ledger = None
            self._replay = table

    def _replayed(self, tool_name: str, recorded_input: JsonValue) -> ToolInvocation | None:
        """The recorded call this one is identical to (consumed), or None."""
        with self._lock:
            if not self._replay:
                return None
        key = (tool_name, canonical_json(recorded_input))
        with self._lock:
            waiting = self._replay.get(key)
            return waiting.pop(0) if waiting else None

    @staticmethod
    def _answer(record: ToolInvocation) -> ToolEnvelope:
        if record.error is not None or not record.success:
            error = record.error or ToolCallError("ReplayedToolError", "")
            raise replayed_error(error)
        return _envelope(record)

    # --- recording -------------------------------------------------------------

    def _begin(
        self, tool_name: str, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> ToolEnvelope | _PendingCall:
        """A wrapped tool's call as it starts: the replayed answer, or the call to record.

        The id is assigned here, before the tool runs (§13); a replayed call
        that failed raises its recorded error instead. The input is checked by
        the ledger's own rules (:func:`freeze_json_field`), so a recorder never
        accepts what a ledger would refuse.
        """
        frozen = freeze_json_field("input", {"args": list(args), "kwargs": kwargs})
        recorded_input: JsonValue = thaw_json(frozen)  # type: ignore[assignment]
        replayed = self._replayed(tool_name, recorded_input)
        if replayed is not None:
            return self._answer(replayed)
        started = self._clock() if self._clock is not None else None
        with self._lock:
            number = self._next
            self._next += 1
        return _PendingCall(self, number, tool_name, recorded_input, started)

    def _elapsed_ms(self, started: float | None) -> int | None:
        if started is None or self._clock is None:
            return None
        try:
            elapsed = (self._clock() - started) * 1000
            return max(0, round(elapsed))
        except Exception:  # a broken host clock costs the duration, never the record
            return None

    def _finish(
        self, call: _PendingCall, *, output: object = None, error: ToolCallError | None = None
    ) -> ToolInvocation:
        record = ToolInvocation(
            invocation_id=f"inv-{call.number}",
            tool_name=call.tool_name,
            success=error is None,
            output=output,
            input=call.recorded_input,
            error=error,
            duration_ms=self._elapsed_ms(call.started),
        )
        with self._lock:
            self._finished[call.number] = record
            self._ledger = None
            listener = self._listener
        if listener is not None:
            listener(record)
        return record

    def wrap(self, tool_name: str, fn: Callable[P, object]) -> Callable[P, ToolEnvelope]:
        """Wrap a synchronous tool so each call is recorded and returns its envelope.

        Raises:
            LedgerError: at wrap time for an empty or non-string ``tool_name``.
            TypeError: at wrap time for a coroutine function (use :meth:`wrap_async`).
        """
        _check_tool_name(tool_name)
        if inspect.iscoroutinefunction(fn):
            raise TypeError(f"tool {tool_name!r} is a coroutine function; use wrap_async")

        @functools.wraps(fn)
        def recorded(*args: P.args, **kwargs: P.kwargs) -> ToolEnvelope:
            call = self._begin(tool_name, args, kwargs)
            if not isinstance(call, _PendingCall):
                return call  # the replayed answer
            with call:
                result = fn(*args, **kwargs)
            if inspect.iscoroutine(result):
                result.close()  # never awaited: recorded as a non-JSON output below
            return call.complete(result)

        return recorded

    def wrap_async(
        self, tool_name: str, fn: Callable[P, Awaitable[object]]
    ) -> Callable[P, Coroutine[Any, Any, ToolEnvelope]]:
        """Wrap an async tool; the id is assigned when the call starts, before any await.

        The returned coroutine function assigns the id synchronously when
        its coroutine is first run — so coroutines started by one
        ``asyncio.gather`` get ids in the order they were passed — and the
        call to ``fn`` happens in the same step.

        Raises:
            LedgerError: at wrap time for an empty or non-string ``tool_name``.
        """
        _check_tool_name(tool_name)

        @functools.wraps(fn)
        async def recorded(*args: P.args, **kwargs: P.kwargs) -> ToolEnvelope:
            call = self._begin(tool_name, args, kwargs)
            if not isinstance(call, _PendingCall):
                return call  # the replayed answer
            with call:
                awaitable = fn(*args, **kwargs)
                if not inspect.isawaitable(awaitable):
                    raise TypeError(
                        f"tool {tool_name!r} returned {type(awaitable).__name__}, not an awaitable"
                    )
                result = await awaitable
            return call.complete(result)

        return recorded

    # --- reading ------------------------------------------------------------------

    def _in_order(self, after: int = 0) -> tuple[ToolInvocation, ...]:
        """The finished calls numbered above ``after``, in id order; the caller holds the lock."""
        return tuple(self._finished[number] for number in sorted(self._finished) if number > after)

    def records(self) -> tuple[ToolInvocation, ...]:
        """The finished calls so far, in id (call-start) order."""
        with self._lock:
            return self._in_order()

    def to_records(self) -> list[dict[str, JsonValue]]:
        """The finished calls as §13 wire entries, in id order."""
        return [record.to_record() for record in self.records()]

    def ledger(self) -> ToolLedger:
        """A :class:`ToolLedger` snapshot of the calls finished so far, in id order."""
        with self._lock:
            if self._ledger is None:
                self._ledger = ToolLedger(self._in_order())
            return self._ledger

    def mark(self) -> RecorderMark:
        """The current point of the call sequence, for :meth:`since`."""
        with self._lock:
            return RecorderMark(self._next - 1, id(self))

    def since(self, mark: RecorderMark) -> tuple[ToolInvocation, ...]:
        """The calls started after ``mark`` and finished by now, in id order.

        Raises:
            LedgerError: for a mark taken on another recorder.
        """
        if not isinstance(mark, RecorderMark) or mark.recorder_id != id(self):
            raise LedgerError("since: the mark was not taken on this recorder")
        with self._lock:
            return self._in_order(mark.position)


@attrs.frozen(eq=False)
class _PendingCall:
    """One recorded tool call between its start and its end, shared by the sync and async wraps.

    Used as ``with call: <run the tool>``: an exception the tool raises (any
    ``BaseException``, cancellation too) is recorded as the call's error and
    propagates; :meth:`complete` records the result and returns the envelope.
    """

    recorder: ToolRecorder
    number: int
    tool_name: str
    recorded_input: JsonValue
    started: float | None

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: object
    ) -> None:
        if error is not None:
            failure = ToolCallError(error_type(error), error_message(error))
            self.recorder._finish(self, error=failure)

    def complete(self, result: object) -> ToolEnvelope:
        try:
            record = self.recorder._finish(self, output=result)
        except LedgerError as error:
            message = str(error)
            self.recorder._finish(self, error=ToolCallError("LedgerError", message))
            raise LedgerError(
                f"inv-{self.number} ({self.tool_name}): the tool's {message}; recorded as failed"
            ) from None
        return _envelope(record)


def _check_tool_name(tool_name: object) -> None:
    if not isinstance(tool_name, str) or not tool_name:
        raise LedgerError("tool_name: expected a non-empty string")
