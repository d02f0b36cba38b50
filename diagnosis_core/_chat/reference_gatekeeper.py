"""The reference gatekeeper: checks bindings against a tool-invocation ledger (spec §9).

The executor claims "tool X returned this text at this path"; the ledger holds
what the tools really returned. A binding passes only when the invocation
exists and succeeded, the tool name is the same, ``raw_path`` resolves to a
scalar, and the excerpt occurs there (whitespace-insensitively). The checker
is exact and fails closed: every doubt is a failed binding with a reason code,
never an exception and never a pass.

The ledger itself (:class:`ToolLedger`, freezing, records) is the kernel's
(``_kernel/tools/ledger.py``).

Decisions where the spec is silent:

* **Paths.** ``$`` then ``.name`` / ``['name']`` / ``[index]``. Whitespace is
  allowed only inside ``['…']`` (it is part of the key); ``['']`` names the
  empty key; an index with a leading zero (``[01]``) is rejected. Object keys
  match only name segments, arrays only index segments.
* **Values.** A path that resolves to ``null``, an object or an array is
  ``RAW_PATH_UNRESOLVED`` (the spec asks for a string, number or boolean).
  Numbers and booleans are compared through ``json.dumps`` text.
* **Excerpts.** Runs of whitespace (``str.isspace``, which is exactly what
  ``\\s`` and ``str.split()`` use) are folded to one space on both sides; the
  excerpt is folded, not stripped, so its leading/trailing whitespace must
  occur too (spec §9 v1.1). A whitespace-only excerpt never matches.
  Matching is case-sensitive, without Unicode normalization, and runs in
  linear time (no backtracking regex). A span containing a lone surrogate is
  never reported (``EXCERPT_MISMATCH``): it could not be encoded in the
  verifier's input.
* **Duplicates.** Bindings with the same 4-tuple key are reported once, in
  first-occurrence order; the key passes only if every such binding passes
  (the first failure's reason is kept).
* ``run_id`` is accepted for the ``Gatekeeper`` protocol and not used: the
  result depends on the ledger and the evidence only.
"""


from __future__ import annotations

import bisect
import enum
import itertools
import json
import operator
import re
from array import array
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import attrs

from .._kernel.tools.ledger import PathSegment, ToolInvocation, ToolLedger
from .._kernel.tools.recorder import ToolRecorder as _ToolRecorder
from .._kernel.wire.json import SURROGATE as _SURROGATE
from .enums import BindingCheckStatus
from .payloads import CheckedBinding, EvidenceBinding, ExecutorEvidence

__all__ = [
    "UNRESOLVED",
    "BindingFailure",
    "RecorderGatekeeper",
    "ReferenceGatekeeper",
    "ToolRecorder",
    "check_binding",
    "check_bindings",
    "match_excerpt",
    "parse_raw_path",
    "resolve_raw_path",
]

_WHITESPACE_RUN = re.compile(r"\s+")  # \s on str patterns == str.isspace (tested)


class _Unresolved(enum.Enum):
    UNRESOLVED = "UNRESOLVED"

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED: Final = _Unresolved.UNRESOLVED
"""Returned by :func:`resolve_raw_path` when the path does not lead to a value."""


class BindingFailure(enum.StrEnum):
    """Why the reference gatekeeper failed a binding, in the order checks run."""

    INVOCATION_NOT_FOUND = "INVOCATION_NOT_FOUND"
    INVOCATION_FAILED = "INVOCATION_FAILED"
    TOOL_MISMATCH = "TOOL_MISMATCH"
    RAW_PATH_UNRESOLVED = "RAW_PATH_UNRESOLVED"
    EXCERPT_MISMATCH = "EXCERPT_MISMATCH"


# --- raw paths ----------------------------------------------------------------

