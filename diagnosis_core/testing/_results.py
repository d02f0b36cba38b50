"""Strategies for raw gatekeeper results (spec §6.1) and tool ledgers (spec §9).

A *consistent* result is what a correct gatekeeper could have answered for a
given executor output: one entry per binding with its exact key, ``pass``
entries carrying a ``matched_text``, and a top-level status that agrees with
the entries (all pass → ``pass``; some → ``fail``/``low_confid``; none →
``fail``/``reject``). Keywords come in any case and with whitespace around.
*Contradictory* and *malformed* results must normalize to
``REJECT``/``GATEKEEPER_INVALID_RESULT``; *hostile* values are Python objects no
JSON gatekeeper returns (sets, cycles, NaN, mappings that raise) and must not
crash anything.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import attrs
from hypothesis import strategies as st

from .. import ExecutorEvidence, JsonValue, ToolLedger
from ..protocol import Claim, EvidenceBinding, EvidenceStatus
from ..tools import BindingFailure, ledger_from_records, parse_raw_path
from ._values import fact_texts, identifiers, json_values, texts, tool_names

__all__ = [
    "BindingKey",
    "LedgerCase",
    "binding_keys",
    "contradictory_gatekeeper_results",
    "gatekeeper_raw_results",
    "gatekeeper_results",
    "hostile_gatekeeper_factories",
    "hostile_gatekeeper_values",
    "ledger_cases",
    "malformed_gatekeeper_results",
    "tool_ledger_records",
]

BindingKey = tuple[str, str, str, str]
"""``(claim_id, source_invocation_id, tool_name, raw_path)``: the exact matching key."""

_PASS = ("pass", "PASS", " Pass ", "pass\n")
_FAIL = ("fail", "FAIL", " Fail\t")
_LOW = ("low_confid", "LOW_CONFID", " Low_Confid ")
_REJECT = ("reject", "REJECT", "Reject ")


def binding_keys(executor_output: ExecutorEvidence) -> list[tuple[BindingKey, EvidenceBinding]]:
    """Every binding of ``executor_output`` with its key, in claim then binding order."""
    return [
        ((claim.claim_id, b.source_invocation_id, b.tool_name, b.raw_path), b)
        for claim in executor_output.claims
        for b in claim.bindings
    ]


def _checked_entry(key: BindingKey, status: str) -> dict[str, Any]:
    """A ``checked_bindings`` entry of spec §6.1 without its optional fields.

    Every double and strategy that writes a gatekeeper result starts its
    entries here, so they all spell the entry's key the same way.
    """
    claim_id, invocation_id, tool_name, raw_path = key
    return {
        "claim_id": claim_id,
        "source_invocation_id": invocation_id,
        "tool_name": tool_name,
        "raw_path": raw_path,
        "status": status,
    }


_PASS_MODES = st.sampled_from(("all", "none", "mix", "mix"))


def _passing_keys(draw: st.DrawFn, keys: list[BindingKey]) -> set[BindingKey]:
    """All keys (PASS), none (REJECT), or a mix with at least one of each (LOW_CONFID)."""
    mode = draw(_PASS_MODES)
    if mode == "all" or not keys:
        return set(keys)
    if mode == "none":
        return set()
    chosen = {key for key in keys if draw(st.booleans())}
    chosen.add(keys[draw(st.integers(0, len(keys) - 1))])
    if len(keys) > 1 and len(chosen) == len(keys):
        chosen.discard(keys[draw(st.integers(0, len(keys) - 1))])
    return chosen


@st.composite
def gatekeeper_results(
    draw: st.DrawFn,
    executor_output: ExecutorEvidence,
    *,
    passed: Collection[BindingKey] | None = None,
) -> dict[str, JsonValue]:
    """A raw result a correct gatekeeper could return for ``executor_output``.

    ``passed`` fixes which binding keys pass; by default all of them, none, or
    a mix with at least one passing (and one failing, given two) do.
    ``matched_text`` of a passed entry is the excerpt or another non-empty
    text (the gatekeeper's own); failed entries carry a reason code.
    """
    entries: list[dict[str, Any]] = []
    passes = 0
    keys = binding_keys(executor_output)
    if passed is None:
        passed = _passing_keys(draw, [key for key, _ in keys])
    for key, binding in keys:
        ok = key in passed
        entry = _checked_entry(key, draw(st.sampled_from(_PASS if ok else _FAIL)))
        if ok:
            passes += 1
            entry["matched_text"] = draw(st.just(binding.evidence_excerpt) | texts(min_size=1))
            if draw(st.booleans()):
                entry["reason"] = None
        else:
            presence = draw(st.sampled_from(("omit", "null", "text")))
            if presence != "omit":
                entry["matched_text"] = None if presence == "null" else draw(texts())
            entry["reason"] = draw(_FAILURE_CODES)
        entries.append(entry)
    entries = list(draw(st.permutations(entries)))
    result: dict[str, Any] = {}
    if passes == len(entries):
        result["status"] = draw(st.sampled_from(_PASS))
        level = draw(st.sampled_from(("omit", None, "pass", "PASS ")))
        if level != "omit":
            result["level"] = level
    else:
        result["status"] = draw(st.sampled_from(_FAIL))
        result["level"] = draw(st.sampled_from(_LOW if passes else _REJECT))
    presence = "keep" if entries else draw(st.sampled_from(("keep", "omit", "null")))
    if presence == "keep":
        result["checked_bindings"] = list(entries)
    elif presence == "null":
        result["checked_bindings"] = None
    if draw(st.booleans()):
        result["reason_codes"] = sorted(
            {str(entry["reason"]) for entry in entries if entry.get("reason")}
        )
    if draw(st.booleans()):
        result["x-audit"] = draw(_audit_values())
    return result


_FAILURE_CODES = st.sampled_from(tuple(code.value for code in BindingFailure))


@functools.cache
def _audit_values() -> st.SearchStrategy[JsonValue]:
    return json_values(max_leaves=3) | fact_texts(max_size=8)


def _fresh_entry(draw: st.DrawFn, status: str) -> dict[str, Any]:
    key = (draw(identifiers()), draw(identifiers()), draw(identifiers()), draw(identifiers()))
    return _checked_entry(key, status)


def _entries_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    entries = result.get("checked_bindings")
    if not isinstance(entries, list):
        entries = []
        result["checked_bindings"] = entries
    return entries


@st.composite
def contradictory_gatekeeper_results(
    draw: st.DrawFn, executor_output: ExecutorEvidence
) -> dict[str, JsonValue]:
    """Well-shaped but self-contradictory results (normalized: ``GATEKEEPER_INVALID_RESULT``).

    ``pass`` with a failed entry or with level ``low_confid``/``reject``;
    ``fail`` without a usable level; two entries with the same key.
    """
    result: dict[str, Any] = draw(gatekeeper_results(executor_output))
    kind = draw(
        st.sampled_from(("pass_with_failed", "pass_with_level", "fail_without_level", "duplicate"))
    )
    entries = _entries_of(result)
    if kind == "pass_with_failed":
        result["status"] = draw(st.sampled_from(_PASS))
        result.pop("level", None)
        entries.append(_fresh_entry(draw, draw(st.sampled_from(_FAIL))))
    elif kind == "pass_with_level":
        result["status"] = draw(st.sampled_from(_PASS))
        result["level"] = draw(st.sampled_from(_LOW + _REJECT))
    elif kind == "fail_without_level":
        result["status"] = draw(st.sampled_from(_FAIL))
        level = draw(st.sampled_from(("omit", None, "pass")))
        if level == "omit":
            result.pop("level", None)
        else:
            result["level"] = level
    else:
        if not entries:
            entries.append({**_fresh_entry(draw, "fail"), "reason": "EXCERPT_MISMATCH"})
        original = entries[draw(st.integers(0, len(entries) - 1))]
        twin = copy.deepcopy(original)
        twin["status"] = draw(st.sampled_from(_PASS + _FAIL))
        twin["matched_text"] = "twin"
        entries.append(twin)
    return result


_BAD_ENTRY_VALUES: tuple[JsonValue, ...] = (None, 1, 1.5, True, [], {}, "")


@st.composite
def malformed_gatekeeper_results(
    draw: st.DrawFn, executor_output: ExecutorEvidence
) -> JsonValue:
    """Results that cannot be read (normalized: ``GATEKEEPER_INVALID_RESULT``).

    Not an object; ``status`` missing, unknown or not a string; an unknown
    ``level``; ``checked_bindings`` not an array; an entry that is not an
    object, lacks or mistypes a field, has an empty id, an unknown status, or
    passed without a non-empty ``matched_text``; a lone surrogate in a field.
    """
    result: dict[str, Any] = draw(gatekeeper_results(executor_output))
    kind = draw(
        st.sampled_from(
            (
                "not_object", "status_missing", "status_unknown", "status_type", "level_unknown",
                "level_type", "checked_type", "entry_type", "entry_field", "entry_empty_id",
                "entry_status", "pass_without_text", "surrogate",
            )
        )
    )
    if kind == "not_object":
        choices: list[JsonValue] = [[result], json.dumps(result), 0, None, True, "pass"]
        return draw(st.sampled_from(choices))
    if kind == "status_missing":
        del result["status"]
        return result
    if kind == "status_unknown":
        result["status"] = draw(st.sampled_from(("ok", "passed", "", "PASS_", "low_confid")))
        return result
    if kind == "status_type":
        result["status"] = draw(st.sampled_from([1, True, ["pass"], {"v": "pass"}]))
        return result
    if kind in ("level_unknown", "level_type"):
        result["status"] = draw(st.sampled_from(_FAIL))
        result["level"] = draw(
            st.sampled_from(("low", "rejected", "", "LOWCONFID"))
            if kind == "level_unknown"
            else st.sampled_from([1, False, ["reject"]])
        )
        return result
    if kind == "checked_type":
        result["checked_bindings"] = draw(st.sampled_from(["[]", 1, {"0": {}}, True]))
        return result
    entries = _entries_of(result)
    if not entries:
        entries.append({**_fresh_entry(draw, "pass"), "matched_text": "m"})
    index = draw(st.integers(0, len(entries) - 1))
    entry = entries[index]
    field = draw(st.sampled_from(("claim_id", "source_invocation_id", "tool_name", "raw_path")))
    if kind == "entry_type":
        entries[index] = draw(st.sampled_from([None, "entry", 1, [entry]]))
    elif kind == "entry_field":
        if draw(st.booleans()):
            del entry[field]
        else:
            entry[field] = draw(st.sampled_from([v for v in _BAD_ENTRY_VALUES if v != ""]))
    elif kind == "entry_empty_id":
        entry[field] = ""
    elif kind == "entry_status":
        entry["status"] = draw(st.sampled_from((None, "ok", "", 1, "passed")))
    elif kind == "pass_without_text":
        entry["status"] = "pass"
        presence = draw(st.sampled_from(("omit", None, "", 7)))
        if presence == "omit":
            entry.pop("matched_text", None)
        else:
            entry["matched_text"] = presence
    else:
        target = draw(st.sampled_from((field, "matched_text", "reason")))
        entry[target] = "bad\ud800"
        if target != "reason":
            entry["status"] = "pass"
    return result


def gatekeeper_raw_results(executor_output: ExecutorEvidence) -> st.SearchStrategy[JsonValue]:
    """Any raw result for ``executor_output``: consistent, contradictory, malformed or any JSON."""
    consistent: st.SearchStrategy[JsonValue] = gatekeeper_results(executor_output)
    return st.one_of(
        consistent,
        consistent,
        contradictory_gatekeeper_results(executor_output),
        malformed_gatekeeper_results(executor_output),
        json_values(),
    )


# --- hostile Python values ------------------------------------------------------------


class _RaisingMapping(Mapping[str, object]):
    """A mapping whose every method raises: a hostile gatekeeper client library."""

    def __getitem__(self, key: str) -> object:
        raise RuntimeError("no item")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no iteration")

    def __len__(self) -> int:
        raise RuntimeError("no length")


class _RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _WeirdStr(str):
    def strip(self, chars: str | None = None) -> str:
        return "pass"

    def lower(self) -> str:
        return "pass"


def _raising(name: str, error: type[Exception]) -> Any:
    def method(self: object, *args: object, **kwargs: object) -> object:
        raise error(f"no {name}")

    return method


_DICT_METHODS = ("get", "items", "__iter__", "__getitem__", "keys", "values", "__len__")

# One dict subclass per method, each raising from that method only (the rest works).
_RAISING_DICTS: tuple[type[dict[str, object]], ...] = tuple(
    type(f"_RaisingDict_{name.strip('_')}", (dict,), {name: _raising(name, error)})
    for name, error in zip(
        _DICT_METHODS,
        (RuntimeError, KeyError, ValueError, LookupError, TypeError, AttributeError, OSError),
        strict=True,
    )
)


class _RaisingIterList(list[object]):
    """A list subclass whose iteration raises (indexing and ``len`` work)."""

    def __iter__(self) -> Iterator[object]:
        raise RuntimeError("no iteration")


class _HostileEquality:
    """An object whose ``__eq__`` and ``__hash__`` raise (as a key or a value)."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no equality")

    def __hash__(self) -> int:
        raise RuntimeError("no hash")


