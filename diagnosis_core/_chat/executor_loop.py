"""The chat workflow's executor as a tool loop: :func:`executor_agent` (issue 33, §13, §18).

The loop itself is the kernel's (``_kernel/tools/tool_loop.py``, shared with the
AIOps executor); this module gives it the chat workflow's final answer:
``executor_evidence_v2``, constrained by :func:`evidence_grounding_schema`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from .._kernel.tools.chat_model import AsyncToolCallingModel, Tool, ToolCallingModel
from .._kernel.tools.recorder import ToolRecorder
from .._kernel.tools.tool_loop import (
    AsyncExecutorAgent,
    ExecutorAgent,
    ExecutorOptions,
    PerRunRecorders,
    build_settings,
)
from .grounding import evidence_grounding_schema

__all__ = ["async_executor_agent", "executor_agent"]


def executor_agent(
    model: ToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> ExecutorAgent:
    """The chat executor effect: ``model`` calling ``tools`` until it answers (spec §13, §18).

    Use it as ``Effects(executor=executor_agent(...), ...)``. ``recorder`` is
    the run's :class:`ToolRecorder` (the one given to the driver as
    ``tools=``), or a :class:`RunRecorders` (engines: the run's recorder is
    found by ``config.run_id``). Each turn's response schema is the
    ``executor_evidence_v2`` grounding schema in ``profile`` of the
    invocations recorded so far (``grounding``: this call's, the run's, or
    none). Limits, errors and resume: ``docs/executor.md``.

    Raises:
        TypeError, ValueError: for a malformed argument, naming it (at
            construction, before any run).
    """
    settings = build_settings(
        tools, recorder, options, name="executor_agent",
        build=evidence_grounding_schema, grounding="call",
    )
    return ExecutorAgent(model, settings)


def async_executor_agent(
    model: AsyncToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> AsyncExecutorAgent:
    """The asyncio variant of :func:`executor_agent` (tools may be coroutine functions)."""
    settings = build_settings(
        tools, recorder, options, name="async_executor_agent",
        build=evidence_grounding_schema, grounding="call", asynchronous=True,
    )
    return AsyncExecutorAgent(model, settings)
