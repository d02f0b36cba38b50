"""Deterministic test doubles for the effects of a run (spec §2).

* :class:`ScriptedInvoker` / :class:`AsyncScriptedInvoker` play a script of
  replies and exceptions in call order (the core's :class:`ScriptedAgent`
  plays the JSON form of a scenario; these take any Python exception).
* :class:`FakeGatekeeper` / :class:`AsyncFakeGatekeeper` play raw results
  (any object) and exceptions, or compute a result with a function such as
  :func:`passing_gatekeeper`.
* :class:`RecordingInvoker`, :class:`RecordingGatekeeper` and their async
  twins wrap any effect and keep every input they were given, also when the
  wrapped effect raises; :class:`EffectsRecorder` / :class:`AsyncEffectsRecorder`
  wrap a whole :class:`~diagnosis_core.Effects` and keep one journal in call
  order.

None of them reads a clock, a random source or the environment: the same
script gives the same run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, Generic, Protocol, TypeVar

import attrs

from .. import (
    AgentInvoker,
    AsyncAgentInvoker,
    AsyncEffects,
    AsyncGatekeeper,
    Effects,
    ExecutorEvidence,
    FailureClassifier,
    Gatekeeper,
    NonRetryableError,
    RunConfig,
    default_failure_classifier,
)
from ..machine import AgentName
from ._results import _checked_entry, binding_keys

__all__ = [
    "AsyncEffectsRecorder",
    "AsyncFakeGatekeeper",
    "AsyncRecordingGatekeeper",
    "AsyncRecordingInvoker",
    "AsyncScriptedInvoker",
    "EffectsRecorder",
    "FakeGatekeeper",
    "RecordedCall",
    "RecordingGatekeeper",
    "RecordingInvoker",
    "ScriptedInvoker",
    "passing_gatekeeper",
    "scripted_effects",
]

Reply = str | BaseException
"""One scripted agent behaviour: a message text to return, or an exception to raise."""

_Inner = TypeVar("_Inner")
_Second = TypeVar("_Second")
_Out = TypeVar("_Out")
_Agent = TypeVar("_Agent")
_Gate = TypeVar("_Gate")
_In = TypeVar("_In")
_GateIn = TypeVar("_GateIn")
_In_contra = TypeVar("_In_contra", contravariant=True)
_Out_co = TypeVar("_Out_co", covariant=True)


class _AgentScript:
    def __init__(self, script: Iterable[Reply]) -> None:
        self._script = tuple(script)
        self.inputs: list[str] = []
        """Every input string received, in call order."""
        self.configs: list[RunConfig] = []
        """The run config of every call, in call order."""

    def _play(self, input: str, config: RunConfig) -> str:
        index = len(self.inputs)
        self.inputs.append(input)
        self.configs.append(config)
        if index >= len(self._script):
            raise NonRetryableError("no scripted reply left")
        reply = self._script[index]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been played yet."""
        return max(len(self._script) - len(self.inputs), 0)


class ScriptedInvoker(_AgentScript):
    """An :class:`~diagnosis_core.AgentInvoker` that plays ``script`` in call order.

    A string is returned, an exception is raised; a call after the script
    ran out raises :class:`~diagnosis_core.NonRetryableError` (as a scenario's
    agent does). Every input and run config is kept.
    """

    def __call__(self, input: str, config: RunConfig, /) -> str:
        return self._play(input, config)


class AsyncScriptedInvoker(_AgentScript):
    """The asyncio twin of :class:`ScriptedInvoker`."""

    async def __call__(self, input: str, config: RunConfig, /) -> str:
        return self._play(input, config)


class _GatekeeperScript:
    def __init__(
        self,
        script: Iterable[object] = (),
        *,
        respond: Callable[[str, ExecutorEvidence], object] | None = None,
    ) -> None:
        self._script = tuple(script)
        self._respond = respond
        self.calls: list[tuple[str, ExecutorEvidence]] = []
        """Every ``(run_id, executor_output)`` received, in call order."""

    def _play(self, run_id: str, executor_output: ExecutorEvidence) -> object:
        index = len(self.calls)
        self.calls.append((run_id, executor_output))
        if index < len(self._script):
            result = self._script[index]
            if isinstance(result, BaseException):
                raise result
            return result
        if self._respond is not None:
            return self._respond(run_id, executor_output)
        raise NonRetryableError("no scripted gatekeeper result left")


