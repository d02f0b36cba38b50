"""The tool recorder (protocol §13): the one place an executor's tool calls go through.

A host wraps each tool callable with :meth:`ToolRecorder.wrap` (or
:meth:`ToolRecorder.wrap_async`) under its tool name. Every call gets the next
invocation id of the run (``inv-1``, ``inv-2``, … in call-start order, so a
replayed run cites the same ids), is recorded as a ledger entry, and returns
the envelope ``{invocation_id, tool_name, output}`` the executor model cites.
:meth:`ToolRecorder.gatekeeper` is a gatekeeper that reads the recorder's ledger
*at call time*, so citations of tools called after start-up are checked against
what was really recorded.

This is host-facing plumbing, not part of the pure decision core: it never
reads a clock itself (``duration_ms`` is written only when the host passes one),
and ``import diagnosis_core`` does not load it.
"""

from __future__ import annotations

from ._tools import (
    RecorderGatekeeper,
    RecorderMark,
    ReplayedToolError,
    ToolCallError,
    ToolCallRecord,
    ToolEnvelope,
    ToolRecorder,
)

__all__ = [
    "RecorderGatekeeper",
    "RecorderMark",
    "ReplayedToolError",
    "ToolCallError",
    "ToolCallRecord",
    "ToolEnvelope",
    "ToolRecorder",
]
