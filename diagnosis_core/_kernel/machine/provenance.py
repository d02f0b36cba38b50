"""Which states the machine built in this process (spec §12: no stored state is a truth).

The state is the fold of the request and the journal. A state read back from
storage (``from_json(DiagnosisState, …)``) could carry any counter or any
conclusion — an attempt of ``-200``, a finished run with an empty answer — so
it is for display only: the drivers resume from a journal, or from a state
object that :func:`start_diagnosis` / :func:`advance` (or their AIOps twins)
returned *in this process*.

The check is by identity: the machine's entry points record each state they
return in a weak registry (an entry disappears with its state), and a driver
asks :func:`require_built_here`. An equal copy — deserialized, pickled, or
``attrs.evolve``-d by a host — is not the object the machine built, so it is
refused. Cost: one weak reference per state the entry points return.

Pure apart from that registry: no I/O.
"""

from __future__ import annotations

import weakref
from typing import TypeVar

from ..errors import MachineError

__all__ = ["mark_built", "require_built_here"]

T = TypeVar("T")

_BUILT: weakref.WeakValueDictionary[int, object] = weakref.WeakValueDictionary()


def mark_built(state: T) -> T:
    """Record that the machine built ``state`` (returns it unchanged)."""
    _BUILT[id(state)] = state
    return state


def require_built_here(state: object, driver: str) -> None:
    """:class:`MachineError` unless ``state`` was built by the machine in this process."""
    if _BUILT.get(id(state)) is not state:
        raise MachineError(
            f"{driver}: state: not a state the machine built in this process; a stored "
            "state is for display only (spec §12): resume from the run's journal (journal=)"
        )
