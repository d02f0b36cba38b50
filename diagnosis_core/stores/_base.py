"""What every journal store shares: the protocol, the records, claims, sealing (spec §16).

A store keeps three kinds of record per run, each as text:

* the **run**: ``run_id``, ``session_id`` and ``format`` in the clear (what
  listing needs), the time the store first saw it, and the request as the
  canonical JSON of the run's *empty* journal (``journal_to_json``);
* its **entries**, one record per ``seq``: ``seq`` and ``state`` in the
  clear, the entry's canonical JSON (:func:`entry_to_json`), the optional
  ``duration_ms`` the driver measured around the effect, the writer's claim
  token and the time of the write. A ``finished`` entry replaces the
  ``started`` one with the same ``seq`` and nothing else is ever replaced.
  While an executor call runs, its ``started`` entry is written again as
  each tool call finishes (spec §12.3); a backend that keeps **tool
  records** (JSON Lines) stores each such write, and the finished entry
  that lists the same calls, as what it adds to the entry before it — the
  new tool calls and the fields that change (``mac``; ``state`` and
  ``outcome`` when it finishes) — O(1) per call, never the calls so far
  again; the entry is rebuilt on load, byte for byte the text the writer gave;
* **feedback**: a fact appended after the run's end (``_session.py``).

Facts are never stored twice and never as a conclusion: a run's state is
always the fold of the journal the store gives back.

**Exclusive writers.** A writer :meth:`~JournalStore.claim`\\ s a run before it
loads or appends; the claim is held by something the operating system or the
database server releases when the holder dies — a byte-range lock in the
store's one lock file (JSON Lines, SQLite) or a session advisory lock
(PostgreSQL), taken through ``_ownership.py`` — so there is no lease to expire
while a slow effect is still running, and after the holder is killed exactly one
of the processes racing to claim the run wins. A claim belongs to its holder,
not to its process: two threads never both hold a run, and any spelling of a
store's path meets the same claim.
Every append must present the live claim (its token is recorded with the
entry) and the store refuses any write that is not the next entry or the
completion of the last ``started`` one, so even a buggy writer cannot double
or reorder entries.

**Sealing.** With a :class:`~diagnosis_core.stores.PayloadCodec` every payload
(request, entry, feedback) is encrypted before it reaches the medium, bound
(as the codec's associated data, :func:`sealed_context`) to what it is and to
every clear column a listing or a report reads beside it: the run's
``session_id``, ``format`` and ``created_at``; an entry's ``seq``, ``state``,
``duration_ms`` and ``written_at``; a feedback's place among the run's
feedback and its ``recorded_at``. So a sealed row relabelled (another
session, another time) or copied (to another run, or a second time to the
same one) does not decode. The HMAC chain is computed over the plaintext and
still verifies after decoding. A store with a codec refuses a plaintext
payload (fail closed: whoever can write the medium without the key cannot
inject facts).

**Reading fails closed, per run.** :meth:`StoreBase.load` raises a
:class:`StoreError` naming the run for anything it cannot vouch for; the
listings (``session_report``, ``fleet_report``, ``diagnosis-core runs ls``)
show such a run as ``invalid`` with that reason and go on with the others.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import random
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs

from .. import JournalError, PayloadError
from ..journal import (
    EntryState,
    Feedback,
    JournalBase,
    JournalEnd,
    JournalEntryBase,
    JournalStore,
    RunClaim,
    RunClaimedError,
    RunSummary,
    StoredRun,
    StoreError,
    entry_from_json,
    entry_to_json,
    journal_to_json,
    stored_json,
)
from ..protocol import loads_stored
from ._feedback import feedback_from_json, feedback_to_json
from ._story import run_digest
from ._summary import digest_columns, digest_from_json, digest_to_json

__all__ = [
    "TOOLS",
    "EntryRecord",
    "PayloadCodec",
    "RawRun",
    "StoreBase",
    "SummaryRow",
    "check_since",
    "sealed_context",
    "summary_context",
    "wait_for_claim",
]

_SEALED_PREFIX = "sealed:"
_END = "end"  # the state of the record that holds a v2 journal's end marker
_FEEDBACK_WAIT = 60.0
"""Seconds a feedback write waits for the run's claim before it is refused."""


