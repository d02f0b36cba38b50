"""Observers: what a driver reports while it runs (protocol §14).

One pipeline serves streaming and non-streaming hosts: a driver given an
observer calls its three hooks — an effect is about to be performed, an
effect returned, a trace event was appended — in the order they happen. The
OpenTelemetry adapter, a progress bar, a server-sent-events stream and a
test's recorder are all observers.

An observer only watches. Whatever it does, the run is the same run: a hook
that raises is *reported* (a :class:`ObserverWarning` naming the hook and the
exception) and otherwise ignored, so a broken exporter can never change an
answer, a counter or a trace (:func:`notify` is the one place that calls a
hook). ``BaseException``\\ s that are not ``Exception`` (cancellation,
``KeyboardInterrupt``) still propagate: they stop the host, not the run's
logic.

The protocol is generic in the workflow's action, result and event types; the
chat workflow's observer is ``DiagnosisObserver`` (``_chat/observe.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = [
    "Observer",
    "ObserverWarning",
    "new_events",
    "notify",
]

A_contra = TypeVar("A_contra", contravariant=True)
R_contra = TypeVar("R_contra", contravariant=True)
E_contra = TypeVar("E_contra", contravariant=True)
T = TypeVar("T")


class Observer(Protocol[A_contra, R_contra, E_contra]):
    """The three hooks a driver calls (protocol §14); every one may be a no-op.

    * ``effect_started(action)`` — the effect ``action`` is about to be
      performed (for a journaling driver: after its ``started`` entry was
      handed to the sink);
    * ``effect_finished(action, result)`` — it returned ``result`` (an agent's
      text or classified failure, the gatekeeper's raw result or failure);
    * ``event_appended(event)`` — the machine appended ``event`` to the trace.

    Hooks are called synchronously by the driver, so an observer that reads a
    clock in them times the effect with the driver's clock.

    Two more hooks are optional (not part of this protocol, so every existing
    observer still fits; :func:`notify` skips a hook an observer lacks):
    ``run_opened(run)`` — the chat drivers and the engine adapters call it
    with the run's :class:`RunConfig` before any other hook in a process
    (a resumed run's first other hook may be ``event_appended``, which names
    no run); ``tools_recorded(action, invocations)`` — after an executor
    call of a run given ``tools``, before ``effect_finished``: the tool calls
    recorded during it, as the journal records them (spec §13).
    """

    def effect_started(self, action: A_contra, /) -> None:
        """The effect ``action`` is about to be performed."""
        ...

    def effect_finished(self, action: A_contra, result: R_contra, /) -> None:
        """The effect ``action`` returned ``result``."""
        ...

    def event_appended(self, event: E_contra, /) -> None:
        """The machine appended ``event`` to the run's trace."""
        ...


class ObserverWarning(RuntimeWarning):
    """An observer hook raised; the run went on unchanged (protocol §14)."""


def notify(observer: object, hook: str, *args: object) -> None:
    """Call ``observer.<hook>(*args)``; an ``Exception`` it raises is reported, never raised.

    ``observer`` may be None (nothing to call) or lack the hook (nothing to
    call). The report is an :class:`ObserverWarning` that names the hook and
    the exception's type and message, so a host sees a broken observer without
    its run being affected.
    """
    if observer is None:
        return
    try:
        method = getattr(observer, hook, None)
        if method is not None:
            method(*args)
    except Exception as error:
        try:
            detail = f"{type(error).__name__}: {error}"
        except Exception:
            detail = type(error).__name__
        warnings.warn(
            f"observer hook {hook} raised {detail}; the run continues unchanged",
            ObserverWarning,
            stacklevel=2,
        )


def new_events(before: Sequence[T], after: Sequence[T]) -> Sequence[T]:
    """The events ``after`` appended to ``before`` (a trace only ever grows)."""
    return after[len(before) :]
