"""Who owns a run: one holder per claim, released when the holder dies (spec §16).

Every exclusive writer of the package takes its claim here: the journal stores'
run claims (JSON Lines, SQLite, PostgreSQL), the JSON Lines store's append lock and
the LangGraph helpers' thread owner. The rules are the same for all of them:

* **A claim belongs to one holder object** (a store's claim, a graph run), never to
  a process or a connection: two threads of one process never both hold a name,
  even when they share one store or one database session. A registry of this
  process, keyed by what is locked and guarded by one mutex, decides between
  threads; the operating system or the database server decides between processes.
* **Its identity is what is locked, not how it was named.** The claims on a file
  (a store, a LangGraph SQLite database) are byte-range locks in one lock file,
  ``<resolved file>.locks/claims.lock``, found from the file's ``realpath`` and
  registered under the lock file's device and inode; a file with a second name (a
  hard link) is refused. So a symlink, a relative path, ``a/../b``, any spelling
  meets the same lock. A database claim is a session advisory lock on 64 bits of the
  SHA-256 of its name: the server scopes it to the database, whatever the
  connection string said.
* **It dies with its holder.** A record lock is dropped by the kernel when its
  process dies (SIGKILL included); an advisory lock by the server when the session
  ends. There is no lease to expire while a slow effect runs, and nothing to clean up.
* **Lock files are bounded**: one per file, whatever the number of runs. A claim
  locks one byte of it at an offset taken from the name's hash (a lock may lie past
  the end, so the file stays empty); byte 0 is the JSON Lines append lock.
* **Portable**: ``fcntl`` is imported when a lock is first taken, and where it does
  not exist the same byte-range locks are taken with ``os.lockf`` or, on Windows,
  ``msvcrt.locking``.

Record locks belong to a process, and closing *any* descriptor of a file drops all
of the process's locks on it; so this module keeps the only descriptor of each lock
file in the process (closed once nothing of it is held), and nothing else may open
it. A forked child holds none of its parent's locks: its registry starts empty.
The files must be on a local file system, as SQLite's own locking requires.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import functools
import hashlib
import importlib
import itertools
import os
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

import attrs

from ..journal import RunClaimedError, StoreError

__all__ = [
    "DEAD_OWNER_GRACE",
    "LOCK_DIRECTORY_SUFFIX",
    "LOCK_FILE_NAME",
    "RUN_NAMESPACE",
    "Claims",
    "ConnectionClaims",
    "FileClaims",
    "LocalClaims",
    "RunLocks",
    "SessionClaims",
    "advisory_key",
    "claim_refused",
    "exited_here",
    "holder_name",
    "lock_primitive",
]

RUN_NAMESPACE = b"diagnosis-run\x00"
"""What a journal store's run ids are hashed under (advisory keys, lock offsets)."""
LOCK_DIRECTORY_SUFFIX = ".locks"
LOCK_FILE_NAME = "claims.lock"

_APPEND_OFFSET = 0
_VANISHED_RETRIES = 3
"""How often a claimant asks again when the lock was refused but no holder is there."""
_POLL_SECONDS = 0.001
_OPEN_FLAGS = (
    os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0)
    | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)


def holder_name() -> str:
    """This process as a claim's holder is named to others: ``pid N on host``."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


DEAD_OWNER_GRACE = 10.0
"""Seconds a claimant waits for the server to end the session of a holder that has exited.

