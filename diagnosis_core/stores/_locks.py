"""Per-run writer locks for the file-backed stores: ``flock`` on one small file per run.

The lock lives as long as the open file description: the kernel drops it when
the holder closes it *or dies* (SIGKILL included), so a dead writer never
blocks its run and there is no lease to expire while a slow effect runs.
``LOCK_NB`` makes the race between resumers exact: one ``flock`` succeeds,
the others are refused at once. Two claims in one process open two
descriptions and conflict too. Lock files are named by the SHA-256 of the run
id (any run id is a safe file name) and are left in place: removing a lock
file another process has open would let two holders lock two different files.
The files must be on a local file system (``flock`` over NFS is not reliable).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

from ._base import RunClaimedError, StoreError

__all__ = ["RunLocks"]


class RunLocks:
    """The lock files of one store, in the directory ``<store path>.locks``."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def acquire(self, run_id: str) -> int:
        """Lock ``run_id``'s file; returns the descriptor to hand back to :meth:`release`."""
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the lock directory {self._directory}: {error}"
            ) from None
        name = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
            fd = os.open(self._directory / f"{name}.lock", flags, 0o600)
        except OSError as error:
            raise StoreError(f"run {run_id!r}: cannot open its lock file: {error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunClaimedError(
                f"run {run_id!r}: another live writer holds it (refused, not waited for)"
            ) from None
        except OSError as error:  # pragma: no cover - a file system without flock
            os.close(fd)
            raise StoreError(f"run {run_id!r}: cannot lock: {error}") from None
        return fd

    @staticmethod
    def release(handle: object) -> None:
        """Unlock and close (closing alone would release it as well)."""
        if isinstance(handle, int):
            try:
                fcntl.flock(handle, fcntl.LOCK_UN)
            finally:
                os.close(handle)
