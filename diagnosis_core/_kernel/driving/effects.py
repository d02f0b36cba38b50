"""Agent effects as typed protocols, and the checks every driver makes on effects (spec §2, §15).

The core performs no I/O: agents are passed in by the host. An
:class:`AgentInvoker` receives the exact serialized whitelist and the
:class:`RunConfig`, and returns the model's message text. Both workflows'
drivers use these protocols and the checks below, which turn a host's
sync/async mix-up into a ``TypeError`` before the run starts.
"""

from __future__ import annotations

import abc
import inspect
import types
from collections.abc import Awaitable, Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar

import attrs

from ..machine.classify import FailureClassifier, default_failure_classifier
from ..machine.config import RunConfig

if TYPE_CHECKING:
    from ..journal.codec import JournalBase
    from ..journal.fold import JournalRecorderBase
    from ..journal.workflow import Workflow

__all__ = [
    "AgentInvoker",
    "AgentTable",
    "AsyncAgentInvoker",
    "AsyncAgentTable",
    "Driving",
    "awaitable_call",
    "check_effect",
    "check_effects_kind",
    "classifier_field",
    "effect_field",
    "is_async_callable",
    "reject_awaitable",
    "require_awaitable",
]


class AgentInvoker(Protocol):
    """An LLM agent: exact input string and run config in, message text out."""

    def __call__(self, input: str, config: RunConfig, /) -> str: ...


class AsyncAgentInvoker(Protocol):
    """The asyncio variant of :class:`AgentInvoker`."""

    def __call__(self, input: str, config: RunConfig, /) -> Awaitable[str]: ...


N = TypeVar("N", bound=Enum)
V = TypeVar("V")
A1 = TypeVar("A1")
A2 = TypeVar("A2")
R = TypeVar("R")
Sync = TypeVar("Sync", bound="AgentTable[Any, Any]")


class AgentTable(Generic[N, V]):
    """Effects that hold one invoker per agent, in the field named by the agent's value.

    Both workflows' sync and asyncio effects share this lookup: an agent
    enum's value is the field name (spec §2), so a driver asks for the agent
    an action names without a table of its own.
    """

    __slots__ = ()

    classifier: FailureClassifier
    """Classifies an agent's exception (each effects class holds one; spec §15)."""

    __attrs_attrs__: ClassVar[tuple[attrs.Attribute[Any], ...]]
    """Each effects class is an ``attrs`` class: its fields are its effects."""

    def agent(self, name: N) -> V:
        """The invoker for ``name``."""
        invoker: V = getattr(self, name.value)
        return invoker


def awaitable_call(call: Callable[[A1, A2], R]) -> Callable[[A1, A2], Awaitable[R]]:
    """``call`` as an ``async def``: it runs inline, on the event loop thread, when awaited.

    Every effect of both workflows (an agent, the gatekeeper) takes two positional
    arguments, so this one wrapper serves :meth:`AsyncAgentTable.from_sync` for all.
    """

    async def wrapped(first: A1, second: A2, /) -> R:
        return call(first, second)

    wrapped.__wrapped__ = call  # type: ignore[attr-defined]  # what it wraps (its signature too)
    return wrapped


class AsyncAgentTable(AgentTable[N, AsyncAgentInvoker], Generic[N, Sync]):
    """Asyncio effects whose sync twin is ``Sync``: both workflows' ``from_sync`` in one place.

    The asyncio effects of a workflow have the fields of its sync effects, each
    effect ``async``; :meth:`from_sync` wraps every one of them, so a host can run
    sync agents on the asyncio drivers without writing a wrapper per field.
    """

    __slots__ = ()

    @classmethod
    def from_sync(cls, effects: Sync) -> Self:
        """Wrap synchronous effects (called inline, on the event loop thread).

        Every effect field is wrapped by :func:`awaitable_call`; the failure
        classifier is kept as it is.
        """
        fields = {
            field.name: (
                effects.classifier
                if field.name == "classifier"
                else awaitable_call(getattr(effects, field.name))
            )
            for field in attrs.fields(cls)
        }
        construct: Callable[..., Self] = cls
        return construct(**fields)


def is_async_callable(value: object) -> bool:
    """True for an ``async def`` function (or partial) or an object with ``async def __call__``.

    Never raises: an object whose attributes cannot be read counts as not async.
    """
    try:
        if inspect.iscoroutinefunction(value):
            return True
        call = getattr(type(value), "__call__", None)  # noqa: B004 - the class's method
        return call is not None and inspect.iscoroutinefunction(call)
    except Exception:
        return False


AGENT_SIGNATURE = "(input: str, config: RunConfig) -> str"
"""How an agent effect is called, as a refusal names it."""

ASYNC_AGENT_SIGNATURE = "(input: str, config: RunConfig) -> Awaitable[str]"
"""How an asyncio agent effect is called."""