A PostgreSQL lock held by a connection goes when the server ends that connection's
session: a process killed on a live host leaves its socket closed by the kernel, and the
server's backend ends the session once it reads that close — milliseconds, longer on a
loaded server. A claimant that finds the lock held by ``pid N on <this host>`` while no
process N lives here waits this long for the server before it refuses."""


def exited_here(holder: str) -> bool:
    """Whether ``holder`` (``pid N on host``) names a process of this host that has exited.

    False whenever it cannot be told (another host, a truncated name, not POSIX, a pid
    that lives, even as a zombie): the claim is then refused at once, as before.
    """
    prefix, _, host = holder.partition(" on ")
    pid = prefix.removeprefix("pid ")
    if not pid.isdigit() or host != socket.gethostname() or os.name != "posix":
        return False
    try:  # this process, too, answers: alive
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive under another user, or not ours to ask
        return False
    return False


def _this_holder() -> str:
    return f"{holder_name()}, thread {threading.current_thread().name}"


def advisory_key(namespace: bytes, name: str) -> int:
    """The signed 64-bit key of ``name``: the first 8 bytes of SHA-256(namespace + name)."""
    digest = hashlib.sha256(namespace + name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# --- the byte-range lock of this platform ------------------------------------------------


class _RangeLocks:
    """Exclusive locks on one byte of an open file, held by this process."""

    name = "none"
    slot_bits = 40
    """Claims lock byte ``1 + (key mod 2**slot_bits)``; byte 0 is the append lock."""
    positional = True
    """True when a lock call does not move the file position (no mutex needed around it)."""

    def try_lock(self, fd: int, offset: int) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def wait_lock(self, fd: int, offset: int) -> bool:
        """Block until locked; False when this platform can only poll :meth:`try_lock`."""
        return False

    def unlock(self, fd: int, offset: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def holder_pid(self, fd: int, offset: int) -> int | None:
        """The process holding the byte, where the platform tells."""
        return None


def _refused(error: OSError) -> bool:
    return error.errno in (errno.EACCES, errno.EAGAIN, errno.EDEADLK)


class _FcntlLocks(_RangeLocks):
    """POSIX record locks through ``fcntl.lockf`` (offsets given, no seek)."""

    name = "fcntl"

    def __init__(self, fcntl: Any) -> None:
        self._fcntl = fcntl

    def try_lock(self, fd: int, offset: int) -> bool:
        try:
            self._fcntl.lockf(fd, self._fcntl.LOCK_EX | self._fcntl.LOCK_NB, 1, offset, 0)
        except OSError as error:
            if error.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise
        return True

    def wait_lock(self, fd: int, offset: int) -> bool:
        while True:
            try:
                self._fcntl.lockf(fd, self._fcntl.LOCK_EX, 1, offset, 0)
                return True
            except OSError as error:
                # the kernel's deadlock detection counts processes, not threads: a false
                # alarm when two threaded processes wait on each other's other files
                if error.errno != errno.EDEADLK:
                    raise
                time.sleep(_POLL_SECONDS)

    def unlock(self, fd: int, offset: int) -> None:
        self._fcntl.lockf(fd, self._fcntl.LOCK_UN, 1, offset, 0)

    def holder_pid(self, fd: int, offset: int) -> int | None:
        if not sys.platform.startswith("linux") or struct.calcsize("P") != 8:
            return None  # struct flock's layout is known here only
        layout = "hhqqi4x"
        query = struct.pack(layout, self._fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        try:
            kind, _, _, _, pid = struct.unpack(
                layout, self._fcntl.fcntl(fd, self._fcntl.F_GETLK, query)
            )
        except (OSError, struct.error):  # pragma: no cover - defensive
            return None
        return pid if kind != self._fcntl.F_UNLCK and pid > 0 else None


class _SeekingLocks(_RangeLocks):
    """Seek, then lock: ``os.lockf`` and ``msvcrt.locking`` differ only in :meth:`lock_here`."""

    positional = False

    def lock_here(self, fd: int, exclusive: bool) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def try_lock(self, fd: int, offset: int) -> bool:
        os.lseek(fd, offset, os.SEEK_SET)
        try:
            self.lock_here(fd, True)
        except OSError as error:
            if _refused(error):
                return False
            raise
        return True

    def unlock(self, fd: int, offset: int) -> None:
        os.lseek(fd, offset, os.SEEK_SET)
        self.lock_here(fd, False)


class _LockfLocks(_SeekingLocks):
    """POSIX record locks through ``os.lockf`` where ``fcntl`` does not exist."""

    name = "os.lockf"

    def lock_here(self, fd: int, exclusive: bool) -> None:
        os.lockf(fd, os.F_TLOCK if exclusive else os.F_ULOCK, 1)


class _MsvcrtLocks(_SeekingLocks):  # pragma: no cover - Windows
    """Windows byte-range locks through ``msvcrt.locking``."""

    name = "msvcrt"
    slot_bits = 31

    def __init__(self, msvcrt: Any) -> None:
        self._msvcrt = msvcrt

    def lock_here(self, fd: int, exclusive: bool) -> None:
        mode = self._msvcrt.LK_NBLCK if exclusive else self._msvcrt.LK_UNLCK
        self._msvcrt.locking(fd, mode, 1)


@functools.cache
def _primitive() -> _RangeLocks:
    try:
        return _FcntlLocks(importlib.import_module("fcntl"))
    except ImportError:
        pass
    if hasattr(os, "lockf"):
        return _LockfLocks()
    try:  # pragma: no cover - Windows
        return _MsvcrtLocks(importlib.import_module("msvcrt"))
    except ImportError:  # pragma: no cover - no known primitive
        raise StoreError(
            "no byte-range file locking on this platform (fcntl, os.lockf or msvcrt)"
        ) from None


def lock_primitive() -> str:
    """Which byte-range lock this process takes: ``fcntl``, ``os.lockf`` or ``msvcrt``."""
    return _primitive().name


# --- the registry of this process ---------------------------------------------------------


class _LockFile:
    """The one descriptor of a lock file in this process, and who uses it."""

    __slots__ = ("appending", "fd", "identity", "names", "spare", "users")

    def __init__(self, fd: int, identity: tuple[int, int]) -> None:
        self.fd = fd
        self.identity = identity
        self.names: set[str] = set()  # the paths it was found under
        self.spare: list[int] = []  # descriptors opened by a lost race: closed with it
        self.users = 0  # held claims and appenders; the descriptors close at 0
        self.appending = threading.Lock()


class _Registry:
    def __init__(self, generation: int = 0) -> None:
        self.mutex = threading.Lock()
        self.held: dict[Hashable, str] = {}  # what is held in this process -> by whom
        self.files: dict[tuple[int, int], _LockFile] = {}  # by device and inode
        self.names: dict[str, _LockFile] = {}  # by the path it was found under
        self.generation = generation  # a forked child's handles of its parent are stale


_REGISTRY = _Registry()


def _before_fork() -> None:
    _REGISTRY.mutex.acquire()


def _after_fork_in_parent() -> None:
    _REGISTRY.mutex.release()


def _after_fork_in_child() -> None:
    global _REGISTRY
    for entry in _REGISTRY.files.values():  # the parent's locks stay the parent's
        for fd in (entry.fd, *entry.spare):
            with contextlib.suppress(OSError):
                os.close(fd)
    _REGISTRY = _Registry(_REGISTRY.generation + 1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def _unused(registry: _Registry, entry: _LockFile) -> None:
    """Close a lock file nothing holds (under the registry's mutex)."""
    if entry.users == 0 and registry.files.get(entry.identity) is entry:
        del registry.files[entry.identity]
        for name in entry.names:
            registry.names.pop(name, None)
        for fd in (entry.fd, *entry.spare):
            with contextlib.suppress(OSError):
                os.close(fd)


def _reserve(key: Hashable) -> tuple[str | None, int]:
    """``key``'s holder in this process (None: this thread holds it now), and the generation.

    Session and local claims both ask this process's registry first.
    """
    registry = _REGISTRY
    with registry.mutex:
        holder = registry.held.get(key)
        if holder is None:
            registry.held[key] = _this_holder()
        return holder, registry.generation


def _forget(key: Hashable, generation: int) -> None:
    """Drop ``key`` from the registry, unless a fork made it another (idempotent)."""
    registry = _REGISTRY
    with registry.mutex:
        if generation == registry.generation:
            registry.held.pop(key, None)


# --- the public face: one kind of claim, three places to hold it -------------------------


class Claims(abc.ABC):
    """Exclusive names held while their holder lives: the claims the stores take (spec §16).

    The journal stores claim each run they write through these; a host holds its
    own names (a graph thread, a queue's job) under the same rules, in one of
    three places, chosen by who else must be kept out:

    * :meth:`in_file` — every process of this host that opens the same file
      (any spelling of its path): a byte-range lock in ``<file>.locks/claims.lock``;
    * :meth:`on_postgres` — every process that reaches the same PostgreSQL
      database: a session advisory lock, on a connection of the claim's own;
    * :meth:`in_process` — the threads of this process that use the same object.

    A name belongs to one holder at a time — two threads of one process are
    kept apart as two processes are — and is released when the holder releases
    it or dies (SIGKILL included): a lock, never a lease, so a slow holder never
    loses a name and a dead one never keeps it. A ``namespace`` keeps kinds of
    names apart (the run ``r`` of a store and the thread ``r`` of a graph).

    :meth:`try_acquire` never waits; a host that wants to wait polls it.
    """

    @classmethod
    def in_file(cls, path: str | os.PathLike[str], namespace: bytes) -> Claims:
        """Claims shared by every process that opens ``path`` (a local file system)."""
        return FileClaims(path, namespace)

    @classmethod
    def on_postgres(cls, conninfo: str, namespace: bytes, **connect: Any) -> Claims:
        """Claims shared by every process that reaches this database (extra ``postgres``).

        Each held name keeps a connection of its own (``psycopg.connect(conninfo,
        **connect)``), named after its holder (``pid N on host``) so that a refused
        claimant can say who holds the name; the server releases the name when that
        connection ends, the holder's death included.
        """
        return ConnectionClaims(conninfo, connect, namespace)

    @classmethod
    def in_process(cls, owner: object, namespace: bytes) -> Claims:
        """Claims on the names of ``owner`` (an in-memory object) among this process's threads."""
        return LocalClaims(owner, namespace)

    @abc.abstractmethod
    def try_acquire(self, name: str) -> tuple[object | None, str | None]:
        """Hold ``name`` now: ``(handle, None)``, or ``(None, its holder when known)``.

        The holder is named ``pid N on host`` (and more where known). Never waits.

        Raises:
            StoreError: the place cannot be reached (the lock file cannot be
                opened, the database refuses the connection).
        """

    @abc.abstractmethod
    def release(self, held: object) -> None:
        """Give up the name ``held`` (a handle of :meth:`try_acquire`); idempotent."""


# --- claims on a file ---------------------------------------------------------------------


@attrs.define(eq=False)
class FileHeld:
    """A claim held on a file: hand it back to :meth:`FileClaims.release`."""

    entry: _LockFile
    offset: int
    key: Hashable
    generation: int
    released: bool = False


class FileClaims(Claims):
    """Claims on the names (runs, threads) of one file: byte-range locks in its lock file.

    ``path`` is the store or database file; it is resolved (``realpath``) once, here,
    so a later ``chdir`` changes nothing.
    """

    def __init__(self, path: str | os.PathLike[str], namespace: bytes) -> None:
        self.path = os.path.realpath(os.fspath(path))
        self.namespace = namespace
        self.directory = self.path + LOCK_DIRECTORY_SUFFIX
        self.lock_path = os.path.join(self.directory, LOCK_FILE_NAME)
        self._local = threading.local()

    def check_names(self) -> None:
        """Refuse a file with more than one name: each name would have its own lock file."""
        try:
            info = os.stat(self.path)
        except OSError:
            return  # not created yet: its one name is the resolved one
        if info.st_nlink > 1:
            raise StoreError(
                f"{self.path}: the file has {info.st_nlink} names (hard links); open it by "
                "one name only, so that one lock file guards it"
            )

    def _open(self, registry: _Registry) -> _LockFile:
        """This file's lock file, opened once per process (under the registry's mutex).

        Closing a second descriptor of an open lock file would drop every lock of the
        process on it, so a lock file already open under another path (a renamed
        store, a linked lock directory) is found by device and inode, never reopened.
        """
        entry = registry.names.get(self.lock_path)
        if entry is not None:
            return entry
        self.check_names()
        try:
            os.mkdir(self.directory, 0o700)
        except FileExistsError:
            pass
        except OSError as error:
            raise StoreError(
                f"cannot create the lock directory {self.directory}: {error}"
            ) from None
        with contextlib.suppress(OSError):
            known = os.stat(self.lock_path)
            entry = registry.files.get((known.st_dev, known.st_ino))
            if entry is not None:
                entry.names.add(self.lock_path)
                registry.names[self.lock_path] = entry
                return entry
        try:
            fd = os.open(self.lock_path, _OPEN_FLAGS, 0o600)
        except OSError as error:
            raise StoreError(f"cannot open the lock file {self.lock_path}: {error}") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # pragma: no cover - O_NOFOLLOW, O_RDWR
            os.close(fd)
            raise StoreError(f"the lock file {self.lock_path} is not a regular file")
        identity = (info.st_dev, info.st_ino)
        entry = registry.files.get(identity)
        if entry is None:
            entry = registry.files[identity] = _LockFile(fd, identity)
        else:  # pragma: no cover - renamed between the stat and the open
            entry.spare.append(fd)
        entry.names.add(self.lock_path)
        registry.names[self.lock_path] = entry
        return entry

    def try_acquire(self, name: str) -> tuple[FileHeld | None, str | None]:
        """Hold ``name`` now, or (None, who holds it when known); never waits."""
        primitive = _primitive()
        offset = 1 + (advisory_key(self.namespace, name) & ((1 << primitive.slot_bits) - 1))
        registry = _REGISTRY
        with registry.mutex:
            entry = self._open(registry)
            key = ("file", entry.identity, offset)
            holder = registry.held.get(key)
            if holder is not None:
                _unused(registry, entry)
                return None, holder
            try:
                locked = primitive.try_lock(entry.fd, offset)
            except OSError as error:
                _unused(registry, entry)
                raise StoreError(f"{name!r}: cannot lock {self.lock_path}: {error}") from None
            if not locked:
                pid = primitive.holder_pid(entry.fd, offset)
                _unused(registry, entry)
                return None, None if pid is None else f"pid {pid} on {socket.gethostname()}"
            registry.held[key] = _this_holder()
            entry.users += 1
            return FileHeld(entry, offset, key, registry.generation), None

    def release(self, held: object) -> None:
        """Give a claim up (idempotent; a forked child's copy of its parent's is ignored)."""
        if not isinstance(held, FileHeld):
            return
        registry = _REGISTRY
        with registry.mutex:
            if held.released or held.generation != registry.generation:
                held.released = True
                return
            held.released = True
            with contextlib.suppress(OSError):
                _primitive().unlock(held.entry.fd, held.offset)
            registry.held.pop(held.key, None)
            held.entry.users -= 1
            _unused(registry, held.entry)

    # the JSON Lines store's append lock: byte 0, waited for, one thread of the process at once

    def lock_appends(self) -> None:
        """Wait for the file's append lock (every writer of every process takes it to append)."""
        primitive = _primitive()
        registry = _REGISTRY
        with registry.mutex:
            entry = self._open(registry)
            entry.users += 1
            generation = registry.generation
        entry.appending.acquire()
        try:
            if not primitive.wait_lock(entry.fd, _APPEND_OFFSET):
                while True:
                    with registry.mutex:
                        if primitive.try_lock(entry.fd, _APPEND_OFFSET):
                            break
                    time.sleep(_POLL_SECONDS)
        except BaseException as error:
            entry.appending.release()
            with registry.mutex:
                entry.users -= 1
                _unused(registry, entry)
            if isinstance(error, OSError):
                raise StoreError(f"cannot lock {self.lock_path}: {error}") from None
            raise
        self._local.appending = (entry, generation)

    def unlock_appends(self) -> None:
        """Give the append lock back (after the record is written and synced)."""
        entry, generation = self._local.appending
        del self._local.appending
        registry = _REGISTRY
        with registry.mutex:
            if generation == registry.generation:
                with contextlib.suppress(OSError):
                    _primitive().unlock(entry.fd, _APPEND_OFFSET)
                entry.users -= 1
                _unused(registry, entry)
        entry.appending.release()


def claim_refused(run_id: str, holder: str | None) -> RunClaimedError:
    """The error of a refused run claim, naming the holder when known."""
    who = f"{holder}; " if holder else ""
    return RunClaimedError(
        f"run {run_id!r}: another live writer holds it ({who}refused, not waited for)"
    )


class RunLocks(FileClaims):
    """The run claims of a file store (JSON Lines, SQLite): ``<store>.locks/claims.lock``."""

    def __init__(self, store_path: str | os.PathLike[str]) -> None:
        super().__init__(store_path, RUN_NAMESPACE)

    def acquire(self, run_id: str) -> FileHeld:
        """Hold ``run_id``; :class:`RunClaimedError` when another holder has it."""
        held, holder = self.try_acquire(run_id)
        if held is None:
            raise claim_refused(run_id, holder)
        return held


# --- claims in a database session, or in this process -------------------------------------


@attrs.define(eq=False)
class SessionHeld:
    """A claim held by a shared database session: hand it back to :meth:`SessionClaims.release`."""

    key: Hashable
    advisory: int
    generation: int
    released: bool = False


_DOMAINS = itertools.count()


class SessionClaims(Claims):
    """Claims held by one PostgreSQL session that threads share (a store's connection).

    A session advisory lock is re-entrant within its session, so the server alone
    would grant a run to every thread of the store: the registry refuses the second
    thread first. ``execute(sql, parameters)`` runs a statement on the session.
    """

    def __init__(
        self, execute: Callable[[str, tuple[object, ...]], Any], namespace: bytes
    ) -> None:
        self._execute = execute
        self._namespace = namespace
        self._domain = ("session", next(_DOMAINS))

    def try_acquire(self, name: str) -> tuple[SessionHeld | None, str | None]:
        """Hold ``name`` now, or (None, who holds it when this process does); never waits."""
        advisory = advisory_key(self._namespace, name)
        key = (self._domain, advisory)
        holder, generation = _reserve(key)  # reserved while the server is asked
        if holder is not None:
            return None, holder
        try:
            row = self._execute("SELECT pg_try_advisory_lock(%s)", (advisory,)).fetchone()
        except BaseException:
            _forget(key, generation)
            raise
        if not row or row[0] is not True:
            _forget(key, generation)
            return None, None
        return SessionHeld(key, advisory, generation), None

    def release(self, held: object, *, connected: bool = True) -> None:
        """Unlock on the server (when still connected) and forget the claim (idempotent)."""
        if not isinstance(held, SessionHeld) or held.released:
            return
        held.released = True
        if held.generation != _REGISTRY.generation:
            return  # a forked child's copy: the session is its parent's
        if connected:
            # a broken connection has lost the lock with it: nothing left to release
            with contextlib.suppress(StoreError):
                self._execute("SELECT pg_advisory_unlock(%s)", (held.advisory,))
        _forget(held.key, held.generation)

    def forget_all(self) -> None:
        """Forget every claim of the session (it is closing: the server drops them all)."""
        registry = _REGISTRY
        with registry.mutex:
            for key in [key for key in registry.held
                        if isinstance(key, tuple) and key[:1] == (self._domain,)]:
                del registry.held[key]


class ConnectionClaims(Claims):
    """Claims each held by a PostgreSQL connection of its own (the LangGraph thread owner).

    The connection is named after its holder (``application_name``), so a refused
    claimant can say who holds the name.
    """

    def __init__(self, conninfo: str, kwargs: dict[str, Any], namespace: bytes) -> None:
        self._conninfo = conninfo
        self._kwargs = kwargs
        self._namespace = namespace

    def try_acquire(self, name: str) -> tuple[Any, str | None]:
        """Hold ``name`` on a new connection, or (None, its holder when known)."""
        import psycopg

        key = advisory_key(self._namespace, name)
        try:
            conn = psycopg.connect(self._conninfo, **{**self._kwargs, "autocommit": True})
        except psycopg.Error as error:
            raise StoreError(f"{name!r}: cannot open the lock connection: {error}") from None
        try:
            conn.execute("SELECT set_config('application_name', %s, false)",
                         (holder_name()[:63],))
            holder = self._holder_while_held(conn, key)
        except psycopg.Error as error:
            conn.close()
            raise StoreError(f"{name!r}: cannot lock: {error}") from None
        if holder is None:
            return conn, None
        conn.close()
        return None, holder or None

    @staticmethod
    def _holder_while_held(conn: Any, key: int) -> str | None:
        """Lock ``key`` on ``conn``: None once held, else its holder ("" when unknown).

        A holder that has exited on this host (:func:`exited_here`) is waited for, up to
        :data:`DEAD_OWNER_GRACE` seconds, while the server ends its session.
        """
        unsigned = key & 0xFFFFFFFFFFFFFFFF
        deadline: float | None = None
        vanished = 0
        while True:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row is not None and row[0]:
                return None
            found = conn.execute(
                "SELECT a.application_name, a.pid FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND l.classid::bigint = %s AND l.objid::bigint = %s",
                (unsigned >> 32, unsigned & 0xFFFFFFFF),
            ).fetchone()
            if found is None:
                # The holder let go between the two statements: ask for the lock again
                # (a few times; a holder that cannot be seen at all stays unknown).
                vanished += 1
                if vanished > _VANISHED_RETRIES:
                    return ""
                continue
            holder = f"{found[0]} (server pid {found[1]})"
            if not exited_here(str(found[0])):
                return holder
            now = time.monotonic()
            deadline = now + DEAD_OWNER_GRACE if deadline is None else deadline
            if now >= deadline:
                return f"{found[0]} (server pid {found[1]}: the process has exited, the " \
                       f"server has not ended its session after {DEAD_OWNER_GRACE:g} s)"
            time.sleep(0.02)

    def release(self, held: Any) -> None:
        """End the claim's session (the server releases its advisory lock with it)."""
        held.close()


@attrs.define(eq=False)
class LocalHeld:
    key: Hashable
    generation: int


class LocalClaims(Claims):
    """Claims on the names of an object no other process can reach (an in-memory saver)."""

    def __init__(self, owner: object, namespace: bytes) -> None:
        self._domain = ("local", id(owner), namespace)

    def try_acquire(self, name: str) -> tuple[LocalHeld | None, str | None]:
        """Hold ``name`` now, or (None, its holder in this process)."""
        key = (self._domain, name)
        holder, generation = _reserve(key)
        if holder is not None:
            return None, holder
        return LocalHeld(key, generation), None

    def release(self, held: Any) -> None:
        """Give the claim up (idempotent)."""
        _forget(held.key, held.generation)
