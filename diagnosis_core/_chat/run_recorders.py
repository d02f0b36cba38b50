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

from .._kernel.wire.json import JsonValue
from .payloads import ExecutorEvidence
from .reference_gatekeeper import ToolRecorder

__all__ = ["RunRecorders", "RunRecordersGatekeeper", "ToolsFactory", "refuse_foreign_gatekeeper"]

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

    def gatekeeper(self) -> RunRecordersGatekeeper:
        """A reference gatekeeper reading, at call time, the ledger of the run it is called for."""
        return RunRecordersGatekeeper(self)


class RunRecordersGatekeeper:
    """The gatekeeper of :meth:`RunRecorders.gatekeeper`: the ledger of the run it is called for.

    ``recorders`` is the factory it reads, so a driver or adapter given
    ``tools=`` can tell a gatekeeper built over other recorders
    (:func:`refuse_foreign_gatekeeper`).
    """

    __slots__ = ("recorders",)

    def __init__(self, recorders: RunRecorders) -> None:
        self.recorders = recorders

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> dict[str, object]:
        return self.recorders.recorder(run_id).gatekeeper()(run_id, executor_output)

    def __repr__(self) -> str:
        return f"RunRecordersGatekeeper({_named(self.recorders)})"


def _named(value: object) -> str:
    """A recorder or factory as a refusal names it: its class and identity."""
    return f"<{type(value).__name__} at {id(value):#x}>"


def refuse_foreign_gatekeeper(gatekeeper: object, tools: object, where: str) -> None:
    """``TypeError`` when ``gatekeeper`` reads another tool recorder than ``tools`` (spec §13).

    A reference gatekeeper built over one recorder (``recorder.gatekeeper()``)
    or one :class:`RunRecorders` (``recorders.gatekeeper()``) checks citations
    against *that* ledger; given with ``tools=`` naming another, it would
    read a ledger the executor's tools never wrote and reject every run. The
    package can tell only the gatekeepers it builds (a sync one, or one
    wrapped by ``AsyncEffects.from_sync``); any other is accepted as given.
    ``tools`` is the run's :class:`ToolRecorder` (the drivers) or the
    :data:`ToolsFactory` (the engine adapters).
    """
    from .reference_gatekeeper import RecorderGatekeeper

    inner = getattr(gatekeeper, "__wrapped__", gatekeeper)
    if isinstance(inner, RecorderGatekeeper):
        source: object = inner.recorder
        built = "recorder.gatekeeper()"
        if isinstance(tools, RunRecorders):
            raise TypeError(
                f"{where}: the gatekeeper reads one ToolRecorder ({_named(source)}) but tools= "
                f"is {_named(tools)}, which gives each run its own; use tools.gatekeeper()"
            )
    elif isinstance(inner, RunRecordersGatekeeper):
        source, built = inner.recorders, "recorders.gatekeeper()"
        if not isinstance(tools, RunRecorders):
            return  # a host may route one run's recorder through its RunRecorders
    else:
        return
    if source is not tools:
        raise TypeError(
            f"{where}: the gatekeeper was built over {_named(source)} ({built}) but tools= is "
            f"{_named(tools)}; it would check citations against a ledger the executor's "
            "tools never write. Build it with tools.gatekeeper()"
        )
