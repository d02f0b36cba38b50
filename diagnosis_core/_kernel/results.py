"""What an agent call gives back to a machine, and the validators both machines share.

An agent effect ends as :class:`AgentReplied` (its text) or :class:`AgentFailed`
(a classified failure, spec §6.7); both workflows' machines take these values,
so they live here rather than in either workflow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from .enums import FailureKind
from .errors import MachineError

__all__ = ["AgentFailed", "AgentReplied", "check_agent_result", "items_of", "to_tuple"]


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


def to_tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen
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


@attrs.frozen
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
            raise MachineError(
                f"AgentFailed.message: expected a str, got {type(message).__name__}"
            )
        return
    text: object = result.text
    if not isinstance(text, str):
        raise MachineError(
            f"AgentReplied.text: expected the agent's message text (a str), "
            f"got {type(text).__name__}"
        )