def sealed_context(kind: str, run_id: str, *fields: str | int | float | None) -> bytes:
    """The associated data a sealed payload is bound to: its kind, run and clear columns.

    A JSON array (ASCII, compact): ``["run", run_id, session_id, format,
    created_at]``, ``["entry", run_id, seq, state, duration_ms, written_at]``,
    ``["end", run_id, seq, written_at]`` or ``["feedback", run_id, ordinal,
    recorded_at]`` (``ordinal`` counts the run's feedback from 1). Callers
    pass every time as a ``float`` (written in Python's shortest round-trip
    form), so the value a backend reads back gives the same bytes. This is
    the store's own format, not the protocol's wire.
    """
    values: list[str | int | float | None] = [kind, run_id, *fields]
    return json.dumps(values, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def summary_context(
    run_id: str, session_id: str, format: str, created_at: float, fingerprint: str | None
) -> bytes:
    """The associated data of a sealed summary: ``["summary", run_id, session_id, format,
    created_at, fingerprint]``.

    The run's clear columns, so a summary copied to another run, or left in
    place under a relabelled run, does not decode; ``fingerprint`` (JSON
    Lines: the digest of the run's records it was computed from) is null in
    the SQL stores.
    """
    return sealed_context("summary", run_id, session_id, format, float(created_at), fingerprint)


@attrs.frozen
class SummaryRow:
    """A listed run and its stored summary's payload (None when it has none)."""

    run_id: str
    session_id: str
    format: str
    created_at: float
    payload: str | None
    fingerprint: str | None = None


TOOLS = "tools"
"""The JSON Lines kind of a tool record (:attr:`EntryRecord.delta`); its sealing context."""


@runtime_checkable
class PayloadCodec(Protocol):
    """Encrypts a stored payload under the host's key (spec §16, "facts at rest").

    ``context`` names what the payload is and the clear columns stored beside
    it (:func:`sealed_context`); an authenticated codec binds the ciphertext
    to it, so a sealed payload moved to another row, or left in place with a
    column changed, does not decode. ``decode`` raises on anything it did not
    produce with the same key and context.
    """

    name: str

    def encode(self, data: bytes, context: bytes, /) -> bytes: ...

    def decode(self, data: bytes, context: bytes, /) -> bytes: ...


@attrs.frozen
class EntryRecord:
    """One stored entry record as a backend hands it over (payload still sealed).

    ``state`` is the entry's (``end`` for a v2 journal's end marker). A
    ``delta`` record is a tool record: it follows the ``started`` entry (and
    tool records) of the same ``seq`` and holds what it adds to them
    (:func:`_apply_delta`); ``state`` is then the entry's state after it.
    """

    seq: int
    state: str
    payload: str
    duration_ms: float | None
    written_at: float
    delta: bool = False


@attrs.frozen
class RawRun:
    """A run's records as a backend hands them over, before decoding."""

    run_id: str
    session_id: str
    format: str
    created_at: float
    payload: str
    entries: tuple[EntryRecord, ...]
    feedback: tuple[tuple[str, float], ...]


def _journal_types() -> dict[str, type[JournalBase[Any, Any]]]:
    from ..journal import AiOpsJournal, Journal

    return {
        "diagnosis_journal_v2": Journal,
        "diagnosis_journal_v1": Journal,
        "aiops_journal_v2": AiOpsJournal,
        "aiops_journal_v1": AiOpsJournal,
    }


def _journal_of(format: str, text: str, where: str) -> JournalBase[Any, Any]:
    journal_type = _journal_types().get(format)
    if journal_type is None:
        raise StoreError(f"{where}: unknown journal format {format!r}")
    try:
        return journal_type.from_json(text)
    except JournalError as error:
        raise StoreError(f"{where}: the stored request is not valid: {error}") from None


def _check_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or not run_id:
        raise StoreError(f"run_id: expected a non-empty string, got {run_id!r}")
    return run_id


def check_since(since: object) -> float | None:
    """``since`` as a listing takes it: None, or a finite number of seconds since the epoch."""
    if since is None:
        return None
    if isinstance(since, bool) or not isinstance(since, int | float):
        raise StoreError(f"since: expected seconds since the epoch, got {type(since).__name__}")
    try:
        value = float(since)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise StoreError(f"since: expected a finite time, got {since!r}")
    return value


@contextlib.contextmanager
def wait_for_claim(
    store: JournalStore, run_id: str, wait: float = _FEEDBACK_WAIT
) -> Iterator[RunClaim]:
    """The run's claim for a short write, waiting (with jittered pauses) while another holds it.

    Claims are refused, not queued (:meth:`JournalStore.claim`); a fact
    written after the run's end (feedback) waits for the holder instead, up
    to ``wait`` seconds, then raises :class:`RunClaimedError`.
    """
    deadline = time.monotonic() + wait
    pause = 0.001
    while True:
        try:
            claim = store.claim(run_id)
            break
        except RunClaimedError:
            if time.monotonic() >= deadline:
                raise RunClaimedError(
                    f"run {run_id!r}: another writer held it for {wait:g} s; nothing written"
                ) from None
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.05)
    try:
        yield claim
    finally:
        store.release(claim)


