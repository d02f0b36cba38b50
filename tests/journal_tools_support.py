"""A run whose executor calls tools, a sink that can die, and the journal it leaves (spec §12.3).

Shared by ``test_journal_tools.py`` and the SIGKILL child ``journal_kill_child.py``.
The executor calls :data:`CALLS` in order through the run's
:class:`ToolRecorder` — one call twice with the same input, one call whose
tool raises (the executor catches it) — then returns the scenario's executor
reply. Each tool appends one line to a side file (append + fsync) when it
runs, so a test counts what really ran, across processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import attrs

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DOC: dict[str, Any] = json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
CALLS: tuple[tuple[str, str], ...] = (
    ("query_logs", "pay-svc"),
    ("query_metrics", "pay-svc"),
    ("query_logs", "pay-svc"),  # identical to the first: its second occurrence
    ("query_traces", "pay-svc"),  # raises ValueError; the executor goes on
    ("query_logs", "db"),
)


class Crash(BaseException):
    """Raised by :class:`FileSink` to stop the run as a crash would (not an ``Exception``)."""


def side_lines(side: Path) -> list[str]:
    if not side.exists():
        return []
    return side.read_text(encoding="utf-8").splitlines()


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def effects_with_tools(side: Path, tools: dct.ToolRecorder) -> dc.Effects:
    """The scenario's effects, whose executor first makes :data:`CALLS` through ``tools``."""
    scripted = dc.scenario_effects(dc.load_scenario(DOC))

    def tool(name: str) -> Any:
        def run(service: str) -> dict[str, Any]:
            _append(side, f"{name}({service})")
            if name == "query_traces":
                raise ValueError(f"no traces for {service}")
            return {"service": service, "tool": name, "lines": [f"{name} {service} ok"]}

        return tools.wrap(name, run)

    wrapped = {name: tool(name) for name in {name for name, _ in CALLS}}

    def executor(input: str, config: dc.RunConfig, /) -> str:
        for name, service in CALLS:
            with contextlib.suppress(ValueError):
                wrapped[name](service)
        reply: str = scripted.executor(input, config)
        return reply

    return attrs.evolve(scripted, executor=executor)


class FileSink:
    """Appends every write as a JSON line (fsync); dies at the chosen executor write.

    ``die_at=k`` stops the process (SIGKILL, or :class:`Crash` when
    ``signal_kill`` is false) right after the executor's started entry that
    lists ``k`` finished tool calls is durable.
    """

    def __init__(self, path: Path, *, die_at: int | None = None, signal_kill: bool = True) -> None:
        self.path = path
        self.die_at = die_at
        self.signal_kill = signal_kill

    def write(self, record: dcj.JournalEntry | dcj.JournalEnd, /) -> None:
        if isinstance(record, dcj.JournalEnd):
            line = {"end": {"entries": record.entries, "mac": record.mac}}
        else:
            entries: Any = dcj.journal_to_wire(dcj.Journal(request_of(), (record,)))["entries"]
            line = {"entry": entries[0]}
        _append(self.path, json.dumps(line, sort_keys=True))
        if (
            self.die_at is not None
            and isinstance(record, dcj.JournalEntry)
            and record.call is dcj.JournalCall.EXECUTOR
            and record.state is dcj.EntryState.STARTED
            and len(record.tool_invocations or ()) == self.die_at
        ):
            if self.signal_kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise Crash(f"died after {self.die_at} tool calls")


def request_of() -> dc.DiagnosisRequest:
    return dc.scenario_request(dc.load_scenario(DOC))


def read_journal(path: Path) -> dcj.Journal:
    """The journal the sink's file holds: the last write per ``seq``, and the end marker."""
    entries: dict[int, Any] = {}
    end = None
    for text in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        if "end" in line:
            end = {k: v for k, v in line["end"].items() if v is not None}
        else:
            entries[line["entry"]["seq"]] = line["entry"]
    document: dict[str, Any] = {
        "format": dcj.JOURNAL_FORMAT,
        "request": dcj.journal_to_wire(dcj.Journal(request_of()))["request"],
        "entries": [entries[seq] for seq in sorted(entries)],
    }
    if end is not None:
        document["end"] = end
    return dcj.Journal.load(document)
