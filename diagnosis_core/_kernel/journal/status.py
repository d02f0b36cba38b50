"""A journal's status, built the same way for both workflows (spec §12, §12.2).

``journal_status`` and ``aiops_journal_status`` are one computation — fold and
verify, then the end-marker and request-hash fields — differing only in the
status class, which names its workflow. Building it here keeps the two from
drifting apart (an end-marker rule fixed for one workflow and not the other).
"""

from __future__ import annotations

from typing import Any, TypeVar

from .codec import JournalBase
from .fold import JournalStatusBase, fold, status_fields
from .mac import JournalHead

__all__ = ["journal_status_of"]

T = TypeVar("T", bound=JournalStatusBase[Any, Any, Any])


def journal_status_of(
    kind: type[T], journal: JournalBase[Any, Any], key: bytes | None, head: JournalHead | None
) -> T:
    """Fold and verify ``journal`` under ``kind``'s workflow; its status as a ``kind``.

    The first problem is a :class:`JournalError` (see ``fold``); ``ended``,
    ``end_required`` and ``request_sha256`` come from :func:`status_fields`.
    """
    state, action, interrupted, ended = fold(kind._workflow, journal, key, head)
    return kind(state, action, interrupted, **status_fields(journal, key, ended))
