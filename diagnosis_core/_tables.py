"""What every routing table shares: row lookup and the Mermaid drawing.

The chat workflow (:mod:`._routing`) and the AIOps workflow
(:mod:`.aiops._routing`) keep their own rows and conditions; reading rows in
order and drawing them is the same for both, so it lives here once.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

__all__ = ["TableRow", "first_matching_row", "index_rows", "mermaid_flowchart"]


class TableRow(Protocol):
    """The shape of a routing row: ``after`` and ``next`` are None for start and END."""

    @property
    def after(self) -> enum.Enum | None: ...

    @property
    def condition(self) -> enum.Enum: ...

    @property
    def next(self) -> enum.Enum | None: ...

    @property
    def reason(self) -> enum.Enum | None: ...

    @property
    def reason_from_node(self) -> bool: ...

    @property
    def same_input(self) -> bool: ...


Row = TypeVar("Row", bound=TableRow)
Facts = TypeVar("Facts")


def index_rows(table: Sequence[Row]) -> Mapping[object, tuple[Row, ...]]:
    """Rows grouped by the node they follow, each group in table order."""
    rows: dict[object, list[Row]] = {}
    for row in table:
        rows.setdefault(row.after, []).append(row)
    return MappingProxyType({after: tuple(found) for after, found in rows.items()})


def first_matching_row(
    rows: Sequence[Row],
    predicates: Mapping[Any, Callable[[Facts], bool]],
    facts: Facts,
) -> Row | None:
    """The first row whose condition holds, as the spec's tables read; None if none does."""
    for row in rows:
        if predicates[row.condition](facts):
            return row
    return None


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