_PATH = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\['[^'\\]*'\]|\[(?:0|[1-9][0-9]*)\])*")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['([^'\\]*)'\]|\[([0-9]+)\]")


def parse_raw_path(path: str) -> tuple[PathSegment, ...] | None:
    """Parse the JSONPath subset of spec §9 into key/index segments, or None.

    ``$`` alone is the empty path. Anything outside the subset — ``$..x``,
    ``$[-1]``, ``$[*]``, ``$.``, ``$x``, an unclosed ``['``, a leading zero,
    whitespace outside ``['…']`` — is None, and so is an index of more than
    18 digits (no real array is that long). Linear time, never raises.
    """
    if not isinstance(path, str) or _PATH.fullmatch(path) is None:
        return None
    segments: list[PathSegment] = []
    for match in _SEGMENT.finditer(path, 1):
        name, quoted, index = match.groups()
        if index is not None:
            if len(index) > 18:  # beyond any real sequence; also avoids the int digit limit
                return None
            segments.append(int(index))
        else:
            segments.append(name if name is not None else quoted)
    return tuple(segments)


def resolve_raw_path(output: object, path: str) -> object:
    """The value ``path`` points at inside ``output``, or :data:`UNRESOLVED`.

    Object keys match only name segments, arrays only index segments (a
    ``['0']`` on an array does not resolve). Iterative, so any depth is fine;
    never raises. Plain containers (``dict``, ``list``, ``tuple``) are read
    directly; any other host ``Mapping`` or sequence is read through its own
    methods, and an exception from those (a hostile host object) means the
    path does not resolve.
    """
    segments = parse_raw_path(path)
    if segments is None:
        return UNRESOLVED
    return _resolve(output, segments, frozen=False)


def _resolve(output: object, segments: tuple[PathSegment, ...], *, frozen: bool) -> object:
    """Follow ``segments``; ``frozen``: ``output`` is a ledger entry's (``freeze_json_field``)."""
    node = output
    for segment in segments:
        if isinstance(segment, str):
            if not isinstance(node, Mapping):
                return UNRESOLVED
            if type(node) is dict or (frozen and type(node) is MappingProxyType):
                node = node.get(segment, UNRESOLVED)
            else:
                try:
                    node = node.get(segment, UNRESOLVED)
                except Exception:  # a hostile host mapping: only its own methods are guarded
                    return UNRESOLVED
        else:
            if not isinstance(node, list | tuple):
                return UNRESOLVED
            if type(node) is not list and type(node) is not tuple:
                try:
                    node = node[segment] if segment < len(node) else UNRESOLVED
                except Exception:  # a hostile host sequence: only its own methods are guarded
                    return UNRESOLVED
            else:
                node = node[segment] if segment < len(node) else UNRESOLVED
        if node is UNRESOLVED:
            return UNRESOLVED
    return node


# --- excerpt matching -----------------------------------------------------------


def _scalar_text(value: object) -> str | None:
    """The text an excerpt is compared with: strings as is, numbers/booleans as JSON."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool | int | float):
        try:
            return json.dumps(value)
        except (ValueError, TypeError):
            return None
    return None


def _fold(text: str) -> str:
    return _WHITESPACE_RUN.sub(" ", text)


_SPLIT_SHRINKING_RUN = re.compile(r"(\s{2,})")  # the runs that folding makes shorter


class _FoldedText:
    """One tool-output string folded once, reused by every binding that cites it.

    ``folded`` is :func:`_fold` of ``text``. The map back to ``text`` is built
    on the first match only, in one pass: for each whitespace run that folding
    shortens, its position in ``folded`` and the total shrink up to its end.
    Mapping an index is then a binary search, so no binding re-scans ``text``.
    """

    __slots__ = ("_shrink", "_starts", "folded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = _fold(text)
        self._starts: array[int] | None = None
        self._shrink = array("q")

    def _build(self) -> array[int]:
        # Pieces and shrinking runs alternate in the split; the sums run in C
        # (no Python-level step per run): run k starts in ``folded`` after
        # pieces 0..k and k one-space runs, and has shrunk ``text`` by the
        # lengths of runs 0..k less one each.
        parts = _SPLIT_SHRINKING_RUN.split(self.text)
        pieces = itertools.accumulate(map(len, itertools.islice(parts, 0, None, 2)))
        runs = itertools.accumulate(map(len, itertools.islice(parts, 1, None, 2)))
        self._shrink = array("q", map(operator.sub, runs, itertools.count(1)))
        starts = array("q", map(operator.add, pieces, itertools.count()))
        del starts[len(self._shrink) :]  # the last piece is followed by no run
        self._starts = starts
        return starts

    def text_index(self, position: int, *, last: bool = False) -> int:
        """The first (or ``last``) character of ``text`` that folded ``position`` stands for."""
        starts = self._starts if self._starts is not None else self._build()
        # The runs starting strictly before ``position`` (at or before it for ``last``).
        run = (bisect.bisect_right if last else bisect.bisect_left)(starts, position) - 1
        return position + (self._shrink[run] if run >= 0 else 0)

    def match(self, excerpt: str) -> str | None:
        """:func:`match_excerpt` of ``text`` and ``excerpt``, reusing the fold.

        A folded space at the end stands for its run's first character (``last=False``).
        """
        needle = _fold(excerpt)
        if not needle.strip():
            return None
        start = self.folded.find(needle)
        if start < 0:
            return None
        end = start + len(needle) - 1
        last = self.text_index(end, last=needle[-1] != " ")
        return self.text[self.text_index(start) : last + 1]


def match_excerpt(text: str, excerpt: str) -> str | None:
    """The first span of ``text`` that equals ``excerpt`` up to whitespace runs, or None.

    Both sides have whitespace runs folded to one space; the excerpt is folded,
    not stripped (spec §9 v1.1): ``" timeout"`` must occur as ``" timeout"``
    and does not match ``"timeout after"``. The span keeps the original
    whitespace inside; a leading or trailing folded space stands for a whole
    run at the start and the first character of a run at the end. A
    whitespace-only excerpt never matches.
    """
    return _FoldedText(text).match(excerpt)


class _CheckCache:
    """Work shared by the bindings of one check (never global, dropped afterwards).

    Folded outputs are keyed by the string itself (its hash is computed once
    and cached by ``str``), matches by ``(string, excerpt)``: many bindings on
    one large output fold it once, and identical bindings search it once.
    """

    __slots__ = ("folded", "matches")

    def __init__(self) -> None:
        self.folded: dict[str, _FoldedText] = {}
        self.matches: dict[tuple[str, str], str | None] = {}

    def match(self, text: str, excerpt: str) -> str | None:
        key = (text, excerpt)
        if key in self.matches:
            return self.matches[key]
        folded = self.folded.get(text)
        if folded is None:
            folded = self.folded[text] = _FoldedText(text)
        matched = self.matches[key] = folded.match(excerpt)
        return matched


# --- checking ---------------------------------------------------------------------


def _checked(
    claim_id: str, binding: EvidenceBinding, status: BindingCheckStatus,
    *, matched_text: str | None = None, reason: str | None = None,
) -> CheckedBinding:
    """The result for ``binding`` under the binding's own key (the projector matches it)."""
    return CheckedBinding(
        claim_id, binding.source_invocation_id, binding.tool_name, binding.raw_path, status,
        matched_text=matched_text, reason=reason,
    )


def _failed(claim_id: str, binding: EvidenceBinding, reason: BindingFailure) -> CheckedBinding:
    return _checked(claim_id, binding, BindingCheckStatus.FAIL, reason=reason.value)


def _exact_text(value: object) -> str | None:
    """A binding field as an exact ``str`` (a subclass cannot hash or compare falsely)."""
    return str.__str__(value) if isinstance(value, str) else None


def _lookup(ledger: ToolLedger, invocation_id: str | None) -> ToolInvocation | None:
    """The invocation, or None; a host ledger subclass whose lookup raises finds nothing."""
    if invocation_id is None:
        return None
    if type(ledger) is ToolLedger:
        return ledger.get(invocation_id)
    try:
        found: object = ledger.get(invocation_id)
    except Exception:  # a hostile host ledger: only its own lookup is guarded
        return None
    return found if type(found) is ToolInvocation else None


def check_binding(ledger: ToolLedger, claim_id: str, binding: EvidenceBinding) -> CheckedBinding:
    """Check one executor binding against the ledger (spec §9); never raises.

    Checks run in the order of :class:`BindingFailure`; the first failing
    check is the reason. A passed binding carries ``matched_text``, the
    recorded tool output's span (never the executor's excerpt).
    """
    return _check_binding(ledger, claim_id, binding, _CheckCache())


def _check_binding(
    ledger: ToolLedger, claim_id: str, binding: EvidenceBinding, cache: _CheckCache
) -> CheckedBinding:
    """:func:`check_binding` with the work shared across one check.

    The only host code that can run is a ``ToolLedger`` subclass's ``get``,
    which is guarded; the invocation is deep-frozen plain JSON and the
    binding's fields are read as exact strings, so no other exception is
    expected and none is swallowed (a bug surfaces as a bug).
    """
    invocation = _lookup(ledger, _exact_text(binding.source_invocation_id))
    if invocation is None:
        return _failed(claim_id, binding, BindingFailure.INVOCATION_NOT_FOUND)
    if invocation.success is not True:
        return _failed(claim_id, binding, BindingFailure.INVOCATION_FAILED)
    if _exact_text(binding.tool_name) != invocation.tool_name:
        return _failed(claim_id, binding, BindingFailure.TOOL_MISMATCH)
    segments = parse_raw_path(binding.raw_path)
    output = invocation.output
    resolved = UNRESOLVED if segments is None else _resolve(output, segments, frozen=True)
    text = _scalar_text(resolved)
    if text is None:
        return _failed(claim_id, binding, BindingFailure.RAW_PATH_UNRESOLVED)
    excerpt = _exact_text(binding.evidence_excerpt)
    matched = cache.match(text, excerpt) if excerpt is not None else None
    if matched is None or _SURROGATE.search(matched):
        return _failed(claim_id, binding, BindingFailure.EXCERPT_MISMATCH)
    return _checked(claim_id, binding, BindingCheckStatus.PASS, matched_text=matched)


def _checked_entry(entry: CheckedBinding) -> dict[str, object]:
    return {
        "claim_id": entry.claim_id,
        "source_invocation_id": entry.source_invocation_id,
        "tool_name": entry.tool_name,
        "raw_path": entry.raw_path,
        "status": entry.status.value,
        "matched_text": entry.matched_text,
        "reason": entry.reason,
    }


def check_bindings(
    ledger: ToolLedger, executor_output: ExecutorEvidence
) -> tuple[CheckedBinding, ...]:
    """Check every binding, in claim then binding order, one entry per 4-tuple key."""
    merged: dict[tuple[str, str, str, str], CheckedBinding] = {}
    cache = _CheckCache()  # one per check: each cited output is folded once
    for claim in executor_output.claims:
        for binding in claim.bindings:
            entry = _check_binding(ledger, claim.claim_id, binding, cache)
            earlier = merged.get(entry.key)
            if earlier is None or (earlier.passed and not entry.passed):
                merged[entry.key] = entry
    return tuple(merged.values())


@attrs.frozen
class ReferenceGatekeeper:
    """A :class:`Gatekeeper` effect over a recorded :class:`ToolLedger` (spec §9).

    Returns the raw §6.1 shape: all bindings pass (or there are none) →
    ``pass``; some pass → ``fail``/``low_confid``; none pass →
    ``fail``/``reject``. ``reason_codes`` are the sorted unique failure codes.
    """

    ledger: ToolLedger

    def __call__(self, run_id: str, executor_output: ExecutorEvidence) -> dict[str, object]:
        entries = check_bindings(self.ledger, executor_output)
        passed = sum(1 for entry in entries if entry.passed)
        if passed == len(entries):
            status, level = "pass", None
        elif passed:
            status, level = "fail", "low_confid"
        else:
            status, level = "fail", "reject"
        reasons = sorted({entry.reason for entry in entries if entry.reason is not None})
        return {
            "status": status,
            "level": level,
            "checked_bindings": [_checked_entry(entry) for entry in entries],
            "reason_codes": reasons,
        }


class ToolRecorder(_ToolRecorder):
    """The §13 tool recorder of a chat run: the kernel's recorder plus :meth:`gatekeeper`.

    Everything but :meth:`gatekeeper` is the workflow-free recorder both
    workflows share (ids, input and output rules, marks, ledger snapshots).
    """

    def gatekeeper(self) -> RecorderGatekeeper:
        """A reference gatekeeper over this recorder's ledger as it is *at call time*."""
        return RecorderGatekeeper(self)


@attrs.frozen
class RecorderGatekeeper:
    """A :class:`Gatekeeper` reading a :class:`ToolRecorder`'s ledger at call time (spec §13).

    Each call checks the bindings with :class:`ReferenceGatekeeper` against
    :meth:`ToolRecorder.ledger` taken at that moment, never a copy taken
    when the gatekeeper was built.
    """

    recorder: ToolRecorder

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> dict[str, object]:
        return ReferenceGatekeeper(self.recorder.ledger())(run_id, executor_output)
