"""LangGraph adapter for the AIOps flow: a ``StateGraph`` on the AIOps run journal.

Needs the extra ``langgraph``. The same construction as the chat graph
(:mod:`diagnosis_core.adapters.langgraph`), from public names only: the state
holds the request and the ``aiops_journal_v1`` entries as ASCII JSON text,
never a conclusion; every node folds (and verifies) the journal and asks
:func:`next_aiops_action` what to do; one node per agent (``supervisor``,
``planner``, ``executor``, ``reporter``), each effect in two supersteps — the
first commits the ``started`` entry (written before the agent runs, with the
default ``durability="sync"``), the second calls the agent and appends the
``finished`` entry.

**Resume** (spec §12, the AIOps rule of :func:`resume_aiops_journal`): a node
that finds a ``started`` entry it did not commit in this process — its
process died — sends an interrupted supervisor, planner or reporter call
again as the same attempt, and records an interrupted executor as failed
(``interrupted: outcome unknown`` → ``EXECUTOR_FAILED``), never calling it
twice. :func:`resume_aiops_graph` continues a run from its checkpoint in any
process.

``tools`` (a :data:`~diagnosis_core.tools.ToolsFactory`) gives the executor
the run's recorder seeded with the journal's §13 records, and its entry
carries the tool calls of its call; ``observer`` (an AIOps observer, e.g.
:class:`~diagnosis_core.adapters.otel.AiOpsOpenTelemetryObserver`) hears what
the AIOps drivers tell it, for the effects this process performs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command

from .. import JournalError, JsonValue, MachineError, PayloadError
from ..aiops import (
    AIOPS_JOURNAL_FORMAT,
    AiOpsEffects,
    AiOpsFinished,
    AiOpsJournal,
    AiOpsJournalRecorder,
    AiOpsObserver,
    AiOpsRequest,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    aiops_journal_status,
    aiops_request_to_wire,
    load_aiops_journal,
    next_aiops_action,
    perform_aiops_effect,
    resume_aiops_journal,
)
from ..journal import EntryState, entry_to_wire, recorded_tool_invocations
from ..machine import notify
from ..protocol import loads_stored
from ..tools import ToolsFactory

__all__ = [
    "AIOPS_NODES",
    "AiOpsGraph",
    "AiOpsGraphState",
    "aiops_graph_input",
    "aiops_state_of",
    "build_aiops_graph",
    "resume_aiops_graph",
    "run_aiops_graph",
]

AIOPS_NODES = ("supervisor", "planner", "executor", "reporter")
"""The nodes of the AIOps graph, one per agent; each is named like its journal ``call``."""

_RECURSION_MARGIN = 5


def _reduce_request(left: str | None, right: str | None) -> str:
    """The request is written once: a thread that holds another run refuses a new request."""
    if not left:
        return right or ""
    if right and right != left:
        raise MachineError(
            "the thread already holds another run's request; use a new thread_id for a new run"
        )
    return left


def _seq_prefix(text: str) -> str:
    return text[: text.find(",") + 1]


def _reduce_journal(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Append entries; an entry with the last one's ``seq`` replaces it (finished for started)."""
    merged = list(left or ())
    for text in right or ():
        if merged and _seq_prefix(merged[-1]) == _seq_prefix(text):
            merged[-1] = text
        else:
            merged.append(text)
    return merged


class AiOpsGraphState(TypedDict, total=False):
    """The LangGraph state of an AIOps run: the request and the journal entries, as ASCII JSON."""

    request: Annotated[str, _reduce_request]
    journal: Annotated[list[str], _reduce_journal]


AiOpsGraph: TypeAlias = CompiledStateGraph[
    AiOpsGraphState, None, AiOpsGraphState, AiOpsGraphState
]
"""The compiled LangGraph graph of an AIOps run."""

_Step: TypeAlias = Command[Any]


