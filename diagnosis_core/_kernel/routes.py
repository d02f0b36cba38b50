"""The fields every routing row and every set of routing facts has (spec §7, §11).

Both workflows' tables are rows of the same six fields, read by the same
:class:`~._kernel.tables.Router` and drawn by the same Mermaid function; both
machines route on the status of the node just finished and its retry budget.
Declaring those fields once keeps the two tables' rows (and the facts their
shared conditions read, :class:`~._kernel.tables.StatusFacts`) the same shape by
construction; each workflow's class narrows the node, condition and reason
types and adds its own facts.
"""

from __future__ import annotations

import enum
from typing import Generic, TypeVar

import attrs

from .enums import NodeStatus
from .records import share_repr

__all__ = ["RouteRow", "StatusRoutingFacts"]

N = TypeVar("N", bound=enum.Enum)
C = TypeVar("C", bound=enum.Enum)
R = TypeVar("R", bound=enum.Enum)


@attrs.frozen(repr=False)
class RouteRow(Generic[N, C, R]):
    """One row of a routing table: after ``after``, when ``condition`` holds, go to ``next``.

    ``after`` is None for the start of a run; ``next`` is None for END.
    ``reason`` is the fixed reason code the row sends the run away with;
    ``reason_from_node`` means the reason is the one the node reported.
    ``same_input`` marks a technical retry: the identical input is sent again.
    """

    after: N | None
    condition: C
    next: N | None
    reason: R | None = None
    reason_from_node: bool = False
    same_input: bool = False


@attrs.frozen(repr=False)
class StatusRoutingFacts:
    """The facts every routing condition may look at, in both workflows.

    Attributes:
        status: the execution status of the node just finished (None for start).
        retries_left: for an LLM node, whether the technical retries used so
            far are fewer than ``L`` (per round in the chat workflow, per call
            in the AIOps flow).
    """

    status: NodeStatus | None = None
    retries_left: bool = False


share_repr(RouteRow, StatusRoutingFacts)