class _HostileStr(str):
    """A string subclass whose hash, equality and case methods lie or raise."""

    __slots__ = ()

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no equality")

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("no strip")


class _FlipFlopMapping(Mapping[str, object]):
    """Says ``pass`` to the first reader and ``fail``/``reject`` to every later one."""

    def __init__(self) -> None:
        self.reads = 0

    def __getitem__(self, key: str) -> object:
        if key != "status":
            raise KeyError(key)
        self.reads += 1
        return "pass" if self.reads == 1 else "fail"

    def __iter__(self) -> Iterator[str]:
        return iter(["status"])

    def __len__(self) -> int:
        return 1


def _passing_entry() -> dict[str, object]:
    return {**_checked_entry(("c1", "inv-1", "t", "$.a"), "pass"), "matched_text": "x"}


def _nested_raising(kind: type[dict[str, object]]) -> Any:
    return lambda: {"status": "pass", "checked_bindings": [kind(_passing_entry())]}


def _cycle() -> dict[str, object]:
    looped: dict[str, object] = {"status": "pass"}
    looped["checked_bindings"] = [looped]
    return looped


_HOSTILE: tuple[Any, ...] = (
    lambda: {1, 2, 3},
    lambda: b'{"status": "pass"}',
    lambda: {"status": "pass", "score": math.nan},
    lambda: {"status": "fail", "level": "low_confid", "checked_bindings": [math.inf]},
    _cycle,
    _RaisingMapping,
    lambda: {"status": "pass", "checked_bindings": [_RaisingMapping()]},
    object,
    _RaisingRepr,
    lambda: {1: "pass"},
    lambda: {("status",): "pass"},
    lambda: {"status": _WeirdStr("PASS")},
    lambda: {"status": "pass", "checked_bindings": ({"claim_id": "c"},)},
    lambda: {"status": "fail", "level": "low_confid", "checked_bindings": "not a list"},
    lambda: {"status": "pass", "reason_codes": [1, None, "OK", "\ud800"]},
    lambda: [{"status": "pass"}] * 3,
    *(lambda kind=kind: kind(status="pass") for kind in _RAISING_DICTS),
    *(_nested_raising(kind) for kind in _RAISING_DICTS),
    lambda: {"status": "pass", "checked_bindings": _RaisingIterList([_passing_entry()])},
    lambda: {"status": "pass", "extra": _HostileEquality(), "more": [_HostileEquality()]},
    lambda: {"status": _HostileStr("pass"), "level": _HostileStr("pass")},
    lambda: {"status": "pass", "checked_bindings": [{**_passing_entry(),
                                                      "claim_id": _HostileStr("c1")}]},
    _FlipFlopMapping,
)


