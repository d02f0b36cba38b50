"""The crash harness's doomed writer: runs a flow on a SQLite store, in a process of its own.

``python crash_child.py DB_PATH FLOW SIDE_LOG`` runs the flow's run
(``crash_support``) from the start — or from wherever the store holds it —
and exits 0. After each store write returns it appends a line to
``SIDE_LOG`` (a file the harness does not kill on), so the harness knows
which writes had returned when the process died. The harness runs it under
``strace``, which kills it with SIGKILL on entry to one chosen write to the
database; nothing here knows which.

``python crash_child.py --serve`` is the same writer as a fork server: it imports the
package and records the flows' references once, then, for each job line
(``{"db": ..., "flow": ..., "side": ...}``) on its standard input, forks a writer and
answers ``{"pid": PID}``; the writer waits until a tracer has attached to it (the
harness's ``strace -p PID``), runs the flow as above and exits; the server answers its
exit code (``{"code": N}``, negative: killed by that signal). Starting Python and
importing the package cost most of a writer's CPU time; a fork costs a millisecond, and
every writer is still a process of its own, killed with SIGKILL.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crash_support import effects_after, recorder_of, reference, run_flow

from diagnosis_core.stores._sqlite import SqliteStore


def _logging(store: SqliteStore, side: str) -> None:
    """Append ``returned <what>`` to ``side`` after each of the store's writes returns."""
    fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def wrap(name: str) -> None:
        write = getattr(store, name)

        def logged(*args: Any, **kwargs: Any) -> None:
            write(*args, **kwargs)
            os.write(fd, f"returned {name}\n".encode())

        setattr(store, name, logged)

    for name in ("_put_run", "_put_entry", "_put_feedback"):
        wrap(name)


def main(path: str, flow: str, side: str) -> None:
    ref = reference(flow)
    store = SqliteStore(path)
    _logging(store, side)
    stored = store.load(ref.run_id)
    journal = stored.journal if stored is not None else None
    recorder = recorder_of(flow, journal)
    entries = journal.entries if journal is not None else ()
    run_flow(flow, ref.request, effects_after(flow, ref.run_id, entries, [], recorder),
             store=store, tools=recorder)
    store.close()


_PR_SET_PTRACER = 0x59616D61
_PR_SET_PTRACER_ANY = ctypes.c_ulong(-1)
_ATTACH_WAIT_S = 60.0


def _traced() -> bool:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("TracerPid:"):
                return int(line.split()[1]) != 0
    return False  # pragma: no cover - every Linux kernel reports it


def _writer(job: dict[str, str]) -> int:
    """A forked writer: once traced, the flow on ``job``'s database; its exit code."""
    # Where Yama restricts ptrace to ancestors, let the harness's strace (not one) attach.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PTRACER, _PR_SET_PTRACER_ANY, 0, 0, 0)
    deadline = time.monotonic() + _ATTACH_WAIT_S
    while not _traced():
        if time.monotonic() > deadline:
            return 3  # no tracer came: the harness reports it
        time.sleep(0.002)
    # strace stops the writer right after attaching and from then on sees every write;
    # a short sleep leaves it that instant (the harness checks the writes it saw anyway).
    time.sleep(0.02)
    main(job["db"], job["flow"], job["side"])
    return 0


def serve() -> None:
    """Fork one writer per job line until standard input closes (module docstring)."""
    for flow in ("chat", "aiops"):
        reference(flow)  # the per-process caches, inherited by every writer
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the writer: never returns into the server's loop
            code = 1
            try:
                code = _writer(job)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3])
