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
store; :func:`verify_chain` refuses a journal shorter than it or diverging
from it.

The MACs are computed over text the codec writes, once per entry
(``entry_text``, ``end_text``, ``request_text``; a fold takes them all at
once as its ``CanonicalForm``): the part of this module over given text (the
seed, :func:`entry_mac`, :func:`end_mac`, :func:`verify_chain`, and
:func:`bound_input_sha256`, the keyless binding of a v2 entry's input hash to
its request) encodes nothing.
Only the signing helpers below it (:func:`sign_entry`, :func:`sign_end`,
:func:`sign_journal`) ask the codec for an entry's text.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any, Self, TypeVar

import attrs

from ..errors import JournalError
from ..wire.json import stored_json
from .codec import (
    HEX64,  # a MAC as the journal writes it: 64 lowercase hex digits
    CanonicalForm,
    EntryState,
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    end_text,
    entry_text,
    is_v1,
    load_stored_text,
    request_text,
)

__all__ = [
    "Chain",
    "JournalHead",
    "bound_input_sha256",
    "end_mac",
    "entry_mac",
    "journal_head",
    "journal_seed",
    "request_seed",
    "sign_end",
    "sign_entry",
    "sign_journal",
    "verify_chain",
]

J = TypeVar("J", bound=JournalBase[Any, Any])
E = TypeVar("E", bound=JournalEntryBase[Any])

# --- the HMAC over given text (the codec writes it; nothing here encodes) ---------------


def _check_key(key: object) -> bytes:
    if not isinstance(key, bytes | bytearray) or not key:
        raise JournalError("key: expected non-empty bytes")
    return bytes(key)


