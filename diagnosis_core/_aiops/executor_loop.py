"""The AIOps executor as a tool loop: :func:`aiops_executor_agent` (spec §11, §13, §18).

The loop itself is the kernel's (``_kernel/tools/tool_loop.py``, shared with the
chat executor); this module gives it the AIOps final answer,
``aiops_executor_output``, constrained by :func:`aiops_grounding_schema`.
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
from .grounding import aiops_grounding_schema

__all__ = ["aiops_executor_agent", "async_aiops_executor_agent"]


def aiops_executor_agent(
    model: ToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> ExecutorAgent:
    """The AIOps executor effect: ``model`` calling ``tools`` until it answers (spec §11, §13).

    As :func:`diagnosis_core.tools.executor_agent`, with ``aiops_executor_output``
    as the final answer. ``grounding`` defaults to ``"run"``: an AIOps step
    may cite the invocations of earlier executor steps.
    """
    settings = build_settings(
        tools, recorder, options, name="aiops_executor_agent",
        build=aiops_grounding_schema, grounding="run",
    )
    return ExecutorAgent(model, settings)


def async_aiops_executor_agent(
    model: AsyncToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    **options: Unpack[ExecutorOptions],
) -> AsyncExecutorAgent:
    """The asyncio variant of :func:`aiops_executor_agent`."""
    settings = build_settings(
        tools, recorder, options, name="async_aiops_executor_agent",
        build=aiops_grounding_schema, grounding="run", asynchronous=True,
    )
    return AsyncExecutorAgent(model, settings)
