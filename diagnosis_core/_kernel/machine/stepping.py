"""The agent steps both workflow machines share (spec §6.7, §7, §8, §11).

The chat machine and the AIOps machine handle an agent call the same way:
the invocation is counted and recorded with its exact input; a call that
raised, or whose reply its parser refused, is recorded as one trace event and
then either re-sent byte for byte (a technical retry) or routed away; a reply
the parser accepted goes to the agent's own handler. Only the data differs —
the event, details, pending-call and invocation-record classes, the position
counter (the chat's ``round``, the AIOps ``step``), the routing table and the
reason codes — so each machine names its data in one :class:`AgentSteps`
value and calls its methods instead of keeping a copy of the logic. The
per-agent handlers are a table of :class:`Reply` rows: one parser and one
handler each, with the refused-reply path written once, here.

Pure: no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Final, Generic, Protocol, TypeVar

import attrs
from attrs import AttrsInstance

from ..enums import NodeStatus
from ..errors import MachineError, PayloadError
from ..records import share_repr
from ..wire.json import sha256_text
from .results import (
    AgentFailed,
    FailureReasons,
    agent_result_for,
    awaited,
    reply_text,
    retries_left,
)
from .tables import RouteRow, TableRow, leaving_reason

__all__ = ["AgentSteps", "Reply", "ReplyStep", "entered", "failure_reasons"]

A = TypeVar("A", bound=enum.Enum)
N = TypeVar("N", bound=enum.Enum)
R = TypeVar("R", bound=enum.Enum)
D = TypeVar("D")
T = TypeVar("T")
P_contra = TypeVar("P_contra", contravariant=True)
D_co = TypeVar("D_co", covariant=True)
F = TypeVar("F")
F_co = TypeVar("F_co", covariant=True)
S_inv = TypeVar("S_inv")


class _Recorded(AttrsInstance, Protocol):
    """A machine state: the call it awaits, its request (whose ``config`` names the
    technical retry limit), its call counts, trace events and recorded invocations."""

    @property
    def pending(self) -> Any: ...

    @property
    def request(self) -> Any: ...

    @property
    def calls(self) -> Any: ...

    @property
    def events(self) -> tuple[object, ...]: ...

    @property
    def invocations(self) -> tuple[object, ...]: ...


class _DetailsClass(Protocol[D_co]):
    """A workflow's event-details class: empty, or naming a failed attempt's error."""

    def __call__(self, *, error: str | None = None) -> D_co: ...


class _FactsClass(Protocol[F_co]):
    """A workflow's routing-facts class, built from a finished node's status alone."""

    def __call__(self, *, status: NodeStatus | None = ..., retries_left: bool = ...) -> F_co: ...


class _Pending(Protocol):
    """The agent call a machine waits for (``AgentSteps`` reads its agent and position)."""

    @property
    def input(self) -> str: ...

    @property
    def attempt(self) -> int: ...


S = TypeVar("S", bound=_Recorded)
P = TypeVar("P", bound=_Pending)

_evolve: Final = attrs.evolve
"""``attrs.evolve`` under another name: the attrs type-checker plugin accepts
only concrete attrs classes as its argument, and ``S`` is any attrs state
(its bound says so); the signature itself stays fully typed."""


Rt = TypeVar("Rt", bound=TableRow)  # a failed attempt reads it: re-send the same input, or leave


def entered(route: RouteRow[N, Any, Any]) -> N | None:
    """The node ``route`` enters (None: END), for a machine's ``_follow``.

    A same-input route is a technical retry: only
    :meth:`AgentSteps.failed_attempt` follows one (it re-sends the stored
    input), so a machine asked to enter one has a bug and says so.
    """
    if route.same_input:
        raise MachineError("same-input routes are followed by failed_attempt")  # pragma: no cover
    return route.next


class ReplyStep(Protocol[S_inv, P_contra]):
    """One agent's reply step: the state after it, or the error its parser refused it with."""

    def __call__(self, state: S_inv, pending: P_contra, text: str, /) -> S_inv | PayloadError: ...


@attrs.frozen(repr=False)
class Reply(Generic[S, P, T]):
    """A row of a machine's reply table: the agent's parser and its handler.

    ``parse`` reads the reply text (with the state: a parser may need the
    run's skills or the ids reported so far); ``handle`` takes the parsed
    value. What ``parse`` refuses is returned, not raised, so that
    :meth:`AgentSteps.answered` records it as the failed attempt it is
    (spec §6.7) in one place for every agent of both workflows.
    """

    parse: Callable[[S, str], T]
    handle: Callable[[S, P, T], S]

    def __call__(self, state: S, pending: P, text: str, /) -> S | PayloadError:
        try:
            value = self.parse(state, text)
        except PayloadError as error:
            return error
        return self.handle(state, pending, value)


