"""LangGraph adapter: the diagnosis workflow as a ``StateGraph`` (extra ``langgraph``).

The graph performs effects; the core decides. It has one node per effect
kind — ``agent`` performs an :class:`InvokeAgent`, ``gatekeeper`` a
:class:`CallGatekeeper` — plus ``start``, which builds the initial state.
After every node one conditional edge asks :func:`next_action` where to go
(``agent``, ``gatekeeper`` or ``END``); nodes feed the effect's result to
:func:`advance`. No node or edge decides anything itself, so a LangGraph run
is the same run as :func:`run_diagnosis` (the parity tests prove it).

The LangGraph state (:class:`DiagnosisGraphState`) holds the request and the
run as JSON *text* of their wire form (:func:`to_wire`), ASCII-escaped. Text
rather than a dict because checkpoint serializers are lossy on plain data:
LangGraph's msgpack serde silently turns an unpaired surrogate into ``?``
and rejects integers beyond 64 bits, and both can reach the state through an
agent's error message or payload. ASCII JSON text survives every checkpointer
byte for byte, and decoding goes through :func:`from_wire`, so a damaged
checkpoint fails loudly instead of coming back as something else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from .._config import DiagnosisConfig
from .._converter import from_wire, to_wire
from .._drivers import perform_effect, perform_effect_async
from .._effects import AsyncEffects, Effects
from .._errors import MachineError, PayloadError
from .._machine import (
    Action,
    CallGatekeeper,
    DiagnosisRequest,
    DiagnosisState,
    Finished,
    InvokeAgent,
    advance,
    next_action,
    start_diagnosis,
)

__all__ = [
    "AGENT_NODE",
    "GATEKEEPER_NODE",
    "START_NODE",
    "DiagnosisGraph",
    "DiagnosisGraphState",
    "aresume_diagnosis_graph",
    "arun_diagnosis_graph",
    "build_diagnosis_graph",
    "diagnosis_state_graph",
    "diagnosis_state_of",
    "graph_input",
    "graph_run_config",
    "recursion_limit_for",
    "resume_diagnosis_graph",
    "run_diagnosis_graph",
]

START_NODE = "start"
"""The graph node that starts (or resumes) a run."""
AGENT_NODE = "agent"
"""The graph node that performs one agent call."""
GATEKEEPER_NODE = "gatekeeper"
"""The graph node that performs one gatekeeper call."""

# LangGraph counts supersteps; a run has at most ``max_node_executions`` effect
# nodes, plus ``start``. The margin keeps a correct run far from the limit while
# a wiring mistake that loops still stops.
_RECURSION_MARGIN = 5


class DiagnosisGraphState(TypedDict, total=False):
    """The LangGraph state: ASCII JSON text of the request and of the run's wire form."""

    request: str
    state: str


DiagnosisGraph: TypeAlias = CompiledStateGraph[
    DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState
]
"""The compiled LangGraph graph of a diagnosis run."""


# --- encoding ----------------------------------------------------------------------


def _dumps(value: object) -> str:
    """Wire JSON text that every checkpoint serializer keeps exactly (ASCII only)."""
    return json.dumps(
        to_wire(value), ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":")
    )


def graph_input(request: DiagnosisRequest) -> DiagnosisGraphState:
    """The graph input that starts a run of ``request``."""
    return {"request": _dumps(request)}


def diagnosis_state_of(values: Mapping[str, Any]) -> DiagnosisState:
    """The :class:`DiagnosisState` held by graph values (an invoke result or a snapshot).

    Raises :class:`MachineError` when the values hold no run yet, and
    :class:`PayloadError` when the stored text is not a valid state.
    """
    text = values.get("state")
    if not isinstance(text, str):
        raise MachineError("the graph values hold no diagnosis state")
    return from_wire(DiagnosisState, _loads(text))


def _loads(text: str) -> object:
    # Not ``loads_strict``: a state may legitimately hold an unpaired surrogate
    # (from an agent's error message); the escaped text keeps it exactly.
    try:
        return json.loads(text)
    except ValueError as error:
        raise PayloadError("$", f"not JSON ({error})") from None


def _request_of(values: Mapping[str, Any]) -> DiagnosisRequest:
    text = values.get("request")
    if not isinstance(text, str):
        raise MachineError('the graph input needs "request" (use graph_input(request))')
    return from_wire(DiagnosisRequest, _loads(text))


# --- nodes and the edge --------------------------------------------------------------


def _start(values: DiagnosisGraphState) -> DiagnosisGraphState:
    return {"state": _dumps(start_diagnosis(_request_of(values)))}


def _route(values: DiagnosisGraphState) -> str:
    """The one conditional edge: the node that performs what the core asks for next."""
    action = next_action(diagnosis_state_of(values))
    if isinstance(action, InvokeAgent):
        return AGENT_NODE
    if isinstance(action, CallGatekeeper):
        return GATEKEEPER_NODE
    return END


_EffectKind: TypeAlias = type[InvokeAgent] | type[CallGatekeeper]


def _pending(
    values: DiagnosisGraphState, kind: _EffectKind
) -> tuple[DiagnosisState, InvokeAgent | CallGatekeeper]:
    """The run and its pending action, which must be what this node performs."""
    state = diagnosis_state_of(values)
    action: Action = next_action(state)
    if not isinstance(action, kind) or isinstance(action, Finished):
        raise MachineError(
            f"the {kind.__name__} node ran while the run awaits {type(action).__name__}"
        )
    return state, action


