"""The journal-store port the drivers write through (spec §16), with no store behind it.

A driver given ``store=`` needs only this: the :class:`JournalStore`
protocol (claim a run, begin it, append entries, load it back), the values a
store hands over, and :func:`on_store`, which claims the request's run,
loads what the store holds of it and calls the driver again with the
``journal=`` (resume, §12) and ``sink=`` arguments built from it. The
concrete stores (JSON Lines, SQLite, PostgreSQL) live in
:mod:`diagnosis_core.stores` and implement the protocol; the workflows'
drivers import only this module, so neither workflow depends on a store and
no store module is loaded until a host opens one.

The driver passes its clock (the pure core reads none): each effect's
``duration_ms`` is the time from its ``started`` write to its ``finished``
one, stored beside the entry, never inside it, so the fold cannot read it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs

from ..errors import DiagnosisError, JournalError
from .codec import EntryState, JournalBase, JournalEnd, JournalEntryBase

__all__ = [
    "Feedback",
    "JournalStore",
    "MissingKeyError",
    "RunClaim",
    "RunClaimedError",
    "RunSummary",
    "StoreError",
    "StoreSink",
    "StoredRun",
    "on_store",
    "require_store",
]

S = TypeVar("S")


class StoreError(DiagnosisError, RuntimeError):
    """A journal store cannot do what was asked: unreachable, corrupt, misused (spec §16).

    The message names the run (and the entry) concerned.
    """


class RunClaimedError(StoreError):
    """Another live writer holds the run: its append or resume is refused (spec §16)."""


class MissingKeyError(StoreError):
    """The stored run is signed (its entries carry MACs) and the writer gave no key (spec §16).

    Resuming it keyless would append unsigned entries and an unsigned end
    marker (recording feedback keyless, an unsigned feedback), and the run
    would fail verification under its key from then on; the driver (and
    ``record_feedback``) refuses before any effect or write. The message
    names the run; ``run_id`` is the run, ``doing`` what was refused.
    """

    def __init__(self, run_id: str, doing: str = "resume it") -> None:
        super().__init__(
            f"run {run_id!r}: the stored journal is signed (its entries carry MACs); "
            f"give its key (key=) to {doing}"
        )
        self.run_id = run_id
        self.doing = doing

    def __reduce__(self) -> tuple[type[MissingKeyError], tuple[str, str]]:
        return type(self), (self.run_id, self.doing)


@attrs.frozen
class Feedback:
    """A person's judgement of a finished run: a fact after its end (spec §16).

    ``rating`` is an integer from 1 to 5, ``comment`` optional text;
    ``after_seq`` is the number of entries of the journal it follows, and
    ``mac`` its HMAC link when the journal is keyed (``_session.py``).
    ``recorded_at`` is the store's clock (seconds since the epoch).
    """

    rating: int
    comment: str | None
    after_seq: int
    mac: str | None = None
    recorded_at: float = 0.0


@attrs.frozen
class RunSummary:
    """One run as a listing shows it: ids, format, when first stored, entries so far."""

    run_id: str
    session_id: str
    format: str
    created_at: float
    entry_count: int


@attrs.frozen
class StoredRun:
    """A run as its store holds it: the journal, the measured durations, the feedback.

    ``durations`` has one item per journal entry (milliseconds, or None when
    the writer measured nothing); ``written_at`` the store time of each
    entry's last write.
    """

    run_id: str
    session_id: str
    format: str
    created_at: float
    journal: Any
    durations: tuple[float | None, ...]
    written_at: tuple[float, ...]
    feedback: tuple[Feedback, ...]


@attrs.define(eq=False)
class RunClaim:
    """The right to write one run, held until released (a context manager).

    ``token`` is recorded with every entry written under it. Use ``with
    store.claim(run_id) as claim:``; leaving the block releases it.
    """

    run_id: str
    token: str
    _store: JournalStore = attrs.field(repr=False)

    def __enter__(self) -> RunClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self._store.release(self)


@runtime_checkable
class JournalStore(Protocol):
    """Where the journals of many runs live (spec §16); see :func:`open_store`.

    ``claim`` a run to write it (refused with :class:`RunClaimedError` while
    another live writer holds it), ``begin`` it with its empty journal (the
    request), ``append`` each entry as the run goes, ``load`` a run's
    journal back, list ``runs`` by session or time, and ``add_feedback``
    after the run's end.
    """

    def claim(self, run_id: str) -> RunClaim: ...

    def release(self, claim: RunClaim) -> None: ...

    def begin(self, claim: RunClaim, journal: JournalBase[Any, Any]) -> None: ...

    def append(
        self,
        claim: RunClaim,
        entry: JournalEntryBase[Any] | JournalEnd,
        *,
        duration_ms: float | None = None,
    ) -> None: ...

    def load(self, run_id: str) -> StoredRun | None: ...

    def runs(
        self, *, session_id: str | None = None, since: float | None = None
    ) -> tuple[RunSummary, ...]: ...

    def add_feedback(self, run_id: str, feedback: Feedback) -> None: ...

    def close(self) -> None: ...


class StoreSink:
    """A journal sink writing into a store under a claim, timing each effect with ``clock``.

    ``clock`` is the host's (seconds, monotonic); without one no entry gets a
    ``duration_ms``. The drivers pass ``time.monotonic``.
    """

    def __init__(
        self, store: JournalStore, claim: RunClaim, clock: Callable[[], float] | None = None
    ) -> None:
        self._store = store
        self._claim = claim
        self._clock = clock
        self._started: tuple[int, float] | None = None

    def write(self, entry: JournalEntryBase[Any] | JournalEnd, /) -> None:
        """Append ``entry``; a finished entry gets the time since its started one was written.

        A started entry written again (an executor's tool calls so far, spec
        §12.3) keeps the time of its first write; the end marker (spec §12.2)
        is stored as is.
        """
        if isinstance(entry, JournalEnd):
            self._store.append(self._claim, entry)
            return
        if entry.state is EntryState.STARTED:
            self._store.append(self._claim, entry)
            if self._started is None or self._started[0] != entry.seq:  # else: progress
                self._started = None if self._clock is None else (entry.seq, self._clock())
            return
        duration = None
        if self._clock is not None and self._started is not None and self._started[0] == entry.seq:
            duration = max(0.0, (self._clock() - self._started[1]) * 1000.0)
        self._started = None
        self._store.append(self._claim, entry, duration_ms=duration)


def require_store(store: object) -> None:
    """A :class:`StoreError` unless ``store`` is a :class:`JournalStore`."""
    if not isinstance(store, JournalStore):
        raise StoreError(f"store: expected a JournalStore, got {type(store).__name__}")


@contextlib.contextmanager
def on_store(
    store: JournalStore,
    request: Any,
    *,
    journal_type: type[JournalBase[Any, Any]],
    clock: Callable[[], float],
) -> Iterator[tuple[Any, StoreSink]]:
    """Claim the run for the body of a ``with``: ``(journal_or_None, sink)``; released after.

    What a driver's ``store=`` does (an iterator's when its iteration
    starts; released when the iteration ends or is closed).
    """
    require_store(store)
    claim = store.claim(request.run.run_id)
    try:
        stored = store.load(claim.run_id)
        if stored is None:
            store.begin(claim, journal_type(request))
        elif not isinstance(stored.journal, journal_type):
            raise JournalError(f"run {claim.run_id!r}: the store holds a {stored.format} journal")
        yield None if stored is None else stored.journal, StoreSink(store, claim, clock)
    finally:
        store.release(claim)
