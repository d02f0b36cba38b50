"""Failure classification of exceptions raised by effects (spec §6.7).

A wrong "retryable" can repeat a side effect, a wrong "non-retryable" only
costs an answer, so every doubt resolves to ``NON_RETRYABLE`` (fail closed).
The default classifier applies these rules, first match wins:

1. the package's :class:`ToolBlockedError` → ``TOOL_BLOCKED`` and its
   :class:`NonRetryableError` → ``NON_RETRYABLE``: an explicit package type is
   the effect's own statement and beats any ``retryable`` attribute it carries;
2. an exception that has a ``retryable`` attribute: truthy → ``RETRYABLE``,
   falsy → ``NON_RETRYABLE`` (this beats rule 3, so a ``TimeoutError`` marked
   ``retryable = False`` is not retried); if reading the attribute or taking
   its truth value raises, → ``NON_RETRYABLE``;
3. ``TimeoutError`` (``asyncio.TimeoutError`` is the same class since 3.11)
   and ``ConnectionError`` → ``RETRYABLE``;
4. everything else → ``NON_RETRYABLE``.
"""

from __future__ import annotations

import inspect
from typing import Protocol

from ._enums import FailureKind
from ._errors import NonRetryableError, ToolBlockedError

__all__ = ["FailureClassifier", "classify_failure", "default_failure_classifier"]

_ABSENT = object()


class FailureClassifier(Protocol):
    """Maps an exception raised by an effect to a :class:`FailureKind` (spec §2, §6.7)."""

    def __call__(self, error: BaseException) -> FailureKind:
        """Classify ``error``; raising is allowed and means ``NON_RETRYABLE``."""
        ...


def _retryable_flag(error: BaseException) -> FailureKind | None:
    """Rule 2: the kind a ``retryable`` attribute dictates, or None when it has none.

    The attribute is first looked up statically, so a property that raises
    ``AttributeError`` counts as present (and unreadable), not as absent.
    """
    try:
        present = inspect.getattr_static(error, "retryable", _ABSENT) is not _ABSENT
        if present:
            value = getattr(error, "retryable")  # noqa: B009 - a property may raise
        else:
            try:
                # ``__getattr__`` hooks are invisible to the static lookup.
                value = getattr(error, "retryable")  # noqa: B009
            except AttributeError:
                return None
        return FailureKind.RETRYABLE if bool(value) else FailureKind.NON_RETRYABLE
    except Exception:
        return FailureKind.NON_RETRYABLE


def default_failure_classifier(error: BaseException) -> FailureKind:
    """The default classifier of spec §6.7; the rule order is in the module docstring.

    Guarantee: an exception it does not know is never ``RETRYABLE``, and it
    never raises.
    """
    if isinstance(error, ToolBlockedError):
        return FailureKind.TOOL_BLOCKED
    if isinstance(error, NonRetryableError):
        return FailureKind.NON_RETRYABLE
    flagged = _retryable_flag(error)
    if flagged is not None:
        return flagged
    # The real type: ``isinstance`` believes a ``__class__`` attribute that lies.
    if issubclass(type(error), TimeoutError | ConnectionError):
        return FailureKind.RETRYABLE
    return FailureKind.NON_RETRYABLE


def classify_failure(classifier: FailureClassifier, error: BaseException) -> FailureKind:
    """Run an injected classifier, failing closed on its own misbehaviour (spec §6.7).

    A classifier that raises an ``Exception`` or returns anything but a
    :class:`FailureKind` member (a plain string included) yields
    ``NON_RETRYABLE``. A ``BaseException`` that is not an ``Exception``
    (``KeyboardInterrupt``, ``SystemExit``) propagates: it is the host's
    business, not a classification.
    """
    try:
        kind = classifier(error)
    except Exception:
        return FailureKind.NON_RETRYABLE
    if type(kind) is FailureKind:  # exact: ``__class__`` can be faked for isinstance
        return kind
    return FailureKind.NON_RETRYABLE
