"""What an agent call gives back to a machine, and the validators both machines share.

An agent effect ends as :class:`AgentReplied` (its text) or :class:`AgentFailed`
(a classified failure, spec §6.7); both workflows' machines take these values,
so they live here rather than in either workflow.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from ..enums import FailureKind, NodeStatus
from ..errors import MachineError, PayloadError
from ..records import share_repr

A = TypeVar("A", bound=enum.Enum)
R = TypeVar("R", bound=enum.Enum)
P = TypeVar("P")

__all__ = [
    "AgentFailed",
    "AgentReplied",
    "FailureReasons",
    "agent_result_for",
    "awaited",
    "check_agent_result",
    "items_of",
    "reply_text",
    "retries_left",
]


def items_of(kind: type[object]) -> Callable[[object, Any, object], None]:
    """Validator: a tuple whose items are all ``kind`` (a request is built by hand often)."""

    def check(instance: object, attribute: Any, value: object) -> None:
        if not isinstance(value, tuple):
            raise TypeError(f"{attribute.name}: expected a tuple of {kind.__name__}")
        for index, item in enumerate(value):
            if not isinstance(item, kind):
                raise TypeError(
                    f"{attribute.name}[{index}]: expected {kind.__name__}, "
                    f"got {type(item).__name__}"
                )

    return check


@attrs.frozen(repr=False)
class AgentReplied:
    """Result: the agent returned its message text.

    Not validated here, so that a driver can package whatever an invoker
    returned; :func:`advance` raises :class:`MachineError` for a ``text``
    that is not a ``str`` (an invoker breaking its contract is the host's bug).
    """

    text: str


def _failure_kind(instance: object, attribute: Any, value: Any) -> None:
    if not isinstance(value, FailureKind):
        raise TypeError(
            f"AgentFailed.{attribute.name}: expected a FailureKind, got {value!r:.80}"
            " (classify the exception, e.g. with classify_failure)"
        )


def _failure_message(instance: object, attribute: Any, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"AgentFailed.{attribute.name}: expected a str, got {type(value).__name__}")


@attrs.frozen(repr=False)
class AgentFailed:
    """Result: the agent raised; ``kind`` comes from the failure classifier.

    ``kind`` must be a :class:`FailureKind` and ``message`` a ``str``
    (``TypeError`` otherwise): the string ``"RETRYABLE"`` is not a kind, and
    guessing one for it could repeat side effects.
    """

    kind: FailureKind = attrs.field(validator=_failure_kind)
    message: str = attrs.field(default="", validator=_failure_message)


def check_agent_result(result: AgentReplied | AgentFailed) -> None:
    """Raise :class:`MachineError` for an agent result that breaks its own type.

    Construction validates :class:`AgentFailed`, but a value can still get
    past it (``object.__setattr__`` on the frozen instance, a subclass); a
    reply whose text is not a ``str`` is an invoker breaking its contract.
    Either way it is the host's bug, reported as such, never a crash deeper in
    the machine (spec §15). Shared by the chat and AIOps machines.
    """
    if isinstance(result, AgentFailed):
        failure_kind: object = result.kind
        message: object = result.message
        if not isinstance(failure_kind, FailureKind):
            raise MachineError(
                f"AgentFailed.kind: expected a FailureKind, got {failure_kind!r:.80}"
            )
        if not isinstance(message, str):
            raise MachineError(f"AgentFailed.message: expected a str, got {type(message).__name__}")
        return
    text: object = result.text
    if not isinstance(text, str):
        raise MachineError(
            f"AgentReplied.text: expected the agent's message text (a str), "
            f"got {type(text).__name__}"
        )


def agent_result_for(agent: enum.Enum, result: object) -> AgentReplied | AgentFailed:
    """``result`` as the answer to a pending call of ``agent``; :class:`MachineError` if not.

    Both machines take an agent's result only while an agent call is pending:
    any other value (a gatekeeper result, a string) and an agent result that
    breaks its own type (:func:`check_agent_result`) are the host's bug.
    """
    if not isinstance(result, AgentReplied | AgentFailed):
        raise MachineError(
            f"the pending action is a {agent.value} invocation; got {type(result).__name__}"
        )
    check_agent_result(result)
    return result


def awaited(pending: P | None) -> P:
    """The call a state awaits: a state of either machine awaiting nothing (and not
    finished) cannot have come from that machine, so it is refused in one wording."""
    if pending is None:
        raise MachineError("the state awaits nothing; it was not produced by this machine")
    return pending


def reply_text(result: AgentReplied) -> str:
    """The reply as the plain string (a ``str`` subclass is read as its ``str`` value).

    :func:`check_agent_result` has checked the type; reading through
    ``str.__str__`` keeps a subclass's overridden methods out of the parsers.
    """
    return str.__str__(result.text)


def retries_left(attempt: int, limit: int) -> bool:
    """Whether attempt ``attempt`` of one call may be followed by a technical retry.

    Attempt ``n`` has used ``n - 1`` of the ``limit`` technical retries
    (spec §6.7); both machines count them from the pending call's attempt.
    """
    return attempt - 1 < limit


class FailureReasons(Generic[A, R]):
    """Which reason code a failed agent attempt carries (spec §6.7), as data per workflow.

    Every agent has its own ``*_FAILED`` code; the executor alone has two
    more: for a blocked tool and for a reply its parser refused. Both
    machines name their codes in one value of this class and read them
    through the same two rules. A plain slotted class, not an attrs one: it
    is built once per workflow at import, and ``import diagnosis_core`` stays
    cheap.
    """

    __slots__ = ("executor", "executor_invalid_output", "failed", "tool_blocked")

    def __init__(
        self, *, failed: Mapping[A, R], executor: A, tool_blocked: R, executor_invalid_output: R
    ) -> None:
        self.failed = failed
        self.executor = executor
        self.tool_blocked = tool_blocked
        self.executor_invalid_output = executor_invalid_output

    def raised(self, agent: A, kind: FailureKind) -> R:
        """The reason of ``agent`` raising a ``kind`` failure."""
        if agent is self.executor and kind is FailureKind.TOOL_BLOCKED:
            return self.tool_blocked
        return self.failed[agent]

    def invalid_output(self, agent: A) -> R:
        """The reason of ``agent`` replying with what its parser refused."""
        return self.executor_invalid_output if agent is self.executor else self.failed[agent]

    def of(self, agent: A, failure: AgentFailed | PayloadError) -> tuple[NodeStatus, str, R]:
        """The status, error text and reason of a failed attempt of ``agent`` (spec §6.7).

        ``failure`` is the call's classified exception (:class:`AgentFailed`)
        or the :class:`PayloadError` its parser refused the reply with. Both
        machines record either the same way (an event, then a technical retry
        or a route away), so they read the three values from this one rule.
        """
        if isinstance(failure, AgentFailed):  # only RETRYABLE may be retried; no message: its kind
            kind = failure.kind
            retryable = kind is FailureKind.RETRYABLE
            status = NodeStatus.RETRYABLE_FAILED if retryable else NodeStatus.NON_RETRYABLE_FAILED
            return status, failure.message or kind.value, self.raised(agent, kind)
        return NodeStatus.INVALID_OUTPUT, failure.reason, self.invalid_output(agent)


share_repr(AgentReplied, AgentFailed)
