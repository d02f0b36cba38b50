"""The append-only JSON Lines store: one file for all runs, one record per line (spec §16).

Each line is one JSON object tagged with its run id and ``kind`` (``run``,
``entry`` or ``feedback``; the fields are listed in ``docs/stores.md``). A write
is one ``write`` of one whole line under the store's exclusive append lock,
followed by ``fsync`` before the call returns — so a ``started`` entry is on
disk before its effect runs. A write never reads the file: it costs O(1) in
the journal's length.

**Torn writes.** A process killed (or a machine losing power, or a full disk)
in the middle of a write leaves a partial last line. Every complete line ends
with ``\\n``, so the reader never takes a line without one, and a line that
does not parse as a complete record is skipped: it is the record it failed to
be — a missing entry, or a ``started`` entry still waiting for its completion
— never a fact.

A torn record must also stay torn. The fragment can be a whole record but for
its newline (the write cut just before it); ending it with a bare ``\\n`` would
bring it back to life after the resume had already written that ``seq`` again.
So a writer that finds the file not ending in ``\\n`` (under the file lock, where
no other write is in progress: any such tail is torn) ends the fragment with
``NUL`` ``\\n``. A record's line is ``json.dumps`` output, in which a NUL byte
never appears (JSON escapes every control character), and the reader skips
every line holding one — so a poisoned fragment is never a record, whatever
bytes it holds, and a poison itself cut short is a new unterminated tail that
the next writer poisons in turn. The file stays append-only: no byte once
written is ever changed, so a reader's index of what it read stays valid.

A finished entry is a later line with the same ``seq`` as the ``started`` one;
the reader applies the store's rule (only a ``started`` entry is ever
replaced, entries follow one another) and refuses a run whose lines break it.
While an executor call runs, each tool call that finishes is one ``tools``
line — the calls it adds to the ``started`` entry and the fields it changes
(its ``mac``) — and the finished executor entry is one more, which adds its
``state``, ``outcome`` and any last calls: O(1) per call, where writing the
entry again would make the file grow with the square of the calls (and
write every call twice). A finished entry written whole replaces the
started one and its ``tools`` lines.

Readers keep an index of what they have read and read only what was appended
since, so listing and loading stay cheap for a long-lived store object.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..journal import RunSummary, StoreError
from ._base import TOOLS, EntryRecord, PayloadCodec, RawRun, StoreBase, SummaryRow
from ._ownership import RunLocks

__all__ = ["JsonlStore"]


@attrs.define
class _Run:
    run_id: str
    session_id: str
    format: str
    created_at: float
    payload: str
    entries: list[EntryRecord] = attrs.Factory(list)
    feedback: list[tuple[str, float]] = attrs.Factory(list)
    problem: str | None = None
    digest: Any = attrs.Factory(hashlib.sha256)
    """The digest of the run's ``run``, ``entry`` and ``tools`` lines so far, in file order."""


_POISON = b"\x00\n"
"""What ends a torn fragment: a NUL byte, which no record's line holds, then the newline."""


def _line(record: dict[str, object]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8", "surrogatepass"
    )