CLASSIFIER_SIGNATURE = "(error: BaseException) -> FailureKind"
"""How a failure classifier is called, as a refusal names it."""


def _code_takes(function: types.FunctionType, positional: int) -> bool:
    """:func:`_takes` for a plain Python function, read from its code (no ``inspect``)."""
    code = function.__code__
    defaults = len(function.__defaults__ or ())
    required_keywords = code.co_kwonlyargcount - len(function.__kwdefaults__ or {})
    most = positional if code.co_flags & inspect.CO_VARARGS else code.co_argcount
    return required_keywords == 0 and code.co_argcount - defaults <= positional <= most


def _plain(function: object) -> types.FunctionType | None:
    """``function`` if its own code is its signature (not wrapped, no ``__signature__``)."""
    if type(function) is types.FunctionType and not (
        hasattr(function, "__wrapped__") or hasattr(function, "__signature__")
    ):
        return function
    return None


def _takes(value: object, positional: int) -> bool | None:
    """Whether ``value`` can be called with ``positional`` positional arguments.

    None when its signature cannot be read (some builtins and C callables):
    such a callable is accepted, the call itself is then the check. A plain
    function, or an object whose class defines ``__call__`` as one, is read
    from its code (a driver checks every effect of every run); anything else
    with :func:`inspect.signature`.
    """
    function = _plain(value)
    if function is not None:
        return _code_takes(function, positional)
    try:
        if not isinstance(value, type) and not hasattr(value, "__signature__"):
            found = inspect.getattr_static(type(value), "__call__", None)
            if isinstance(found, staticmethod):  # not bound (inspect reads it as bound)
                static = _plain(found.__func__)
                if static is not None:
                    return _code_takes(static, positional)
            call = _plain(found)
            if call is not None:
                return _code_takes(call, positional + 1)  # bound: ``self`` comes first
        signature = inspect.signature(value)  # type: ignore[arg-type]
    except Exception:  # unreadable (a builtin, a C callable, a hostile object)
        return None
    try:
        signature.bind(*([None] * positional))
    except TypeError:
        return False
    return True


def _described(value: object) -> str:
    try:
        read = inspect.signature(value)  # type: ignore[arg-type]
        plain = read.replace(
            parameters=[p.replace(annotation=p.empty) for p in read.parameters.values()],
            return_annotation=read.empty,
        )
        signature = str(plain)  # the parameters, without annotations
    except (TypeError, ValueError):
        signature = ""
    try:
        name = getattr(value, "__name__", None) or type(value).__name__
    except Exception:
        name = type(value).__name__
    if not isinstance(name, str):
        name = type(value).__name__
    return f"{name}{signature}" if signature else name


def check_effect(owner: str, name: str, value: object, positional: int, signature: str) -> None:
    """Refuse an effect that cannot be called as the driver will call it (spec §2, §15).

    A missing or ``None`` effect, one that is not callable, or one whose
    signature cannot take ``positional`` positional arguments (defaults and
    ``*args`` count) is the host's wiring mistake: ``TypeError`` naming
    ``owner.name`` and the expected ``signature``, before any effect runs —
    never a fallback answer after the first call. A callable whose signature
    cannot be read is accepted (nothing to check without calling it).
    """
    if not callable(value):
        got = "None" if value is None else f"{type(value).__name__} (not callable)"
        raise TypeError(f"{owner}.{name}: expected a callable {signature}, got {got}")
    if _takes(value, positional) is False:
        raise TypeError(
            f"{owner}.{name}: expected a callable {signature}, got {_described(value)}, "
            f"which cannot be called with {positional} positional argument"
            f"{'' if positional == 1 else 's'}"
        )


def effect_field(
    signature: str, positional: int = 2
) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """An ``attrs`` validator running :func:`check_effect` on one effects field."""

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        check_effect(type(instance).__name__, attribute.name, value, positional, signature)

    validate.signature = signature  # type: ignore[attr-defined]  # read by check_effects_kind
    return validate


AGENT_FIELD = effect_field(AGENT_SIGNATURE)
"""The validator of an agent field of a workflow's sync effects."""

ASYNC_AGENT_FIELD = effect_field(ASYNC_AGENT_SIGNATURE)
"""The validator of an agent field of a workflow's asyncio effects."""


def classifier_field() -> FailureClassifier:
    """The ``classifier`` field of every effects class: checked, the default one unless given."""
    return attrs.field(
        default=default_failure_classifier, validator=effect_field(CLASSIFIER_SIGNATURE, 1)
    )


