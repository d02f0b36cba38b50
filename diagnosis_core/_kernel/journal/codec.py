"""The run journal's values and its wire forms ``diagnosis_journal_v2`` and ``_v1`` (spec §12).

A journal holds *facts* only: the request, and for every effect the call the
machine asked for and what came back (an agent's text or error, the
gatekeeper's raw result or error, the tools the executor ran). It never holds
a conclusion — no verdict, no trusted binding, no counter — so whatever a
stored journal says goes through the same parsers and projections as a live
reply when it is folded (``fold.py``).

Loading is strict, like a scenario's (spec §9): unknown keys, wrong types, a
``started`` entry with an outcome, an outcome that does not fit the call are
each a :class:`JournalError` naming the path (``entries[3].outcome: expected
"text" or "error"``). JSON text is read with the package's strict JSON layer
(duplicate keys, ``NaN``, over-long integers refused) and written as
canonical JSON (§6.6) in which a lone surrogate — an exception message may
carry one — is written as a ``\\uXXXX`` escape, so the text is always valid
UTF-8 and the fact comes back unchanged.

The recorded values themselves (the entry state, the agent and gatekeeper
outcomes, the tool calls) are in ``recorded.py``, the public part of the
journal's values; this module re-exports them with the codec that reads and
writes them.

Both workflows share this form (spec §12): the entry and journal classes here
are generic bases (:class:`JournalEntryBase`, :class:`JournalBase`) that a
workflow narrows with its descriptor (``_kernel/journal/workflow.py``; what the
codec reads of it is :class:`WireForm`). Each
workflow defines its journal in its own package: the chat diagnosis journal
(``diagnosis_journal_v2``, still reading ``_v1``) in ``_chat/journal.py``, the
AIOps one in ``_aiops/journal.py``. Nothing here knows either workflow.

Two versions of the wire form are read; new journals are written in the
second (spec §12.2, §12.3, §12.4; ``docs/protocol.md``):

* ``…_v1``: as it was; loaded, folded, signed and replayed exactly as before.
* ``…_v2``: each entry's ``input_sha256`` is bound to the request
  (``mac.bound_input_sha256``), so entries recorded under another run never
  fold under this request; a ``started`` executor entry may carry the tool
  calls that finished so far; a gatekeeper entry may say ``"derived": true``
  (its result is re-derived from the recorded tool calls when folded); the
  document may end with ``"end": {"entries": n, "mac"?}``, the end marker
  (:class:`JournalEnd`). With a key, ``started`` and ``finished`` entries and
  the end marker are signed in separate domains (``mac.py``).
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import attrs

from ..enums import FailureKind
from ..errors import JournalError, PayloadError
from ..tools.ledger import ToolInvocation
from ..wire.json import (
    JsonValue,
    canonical_json,
    describe_value,
    escape_surrogates,
    json_type_name,
    loads_stored,
    stored_json,
    stored_json_with,
)
from . import recorded
from .recorded import *  # noqa: F403  (re-exported: its ``__all__`` is added below)
from .recorded import (
    EntryState,
    JournalOutcome,
    RecordedAgentError,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedReply,
    RecordedToolError,
    RecordedToolInvocation,
    checked_duration,
)

__all__ = [
    "CanonicalForm",
    "JournalBase",
    "JournalEnd",
    "JournalEntryBase",
    "WireForm",
    "canonical_form",
    "end_text",
    "entry_text",
    "entry_to_wire",
    "escape_surrogates",
    "is_v1",
    "journal_to_json",
    "journal_to_wire",
    "load_outcome",
    "load_stored_text",
    "outcome_to_wire",
    "recorded_tool_invocations",
    "request_digest",
    "request_object",
    "request_text",
    "stored_json",
    "tool_invocation_from_record",
]
__all__ += recorded.__all__

_KIND_WIRE = {
    FailureKind.RETRYABLE: "retryable",
    FailureKind.NON_RETRYABLE: "non_retryable",
    FailureKind.TOOL_BLOCKED: "tool_blocked",
}
_KIND_FROM_WIRE = {wire: kind for kind, wire in _KIND_WIRE.items()}
HEX64 = re.compile(r"[0-9a-f]{64}\Z")


_AGENT_OUTCOMES = (RecordedReply, RecordedAgentError)
_GATEKEEPER_OUTCOMES = (RecordedGatekeeperResult, RecordedGatekeeperError)


def _optional_invocations(
    value: Sequence[RecordedToolInvocation] | None,
) -> tuple[RecordedToolInvocation, ...] | None:
    return None if value is None else tuple(value)


C = TypeVar("C", bound=enum.StrEnum)
Q = TypeVar("Q")
E = TypeVar("E", bound="JournalEntryBase[Any]")


class WireForm(Protocol):
    """What the codec reads of a workflow's descriptor (``_kernel/journal/workflow.py``).

    A :class:`~diagnosis_core.machine.Workflow` is one: ``calls`` is the
    enumeration of call names, ``executor`` the one call whose entries may
    carry ``tool_invocations`` (it runs tools), ``gatekeeper`` the calls whose
    outcome is ``{"result"}`` / ``{"error": {"message"}}`` instead of an
    agent's ``{"text"}`` / ``{"error": {"kind", "message"}}``.
    ``request_to_wire`` and ``load_request`` convert the request
    (``load_request`` raises :class:`JournalError` with a path under
    ``request``). ``format`` is the form new journals are written in,
    ``v1_format`` the older one still read.
    """

    @property
    def format(self) -> str: ...

    @property
    def v1_format(self) -> str: ...

    @property
    def formats(self) -> tuple[str, str]: ...

    @property
    def calls(self) -> type[enum.StrEnum]: ...

    @property
    def executor(self) -> enum.StrEnum: ...

    @property
    def gatekeeper(self) -> frozenset[enum.StrEnum]: ...

    @property
    def request_type(self) -> type: ...

    @property
    def request_to_wire(self) -> Callable[[Any], dict[str, JsonValue]]: ...

    @property
    def load_request(self) -> Callable[[object], object]: ...


@attrs.frozen
class JournalEntryBase(Generic[C]):
    """One effect of a run: the call the machine asked for and, once finished, its outcome.

    The fields and checks every workflow's entry shares; a workflow's entry
    class narrows ``C`` (its call names) and sets ``_form``.
    ``input_sha256`` is the SHA-256 hex of the exact input the call was
    made with. A ``started`` entry has no outcome; a ``finished`` one has an
    outcome that fits the call. ``tool_invocations`` only ever appear on
    finished executor entries. ``mac`` is the optional HMAC chain link (see
    ``mac.py``). Construction raises :class:`JournalError`.
    """

    _form: ClassVar[WireForm]

    seq: int
    call: C
    round: int
    attempt: int
    input_sha256: str
    state: EntryState
    outcome: JournalOutcome | None = None
    tool_invocations: tuple[RecordedToolInvocation, ...] | None = attrs.field(
        default=None, converter=_optional_invocations
    )
    mac: str | None = None
    derived: bool = attrs.field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        form = type(self)._form
        for name in ("seq", "round", "attempt"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise JournalError(f"{name}: expected an integer >= 1, got {describe_value(value)}")
        if not isinstance(self.call, form.calls):
            raise JournalError(f"call: expected a {form.calls.__name__}, got {self.call!r}")
        if not isinstance(self.state, EntryState):
            raise JournalError(f"state: expected an EntryState, got {self.state!r}")
        if not isinstance(self.input_sha256, str) or not HEX64.match(self.input_sha256):
            raise JournalError("input_sha256: expected 64 lowercase hex digits")
        if self.mac is not None and (not isinstance(self.mac, str) or not HEX64.match(self.mac)):
            raise JournalError("mac: expected 64 lowercase hex digits")
        if type(self.derived) is not bool:
            raise JournalError(f"derived: expected a boolean, got {describe_value(self.derived)}")
        gatekeeper = self.call in form.gatekeeper
        if self.derived and not gatekeeper:
            raise JournalError("derived: only gatekeeper entries are derived")
        if self.tool_invocations is not None:
            if self.call is not form.executor:
                raise JournalError("tool_invocations: only executor entries carry them")
            for index, item in enumerate(self.tool_invocations):
                if not isinstance(item, RecordedToolInvocation):
                    raise JournalError(
                        f"tool_invocations[{index}]: expected a RecordedToolInvocation"
                    )
        if self.state is EntryState.STARTED:
            if self.outcome is not None:
                raise JournalError("outcome: a started entry has no outcome")
            return
        fits = _GATEKEEPER_OUTCOMES if gatekeeper else _AGENT_OUTCOMES
        if self.outcome is None:
            raise JournalError("outcome: missing (a finished entry has one)")
        if not isinstance(self.outcome, fits):
            expected = '"result" or "error"' if gatekeeper else '"text" or "error"'
            raise JournalError(f"outcome: expected {expected} for a {self.call.value} call")


def _entry_tuple(value: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen
class JournalEnd:
    """The end marker of a complete v2 journal (spec §12.2): it covers the entry count.

    Written once, after the run's last entry. ``mac`` is its HMAC under the
    host key (in the ``end`` domain, chained to the last entry's ``mac``);
    with a key, a journal without a valid end marker is incomplete whatever
    its last entry says. Wire form ``{"entries": n, "mac"?: hex}``.
    """

    entries: int
    mac: str | None = None

    def __attrs_post_init__(self) -> None:
        if type(self.entries) is not int or self.entries < 0:
            raise JournalError(
                f"end.entries: expected an integer >= 0, got {describe_value(self.entries)}"
            )
        if self.mac is not None and (not isinstance(self.mac, str) or not HEX64.match(self.mac)):
            raise JournalError("end.mac: expected 64 lowercase hex digits")

    @classmethod
    def load(cls, value: object) -> JournalEnd:
        """The end marker of its wire object (``{"entries": n, "mac"?}``), checked strictly."""
        data = _object(value, "end", frozenset({"entries", "mac"}))
        count = _field(data, "entries", "end")
        if type(count) is not int or count < 0:
            raise _fail("end.entries", f"expected an integer >= 0, got {describe_value(count)}")
        return cls(count, _field_hex(data, "mac", "end") if "mac" in data else None)

    def to_wire(self, *, with_mac: bool = True) -> dict[str, JsonValue]:
        """The wire object (``with_mac=False``: what its MAC is computed over)."""
        wire: dict[str, JsonValue] = {"entries": self.entries}
        if with_mac and self.mac is not None:
            wire["mac"] = self.mac
        return wire


def _default_format(journal: JournalBase[Any, Any]) -> str:
    return type(journal)._form.format


@attrs.frozen
class JournalBase(Generic[Q, E]):
    """The durable record of one run: the request and its entries in call order (spec §12).

    Shared by both workflows; a workflow's journal class narrows the request
    and entry types and sets ``_form``, ``_entry_type`` and ``_status_type`` (its
    status class: what ``journal_status`` of it returns). ``format`` is the
    wire version (the current one unless given; a loaded v1 journal keeps
    ``…_v1`` and is folded, signed and written by the v1 rules); ``end`` is
    the end marker of a complete v2 journal (:class:`JournalEnd`).
    """

    _form: ClassVar[WireForm]
    _entry_type: ClassVar[type[JournalEntryBase[Any]]]
    _status_type: ClassVar[type[Any]]

    request: Q
    entries: tuple[E, ...] = attrs.field(default=(), converter=_entry_tuple)
    end: JournalEnd | None = attrs.field(default=None, kw_only=True)
    format: str = attrs.field(
        default=attrs.Factory(_default_format, takes_self=True), kw_only=True
    )

    @classmethod
    def load(cls, data: object) -> Self:
        """Validate a journal document (plain JSON data) strictly; every problem names its path.

        This checks the *form* only; folding checks that the entries are the
        calls the run makes.
        """
        form = cls._form
        top = _object(data, "$", frozenset({"format", "request", "entries", "end"}))
        if "format" not in top:
            raise _fail("format", "missing")
        if top["format"] not in form.formats:
            shown = " or ".join(repr(item) for item in form.formats)
            raise _fail("format", f"expected {shown}, got {describe_value(top['format'])}")
        version = str(top["format"])
        v1 = version == form.v1_format
        if v1 and "end" in top:
            raise _fail("$", 'unknown key "end"')
        if "request" not in top:
            raise _fail("request", "missing")
        request: Any = form.load_request(top["request"])
        if "entries" not in top:
            raise _fail("entries", "missing")
        items = top["entries"]
        if not isinstance(items, list):
            raise _fail("entries", f"expected an array, got {json_type_name(items)}")
        entries = tuple(
            _load_entry(item, f"entries[{index}]", cls._entry_type, v1)
            for index, item in enumerate(items)
        )
        end = JournalEnd.load(top["end"]) if "end" in top else None
        return cls(request, entries, end=end, format=version)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse journal text strictly (``loads_stored``) and :meth:`load` it."""
        data = load_stored_text(text, lambda error: f"{error.path}: {error.problem}")
        return cls.load(data)

    @property
    def signed(self) -> bool:
        """Whether it was written with a key: any entry (or its end) carries a MAC."""
        return any(entry.mac is not None for entry in self.entries) or (
            self.end is not None and self.end.mac is not None
        )

    def _with_entries(self, entries: tuple[E, ...]) -> Self:
        """This journal with ``entries`` instead (checked as any journal's are).

        ``attrs.evolve`` spelt out: a recorder calls it twice per effect, and
        evolve reads the class's fields at every call.
        """
        return type(self)(self.request, entries, end=self.end, format=self.format)

    def __attrs_post_init__(self) -> None:
        entry_type = type(self)._entry_type
        for index, entry in enumerate(self.entries):
            if not isinstance(entry, entry_type):
                raise JournalError(f"entries[{index}]: expected a {entry_type.__name__}")
        form = type(self)._form
        request_type = form.request_type
        if not isinstance(self.request, request_type):
            raise TypeError(
                f"'request' must be {request_type!r} (got {self.request!r} that is a "
                f"{type(self.request)!r})."
            )
        if self.format not in form.formats:
            raise JournalError(
                f"format: expected one of {', '.join(map(repr, form.formats))}, "
                f"got {describe_value(self.format)}"
            )
        if self.end is not None and not isinstance(self.end, JournalEnd):
            raise JournalError(f"end: expected a JournalEnd, got {type(self.end).__name__}")
        if self.format == form.v1_format:
            _check_v1(self)


def load_stored_text(text: str, message: Callable[[PayloadError], str]) -> JsonValue:
    """``loads_stored(text)``; a :class:`JournalError` saying ``message(error)`` when it fails."""
    try:
        return loads_stored(text)
    except PayloadError as error:
        raise JournalError(message(error)) from None


def _check_v1(journal: JournalBase[Any, Any]) -> None:
    """What a v1 journal cannot hold: an end marker, derived entries, tools on a started entry."""
    if journal.end is not None:
        raise JournalError(f"end: a {journal.format} journal has no end marker")
    for index, entry in enumerate(journal.entries):
        if entry.derived:
            raise JournalError(f"entries[{index}].derived: not in a {journal.format} journal")
        if entry.state is EntryState.STARTED and entry.tool_invocations is not None:
            raise JournalError(f"entries[{index}].tool_invocations: a started entry has none")


def is_v1(journal: JournalBase[Any, Any]) -> bool:
    """True for a journal in its workflow's v1 wire form (no end marker, unbound hashes)."""
    return journal.format == type(journal)._form.v1_format


_DIGEST_CACHE_SIZE = 64
_requests: dict[int, tuple[object, object, str, str]] = {}
"""``id(request)`` → ``(request, form, text, digest)`` of the last requests written.

Every v2 entry built or checked binds the request digest (spec §12.2), and
a signed journal's chain is seeded with the HMAC of the request's text; a
run's journals share one request value (``attrs.evolve`` keeps it), so the
canonical JSON and SHA-256 of the whole request are computed once per
request, not once per entry. Keyed on identity, not equality (two equal
requests may still differ on the wire, e.g. ``1`` and ``1.0``); the entry
holds the request itself, so its ``id`` cannot be reused while cached. A
request is deeply immutable (frozen attrs, tuples, read-only mappings), so
a cached text never goes stale.
"""


def _request(journal: JournalBase[Any, Any]) -> tuple[object, object, str, str]:
    request = journal.request
    form = type(journal)._form
    found = _requests.get(id(request))
    if found is not None and found[0] is request and found[1] is form:
        return found
    text = stored_json(form.request_to_wire(request))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if len(_requests) >= _DIGEST_CACHE_SIZE:
        _requests.clear()
    made = _requests[id(request)] = (request, form, text, digest)
    return made


def request_text(journal: JournalBase[Any, Any]) -> str:
    """The request's canonical JSON (:func:`stored_json`): what the chain's seed signs."""
    return _request(journal)[2]


def request_digest(journal: JournalBase[Any, Any]) -> str:
    """SHA-256 hex of the UTF-8 bytes of the request's canonical JSON (:func:`stored_json`)."""
    return _request(journal)[3]


_RUN_KEYS = ("run_id", "session_id")


def request_object(
    value: object, keys: frozenset[str], required: Sequence[str]
) -> Mapping[str, object]:
    """A journal's ``request`` object: only ``keys``, ``required`` ones and ``run``'s ids present.

    The written request always has them; the scenario loaders that build the
    request would otherwise fill them with defaults.
    """
    data = _object(value, "request", keys)
    for key in required:
        if data.get(key) is None:
            raise _fail(f"request.{key}", "missing")
    run = data.get("run")
    if isinstance(run, dict):
        for key in _RUN_KEYS:
            if run.get(key) is None:
                raise _fail(f"request.run.{key}", "missing")
    return data


# --- to the wire --------------------------------------------------------------------


def recorded_tool_invocations(
    records: Iterable[ToolInvocation],
) -> tuple[RecordedToolInvocation, ...]:
    """The journal form of a tool recorder's records (what an executor entry carries).

    ``records`` are :class:`~diagnosis_core.tools.ToolCallRecord`\\ s, e.g.
    ``ToolRecorder.since(mark)``; each becomes the same §13 ledger entry, read
    from its wire record as a journal's are (:func:`tool_invocation_from_record`).
    """
    return tuple(
        tool_invocation_from_record(record.to_record(), "tool_invocations") for record in records
    )


def outcome_to_wire(outcome: JournalOutcome) -> dict[str, JsonValue]:
    """One recorded outcome as an entry's ``outcome`` object (``text``, ``error`` or ``result``).

    For an engine adapter that carries an effect's facts between processes
    (a Temporal activity result) in the journal's own wire form.
    """
    if isinstance(outcome, RecordedReply):
        return {"text": outcome.text}
    if isinstance(outcome, RecordedAgentError):
        return {"error": {"kind": _KIND_WIRE[outcome.kind], "message": outcome.message}}
    if isinstance(outcome, RecordedGatekeeperResult):
        return {"result": outcome.result}
    return {"error": {"message": outcome.message}}


def entry_to_wire(entry: JournalEntryBase[Any], *, with_mac: bool = True) -> dict[str, JsonValue]:
    """One entry's wire object; ``with_mac=False`` gives the object its MAC is computed over."""
    wire: dict[str, JsonValue] = {
        "seq": entry.seq,
        "call": entry.call.value,
        "round": entry.round,
        "attempt": entry.attempt,
        "input_sha256": entry.input_sha256,
        "state": entry.state.value,
    }
    if entry.outcome is not None:
        wire["outcome"] = outcome_to_wire(entry.outcome)
    if entry.tool_invocations is not None:
        wire["tool_invocations"] = [item.to_record() for item in entry.tool_invocations]
    if entry.derived:
        wire["derived"] = True
    if with_mac and entry.mac is not None:
        wire["mac"] = entry.mac
    return wire


# --- the canonical text a MAC covers (spec §12) ----------------------------------------

# Stands for a gatekeeper result in an entry's wire object; its recorded text is spliced in.
_RESULT_SLOT = "\x00result\x00"


def _signed_wire(entry: JournalEntryBase[Any]) -> tuple[dict[str, JsonValue], str | None]:
    """The entry's wire object without ``mac``, and the gatekeeper result to splice into it.

    A gatekeeper result is written as its recorded canonical JSON
    (:func:`stored_json_with`) instead of being decoded and encoded again: it
    can be large, and it is already canonical.
    """
    outcome = entry.outcome
    if not isinstance(outcome, RecordedGatekeeperResult):
        return entry_to_wire(entry, with_mac=False), None
    slotted = attrs.evolve(entry, outcome=RecordedGatekeeperError(_RESULT_SLOT))
    wire = entry_to_wire(slotted, with_mac=False)
    wire["outcome"] = {"result": _RESULT_SLOT}
    return wire, outcome.result_json


def _started_forms(entry: JournalEntryBase[Any]) -> list[JournalEntryBase[Any]]:
    """``entry`` as it was while ``started``: one form per tool-call prefix (spec §12.3)."""
    tools = entry.tool_invocations or ()
    prefixes = [None, *(tools[:count] for count in range(1, len(tools) + 1))]
    return [
        attrs.evolve(
            entry, state=EntryState.STARTED, outcome=None, tool_invocations=prefix, mac=None
        )
        for prefix in prefixes
    ]


def _written(wire: dict[str, JsonValue], result: str | None) -> str:
    """A wire object from :func:`_signed_wire` as text, its gatekeeper result spliced in."""
    return stored_json(wire) if result is None else stored_json_with(wire, _RESULT_SLOT, result)


def entry_text(entry: JournalEntryBase[Any]) -> str:
    """The entry's canonical JSON without ``mac``: what its MAC is computed over."""
    return _written(*_signed_wire(entry))


def end_text(end: JournalEnd) -> str:
    """The end marker's canonical JSON without ``mac``: what its MAC is computed over."""
    return stored_json(end.to_wire(with_mac=False))


@attrs.frozen
class CanonicalForm:
    """A journal's canonical text, computed once: what its MACs and its entries' hashes cover.

    ``request_sha256`` binds a v2 entry's input hash (``mac.bound_input_sha256``);
    ``request`` is the text the chain's seed signs, ``entries`` each entry's
    text without ``mac`` (:func:`entry_text`), ``end`` the end marker's (None
    without one). ``started`` holds the texts the entry a head points at had
    while it was ``started`` (one per tool-call prefix, spec §12.3), when a head
    is checked. An unsigned fold asks for the digest alone: the texts are then empty.
    """

    request_sha256: str
    request: str = ""
    entries: tuple[str, ...] = ()
    end: str | None = None
    started: tuple[str, ...] = ()


def canonical_form(
    journal: JournalBase[Any, Any], *, signed: bool, head_entries: int | None = None
) -> CanonicalForm:
    """The canonical texts of ``journal`` (all of them when ``signed``, else the digest alone).

    ``head_entries`` is the entry count a head commits to: the started forms of
    the entry at that position are added (when the journal has it). Every wire
    object is built first, then written, each once.
    """
    _, _, request, digest = _request(journal)
    if not signed:
        return CanonicalForm(digest)
    entries = journal.entries
    wires = [_signed_wire(entry) for entry in entries]
    started = []
    if head_entries is not None and 0 < head_entries <= len(entries):
        started = [_signed_wire(form) for form in _started_forms(entries[head_entries - 1])]
    end = journal.end
    end_wire = None if end is None else end.to_wire(with_mac=False)
    return CanonicalForm(
        digest,
        request,
        tuple(_written(*pair) for pair in wires),
        None if end_wire is None else stored_json(end_wire),
        tuple(_written(*pair) for pair in started),
    )


def journal_to_wire(journal: JournalBase[Any, Any]) -> dict[str, JsonValue]:
    """The whole journal as plain JSON data (``format``, ``request``, ``entries``, ``end``?)."""
    form = type(journal)._form
    wire: dict[str, JsonValue] = {
        "format": journal.format,
        "request": form.request_to_wire(journal.request),
        "entries": [entry_to_wire(entry) for entry in journal.entries],
    }
    if journal.end is not None:
        wire["end"] = journal.end.to_wire()
    return wire


def journal_to_json(journal: JournalBase[Any, Any]) -> str:
    """The journal as canonical JSON text (surrogates escaped, see :func:`stored_json`)."""
    return stored_json(journal_to_wire(journal))


# --- from the wire ------------------------------------------------------------------


def _fail(path: str, problem: str) -> JournalError:
    return JournalError(f"{path}: {problem}")


def _object(value: object, path: str, keys: frozenset[str]) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected an object, got {json_type_name(value)}")
    for key in value:
        if key not in keys:
            raise _fail(path, f"unknown key {describe_value(key)}")
    return value


def _field(data: Mapping[str, object], key: str, path: str) -> object:
    if key not in data:
        raise _fail(f"{path}.{key}", "missing")
    return data[key]


def _field_str(data: Mapping[str, object], key: str, path: str) -> str:
    value = _field(data, key, path)
    if not isinstance(value, str):
        raise _fail(f"{path}.{key}", f"expected a string, got {json_type_name(value)}")
    return value


def _field_int(data: Mapping[str, object], key: str, path: str) -> int:
    value = _field(data, key, path)
    if type(value) is not int:
        raise _fail(f"{path}.{key}", f"expected an integer, got {json_type_name(value)}")
    if value < 1:
        raise _fail(f"{path}.{key}", f"expected an integer >= 1, got {describe_value(value)}")
    return value


def _field_hex(data: Mapping[str, object], key: str, path: str) -> str:
    """A digest or a MAC: SHA-256 written as the journal writes it, 64 lowercase hex digits."""
    value = _field_str(data, key, path)
    if not HEX64.match(value):
        raise _fail(f"{path}.{key}", "expected 64 lowercase hex digits")
    return value


def _field_enum(data: Mapping[str, object], key: str, path: str, allowed: Sequence[str]) -> str:
    value = _field_str(data, key, path)
    if value not in allowed:
        shown = ", ".join(repr(item) for item in allowed)
        raise _fail(f"{path}.{key}", f"expected one of {shown}, got {describe_value(value)}")
    return value


def load_outcome(value: object, path: str, *, gatekeeper: bool) -> JournalOutcome:
    """Read an entry's ``outcome`` object strictly; a :class:`JournalError` naming ``path`` else.

    ``gatekeeper`` says which outcomes fit: ``{"result"}`` / ``{"error":
    {"message"}}`` for a gatekeeper call, ``{"text"}`` / ``{"error": {"kind",
    "message"}}`` for an agent's. The reverse of :func:`outcome_to_wire`.
    """
    first = "result" if gatekeeper else "text"
    data = _object(value, path, frozenset({first, "error"}))
    if (first in data) == ("error" in data):
        raise _fail(path, f'expected "{first}" or "error"')
    if gatekeeper and "result" in data:
        return RecordedGatekeeperResult(canonical_json(data["result"]))
    if "text" in data:
        return RecordedReply(_field_str(data, "text", path))
    error_path = f"{path}.error"
    keys = frozenset({"message"}) if gatekeeper else frozenset({"kind", "message"})
    error = _object(data["error"], error_path, keys)
    message = _field_str(error, "message", error_path)
    if gatekeeper:
        return RecordedGatekeeperError(message)
    kind = _field_enum(error, "kind", error_path, list(_KIND_FROM_WIRE))
    return RecordedAgentError(_KIND_FROM_WIRE[kind], message)


_TOOL_KEYS = frozenset(
    {"invocation_id", "tool_name", "success", "output", "input", "error", "duration_ms"}
)


def tool_invocation_from_record(record: object, path: str) -> RecordedToolInvocation:
    """A §13 ledger record (plain JSON) as a :class:`RecordedToolInvocation`, strictly."""
    data = _object(record, path, _TOOL_KEYS)
    invocation_id = _field_str(data, "invocation_id", path)
    tool_name = _field_str(data, "tool_name", path)
    success = _field(data, "success", path)
    if not isinstance(success, bool):
        raise _fail(f"{path}.success", f"expected a boolean, got {json_type_name(success)}")
    output = _field(data, "output", path)
    error = None
    if data.get("error") is not None:
        error_data = _object(data["error"], f"{path}.error", frozenset({"type", "message"}))
        error = RecordedToolError(
            _field_str(error_data, "type", f"{path}.error"),
            _field_str(error_data, "message", f"{path}.error"),
        )
    try:
        duration = checked_duration(data.get("duration_ms"))
    except JournalError as problem:
        raise _fail(path, str(problem)) from None
    return RecordedToolInvocation(
        invocation_id=invocation_id,
        tool_name=tool_name,
        success=success,
        output_json=canonical_json(output),
        input_json=canonical_json(data["input"]) if data.get("input") is not None else None,
        error=error,
        duration_ms=duration,
    )


_ENTRY_KEYS = frozenset(
    {"seq", "call", "round", "attempt", "input_sha256", "state", "outcome", "tool_invocations",
     "mac"}
)
_ENTRY_KEYS_V2 = _ENTRY_KEYS | {"derived"}


def _load_entry(value: object, path: str, entry_type: type[E], v1: bool = True) -> E:
    form = entry_type._form
    data = _object(value, path, _ENTRY_KEYS if v1 else _ENTRY_KEYS_V2)
    seq = _field_int(data, "seq", path)
    call = form.calls(_field_enum(data, "call", path, [member.value for member in form.calls]))
    round = _field_int(data, "round", path)
    attempt = _field_int(data, "attempt", path)
    digest = _field_hex(data, "input_sha256", path)
    state = EntryState(_field_enum(data, "state", path, [member.value for member in EntryState]))
    mac = _field_hex(data, "mac", path) if "mac" in data else None
    derived = False
    if "derived" in data:
        if data["derived"] is not True:
            raise _fail(f"{path}.derived", f"expected true, got {describe_value(data['derived'])}")
        if call not in form.gatekeeper:
            raise _fail(f"{path}.derived", "only gatekeeper entries are derived")
        derived = True
    outcome = None
    if state is EntryState.STARTED:
        # v2: a started executor entry lists the tool calls finished so far (spec §12.3)
        for key in ("outcome", "tool_invocations") if v1 else ("outcome",):
            if key in data:
                raise _fail(f"{path}.{key}", "a started entry has none")
    else:
        if "outcome" not in data:
            raise _fail(f"{path}.outcome", "missing (a finished entry has one)")
        gatekeeper = call in form.gatekeeper
        outcome = load_outcome(data["outcome"], f"{path}.outcome", gatekeeper=gatekeeper)
    invocations = None
    if "tool_invocations" in data:
        if call is not form.executor:
            raise _fail(f"{path}.tool_invocations", "only executor entries carry them")
        items = data["tool_invocations"]
        if not isinstance(items, list):
            problem = f"expected an array, got {json_type_name(items)}"
            raise _fail(f"{path}.tool_invocations", problem)
        invocations = tuple(
            tool_invocation_from_record(item, f"{path}.tool_invocations[{index}]")
            for index, item in enumerate(items)
        )
    # Every rule of the entry is checked above, so this names no other problem.
    return entry_type(
        seq, call, round, attempt, digest, state, outcome, invocations, mac, derived=derived
    )

