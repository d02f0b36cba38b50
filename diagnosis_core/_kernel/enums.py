"""The enumerations both workflows share (spec §3, §4, §6.7).

Every wire value is fixed by the spec: other programs compare them byte for
byte, so the ``value`` of each member is the wire string and never changes.
"""

from __future__ import annotations

import enum

__all__ = ["FailureKind", "Locale", "NodeStatus"]


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
