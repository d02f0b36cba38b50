"""Derived summaries: what a report needs of an ended run, kept beside its journal (spec §16).

When a run reaches its end, its store keeps a :class:`RunDigest`: the run's
story (:class:`RunStory`, without feedback) and the head of its MAC chain,
computed by :func:`run_digest` — a pure function of the stored journal, so
any reader can compute it again from the journal and compare
(:func:`verify_summaries`). From the digest, :func:`digest_columns` derives
the flat values the SQL stores keep in columns so that SQL can aggregate
them (outcome, reason code, gatekeeper statuses, evidence retry, fallback,
tool calls and failures, the latency of every finished call).

A summary is derived, never trusted: the session and fleet reports read
it instead of folding the journal, and ``--verify`` folds every journal and
lists every run whose summary disagrees. Feedback is not in the summary: it
is read, decoded and checked (its MAC chain, with a key) from its own records
each time, so a feedback recorded after the summary is always counted.

:class:`FleetTally` is the fleet report's arithmetic over stories; the SQL
stores fill the same tally from their columns.

A report reads one digest per ended run, so reading one is its cost:
:func:`digest_from_json` builds the digest's values while the strict parser
reads the text (the digest reader below), and leaves any text it does not
take to the converter; a large report is built with the cyclic collector
paused (:func:`paused_gc`).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import gc
import math
import re
import threading
import types
import typing
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import attrs

from .._chat.trace import GatekeeperAudit, RawResult
from .._kernel.errors import PayloadError
from .._kernel.wire.codegen import slot_setters
from .._kernel.wire.converter import from_json, from_json_object_text, to_json
from .._kernel.wire.json import (
    DuplicateKey,
    JsonValue,
    canonical_json,
    is_json_value_type,
    loads_strict_with_objects,
)
from ._reports import (
    AgentStep,
    EffectTiming,
    FeedbackItem,
    FeedbackTally,
    FleetReport,
    GatekeeperRates,
    LatencyTally,
    RunCounts,
    RunStory,
    StoryToolCall,
    StoryToolError,
    ToolTally,
    VerifierRow,
)

__all__ = [
    "DigestColumns",
    "FleetTally",
    "RunDigest",
    "SummaryMismatch",
    "digest_columns",
    "digest_from_json",
    "digest_to_json",
    "percentile",
]

GATEKEEPER_STATUSES = ("PASS", "LOW_CONFID", "REJECT")


@attrs.frozen
class RunDigest:
    """The summary of an ended run: its story without feedback, and its MAC chain's head.

    ``last_mac`` is the end marker's ``mac`` (or the last entry's): the link
    the run's first feedback is signed over, so feedback is verified with a
    key without loading the journal.
    """

    story: RunStory
    last_mac: str | None = None


@attrs.frozen
class DigestColumns:
    """The flat values of a digest that the SQL stores keep in columns and tables."""

    workflow: str
    outcome: str | None
    reason_code: str | None
    evidence_retry: bool
    fallback: bool
    audits: tuple[int, int, int]
    """Gatekeeper audits with status ``PASS``, ``LOW_CONFID``, ``REJECT``."""
    tools: tuple[tuple[str, int, int], ...]
    """``(tool_name, calls, failures)`` per tool, sorted by name."""
    latencies: tuple[tuple[str, float], ...]
    """``(call, duration_ms)`` per finished effect with a duration (AIOps calls ``aiops.``)."""


@attrs.frozen
class SummaryMismatch:
    """A run whose stored summary is not what its journal gives (``--verify``)."""

    run_id: str
    problem: str


def digest_to_json(digest: RunDigest) -> str:
    """The digest's stored text: its canonical JSON by the package's converter.

    Raises :class:`PayloadError` for a digest holding a string with a
    surrogate pair (a high surrogate directly before a low one), which JSON
    would read back as another text (spec §12.1). A journal never holds one
    (its facts are repaired or refused at the door), so neither does a digest
    derived from it; one built by hand is refused rather than stored changed.
    """
    text = to_json(digest)
    if "\\u" in text and _ESCAPED_PAIR.search(text) is not None:
        raise PayloadError("summary", "a string holding a surrogate pair JSON cannot store")
    return text


# The converter writes a surrogate code point as an escape (``\ud800``); an escaped high
# surrogate directly before an escaped low one is what JSON reads back as one character.
# The backslash opening the first escape is preceded by an even number of backslashes.
_ESCAPED_PAIR = re.compile(
    r"(?<!\\)(?:\\\\)*\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def digest_from_json(text: str) -> RunDigest:
    """A stored digest read back strictly; :class:`PayloadError` for anything else.

    One pass when it can: the digest reader below (a canonical text, as
    :func:`digest_to_json` writes it), else :func:`from_json_object_text`;
    the two-step path otherwise (a text neither takes, such as an escaped
    lone surrogate a tool's output may hold), which gives the same value or
    the exact error.
    """
    try:
        digest = _read_digest(text)
        if digest is None:
            digest = from_json_object_text(RunDigest, text)
    except PayloadError:
        digest = None
    if digest is None:
        digest = from_json(RunDigest, text)
    if digest.story.status != "complete" or digest.story.feedback:
        raise PayloadError("story", "a summary tells a complete run, without feedback")
    return digest


# --- reading a stored digest in one pass --------------------------------------------------
#
# A digest is stored as canonical JSON (keys sorted, every field written), so each of its
# objects has exactly one key order. The reader below builds every value of a digest while
# the strict parser reads it (``loads_strict_with_objects``: every rule of ``loads_strict``,
# duplicate keys included): an object whose keys are exactly one class's fields, in sorted
# order, and whose values pass that field's exact check, becomes an instance of the class;
# any other object stays a ``dict``. The result is used only when the root became a
# :class:`RunDigest` and the instances built number exactly those the digest holds in typed
# places: then none was built inside a JSON value (a tool's input or output that happens to
# have a class's keys), every JSON value is what the strict parser gives, and the digest is
# equal to what ``from_json_object_text`` gives, without its second walk over the objects and
# the JSON values. Anything else (another key order, a null for an empty list, a number
# written as an integer where a float is expected, an instance in a JSON value) leaves the
# result unused: the converter's path reads the text and decides, with its exact error.

_READER_CLASSES: tuple[type[Any], ...] = (
    RunDigest, RunStory, EffectTiming, StoryToolCall, StoryToolError, AgentStep,
    GatekeeperAudit, VerifierRow, FeedbackItem,
)


def _field_source(
    field_type: Any, var: str, tag: str, namespace: dict[str, Any]
) -> tuple[str, str] | None:
    """``(condition, value)`` source over ``var`` for one field, or None when not handled."""
    nullable = False
    origin = typing.get_origin(field_type)
    if origin is types.UnionType or origin is typing.Union:
        rest = tuple(arg for arg in typing.get_args(field_type) if arg is not type(None))
        if is_json_value_type(field_type):
            return "True", var  # any JSON value: the instance count decides
        if len(rest) != 1:
            return None
        nullable, field_type = True, rest[0]
    if field_type in (str, int, bool, float):
        namespace[f"_t{tag}"] = field_type
        condition, value = f"{var}.__class__ is _t{tag}", var
    elif field_type is RawResult:
        namespace["_RawResult"], namespace["_canonical"] = RawResult, canonical_json
        condition, value = "True", f"_RawResult(_canonical({var}))"
    elif typing.get_origin(field_type) is Literal and all(
        type(choice) is str for choice in typing.get_args(field_type)
    ):
        namespace[f"_l{tag}"] = frozenset(typing.get_args(field_type))
        condition, value = f"{var}.__class__ is str and {var} in _l{tag}", var
    elif isinstance(field_type, type) and issubclass(field_type, enum.Enum):
        members = {member.value: member for member in field_type}
        if not all(type(name) is str for name in members):
            return None
        namespace[f"_m{tag}"] = members
        condition, value = f"{var}.__class__ is str and {var} in _m{tag}", f"_m{tag}[{var}]"
    elif field_type in _READER_CLASSES:
        namespace[f"_t{tag}"] = field_type
        condition, value = f"{var}.__class__ is _t{tag}", var
    elif typing.get_origin(field_type) is tuple and len(typing.get_args(field_type)) == 2 \
            and typing.get_args(field_type)[1] is Ellipsis \
            and typing.get_args(field_type)[0] in (str, *_READER_CLASSES):
        namespace[f"_only{tag}"] = frozenset({typing.get_args(field_type)[0]})
        condition = f"{var}.__class__ is list and _only{tag}.issuperset(map(type, {var}))"
        value = f"tuple({var})"
    else:
        return None
    if nullable:
        condition = f"({var} is None or {condition})"
        value = var if value == var else f"(None if {var} is None else {value})"
    return condition, value


def _count_source(cl: type[Any], var: str) -> str:
    """Source counting the reader's classes ``var`` (an instance of ``cl``) holds, itself too."""
    hints = typing.get_type_hints(cl)
    parts = ["1"]
    for field in attrs.fields(cl):
        field_type = hints[field.name]
        args = typing.get_args(field_type)
        inner = [arg for arg in args if arg in _READER_CLASSES]
        if field_type in _READER_CLASSES:
            parts.append(_count_source(field_type, f"{var}.{field.name}"))
        elif typing.get_origin(field_type) is tuple and inner:
            nested = _count_source(inner[0], "x")
            parts.append(f"len({var}.{field.name})" if nested == "1" else
                         f"sum([{nested} for x in {var}.{field.name}])")
        elif inner:  # X | None
            nested = _count_source(inner[0], f"{var}.{field.name}")
            parts.append(f"(0 if {var}.{field.name} is None else {nested})")
    return " + ".join(parts)


@functools.cache
def _reader_code() -> tuple[types.CodeType, dict[str, Any]]:
    """The reader's ``object_pairs_hook`` and instance count, compiled once."""
    namespace: dict[str, Any] = {"_Duplicate": DuplicateKey}
    by_size: dict[int, list[str]] = {}
    for number, cl in enumerate(_READER_CLASSES):
        hints = typing.get_type_hints(cl)
        fields = sorted((field for field in attrs.fields(cl) if field.init),
                        key=lambda field: field.name)
        conditions: list[str] = []
        values: dict[str, str] = {}
        for index, field in enumerate(fields):
            source = _field_source(hints[field.name], f"v{index}", f"{number}_{index}",
                                   namespace)
            if source is None:
                raise TypeError(f"{cl.__name__}.{field.name}: a type the reader does not read")
            conditions.append(f"k{index} == {field.name!r}")
            if source[0] != "True":
                conditions.append(source[0])
            values[field.name] = source[1]
        namespace[f"_c{number}"] = cl
        setters = slot_setters(cast(Any, cl))
        if setters is None:
            arguments = ", ".join(
                f"{field.alias}={values[field.name]}" if field.kw_only else values[field.name]
                for field in attrs.fields(cl))
            construct = [f"            return _c{number}({arguments})"]
        else:  # what the generated __init__ stores, without its object.__setattr__ calls
            namespace["_new"] = object.__new__
            construct = [f"            _o = _new(_c{number})"]
            for position, (field, setter) in enumerate(
                    zip(attrs.fields(cl), setters, strict=True)):
                namespace[f"_s{number}_{position}"] = setter
                construct.append(f"            _s{number}_{position}(_o, {values[field.name]})")
            construct.append("            return _o")
        by_size.setdefault(len(fields), []).extend([
            f"        if {' and '.join(conditions)}:",
            "            _built[0] += 1",
            *construct,
        ])
    lines = ["def build(pairs):", "    n = len(pairs)"]
    keyword = "if"
    for size, body in sorted(by_size.items()):
        targets = ", ".join(f"(k{index}, v{index})" for index in range(size))
        lines += [f"    {keyword} n == {size}:", f"        ({targets},) = pairs", *body]
        keyword = "elif"
    lines += ["    obj = dict(pairs)", "    if len(obj) != n: raise _Duplicate", "    return obj",
              "", "def count(digest):", f"    return {_count_source(RunDigest, 'digest')}"]
    return compile("\n".join(lines) + "\n", "<stored digest reader>", "exec"), namespace


class _Reader:
    """One thread's reader: its hook, its instance count and whether it is reading."""

    def __init__(self) -> None:
        code, shared = _reader_code()
        namespace = {**shared, "_built": [0]}
        exec(code, namespace)
        self.build: Callable[[list[tuple[str, Any]]], object] = namespace["build"]
        self.count: Callable[[RunDigest], int] = namespace["count"]
        self.built: list[int] = namespace["_built"]
        self.busy = False


_READERS = threading.local()  # each thread counts its own instances


def _read_digest(text: str) -> RunDigest | None:
    """The digest ``text`` holds, read in one pass; None to let the converter decide.

    Raises the strict parser's :class:`PayloadError` for a text it refuses.
    """
    reader: _Reader | None = getattr(_READERS, "reader", None)
    if reader is None:
        reader = _READERS.reader = _Reader()
    if reader.busy:  # re-entered on this thread (a signal handler): not this way
        return None
    reader.busy = True
    try:
        reader.built[0] = 0
        accepted, value = loads_strict_with_objects(text, reader.build)
        if accepted and type(value) is RunDigest and reader.count(value) == reader.built[0]:
            return value
        return None
    finally:
        reader.busy = False


# --- building a large report -----------------------------------------------------------

_PAUSES = threading.Lock()
_paused = 0  # calls inside paused_gc(), every thread
_resume = False  # whether the collector was enabled when the first of them began


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector held off while a report builds its values.

    A session report of 10 000 runs builds some 300 000 objects that all
    live on (the report): each time a generation fills up the collector
    scans them again, a quarter to a third of the report's CPU time, for
    nothing (they hold no garbage cycle; reference counting frees what the
    build drops). The collector is process-wide, so the pause is counted
    across threads: the first call to begin disables it (when enabled), the
    last to end enables it again, on every way out (an error too); a host
    that had disabled it keeps it disabled. Only what a bounded build
    creates waits, and a collection runs as usual after it.
    """
    global _paused, _resume
    with _PAUSES:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _PAUSES:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()


def digest_columns(story: RunStory) -> DigestColumns:
    """The columns of a story, as the fleet report counts it (pure)."""
    prefix = "" if story.workflow == "chat" else "aiops."
    statuses = Counter(audit.status.value for audit in story.gatekeeper_audits)
    tools: dict[str, list[int]] = {}
    for tool in story.tool_invocations:
        tally = tools.setdefault(tool.tool_name, [0, 0])
        tally[0] += 1
        tally[1] += 0 if tool.success else 1
    outcome = story.outcome
    return DigestColumns(
        workflow=story.workflow,
        outcome=outcome,
        reason_code=story.reason_code,
        evidence_retry=story.workflow == "chat" and story.status == "complete" and any(
            step.node == "evidence_retry" for step in story.agent_steps),
        fallback=outcome is not None and "FALLBACK" in outcome,
        audits=(statuses["PASS"], statuses["LOW_CONFID"], statuses["REJECT"]),
        tools=tuple((name, calls, failures) for name, (calls, failures) in sorted(tools.items())),
        latencies=tuple(
            (prefix + effect.call, float(effect.duration_ms)) for effect in story.effects
            if effect.duration_ms is not None and effect.state == "finished"
        ),
    )


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[nearest_rank(len(ordered), fraction) - 1]


def nearest_rank(count: int, fraction: float) -> int:
    """The 1-based rank of the nearest-rank percentile among ``count`` values."""
    return max(1, math.ceil(fraction * count))


def _rate(count: int, total: int) -> float | None:
    return None if total == 0 else round(count / total, 6)


@attrs.define
class FleetTally:
    """The fleet report's counters; stories are added one by one, or a SQL store fills them."""

    statuses: Counter[str] = attrs.Factory(Counter)
    outcomes: Counter[str] = attrs.Factory(Counter)
    reasons: Counter[str] = attrs.Factory(Counter)
    gatekeeper: Counter[str] = attrs.Factory(Counter)
    tools: dict[str, list[int]] = attrs.Factory(dict)
    latencies: dict[str, list[float]] = attrs.Factory(dict)
    ratings: Counter[str] = attrs.Factory(Counter)
    rating_sum: int = 0
    retried: int = 0
    fallbacks: int = 0
    finished: int = 0
    chat_finished: int = 0

    def add(self, story: RunStory) -> None:
        """Count one run as the fleet report does."""
        self.statuses[story.status] += 1
        if story.status == "invalid":
            return
        columns = digest_columns(story)
        for call, duration in columns.latencies:
            self.latencies.setdefault(call, []).append(duration)
        for name, calls, failures in columns.tools:
            tally = self.tools.setdefault(name, [0, 0])
            tally[0] += calls
            tally[1] += failures
        for name, count in zip(GATEKEEPER_STATUSES, columns.audits, strict=True):
            if count:
                self.gatekeeper[name] += count
        self.add_feedback(item.rating for item in story.feedback)
        if story.status != "complete":
            return
        self.finished += 1
        self.outcomes[story.outcome or ""] += 1
        if story.reason_code is not None:
            self.reasons[story.reason_code] += 1
        self.fallbacks += columns.fallback
        if story.workflow == "chat":
            self.chat_finished += 1
            self.retried += columns.evidence_retry

    def add_feedback(self, ratings: Iterable[int]) -> None:
        """Count feedback ratings."""
        for rating in ratings:
            self.ratings[str(rating)] += 1
            self.rating_sum += rating

    def report(
        self, since: float | None,
        percentiles: Mapping[str, tuple[int, float | None, float | None]] | None = None,
    ) -> FleetReport:
        """The fleet report of what was counted.

        ``percentiles`` gives ``(count, p50, p95)`` of calls whose values are
        not all in :attr:`latencies` (a SQL store ranked them); it wins.
        """
        audits = sum(self.gatekeeper.values())
        feedback_count = sum(self.ratings.values())
        latency = {
            call: LatencyTally(len(values), percentile(values, 0.5), percentile(values, 0.95))
            for call, values in self.latencies.items()
        }
        for call, (count, p50, p95) in (percentiles or {}).items():
            latency[call] = LatencyTally(count, p50, p95)
        return FleetReport(
            since=since,
            runs=RunCounts(total=sum(self.statuses.values()), complete=self.statuses["complete"],
                           incomplete=self.statuses["incomplete"],
                           invalid=self.statuses["invalid"]),
            outcomes={name: self.outcomes[name] for name in sorted(self.outcomes)},
            reason_codes={name: self.reasons[name] for name in sorted(self.reasons)},
            gatekeeper=GatekeeperRates(
                audits=audits,
                rates={name: _rate(self.gatekeeper[name], audits)
                       for name in GATEKEEPER_STATUSES},
            ),
            evidence_retry_rate=_rate(self.retried, self.chat_finished),
            fallback_rate=_rate(self.fallbacks, self.finished),
            tools={name: ToolTally(calls, failures, _rate(failures, calls))
                   for name, (calls, failures) in sorted(self.tools.items())},
            latency_ms={call: latency[call] for call in sorted(latency)},
            feedback=FeedbackTally(
                count=feedback_count,
                mean_rating=(None if not feedback_count
                             else round(self.rating_sum / feedback_count, 6)),
                ratings={str(value): self.ratings[str(value)] for value in range(1, 6)},
            ),
        )


def describe_difference(stored: JsonValue, expected: JsonValue, path: str = "") -> str:
    """The first place two wire values differ (``story.outcome``), for a mismatch's problem."""
    if isinstance(stored, dict) and isinstance(expected, dict):
        for name in sorted(set(stored) | set(expected)):
            if stored.get(name) != expected.get(name):
                return describe_difference(stored.get(name), expected.get(name),
                                           f"{path}.{name}" if path else name)
    if isinstance(stored, list) and isinstance(expected, list) and len(stored) == len(expected):
        for index, (left, right) in enumerate(zip(stored, expected, strict=True)):
            if left != right:
                return describe_difference(left, right, f"{path}[{index}]")
    return path or "$"