class FakeGatekeeper(_GatekeeperScript):
    """A :class:`~diagnosis_core.Gatekeeper` playing raw results and exceptions in call order.

    Script items are returned as the raw result (any object, JSON or not) or,
    when they are exceptions, raised. Once the script ran out, ``respond``
    computes the result (e.g. :func:`passing_gatekeeper`); without it the
    call raises :class:`~diagnosis_core.NonRetryableError`.
    """

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object:
        return self._play(run_id, executor_output)


class AsyncFakeGatekeeper(_GatekeeperScript):
    """The asyncio twin of :class:`FakeGatekeeper`."""

    async def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object:
        return self._play(run_id, executor_output)


def passing_gatekeeper(run_id: str, executor_output: ExecutorEvidence) -> dict[str, object]:
    """A gatekeeper that passes every binding, its excerpt as ``matched_text`` (spec §6.1)."""
    entries = [
        {**_checked_entry(key, "pass"), "matched_text": binding.evidence_excerpt}
        for key, binding in binding_keys(executor_output)
    ]
    return {"status": "pass", "level": None, "checked_bindings": entries, "reason_codes": []}


@attrs.frozen
class RecordedCall:
    """One effect call in a recorder's journal: who was called, with which input.

    ``effect`` is an agent name or ``"gatekeeper"``; ``input`` is the agent's
    exact input string, or the run id for the gatekeeper.
    """

    effect: str
    input: str


class _Recording(Generic[_Second]):
    """What every recording double shares: its name, the call log, and how an outcome is kept.

    The four recording doubles differ only in the second argument they are
    called with and in awaiting the wrapped effect, so the bookkeeping around
    that call is written once here: :meth:`_call` and :meth:`_acall`.
    """

    def __init__(self, name: str, journal: list[RecordedCall] | None, outcomes: list[Any]) -> None:
        self.name = name
        self.journal: list[RecordedCall] = journal if journal is not None else []
        """Shared call log (one per recorder); a private list when used alone."""
        self._outcomes = outcomes

    def _record(self, first: str, second: _Second) -> None:
        """Recorded before the wrapped effect runs, so a call that raises is recorded too."""
        self.journal.append(RecordedCall(self.name, first))

    @contextlib.contextmanager
    def _outcome_kept(self) -> Iterator[None]:
        """Keep the exception the wrapped call raised as its outcome, then let it propagate."""
        try:
            yield
        except Exception as error:
            self._outcomes.append(error)
            raise

    def _call(self, inner: Callable[[str, _Second], _Out], first: str, second: _Second) -> _Out:
        self._record(first, second)
        with self._outcome_kept():
            outcome = inner(first, second)
        self._outcomes.append(outcome)
        return outcome

    async def _acall(
        self, inner: Callable[[str, _Second], Awaitable[_Out]], first: str, second: _Second
    ) -> _Out:
        self._record(first, second)
        with self._outcome_kept():
            outcome = await inner(first, second)
        self._outcomes.append(outcome)
        return outcome


class _InvokerRecording(_Recording[RunConfig], Generic[_Inner]):
    def __init__(
        self, inner: _Inner, *, name: str = "agent", journal: list[RecordedCall] | None = None
    ) -> None:
        self.outputs: list[Reply] = []
        super().__init__(name, journal, self.outputs)
        self._inner = inner
        self.inputs: list[str] = []
        self.configs: list[RunConfig] = []

    def _record(self, first: str, second: RunConfig) -> None:
        self.inputs.append(first)
        self.configs.append(second)
        super()._record(first, second)


class RecordingInvoker(_InvokerRecording[AgentInvoker]):
    """Wraps an :class:`~diagnosis_core.AgentInvoker` and keeps every input it was given.

    The input is recorded before the wrapped invoker runs, so a call that
    raises is recorded too; ``outputs`` holds the reply or the exception.
    """

    def __call__(self, input: str, config: RunConfig, /) -> str:
        return self._call(self._inner, input, config)


class AsyncRecordingInvoker(_InvokerRecording[AsyncAgentInvoker]):
    """The asyncio twin of :class:`RecordingInvoker`."""

    async def __call__(self, input: str, config: RunConfig, /) -> str:
        return await self._acall(self._inner, input, config)


class _GatekeeperRecording(_Recording[ExecutorEvidence], Generic[_Inner]):
    def __init__(self, inner: _Inner, *, journal: list[RecordedCall] | None = None) -> None:
        self.results: list[object] = []
        super().__init__("gatekeeper", journal, self.results)
        self._inner = inner
        self.calls: list[tuple[str, ExecutorEvidence]] = []

    def _record(self, first: str, second: ExecutorEvidence) -> None:
        self.calls.append((first, second))
        super()._record(first, second)


