"""Running on a store: open one by URL, and the thin layer the drivers call (spec §16).

``run_diagnosis(request, effects, store=store)`` (and ``arun_diagnosis``,
``run_aiops``) claims the request's run, loads what the store holds of it
and runs with the driver's own ``journal=`` (resume, §12) and ``sink=``
arguments built here: a run the store does not hold starts fresh, a run it
holds resumes by the §12 rule, a complete run folds to its result without
performing an effect. The claim is released when the run returns or raises.
The sink measures each effect with the driver's clock (``time.monotonic``,
from the ``started`` write to the ``finished`` one) and stores it as the
entry's ``duration_ms``; the pure core never sees it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .._errors import JournalError
from .._journal_wire import EntryState, JournalBase, JournalEntryBase
from ._base import JournalStore, PayloadCodec, RunClaim, StoreBase, StoreError

__all__ = ["StoreSink", "arun_on_store", "open_store", "run_on_store"]

S = TypeVar("S")


def open_store(url: str, *, codec: PayloadCodec | None = None) -> StoreBase:
    """The store a URL names: ``sqlite:///PATH``, ``postgresql://...``, or a ``.jsonl`` path.

    ``sqlite:///runs.db`` is a relative path, ``sqlite:////var/runs.db`` an
    absolute one. Anything else is a :class:`StoreError` saying what is accepted.
    """
    if not isinstance(url, str) or not url:
        raise StoreError(f"store URL: expected text, got {url!r}")
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not path:
            raise StoreError("store URL: sqlite:/// needs a path (sqlite:///runs.db)")
        from ._sqlite import SqliteStore

        return SqliteStore(path, codec=codec)
    if url.startswith(("postgresql://", "postgres://")):
        from ._postgres import PostgresStore

        return PostgresStore(url, codec=codec)
    if "://" not in url and url.endswith(".jsonl"):
        from ._jsonl import JsonlStore

        return JsonlStore(url, codec=codec)
    raise StoreError(
        f"store URL {url!r}: expected sqlite:///PATH, postgresql://..., or a path ending in .jsonl"
    )


class StoreSink:
    """A journal sink writing into a store under a claim, timing each effect."""

    def __init__(
        self, store: JournalStore, claim: RunClaim, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._store = store
        self._claim = claim
        self._clock = clock
        self._started: tuple[int, float] | None = None

    def write(self, entry: JournalEntryBase[Any], /) -> None:
        """Append ``entry``; a finished entry gets the time since its started one was written."""
        if entry.state is EntryState.STARTED:
            self._store.append(self._claim, entry)
            self._started = (entry.seq, self._clock())
            return
        duration = None
        if self._started is not None and self._started[0] == entry.seq:
            duration = max(0.0, (self._clock() - self._started[1]) * 1000.0)
        self._started = None
        self._store.append(self._claim, entry, duration_ms=duration)


def _refuse(given: dict[str, object]) -> None:
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"{name}: not with store= (the store holds the run's journal)")


def _open(
    store: JournalStore, request: Any, journal_type: type[JournalBase[Any, Any]]
) -> tuple[RunClaim, Any]:
    if not isinstance(store, JournalStore):
        raise StoreError(f"store: expected a JournalStore, got {type(store).__name__}")
    claim = store.claim(request.run.run_id)
    try:
        stored = store.load(claim.run_id)
        if stored is None:
            store.begin(claim, journal_type(request))
            return claim, None
        if not isinstance(stored.journal, journal_type):
            raise JournalError(f"run {claim.run_id!r}: the store holds a {stored.format} journal")
        return claim, stored.journal
    except BaseException:
        store.release(claim)
        raise


def run_on_store(
    store: JournalStore,
    request: Any,
    run: Callable[[Any, StoreSink], S],
    *,
    journal_type: type[JournalBase[Any, Any]],
    given: dict[str, object],
) -> S:
    """Claim the run, call ``run(journal_or_None, sink)``, release; what a driver's ``store=`` does.

    ``given`` are the driver options that conflict with a store (``journal``,
    ``sink``, ``state``): any that is set is a ``ValueError``.
    """
    _refuse(given)
    claim, journal = _open(store, request, journal_type)
    try:
        return run(journal, StoreSink(store, claim))
    finally:
        store.release(claim)


async def arun_on_store(
    store: JournalStore,
    request: Any,
    run: Callable[[Any, StoreSink], Awaitable[S]],
    *,
    journal_type: type[JournalBase[Any, Any]],
    given: dict[str, object],
) -> S:
    """:func:`run_on_store` for the asyncio driver (store calls block briefly)."""
    _refuse(given)
    claim, journal = _open(store, request, journal_type)
    try:
        return await run(journal, StoreSink(store, claim))
    finally:
        store.release(claim)
