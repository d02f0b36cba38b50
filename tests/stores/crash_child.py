"""The crash harness's doomed writer: runs a flow on a SQLite store, in a process of its own.

``python crash_child.py DB_PATH FLOW SIDE_LOG`` runs the flow's run
(``crash_support``) from the start — or from wherever the store holds it —
and exits 0. After each store write returns it appends a line to
``SIDE_LOG`` (a file the harness does not kill on), so the harness knows
which writes had returned when the process died. The harness runs it under
``strace``, which kills it with SIGKILL on entry to one chosen write to the
database; nothing here knows which.
"""

from __future__ import annotations

import os
import sys
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