def hostile_gatekeeper_values() -> st.SearchStrategy[object]:
    """Fresh Python objects no JSON gatekeeper returns; the machine must survive each one."""
    return st.sampled_from(_HOSTILE).map(lambda factory: factory())


def hostile_gatekeeper_factories() -> tuple[Callable[[], object], ...]:
    """The makers of :func:`hostile_gatekeeper_values`, for a driver without Hypothesis.

    Each call of a maker gives a fresh object (some count their reads), so a
    fuzzer can draw them with its own random source.
    """
    return _HOSTILE


# --- tool ledgers ------------------------------------------------------------------------


@attrs.frozen
class LedgerCase:
    """An executor output, a ledger that checks it, and what the checks must say.

    ``expected`` maps every binding key to ``None`` (the binding must pass) or
    the :class:`~diagnosis_core.BindingFailure` it must fail with; ``matched``
    gives the exact ``matched_text`` of every passing key. Treat ``records``
    as read-only.
    """

    executor_output: ExecutorEvidence
    records: tuple[dict[str, JsonValue], ...]
    expected: Mapping[BindingKey, BindingFailure | None]
    matched: Mapping[BindingKey, str]

    def ledger(self) -> ToolLedger:
        """The :class:`~diagnosis_core.ToolLedger` of the records."""
        return ledger_from_records(list(self.records))

    @property
    def expected_status(self) -> tuple[str, str | None]:
        """The raw ``(status, level)`` a reference gatekeeper must answer (spec §9)."""
        passes = sum(1 for failure in self.expected.values() if failure is None)
        if passes == len(self.expected):
            return ("pass", None)
        return ("fail", "low_confid") if passes else ("fail", "reject")


