"""Tools journaled as they finish, and the opt-in executor resume (spec §12.3).

Driver-side plumbing shared by both workflows' drivers (it holds a lock; it
is not part of the pure core). While an executor call runs,
:class:`ExecutorTools` listens to the run's :class:`ToolRecorder`: each time
a tool call finishes, the executor's ``started`` entry is written to the
sink again (same ``seq``), listing every tool call finished so far — so a
process that dies during the executor leaves a durable record of them. The
position and form are documented in ``docs/protocol.md`` (§12 *Tools
journaled as they finish*).

When the call is an interrupted executor call re-sent under
``resend_executor`` (the host declared its tools replay-safe), the started
entry already lists the calls recorded before the interruption: they are
handed to :meth:`ToolRecorder.replay`, so each identical call is answered
from the journal and never runs twice; the entry keeps listing them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ..errors import JournalError
from ..tools.ledger import ToolInvocation, invocation_from_record
from ..tools.recorder import ToolRecorder
from .codec import RecordedToolInvocation, is_v1, recorded_tool_invocations
from .fold import JournalRecorderBase

__all__ = ["ExecutorTools", "journal_ledger_equals", "sequence_number"]


def sequence_number(invocation_id: str) -> int:
    """``inv-12`` -> 12 (ordering only; ids are checked where they are loaded)."""
    tail = invocation_id.rpartition("-")[2]
    return int(tail) if tail.isdigit() else 0


class ExecutorTools:
    """One executor call's tool calls: streamed to the sink, replayed when re-sent."""

    def __init__(
        self,
        recorder: JournalRecorderBase[Any, Any, Any, Any],
        tools: ToolRecorder,
        carried: Sequence[RecordedToolInvocation] | None,
    ) -> None:
        self._recorder = recorder
        self._tools = tools
        self._lock = threading.Lock()
        self._known: dict[str, RecordedToolInvocation] = {
            item.invocation_id: item for item in carried or ()
        }
        self._mark = tools.mark()
        if carried:
            try:
                replay = [invocation_from_record(item.to_record()) for item in carried]
            except Exception as error:  # a malformed record cannot be replayed
                raise JournalError(f"tool_invocations: cannot be replayed ({error})") from None
            tools.replay(replay)
        self._streamed = not is_v1(recorder.journal)
        if self._streamed:
            tools.listen(self._finished)

    def _current(self) -> tuple[RecordedToolInvocation, ...]:
        return tuple(
            self._known[name]
            for name in sorted(self._known, key=sequence_number)
        )

    def _finished(self, record: ToolInvocation) -> None:
        """A tool call finished: the sink gets the started entry listing it (before it returns)."""
        [converted] = recorded_tool_invocations((record,))
        with self._lock:
            self._known[converted.invocation_id] = converted
            self._recorder.progress(self._current())

    def finish(self) -> tuple[RecordedToolInvocation, ...]:
        """Stop listening and replaying; every tool call of this executor call, in id order."""
        if self._streamed:
            self._tools.listen(None)
        self._tools.replay(())
        with self._lock:
            for converted in recorded_tool_invocations(self._tools.since(self._mark)):
                self._known.setdefault(converted.invocation_id, converted)
            return self._current()


def journal_ledger_equals(
    entries: Sequence[Any], tools: ToolRecorder
) -> bool:
    """True when ``tools`` holds exactly the tool calls the journal's entries record.

    Then the reference gatekeeper over the recorder (``tools.gatekeeper()``)
    and the one folding re-derives over the journal see the same ledger.
    """
    journal: list[RecordedToolInvocation] = []
    for entry in entries:
        journal.extend(entry.tool_invocations or ())
    records = tools.records()
    if len(records) != len(journal):
        return False
    ordered = sorted(journal, key=lambda item: sequence_number(item.invocation_id))
    return recorded_tool_invocations(records) == tuple(ordered)