@attrs.frozen(kw_only=True, repr=False)
class AgentSteps(Generic[S, P, A, N, R, D, Rt, F]):
    """One workflow's data for the shared agent steps (see the module docstring).

    ``event``, ``details`` and ``record`` are the trace-event, event-details
    and invocation-record classes and ``pending`` the pending-call class,
    called positionally (both workflows lay their fields out in the same
    order; only the position field's name differs). ``agent`` and
    ``position`` read a pending call's agent (its ``agent`` unless told) and
    its round or step (the pending classes name the position differently,
    and a type variable cannot tie a pending class to its agent enum);
    ``node`` is an agent's node (its ``node`` unless told). ``choose``
    reads a node's route from the workflow's table for the routing facts
    ``facts`` builds; ``leave`` follows a route away from a failed node with
    the reason the run leaves with (spec §7, ``reason_from_node``).
    ``replies`` is the reply table.
    """

    event: Callable[[int, N, int, int, NodeStatus, R | None, str | None, D], object]
    details: _DetailsClass[D]
    pending: Callable[[A, str, int, int], P]
    record: Callable[[A, int, int, str], object]
    agent: Callable[[P], A] = attrgetter("agent")
    position: Callable[[P], int]
    node: Callable[[A], N] = attrgetter("node")
    reasons: FailureReasons[A, R]
    choose: Callable[[N, F], Rt]
    facts: _FactsClass[F]
    leave: Callable[[S, Rt, P, R | None], S]
    replies: Mapping[A, ReplyStep[S, P]]

    def traced(
        self,
        state: S,
        node: N,
        status: NodeStatus,
        reason: R | None,
        at: int,
        *,
        attempt: int = 1,
        input_text: str | None = None,
        details: D | None = None,
    ) -> S:
        """``state`` with one more trace event (spec §8): ``seq`` counts from 1, and
        ``input_sha256`` is set for LLM nodes only (those given ``input_text``)."""
        event = self.event(
            len(state.events) + 1,
            node,
            at,
            attempt,
            status,
            reason,
            sha256_text(input_text) if input_text is not None else None,
            details if details is not None else self.details(),
        )
        return _evolve(state, events=(*state.events, event))

    def attempt_traced(
        self, state: S, pending: P, status: NodeStatus, reason: R | None, details: D | None = None
    ) -> S:
        """``state`` with the event of the attempt ``pending`` (its node, position, input)."""
        return self.traced(
            state,
            self.node(self.agent(pending)),
            status,
            reason,
            self.position(pending),
            attempt=pending.attempt,
            input_text=pending.input,
            details=details,
        )

    def scheduled(self, state: S, agent: A, text: str, at: int, attempt: int = 1) -> S:
        """``state`` waiting for ``agent`` to be invoked with exactly ``text``."""
        return _evolve(state, pending=self.pending(agent, text, at, attempt))

    def completed(self, state: S, pending: P, facts: F, details: D | None = None) -> tuple[S, Rt]:
        """Record a COMPLETED attempt and read its route; the event's reason is the row's
        (only a row leaving for a fallback has one: the AIOps supervisor's guards)."""
        route = self.choose(self.node(self.agent(pending)), facts)
        state = self.attempt_traced(state, pending, NodeStatus.COMPLETED, route.reason, details)
        return state, route

    def answered(self, state: S, result: object) -> S:
        """Feed the result of the agent call ``state`` awaits: count and record the call,
        then handle its reply.

        A call that raised, or a reply its parser refused, is a failed attempt
        (:meth:`failed_attempt`); an accepted reply goes to the agent's handler
        in :attr:`replies`.
        """
        pending: P = awaited(state.pending)
        agent = self.agent(pending)
        result = agent_result_for(agent, result)
        record = self.record(agent, self.position(pending), pending.attempt, pending.input)
        calls = state.calls.incremented(agent)  # both count classes take the agent (a str enum)
        state = _evolve(state, calls=calls, invocations=(*state.invocations, record))
        if isinstance(result, AgentFailed):
            return self.failed_attempt(state, pending, result)
        outcome = self.replies[agent](state, pending, reply_text(result))
        if isinstance(outcome, PayloadError):
            return self.failed_attempt(state, pending, outcome)
        return outcome

    def failed_attempt(self, state: S, pending: P, failure: AgentFailed | PayloadError) -> S:
        """An attempt that raised or whose reply was refused: retry the same input or leave.

        The event carries the failure's status, error text and reason (spec
        §6.7); the route is the table's for that status and whether a
        technical retry is left. A retry re-sends the stored input string,
        byte for byte, as the next attempt.
        """
        agent = self.agent(pending)
        status, error, reason = self.reasons.of(agent, failure)
        left = retries_left(pending.attempt, state.request.config.technical_retry_limit)
        route = self.choose(self.node(agent), self.facts(status=status, retries_left=left))
        state = self.attempt_traced(state, pending, status, reason, self.details(error=error))
        if route.same_input:
            at = self.position(pending)
            return self.scheduled(state, agent, pending.input, at, pending.attempt + 1)
        return self.leave(state, route, pending, leaving_reason(route, reason))


def failure_reasons(agents: type[A], reasons: type[R]) -> FailureReasons[A, R]:
    """The reason codes of failed attempts, read from the codes' names (spec §6.7).

    In both workflows every agent ``X`` fails with ``X_FAILED``, and the
    executor's blocked tool and refused reply are ``EXECUTOR_TOOL_BLOCKED``
    and ``EXECUTOR_INVALID_OUTPUT``: one rule instead of a table per
    workflow. Enums that break the rule fail at import (a ``KeyError``
    naming the missing code) rather than record a wrong reason.
    """
    return FailureReasons(
        failed=MappingProxyType({agent: reasons[f"{agent.name}_FAILED"] for agent in agents}),
        executor=agents["EXECUTOR"],
        tool_blocked=reasons["EXECUTOR_TOOL_BLOCKED"],
        executor_invalid_output=reasons["EXECUTOR_INVALID_OUTPUT"],
    )


share_repr(Reply, AgentSteps)
