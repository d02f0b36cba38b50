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

That is the v1 rule (``…_journal_v1``), kept byte for byte. A v2 journal
(spec §12.2) signs in three domains, by prefixing the HMAC's message with
the ASCII text of its domain and a colon:

* ``started:`` + previous ``mac`` + canonical JSON of a ``started`` entry;
* ``finished:`` + previous ``mac`` + canonical JSON of a ``finished`` entry;
* ``end:`` + the last entry's ``mac`` (the seed when there is none) +
  canonical JSON of the end marker without ``mac`` (``{"entries": n}``).

So a signed ``started`` entry can never stand in for a finished one, and a
journal proves that it is complete only with a valid end marker. A host may
keep the :class:`JournalHead` (entry count and last ``mac``) outside the
store; :func:`check_head` refuses a journal shorter than it or diverging
from it.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Self, TypeVar

import attrs

from ..errors import JournalError
from ..wire.json import escape_surrogates, loads_stored, stored_json
from .codec import (
    EntryState,
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    end_to_wire,
    entry_to_wire,
    is_v1,
)

__all__ = [
    "JournalHead",
    "check_head",
    "end_mac",
    "entry_mac",
    "journal_head",
    "journal_seed",
    "request_seed",
    "sign_end",
    "sign_entry",
    "sign_journal",
    "verify_end_mac",
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


_CURRENT = "v2"
"""Any ``format`` but a ``…_v1`` one is signed by the current (v2) rules."""


def _is_v1_format(format: str) -> bool:
    return format.endswith("_v1")


# Stands for a gatekeeper result in an entry's canonical JSON, then replaced by it.
_RESULT_SLOT = "\x00result\x00"
_RESULT_SLOT_TEXT = stored_json(_RESULT_SLOT)


def _entry_text(entry: JournalEntryBase[Any]) -> str:
    """The entry's canonical JSON without ``mac`` (:func:`stored_json` of its wire object).

    A gatekeeper result is spliced in as its recorded canonical JSON (surrogates
    escaped as :func:`stored_json` escapes them) instead of being decoded and
    encoded again: it can be large, and it is already canonical.
    """
    outcome = entry.outcome
    if not isinstance(outcome, RecordedGatekeeperResult):
        return stored_json(entry_to_wire(entry, with_mac=False))
    slotted = attrs.evolve(entry, outcome=RecordedGatekeeperError(_RESULT_SLOT))
    wire = entry_to_wire(slotted, with_mac=False)
    wire["outcome"] = {"result": _RESULT_SLOT}
    return stored_json(wire).replace(_RESULT_SLOT_TEXT, escape_surrogates(outcome.result_json), 1)


def entry_mac(
    entry: JournalEntryBase[Any], previous: str, key: bytes, *, format: str = _CURRENT
) -> str:
    """HMAC-SHA256 of ``previous`` (hex) followed by the entry's canonical JSON without ``mac``.

    For a v2 ``format`` (the default) the message starts with the entry's
    domain, ``started:`` or ``finished:``; for a v1 one it does not.
    """
    text = previous + _entry_text(entry)
    if not _is_v1_format(format):
        text = f"{entry.state.value}:" + text
    return hmac.new(_check_key(key), text.encode("utf-8"), hashlib.sha256).hexdigest()


def end_mac(end: JournalEnd, previous: str, key: bytes) -> str:
    """HMAC-SHA256 of ``end:`` + ``previous`` + the end marker's canonical JSON without ``mac``."""
    text = "end:" + previous + stored_json(end_to_wire(end, with_mac=False))
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
    return attrs.evolve(entry, mac=entry_mac(unsigned, previous, key, format=journal.format))


def sign_end(journal: JournalBase[Any, Any], key: bytes) -> JournalEnd:
    """The signed end marker of ``journal`` (v2): it covers ``len(journal.entries)``.

    Every entry must be signed and finished already.
    """
    if is_v1(journal):
        raise JournalError(f"end: a {journal.format} journal has no end marker")
    entries = journal.entries
    if entries and entries[-1].state is EntryState.STARTED:
        raise JournalError(f"entries[{len(entries) - 1}]: started; the journal cannot end here")
    previous = _end_link(journal, key)
    if previous is None:
        raise JournalError(f"entries[{len(entries) - 1}].mac: missing; cannot sign the end")
    end = JournalEnd(len(entries))
    return JournalEnd(len(entries), end_mac(end, previous, key))


def _end_link(journal: JournalBase[Any, Any], key: bytes) -> str | None:
    if not journal.entries:
        return journal_seed(journal, key)
    mac: str | None = journal.entries[-1].mac
    return mac


def sign_journal(journal: J, key: bytes) -> J:
    """Every entry signed in order (existing MACs are replaced); any workflow's journal.

    A v2 journal's end marker, when it has one, is signed too.
    """
    link = journal_seed(journal, key)
    signed = []
    for entry in journal.entries:
        mac = entry_mac(entry, link, key, format=journal.format)
        signed.append(attrs.evolve(entry, mac=mac))
        link = mac
    result = attrs.evolve(journal, entries=tuple(signed), end=None)
    if journal.end is not None:
        end = JournalEnd(journal.end.entries)
        result = attrs.evolve(result, end=JournalEnd(end.entries, end_mac(end, link, key)))
    return result


def verify_entry_mac(
    entry: JournalEntryBase[Any], previous: str, key: bytes, index: int, format: str
) -> str:
    """Check one link of the chain; returns the entry's ``mac``, or raises :class:`JournalError`."""
    if entry.mac is None:
        raise JournalError(f"entries[{index}].mac: missing (the journal is verified with a key)")
    expected = entry_mac(entry, previous, key, format=format)
    if not hmac.compare_digest(expected, entry.mac):
        raise JournalError(
            f"entries[{index}].mac: does not match (the entry, an earlier one or the request "
            "was changed, or the key is different)"
        )
    return entry.mac


def verify_end_mac(end: JournalEnd, previous: str, key: bytes) -> None:
    """Check the end marker's ``mac`` against the last link; :class:`JournalError` if wrong."""
    if end.mac is None:
        raise JournalError("end.mac: missing (the journal is verified with a key)")
    if not hmac.compare_digest(end_mac(end, previous, key), end.mac):
        raise JournalError(
            "end.mac: does not match (the end marker or an entry was changed, or the key "
            "is different)"
        )


# --- the head (spec §12.2) ---------------------------------------------------------------


@attrs.frozen
class JournalHead:
    """What a host keeps outside the store: the entry count and the last ``mac``.

    ``mac`` is the last signed record's: the end marker's once the journal is
    complete, otherwise the last entry's (a ``started`` entry's included).
    Folding or resuming with ``head=`` refuses a journal shorter than the
    head or diverging from it, so an attacker who can write the store but
    holds neither the key nor the head cannot cut the journal unnoticed.
    Wire form (:meth:`to_json` / :meth:`from_json`): ``{"entries": n, "mac": hex}``.
    """

    entries: int
    mac: str

    def __attrs_post_init__(self) -> None:
        if type(self.entries) is not int or self.entries < 0:
            raise JournalError(f"head.entries: expected an integer >= 0, got {self.entries!r}")
        if not isinstance(self.mac, str) or len(self.mac) != 64 or not all(
            ch in "0123456789abcdef" for ch in self.mac
        ):
            raise JournalError("head.mac: expected 64 lowercase hex digits")

    def to_json(self) -> str:
        """The head as canonical JSON text."""
        return stored_json({"entries": self.entries, "mac": self.mac})

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse a head strictly; :class:`JournalError` naming what is wrong."""
        try:
            data = loads_stored(text)
        except Exception as error:
            raise JournalError(f"head: not valid JSON ({error})") from None
        if not isinstance(data, dict) or set(data) != {"entries", "mac"}:
            raise JournalError('head: expected an object with exactly "entries" and "mac"')
        return cls(data["entries"], data["mac"])  # type: ignore[arg-type]


def journal_head(journal: JournalBase[Any, Any]) -> JournalHead:
    """The head of a signed journal: its entry count and its last ``mac`` (the end's, if any)."""
    if journal.end is not None:
        if journal.end.mac is None:
            raise JournalError("end.mac: missing; an unsigned journal has no head")
        return JournalHead(len(journal.entries), journal.end.mac)
    if not journal.entries:
        raise JournalError("entries: empty; there is no head before the first entry")
    mac = journal.entries[-1].mac
    if mac is None:
        raise JournalError(f"entries[{len(journal.entries) - 1}].mac: missing; no head")
    return JournalHead(len(journal.entries), mac)


def _started_macs(
    journal: JournalBase[Any, Any], index: int, key: bytes
) -> list[str]:
    """Every ``mac`` entry ``index`` had while it was ``started`` (one per tool-call prefix)."""
    entry = journal.entries[index]
    previous = journal_seed(journal, key) if index == 0 else journal.entries[index - 1].mac
    if previous is None:
        return []
    tools = entry.tool_invocations or ()
    forms = [None, *(tools[:count] for count in range(1, len(tools) + 1))]
    macs = []
    for prefix in forms:
        started = attrs.evolve(
            entry, state=EntryState.STARTED, outcome=None, tool_invocations=prefix, mac=None
        )
        macs.append(entry_mac(started, previous, key, format=journal.format))
    return macs


def check_head(journal: JournalBase[Any, Any], head: JournalHead, key: bytes | None) -> None:
    """Refuse ``journal`` when it is shorter than ``head`` or diverges from it (spec §12.2).

    The journal matches when its record at the head's position has the
    head's ``mac``: the end marker (with exactly ``head.entries`` entries),
    entry ``head.entries`` itself, or — the run went on after the head was
    taken — that entry as it was while ``started`` (any prefix of its tool
    calls). Needs the key (the head's MAC is recomputed for the last case)
    and a journal whose chain verifies (the caller verifies it).
    """
    if not isinstance(head, JournalHead):
        raise JournalError(f"head: expected a JournalHead, got {type(head).__name__}")
    if key is None:
        raise JournalError("head: checking a head needs the key")
    count = len(journal.entries)
    if count < head.entries:
        raise JournalError(
            f"head: the journal has {count} entries, the head commits to {head.entries} "
            "(the journal was cut)"
        )
    end = journal.end
    if end is not None and end.mac is not None and count == head.entries and (
        hmac.compare_digest(end.mac, head.mac)
    ):
        return
    if head.entries == 0:
        raise JournalError("head: the journal diverges from the head (entries[0])")
    index = head.entries - 1
    mac = journal.entries[index].mac
    if mac is not None and hmac.compare_digest(mac, head.mac):
        return
    for started in _started_macs(journal, index, key):
        if hmac.compare_digest(started, head.mac):
            return
    raise JournalError(f"head: the journal diverges from the head at entries[{index}]")
