"""Helpers of the ownership tests: other spellings of a store, racing claimants, a forked pair."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from diagnosis_core.journal import RunClaimedError
from diagnosis_core.stores._base import StoreBase


def file_of(url: str) -> Path | None:
    """The file a store URL names (None for PostgreSQL)."""
    if url.startswith("postgresql://"):
        return None
    return Path(url.removeprefix("sqlite:///").partition("?")[0])


def respelled(url: str, path: Path) -> str:
    """``url`` naming ``path`` instead (same kind, same query)."""
    if url.startswith("sqlite:///"):
        _, mark, query = url.partition("?")
        return f"sqlite:///{path}{mark}{query}"
    return str(path)


def symlinked(url: str, tmp_path: Path) -> str:
    """The same store through a symlink in another directory (PostgreSQL: the same URL)."""
    real = file_of(url)
    if real is None:
        return url
    link = tmp_path / "spelled" / f"link-{real.name}"
    if not link.is_symlink():
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(real)
    return respelled(url, link)


def thread_pair(stores: tuple[StoreBase, StoreBase], run_id: str) -> tuple[list[str], int]:
    """Two threads released at once claim ``run_id``; each holder performs one effect.

    The holder keeps the run until both have tried. Returns each claimant's
    outcome (``held``, ``refused`` or the unexpected error) and the effects performed.
    """
    start, tried = threading.Barrier(2), threading.Barrier(2)
    outcomes = ["", ""]
    effects: list[int] = []

    def claimant(index: int) -> None:
        store = stores[index]
        claim = None
        try:
            start.wait(timeout=60)
            try:
                claim = store.claim(run_id)
            except RunClaimedError:
                outcomes[index] = "refused"
            else:
                outcomes[index] = "held"
                effects.append(index)
        except BaseException as error:  # reported, not lost in the thread
            outcomes[index] = repr(error)
        finally:
            try:
                tried.wait(timeout=60)
            finally:
                if claim is not None:
                    store.release(claim)

    threads = [threading.Thread(target=claimant, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes, len(effects)


def process_pair(
    opens: tuple[Callable[[], StoreBase], Callable[[], StoreBase]], run_id: str, side: Path
) -> list[bytes]:
    """Two forked processes released at once claim ``run_id``; the holder logs one effect.

    Child ``i`` opens its own store with ``opens[i]`` before the release; the
    holder keeps the run until the parent has both outcomes (``b"1"`` held,
    ``b"0"`` refused, ``b"!"`` error), then each child's exit status follows.
    """
    gate_read, gate_write = os.pipe()
    done_read, done_write = os.pipe()
    children: list[tuple[int, int]] = []
    for index in range(2):
        result_read, result_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 70
            try:
                os.close(gate_write)
                os.close(done_write)
                os.close(result_read)
                store = opens[index]()
                os.read(gate_read, 1)
                try:
                    store.claim(run_id)
                    held = True
                except RunClaimedError:
                    held = False
                if held:
                    fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                    os.write(fd, f"{run_id} {os.getpid()}\n".encode())
                    os.close(fd)
                os.write(result_write, b"1" if held else b"0")
                os.read(done_read, 1)  # hold until the parent has both outcomes
                code = 0
            except BaseException:
                os.write(result_write, b"!")
            finally:
                os._exit(code)
        os.close(result_write)
        children.append((pid, result_read))
    os.close(gate_read)
    os.close(done_read)
    os.close(gate_write)  # both wake at once
    outcomes = [os.read(result, 1) for _, result in children]
    os.close(done_write)
    for pid, result in children:
        os.close(result)
        _, status = os.waitpid(pid, 0)
        outcomes.append(b"exit %d" % os.waitstatus_to_exitcode(status))
    return outcomes
