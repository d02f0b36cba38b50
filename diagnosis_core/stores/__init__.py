"""Journal stores: durable runs without an engine, a session's story, a fleet report (spec §16).

A run's journal (spec §12) is its only durable record; a store keeps the
journals of many runs, one entry written at a time (O(1) per write):

* :class:`JsonlStore` — one append-only JSON Lines file, ``fsync`` per entry,
  torn last lines detected and skipped;
* :class:`SqliteStore` — stdlib ``sqlite3`` in WAL mode, the embedded default;
* :class:`PostgresStore` — ``psycopg`` (extra ``postgres``), for several
  workers on one database.

:func:`open_store` takes a URL (``sqlite:///runs.db``, ``postgresql://...``,
``runs.jsonl``). Each implements the store port of :mod:`diagnosis_core.journal`
(the ``JournalStore`` protocol, the values it exchanges, ``StoreError`` and its
kinds), which is published there, with the journal, not here. Writers are exclusive
per run (``JournalStore.claim``, ``RunClaimedError``), under the rules of
:class:`Claims`, which a host may use to hold names of its own; a :class:`PayloadCodec` such as
:class:`AesGcmCodec` (extra ``crypto``) encrypts every stored fact.

``run_diagnosis(request, effects, store=store)`` records into a store and
resumes what it holds; :func:`record_feedback` adds a user's rating after a
run's end; :func:`session_report` tells a session's whole story from the
journals; :func:`fleet_report` sums the runs up for the people who operate
them. Both reports are frozen values (:class:`SessionReport`, each run a
:class:`RunStory`; :class:`FleetReport`) serialized by the package's one
converter (``to_wire`` / ``to_json``; wire forms in ``docs/stores.md``).
An ended run's store keeps a derived summary of it that the reports read
instead of folding its journal;
:func:`verify_summaries` folds every journal and lists the summaries that
disagree. :func:`write_report_pages` writes the reports as linked,
self-contained HTML pages (the fleet, each session, each run, with every
failure reason).
``import diagnosis_core`` does not load this package.
"""

from __future__ import annotations

from ._base import PayloadCodec
from ._codec import AesGcmCodec
from ._drive import open_store
from ._fleet import fleet_report
from ._jsonl import JsonlStore
from ._ownership import Claims
from ._pages import (
    fleet_report_html,
    report_page_name,
    run_story_html,
    session_report_html,
    write_report_pages,
)
from ._postgres import PostgresStore
from ._reports import (
    FleetReport,
    RunStory,
    SessionReport,
)
from ._session import (
    record_feedback,
    session_report,
    verify_summaries,
)
from ._sqlite import SqliteStore
from ._story import failure_reasons

__all__ = [
    "AesGcmCodec",
    "Claims",
    "FleetReport",
    "JsonlStore",
    "PayloadCodec",
    "PostgresStore",
    "RunStory",
    "SessionReport",
    "SqliteStore",
    "failure_reasons",
    "fleet_report",
    "fleet_report_html",
    "open_store",
    "record_feedback",
    "report_page_name",
    "run_story_html",
    "session_report",
    "session_report_html",
    "verify_summaries",
    "write_report_pages",
]