_WORDS = st.lists(st.text("abcdef\u00e9", min_size=1, max_size=5), min_size=1, max_size=3)
_RUNS = st.text(" \t\n\xa0\u3000", min_size=1, max_size=3)
_DIGITS = st.text("0123456789", max_size=4)
_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True)
_SEGMENT = st.one_of(
    _NAME,
    st.text("abcdefgh 0123456789.", max_size=6),  # a quoted key
    st.integers(0, 3),
)
_BAD_PATHS = ("$..x", "items[0]", "$[-1]", "$.", "$[01]", "$['a", "$.a b", "$[*]", "$x")


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _path_text(segments: list[str | int]) -> str:
    """The spec §9 path of ``segments``: ``.name`` where possible, else ``['key']``."""
    text = "$"
    for segment in segments:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif _NAME_RE.fullmatch(segment):
            text += f".{segment}"
        else:
            text += f"['{segment}']"
    return text


def _nest(segments: list[str | int], value: JsonValue) -> JsonValue:
    node = value
    for segment in reversed(segments):
        if isinstance(segment, int):
            node = [None] * segment + [node]
        else:
            node = {segment: node, "zz missing": "x"}
    return node


@st.composite
def _ledger_binding(
    draw: st.DrawFn, invocation_id: str, outcome: BindingFailure | None
) -> tuple[EvidenceBinding, dict[str, JsonValue] | None, str | None]:
    """One binding, its ledger record (None: not recorded) and the text it must match."""
    tool = draw(tool_names())
    segments: list[str | int] = draw(st.lists(_SEGMENT, max_size=3))
    path = _path_text(segments)
    words = draw(_WORDS)
    # The excerpt is folded, not stripped (spec §9 v1.1): edge whitespace must occur too.
    lead, trail = draw(st.text(" \t", max_size=1)), draw(st.text(" \n", max_size=1))
    excerpt = lead + " ".join(words) + trail
    matched: str | None = None
    value: JsonValue
    if outcome is None and draw(st.integers(0, 4)) == 0:
        value = draw(st.integers(0, 10**6) | st.booleans() | st.floats(-1e6, 1e6))
        excerpt = matched = json.dumps(value)
    else:
        variant = draw(_RUNS).join(words) if len(words) > 1 else words[0]
        if outcome is BindingFailure.EXCERPT_MISMATCH:
            value = draw(_DIGITS) + draw(st.text(" ", max_size=2)) + draw(_DIGITS)
        else:
            before = draw(st.text(" \t", min_size=1 if lead else 0, max_size=2))
            after = draw(st.text(" \n", min_size=1 if trail else 0, max_size=2))
            value = draw(_DIGITS) + before + variant + after + draw(_DIGITS)
            # A leading folded space spans the whole run, a trailing one its first character.
            matched = (before if lead else "") + variant + after[:1 if trail else 0]
    output = _nest(segments, value)
    if outcome is BindingFailure.RAW_PATH_UNRESOLVED:
        way = draw(st.sampled_from(("bad_path", "missing", "not_scalar")))
        if way == "bad_path":
            path = draw(st.sampled_from(_BAD_PATHS))
        elif way == "missing":
            output = {"zz missing": output}
        else:
            shapes: list[JsonValue] = [None, {}, [], {"a": "b"}, ["x"]]
            output = _nest(segments, draw(st.sampled_from(shapes)))
    binding = EvidenceBinding(invocation_id, tool, path, excerpt)
    if outcome is BindingFailure.INVOCATION_NOT_FOUND:
        return binding, None, None
    record: dict[str, JsonValue] = {
        "invocation_id": invocation_id,
        "tool_name": tool + "~" if outcome is BindingFailure.TOOL_MISMATCH else tool,
        "success": outcome is not BindingFailure.INVOCATION_FAILED,
        "output": output,
    }
    # The one audit field both record forms share: ``ledger_from_records``
    # (seed 003 §3 fields) and a scenario's ``tool_ledger`` (spec §9 v1.1).
    optional = draw(
        st.fixed_dictionaries({}, optional={"duration_ms": st.integers(0, 10_000)})
    )
    record.update(optional)
    return binding, record, matched


