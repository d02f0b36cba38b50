"""Strategies for whole runs: scenario documents (spec §9), effect scripts, planted canaries.

* :func:`scenarios` draws complete spec §9 documents. Most agent replies are
  valid payloads that refer to each other (plans use the catalog, verifier
  outputs the executor's claim ids, gatekeeper results the executor's
  bindings), so runs reach every node; the rest are scripted errors of every
  kind and hostile texts.
* :func:`effect_scripts` draws the same kind of run as Python doubles, so
  replies can also raise *any* exception and the gatekeeper can return any
  Python object.
* :func:`planted_scenarios` draws scenarios with a unique canary in every
  place whose content must not travel (spec §6.6, §6.8, §10 invariant 2);
  :meth:`PlantedScenario.leaks` lists every canary found where it may not be.
"""

from __future__ import annotations

import enum
import functools
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
from hypothesis import strategies as st

from .. import (
    AsyncEffects,
    DiagnosisConfig,
    DiagnosisRequest,
    DiagnosisState,
    Effects,
    ExecutorEvidence,
    FailureClassifier,
    JsonValue,
    NonRetryableError,
    Outcome,
    ToolBlockedError,
    Verdict,
    default_failure_classifier,
    to_wire,
)
from ..machine import AgentName
from ..protocol import FactCheck, Verification, VerifierOutput
from ..scenarios import ERROR_KINDS
from ._doubles import AsyncFakeGatekeeper, AsyncScriptedInvoker, Reply, scripted_effects
from ._results import (
    BindingKey,
    _checked_entry,
    gatekeeper_raw_results,
    gatekeeper_results,
    hostile_gatekeeper_factories,
    tool_ledger_records,
)
from ._texts import (
    adversarial_texts,
    json_document_texts,
    payload_texts,
    random_garbage_texts,
)
from ._values import (
    composer_outputs,
    diagnosis_configs,
    diagnosis_requests,
    executor_evidences,
    fact_texts,
    history_messages,
    identifiers,
    json_values,
    planner_plans,
    run_configs,
    skill_catalogs,
    texts,
    verifier_outputs,
)

__all__ = [
    "PLANT_SINKS",
    "EffectScript",
    "Leak",
    "Plant",
    "PlantedScenario",
    "Sink",
    "agent_exceptions",
    "effect_scripts",
    "planted_scenarios",
    "scenarios",
    "unknown_exceptions",
]

T = TypeVar("T")


# --- exceptions ------------------------------------------------------------------------

_UNKNOWN_BASES: tuple[type[BaseException], ...] = (
    Exception, ValueError, RuntimeError, LookupError, KeyError, ArithmeticError, OSError,
    AttributeError, TypeError, UnicodeError, PermissionError, FileNotFoundError,
)
_BASE_ONLY: tuple[type[BaseException], ...] = (BaseException, KeyboardInterrupt, GeneratorExit)
_FALSY: tuple[object, ...] = (False, 0, 0.0, "", None, (), [], {})
_ATTRIBUTE = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda name: name != "retryable"
)


class _BoolRaises:
    def __bool__(self) -> bool:
        raise ValueError("no truth value")


def _raising_property(error: type[Exception]) -> property:
    def get(self: object) -> object:
        raise error("retryable cannot be read")

    return property(get)


def _falsy_getattr(value: object) -> Callable[[object, str], object]:
    def __getattr__(self: object, name: str) -> object:
        if name == "retryable":
            return value
        raise AttributeError(name)

    return __getattr__


def _fake_class(pretended: type[BaseException]) -> property:
    def get(self: object) -> type[BaseException]:
        return pretended

    return property(get)


def _raising_str(self: object) -> str:
    raise RuntimeError("no message")


@st.composite
def unknown_exceptions(draw: st.DrawFn, *, base_exceptions: bool = False) -> BaseException:
    """Instances of exception classes no classifier has heard of (spec §6.7, §10.6).

    Random names and bases (never ``TimeoutError`` / ``ConnectionError``),
    random attributes, and every way of *not* carrying a truthy ``retryable``:
    none, a falsy one, one that raises when read or when its truth is taken,
    a ``__getattr__`` hook, a ``__str__`` that raises, even a ``__class__``
    that pretends to be ``TimeoutError``. With ``base_exceptions`` the base
    may also be a ``BaseException`` that is not an ``Exception``.
    """
    bases = _UNKNOWN_BASES + (_BASE_ONLY if base_exceptions else ())
    base = draw(st.sampled_from(bases))
    namespace: dict[str, object] = dict(draw(_attribute_namespaces()))
    flag = draw(
        st.sampled_from(("none", "falsy", "property", "bool_raises", "getattr", "fake_class"))
    )
    if flag == "falsy":
        namespace["retryable"] = draw(st.sampled_from(_FALSY))
    elif flag == "property":
        namespace["retryable"] = _raising_property(
            draw(st.sampled_from((RuntimeError, AttributeError, ValueError)))
        )
    elif flag == "bool_raises":
        namespace["retryable"] = _BoolRaises()
    elif flag == "getattr":
        namespace["__getattr__"] = _falsy_getattr(draw(st.sampled_from(_FALSY)))
    elif flag == "fake_class":
        namespace["__class__"] = _fake_class(
            draw(st.sampled_from((TimeoutError, ConnectionError, ConnectionResetError)))
        )
    if draw(st.booleans()):
        namespace["__str__"] = _raising_str
    name = draw(_CLASS_NAMES)
    cls: type[BaseException] = type(name, (base,), namespace)
    return cls(draw(texts(max_size=20)))


