"""The tool recorder (protocol §13): the one place an executor's tool calls go through.

A host wraps each tool callable with :meth:`ToolRecorder.wrap` (or
:meth:`ToolRecorder.wrap_async`) under its tool name. Every call gets the next
invocation id of the run (``inv-1``, ``inv-2``, … in call-start order, so a
replayed run cites the same ids), is recorded as a ledger entry, and returns
the envelope ``{invocation_id, tool_name, output}`` the executor model cites.
:meth:`ToolRecorder.gatekeeper` is a gatekeeper that reads the recorder's ledger
*at call time*, so citations of tools called after start-up are checked against
what was really recorded.

A ledger is built from recorded records with :func:`ledger_from_records`; the
ledger (:class:`diagnosis_core.ToolLedger`) and the reference gatekeeper that
checks citations against it (:class:`diagnosis_core.ReferenceGatekeeper`) are
the host's, at the top level; a failed binding check is a :class:`BindingFailure`.

Engines run many runs through one set of effects and may run a run's executor
and gatekeeper in different processes: their ``tools=`` is a
:data:`ToolsFactory` — one recorder per run, seeded with the §13 records the
run's journal holds — and :class:`RunRecorders` is the ready-made one.

The executor's tool loop lives here as well: a tool-calling chat model is a
:class:`ToolCallingModel` (one :class:`TurnRequest` in, one :class:`ModelTurn`
out; the messages are :class:`SystemMessage`, :class:`UserMessage`,
:class:`AssistantMessage` and :class:`ToolMessage`), and each executor tool a
:class:`Tool` (a :class:`ToolSpec` and the function that runs) — see
``docs/executor.md``. :func:`executor_agent` turns them into the executor
effect: a bounded loop (:class:`ExecutorAgent`; limits end it with
:class:`ToolLoopLimitError` or :class:`ToolLoopDeadlineError`) whose final
turn is constrained by :func:`evidence_grounding_schema` — ids and paths only
of what was recorded (spec §18, limits in :class:`GroundingLimits`). The AIOps
executor is the same loop with its own final answer: :func:`aiops_executor_agent`,
constrained by :func:`aiops_grounding_schema`.

This is host-facing plumbing, not part of the pure decision core: it never
reads a clock itself (``duration_ms`` is written only when the host passes one),
and ``import diagnosis_core`` does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._aiops import AIOPS_NAMES
from ._chat.reference_gatekeeper import (
    BindingFailure,
    ToolRecorder,
    parse_raw_path,
)
from ._chat.run_recorders import RunRecorders, ToolsFactory
from ._executor.chat import async_executor_agent, evidence_grounding_schema, executor_agent
from ._executor.grounding import GroundingLimits, GroundingSchema
from ._executor.loop import (
    AsyncExecutorAgent,
    ExecutorAgent,
    ToolLoopDeadlineError,
    ToolLoopLimitError,
)
from ._executor.model import (
    AssistantMessage,
    AsyncToolCallingModel,
    ChatMessage,
    ModelTurn,
    SystemMessage,
    Tool,
    ToolCall,
    ToolCallingModel,
    ToolMessage,
    ToolSpec,
    TurnRequest,
    UserMessage,
)
from ._kernel.public import lazy_module
from ._kernel.tools.ledger import ledger_from_records
from ._kernel.tools.recorder import (
    RecorderMark,
    ReplayedToolError,
    ToolCallError,
    ToolEnvelope,
)

if TYPE_CHECKING:
    from ._executor.aiops import (
        aiops_executor_agent,
        aiops_grounding_schema,
        async_aiops_executor_agent,
    )

__all__ = [
    "AssistantMessage",
    "AsyncExecutorAgent",
    "AsyncToolCallingModel",
    "BindingFailure",
    "ChatMessage",
    "ExecutorAgent",
    "GroundingLimits",
    "GroundingSchema",
    "ModelTurn",
    "RecorderMark",
    "ReplayedToolError",
    "RunRecorders",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolCallingModel",
    "ToolEnvelope",
    "ToolLoopDeadlineError",
    "ToolLoopLimitError",
    "ToolMessage",
    "ToolRecorder",
    "ToolSpec",
    "ToolsFactory",
    "TurnRequest",
    "UserMessage",
    "async_executor_agent",
    "evidence_grounding_schema",
    "executor_agent",
    "ledger_from_records",
    "parse_raw_path",
]
__all__ += [  # the AIOps workflow's, loaded on first use (``_aiops/__init__.py``)
    "aiops_executor_agent", "aiops_grounding_schema", "async_aiops_executor_agent",
]

if not TYPE_CHECKING:  # mypy reads the TYPE_CHECKING imports: a misspelt name stays an error
    __getattr__, __dir__ = lazy_module(__name__, __package__, AIOPS_NAMES[__name__], globals())