class StoreBase:
    """The store logic every backend shares; a backend supplies the primitive operations.

    Backends implement ``_acquire`` / ``_release`` (the liveness lock),
    ``_put_run``, ``_put_entry``, ``_last_entry``, ``_get_run``,
    ``_list_runs``, ``_put_feedback`` and ``close``; one that sets
    ``_tool_records`` implements ``_put_tools`` as well.
    """

    _tool_records: ClassVar[bool] = False
    """Whether a started entry written again with more tool calls is stored as a tool record."""

    def __init__(self, codec: PayloadCodec | None = None) -> None:
        if codec is not None and not isinstance(codec, PayloadCodec):
            raise StoreError("codec: expected a PayloadCodec (name, encode, decode)")
        self._codec = codec
        self._held: dict[str, tuple[str, object]] = {}  # token -> (run_id, lock handle)
        # claims of this store object, across threads: checked and taken as one step
        self._claims_mutex = threading.Lock()
        self._tails: dict[str, tuple[int, str] | None] = {}  # token -> last (seq, state)
        self._started: dict[str, tuple[int, str]] = {}  # token -> (seq, text) it last started

    # --- sealing --------------------------------------------------------------

    def _seal(self, text: str, context: bytes) -> str:
        if self._codec is None:
            return text
        sealed = self._codec.encode(text.encode("utf-8"), context)
        return f"{_SEALED_PREFIX}{self._codec.name}:{base64.b64encode(sealed).decode('ascii')}"

    def _unseal(self, stored: str, context: bytes, where: str) -> str:
        sealed = stored.startswith(_SEALED_PREFIX)
        if self._codec is None:
            if sealed:
                raise StoreError(
                    f"{where}: the payload is encrypted; open the store with its codec"
                )
            return stored
        if not sealed:
            raise StoreError(f"{where}: the payload is not encrypted, and this store requires it")
        name, _, data = stored[len(_SEALED_PREFIX):].partition(":")
        if name != self._codec.name:
            raise StoreError(f"{where}: sealed with codec {name!r}, not {self._codec.name!r}")
        try:
            plain = self._codec.decode(base64.b64decode(data, validate=True), context)
            return plain.decode("utf-8")
        except Exception:
            raise StoreError(
                f"{where}: the payload does not decode (another key, or it was changed or moved)"
            ) from None

    # --- claims ---------------------------------------------------------------

    def claim(self, run_id: str) -> RunClaim:
        """Claim ``run_id`` for writing; :class:`RunClaimedError` while another holds it."""
        _check_run_id(run_id)
        with self._claims_mutex:
            if any(held == run_id for held, _ in self._held.values()):
                raise RunClaimedError(f"run {run_id!r}: already claimed by this store")
            handle = self._acquire(run_id)
            token = uuid.uuid4().hex
            self._held[token] = (run_id, handle)
        try:
            self._tails[token] = self._last_entry(run_id)
        except BaseException:
            self.release(RunClaim(run_id, token, self))
            raise
        return RunClaim(run_id, token, self)

    def release(self, claim: RunClaim) -> None:
        """Give the run up (idempotent); another writer may claim it afterwards."""
        with self._claims_mutex:
            held = self._held.pop(claim.token, None)
            self._tails.pop(claim.token, None)
            self._started.pop(claim.token, None)
            if held is not None:
                self._release(held[0], held[1])

    def _check_claim(self, claim: RunClaim) -> str:
        held = self._held.get(claim.token)
        if held is None or held[0] != claim.run_id:
            raise StoreError(f"run {claim.run_id!r}: the claim is not held (released or foreign)")
        return claim.run_id

    # --- writing --------------------------------------------------------------

    def begin(self, claim: RunClaim, journal: JournalBase[Any, Any]) -> None:
        """Record the run's request (its journal without entries); a no-op when it is stored.

        A stored run with another request or format is a :class:`StoreError`.
        """
        run_id = self._check_claim(claim)
        if not isinstance(journal, JournalBase):
            raise StoreError(f"journal: expected a journal, got {type(journal).__name__}")
        request = journal.request
        if request.run.run_id != run_id:
            raise StoreError(f"run {run_id!r}: the journal's request is run {request.run.run_id!r}")
        header = journal_to_json(type(journal)(request))
        stored = self.load(run_id)
        if stored is not None:
            if stored.format != journal.format or stored.journal.request != request:
                raise StoreError(f"run {run_id!r}: the store holds it with another request")
            return
        session_id, created_at = request.run.session_id, time.time()
        context = sealed_context("run", run_id, session_id, journal.format, created_at)
        self._put_run(run_id, session_id, journal.format, self._seal(header, context), created_at)

    def append(
        self,
        claim: RunClaim,
        entry: JournalEntryBase[Any] | JournalEnd,
        *,
        duration_ms: float | None = None,
    ) -> None:
        """Write ``entry``: the next one, or the completion of the last ``started`` one.

        A started executor entry may be written again with the tool calls that
        finished so far (spec §12.3); the :class:`JournalEnd` marker of a v2
        journal (spec §12.2) is stored as the run's last record, after its last
        finished entry. Anything else (a gap, a rewrite of a finished entry, an
        entry of an unclaimed run, anything after the end marker) is a
        :class:`StoreError` and nothing is written.
        """
        run_id = self._check_claim(claim)
        tail = self._tails.get(claim.token)
        if isinstance(entry, JournalEnd):
            self._append_end(claim, run_id, entry, tail)
            return
        if tail is not None and tail[1] == _END:
            raise StoreError(f"run {run_id!r}: the journal has ended; nothing follows its end")
        text = entry_to_json(entry)
        seq, state = entry.seq, entry.state.value
        last_seq = 0 if tail is None else tail[0]
        replace = tail is not None and seq == last_seq
        if replace:
            assert tail is not None
            if tail[1] != EntryState.STARTED.value:
                raise StoreError(
                    f"run {run_id!r}: entry {seq} is finished; a stored fact is never replaced"
                )
        elif seq != last_seq + 1:
            raise StoreError(f"run {run_id!r}: entry {seq} does not follow entry {last_seq}")
        if duration_ms is not None and (isinstance(duration_ms, bool) or duration_ms < 0):
            raise StoreError("duration_ms: expected a number >= 0")
        duration = None if duration_ms is None else float(duration_ms)
        written_at = time.time()
        if replace and self._put_tool_record(claim, seq, state, text, duration, written_at):
            self._tails[claim.token] = (seq, state)
            return
        self._started[claim.token] = (seq, text)
        context = sealed_context("entry", run_id, seq, state, duration, written_at)
        self._put_entry(
            run_id, seq, state, self._seal(text, context), duration, claim.token, written_at,
            replace=replace,
        )
        self._tails[claim.token] = (seq, state)

    def _put_tool_record(
        self, claim: RunClaim, seq: int, state: str, text: str, duration_ms: float | None,
        written_at: float,
    ) -> bool:
        """Store ``text`` — the started entry again, or finished — as a tool record.

        Only when the backend keeps tool records, this claim wrote the started
        entry's previous text, that text lists tool calls or the new one adds
        some, and the new text is that text with tool calls appended and other
        fields set: rebuilding it from the record must give ``text`` byte for
        byte. Otherwise False, and the entry is written whole.
        """
        previous = self._started.get(claim.token)
        if not self._tool_records or previous is None or previous[0] != seq:
            return False
        delta = _entry_delta(previous[1], text)
        if delta is None:
            return False
        context = sealed_context(TOOLS, claim.run_id, seq, state, duration_ms, written_at)
        payload = self._seal(delta, context)
        self._put_tools(claim.run_id, seq, state, payload, duration_ms, claim.token, written_at)
        self._started[claim.token] = (seq, text)
        return True

    def _append_end(
        self, claim: RunClaim, run_id: str, end: JournalEnd, tail: tuple[int, str] | None
    ) -> None:
        last_seq = 0 if tail is None else tail[0]
        if tail is not None and tail[1] != EntryState.FINISHED.value:
            raise StoreError(f"run {run_id!r}: the end marker follows a finished entry only")
        if end.entries != last_seq:
            raise StoreError(
                f"run {run_id!r}: the end marker covers {end.entries} entries, the store "
                f"holds {last_seq}"
            )
        seq = last_seq + 1
        written_at = time.time()
        payload = self._seal(stored_json(end.to_wire()),
                             sealed_context("end", run_id, seq, written_at))
        self._put_entry(run_id, seq, _END, payload, None, claim.token, written_at, replace=False)
        self._tails[claim.token] = (seq, _END)
        self.summarize(run_id)

    def add_feedback(
        self, run_id: str, feedback: Feedback, *, claim: RunClaim | None = None
    ) -> None:
        """Append a feedback record (see :func:`record_feedback` for the checked way).

        The write happens under the run's claim: ``claim`` when the caller
        holds it (it read the chain head under it), or a claim this store
        object already holds on the run (a wrapper store passing the call
        on); else the store claims the run for the write, waiting up to a
        minute for a writer that holds it (:class:`RunClaimedError` after
        that). A sealed feedback is bound to its place among the run's
        feedback, counted under that claim and this object's claims mutex.
        """
        _check_run_id(run_id)
        if claim is not None and claim.run_id != run_id:
            raise StoreError(f"run {run_id!r}: the claim is for run {claim.run_id!r}")
        with self._claims_mutex:
            if claim is not None:
                self._check_claim(claim)
            if claim is not None or any(held == run_id for held, _ in self._held.values()):
                self._put_feedback_claimed(run_id, feedback)
                return
        with wait_for_claim(self, run_id) as own:
            self.add_feedback(run_id, feedback, claim=own)

    def _put_feedback_claimed(self, run_id: str, feedback: Feedback) -> None:
        recorded_at = float(feedback.recorded_at or time.time())
        raw = self._get_run(run_id)
        if raw is None:
            raise StoreError(f"run {run_id!r}: not in the store")
        context = sealed_context("feedback", run_id, len(raw.feedback) + 1, recorded_at)
        self._put_feedback(run_id, self._seal(feedback_to_json(feedback), context), recorded_at)

    # --- reading --------------------------------------------------------------

    def load(self, run_id: str) -> StoredRun | None:
        """The run's journal as stored (None when the store never saw it).

        Every payload is decoded and checked strictly: an entry whose text
        disagrees with its record's ``seq`` or ``state``, a run record whose
        ``session_id`` or ``format`` is not its request's, a payload that does
        not decode (another key; a sealed row moved, copied or relabelled), a
        request that does not load are :class:`StoreError`\\ s naming the
        run; a torn record was never written. A listing shows such a run as
        ``invalid`` with that reason (:func:`~diagnosis_core.stores.session_report`).
        """
        _check_run_id(run_id)
        raw = self._get_run(run_id)
        if raw is None:
            return None
        return self._decode(raw)

    def _decode(self, raw: RawRun) -> StoredRun:

        where = f"run {raw.run_id!r}"
        context = sealed_context("run", raw.run_id, raw.session_id, raw.format, raw.created_at)
        header = self._unseal(raw.payload, context, where)
        empty = _journal_of(raw.format, header, where)
        if empty.request.run.run_id != raw.run_id:
            raise StoreError(f"{where}: the stored request is run {empty.request.run.run_id!r}")
        if empty.request.run.session_id != raw.session_id:
            raise StoreError(f"{where}: the record's session_id is not the stored request's")
        if empty.format != raw.format:
            raise StoreError(f"{where}: the record's format is not the stored request's")
        entry_type = type(empty)._entry_type
        entries: list[Any] = []
        end: JournalEnd | None = None
        records = raw.entries
        if records and records[-1].state == _END:
            record = records[-1]
            place = f"{where} end"
            context = sealed_context("end", raw.run_id, record.seq, record.written_at)
            text = self._unseal(record.payload, context, place)
            try:
                end = JournalEnd.load(loads_stored(text))
            except (JournalError, PayloadError) as error:
                raise StoreError(f"{place}: {error}") from None
            records = records[:-1]
        texts: list[tuple[EntryRecord, str]] = []
        for record in records:
            place = f"{where} entry {record.seq}"
            if record.state == _END:
                raise StoreError(f"{place}: an end marker before the last entry")
            if record.delta:
                base = texts[-1] if texts else None
                if base is None or base[0].seq != record.seq or base[0].state != "started":
                    raise StoreError(f"{place}: tool calls for an entry that is not started")
                context = sealed_context(TOOLS, raw.run_id, record.seq, record.state,
                                         record.duration_ms, record.written_at)
                delta = self._unseal(record.payload, context, place)
                merged = attrs.evolve(base[0], state=record.state, duration_ms=record.duration_ms,
                                      written_at=record.written_at)
                texts[-1] = (merged, _apply_delta(base[1], delta, place))
                continue
            context = sealed_context("entry", raw.run_id, record.seq, record.state,
                                     record.duration_ms, record.written_at)
            text = self._unseal(record.payload, context, place)
            texts.append((record, text))
        records = tuple(record for record, _ in texts)
        for record, text in texts:
            place = f"{where} entry {record.seq}"
            try:
                entry = entry_from_json(text, entry_type, format=raw.format)
            except JournalError as error:
                raise StoreError(f"{place}: {error}") from None
            if entry.seq != record.seq or entry.state.value != record.state:
                raise StoreError(f"{place}: the entry says seq {entry.seq} {entry.state.value}")
            entries.append(entry)
        feedback = self.decode_feedback(raw.run_id, raw.feedback)
        try:
            journal = type(empty)(
                empty.request, tuple(entries), format=empty.format, end=end
            )
        except JournalError as error:  # pragma: no cover - entries are typed above
            raise StoreError(f"{where}: {error}") from None
        return StoredRun(
            run_id=raw.run_id,
            session_id=raw.session_id,
            format=raw.format,
            created_at=raw.created_at,
            journal=journal,
            durations=tuple(record.duration_ms for record in records),
            written_at=tuple(record.written_at for record in records),
            feedback=tuple(feedback),
        )

    def decode_feedback(
        self, run_id: str, rows: Sequence[tuple[str, float]]
    ) -> tuple[Feedback, ...]:
        """A run's feedback records decoded, each bound to its place among them."""
        feedback = []
        for index, (payload, recorded_at) in enumerate(rows):
            place = f"run {run_id!r} feedback {index + 1}"
            context = sealed_context("feedback", run_id, index + 1, recorded_at)
            text = self._unseal(payload, context, place)
            feedback.append(attrs.evolve(feedback_from_json(text, place), recorded_at=recorded_at))
        return tuple(feedback)

    # --- summaries ------------------------------------------------------------

    def summarize(self, run_id: str) -> bool:
        """Store the derived summary of an ended run (spec §16); True when one is stored.

        Called when the run's end marker is written, and by a report that
        found an ended run without one (stores older than summaries). The
        summary is what :func:`~diagnosis_core.stores.run_digest` computes
        from the journal as stored; nothing is written for a run that has
        not ended, does not load or does not fold, or when the store cannot
        be written (read-only): a report then folds the journal itself.
        """
        if not self.summaries_writable():
            return False
        try:
            stored = self.load(run_id)
            digest = None if stored is None else run_digest(stored)
            if stored is None or digest is None:
                return False
            self.put_summary(stored, digest)
        except (StoreError, JournalError, PayloadError):
            return False
        return True

    def put_summary(self, stored: StoredRun, digest: Any) -> None:
        """Write ``digest`` (a :class:`RunDigest` of ``stored``) as the run's summary.

        A sealed store seals it, bound to the run's clear columns
        (:func:`summary_context`), and gives SQL no clear column of it; a
        plain store also gives SQL its :class:`DigestColumns`. A run that has
        a summary keeps it (a summary of an ended run never changes).
        """
        fingerprint = self._fingerprint(stored.run_id)
        context = summary_context(stored.run_id, stored.session_id, stored.format,
                                  stored.created_at, fingerprint)
        payload = self._seal(digest_to_json(digest), context)
        if self._codec is not None:  # nothing in the clear that the journal seals
            self._put_summary(stored.run_id, stored.created_at, payload, None, None,
                              fingerprint)
        else:
            self._put_summary(stored.run_id, stored.created_at, payload,
                              digest_columns(digest.story), digest.last_mac, fingerprint)

    def decode_summary(
        self, run_id: str, session_id: str, format: str, created_at: float, payload: str,
        fingerprint: str | None = None,
    ) -> Any:
        """A stored summary decoded and checked (a :class:`RunDigest`), else :class:`StoreError`."""
        where = f"run {run_id!r} summary"
        if self._codec is None and not payload.startswith(_SEALED_PREFIX):
            text = payload  # what _unseal gives, without building the context it ignores
        else:
            context = summary_context(run_id, session_id, format, created_at, fingerprint)
            text = self._unseal(payload, context, where)
        try:
            digest = digest_from_json(text)
        except PayloadError as error:
            raise StoreError(f"{where}: {error}") from None
        if digest.story.run_id != run_id or digest.story.session_id != session_id:
            raise StoreError(f"{where}: it tells another run")
        return digest

    def summary_rows(
        self, *, session_id: str | None = None, since: float | None = None
    ) -> list[SummaryRow]:
        """Every listed run with its stored summary (or None), in the order of :meth:`runs`."""
        if session_id is not None and not isinstance(session_id, str):
            raise StoreError(f"session_id: expected a string, got {type(session_id).__name__}")
        return list(self._list_summaries(session_id, check_since(since)))

    def feedback_rows(
        self, *, session_id: str | None = None, since: float | None = None
    ) -> dict[str, list[tuple[str, float]]]:
        """The stored feedback records of the listed runs, by run, in the order recorded."""
        return self._list_feedback(session_id, check_since(since))

    def has_codec(self) -> bool:
        """Whether this store seals its payloads (a :class:`PayloadCodec`)."""
        return self._codec is not None

    def summaries_writable(self) -> bool:
        """Whether this store object may write summaries (not a read-only store)."""
        return True

    def _fingerprint(self, run_id: str) -> str | None:
        """What binds a summary to the run's records as they are (JSON Lines); None elsewhere."""
        return None

    def _list_summaries(
        self, session_id: str | None, since: float | None
    ) -> Sequence[SummaryRow]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _list_feedback(
        self, session_id: str | None, since: float | None
    ) -> dict[str, list[tuple[str, float]]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _put_summary(  # pragma: no cover - abstract
        self, run_id: str, created_at: float, payload: str, columns: Any, last_mac: str | None,
        fingerprint: str | None,
    ) -> None:
        raise NotImplementedError

    def runs(
        self, *, session_id: str | None = None, since: float | None = None
    ) -> tuple[RunSummary, ...]:
        """The stored runs in the order the store first saw them; filtered by session and time.

        ``since`` is seconds since the epoch, a finite number: runs first
        stored at or after it (NaN or an infinity is a :class:`StoreError`, so
        every store gives one answer).
        """
        if session_id is not None and not isinstance(session_id, str):
            raise StoreError(f"session_id: expected a string, got {type(session_id).__name__}")
        since = check_since(since)
        return tuple(self._list_runs(session_id, since))

    def iter_runs(
        self, *, session_id: str | None = None, since: float | None = None
    ) -> Iterator[StoredRun]:
        """Every listed run, loaded (see :meth:`runs`)."""
        for summary in self.runs(session_id=session_id, since=since):
            stored = self.load(summary.run_id)
            if stored is not None:
                yield stored

    def __enter__(self) -> StoreBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what a backend supplies ---------------------------------------------

    def _acquire(self, run_id: str) -> object:  # pragma: no cover - abstract
        raise NotImplementedError

    def _release(self, run_id: str, handle: object) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _put_run(  # pragma: no cover - abstract
        self, run_id: str, session_id: str, format: str, payload: str, created_at: float
    ) -> None:
        raise NotImplementedError

    def _put_entry(  # pragma: no cover - abstract
        self, run_id: str, seq: int, state: str, payload: str, duration_ms: float | None,
        token: str, written_at: float, *, replace: bool,
    ) -> None:
        raise NotImplementedError

    def _last_entry(self, run_id: str) -> tuple[int, str] | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _get_run(self, run_id: str) -> RawRun | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _list_runs(  # pragma: no cover - abstract
        self, session_id: str | None, since: float | None
    ) -> Sequence[RunSummary]:
        raise NotImplementedError

    def _put_feedback(  # pragma: no cover - abstract
        self, run_id: str, payload: str, recorded_at: float
    ) -> None:
        raise NotImplementedError

    def _put_tools(  # pragma: no cover - abstract
        self, run_id: str, seq: int, state: str, payload: str, duration_ms: float | None,
        token: str, written_at: float,
    ) -> None:
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - abstract
        """Release every claim and close the connection or file."""
        raise NotImplementedError


# --- tool records -------------------------------------------------------------------

_DELTA_KEYS = frozenset({"from", "tool_invocations", "set"})
_TOOL_KEY = "tool_invocations"


def _entry_delta(previous: str, text: str) -> str | None:
    """The tool record that turns entry text ``previous`` into ``text``, or None when none does.

    ``{"from": n, "tool_invocations": [...], "set": {...}}``: the tool calls
    after the first ``n`` (the ones ``previous`` lists), and every other field
    that ``text`` adds or changes. None when ``text`` drops a field or a tool
    call, when neither text lists a tool call (the entry is written whole),
    or unless :func:`_apply_delta` gives back ``text`` exactly.
    """
    try:
        before, after = loads_stored(previous), loads_stored(text)
    except PayloadError:  # pragma: no cover - the texts are the store's own
        return None
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None  # pragma: no cover - an entry is an object
    old = before.get(_TOOL_KEY) or []
    new = after.get(_TOOL_KEY) or []
    if not isinstance(old, list) or not isinstance(new, list) or not new:
        return None
    if len(new) < len(old) or set(before) - set(after):
        return None
    changed = {key: value for key, value in after.items()
               if key != _TOOL_KEY and (key not in before or before[key] != value)}
    encoded = stored_json({"from": len(old), _TOOL_KEY: new[len(old):], "set": changed})
    try:
        rebuilt = _apply_delta(previous, encoded, "tool record")
    except StoreError:  # pragma: no cover - a delta of the store's own making applies
        return None
    return encoded if rebuilt == text else None


def _apply_delta(base: str, delta: str, where: str) -> str:
    """Entry text ``base`` with a tool record's calls appended and its fields set."""
    try:
        entry, added = loads_stored(base), loads_stored(delta)
    except PayloadError as error:
        raise StoreError(f"{where}: the tool record is not valid: {error}") from None
    if not isinstance(entry, dict) or not isinstance(added, dict):
        raise StoreError(f"{where}: the tool record is not valid: expected objects")
    tools = entry.get(_TOOL_KEY) or []
    calls, start, fields = added.get(_TOOL_KEY), added.get("from"), added.get("set")
    if (set(added) != _DELTA_KEYS or not isinstance(tools, list) or not isinstance(calls, list)
            or not isinstance(fields, dict) or type(start) is not int or _TOOL_KEY in fields):
        raise StoreError(f"{where}: the tool record is not valid")
    if start != len(tools):
        raise StoreError(
            f"{where}: the tool record follows {start} tool calls, the entry has {len(tools)}"
        )
    entry.update(fields)
    entry[_TOOL_KEY] = [*tools, *calls]
    return stored_json(entry)
