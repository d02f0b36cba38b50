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

import os
import urllib.parse

from ..journal import StoreError
from ._base import PayloadCodec, StoreBase

__all__ = ["open_store"]

_SQLITE_MODES = ("rwc", "rw", "ro")


def open_store(
    url: str, *, codec: PayloadCodec | None = None, create: bool = True
) -> StoreBase:
    """The store a URL names: ``sqlite:///PATH``, ``postgresql://...``, or a ``.jsonl`` path.

    ``sqlite:///runs.db`` is a relative path, ``sqlite:////var/runs.db`` an
    absolute one; the path is taken as written up to a ``?``, and the query means
    what it means to SQLite: ``mode=ro`` opens the database read-only, ``mode=rw``
    only an existing one, ``mode=rwc`` (the default) creates it. Any other query,
    ``mode=memory`` and ``:memory:`` (not durable) are refused. With
    ``create=False`` (what listing and reporting use) a file store that does not
    exist is a :class:`StoreError`, never a new empty store. Anything else is a
    :class:`StoreError` saying what is accepted.
    """
    if not isinstance(url, str) or not url:
        raise StoreError(f"store URL: expected text, got {url!r}")
    if url.startswith("sqlite:///"):
        path, _, query = url[len("sqlite:///"):].partition("?")
        if not path:
            raise StoreError("store URL: sqlite:/// needs a path (sqlite:///runs.db)")
        if path == ":memory:":
            raise StoreError(
                "store URL: sqlite:///:memory: is not durable; a store must outlive its "
                "process (give a file path)"
            )
        mode = _sqlite_mode(query)
        if not create and mode == "rwc":
            mode = "rw"
        from ._sqlite import SqliteStore

        return SqliteStore(path, codec=codec, mode=mode)
    if url.startswith(("postgresql://", "postgres://")):
        from ._postgres import PostgresStore

        return PostgresStore(url, codec=codec)
    if "://" not in url and url.endswith(".jsonl"):
        if not create and not os.path.isfile(url):
            raise StoreError(
                f"cannot open the store file {url}: no such file (reading a store never "
                "creates one)"
            )
        from ._jsonl import JsonlStore

        return JsonlStore(url, codec=codec)
    raise StoreError(
        f"store URL {url!r}: expected sqlite:///PATH, postgresql://..., or a path ending in .jsonl"
    )


def _sqlite_mode(query: str) -> str:
    """SQLite's ``mode`` from a URL's query; every other parameter is refused."""
    if not query:
        return "rwc"
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise StoreError(f"store URL: the query {query!r} is not name=value pairs") from None
    mode = None
    for name, value in pairs:
        if name != "mode":
            raise StoreError(
                f"store URL: the SQLite parameter {name!r} is not supported "
                "(only mode=rwc, mode=rw or mode=ro)"
            )
        if mode is not None:
            raise StoreError("store URL: mode is given twice")
        if value == "memory":
            raise StoreError(
                "store URL: mode=memory is not durable; a store must outlive its process"
            )
        if value not in _SQLITE_MODES:
            raise StoreError(
                f"store URL: mode={value!r} is not a SQLite mode (rwc, rw or ro)"
            )
        mode = value
    return mode or "rwc"
