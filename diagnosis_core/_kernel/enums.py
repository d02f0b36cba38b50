"""The enumerations both workflows share (spec §3, §4, §6.7).

Every wire value is fixed by the spec: other programs compare them byte for
byte, so the ``value`` of each member is the wire string and never changes.
"""

from __future__ import annotations

import enum
from typing import TypeVar

__all__ = ["FailureKind", "Locale", "NodeStatus", "member_of"]

E = TypeVar("E", bound=enum.StrEnum)


class NodeStatus(enum.StrEnum):
    """Execution status of one node attempt (spec §3, §6.7)."""

    COMPLETED = "COMPLETED"
    RETRYABLE_FAILED = "RETRYABLE_FAILED"
    INVALID_OUTPUT = "INVALID_OUTPUT"
    NON_RETRYABLE_FAILED = "NON_RETRYABLE_FAILED"


class FailureKind(enum.StrEnum):
    """Classification of an exception raised by an effect (spec §6.7)."""

    RETRYABLE = "RETRYABLE"
    NON_RETRYABLE = "NON_RETRYABLE"
    TOOL_BLOCKED = "TOOL_BLOCKED"


class Locale(enum.StrEnum):
    """Languages of the deterministic fallback texts (spec §4)."""

    EN = "en"
    ZH_CN = "zh-CN"


def member_of(kind: type[E], value: object) -> E | None:
    """The member of ``kind`` that ``value`` is or names by its wire value; None if none.

    Options that take an enumeration also take its wire string (a locale
    ``"zh-CN"``, a schema profile ``"openai"``); every such option reads the
    value through this one lookup, so a non-string (``1``, ``None``) never
    reaches the enum constructor and each caller raises its own typed error.
    """
    if isinstance(value, kind):
        return value
    if not isinstance(value, str):
        return None
    try:
        return kind(value)
    except ValueError:
        return None