_CLASS_NAMES = st.from_regex(r"[A-Z][A-Za-z0-9]{0,15}", fullmatch=True)


@functools.cache
def _attribute_namespaces() -> st.SearchStrategy[dict[str, object]]:
    return st.dictionaries(_ATTRIBUTE, json_values(max_leaves=2) | st.just(True), max_size=3)


class _Retryable(Exception):
    retryable = True


def agent_exceptions() -> st.SearchStrategy[Exception]:
    """Any exception an effect may raise: known ones of every kind and unknown ones.

    Messages often hold lone surrogates (:func:`fact_texts`): a state keeps them.
    """
    return _agent_exceptions()


# Strategies are immutable: those a run's draw asks for again and again are built once.


@functools.cache
def _agent_exceptions() -> st.SearchStrategy[Exception]:
    message = fact_texts(max_size=20)
    known: st.SearchStrategy[Exception] = st.one_of(
        message.map(TimeoutError),
        message.map(ConnectionError),
        message.map(ConnectionResetError),
        message.map(ToolBlockedError),
        message.map(NonRetryableError),
        message.map(_Retryable),
        message.map(ValueError),
    )
    return st.one_of(known, unknown_exceptions().map(_as_exception))


def _as_exception(error: BaseException) -> Exception:
    assert isinstance(error, Exception)  # unknown_exceptions() without base_exceptions
    return error


# --- one run's replies -----------------------------------------------------------------------


@attrs.frozen
class _Plan:
    """One run's drawn replies, in the form both a scenario document and a script read.

    ``agents`` maps each agent's name to its replies, planner to composer in
    this order (the order of a scenario's ``responses`` and of the effects).
    """

    agents: dict[str, tuple[object, ...]]
    gatekeeper: tuple[object, ...]
    executor_outputs: tuple[ExecutorEvidence, ...]


_ROLL = st.integers(0, 19)
# Two claims first: a gatekeeper can then pass one and fail the other (LOW_CONFID).
_FIRST_CLAIMS = st.sampled_from((2, 1, 3, 0))


def _reply_entry(
    draw: st.DrawFn,
    roll: int,
    value: object,
    reply: Callable[[str], object],
    error: st.SearchStrategy[object],
    adversarial: bool,
) -> object:
    """For a roll in 0..19: mostly the valid text of ``value``, else an error or a hostile text."""
    if roll < 16:
        return reply(draw(payload_texts(value)))
    if roll < 18 or not adversarial:
        return draw(error)
    hostile = st.one_of(adversarial_texts(to_wire(value)), random_garbage_texts())
    return reply(draw(hostile))


# Its own strategy (not an integer index): Hypothesis copies values between draws
# of the same strategy, which would tie the verdict to unrelated choices.
_ANY_VERDICT = st.sampled_from((Verdict.PASS, Verdict.LOW_CONFID, Verdict.REJECT))


@st.composite
def _gap_biased_verifier_outputs(
    draw: st.DrawFn, first_ids: Sequence[str], claim_ids: Sequence[str]
) -> VerifierOutput:
    """Verifier outputs with any verdict, half of them with a critical gap on a round-1 claim."""
    output = draw(verifier_outputs(claim_ids, unknown_ids=True))
    output = attrs.evolve(output, verdict=draw(_ANY_VERDICT))
    if draw(st.booleans()) and first_ids:
        gap = FactCheck(
            claim_id=draw(st.sampled_from(list(first_ids))),
            fact=draw(texts()),
            is_critical=True,
            verification=draw(
                st.sampled_from((Verification.INDIRECT_SUPPORT, Verification.NO_EVIDENCE))
            ),
        )
        output = attrs.evolve(output, facts_checked=(*output.facts_checked, gap))
    return output


