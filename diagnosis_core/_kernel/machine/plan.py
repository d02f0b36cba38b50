"""The plan step both workflows' planners return, and the step rules they share (spec §5.1, §11).

The chat planner and the AIOps planner both return a list of steps
(``step_id``, ``goal``, ``tools``); one set of rules checks them, with one
message per rule, so the two parsers cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..errors import PayloadError
from ..records import share_repr
from ..wire.json import describe_value

__all__ = ["PlanStep", "check_plan_steps", "duplicate_error"]

_EMPTY = "must not be empty"


def duplicate_error(path: str, value: str) -> PayloadError:
    """The error of an id that appears twice (a plan's step ids, the executor's claim ids)."""
    return PayloadError(path, f"duplicate {describe_value(value)}")


@attrs.frozen(repr=False)
class PlanStep:
    """One investigation step of the plan."""

    step_id: str
    goal: str
    tools: tuple[str, ...] = ()


def check_plan_steps(steps: Sequence[PlanStep], *, blank_goals: bool) -> None:
    """The step rules both planners share (spec §5.1): one rule, one message.

    At least one step; every ``step_id`` non-empty and unique; every ``goal``
    non-empty (``blank_goals``, the chat planner) or not only whitespace (the
    AIOps planner).

    Raises:
        PayloadError: naming the first step that breaks a rule.
    """
    if not steps:
        raise PayloadError("steps", _EMPTY)
    seen: set[str] = set()
    for index, step in enumerate(steps):
        if not step.step_id:
            raise PayloadError(f"steps[{index}].step_id", _EMPTY)
        if step.step_id in seen:
            raise duplicate_error(f"steps[{index}].step_id", step.step_id)
        seen.add(step.step_id)
        if blank_goals:
            if not step.goal:
                raise PayloadError(f"steps[{index}].goal", _EMPTY)
        elif not step.goal.strip():
            raise PayloadError(f"steps[{index}].goal", "must not be blank")


share_repr(PlanStep)
