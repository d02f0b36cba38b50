"""Opening a store by URL (spec §16).

``run_diagnosis(request, effects, store=store)`` (and ``arun_diagnosis``,
``run_aiops``) runs through the kernel's store port
(``diagnosis_core._kernel.journal.store``): it claims the request's run, loads
what the store holds of it and runs with the driver's own ``journal=``
(resume, §12) and ``sink=`` arguments: a run the store does not hold starts
fresh, a run it holds resumes by the §12 rule, a complete run folds to its
result without performing an effect. The claim is released when the run
returns or raises. This module only turns a URL into one of the stores.
"""

from __future__ import annotations

from .._kernel.journal.store import StoreError
from ._base import PayloadCodec, StoreBase

__all__ = ["open_store"]



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
