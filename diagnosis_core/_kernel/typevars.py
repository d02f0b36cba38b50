"""A type variable with a default (PEP 696), for the workflows' generic in-memory sinks.

``ListJournalSink()`` is meant to be a ``ListJournalSink[JournalEntry]`` (and the
AIOps sink likewise), which needs a type variable whose default is the entry class.
Type checkers learn defaults from ``typing_extensions.TypeVar``; Python 3.11's
``typing.TypeVar`` has no ``default`` and ``typing_extensions`` is no runtime
dependency of the core. Both workflows declare their sink's variable through
:func:`DefaultTypeVar`, which is ``typing_extensions.TypeVar`` to a type checker and,
at run time, a plain ``TypeVar`` (the default only matters to a type checker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

__all__ = ["DefaultTypeVar"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultTypeVar
else:

    def DefaultTypeVar(name: str, *, bound: type, default: type) -> TypeVar:
        """A ``TypeVar`` bound to ``bound``; ``default`` is for type checkers only."""
        return TypeVar(name, bound=bound)
