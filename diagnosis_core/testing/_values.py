"""Strategies for the building blocks and the parsed payload values (spec §4, §5).

Every strategy here produces values that satisfy every rule of their spec
section, so ``payload_texts(value)`` of any of them parses back to the value.
Texts never contain an unpaired surrogate (the parsers reject those, and the
adversarial strategies of :mod:`._texts` plant them on purpose).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

import attrs
from hypothesis import strategies as st

from .. import (
    DiagnosisConfig,
    DiagnosisRequest,
    ExecutorEvidence,
    HistoryMessage,
    JsonValue,
    Locale,
    RunConfig,
    Skill,
    Verdict,
)
from ..protocol import (
    BindingCheckStatus,
    CheckedBinding,
    Claim,
    ComposerOutput,
    EvidenceBinding,
    EvidenceStatus,
    FactCheck,
    GatekeeperResult,
    Hypothesis,
    PlannerPlan,
    PlanStep,
    ToolTraceEntry,
    Verification,
    VerifierOutput,
)

__all__ = [
    "claims",
    "composer_outputs",
    "diagnosis_configs",
    "diagnosis_requests",
    "evidence_bindings",
    "executor_evidences",
    "fact_checks",
    "gatekeeper_result_values",
    "history_messages",
    "host_subclassed",
    "identifiers",
    "json_values",
    "planner_plans",
    "raw_paths",
    "run_configs",
    "skill_catalogs",
    "texts",
    "tool_names",
    "tool_trace_entries",
    "verifier_outputs",
]

_ASCII_PRINTABLE = "".join(chr(code) for code in range(0x20, 0x7F))
_ANY_CHARACTER = st.characters(exclude_categories=["Cs"])
_SLUG = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)
_TOOL_NAME_ALPHABET = "ABCXYZabcxyz0189_.:-"


# Strategies are immutable: build each one once (creating and validating them
# again on every draw costs more than drawing from them).


@functools.cache
def _texts(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(_ASCII_PRINTABLE, min_size=min_size, max_size=max_size),
        st.text(_ANY_CHARACTER, min_size=min_size, max_size=max_size),
    )


def texts(*, min_size: int = 0, max_size: int = 20) -> st.SearchStrategy[str]:
    """Any text without unpaired surrogates: mostly printable ASCII, often any Unicode."""
    return _texts(min_size, max_size)


_LONE_SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\udc80\udc81")
# A high surrogate followed by a low one as two code points: JSON writes the pair
# ``\ud83d\ude00``, which every decoder reads back as one character. The fact
# codec must keep such a fact's meaning (spec §12.1), so facts often hold one.
_SURROGATE_PAIRS = ("\ud83d\ude00", "\ud800\udc00", "\udbff\udfff")


@functools.cache
def _fact_texts(max_size: int) -> st.SearchStrategy[str]:
    piece = st.one_of(
        texts(max_size=4), st.sampled_from(_LONE_SURROGATES), st.sampled_from(_SURROGATE_PAIRS)
    )
    return texts(max_size=max_size) | st.lists(piece, min_size=1, max_size=max_size // 2 or 1).map(
        "".join
    )


def fact_texts(*, max_size: int = 20) -> st.SearchStrategy[str]:
    """Texts a *stored fact* may hold: often with lone surrogates (spec §15) and
    with a high surrogate directly followed by a low one (spec §12.1).

    What an exception message or a gatekeeper result may carry into a state;
    never an agent payload's text. The pair of code points is the one input
    JSON cannot store as is: the fact codec stores it so that it reloads to
    the identical value, and the properties check that it does.
    """
    return _fact_texts(max_size)


@functools.cache
def _non_blank(max_size: int = 40) -> st.SearchStrategy[str]:
    return texts(min_size=1, max_size=max_size).filter(lambda text: bool(text.strip()))


_IDENTIFIERS = st.one_of(_SLUG, texts(min_size=1, max_size=16))
_TOOL_NAMES = st.one_of(
    st.text(_TOOL_NAME_ALPHABET, min_size=1, max_size=12),
    st.text(_TOOL_NAME_ALPHABET, min_size=65, max_size=70),
    texts(min_size=1, max_size=16),
)


def identifiers() -> st.SearchStrategy[str]:
    """Non-empty ids (spec §5 "every id is a non-empty string"): slugs, sometimes any text."""
    return _IDENTIFIERS


def tool_names() -> st.SearchStrategy[str]:
    """Non-empty tool names; many valid for the fallback overview (§6.8), some not."""
    return _TOOL_NAMES


_PATH_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
_PATH_SEGMENT = st.one_of(
    _PATH_NAME.map(lambda name: f".{name}"),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="'\\"), max_size=8).map(
        lambda key: f"['{key}']"
    ),
    st.integers(0, 12).map(lambda index: f"[{index}]"),
)


_RAW_PATHS = st.one_of(
    st.lists(_PATH_SEGMENT, max_size=4).map(lambda segments: "$" + "".join(segments)),
    texts(min_size=1, max_size=16),
)


def raw_paths() -> st.SearchStrategy[str]:
    """``raw_path`` values: mostly the JSONPath subset of spec §9, sometimes any text."""
    return _RAW_PATHS


def json_values(*, max_leaves: int = 12) -> st.SearchStrategy[JsonValue]:
    """Any JSON value :func:`json.loads` can return (finite numbers, no surrogates)."""
    return _json_values(max_leaves)


@functools.cache
def _json_values(max_leaves: int) -> st.SearchStrategy[JsonValue]:
    scalars: st.SearchStrategy[JsonValue] = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(max_size=20),
    )

    def extend(children: st.SearchStrategy[JsonValue]) -> st.SearchStrategy[JsonValue]:
        return st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(texts(max_size=8), children, max_size=4),
        )

    return st.recursive(scalars, extend, max_leaves=max_leaves)


# --- request material ------------------------------------------------------------


def skill_catalogs(*, max_size: int = 4) -> st.SearchStrategy[tuple[Skill, ...]]:
    """A skill catalog with unique names."""
    return _skill_catalogs(max_size)


def _skill_name(skill: Skill) -> str:
    return skill.name


@functools.cache
def _skill_catalogs(max_size: int) -> st.SearchStrategy[tuple[Skill, ...]]:
    skill = st.builds(Skill, name=identifiers(), description=texts())
    return st.lists(skill, max_size=max_size, unique_by=_skill_name).map(tuple)


def history_messages(*, max_size: int = 4) -> st.SearchStrategy[tuple[HistoryMessage, ...]]:
    """Chat history messages (role and content are any text)."""
    return _history_messages(max_size)


@functools.cache
def _history_messages(max_size: int) -> st.SearchStrategy[tuple[HistoryMessage, ...]]:
    roles = st.sampled_from(["user", "assistant", "system"]) | texts()
    message = st.builds(HistoryMessage, role=roles, content=texts())
    return st.lists(message, max_size=max_size).map(tuple)


@functools.cache
def diagnosis_configs() -> st.SearchStrategy[DiagnosisConfig]:
    """Every valid :class:`DiagnosisConfig` (the ranges of spec §4)."""
    return st.builds(
        DiagnosisConfig,
        # Defaults first: Hypothesis prefers (and shrinks towards) early choices.
        technical_retry_limit=st.sampled_from([1, 0, 2, 3]),
        evidence_retry_limit=st.sampled_from([1, 0]),
        history_limit=st.integers(0, 100),
        max_item_chars=st.integers(20, 10000),
        locale=st.sampled_from(Locale),
    )


@functools.cache
def run_configs() -> st.SearchStrategy[RunConfig]:
    """Run configs with non-empty ids and string metadata."""
    return st.builds(
        RunConfig,
        run_id=identifiers(),
        session_id=identifiers(),
        metadata=st.dictionaries(texts(max_size=8), texts(max_size=8), max_size=3),
    )


@functools.cache
def diagnosis_requests() -> st.SearchStrategy[DiagnosisRequest]:
    """A complete request: question, run, history, catalog and configuration."""
    return st.builds(
        DiagnosisRequest,
        question=_non_blank(),
        run=run_configs(),
        history=history_messages(),
        skills=skill_catalogs(),
        config=diagnosis_configs(),
    )


# --- host subclasses (spec §15) ---------------------------------------------------

V = TypeVar("V")


@functools.cache
def _host_subclass(base: type[Any]) -> type[Any]:
    """An ``attrs`` subclass of ``base`` with two extra fields, as a host might write."""
    extra = {
        "body": attrs.field(default=""),
        "private_notes": attrs.field(factory=dict),
    }
    return attrs.make_class(f"Host{base.__name__}", extra, bases=(base,), frozen=True)


def host_subclassed(value: V, secret: str) -> V:
    """``value`` as an instance of a host subclass whose extra fields hold ``secret``.

    The subclass of an ``attrs`` input value (``Skill``, ``HistoryMessage``,
    ``Alert``, ...) adds a ``body`` string and a ``private_notes`` mapping,
    both carrying ``secret``. Spec §15: values are whitelisted by field, not by
    class, so ``secret`` must never reach an agent.
    """
    base: Any = type(value)
    fields = {field.name: getattr(value, field.name) for field in attrs.fields(base)}
    subclass = _host_subclass(base)
    made: V = subclass(**fields, body=secret, private_notes={"notes": [secret]})
    return made


# --- §5.1 planner_plan -------------------------------------------------------------


_PLAN_STEPS = st.lists(
    st.builds(
        PlanStep,
        step_id=identifiers(),
        goal=texts(min_size=1),
        tools=st.lists(texts(max_size=12), max_size=3).map(tuple),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda item: item.step_id,
)


@st.composite
def planner_plans(draw: st.DrawFn, skill_names: Sequence[str] = ()) -> PlannerPlan:
    """Valid plans; ``selected_skill`` is None or one of ``skill_names`` (the catalog)."""
    steps = draw(_PLAN_STEPS)
    selected = draw(st.sampled_from((None, *skill_names)))
    return PlannerPlan(tuple(steps), selected)


# --- §5.2 executor_evidence_v2 ---------------------------------------------------------


@functools.cache
def evidence_bindings() -> st.SearchStrategy[EvidenceBinding]:
    """One binding with four non-empty strings."""
    return st.builds(
        EvidenceBinding,
        source_invocation_id=identifiers(),
        tool_name=tool_names(),
        raw_path=raw_paths(),
        evidence_excerpt=texts(min_size=1),
    )


def _binding_key(binding: EvidenceBinding) -> tuple[str, str, str]:
    return (binding.source_invocation_id, binding.tool_name, binding.raw_path)


@functools.cache
def _binding_lists(max_size: int) -> st.SearchStrategy[list[EvidenceBinding]]:
    return st.lists(evidence_bindings(), min_size=1, max_size=max_size, unique_by=_binding_key)


@st.composite
def claims(draw: st.DrawFn, claim_id: str | None = None, *, max_bindings: int = 3) -> Claim:
    """A claim with 1..``max_bindings`` bindings, no two sharing their key in the claim."""
    bindings = draw(_binding_lists(max_bindings))
    return Claim(
        claim_id=claim_id if claim_id is not None else draw(identifiers()),
        text=draw(texts(min_size=1)),
        bindings=tuple(bindings),
        is_critical=draw(st.booleans()),
    )


@functools.cache
def tool_trace_entries() -> st.SearchStrategy[ToolTraceEntry]:
    """One entry of ``tool_trace_summary``."""
    return st.builds(
        ToolTraceEntry,
        tool_name=tool_names(),
        success=st.booleans(),
        invocation_id=st.none() | identifiers(),
    )


@st.composite
def executor_evidences(
    draw: st.DrawFn,
    *,
    claim_ids: st.SearchStrategy[str] | None = None,
    min_claims: int = 0,
    max_claims: int = 4,
) -> ExecutorEvidence:
    """Valid ``executor_evidence_v2`` snapshots.

    ``evidence_status`` follows the claims (``no_evidence`` exactly when there
    are none); claim ids are unique, drawn from ``claim_ids`` when given.
    """
    ids = draw(
        st.lists(
            claim_ids if claim_ids is not None else identifiers(),
            min_size=min_claims,
            max_size=max_claims,
            unique=True,
        )
    )
    found = tuple(draw(claims(claim_id)) for claim_id in ids)
    return ExecutorEvidence(
        evidence_status=EvidenceStatus.EVIDENCE_FOUND if found else EvidenceStatus.NO_EVIDENCE,
        claims=found,
        hypotheses=tuple(draw(_HYPOTHESES)),
        tool_trace_summary=tuple(draw(_TRACES)),
    )


_HYPOTHESES = st.lists(
    st.builds(Hypothesis, text=texts(), missing_evidence=st.none() | texts()), max_size=2
)
_TRACES = st.lists(tool_trace_entries(), max_size=3)


# --- §5.3 verifier_output ----------------------------------------------------------------


def fact_checks(claim_ids: st.SearchStrategy[str]) -> st.SearchStrategy[FactCheck]:
    """One ``facts_checked`` item about a claim id drawn from ``claim_ids``."""
    return st.builds(
        FactCheck,
        claim_id=claim_ids,
        fact=texts(),
        is_critical=st.booleans(),
        verification=st.sampled_from(Verification),
    )


@st.composite
def verifier_outputs(
    draw: st.DrawFn, claim_ids: Sequence[str] = (), *, unknown_ids: bool = False
) -> VerifierOutput:
    """Valid verifier outputs whose facts and allowed ids refer to ``claim_ids``.

    With ``unknown_ids`` some ids are fresh (the workflow drops and records
    them, spec §5.3); with neither, both lists are empty.
    """
    referred = _referred_ids(tuple(claim_ids), unknown_ids)
    if referred is not None:
        facts_of, allowed_of = referred
        facts = tuple(draw(facts_of))
        allowed = tuple(draw(allowed_of))
    else:
        facts, allowed = (), ()
    return VerifierOutput(
        verdict=draw(_VERIFIER_VERDICTS),
        groundedness_score=draw(_SCORES),
        facts_checked=facts,
        allowed_claim_ids=allowed,
        critical_fact_count=draw(_CRITICAL_COUNTS),
        missing_info=tuple(draw(_TEXT_LISTS)),
        recommended_actions=tuple(draw(_TEXT_LISTS)),
        rationale=draw(texts()),
    )


_VERIFIER_VERDICTS = st.sampled_from([Verdict.LOW_CONFID, Verdict.PASS, Verdict.REJECT])
_SCORES = st.floats(0.0, 1.0)
_CRITICAL_COUNTS = st.none() | st.integers(0, 10)
_TEXT_LISTS = st.lists(texts(), max_size=3)


# The claim ids of one run are asked for by each of its verifier replies: the
# strategies over them are built once per run, not once per reply.
@functools.lru_cache(maxsize=64)
def _referred_ids(
    claim_ids: tuple[str, ...], unknown_ids: bool
) -> tuple[st.SearchStrategy[list[FactCheck]], st.SearchStrategy[list[str]]] | None:
    """The facts and allowed ids of a verifier output over ``claim_ids`` (None: no id at all)."""
    pool: list[st.SearchStrategy[str]] = []
    if claim_ids:
        pool.append(st.sampled_from(list(claim_ids)))
    if unknown_ids:
        pool.append(identifiers())
    if not pool:
        return None
    ids = st.one_of(pool)
    return st.lists(fact_checks(ids), max_size=4), st.lists(ids, max_size=4, unique=True)


# --- §5.4 composer_output ------------------------------------------------------------------


@st.composite
def composer_outputs(draw: st.DrawFn, allowed_claim_ids: Sequence[str] = ()) -> ComposerOutput:
    """Valid composer outputs citing only ids of ``allowed_claim_ids``."""
    cited: tuple[str, ...] = ()
    if allowed_claim_ids:
        cited = tuple(draw(st.lists(st.sampled_from(list(allowed_claim_ids)), unique=True)))
    return ComposerOutput(answer=draw(_non_blank(200)), cited_claim_ids=cited)


# --- §6.1 gatekeeper result (value form) ------------------------------------------------------


_CHECKED_BINDING_LISTS = st.lists(
    st.builds(
        CheckedBinding,
        claim_id=identifiers(),
        source_invocation_id=identifiers(),
        tool_name=identifiers(),
        raw_path=raw_paths(),
        status=st.sampled_from(BindingCheckStatus),
        matched_text=st.none() | texts(min_size=1),
        reason=st.none() | texts(),
    ),
    max_size=3,
)
_REASON_CODE_LISTS = st.lists(texts(max_size=12), max_size=2)


@st.composite
def gatekeeper_result_values(draw: st.DrawFn) -> GatekeeperResult:
    """Well-shaped :class:`GatekeeperResult` values (for round trips)."""
    return GatekeeperResult(
        status=draw(st.sampled_from(("pass", "fail"))),
        level=draw(st.sampled_from((None, "pass", "low_confid", "reject"))),
        checked_bindings=tuple(draw(_CHECKED_BINDING_LISTS)),
        reason_codes=tuple(draw(_REASON_CODE_LISTS)),
    )