def _draw_plan(
    draw: st.DrawFn,
    skill_names: Sequence[str],
    config: DiagnosisConfig,
    *,
    adversarial: bool,
    reply: Callable[[str], object],
    error: st.SearchStrategy[object],
    gatekeeper_result: Callable[[JsonValue], object],
    gatekeeper_error: st.SearchStrategy[object],
    gatekeeper_hostile: st.SearchStrategy[object] | None,
) -> _Plan:
    # The shape of the run is drawn first, so that the large draws of texts
    # that follow cannot skew it.
    attempts = config.technical_retry_limit + 1
    counts = {
        "planner": draw(st.integers(1, attempts + 1)),
        "executor": 2 if draw(st.integers(0, 4)) else 1,
        "verifier": draw(st.integers(1, 2 * attempts + 1)),
        "composer": draw(st.integers(1, attempts + 1)),
        "gatekeeper": 2 if draw(st.integers(0, 9)) else draw(st.integers(0, 1)),
    }
    rolls = iter(draw(st.lists(_ROLL, min_size=sum(counts.values()),
                               max_size=sum(counts.values()))))
    cite = draw(st.booleans())
    # A quarter of the runs open with a failing executor: nothing may retry it.
    executor_fails_first = draw(st.integers(0, 3)) == 0
    failure_roll = draw(st.integers(16, 19))
    first = draw(_first_evidences(draw(_FIRST_CLAIMS)))
    first_ids = [claim.claim_id for claim in first.claims]
    reused = st.sampled_from(first_ids) | identifiers() if first_ids else identifiers()
    second = draw(executor_evidences(claim_ids=reused, max_claims=3))
    outputs = (first, second)
    claim_ids = sorted({claim.claim_id for output in outputs for claim in output.claims})

    def entries(count: int, values: st.SearchStrategy[Any]) -> tuple[object, ...]:
        return tuple(
            _reply_entry(draw, next(rolls), draw(values), reply, error, adversarial)
            for _ in range(count)
        )

    planner = entries(counts["planner"], _plans(tuple(skill_names)))
    executor = tuple(
        _reply_entry(draw, next(rolls), output, reply, error, adversarial)
        for output in outputs[: counts["executor"]]
    )
    if executor_fails_first:
        executor = (_reply_entry(draw, failure_roll, first, reply, error, adversarial), *executor)
    verifier = entries(
        counts["verifier"], _gap_biased_verifier_outputs(tuple(first_ids), tuple(claim_ids))
    )
    composer = entries(counts["composer"], _composer_outputs(tuple(claim_ids) if cite else ()))
    gatekeeper: list[object] = []
    for output in outputs[: counts["gatekeeper"]]:
        roll = next(rolls)
        if roll < 14:
            gatekeeper.append(gatekeeper_result(draw(gatekeeper_results(output))))
        elif roll < 16:
            gatekeeper.append(draw(gatekeeper_error))
        elif roll < 19 or gatekeeper_hostile is None:
            gatekeeper.append(gatekeeper_result(draw(gatekeeper_raw_results(output))))
        else:
            gatekeeper.append(draw(gatekeeper_hostile))
    agents = {"planner": planner, "executor": executor, "verifier": verifier, "composer": composer}
    return _Plan(agents, tuple(gatekeeper), outputs)


@functools.cache
def _first_evidences(min_claims: int) -> st.SearchStrategy[ExecutorEvidence]:
    return executor_evidences(min_claims=min_claims, max_claims=3)