@st.composite
def ledger_cases(draw: st.DrawFn, *, max_claims: int = 3) -> LedgerCase:
    """An executor output with a ledger that passes some bindings and fails others.

    Every failure reason of the reference gatekeeper occurs: a missing or
    failed invocation, another tool, a path that does not parse or resolve (or
    resolves to a non-scalar), an excerpt that is not there. Passing excerpts
    differ from the recorded text in whitespace only, or are JSON numbers or
    booleans.
    """
    claim_ids = draw(st.lists(identifiers(), max_size=max_claims, unique=True))
    outcomes = st.sampled_from([None, *BindingFailure])
    counter = 0
    found: list[Claim] = []
    records: list[dict[str, JsonValue]] = []
    expected: dict[BindingKey, BindingFailure | None] = {}
    matched: dict[BindingKey, str] = {}
    for claim_id in claim_ids:
        bindings: list[EvidenceBinding] = []
        for _ in range(draw(st.integers(1, 3))):
            counter += 1
            outcome = draw(outcomes)
            invocation_id = f"inv-{counter}-" + draw(st.text("abc", max_size=2))
            binding, record, text = draw(_ledger_binding(invocation_id, outcome))
            bindings.append(binding)
            if record is not None:
                records.append(record)
            key = (claim_id, binding.source_invocation_id, binding.tool_name, binding.raw_path)
            expected[key] = outcome
            if text is not None and outcome is None:
                matched[key] = text
        found.append(Claim(claim_id, draw(texts(min_size=1)), tuple(bindings), draw(st.booleans())))
    for index in range(draw(st.integers(0, 2))):
        records.append(
            {"invocation_id": f"unrelated-{index}", "tool_name": draw(tool_names()),
             "success": draw(st.booleans()), "output": draw(json_values(max_leaves=3))}
        )
    status = EvidenceStatus.EVIDENCE_FOUND if found else EvidenceStatus.NO_EVIDENCE
    evidence = ExecutorEvidence(evidence_status=status, claims=tuple(found))
    ordered = tuple(draw(st.permutations(records)))
    return LedgerCase(evidence, ordered, expected, matched)


