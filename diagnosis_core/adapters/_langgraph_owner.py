"""One live owner per LangGraph thread: a claim the holder's death releases.

The run and resume helpers of the LangGraph adapters hold, while they drive a
thread, an exclusive claim on the thread id (:class:`diagnosis_core.stores.Claims`,
under the rules of every claim of the package), held where the saver keeps its
threads:

* PostgreSQL savers: a *session* advisory lock (``pg_try_advisory_lock`` on
  64 bits of the SHA-256 of ``langgraph-thread:<thread id>``) taken on a
  dedicated connection opened with the saver's connection parameters. The
  server drops it when that connection ends — a worker killed by SIGKILL has
  its socket closed by the kernel, so the thread is free again as soon as the
  server sees the connection close (at once on a local network; after the
  TCP keepalive timeout when the worker's host itself vanished).
* SQLite savers on a file: a byte-range lock in the database's one lock file,
  ``<resolved database>.locks/claims.lock`` (shared with a journal store on the
  same file, under another namespace). The kernel drops it when the holding
  process dies, SIGKILL included; any spelling of the path meets the same lock.
* Any other saver (in memory, no saver): a claim in this process only — such
  a saver cannot be shared by two processes anyway.

Two threads of one process are told apart as two processes are: a claim
belongs to the graph run that took it. A second live driver of the same thread
is refused at once with :class:`ThreadBusyError` naming the thread and the owner
(``pid N on host``), or, when the host passes a wait, polls until the claim is
free or the wait ends. A claim is held by a lock or a connection, never by a
lease, so a slow effect never loses it and a dead owner never keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from ..journal import RunClaimedError
from ..stores import Claims

__all__ = ["ThreadBusyError", "aowner", "owner"]

_POLL_SECONDS = 0.05
_THREAD_NAMESPACE = b"langgraph-thread:"
"""What the thread ids are hashed under (spec §16), apart from a store's run ids."""


class ThreadBusyError(RunClaimedError):
    """Another live worker drives this LangGraph thread: this run or resume is refused.

    The message names the thread and its owner (``pid N on host``). The owner
    keeps the thread until it returns or dies; pass the run helper a wait
    (``wait_for_owner=``) to wait for it instead (spec §16: one writer per run).
    """


def _busy(thread_id: str, holder: str | None) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is driven by another live worker "
        f"({holder or 'owner unknown'}); refused, not driven twice"
    )


# --- which claims a saver takes -----------------------------------------------------------


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


def _lock_for(saver: object) -> Claims:
    module = type(saver).__module__
    if module.startswith("langgraph.checkpoint.postgres"):
        params = _postgres_params(saver)
        if params is not None:
            conninfo, connect = params
            return Claims.on_postgres(conninfo, _THREAD_NAMESPACE, **connect)
    if module.startswith("langgraph.checkpoint.sqlite"):
        path = _sqlite_file(saver)
        if path is not None:
            return Claims.in_file(path, _THREAD_NAMESPACE)
    return Claims.in_process(saver, _THREAD_NAMESPACE)


def _acquire(lock: Claims, thread_id: str, wait: float | None) -> object:
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
