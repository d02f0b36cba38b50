"""The AIOps executor as a tool loop: :func:`aiops_executor_agent` (spec §11, §13, §18).

The loop itself is the kernel's (``_kernel/tools/tool_loop.py``, shared with the
chat executor); this module gives it the AIOps final answer,
``aiops_executor_output``, constrained by :func:`aiops_grounding_schema`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from .._kernel.machine.classify import FailureClassifier, default_failure_classifier
from .._kernel.tools.chat_model import AsyncToolCallingModel, Tool, ToolCallingModel
from .._kernel.tools.grounding import DEFAULT_LIMITS, GroundingLimits, GroundingSchema
from .._kernel.tools.ledger import ToolInvocation
from .._kernel.tools.recorder import ToolRecorder
from .._kernel.tools.tool_loop import (
    AsyncExecutorAgent,
    ExecutorAgent,
    GroundingScope,
    PerRunRecorders,
    ToolErrorPolicy,
    build_settings,
)
from ._grounding import aiops_grounding_schema

__all__ = ["aiops_executor_agent", "async_aiops_executor_agent"]


def _schema(
    records: Sequence[ToolInvocation], profile: str, limits: GroundingLimits
) -> GroundingSchema:
    return aiops_grounding_schema(records, profile=profile, limits=limits)


def aiops_executor_agent(
    model: ToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    system_prompt: str | None = None,
    max_tool_calls: int = 8,
    max_turns: int = 10,
    deadline_s: float | None = 120.0,
    grounding: GroundingScope = "run",
    profile: str = "openai-strict",
    limits: GroundingLimits = DEFAULT_LIMITS,
    classifier: FailureClassifier = default_failure_classifier,
    tool_errors: ToolErrorPolicy = "report",
    clock: Callable[[], float] = time.monotonic,
) -> ExecutorAgent:
    """The AIOps executor effect: ``model`` calling ``tools`` until it answers (spec §11, §13).

    As :func:`diagnosis_core.tools.executor_agent`, with ``aiops_executor_output``
    as the final answer. ``grounding`` defaults to ``"run"``: an AIOps step
    may cite the invocations of earlier executor steps.
    """
    settings = build_settings(
        tools, recorder, build=_schema, system_prompt=system_prompt,
        max_tool_calls=max_tool_calls, max_turns=max_turns, deadline_s=deadline_s,
        grounding=grounding, profile=profile, limits=limits, classifier=classifier,
        tool_errors=tool_errors, clock=clock,
    )
    return ExecutorAgent(model, settings)


def async_aiops_executor_agent(
    model: AsyncToolCallingModel,
    tools: Sequence[Tool],
    *,
    recorder: ToolRecorder | PerRunRecorders,
    system_prompt: str | None = None,
    max_tool_calls: int = 8,
    max_turns: int = 10,
    deadline_s: float | None = 120.0,
    grounding: GroundingScope = "run",
    profile: str = "openai-strict",
    limits: GroundingLimits = DEFAULT_LIMITS,
    classifier: FailureClassifier = default_failure_classifier,
    tool_errors: ToolErrorPolicy = "report",
    clock: Callable[[], float] = time.monotonic,
) -> AsyncExecutorAgent:
    """The asyncio variant of :func:`aiops_executor_agent`."""
    settings = build_settings(
        tools, recorder, build=_schema, system_prompt=system_prompt,
        max_tool_calls=max_tool_calls, max_turns=max_turns, deadline_s=deadline_s,
        grounding=grounding, profile=profile, limits=limits, classifier=classifier,
        tool_errors=tool_errors, clock=clock, asynchronous=True,
    )
    return AsyncExecutorAgent(model, settings)