# --- best-effort ledgers for any executor output --------------------------------------------

_EMPTY = object()


class _Conflict(Exception):
    pass


def _place(node: Any, segments: tuple[str | int, ...], value: JsonValue) -> Any:
    if not segments:
        if node is not _EMPTY:
            raise _Conflict
        return value
    head, rest = segments[0], segments[1:]
    if isinstance(head, str):
        node = {} if node is _EMPTY else node
        if not isinstance(node, dict):
            raise _Conflict
        node[head] = _place(node.get(head, _EMPTY), rest, value)
        return node
    if head > 8:
        raise _Conflict
    node = [] if node is _EMPTY else node
    if not isinstance(node, list):
        raise _Conflict
    while len(node) <= head:
        node.append(_EMPTY)
    node[head] = _place(node[head], rest, value)
    return node


def _fill(node: Any) -> JsonValue:
    if node is _EMPTY:
        return None
    if isinstance(node, dict):
        return {key: _fill(item) for key, item in node.items()}
    if isinstance(node, list):
        return [_fill(item) for item in node]
    result: JsonValue = node
    return result


@st.composite
def tool_ledger_records(
    draw: st.DrawFn, *executor_outputs: ExecutorEvidence
) -> list[dict[str, JsonValue]]:
    """Ledger records for any executor outputs: some bindings match, others do not.

    A matching binding gets an invocation with its tool and its excerpt at its
    path (when the path parses and does not collide with another binding's);
    the others are left unrecorded, recorded as failed, or under another tool.
    """
    records: dict[str, dict[str, Any]] = {}
    for executor_output in executor_outputs:
        for _, binding in binding_keys(executor_output):
            choice = draw(st.sampled_from(("match", "match", "skip", "failed", "other_tool")))
            if choice == "skip":
                continue
            record = records.setdefault(
                binding.source_invocation_id,
                {
                    "invocation_id": binding.source_invocation_id,
                    "tool_name": binding.tool_name + ("~" if choice == "other_tool" else ""),
                    "success": choice != "failed",
                    "output": _EMPTY,
                },
            )
            segments = parse_raw_path(binding.raw_path)
            if segments is None:
                continue
            try:
                record["output"] = _place(record["output"], segments, binding.evidence_excerpt)
            except _Conflict:
                continue
    ordered = [{**record, "output": _fill(record["output"])} for record in records.values()]
    return list(draw(st.permutations(ordered)))
