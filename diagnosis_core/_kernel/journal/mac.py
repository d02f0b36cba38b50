"""Optional integrity for a run journal: an HMAC-SHA256 chain under a host key (spec §12).

Exactly what is hashed (all HMAC-SHA256 with the host's key, hex digests):

* the *seed* is the HMAC of the UTF-8 bytes of the request's canonical JSON
  (:func:`stored_json` of the §12 ``request`` object);
* entry *n* carries ``mac`` = HMAC of the UTF-8 bytes of the previous
  entry's ``mac`` (for the first entry: the seed), as its 64 lowercase hex
  characters, immediately followed by the canonical JSON of entry *n*
  without its ``mac`` key.

So every entry commits to the request and to every entry before it: an edit,
a removed or inserted entry, or a swapped request breaks the chain at the
first changed place. A ``started`` entry is signed as well, and its finished
replacement (same ``seq``) is signed again over the same previous link.
Digests are compared with :func:`hmac.compare_digest`. The chain is the
same for every workflow's journal (the seed is over that workflow's request
wire form).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, TypeVar

import attrs

from ..errors import JournalError
from ..json import stored_json
from .codec import JournalBase, JournalEntryBase, entry_to_wire

__all__ = [
    "entry_mac",
    "journal_seed",
    "request_seed",
    "sign_entry",
    "sign_journal",
    "verify_entry_mac",
]

J = TypeVar("J", bound=JournalBase[Any, Any])
E = TypeVar("E", bound=JournalEntryBase[Any])


def _check_key(key: object) -> bytes:
    if not isinstance(key, bytes | bytearray) or not key:
        raise JournalError("key: expected non-empty bytes")
    return bytes(key)


def request_seed(request_wire: dict[str, Any], key: bytes) -> str:
    data = stored_json(request_wire).encode("utf-8")
    return hmac.new(_check_key(key), data, hashlib.sha256).hexdigest()


def journal_seed(journal: JournalBase[Any, Any], key: bytes) -> str:
    """The chain's seed of ``journal`` (any workflow's): the HMAC of its request's wire form."""
    return request_seed(type(journal)._form.request_to_wire(journal.request), key)


def entry_mac(entry: JournalEntryBase[Any], previous: str, key: bytes) -> str:
    """HMAC-SHA256 of ``previous`` (hex) followed by the entry's canonical JSON without ``mac``."""
    text = previous + stored_json(entry_to_wire(entry, with_mac=False))
    return hmac.new(_check_key(key), text.encode("utf-8"), hashlib.sha256).hexdigest()


def _previous_link(journal: JournalBase[Any, Any], seq: int, key: bytes) -> str:
    if seq == 1:
        return journal_seed(journal, key)
    if seq - 2 >= len(journal.entries):
        raise JournalError(f"entries[{seq - 1}]: entry {seq - 1} is missing; cannot sign")
    previous: str | None = journal.entries[seq - 2].mac
    if previous is None:
        raise JournalError(f"entries[{seq - 2}].mac: missing; cannot sign the entry after it")
    return previous


def sign_entry(journal: JournalBase[Any, Any], entry: E, key: bytes) -> E:
    """``entry`` with its ``mac``, chained to the entry before it in ``journal``.

    ``entry`` is the entry with ``seq`` ``n``: it may be new (``n`` is one
    past the last) or replace the last (a finished entry for a started one);
    entry ``n - 1`` of ``journal`` must be signed already.
    """
    previous = _previous_link(journal, entry.seq, key)
    unsigned = attrs.evolve(entry, mac=None)
    return attrs.evolve(entry, mac=entry_mac(unsigned, previous, key))


def sign_journal(journal: J, key: bytes) -> J:
    """Every entry signed in order (existing MACs are replaced); any workflow's journal."""
    link = journal_seed(journal, key)
    signed = []
    for entry in journal.entries:
        mac = entry_mac(entry, link, key)
        signed.append(attrs.evolve(entry, mac=mac))
        link = mac
    return type(journal)(journal.request, tuple(signed))


def verify_entry_mac(entry: JournalEntryBase[Any], previous: str, key: bytes, index: int) -> str:
    """Check one link of the chain; returns the entry's ``mac``, or raises :class:`JournalError`."""
    if entry.mac is None:
        raise JournalError(f"entries[{index}].mac: missing (the journal is verified with a key)")
    expected = entry_mac(entry, previous, key)
    if not hmac.compare_digest(expected, entry.mac):
        raise JournalError(
            f"entries[{index}].mac: does not match (the entry, an earlier one or the request "
            "was changed, or the key is different)"
        )
    return entry.mac
