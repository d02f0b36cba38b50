"""LangGraph adapter for the AIOps flow: a ``StateGraph`` on the AIOps run journal.

Needs the extra ``langgraph``. The same construction as the chat graph
(:mod:`diagnosis_core.adapters.langgraph` — one implementation serves both,
with every guarantee of that page), from public names only: the state holds
the request and the AIOps journal entries as ASCII JSON text, never a
conclusion; every node folds (and verifies) the journal and asks
:func:`next_aiops_action` what to do; one node per agent (``supervisor``,
``planner``, ``executor``, ``reporter``), each effect in two supersteps — the
first commits the ``started`` entry (written before the agent runs, with the
default ``durability="sync"``), the second calls the agent and appends the
``finished`` entry.

**Resume** (spec §12, the AIOps rule of :func:`~diagnosis_core.journal.resume_journal`): a node
that finds a ``started`` entry it did not commit in this process — its
process died — sends an interrupted supervisor, planner or reporter call
again as the same attempt, and records an interrupted executor as failed
(``interrupted: outcome unknown`` → ``EXECUTOR_FAILED``), never calling it
twice. :func:`resume_aiops_graph` continues a run from its checkpoint in any
process, including one whose worker died before the first step; a forged or
edited checkpoint is a :class:`JournalError` (with ``key``: any edit).

``tools`` (a :data:`~diagnosis_core.tools.ToolsFactory`) gives the executor
the run's recorder seeded with the journal's §13 records, and its entry
carries the tool calls of its call; ``observer`` (an AIOps observer, e.g.
:class:`~diagnosis_core.adapters.otel.AiOpsOpenTelemetryObserver`) hears what
the AIOps drivers tell it, for the effects this process performs.
:class:`AsyncAiOpsEffects` make the nodes coroutines (:func:`arun_aiops_graph`).
``interrupt_before`` / ``interrupt_after`` name nodes of :data:`AIOPS_NODES`.
Large entries are checkpointed once, by content hash, and each thread has one
live owner (:class:`~diagnosis_core.adapters.langgraph.ThreadBusyError`), as for the chat
graph; the run options are the chat graph's too (:mod:`diagnosis_core.adapters.langgraph`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, Unpack

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from .. import aiops, machine
from ..journal import (
    AiOpsJournal,
    AiOpsJournalRecorder,
    aiops_request_to_wire,
    entry_to_wire,
)
from ..tools import ToolsFactory
from . import _langgraph_core as core
from ._langgraph_core import Durability, GraphState, ResumeOptions, RunOptions

__all__ = [
    "AIOPS_NODES",
    "AiOpsGraph",
    "AiOpsGraphState",
    "aiops_graph_values",
    "aiops_journal_of",
    "aiops_state_graph",
    "aiops_state_of",
    "aresume_aiops_graph",
    "arun_aiops_graph",
    "build_aiops_graph",
    "resume_aiops_graph",
    "run_aiops_graph",
]

AIOPS_NODES = ("supervisor", "planner", "executor", "reporter")
"""The nodes of the AIOps graph, one per agent; each is named like its journal ``call``."""

AiOpsGraphState: TypeAlias = GraphState
"""The LangGraph state of an AIOps run: the request and the journal entries, as ASCII JSON."""

AiOpsGraph: TypeAlias = CompiledStateGraph[
    AiOpsGraphState, None, AiOpsGraphState, AiOpsGraphState
]
"""The compiled LangGraph graph of an AIOps run."""


_FLOW = core.Flow(
    name="aiops",
    workflow=machine.AIOPS_WORKFLOW,
    nodes=AIOPS_NODES,
    effects_type=aiops.AiOpsEffects,
    async_effects_type=aiops.AsyncAiOpsEffects,
    recorder=lambda journal, key: AiOpsJournalRecorder(journal, key=key),
    new_journal=AiOpsJournal,
    node_of=lambda action: action.agent.value,
    perform=machine.perform_aiops_effect,
    perform_async=machine.perform_aiops_effect_async,
    entry_text=lambda entry: core.text(entry_to_wire(entry)),
    input_hint="aiops_graph_input(request)",
    check_effects=lambda effects, where, tools: machine.check_aiops_effects(
        effects, where=where, tools=tools
    ),
    # AIOps requests hold no question: max_question_chars does not apply.
    check_request=lambda request, where, _limit: machine.check_aiops_request(request, where=where),
)


def aiops_graph_input(request: aiops.AiOpsRequest) -> AiOpsGraphState:
    """The graph input that starts an AIOps run of ``request``."""
    return {"request": core.text(aiops_request_to_wire(request))}


def aiops_journal_of(values: Mapping[str, Any]) -> AiOpsJournal:
    """The :class:`AiOpsJournal` graph values hold, checked for form (not folded)."""
    journal: AiOpsJournal = core.journal_of(_FLOW, values)
    return journal


def aiops_state_of(values: Mapping[str, Any], *, key: bytes | None = None) -> aiops.AiOpsState:
    """The :class:`AiOpsState` graph values fold to (verified; with ``key`` its MAC chain too)."""
    state: aiops.AiOpsState = core.status_of(_FLOW, values, key).state
    return state


def aiops_graph_values(
    graph: AiOpsGraph, *, thread_id: str, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """The thread's latest graph values, each entry written out in full (any process)."""
    return core.graph_values(graph, thread_id, config)