def _hmac(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def request_seed(text: str, key: bytes) -> str:
    """The chain's seed: HMAC-SHA256 of the request's canonical JSON ``text`` (UTF-8)."""
    return _hmac(_check_key(key), text)


def bound_input_sha256(request_sha256: str, input_sha256: str) -> str:
    """A v2 entry's ``input_sha256``: SHA-256 hex of the request digest followed by the input's.

    Both are 64 lowercase hex characters; the bound hash is over their
    128-character concatenation (ASCII). So an entry names the request it was
    recorded under, with or without a key (spec §12.2).
    """
    return hashlib.sha256((request_sha256 + input_sha256).encode("ascii")).hexdigest()


_CURRENT = "v2"
"""Any ``format`` but a ``…_v1`` one is signed by the current (v2) rules."""


def entry_mac(
    text: str, previous: str, key: bytes, *, state: str, format: str = _CURRENT
) -> str:
    """HMAC-SHA256 of ``previous`` (hex) followed by an entry's canonical ``text`` without ``mac``.

    For a v2 ``format`` (the default) the message starts with the entry's
    domain, its ``state`` (``started:`` or ``finished:``); for a v1 one it does not.
    """
    if format.endswith("_v1"):
        return _hmac(_check_key(key), previous + text)
    return _hmac(_check_key(key), f"{state}:{previous}{text}")


def end_mac(text: str, previous: str, key: bytes) -> str:
    """HMAC-SHA256 of ``end:`` + ``previous`` + the end marker's canonical ``text`` (no ``mac``)."""
    return _hmac(_check_key(key), "end:" + previous + text)


@attrs.frozen
class Chain:
    """What checking a journal's MACs and head found: each first problem, if any (spec §12).

    ``broken`` is the index of the first entry whose ``mac`` is missing or
    wrong and ``error`` says so; ``end_error`` is the end marker's and
    ``head_error`` the head's (:func:`verify_chain`), each found only when
    everything before it holds. The fold raises each where its walk reaches
    it, so a journal is refused for its first problem whichever kind it is.
    """

    broken: int | None = None
    error: JournalError | None = None
    end_error: JournalError | None = None
    head_error: JournalError | None = None


def verify_chain(
    journal: JournalBase[Any, Any], texts: CanonicalForm, key: bytes | None, head: object = None
) -> Chain:
    """Check every link of ``journal``'s chain under ``key``, then its ``head`` (spec §12).

    ``texts`` are the journal's canonical texts, each written once by the
    codec: the request's (the seed signs it), the entries' and the end
    marker's without ``mac``, and the forms the entry a head points at had
    while it was started (a head taken meanwhile signed one of them). Without ``key`` only the head
    is looked at (it needs one). A wrong ``key`` raises at once.
    """
    request, started = texts.request, texts.started
    if key is None:
        error = None if head is None else _head_error(journal, head, key, request, started)
        return Chain(head_error=error)
    link = request_seed(request, key)
    for index, (entry, text) in enumerate(zip(journal.entries, texts.entries, strict=True)):
        if entry.mac is None:
            return Chain(index, JournalError(
                f"entries[{index}].mac: missing (the journal is verified with a key)"
            ))
        expected = entry_mac(text, link, key, state=entry.state.value, format=journal.format)
        if not hmac.compare_digest(expected, entry.mac):
            return Chain(index, JournalError(
                f"entries[{index}].mac: does not match (the entry, an earlier one or the request "
                "was changed, or the key is different)"
            ))
        link = entry.mac
    marker, end = journal.end, texts.end
    if marker is not None and end is not None:
        if marker.mac is None:
            return Chain(
                end_error=JournalError("end.mac: missing (the journal is verified with a key)")
            )
        if not hmac.compare_digest(end_mac(end, link, key), marker.mac):
            return Chain(end_error=JournalError(
                "end.mac: does not match (the end marker or an entry was changed, or the key "
                "is different)"
            ))
    if head is None:
        return Chain()
    return Chain(head_error=_head_error(journal, head, key, request, started))


def _head_error(
    journal: JournalBase[Any, Any], head: object, key: bytes | None, request: str,
    started: Sequence[str],
) -> JournalError | None:
    """Why ``journal`` is refused for ``head`` (spec §12.2), or None when it matches.

    The journal matches when its record at the head's position has the
    head's ``mac``: the end marker (with exactly ``head.entries`` entries),
    entry ``head.entries`` itself, or — the run went on after the head was
    taken — that entry as it was while ``started`` (any prefix of its tool
    calls: ``started`` are those forms' canonical texts, ``request`` is the
    request's). Needs the key (the head's MAC is recomputed for the last case)
    and a journal whose chain verifies (the caller verifies it first).
    """
    if not isinstance(head, JournalHead):
        return JournalError(f"head: expected a JournalHead, got {type(head).__name__}")
    if key is None:
        return JournalError("head: checking a head needs the key")
    count = len(journal.entries)
    if count < head.entries:
        return JournalError(
            f"head: the journal has {count} entries, the head commits to {head.entries} "
            "(the journal was cut)"
        )
    end = journal.end
    if end is not None and end.mac is not None and count == head.entries and (
        hmac.compare_digest(end.mac, head.mac)
    ):
        return None
    if head.entries == 0:
        return JournalError("head: the journal diverges from the head (entries[0])")
    index = head.entries - 1
    mac = journal.entries[index].mac
    if mac is not None and hmac.compare_digest(mac, head.mac):
        return None
    previous = request_seed(request, key) if index == 0 else journal.entries[index - 1].mac
    if previous is not None:
        for text in started:
            signed = entry_mac(text, previous, key, state="started", format=journal.format)
            if hmac.compare_digest(signed, head.mac):
                return None
    return JournalError(f"head: the journal diverges from the head at entries[{index}]")


# --- a journal signed: its texts from the codec ------------------------------------------


def journal_seed(journal: JournalBase[Any, Any], key: bytes) -> str:
    """The chain's seed of ``journal`` (any workflow's): the HMAC of its request's wire form."""
    return request_seed(request_text(journal), key)


def _entry_mac(entry: JournalEntryBase[Any], previous: str, key: bytes, format: str) -> str:
    return entry_mac(entry_text(entry), previous, key, state=entry.state.value, format=format)


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
    return attrs.evolve(entry, mac=_entry_mac(entry, previous, key, journal.format))


def sign_end(journal: JournalBase[Any, Any], key: bytes) -> JournalEnd:
    """The signed end marker of ``journal`` (v2): it covers ``len(journal.entries)``.

    Every entry must be signed and finished already.
    """
    if is_v1(journal):
        raise JournalError(f"end: a {journal.format} journal has no end marker")
    entries = journal.entries
    if entries and entries[-1].state is EntryState.STARTED:
        raise JournalError(f"entries[{len(entries) - 1}]: started; the journal cannot end here")
    previous = entries[-1].mac if entries else journal_seed(journal, key)
    if previous is None:
        raise JournalError(f"entries[{len(entries) - 1}].mac: missing; cannot sign the end")
    return _signed_end(len(entries), previous, key)


def _signed_end(entries: int, previous: str, key: bytes) -> JournalEnd:
    """The end marker covering ``entries`` entries, chained to the ``previous`` link."""
    return JournalEnd(entries, end_mac(end_text(JournalEnd(entries)), previous, key))


def sign_journal(journal: J, key: bytes) -> J:
    """Every entry signed in order (existing MACs are replaced); any workflow's journal.

    A v2 journal's end marker, when it has one, is signed too.
    """
    link = journal_seed(journal, key)
    signed = []
    for entry in journal.entries:
        mac = _entry_mac(entry, link, key, journal.format)
        signed.append(attrs.evolve(entry, mac=mac))
        link = mac
    end = None if journal.end is None else _signed_end(journal.end.entries, link, key)
    return attrs.evolve(journal, entries=tuple(signed), end=end)


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
        if not isinstance(self.mac, str) or not HEX64.match(self.mac):
            raise JournalError("head.mac: expected 64 lowercase hex digits")

    def to_json(self) -> str:
        """The head as canonical JSON text."""
        return stored_json({"entries": self.entries, "mac": self.mac})

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse a head strictly; :class:`JournalError` naming what is wrong."""
        data = load_stored_text(text, lambda error: f"head: not valid JSON ({error})")
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
