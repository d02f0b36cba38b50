"""One live owner per LangGraph thread: a lock the holder's death releases.

The run and resume helpers of the LangGraph adapters hold, while they drive
a thread, an exclusive lock keyed by the thread id, chosen by the saver:

* PostgreSQL savers: a *session* advisory lock (``pg_try_advisory_lock`` on
  64 bits of the SHA-256 of ``langgraph-thread:<thread id>``) taken on a
  dedicated connection opened with the saver's connection parameters. The
  server drops it when that connection ends — a worker killed by SIGKILL has
  its socket closed by the kernel, so the thread is free again as soon as the
  server sees the connection close (at once on a local network; after the
  TCP keepalive timeout when the worker's host itself vanished).
* SQLite savers on a file: an ``flock`` on ``<database>.threads/<hash>.lock``.
  The kernel drops it when the holding process dies, SIGKILL included.
* Any other saver (in memory, no saver): a lock in this process only — such
  a saver cannot be shared by two processes anyway.

A second live driver of the same thread is refused at once with
:class:`ThreadBusyError` naming the thread and the owner (``pid N on host``),
or, when the host passes a wait, polls until the lock is free or the wait
ends. A lock is held by an open file description or connection, never by a
lease, so a slow effect never loses its lock and a dead owner never keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from ..stores import RunClaimedError, StoreError

__all__ = ["ThreadBusyError", "aowner", "owner"]

_POLL_SECONDS = 0.05


class ThreadBusyError(RunClaimedError):
    """Another live worker drives this LangGraph thread: this run or resume is refused.

    The message names the thread and its owner (``pid N on host``). The owner
    keeps the thread until it returns or dies; pass the run helper a wait
    (``wait_for_owner=``) to wait for it instead (spec §16: one writer per run).
    """


def _me() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _thread_hash(thread_id: str) -> bytes:
    return hashlib.sha256(
        b"langgraph-thread:" + thread_id.encode("utf-8", "surrogatepass")
    ).digest()


def _busy(thread_id: str, holder: str | None) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is driven by another live worker "
        f"({holder or 'owner unknown'}); refused, not driven twice"
    )


# --- in this process -------------------------------------------------------------------

_LOCAL: dict[tuple[int, str], str] = {}
_LOCAL_LOCK = threading.Lock()


class _Local:
    """Threads of one saver object in this process (a saver no other process can open)."""

    def __init__(self, saver: object) -> None:
        self.saver_id = id(saver)

    def try_acquire(self, thread_id: str) -> tuple[Any, str | None]:
        with _LOCAL_LOCK:
            holder = _LOCAL.get((self.saver_id, thread_id))
            if holder is not None:
                return None, holder
            _LOCAL[(self.saver_id, thread_id)] = f"{_me()}, thread {threading.get_ident()}"
            return (self.saver_id, thread_id), None

    def release(self, handle: Any) -> None:
        with _LOCAL_LOCK:
            _LOCAL.pop(handle, None)


# --- SQLite: flock next to the database -------------------------------------------------


class _FileLock:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def try_acquire(self, thread_id: str) -> tuple[Any, str | None]:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"{_thread_hash(thread_id).hex()[:40]}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise StoreError(f"thread {thread_id!r}: cannot open its lock file: {error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 256, 0).decode("utf-8", "replace").strip() or None
            finally:
                os.close(fd)
            return None, holder
        except OSError as error:  # pragma: no cover - a file system without flock
            os.close(fd)
            raise StoreError(f"thread {thread_id!r}: cannot lock: {error}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, _me().encode(), 0)
        return fd, None

    def release(self, handle: Any) -> None:
        try:
            os.ftruncate(handle, 0)
            fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            os.close(handle)


def _sqlite_file(saver: Any) -> Path | None:
    conn = getattr(saver, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return None
    with saver.lock:
        rows = conn.execute("PRAGMA database_list").fetchall()
    for row in rows:
        if row[1] == "main" and row[2]:
            return Path(row[2])
    return None


# --- PostgreSQL: a session advisory lock on a dedicated connection ------------------------


class _AdvisoryLock:
    def __init__(self, conninfo: str, kwargs: dict[str, Any]) -> None:
        self.conninfo = conninfo
        self.kwargs = kwargs

    def try_acquire(self, thread_id: str) -> tuple[Any, str | None]:
        import psycopg

        key = int.from_bytes(_thread_hash(thread_id)[:8], "big", signed=True)
        try:
            conn = psycopg.connect(self.conninfo, **{**self.kwargs, "autocommit": True})
        except psycopg.Error as error:
            raise StoreError(
                f"thread {thread_id!r}: cannot open the lock connection: {error}"
            ) from None
        try:
            conn.execute("SELECT set_config('application_name', %s, false)", (_me()[:63],))
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row is not None and row[0]:
                return conn, None
            unsigned = key & 0xFFFFFFFFFFFFFFFF
            found = conn.execute(
                "SELECT a.application_name, a.pid FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                "AND l.classid::bigint = %s AND l.objid::bigint = %s",
                (unsigned >> 32, unsigned & 0xFFFFFFFF),
            ).fetchone()
        except psycopg.Error as error:
            conn.close()
            raise StoreError(f"thread {thread_id!r}: cannot lock: {error}") from None
        conn.close()
        holder = f"{found[0]} (server pid {found[1]})" if found else None
        return None, holder

    def release(self, handle: Any) -> None:
        handle.close()  # ending the session releases its advisory locks


def _postgres_params(saver: Any) -> tuple[str, dict[str, Any]] | None:
    conn = getattr(saver, "conn", None)
    if conn is None:
        return None
    if hasattr(conn, "conninfo") and hasattr(conn, "kwargs"):  # a psycopg pool
        kwargs = {k: v for k, v in (conn.kwargs or {}).items() if k not in ("row_factory",)}
        return str(conn.conninfo), kwargs
    info = getattr(conn, "info", None)
    if info is None:
        return None
    kwargs = {}
    if info.password:
        kwargs["password"] = info.password
    return str(info.dsn), kwargs


# --- choosing and holding -------------------------------------------------------------------


def _lock_for(saver: object) -> Any:
    module = type(saver).__module__
    if module.startswith("langgraph.checkpoint.postgres"):
        params = _postgres_params(saver)
        if params is not None:
            return _AdvisoryLock(*params)
    if module.startswith("langgraph.checkpoint.sqlite"):
        path = _sqlite_file(saver)
        if path is not None:
            return _FileLock(path.with_name(path.name + ".threads"))
    return _Local(saver)


def _acquire(lock: Any, thread_id: str, wait: float | None) -> Any:
    deadline = None if wait is None else time.monotonic() + max(wait, 0.0)
    while True:
        handle, holder = lock.try_acquire(thread_id)
        if handle is not None:
            return handle
        if deadline is None or time.monotonic() >= deadline:
            raise _busy(thread_id, holder)
        time.sleep(_POLL_SECONDS)


@contextlib.contextmanager
def owner(saver: object, thread_id: str, wait: float | None) -> Iterator[None]:
    """Hold ``thread_id`` exclusively while the block runs (:class:`ThreadBusyError` if held).

    Without a saver (None) nothing is shared and nothing is held.
    """
    if saver is None:
        yield
        return
    lock = _lock_for(saver)
    handle = _acquire(lock, thread_id, wait)
    try:
        yield
    finally:
        lock.release(handle)


@contextlib.asynccontextmanager
async def aowner(saver: object, thread_id: str, wait: float | None) -> AsyncIterator[None]:
    """:func:`owner` for the asyncio helpers (the lock is taken off the event loop)."""
    if saver is None:
        yield
        return
    lock = _lock_for(saver)
    handle = await asyncio.to_thread(_acquire, lock, thread_id, wait)
    try:
        yield
    finally:
        await asyncio.to_thread(lock.release, handle)