def check_effects_kind(
    effects: object,
    expected: type[Any],
    names: Sequence[str],
    *,
    asynchronous: bool,
    driver: str,
    other_driver: str,
) -> None:
    """Raise ``TypeError`` before a run starts when ``effects`` suit the other driver.

    Passing ``AsyncEffects`` to the sync driver, sync ``Effects`` to the asyncio
    driver, or a sync callable among async effects (an async one among sync
    effects) is the host's mistake: without this check it ends as a polite
    fallback ("got coroutine", "the evidence check service was unavailable")
    that hides the bug. A sync effect inside async effects must be an
    ``async def`` (wrap it, or use ``AsyncEffects.from_sync``). Every effect is
    also checked as the effects class checks it when built (:func:`check_effect`),
    for effects changed after construction.
    """
    if not isinstance(effects, expected):
        raise TypeError(
            f"{driver} needs {expected.__name__}, got {type(effects).__name__}"
            f" (use {other_driver} for it)"
        )
    classifier = getattr(effects, "classifier", None)
    check_effect(expected.__name__, "classifier", classifier, 1, CLASSIFIER_SIGNATURE)
    for name in names:
        effect = getattr(effects, name, None)
        check_effect(expected.__name__, name, effect, 2, _signature_of(expected, name))
        if is_async_callable(effect) != asynchronous:
            kind = "a synchronous callable" if asynchronous else "an async callable"
            raise TypeError(
                f"{expected.__name__}.{name} is {kind}; {driver} needs"
                f" {'async def' if asynchronous else 'a plain (sync) callable'} effects"
                f" (use {other_driver} for the other kind)"
            )


def _signature_of(effects_type: type[Any], name: str) -> str:
    """The expected signature of field ``name``: the one its ``attrs`` validator checks."""
    try:
        validator = attrs.fields_dict(effects_type)[name].validator
    except (TypeError, KeyError):
        validator = None
    signature: object = getattr(validator, "signature", None)
    return signature if isinstance(signature, str) else AGENT_SIGNATURE


def reject_awaitable(value: object, what: str, driver: str) -> None:
    """Raise ``TypeError`` when a sync effect returned an awaitable (never awaited here)."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # no "coroutine was never awaited" warning
        raise TypeError(
            f"{what} returned an awaitable ({type(value).__name__}) to {driver};"
            " an async effect needs the asyncio driver"
        )


def require_awaitable(value: object, what: str, driver: str) -> Awaitable[Any]:
    """``value`` if it is awaitable; ``TypeError`` when an async effect returned a plain value."""
    if not inspect.isawaitable(value):
        raise TypeError(
            f"{what} returned {type(value).__name__}, not an awaitable, to {driver};"
            " a sync effect needs the sync driver (or AsyncEffects.from_sync)"
        )
    return value


S = TypeVar("S")
Eff = TypeVar("Eff")
AEff = TypeVar("AEff")


class Driving(abc.ABC, Generic[S, Eff, AEff]):
    """How the one driver (``driving/driver.py``) runs a workflow: a class whose methods it calls.

    A workflow's driving says which :class:`~diagnosis_core.machine.Workflow`
    it drives (:attr:`workflow`), its journal and recorder classes, its
    effects classes and field names (``effects_type``, ``async_effects_type``,
    ``effect_names``: the driver refuses effects of the other kind before a
    run starts, spec §15), and how one effect is performed
    (:meth:`perform` / :meth:`aperform`). The other methods have defaults
    for a workflow without a gatekeeper or a question; the chat diagnosis
    overrides them. Its one instance is what the driver is handed.
    """

    __slots__ = ()

    effects_type: type[Eff]
    """The workflow's sync effects class."""
    async_effects_type: type[AEff]
    """The workflow's asyncio effects class."""
    effect_names: tuple[str, ...]
    """The effects' field names, each checked before a run starts (spec §15)."""

    @property
    @abc.abstractmethod
    def workflow(self) -> Workflow[Any, S, Any, Any, Any, Any, Any]:
        """The workflow driven: its machine, journal form and resume rule."""

    @property
    @abc.abstractmethod
    def journal_type(self) -> type[JournalBase[Any, Any]]:
        """The workflow's journal class."""

    @property
    @abc.abstractmethod
    def recorder_type(self) -> type[JournalRecorderBase[Any, Any, Any, Any]]:
        """The workflow's journal recorder class."""

    @abc.abstractmethod
    def perform(self, action: Any, effects: Eff) -> object:
        """Perform one effect with the sync effects; its result for the machine."""

    @abc.abstractmethod
    async def aperform(self, action: Any, effects: AEff) -> object:
        """Perform one effect on the event loop; its result for the machine."""

    def with_failures(self, state: S, failures: int) -> S:
        """The finished ``state`` carrying the observer failure count (as it is: no such field)."""
        return state

    def derived(self, action: object, gatekeeper: object, tools: Any, journal: Any) -> bool:
        """Whether a gatekeeper call is the reference gatekeeper over the journal's tools (§12.4).

        No gatekeeper, nothing derived.
        """
        return False

    def question(self, request: Any) -> str | None:
        """The request's question, bounded by ``max_question_chars`` (None: there is none)."""
        return None

    def check_tools(self, effects: Any, tools: object, driver: str) -> None:
        """Refuse (``TypeError``) a gatekeeper built over another recorder than ``tools``."""
        return None
