"""What every routing table shares: row lookup, the Mermaid drawing, the trace table.

The chat workflow (:mod:`._routing`) and the AIOps workflow
(:mod:`._aiops.routing`) keep their own rows and conditions; reading rows in
order and drawing them is the same for both, so it lives here once, and so
does the text table of a trace that both command-line reports print.

The fields every routing row and every set of routing facts has are declared here
too (:class:`RouteRow`, :class:`StatusRoutingFacts`, spec §7, §11): both workflows'
tables are rows of the same six fields, read by the same :class:`Router` and drawn
by the same Mermaid function, and both machines route on the status of the node
just finished and its retry budget. Each workflow's class narrows the node,
condition and reason types and adds its own facts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, TypeAlias, TypeVar

import attrs

from ..enums import NodeStatus
from ..records import share_repr

__all__ = [
    "RETRYABLE_STATUSES",
    "RouteRow",
    "Router",
    "StatusRoutingFacts",
    "TableRow",
    "always",
    "completed",
    "failed",
    "index_rows",
    "leaving_reason",
    "mermaid_flowchart",
    "retry_left",
    "status_predicates",
    "text_cell",
    "trace_table_lines",
]


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


TableRow: TypeAlias = RouteRow[Any, Any, Any]
"""Any workflow's routing row, as the shared functions read it."""
Row = TypeVar("Row", bound=TableRow)
Facts = TypeVar("Facts")


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


def leaving_reason(row: RouteRow[Any, Any, R], node_reason: R | None) -> R | None:
    """The reason ``row`` sends a run away with (spec §7): the node's own where the row
    says so (executor failures, gatekeeper rejections), else the row's fixed code."""
    return node_reason if row.reason_from_node else row.reason


def index_rows(table: Sequence[Row]) -> Mapping[object, tuple[Row, ...]]:
    """Rows grouped by the node they follow, each group in table order."""
    rows: dict[object, list[Row]] = {}
    for row in table:
        rows.setdefault(row.after, []).append(row)
    return MappingProxyType({after: tuple(found) for after, found in rows.items()})


class Router(Generic[Row, Facts]):
    """A workflow's default routing table, indexed once, with the predicates of its conditions.

    Both machines route every step through :meth:`choose`, so a table passed
    in by a test is read by exactly the rule the default table is read by.
    """

    def __init__(
        self, table: Sequence[Row], predicates: Mapping[Any, Callable[[Facts], bool]], what: str
    ) -> None:
        self._table = table
        self._rows = index_rows(table)
        self._predicates = predicates
        self._what = what

    def choose(self, after: object, facts: Facts, table: Sequence[Row]) -> Row:
        """The first row for ``after`` whose condition holds; ``LookupError`` if none does."""
        rows = self._rows if table is self._table else index_rows(table)
        for row in rows.get(after, ()):
            if self._predicates[row.condition](facts):
                return row
        raise LookupError(f"no {self._what} after {after!r} for {facts!r}")


RETRYABLE_STATUSES = frozenset({NodeStatus.RETRYABLE_FAILED, NodeStatus.INVALID_OUTPUT})
"""The statuses a technical retry may follow (spec §6.7), in both workflows' tables: a
retryable failure or an invalid output; a non-retryable failure never is."""


# The conditions both routing tables name (spec §6.7, §7), defined once so that the
# technical-retry rule cannot drift between the chat and the AIOps tables.


def always(facts: object) -> bool:
    """The condition of a catch-all row (``always``, ``otherwise``): it always holds."""
    return True


def completed(facts: StatusRoutingFacts) -> bool:
    """The node just finished COMPLETED."""
    return facts.status is NodeStatus.COMPLETED


def failed(facts: StatusRoutingFacts) -> bool:
    """The node just finished with any status but COMPLETED."""
    return facts.status is not NodeStatus.COMPLETED


def retry_left(facts: StatusRoutingFacts) -> bool:
    """A technical retry follows: a retryable status and retries left (spec §6.7)."""
    return facts.status in RETRYABLE_STATUSES and facts.retries_left


def status_predicates(conditions: type[C]) -> dict[C, Callable[[Any], bool]]:
    """The predicates of ``ALWAYS``, ``COMPLETED``, ``RETRY_LEFT``, ``ANY_FAILURE`` and
    ``OTHERWISE``, which mean the same in both tables (an enum without one fails at import)."""
    return {
        conditions["ALWAYS"]: always,
        conditions["COMPLETED"]: completed,
        conditions["RETRY_LEFT"]: retry_left,
        conditions["ANY_FAILURE"]: failed,
        conditions["OTHERWISE"]: always,
    }


def _node_id(node: enum.Enum | None, *, end: bool) -> str:
    if node is None:
        return "END" if end else "START"
    return str(node.value)


def mermaid_flowchart(table: Sequence[TableRow]) -> str:
    """A Mermaid flowchart with one labelled edge per row, so the picture cannot lie."""
    lines = ["flowchart TD", "    START([start])", "    END([END])"]
    for row in table:
        label = str(row.condition.value)
        if row.reason is not None:
            label += f" / {row.reason.value}"
        elif row.reason_from_node:
            label += " / node reason"
        if row.same_input:
            label += " / same input"
        source = _node_id(row.after, end=False)
        target = _node_id(row.next, end=True)
        lines.append(f'    {source} -->|"{label}"| {target}')
    return "\n".join(lines) + "\n"


def text_cell(value: object) -> str:
    """One report cell: ``-`` for None, an enum's value, else ``str``."""
    return "-" if value is None else str(getattr(value, "value", value))


def trace_table_lines(events: Sequence[Any], counter: str) -> list[str]:
    """The trace as aligned text rows: seq, node, ``counter``, attempt, status, reason.

    ``counter`` names the event's loop counter (``round`` in the chat trace,
    ``step`` in the AIOps trace).
    """
    header = ("seq", "node", counter, "attempt", "status", "reason")
    rows = [header] + [
        (
            str(event.seq),
            event.node.value,
            str(getattr(event, counter)),
            str(event.attempt),
            event.status.value,
            text_cell(event.reason_code),
        )
        for event in events
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


share_repr(RouteRow, StatusRoutingFacts)