def _sync_node(effects: Effects, kind: _EffectKind) -> Any:
    def perform(values: DiagnosisGraphState) -> DiagnosisGraphState:
        state, action = _pending(values, kind)
        return {"state": _dumps(advance(state, perform_effect(action, effects)))}

    return perform


def _async_node(effects: AsyncEffects, kind: _EffectKind) -> Any:
    async def perform(values: DiagnosisGraphState) -> DiagnosisGraphState:
        state, action = _pending(values, kind)
        return {"state": _dumps(advance(state, await perform_effect_async(action, effects)))}

    return perform


def diagnosis_state_graph(
    effects: Effects | AsyncEffects,
) -> StateGraph[DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState]:
    """The uncompiled graph, for embedding as a subgraph or compiling with other options.

    With :class:`AsyncEffects` the nodes are coroutines: run the compiled
    graph with ``ainvoke``.
    """
    graph: StateGraph[DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState]
    graph = StateGraph(DiagnosisGraphState)
    # LangGraph's node protocols do not accept a TypedDict under mypy; the
    # nodes are typed where they are defined.
    start: Any = _start
    graph.add_node(START_NODE, start)
    if isinstance(effects, AsyncEffects):
        agent, gatekeeper = _async_node(effects, InvokeAgent), _async_node(effects, CallGatekeeper)
    else:
        agent, gatekeeper = _sync_node(effects, InvokeAgent), _sync_node(effects, CallGatekeeper)
    graph.add_node(AGENT_NODE, agent)
    graph.add_node(GATEKEEPER_NODE, gatekeeper)
    graph.add_edge(START, START_NODE)
    for source in (START_NODE, AGENT_NODE, GATEKEEPER_NODE):
        graph.add_conditional_edges(source, _route, [AGENT_NODE, GATEKEEPER_NODE, END])
    return graph


def build_diagnosis_graph(
    effects: Effects | AsyncEffects,
    *,
    checkpointer: Checkpointer = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
) -> DiagnosisGraph:
    """The compiled diagnosis graph; pass a checkpointer to make runs resumable."""
    return diagnosis_state_graph(effects).compile(
        checkpointer=checkpointer,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
    )


# --- running -------------------------------------------------------------------------


def recursion_limit_for(config: DiagnosisConfig) -> int:
    """A LangGraph ``recursion_limit`` no correct run reaches (spec §7 step bound)."""
    return config.max_node_executions + 1 + _RECURSION_MARGIN


def graph_run_config(
    config: DiagnosisConfig,
    *,
    thread_id: str | None = None,
    base: RunnableConfig | None = None,
) -> RunnableConfig:
    """``base`` with the recursion limit of ``config`` and, if given, the thread id.

    LangGraph's default limit (25) is below the step bound when
    ``technical_retry_limit`` is 3, so the limit always comes from the config.
    """
    run_config: RunnableConfig = {**(base or {})}
    run_config["recursion_limit"] = recursion_limit_for(config)
    if thread_id is not None:
        run_config["configurable"] = {**run_config.get("configurable", {}), "thread_id": thread_id}
    return run_config


def run_diagnosis_graph(
    graph: DiagnosisGraph,
    request: DiagnosisRequest,
    *,
    thread_id: str | None = None,
    config: RunnableConfig | None = None,
) -> DiagnosisState:
    """Run ``request`` through ``graph``; the state when the graph stops.

    That is the finished state, unless the graph was compiled with interrupts
    (then check ``state.finished`` and call :func:`resume_diagnosis_graph`).
    ``thread_id`` defaults to the run id, which is what a checkpointer keys on.
    """
    thread = request.run.run_id if thread_id is None else thread_id
    run_config = graph_run_config(request.config, thread_id=thread, base=config)
    return diagnosis_state_of(graph.invoke(graph_input(request), run_config))


async def arun_diagnosis_graph(
    graph: DiagnosisGraph,
    request: DiagnosisRequest,
    *,
    thread_id: str | None = None,
    config: RunnableConfig | None = None,
) -> DiagnosisState:
    """The asyncio variant of :func:`run_diagnosis_graph` (required with :class:`AsyncEffects`)."""
    thread = request.run.run_id if thread_id is None else thread_id
    run_config = graph_run_config(request.config, thread_id=thread, base=config)
    return diagnosis_state_of(await graph.ainvoke(graph_input(request), run_config))


def _resume_config(
    saved: Mapping[str, Any], thread_id: str, config: RunnableConfig | None
) -> RunnableConfig:
    state = diagnosis_state_of(saved)
    return graph_run_config(state.request.config, thread_id=thread_id, base=config)


def resume_diagnosis_graph(
    graph: DiagnosisGraph, *, thread_id: str, config: RunnableConfig | None = None
) -> DiagnosisState:
    """Continue the run checkpointed under ``thread_id``; the state when the graph stops.

    ``graph`` may be a new instance (another process, a new saver connection):
    everything the run needs is in the checkpoint.
    """
    lookup = graph_run_config(DiagnosisConfig(), thread_id=thread_id, base=config)
    run_config = _resume_config(graph.get_state(lookup).values, thread_id, config)
    return diagnosis_state_of(graph.invoke(None, run_config))


async def aresume_diagnosis_graph(
    graph: DiagnosisGraph, *, thread_id: str, config: RunnableConfig | None = None
) -> DiagnosisState:
    """The asyncio variant of :func:`resume_diagnosis_graph`."""
    lookup = graph_run_config(DiagnosisConfig(), thread_id=thread_id, base=config)
    snapshot = await graph.aget_state(lookup)
    run_config = _resume_config(snapshot.values, thread_id, config)
    return diagnosis_state_of(await graph.ainvoke(None, run_config))