class RecordingGatekeeper(_GatekeeperRecording[Gatekeeper]):
    """Wraps a :class:`~diagnosis_core.Gatekeeper` and keeps every call and result."""

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object:
        return self._call(self._inner, run_id, executor_output)


class AsyncRecordingGatekeeper(_GatekeeperRecording[AsyncGatekeeper]):
    """The asyncio twin of :class:`RecordingGatekeeper`."""

    async def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object:
        return await self._acall(self._inner, run_id, executor_output)


class _Wrapper(Protocol[_In_contra, _Out_co]):
    """A recording double's class: wraps ``inner`` and logs its calls to ``journal``."""

    def __call__(self, inner: _In_contra, *, journal: list[RecordedCall] | None) -> _Out_co: ...


class _AgentWrapper(Protocol[_In_contra, _Out_co]):
    """A recording invoker's class: as :class:`_Wrapper`, logging under the agent's ``name``."""

    def __call__(
        self, inner: _In_contra, *, name: str, journal: list[RecordedCall] | None
    ) -> _Out_co: ...


class _EffectsRecording(Generic[_Agent, _Gate]):
    """What both effects recorders share: one journal of every call, read back per agent.

    The sync and async recorders differ only in the recording doubles they
    wrap each effect in (``agent_type``, ``gatekeeper_type``), so the wrapping
    of the four agents and the gatekeeper is written once here.
    """

    def __init__(
        self,
        agents: Callable[[AgentName], _In],
        gatekeeper: _GateIn,
        agent_type: _AgentWrapper[_In, _Agent],
        gatekeeper_type: _Wrapper[_GateIn, _Gate],
    ) -> None:
        journal: list[RecordedCall] = []
        self.journal = journal

        def wrapped(name: AgentName) -> _Agent:
            return agent_type(agents(name), name=name.value, journal=journal)

        self.planner = wrapped(AgentName.PLANNER)
        self.executor = wrapped(AgentName.EXECUTOR)
        self.verifier = wrapped(AgentName.VERIFIER)
        self.composer = wrapped(AgentName.COMPOSER)
        self.gatekeeper = gatekeeper_type(gatekeeper, journal=journal)

    def _agents(self) -> tuple[_Agent, _Agent, _Agent, _Agent]:
        """The four recording agents in the effects' field order (planner … composer)."""
        return self.planner, self.executor, self.verifier, self.composer

    def inputs(self, agent: str) -> list[str]:
        """Every input string ``agent`` (``planner`` … ``composer``) received, in order."""
        return [call.input for call in self.journal if call.effect == agent]


class EffectsRecorder(_EffectsRecording[RecordingInvoker, RecordingGatekeeper]):
    """Wraps every effect of an :class:`~diagnosis_core.Effects` in a recording double.

    Pass :attr:`effects` to the driver; afterwards :attr:`journal` lists every
    call in order and each wrapper (``planner`` … ``gatekeeper``) its own.
    """

    def __init__(self, effects: Effects) -> None:
        super().__init__(effects.agent, effects.gatekeeper, RecordingInvoker, RecordingGatekeeper)
        self.effects = Effects(*self._agents(), self.gatekeeper, effects.classifier)


class AsyncEffectsRecorder(_EffectsRecording[AsyncRecordingInvoker, AsyncRecordingGatekeeper]):
    """The asyncio twin of :class:`EffectsRecorder`, for :class:`~diagnosis_core.AsyncEffects`."""

    def __init__(self, effects: AsyncEffects) -> None:
        super().__init__(
            effects.agent, effects.gatekeeper, AsyncRecordingInvoker, AsyncRecordingGatekeeper
        )
        self.effects = AsyncEffects(*self._agents(), self.gatekeeper, effects.classifier)


def scripted_effects(
    *,
    planner: Iterable[Reply] = (),
    executor: Iterable[Reply] = (),
    verifier: Iterable[Reply] = (),
    composer: Iterable[Reply] = (),
    gatekeeper: Iterable[object] = (),
    respond: Callable[[str, ExecutorEvidence], object] | None = None,
    classifier: FailureClassifier = default_failure_classifier,
) -> Effects:
    """:class:`~diagnosis_core.Effects` made of fresh scripted doubles.

    Each agent plays its script (:class:`ScriptedInvoker`), the gatekeeper
    plays its own and then ``respond`` (:class:`FakeGatekeeper`).
    """
    return Effects(
        planner=ScriptedInvoker(planner),
        executor=ScriptedInvoker(executor),
        verifier=ScriptedInvoker(verifier),
        composer=ScriptedInvoker(composer),
        gatekeeper=FakeGatekeeper(gatekeeper, respond=respond),
        classifier=classifier,
    )