def aiops_state_graph(
    effects: aiops.AiOpsEffects | aiops.AsyncAiOpsEffects,
    *,
    key: bytes | None = None,
    tools: ToolsFactory | None = None,
    observer: aiops.AiOpsObserver | None = None,
) -> StateGraph[AiOpsGraphState, None, AiOpsGraphState, AiOpsGraphState]:
    """The uncompiled AIOps graph, for embedding or compiling with other options."""
    graph: StateGraph[AiOpsGraphState, None, AiOpsGraphState, AiOpsGraphState]
    graph = core.state_graph(
        _FLOW, effects, key=key, resend_gatekeeper=False, tools=tools, observer=observer
    )
    return graph


def build_aiops_graph(
    effects: aiops.AiOpsEffects | aiops.AsyncAiOpsEffects,
    *,
    checkpointer: Checkpointer = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    key: bytes | None = None,
    durability: Durability = "sync",
    tools: ToolsFactory | None = None,
    observer: aiops.AiOpsObserver | None = None,
) -> AiOpsGraph:
    """The compiled AIOps graph; pass a checkpointer to make runs resumable.

    ``key`` signs every entry (a checkpoint with any edit is a
    :class:`JournalError`); ``interrupt_before`` / ``interrupt_after``
    (names of :data:`AIOPS_NODES`, ``ValueError`` otherwise), ``durability``,
    ``tools`` and ``observer`` are those of
    :func:`~diagnosis_core.adapters.langgraph.build_diagnosis_graph`.
    ``TypeError`` when ``effects`` are not AIOps effects, or for what the
    drivers refuse (:func:`~diagnosis_core.machine.check_aiops_effects`).
    """
    # Positional, in build_graph's order; the AIOps rule has no gatekeeper to re-send.
    options = (interrupt_before, interrupt_after, key, False, durability, tools, observer)
    graph: AiOpsGraph = core.build_graph(_FLOW, effects, checkpointer, *options)
    return graph


def run_aiops_graph(
    graph: AiOpsGraph, request: aiops.AiOpsRequest, **options: Unpack[RunOptions]
) -> aiops.AiOpsState:
    """Run ``request`` through ``graph``; the :class:`AiOpsState` when the graph stops.

    ``thread_id`` defaults to the run id. Checkpoints are written with the
    graph's durability (``sync``: the started entry before the agent runs).
    The thread is held exclusively while the run goes: a live owner elsewhere
    is a :class:`ThreadBusyError` unless it lets go within ``wait_for_owner``
    seconds. ``TypeError`` before anything runs for a request that is not an
    :class:`AiOpsRequest`; :class:`PayloadError` before anything runs or is
    checkpointed for a lone surrogate anywhere in the request.
    """
    state: aiops.AiOpsState = core.run_graph(_FLOW, graph, request, options)
    return state


async def arun_aiops_graph(
    graph: AiOpsGraph, request: aiops.AiOpsRequest, **options: Unpack[RunOptions]
) -> aiops.AiOpsState:
    """The asyncio variant of :func:`run_aiops_graph` (required with :class:`AsyncAiOpsEffects`)."""
    state: aiops.AiOpsState = await core.arun_graph(_FLOW, graph, request, options)
    return state


def resume_aiops_graph(
    graph: AiOpsGraph, *, thread_id: str, **options: Unpack[ResumeOptions]
) -> aiops.AiOpsState:
    """Continue the AIOps run checkpointed under ``thread_id`` (any process); its state.

    The stored journal is verified first; an agent call interrupted by its
    process's death is settled by the AIOps resume rule (module docstring).
    """
    state: aiops.AiOpsState = core.resume_graph(_FLOW, graph, thread_id, options)
    return state


async def aresume_aiops_graph(
    graph: AiOpsGraph, *, thread_id: str, **options: Unpack[ResumeOptions]
) -> aiops.AiOpsState:
    """The asyncio variant of :func:`resume_aiops_graph`."""
    state: aiops.AiOpsState = await core.aresume_graph(_FLOW, graph, thread_id, options)
    return state