class JsonlStore(StoreBase):
    """A journal store in one append-only JSON Lines file (``open_store("runs.jsonl")``).

    Single host: writers may be many processes, on a local file system.
    ``codec`` encrypts every payload (see :class:`PayloadCodec`).
    """

    _tool_records = True

    def __init__(self, path: str | os.PathLike[str], *, codec: PayloadCodec | None = None) -> None:
        super().__init__(codec)
        self.path = Path(path)
        self._locks = RunLocks(self.path)
        try:
            existed = self.path.exists()
            self._fd = os.open(
                self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
            if not existed:
                _fsync_directory(self.path.parent)
        except OSError as error:
            raise StoreError(f"cannot open the store file {self.path}: {error}") from None
        self._mutex = threading.RLock()  # the index and the descriptor, across threads
        self._offset = 0
        self._runs: dict[str, _Run] = {}
        self.summary_path = Path(f"{os.path.realpath(self.path)}.summaries")
        """The summary index beside the resolved store file: one line per ended run."""
        self._index_fd = -1
        self._index_offset = 0
        self._summaries: dict[str, dict[str, Any]] = {}
        self._orphans: dict[str, list[tuple[str, float]]] = {}
        self.torn_lines = 0
        """Lines skipped because they are not complete records (torn writes)."""

    # --- writing --------------------------------------------------------------

    def _write(self, record: dict[str, object]) -> None:
        with self._mutex:
            self._write_locked(record)

    def _write_locked(self, record: dict[str, object], fd: int | None = None) -> None:
        data = _line(record)
        fd = self._fd if fd is None else fd
        try:
            self._locks.lock_appends()
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = _POISON + data  # end a torn fragment so that it is never a record
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                self._locks.unlock_appends()
        except OSError as error:
            raise StoreError(f"cannot write the store file {self.path}: {error}") from None

    def _put_run(
        self, run_id: str, session_id: str, format: str, payload: str, created_at: float
    ) -> None:
        self._write({"kind": "run", "run_id": run_id, "session_id": session_id,
                     "format": format, "created_at": created_at, "payload": payload})

    def _put_entry(
        self, run_id: str, seq: int, state: str, payload: str, duration_ms: float | None,
        token: str, written_at: float, *, replace: bool,
    ) -> None:
        self._write({"kind": "entry", "run_id": run_id, "seq": seq, "state": state,
                     "payload": payload, "duration_ms": duration_ms, "token": token,
                     "written_at": written_at})

    def _put_tools(
        self, run_id: str, seq: int, state: str, payload: str, duration_ms: float | None,
        token: str, written_at: float,
    ) -> None:
        self._write({"kind": TOOLS, "run_id": run_id, "seq": seq, "state": state,
                     "payload": payload, "duration_ms": duration_ms, "token": token,
                     "written_at": written_at})

    def _put_summary(
        self, run_id: str, created_at: float, payload: str, columns: object,
        last_mac: str | None, fingerprint: str | None,
    ) -> None:
        with self._mutex:
            fd = self._summary_fd(create=True)
            assert fd is not None
            self._write_locked({"kind": "summary", "run_id": run_id,
                                "fingerprint": fingerprint, "payload": payload}, fd)

    def _fingerprint(self, run_id: str) -> str | None:
        self._refresh()
        run = self._runs.get(run_id)
        return None if run is None else str(run.digest.hexdigest())

    def _put_feedback(self, run_id: str, payload: str, recorded_at: float) -> None:
        self._refresh()
        if run_id not in self._runs:
            raise StoreError(f"run {run_id!r}: not in the store")
        self._write({"kind": "feedback", "run_id": run_id, "payload": payload,
                     "recorded_at": recorded_at})

    # --- claims ---------------------------------------------------------------

    def _acquire(self, run_id: str) -> object:
        return self._locks.acquire(run_id)

    def _release(self, run_id: str, handle: object) -> None:
        self._locks.release(handle)

    # --- reading --------------------------------------------------------------

    def _refresh(self) -> None:
        """Read the lines appended since the last read into the index."""
        with self._mutex:
            self._refresh_locked()

    def _summary_fd(self, *, create: bool) -> int | None:
        """The summary index file's descriptor (opened, or created ``0600``, on first use)."""
        if self._index_fd >= 0:
            return self._index_fd
        path = self.summary_path
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        try:
            self._index_fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise StoreError(f"cannot open the summary index {path}: {error}") from None
        return self._index_fd

    def _refresh_summaries(self) -> None:
        """Read the summary lines appended to the index file since the last read."""
        fd = self._summary_fd(create=False)
        if fd is None:
            return
        try:
            size = os.fstat(fd).st_size
            if size <= self._index_offset:
                return
            data = os.pread(fd, size - self._index_offset, self._index_offset)
        except OSError as error:
            raise StoreError(f"cannot read the summary index {self.summary_path}: {error}") \
                from None
        end = data.rfind(b"\n")
        if end < 0:
            return
        self._index_offset += end + 1
        for line in data[: end + 1].split(b"\n")[:-1]:
            if not line or b"\x00" in line:
                continue
            try:
                record = json.loads(line.decode("utf-8", "surrogatepass"))
                if record["kind"] == "summary" and isinstance(record["run_id"], str):
                    self._summaries[record["run_id"]] = record
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                continue  # a torn line of the index: as if the summary had not been written

    def _refresh_locked(self) -> None:
        try:
            size = os.fstat(self._fd).st_size
            if size <= self._offset:
                return
            data = os.pread(self._fd, size - self._offset, self._offset)
        except OSError as error:
            raise StoreError(f"cannot read the store file {self.path}: {error}") from None
        end = data.rfind(b"\n")
        if end < 0:
            return  # only a line in progress (or torn): nothing complete yet
        self._offset += end + 1
        for line in data[: end + 1].split(b"\n")[:-1]:
            self._index(line)

    def _index(self, line: bytes) -> None:
        if not line:
            return
        if b"\x00" in line:  # a fragment some writer ended: never a record
            self.torn_lines += 1
            return
        try:
            record = json.loads(line.decode("utf-8", "surrogatepass"))
            kind = record["kind"]
            run_id = record["run_id"]
            if not isinstance(run_id, str):
                raise TypeError
            if kind == "run":
                self._index_run(record)
                self._runs[run_id].digest.update(line + b"\n")
            elif kind in ("entry", TOOLS):
                self._index_entry(record, delta=kind == TOOLS)
                self._runs[run_id].digest.update(line + b"\n")
            elif kind == "feedback":
                payload, at = record["payload"], float(record["recorded_at"])
                if not isinstance(payload, str):
                    raise TypeError
                run = self._runs.get(run_id)
                if run is None:
                    self._orphans.setdefault(run_id, []).append((payload, at))
                else:
                    run.feedback.append((payload, at))
            else:
                raise KeyError(kind)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            self.torn_lines += 1

    def _index_run(self, record: dict[str, object]) -> None:
        run_id, session_id, format = record["run_id"], record["session_id"], record["format"]
        payload = record["payload"]
        created = record["created_at"]
        if not all(isinstance(item, str) for item in (run_id, session_id, format, payload)):
            raise TypeError
        if isinstance(created, bool) or not isinstance(created, int | float):
            raise TypeError
        assert isinstance(run_id, str) and isinstance(session_id, str)
        assert isinstance(format, str) and isinstance(payload, str)
        if run_id in self._runs:
            known = self._runs[run_id]
            known.problem = known.problem or "the run is recorded twice"
            return
        run = _Run(run_id, session_id, format, float(created), payload)
        run.feedback.extend(self._orphans.pop(run_id, []))
        self._runs[run_id] = run

    def _index_entry(self, record: dict[str, object], *, delta: bool) -> None:
        run_id, seq, state = record["run_id"], record["seq"], record["state"]
        payload, duration, at = record["payload"], record["duration_ms"], record["written_at"]
        if type(seq) is not int or state not in (
            ("started", "finished") if delta else ("started", "finished", "end")
        ):
            raise TypeError
        if not isinstance(payload, str) or not isinstance(run_id, str):
            raise TypeError
        if duration is not None and (isinstance(duration, bool)
                                     or not isinstance(duration, int | float)):
            raise TypeError
        if isinstance(at, bool) or not isinstance(at, int | float):
            raise TypeError
        assert isinstance(state, str)
        run = self._runs.get(run_id)
        if run is None:
            raise TypeError  # an entry before its run record: not a record of this store
        entry = EntryRecord(seq, state, payload,
                            None if duration is None else float(duration), float(at), delta)
        entries = run.entries
        last = entries[-1] if entries else None
        if delta:
            if last is not None and seq == last.seq and last.state == "started":
                entries.append(entry)  # follows the started entry and its tool records
            elif run.problem is None:
                run.problem = f"tool calls for entry {seq}, which is not the started last entry"
        elif last is not None and seq == last.seq and last.state == "started":
            while entries and entries[-1].seq == seq:  # the started entry and its tool records
                entries.pop()
            entries.append(entry)
        elif seq == (0 if last is None else last.seq) + 1:
            entries.append(entry)
        elif run.problem is None:
            run.problem = f"entry {seq} does not follow entry {0 if last is None else last.seq}"

    def _get_run(self, run_id: str) -> RawRun | None:
        self._refresh()
        run = self._runs.get(run_id)
        if run is None:
            return None
        if run.problem is not None:
            raise StoreError(f"run {run_id!r}: the store file is inconsistent: {run.problem}")
        return RawRun(run.run_id, run.session_id, run.format, run.created_at, run.payload,
                      tuple(run.entries), tuple(run.feedback))

    def _last_entry(self, run_id: str) -> tuple[int, str] | None:
        self._refresh()
        run = self._runs.get(run_id)
        if run is None or not run.entries:
            return None
        if run.problem is not None:
            raise StoreError(f"run {run_id!r}: the store file is inconsistent: {run.problem}")
        last = run.entries[-1]
        return last.seq, last.state

    def _list_runs(self, session_id: str | None, since: float | None) -> Sequence[RunSummary]:
        self._refresh()
        return [
            RunSummary(
                run.run_id, run.session_id, run.format, run.created_at,
                sum(entry.state != "end" and not entry.delta for entry in run.entries),
            )
            for run in self._runs.values()
            if (session_id is None or run.session_id == session_id)
            and (since is None or run.created_at >= since)
        ]

    def _list_summaries(self, session_id: str | None, since: float | None) -> list[SummaryRow]:
        with self._mutex:
            self._refresh_locked()
            self._refresh_summaries()
            rows = []
            for run in self._runs.values():
                if (session_id is None or run.session_id == session_id) and (
                    since is None or run.created_at >= since
                ):
                    record = self._summaries.get(run.run_id)
                    fingerprint = run.digest.hexdigest()
                    usable = (record is not None and run.problem is None
                              and record.get("fingerprint") == fingerprint
                              and isinstance(record.get("payload"), str))
                    rows.append(SummaryRow(
                        run.run_id, run.session_id, run.format, run.created_at,
                        record["payload"] if usable and record is not None else None,
                        fingerprint if usable else None,
                    ))
            return rows

    def _list_feedback(
        self, session_id: str | None, since: float | None
    ) -> dict[str, list[tuple[str, float]]]:
        self._refresh()
        return {
            run.run_id: list(run.feedback) for run in self._runs.values()
            if run.feedback and (session_id is None or run.session_id == session_id)
            and (since is None or run.created_at >= since)
        }

    def close(self) -> None:
        """Release every claim and close the file."""
        for token, (_, handle) in list(self._held.items()):
            self._held.pop(token, None)
            self._locks.release(handle)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._index_fd >= 0:
            os.close(self._index_fd)
            self._index_fd = -1


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - a directory that cannot be opened
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
