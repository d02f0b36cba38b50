"""The run options as loose keywords: one typed set for both workflows' drivers (§12, §14).

Every driver takes :class:`~._kernel.driver.RunOptions` as ``options=`` or as the
same-named keywords. The keywords are typed by this one ``TypedDict``,
parametrised by what differs between the workflows (the journal, its sink, the
observer and the tool recorder), so an option added to :class:`RunOptions` is added to every
driver's signature at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypedDict, TypeVar

if TYPE_CHECKING:
    from .journal.mac import JournalHead
    from .journal.store import JournalStore

__all__ = ["RunKeywords"]

J = TypeVar("J")
K = TypeVar("K")
O = TypeVar("O")  # noqa: E741
T = TypeVar("T")


class RunKeywords(TypedDict, Generic[J, K, O, T], total=False):
    """The run options as loose keywords (each one a :class:`RunOptions` field).

    ``J`` is the workflow's journal, ``K`` its journal sink, ``O`` its observer,
    ``T`` its tool recorder.
    """

    journal: J | None
    sink: K | None
    key: bytes | None
    resend_gatekeeper: bool
    tools: T | None
    observer: O | None
    store: JournalStore | None
    resend_executor: bool
    head: JournalHead | None
    max_question_chars: int