def _text(value: JsonValue) -> str:
    """JSON text every checkpoint serializer keeps exactly (ASCII only, ``seq`` first)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def aiops_graph_input(request: AiOpsRequest) -> AiOpsGraphState:
    """The graph input that starts an AIOps run of ``request``."""
    return {"request": _text(aiops_request_to_wire(request))}


def _decode(text: object, where: str) -> JsonValue:
    if not isinstance(text, str):
        raise JournalError(f"{where}: expected JSON text, got {type(text).__name__}")
    try:
        return loads_stored(text)
    except PayloadError as error:
        raise JournalError(f"{where}: not valid JSON ({error.problem})") from None


def _load(values: Mapping[str, Any]) -> AiOpsJournal:
    request = values.get("request")
    if not isinstance(request, str) or not request:
        raise MachineError("the graph values hold no run (start one with aiops_graph_input)")
    texts = values.get("journal") or []
    if not isinstance(texts, list):
        raise JournalError(f"journal: expected a list of entries, got {type(texts).__name__}")
    return load_aiops_journal(
        {
            "format": AIOPS_JOURNAL_FORMAT,
            "request": _decode(request, "request"),
            "entries": [_decode(text, f"entries[{i}]") for i, text in enumerate(texts)],
        }
    )


def aiops_state_of(values: Mapping[str, Any], *, key: bytes | None = None) -> AiOpsState:
    """The :class:`AiOpsState` graph values fold to (verified; with ``key`` its MAC chain too)."""
    return aiops_journal_status(_load(values), key=key).state


def _node_of(action: InvokeAiOpsAgent | AiOpsFinished) -> str:
    return END if isinstance(action, AiOpsFinished) else action.agent.value


class _Runs:
    """What one compiled graph knows in this process: the started entries it committed."""

    def __init__(
        self, key: bytes | None, tools: ToolsFactory | None, observer: AiOpsObserver | None
    ) -> None:
        self.key = key
        self.tools = tools
        self.observer = observer
        self.lock = threading.Lock()
        self.started: set[tuple[str, str]] = set()


def _thread(config: RunnableConfig | None) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id", ""))


def _node(name: str, runs: _Runs, effects: AiOpsEffects) -> Callable[..., _Step]:
    def run(values: AiOpsGraphState, config: RunnableConfig) -> _Step:
        journal = _load(values)
        status = aiops_journal_status(journal, key=runs.key)
        action = status.action
        if isinstance(action, AiOpsFinished) or action.agent.value != name:
            raise MachineError(f"the {name} node ran while the run awaits {_node_of(action)}")
        recorder = AiOpsJournalRecorder(journal, key=runs.key)
        if status.interrupted is None:  # phase one: commit the started entry
            text = _text(entry_to_wire(recorder.begin(action)))
            with runs.lock:
                runs.started.add((_thread(config), text))
            return Command(update={"journal": [text]}, goto=name)
        token = (_thread(config), (values.get("journal") or [""])[-1])
        with runs.lock:
            ours = token in runs.started
            runs.started.discard(token)
        before = status.state
        if not ours:
            resumed, state = resume_aiops_journal(journal, key=runs.key)
            last = resumed.entries[-1]
            if last.state is EntryState.FINISHED:  # the executor: never called again
                notify(runs.observer, "run_opened", action.config)
                return _finish(runs, before, state, _text(entry_to_wire(last)))
        notify(runs.observer, "run_opened", action.config)
        tools = None
        if runs.tools is not None and name == "executor":
            records = []
            for entry in journal.entries:
                for item in entry.tool_invocations or ():
                    record = item.to_record()
                    record.setdefault("input", None)
                    records.append(record)
            tools = runs.tools(action.config.run_id, records)
        mark = tools.mark() if tools is not None else None
        notify(runs.observer, "effect_started", action)
        result = perform_aiops_effect(action, effects)
        invocations = None
        if tools is not None and mark is not None:
            invocations = recorded_tool_invocations(tools.since(mark))
            notify(runs.observer, "tools_recorded", action, invocations)
        fed = recorder.end(result, tool_invocations=invocations)
        notify(runs.observer, "effect_finished", action, fed)
        state = advance_aiops(before, fed)
        return _finish(runs, before, state, _text(entry_to_wire(recorder.journal.entries[-1])))

    return run


def _finish(runs: _Runs, before: AiOpsState, state: AiOpsState, text: str) -> _Step:
    for event in state.events[len(before.events) :]:
        notify(runs.observer, "event_appended", event)
    return Command(update={"journal": [text]}, goto=_node_of(next_aiops_action(state)))


_Durability: TypeAlias = Literal["sync", "async", "exit"]


def build_aiops_graph(
    effects: AiOpsEffects,
    *,
    checkpointer: Checkpointer = None,
    key: bytes | None = None,
    tools: ToolsFactory | None = None,
    observer: AiOpsObserver | None = None,
) -> AiOpsGraph:
    """The compiled AIOps graph; pass a checkpointer to make runs resumable.

    ``key`` signs every entry (a checkpoint with any edit is a
    :class:`JournalError`); ``tools`` and ``observer`` are described in the
    module docstring. Sync :class:`AiOpsEffects` only.
    """
    if not isinstance(effects, AiOpsEffects):
        raise TypeError(f"effects: expected AiOpsEffects, got {type(effects).__name__}")
    runs = _Runs(key, tools, observer)
    graph: StateGraph[AiOpsGraphState, None, AiOpsGraphState, AiOpsGraphState]
    graph = StateGraph(AiOpsGraphState)
    targets = (*AIOPS_NODES, END)
    for name in AIOPS_NODES:
        perform: Any = _node(name, runs, effects)
        graph.add_node(name, perform, destinations=targets)

    def route(values: AiOpsGraphState) -> str:
        return _node_of(aiops_journal_status(_load(values), key=key).action)

    graph.add_conditional_edges(START, route, list(targets))
    return graph.compile(checkpointer=checkpointer)


def _run_config(request: AiOpsRequest, thread_id: str, base: RunnableConfig | None) -> Any:
    run_config: RunnableConfig = {**(base or {})}
    run_config["recursion_limit"] = 2 * request.config.max_node_executions + _RECURSION_MARGIN
    run_config["configurable"] = {**run_config.get("configurable", {}), "thread_id": thread_id}
    return run_config


def _durability(graph: AiOpsGraph) -> _Durability | None:
    return None if graph.checkpointer in (None, False) else "sync"


def run_aiops_graph(
    graph: AiOpsGraph,
    request: AiOpsRequest,
    *,
    thread_id: str | None = None,
    config: RunnableConfig | None = None,
) -> AiOpsState:
    """Run ``request`` through ``graph``; the finished :class:`AiOpsState`.

    ``thread_id`` defaults to the run id. Checkpoints are written with
    ``durability="sync"`` (the started entry before the agent runs).
    """
    thread = request.run.run_id if thread_id is None else thread_id
    values = graph.invoke(
        aiops_graph_input(request),
        _run_config(request, thread, config),
        durability=_durability(graph),
    )
    return aiops_journal_status(_load(values)).state


def resume_aiops_graph(
    graph: AiOpsGraph, *, thread_id: str, config: RunnableConfig | None = None
) -> AiOpsState:
    """Continue the AIOps run checkpointed under ``thread_id`` (any process); its final state.

    The stored journal is verified first; an agent call interrupted by its
    process's death is settled by the AIOps resume rule (module docstring).
    """
    lookup: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    snapshot = graph.get_state(lookup)
    journal = _load(snapshot.values)
    status = aiops_journal_status(journal)
    wanted = _node_of(status.action)
    if tuple(snapshot.next) != (() if wanted == END else (wanted,)):
        graph.update_state(lookup, {}, as_node=START)
    values = graph.invoke(
        None, _run_config(journal.request, thread_id, config), durability=_durability(graph)
    )
    return aiops_journal_status(_load(values)).state

