"""Observers: what a driver reports while it runs (protocol §14).

One pipeline serves streaming and non-streaming hosts: a driver given an
observer calls its three hooks — an effect is about to be performed, an
effect returned, a trace event was appended — in the order they happen. The
OpenTelemetry adapter, a progress bar, a server-sent-events stream and a
test's recorder are all observers.

An observer only watches (spec §12.5). Whatever it does, the run is the same
run:

* a hook that raises is *reported* through :mod:`logging` (logger
  ``diagnosis_core.observe``, level WARNING, naming the hook and the
  exception) and *counted* (:class:`Watcher`; the chat drivers put the count
  on the returned state, ``DiagnosisState.observer_failures``, and the trace
  report carries it when it is not 0). Logging, unlike a warning, is a
  channel the host's warning filters cannot turn into an exception, so a
  hook failure never escapes a driver — not under ``-W error``, and never
  between a journal's ``started`` entry and its effect;
* a hook receives values the machine never reads afterwards: actions and
  trace events are immutable, and a gatekeeper result (the one mutable
  fact) is handed over as a private copy (:func:`observed_result`).

:func:`notify` is the one place that calls a hook. ``BaseException``\\ s that
are not ``Exception`` (cancellation, ``KeyboardInterrupt``, ``SystemExit``,
``GeneratorExit``) still propagate: they stop the host, not the run's logic.
No hook is called between a journal's ``started`` entry and its effect
(``effect_started`` comes before the entry, ``tools_recorded`` and
``effect_finished`` after the ``finished`` entry), so such an exception
leaves the journal as if the effect had not started, or had finished: a
resumed run never reports as interrupted an effect that never ran.

The protocol is generic in the workflow's action, result and event types; the
chat workflow's observer is ``DiagnosisObserver`` (``_chat/observe.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Protocol, TypeVar

import attrs

from ..wire.facts import plain_json_copy

__all__ = [
    "Observer",
    "ObserverWarning",
    "Watcher",
    "new_events",
    "notify",
    "observed_result",
]

A_contra = TypeVar("A_contra", contravariant=True)
R_contra = TypeVar("R_contra", contravariant=True)
E_contra = TypeVar("E_contra", contravariant=True)
T = TypeVar("T")


class Observer(Protocol[A_contra, R_contra, E_contra]):
    """The three hooks a driver calls (protocol §14); every one may be a no-op.

    * ``effect_started(action)`` — the effect ``action`` is about to be
      performed (for a journaling driver: just before its ``started`` entry
      is handed to the sink, so no hook runs between that entry and the
      effect; spec §12.5);
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
    """Kept for compatibility; no longer issued.

    A hook that raised used to be reported with this warning, which a host's
    ``warnings.simplefilter("error")`` turned into an exception escaping the
    driver. Hook failures are now logged (logger ``diagnosis_core.observe``)
    and counted (spec §12.5); nothing in the package warns with this class.
    """


_LOGGER_NAME = "diagnosis_core.observe"
"""The logger hook failures are reported on (spec §12.5). ``logging`` is loaded
on the first failure only: a run whose observers behave never pays for it."""


def _describe(error: Exception) -> str:
    try:
        name = type(error).__name__
    except Exception:  # pragma: no cover - a metaclass with a hostile __name__
        name = "Exception"
    try:
        message = str(error)
    except Exception:
        return f"{name} (unprintable)"
    text = message if len(message) <= 500 else message[:500] + "…"
    return f"{name}: {text}" if text else name


class Watcher:
    """Calls one observer's hooks and counts the ones that raised (spec §12.5).

    ``failures`` is the number of hook calls that raised an ``Exception``;
    each is logged to ``diagnosis_core.observe`` and otherwise ignored.
    """

    __slots__ = ("failures", "observer")

    def __init__(self, observer: object) -> None:
        self.observer = observer
        self.failures = 0

    def notify(self, hook: str, *args: object) -> None:
        """Call ``observer.<hook>(*args)``; an ``Exception`` is logged and counted."""
        if not _call(self.observer, hook, args):
            self.failures += 1


def _call(observer: object, hook: str, args: tuple[object, ...]) -> bool:
    """Call one hook; False when it raised (already logged). Never raises an Exception."""
    if observer is None:
        return True
    try:
        method = getattr(observer, hook, None)
        if method is not None:
            method(*args)
    except Exception as error:
        with contextlib.suppress(Exception):  # a broken logging handler of the host
            import logging

            logging.getLogger(_LOGGER_NAME).warning(
                "observer hook %s raised %s; the run continues unchanged",
                hook,
                _describe(error),
            )
        return False
    return True


def notify(observer: object, hook: str, *args: object) -> None:
    """Call ``observer.<hook>(*args)``; an ``Exception`` it raises is logged, never raised.

    ``observer`` may be None (nothing to call) or lack the hook (nothing to
    call). The report is a WARNING record of the ``diagnosis_core.observe``
    logger naming the hook and the exception's type and message, so a host
    sees a broken observer without its run being affected — whatever its
    warning filters are. Drivers count failures with :class:`Watcher`.
    """
    _call(observer, hook, args)


def observed_result(result: T) -> T:
    """What an ``effect_finished`` hook is shown: ``result``, or a private copy of it.

    Agent results are immutable; a result that holds a plain JSON value in
    ``raw`` (the gatekeeper's, which the fact codec made plain) could be
    edited by a hook, so the hook gets a copy with a deep copy of ``raw`` and
    the machine keeps its own (spec §12.5).
    """
    if attrs.has(type(result)) and hasattr(result, "raw"):
        return attrs.evolve(result, raw=plain_json_copy(result.raw))  # type: ignore[misc]
    return result


def new_events(before: Sequence[T], after: Sequence[T]) -> Sequence[T]:
    """The events ``after`` appended to ``before`` (a trace only ever grows)."""
    return after[len(before) :]
