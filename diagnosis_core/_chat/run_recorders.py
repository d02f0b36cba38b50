"""One tool recorder per run, for hosts whose effects serve many runs (spec §13, engines).

An engine adapter (LangGraph, Temporal, DBOS) runs many runs through one set
of effects, and may run one run's executor and gatekeeper in different
processes. Its ``tools=`` option is a :data:`ToolsFactory`: called with the run
id and the §13 records the run's journal already holds, it returns the
:class:`ToolRecorder` this process uses for that run — seeded with those
records, so a gatekeeper that runs in another process than the executor
reads the ledger rebuilt from the journal, never an empty one (§13: executor
entries carry the invocations "so a run resumed in another process has its
ledger").

:class:`RunRecorders` is the ready-made factory: it keeps the recorder of
each run it was asked for, :meth:`RunRecorders.recorder` finds it by run id
(the executor wraps its tools with it, ``config.run_id`` names the run) and
:meth:`RunRecorders.gatekeeper` is a gatekeeper that reads the ledger of the
run it is called for.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import TypeAlias

from .._kernel.json import JsonValue
from .payloads import ExecutorEvidence
from .reference_gatekeeper import ToolRecorder

__all__ = ["RunRecorders", "ToolsFactory"]

ToolsFactory: TypeAlias = Callable[[str, Sequence[dict[str, JsonValue]]], ToolRecorder]
"""``tools=`` of the engine adapters: ``(run_id, records) -> ToolRecorder`` (spec §13).

``records`` are the §13 ledger entries the run's journal holds
(``journal_tool_records``); the recorder returned must hold them
(``ToolRecorder.from_records(records)``) and be the one the run's tools are
wrapped with in this process.
"""

_DEFAULT_LIMIT = 4096


class RunRecorders:
    """A :data:`ToolsFactory` that keeps one :class:`ToolRecorder` per run id (spec §13).

    Pass it as ``tools=`` to an engine adapter; wrap the executor's tools with
    ``recorders.recorder(config.run_id)`` and use :meth:`gatekeeper` as the
    effects' gatekeeper. ``clock`` is given to every recorder (durations);
    at most ``limit`` runs are kept, the least recently created dropped
    first. A run the adapter never announced has no recorder:
    :meth:`recorder` raises ``LookupError`` rather than hand out an empty
    ledger, so a misconfigured host fails closed (the executor or gatekeeper
    call fails) instead of checking citations against nothing.
    """

    def __init__(
        self, *, clock: Callable[[], float] | None = None, limit: int = _DEFAULT_LIMIT
    ) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit: expected a positive int, got {limit!r}")
        self._clock = clock
        self._limit = limit
        self._lock = threading.Lock()
        self._runs: collections.OrderedDict[str, ToolRecorder] = collections.OrderedDict()

    def __call__(self, run_id: str, records: Sequence[dict[str, JsonValue]], /) -> ToolRecorder:
        """A new recorder for ``run_id`` holding ``records``; it replaces the run's previous one."""
        recorder = ToolRecorder.from_records(list(records), clock=self._clock)
        assert isinstance(recorder, ToolRecorder)  # from_records builds its own class
        with self._lock:
            self._runs[run_id] = recorder
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._limit:
                self._runs.popitem(last=False)
        return recorder

    def recorder(self, run_id: str) -> ToolRecorder:
        """The recorder of ``run_id`` in this process; ``LookupError`` if it has none."""
        with self._lock:
            found = self._runs.get(run_id)
        if found is None:
            raise LookupError(f"no tool recorder for run {run_id!r} (was tools= given?)")
        return found

    def forget(self, run_id: str) -> None:
        """Drop the recorder of a finished run (a no-op when there is none)."""
        with self._lock:
            self._runs.pop(run_id, None)

    def gatekeeper(self) -> Callable[[str, ExecutorEvidence], dict[str, object]]:
        """A reference gatekeeper reading, at call time, the ledger of the run it is called for."""

        def check(run_id: str, executor_output: ExecutorEvidence, /) -> dict[str, object]:
            return self.recorder(run_id).gatekeeper()(run_id, executor_output)

        return check