@functools.lru_cache(maxsize=64)
def _plans(skill_names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return planner_plans(skill_names)


@functools.lru_cache(maxsize=64)
def _composer_outputs(claim_ids: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return composer_outputs(claim_ids)


# --- scenario documents --------------------------------------------------------------------


def _text_entry(text: str) -> dict[str, JsonValue]:
    return {"text": text}


@functools.cache
def _error_entries() -> st.SearchStrategy[object]:
    return st.builds(
        lambda kind, message: {"error": {"kind": kind, "message": message}},
        st.sampled_from(ERROR_KINDS),
        texts(max_size=20),
    )


@functools.cache
def _gatekeeper_error_entries() -> st.SearchStrategy[object]:
    return st.builds(
        lambda message, kind: {"error": {"message": message, **kind}},
        texts(max_size=20),
        st.sampled_from([{}, {"kind": "retryable"}]),
    )


@st.composite
def scenarios(
    draw: st.DrawFn, *, gatekeeper: str = "any", adversarial: bool = True
) -> dict[str, Any]:
    """Complete, loadable scenario documents (spec §9).

    ``gatekeeper`` is ``"scripted"`` (a ``gatekeeper`` list), ``"ledger"`` (a
    ``tool_ledger`` checked by the reference gatekeeper) or ``"any"``. With
    ``adversarial`` off, replies are valid payloads or scripted errors only.
    Every document passes :func:`~diagnosis_core.load_scenario`; ``replay``
    of it must end, whatever the replies.
    """
    skills = draw(skill_catalogs())
    config = draw(diagnosis_configs())
    plan = _draw_plan(
        draw,
        [skill.name for skill in skills],
        config,
        adversarial=adversarial,
        reply=_text_entry,
        error=_error_entries(),
        gatekeeper_result=lambda result: {"result": result},
        gatekeeper_error=_gatekeeper_error_entries(),
        gatekeeper_hostile=None,
    )
    document: dict[str, Any] = {
        "question": draw(_questions()),
        "config": to_wire(config),
        "responses": {agent: list(replies) for agent, replies in plan.agents.items()},
    }
    if draw(st.booleans()):
        document["run"] = to_wire(draw(run_configs()))
    if draw(st.booleans()):
        history = to_wire(draw(history_messages()))
        assert isinstance(history, list)
        for item in history:
            if isinstance(item, dict) and draw(st.booleans()):
                item["x-extra"] = draw(texts(max_size=8))
        document["history"] = history
    with_skills = bool(skills) or draw(st.booleans())
    if with_skills:
        document["skills"] = [
            {"name": skill.name, "description": skill.description,
             **({"body": draw(texts(max_size=12))} if draw(st.booleans()) else {})}
            for skill in skills
        ]
    mode = gatekeeper if gatekeeper != "any" else draw(st.sampled_from(("scripted", "ledger")))
    if mode == "ledger":
        records = draw(tool_ledger_records(*plan.executor_outputs))
        document["tool_ledger"] = [
            {**record, **draw(_audits(record.get("success") is False))} for record in records
        ]
    else:
        document["gatekeeper"] = list(plan.gatekeeper)
    return document


@functools.cache
def _questions() -> st.SearchStrategy[str]:
    return texts(min_size=1).filter(str.strip)


@functools.cache
def _audits(failed: bool) -> st.SearchStrategy[dict[str, Any]]:
    """The audit fields a recorder writes (spec §9 v1.1, §13); null means absent;
    an ``error`` only on a failed call (on a successful one it is refused)."""
    failure = st.fixed_dictionaries({"type": texts(max_size=8), "message": texts(max_size=8)})
    optional: dict[str, st.SearchStrategy[Any]] = {
        "input": json_values(max_leaves=3),
        "duration_ms": st.none() | st.integers(0, 10**6) | st.floats(0, 1e6),
        "error": st.none() | failure if failed else st.none(),
    }
    return st.fixed_dictionaries({}, optional=optional)


# --- effect scripts ---------------------------------------------------------------------------


@attrs.frozen
class _Fresh:
    """A gatekeeper value made anew for every run of a script.

    Some hostile values count their reads (a mapping that says ``pass`` to
    its first reader only); shared between two runs, the second run would see
    a different value than the first, so each run gets its own.
    """

    make: Callable[[], object]


def _fresh(items: tuple[object, ...]) -> tuple[object, ...]:
    return tuple(item.make() if isinstance(item, _Fresh) else item for item in items)


@attrs.frozen
class EffectScript:
    """A request and the scripted behaviour of every effect of one run.

    Agent scripts hold message texts and exceptions (any class); the
    gatekeeper script holds raw results (any object) and exceptions; a hostile value
    that counts its reads is made anew for every run.
    :meth:`effects` builds fresh doubles, so one script can run many times.
    """

    request: DiagnosisRequest
    planner: tuple[Reply, ...]
    executor: tuple[Reply, ...]
    verifier: tuple[Reply, ...]
    composer: tuple[Reply, ...]
    gatekeeper: tuple[object, ...]

    def effects(self, classifier: FailureClassifier = default_failure_classifier) -> Effects:
        """Fresh synchronous doubles playing this script."""
        return scripted_effects(
            planner=self.planner,
            executor=self.executor,
            verifier=self.verifier,
            composer=self.composer,
            gatekeeper=_fresh(self.gatekeeper),
            classifier=classifier,
        )

    def async_effects(
        self, classifier: FailureClassifier = default_failure_classifier
    ) -> AsyncEffects:
        """Fresh asyncio doubles playing this script."""
        return AsyncEffects(
            planner=AsyncScriptedInvoker(self.planner),
            executor=AsyncScriptedInvoker(self.executor),
            verifier=AsyncScriptedInvoker(self.verifier),
            composer=AsyncScriptedInvoker(self.composer),
            gatekeeper=AsyncFakeGatekeeper(_fresh(self.gatekeeper)),
            classifier=classifier,
        )


@functools.cache
def _hostile_gatekeepers() -> st.SearchStrategy[object]:
    return st.sampled_from(hostile_gatekeeper_factories()).map(_Fresh)


def _replies(items: tuple[object, ...]) -> tuple[Reply, ...]:
    return tuple(item for item in items if isinstance(item, str | BaseException))


@st.composite
def effect_scripts(
    draw: st.DrawFn,
    *,
    request: DiagnosisRequest | None = None,
    adversarial: bool = True,
    exceptions: st.SearchStrategy[Exception] | None = None,
) -> EffectScript:
    """Scripts for every effect of one run (see :func:`scenarios`), as Python doubles.

    Failures are exceptions drawn from ``exceptions`` (default
    :func:`agent_exceptions`: every kind, unknown classes included); with
    ``adversarial``, the gatekeeper sometimes returns hostile Python values.
    """
    if request is None:
        request = draw(diagnosis_requests())
    error = exceptions if exceptions is not None else agent_exceptions()
    plan = _draw_plan(
        draw,
        [skill.name for skill in request.skills],
        request.config,
        adversarial=adversarial,
        reply=lambda text: text,
        error=error,
        gatekeeper_result=lambda result: result,
        gatekeeper_error=error,
        gatekeeper_hostile=_hostile_gatekeepers() if adversarial else None,
    )
    agents = {agent: _replies(replies) for agent, replies in plan.agents.items()}
    return EffectScript(request=request, **agents, gatekeeper=plan.gatekeeper)


# --- planted canaries ----------------------------------------------------------------------


class Plant(enum.StrEnum):
    """Where a canary was planted (spec §6.2, §6.6, §6.8)."""

    EXCERPT = "executor evidence_excerpt"
    HYPOTHESIS = "executor hypothesis"
    TRACE_ID = "executor tool_trace_summary invocation_id"
    TRACE_TOOL = "valid tool name in tool_trace_summary"
    TRACE_BAD_TOOL = "invalid tool name in tool_trace_summary"
    UNKNOWN_FIELD = "unknown field of a payload, skill or history item"
    UNTRUSTED_CLAIM = "claim without a trusted binding"
    FAILED_BINDING = "field of a binding the gatekeeper failed"
    GATEKEEPER_PRIVATE = "gatekeeper reason, failed or unmatched matched_text, audit data"
    NOT_ALLOWED_CLAIM = "verified claim the verifier never allows"
    ALLOWED_CLAIM = "verified claim the verifier may allow"
    VERIFIER_FACT = "verifier fact of a critical gap"
    VERIFIER_PRIVATE = "verifier rationale, other facts, unknown claim ids"
    ERROR_MESSAGE = "message of a scripted failure"


class Sink(enum.StrEnum):
    """A place a run's content flows to: an agent input or a fallback answer."""

    PLANNER_INPUT = "planner input"
    EXECUTOR_INPUT = "executor input"
    VERIFIER_INPUT = "verifier input"
    COMPOSER_INPUT = "composer input"
    PRE_VERIFICATION_FALLBACK = "pre-verification fallback"
    POST_VERIFICATION_FALLBACK = "post-verification fallback"


_S = Sink
PLANT_SINKS: Mapping[Plant, frozenset[Sink]] = MappingProxyType(
    {
        Plant.EXCERPT: frozenset(),
        Plant.HYPOTHESIS: frozenset(),
        Plant.TRACE_ID: frozenset(),
        Plant.TRACE_TOOL: frozenset({_S.PRE_VERIFICATION_FALLBACK}),
        Plant.TRACE_BAD_TOOL: frozenset(),
        Plant.UNKNOWN_FIELD: frozenset(),
        Plant.UNTRUSTED_CLAIM: frozenset(),
        Plant.FAILED_BINDING: frozenset(),
        Plant.GATEKEEPER_PRIVATE: frozenset(),
        # The round-2 executor and verifier see round 1's verified claims (spec §6.5).
        Plant.NOT_ALLOWED_CLAIM: frozenset({_S.EXECUTOR_INPUT, _S.VERIFIER_INPUT}),
        Plant.ALLOWED_CLAIM: frozenset(
            {_S.EXECUTOR_INPUT, _S.VERIFIER_INPUT, _S.COMPOSER_INPUT, _S.POST_VERIFICATION_FALLBACK}
        ),
        # Gaps travel in the retry context to the round-2 executor and verifier.
        Plant.VERIFIER_FACT: frozenset({_S.EXECUTOR_INPUT, _S.VERIFIER_INPUT}),
        Plant.VERIFIER_PRIVATE: frozenset(),
        Plant.ERROR_MESSAGE: frozenset(),
    }
)
"""The only sinks each planted content may reach; every other appearance is a leak."""

_TAGS: Mapping[Plant, str] = MappingProxyType(
    {
        Plant.EXCERPT: "EX", Plant.HYPOTHESIS: "HY", Plant.TRACE_ID: "TI",
        Plant.TRACE_TOOL: "TT", Plant.TRACE_BAD_TOOL: "TB", Plant.UNKNOWN_FIELD: "UF",
        Plant.UNTRUSTED_CLAIM: "UC", Plant.FAILED_BINDING: "FB", Plant.GATEKEEPER_PRIVATE: "GP",
        Plant.NOT_ALLOWED_CLAIM: "NA", Plant.ALLOWED_CLAIM: "AC", Plant.VERIFIER_FACT: "VF",
        Plant.VERIFIER_PRIVATE: "VP", Plant.ERROR_MESSAGE: "EM",
    }
)

_AGENT_SINKS: Mapping[str, Sink] = MappingProxyType(
    {
        AgentName.PLANNER.value: Sink.PLANNER_INPUT,
        AgentName.EXECUTOR.value: Sink.EXECUTOR_INPUT,
        AgentName.VERIFIER.value: Sink.VERIFIER_INPUT,
        AgentName.COMPOSER.value: Sink.COMPOSER_INPUT,
    }
)


@attrs.frozen
class Leak:
    """A planted canary found in a sink it may not reach."""

    plant: Plant
    canary: str
    sink: Sink
    where: str


def _sink_texts(run: DiagnosisState | Mapping[str, Any]) -> Iterator[tuple[Sink, str, str]]:
    """Every (sink, description, text) of a finished state or a replay result object."""
    if isinstance(run, DiagnosisState):
        records = [(r.agent.value, r.round, r.attempt, r.input) for r in run.invocations]
        outcome = run.outcome.value if run.outcome is not None else None
        answer = run.answer
    else:
        records = [
            (item["agent"], item["round"], item["attempt"], item["input"])
            for item in run["invocations"]
        ]
        outcome, answer = run.get("outcome"), run.get("answer")
    for agent, round, attempt, text in records:
        yield _AGENT_SINKS[agent], f"{agent} round {round} attempt {attempt}", text
    if answer is not None and outcome == Outcome.PRE_VERIFICATION_FALLBACK.value:
        yield Sink.PRE_VERIFICATION_FALLBACK, "final answer", answer
    if answer is not None and outcome == Outcome.POST_VERIFICATION_FALLBACK.value:
        yield Sink.POST_VERIFICATION_FALLBACK, "final answer", answer


@attrs.frozen
class PlantedScenario:
    """A scenario document with a unique canary in every place whose content must not travel.

    ``canaries`` maps each :class:`Plant` to the canaries planted there;
    :data:`PLANT_SINKS` says where each may legitimately appear. A canary
    looks like ``QEX12Zabcdq``-ish text that no other canary contains.
    """

    document: dict[str, Any]
    canaries: Mapping[Plant, tuple[str, ...]]

    def leaks(self, run: DiagnosisState | Mapping[str, Any]) -> tuple[Leak, ...]:
        """Every canary found in a sink it may not reach, for a finished run.

        ``run`` is the final :class:`~diagnosis_core.DiagnosisState` or the
        object :func:`~diagnosis_core.replay` returned.
        """
        found: list[Leak] = []
        for sink, where, text in _sink_texts(run):
            for plant, canaries in self.canaries.items():
                if sink in PLANT_SINKS[plant]:
                    continue
                found.extend(
                    Leak(plant, canary, sink, where) for canary in canaries if canary in text
                )
        return tuple(found)


class _Planter:
    def __init__(self, draw: st.DrawFn, nonce: str) -> None:
        self.draw = draw
        self.nonce = nonce
        self.counter = itertools.count(1)
        self.planted: dict[Plant, list[str]] = {plant: [] for plant in Plant}

    def __call__(self, plant: Plant) -> str:
        token = f"Q{_TAGS[plant]}{next(self.counter)}Z{self.nonce}Q"
        self.planted[plant].append(token)
        return token

    def maybe_unknown(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.draw(st.booleans()):
            obj["x-" + self(Plant.UNKNOWN_FIELD)] = self(Plant.UNKNOWN_FIELD)
        return obj

    def shuffled(self, items: list[T]) -> list[T]:
        return list(self.draw(st.permutations(items)))


@attrs.define
class _Round:
    document: dict[str, Any]
    allowed_ids: list[str]
    verified_ids: list[str]
    untrusted_ids: list[str]
    trusted: list[tuple[str, dict[str, Any]]]
    failed: list[tuple[str, dict[str, Any]]]


def _failed_binding(plant: _Planter) -> dict[str, Any]:
    return plant.maybe_unknown(
        {
            "source_invocation_id": plant(Plant.FAILED_BINDING),
            "tool_name": plant(Plant.FAILED_BINDING),
            "raw_path": plant(Plant.FAILED_BINDING),
            "evidence_excerpt": plant(Plant.EXCERPT),
        }
    )


def _failed_bindings(
    plant: _Planter, result: _Round, claim_id: str, count: int
) -> list[dict[str, Any]]:
    """``count`` bindings of ``claim_id`` that no ledger backs, recorded as expected to fail."""
    bindings = [_failed_binding(plant) for _ in range(count)]
    result.failed.extend((claim_id, binding) for binding in bindings)
    return bindings


def _planted_round(plant: _Planter, round: int) -> _Round:
    draw = plant.draw
    found: list[dict[str, Any]] = []
    result = _Round({}, [], [], [], [], [])
    allowable = draw(st.integers(0, 2))
    for index in range(allowable + draw(st.integers(0, 1))):
        claim_id = f"r{round}-c{index}"
        kind = Plant.ALLOWED_CLAIM if index < allowable else Plant.NOT_ALLOWED_CLAIM
        (result.allowed_ids if index < allowable else result.verified_ids).append(claim_id)
        bindings = []
        for position in range(draw(st.integers(1, 2))):
            binding = plant.maybe_unknown(
                {
                    "source_invocation_id": f"inv-{round}-{index}-{position}",
                    "tool_name": "query_logs",
                    "raw_path": f"$.items[{position}].message",
                    "evidence_excerpt": plant(Plant.EXCERPT),
                }
            )
            result.trusted.append((claim_id, binding))
            bindings.append(binding)
        bindings += _failed_bindings(plant, result, claim_id, draw(st.integers(0, 1)))
        found.append(
            plant.maybe_unknown(
                {"claim_id": claim_id, "text": plant(kind), "is_critical": draw(st.booleans()),
                 "bindings": plant.shuffled(bindings)}
            )
        )
    for _ in range(draw(st.integers(0, 2))):
        claim_id = plant(Plant.UNTRUSTED_CLAIM)
        result.untrusted_ids.append(claim_id)
        bindings = _failed_bindings(plant, result, claim_id, draw(st.integers(1, 2)))
        found.append(
            plant.maybe_unknown(
                {"claim_id": claim_id, "text": plant(Plant.UNTRUSTED_CLAIM),
                 "is_critical": draw(st.booleans()), "bindings": bindings}
            )
        )
    hypotheses = [
        plant.maybe_unknown(
            {"text": plant(Plant.HYPOTHESIS), "missing_evidence": plant(Plant.HYPOTHESIS)}
        )
        for _ in range(draw(st.integers(0, 2)))
    ]
    trace = []
    for _ in range(draw(st.integers(0, 3))):
        tool = (
            plant(Plant.TRACE_TOOL) if draw(st.booleans())
            else "bad tool " + plant(Plant.TRACE_BAD_TOOL)
        )
        entry: dict[str, Any] = {"tool_name": tool, "success": draw(st.booleans())}
        if draw(st.booleans()):
            entry["invocation_id"] = plant(Plant.TRACE_ID)
        trace.append(plant.maybe_unknown(entry))
    claims = plant.shuffled(found)
    result.document = plant.maybe_unknown(
        {
            "schema_version": "executor_evidence_v2",
            "evidence_status": "evidence_found" if claims else "no_evidence",
            "claims": claims,
            "hypotheses": hypotheses,
            "tool_trace_summary": trace,
        }
    )
    return result


def _key(claim_id: str, binding: Mapping[str, Any]) -> BindingKey:
    return (claim_id, binding["source_invocation_id"], binding["tool_name"], binding["raw_path"])


def _planted_gatekeeper(plant: _Planter, round: _Round) -> dict[str, Any]:
    draw = plant.draw
    entries = []
    for position, (claim_id, binding) in enumerate(round.trusted):
        entry = _checked_entry(_key(claim_id, binding), "pass")
        entry["matched_text"] = f"matched text {claim_id} {position}"
        if draw(st.booleans()):
            entry["reason"] = plant(Plant.GATEKEEPER_PRIVATE)
        entries.append(plant.maybe_unknown(entry))
    failed_entries = 0
    for claim_id, binding in round.failed:
        if draw(st.integers(0, 4)) == 0:
            continue  # not checked at all: never trusted either
        entry = _checked_entry(_key(claim_id, binding), "fail")
        entry["reason"] = plant(Plant.GATEKEEPER_PRIVATE)
        if draw(st.booleans()):
            entry["matched_text"] = plant(Plant.GATEKEEPER_PRIVATE)
        entries.append(plant.maybe_unknown(entry))
        failed_entries += 1
    for _ in range(draw(st.integers(0, 1))):
        owner = draw(st.sampled_from(round.allowed_ids + round.verified_ids + ["phantom"]))
        key = (owner, plant(Plant.GATEKEEPER_PRIVATE), "query_logs", "$.x")
        entry = _checked_entry(key, "pass")
        entry["matched_text"] = plant(Plant.GATEKEEPER_PRIVATE)
        entries.append(entry)
    roll = draw(st.integers(0, 9))
    result: dict[str, Any] = {"checked_bindings": plant.shuffled(entries)}
    if roll < 7:
        if failed_entries == 0 and roll < 5:
            result["status"] = "pass"
        else:
            result["status"] = "fail"
            result["level"] = "reject" if roll == 6 else "low_confid"
    elif roll == 7:
        result["status"] = "pass"
        result["level"] = draw(st.sampled_from(["low_confid", None]))
    else:
        return {"error": {"message": plant(Plant.ERROR_MESSAGE)}}
    if draw(st.booleans()):
        result["reason_codes"] = [plant(Plant.GATEKEEPER_PRIVATE)]
    return {"result": plant.maybe_unknown(result)}


def _planted_fact(plant: _Planter, rounds: Sequence[_Round]) -> dict[str, Any]:
    draw = plant.draw
    verified = [cid for r in rounds for cid in r.allowed_ids + r.verified_ids]
    others = [cid for r in rounds for cid in r.untrusted_ids]
    critical = draw(st.booleans())
    verification = draw(st.sampled_from(Verification))
    gap = critical and verification in (Verification.NO_EVIDENCE, Verification.INDIRECT_SUPPORT)
    if verified and draw(st.integers(0, 3)) > 0:
        claim_id = draw(st.sampled_from(verified))
        text = plant(Plant.VERIFIER_FACT if gap else Plant.VERIFIER_PRIVATE)
    else:
        claim_id = draw(st.sampled_from(others)) if others else plant(Plant.VERIFIER_PRIVATE)
        text = plant(Plant.VERIFIER_PRIVATE)
    return plant.maybe_unknown(
        {"claim_id": claim_id, "fact": text, "is_critical": critical,
         "verification": verification.value}
    )


# The interesting verdict first: Hypothesis prefers (and shrinks towards) early choices.
_VERDICTS = st.sampled_from([Verdict.LOW_CONFID, Verdict.PASS, Verdict.REJECT])
_GAP_NAMES = frozenset({Verification.NO_EVIDENCE.value, Verification.INDIRECT_SUPPORT.value})


def _planted_verifier(plant: _Planter, rounds: Sequence[_Round]) -> dict[str, Any]:
    draw = plant.draw
    allowable = [cid for r in rounds for cid in r.allowed_ids]
    untrusted = [cid for r in rounds for cid in r.untrusted_ids]
    allowed: list[str] = []
    if allowable:
        allowed = list(draw(st.lists(st.sampled_from(allowable), unique=True)))
    if draw(st.booleans()) and untrusted:
        allowed.append(draw(st.sampled_from(untrusted)))
    if draw(st.booleans()):
        allowed.append(plant(Plant.VERIFIER_PRIVATE))
    facts = [_planted_fact(plant, rounds) for _ in range(draw(st.integers(0, 2)))]
    first_round = rounds[0].allowed_ids + rounds[0].verified_ids
    if draw(st.booleans()) and first_round:  # a critical gap: the way to an evidence retry
        facts.append(
            {"claim_id": draw(st.sampled_from(first_round)), "fact": plant(Plant.VERIFIER_FACT),
             "is_critical": True, "verification": draw(st.sampled_from(sorted(_GAP_NAMES)))}
        )
    return plant.maybe_unknown(
        {
            "verdict": draw(_VERDICTS).value,
            "groundedness_score": draw(st.floats(0, 1)),
            "critical_fact_count": draw(st.none() | st.integers(0, 3)),
            "facts_checked": plant.shuffled(facts),
            "allowed_claim_ids": plant.shuffled(allowed),
            "missing_info": ["metrics of the connection pool"],
            "recommended_actions": ["check the pool size"],
            "rationale": plant(Plant.VERIFIER_PRIVATE),
        }
    )


def _planted_entry(plant: _Planter, document: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    roll = plant.draw(st.integers(0, 9))
    if roll < 8:
        return {"text": plant.draw(json_document_texts(document()))}
    if roll < 9:
        kind = plant.draw(st.sampled_from(ERROR_KINDS))
        return {"error": {"kind": kind, "message": plant(Plant.ERROR_MESSAGE)}}
    return {"text": plant.draw(st.text(max_size=50))}


def _document_of(round: _Round) -> Callable[[], dict[str, Any]]:
    return lambda: round.document


@st.composite
def planted_scenarios(draw: st.DrawFn) -> PlantedScenario:
    """Scenarios with a unique canary in every place that must not travel (spec §10.2).

    Canaries sit in excerpts, hypotheses, the tool trace, unknown fields of
    every payload (and of skills and history items), claims without a
    trusted binding, failed bindings, the gatekeeper's reasons and unmatched
    texts, verified claims the verifier never allows, the verifier's
    rationale and facts, unknown claim ids and error messages. Gatekeeper
    results only ever pass the bindings planted as trusted, so any canary
    outside its :data:`PLANT_SINKS` is a leak of the workflow.
    """
    plant = _Planter(draw, draw(st.text("abcdefghijkmnoprstuvwxy", min_size=4, max_size=8)))
    config: dict[str, Any] = {
        "technical_retry_limit": draw(st.sampled_from([1, 0, 2])),
        "evidence_retry_limit": draw(st.sampled_from([1, 0])),
        "locale": draw(st.sampled_from(["en", "zh-CN"])),
        "max_item_chars": 200,
    }
    attempts = int(config["technical_retry_limit"]) + 1
    skills = [
        plant.maybe_unknown({"name": f"skill-{index}", "description": f"playbook {index}"})
        for index in range(draw(st.integers(0, 2)))
    ]
    names: list[str | None] = [None, *(skill["name"] for skill in skills)]

    def plan() -> dict[str, Any]:
        steps = [
            plant.maybe_unknown({"step_id": f"s{index}", "goal": f"look at signal {index}",
                                 "tools": ["query_logs"]})
            for index in range(1, draw(st.integers(1, 2)) + 1)
        ]
        return plant.maybe_unknown({"steps": steps, "selected_skill": draw(st.sampled_from(names))})

    rounds = [_planted_round(plant, 1), _planted_round(plant, 2)]

    def composer() -> dict[str, Any]:
        allowable = [cid for r in rounds for cid in r.allowed_ids]
        cited: list[str] = []
        if allowable:
            cited = draw(st.lists(st.sampled_from(allowable), unique=True))
        return plant.maybe_unknown({"answer": "The pool is exhausted.", "cited_claim_ids": cited})

    history = [
        plant.maybe_unknown({"role": "user", "content": f"message {index}"})
        for index in range(draw(st.integers(0, 2)))
    ]
    document: dict[str, Any] = {
        "question": "Why is checkout slow since 14:10?",
        "run": {"run_id": "run-planted", "session_id": "chat-planted"},
        "history": history,
        "skills": skills,
        "config": config,
        "responses": {
            "planner": [_planted_entry(plant, plan) for _ in range(draw(st.integers(1, attempts)))],
            "executor": [
                _planted_entry(plant, _document_of(r)) for r in rounds
            ],
            "verifier": [
                _planted_entry(plant, lambda: _planted_verifier(plant, rounds))
                for _ in range(draw(st.integers(1, 2 * attempts)))
            ],
            "composer": [
                _planted_entry(plant, composer) for _ in range(draw(st.integers(1, attempts)))
            ],
        },
        "gatekeeper": [_planted_gatekeeper(plant, r) for r in rounds],
    }
    canaries = {kind: tuple(tokens) for kind, tokens in plant.planted.items()}
    return PlantedScenario(document, MappingProxyType(canaries))
