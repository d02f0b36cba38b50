"""One journal entry to and from its text: the per-entry codec a store writes (spec §12, §16).

A store that persists a run as it goes writes one entry at a time. Encoding
the whole journal for every write (``journal_to_json``) costs O(n) per write
and O(n²) per run; these functions encode and decode a single entry in the
exact wire form of a ``diagnosis_journal_v1`` / ``aiops_journal_v1``
journal's ``entries`` items (canonical JSON, surrogates escaped), so an entry
written here and loaded back is the entry that was signed: its ``mac`` still
verifies.

Decoding is as strict as loading a whole journal: an unknown key, a wrong
type, a ``started`` entry with an outcome are each a :class:`JournalError`
naming the path under ``entry``.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from .._kernel.errors import JournalError, PayloadError
from .._kernel.journal.codec import JournalEntryBase, _load_entry, entry_to_wire
from .._kernel.wire.json import loads_stored, stored_json
from .journal import JournalEntry

__all__ = ["entry_from_json", "entry_to_json"]

E = TypeVar("E", bound=JournalEntryBase[Any])


def entry_to_json(entry: JournalEntryBase[Any]) -> str:
    """One entry as canonical JSON text: exactly an item of the journal's ``entries``.

    Works for either workflow's entry. The text holds no newline (control
    characters are escaped), so it fits one line of a JSON Lines file.
    """
    if not isinstance(entry, JournalEntryBase):
        raise JournalError(f"entry: expected a journal entry, got {type(entry).__name__}")
    return stored_json(entry_to_wire(entry))


@overload
def entry_from_json(text: str, *, format: str | None = None) -> JournalEntry: ...


@overload
def entry_from_json(text: str, entry_type: type[E], *, format: str | None = None) -> E: ...


def entry_from_json(
    text: str, entry_type: type[Any] = JournalEntry, *, format: str | None = None
) -> Any:
    """Parse one entry's text strictly as ``entry_type`` (default: the chat :class:`JournalEntry`).

    Pass ``AiOpsJournalEntry`` for an AIOps entry, and the journal's
    ``format`` for an entry of a ``…_v1`` journal (by default the current
    form: a started executor entry may list the tool calls finished so far).
    Every problem is a :class:`JournalError` naming its path
    (``entry.outcome: missing ...``).
    """
    if not isinstance(text, str):
        raise JournalError(f"entry: expected text, got {type(text).__name__}")
    if not (isinstance(entry_type, type) and issubclass(entry_type, JournalEntryBase)):
        raise JournalError("entry_type: expected a journal entry class")
    try:
        data = loads_stored(text)
    except PayloadError as error:
        raise JournalError(f"entry{error.path.removeprefix('$')}: {error.problem}") from None
    v1 = format is not None and format.endswith("_v1")
    return _load_entry(data, "entry", entry_type, v1)
