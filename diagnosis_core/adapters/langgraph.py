"""LangGraph adapter: the diagnosis workflow as a ``StateGraph`` on the run journal.

Needs the extra ``langgraph``.

The graph performs effects; the core decides. The LangGraph state
(:class:`DiagnosisGraphState`) holds the request and the run's journal
entries (spec §12) — facts only, never the derived state: every node folds
the journal (verifying it, and its HMAC chain when the graph has a host key)
and asks :func:`next_action` what to do. The fold is incremental for what
this process wrote itself: each entry a node appends is folded once, as it
is appended, and the next node finds that fold by the exact entry texts;
graph values this process did not produce (a checkpoint read on resume, a
state edited with ``update_state``, another process's step) are folded and
verified whole, their large entries read back from the checkpoint history
first. No node or edge decides anything
itself, so a LangGraph run is the same run as :func:`run_diagnosis` (the
parity tests prove it), and a checkpoint cannot carry a conclusion: a stored
"gatekeeper PASS" is not something the state can hold, and an edited outcome
or input hash is a :class:`JournalError` when the run is resumed.

One node per agent (``planner``, ``executor``, ``verifier``, ``composer``)
and one for the gatekeeper, so ``stream(..., stream_mode="updates")`` names
the agent and carries the new journal entry (and, when the effect finished,
its trace events as JSON text) — never the whole state. Each effect takes two
supersteps of its node: the first commits the ``started`` entry, the second
performs the effect and appends the ``finished`` entry, which replaces it.
With ``durability="sync"`` (the default) the checkpoint holding the started
entry is written before the effect runs.

**Resume.** A node that finds a ``started`` entry it did not commit itself in
this process (the process that did died, or its run was aborted) applies the
resume rule of §12 (:func:`resume_journal`): the planner, verifier and
composer are re-sent with the identical input as the same attempt; an
interrupted executor is recorded as failed with ``interrupted: outcome
unknown`` (its tools may have run) → ``EXECUTOR_FAILED``; an interrupted
gatekeeper as unavailable → ``GATEKEEPER_UNAVAILABLE``, unless the graph was
built with ``resend_gatekeeper=True`` (it is read-only). So an executor is
never called twice for one journal entry, whatever instant the process died.

**Encoding.** The request and each entry are ASCII JSON *text* of their §12
wire form. Text rather than a dict because checkpoint serializers are lossy
on plain data: LangGraph's msgpack serde silently turns an unpaired surrogate
into ``?`` and rejects integers beyond 64 bits, PostgreSQL's ``jsonb``
refuses ``\\u0000``, and all of these can reach the journal through an
agent's reply or error message. ASCII JSON text survives every checkpointer
byte for byte; it is read back with the package's strict JSON layer and
:meth:`Journal.load`, so a damaged checkpoint fails loudly.

**Interrupts.** ``interrupt_before`` / ``interrupt_after`` name effect nodes
and stop the run before that effect's ``started`` entry is committed (or
before the next effect's, after it): a stop between the two supersteps of an
effect would leave an entry that only the resume rule can settle. They are
LangGraph dynamic interrupts; :func:`resume_diagnosis_graph` continues past
them (plain ``invoke(None, ...)`` stops at the same place again).

**Checkpoint size.** An entry text of at least
:data:`~diagnosis_core.adapters.langgraph.BLOB_MIN_CHARS` characters (a large
executor output) is written once, in the step that produced it, and the
journal list names it by its SHA-256; a node, :func:`resume_diagnosis_graph`
and :func:`diagnosis_graph_values` read it back from the thread's checkpoint
history and check the hash, so the bytes a saver writes per run grow with the
journal, not with its square (``docs/langgraph.md``).

**One owner per thread.** :func:`run_diagnosis_graph` and
:func:`resume_diagnosis_graph` hold an exclusive lock on the thread while they
drive it (a PostgreSQL session advisory lock, an ``flock`` next to a SQLite
database, a process lock otherwise), released when the holder returns or
dies; a second live driver gets :class:`ThreadBusyError` naming the owner, or
waits up to ``wait_for_owner`` seconds. A thread whose worker died after
LangGraph saved its input but before the first step is resumed from that
input.

The construction is shared with the AIOps graph
(:mod:`diagnosis_core.adapters.langgraph_aiops`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, Unpack

import attrs
from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from .. import (
    AsyncEffects,
    DiagnosisConfig,
    DiagnosisObserver,
    DiagnosisRequest,
    DiagnosisState,
    Effects,
)
from ..journal import (
    Journal,
    JournalEntry,
    JournalRecorder,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    entry_to_wire,
    request_to_wire,
)
from ..machine import (
    DIAGNOSIS_WORKFLOW,
    CallGatekeeper,
    InvokeAgent,
    check_diagnosis_effects,
    check_diagnosis_request,
    perform_effect,
    perform_effect_async,
)
from ..tools import ToolsFactory
from . import _langgraph_core as core
from ._langgraph_core import (
    BLOB_MIN_CHARS,
    GraphState,
    ResumeOptions,
    RunOptions,
    ThreadBusyError,
)

__all__ = [
    "BLOB_MIN_CHARS",
    "COMPOSER_NODE",
    "EXECUTOR_NODE",
    "GATEKEEPER_NODE",
    "PLANNER_NODE",
    "VERIFIER_NODE",
    "DiagnosisGraph",
    "DiagnosisGraphState",
    "ResumeOptions",
    "RunOptions",
    "ThreadBusyError",
    "aresume_diagnosis_graph",
    "arun_diagnosis_graph",
    "build_diagnosis_graph",
    "diagnosis_graph_values",
    "diagnosis_journal_of",
    "diagnosis_state_graph",
    "diagnosis_state_of",
    "resume_diagnosis_graph",
    "run_diagnosis_graph",
]

PLANNER_NODE = "planner"
"""The graph node that performs the planner calls."""
EXECUTOR_NODE = "executor"
"""The graph node that performs the executor calls."""
VERIFIER_NODE = "verifier"
"""The graph node that performs the verifier calls."""
COMPOSER_NODE = "composer"
"""The graph node that performs the composer calls."""
GATEKEEPER_NODE = "gatekeeper"
"""The graph node that performs the gatekeeper calls."""
EFFECT_NODES = (PLANNER_NODE, EXECUTOR_NODE, VERIFIER_NODE, COMPOSER_NODE, GATEKEEPER_NODE)
"""Every node of the graph, one per effect kind; each is named like its journal ``call``."""

Durability: TypeAlias = Literal["sync", "async", "exit"]
"""LangGraph's checkpoint durability: ``sync`` writes each checkpoint before the next step."""

DiagnosisGraphState: TypeAlias = GraphState
"""The LangGraph state: the request and the journal entries, as ASCII JSON text (spec §12).

``request`` is the §12 ``request`` object, written once. ``journal`` is the
entries in call order (a ``finished`` entry replaces its ``started`` one; a
large one is named by its SHA-256, its text in ``blobs`` of the step that
wrote it). ``trace`` appears in a node's update only: the trace events of the
effect it finished (``to_wire`` of each :class:`TraceEvent`, as JSON text).
"""

DiagnosisGraph: TypeAlias = CompiledStateGraph[
    DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState
]
"""The compiled LangGraph graph of a diagnosis run."""


# --- the workflow, described once for the shared construction ------------------------

# Stands for a gatekeeper result in the header's JSON text, then replaced by it.
_RESULT_SLOT = "\x00result\x00"
_RESULT_SLOT_TEXT = json.dumps(_RESULT_SLOT)


def _entry_text(entry: JournalEntry) -> str:
    """The entry's §12 wire object as ASCII JSON text, ``seq`` first.

    A gatekeeper result is spliced in as its recorded canonical JSON rather
    than decoded and encoded again: it can be large, and it is already exact.
    """
    outcome = entry.outcome
    if not isinstance(outcome, RecordedGatekeeperResult):
        return core.text(entry_to_wire(entry))
    wire = entry_to_wire(attrs.evolve(entry, outcome=RecordedGatekeeperError(_RESULT_SLOT)))
    wire["outcome"] = {"result": _RESULT_SLOT}
    return core.text(wire).replace(_RESULT_SLOT_TEXT, core.ascii_text(outcome.result_json), 1)


def _node_of(action: InvokeAgent | CallGatekeeper) -> str:
    return action.agent.value if isinstance(action, InvokeAgent) else GATEKEEPER_NODE


def _check_request(request: DiagnosisRequest, where: str, limit: object) -> None:
    if limit is None:
        check_diagnosis_request(request, where=where)
    else:  # checked there: a positive int, else RunOptionsError
        check_diagnosis_request(request, where=where, max_question_chars=limit)  # type: ignore[arg-type]


_FLOW = core.Flow(
    name="diagnosis",
    workflow=DIAGNOSIS_WORKFLOW,
    nodes=EFFECT_NODES,
    effects_type=Effects,
    async_effects_type=AsyncEffects,
    recorder=lambda journal, key: JournalRecorder(journal, key=key),
    new_journal=Journal,
    node_of=_node_of,
    perform=perform_effect,
    perform_async=perform_effect_async,
    entry_text=_entry_text,
    input_hint="graph_input(request)",
    check_effects=lambda effects, where, tools: check_diagnosis_effects(
        effects, where=where, tools=tools
    ),
    check_request=lambda request, where, limit: _check_request(request, where, limit),
)


def graph_input(request: DiagnosisRequest) -> DiagnosisGraphState:
    """The graph input that starts a run of ``request``."""
    return {"request": core.text(request_to_wire(request))}


def diagnosis_journal_of(values: Mapping[str, Any]) -> Journal:
    """The run :class:`Journal` held by graph values (an invoke result or a snapshot's values).

    Checks the form only (:class:`JournalError` naming the entry); fold it
    with :func:`fold_journal` / :func:`journal_status` to verify it.
    :class:`MachineError` when the values hold no run. An entry stored by
    content hash is read from this process's memory; for a thread written by
    another process pass :func:`diagnosis_graph_values`.
    """
    journal: Journal = core.journal_of(_FLOW, values)
    return journal


def diagnosis_state_of(values: Mapping[str, Any], *, key: bytes | None = None) -> DiagnosisState:
    """The :class:`DiagnosisState` graph values fold to (an invoke result or a snapshot's values).

    The journal is folded and verified (with ``key``: its HMAC chain too),
    so a damaged or edited checkpoint raises :class:`JournalError`. When the
    last entry is ``started`` the state is the one before that effect.
    Raises :class:`MachineError` when the values hold no run yet.
    """
    state: DiagnosisState = core.status_of(_FLOW, values, key).state
    return state


def diagnosis_graph_values(
    graph: DiagnosisGraph, *, thread_id: str, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """The thread's latest graph values, each entry written out in full (any process).

    Entries stored by content hash are read from the thread's checkpoint
    history and checked against their hash (:class:`JournalError` if one is
    missing or altered); pass the result to :func:`diagnosis_state_of`.
    """
    return core.graph_values(graph, thread_id, config)


def diagnosis_state_graph(
    effects: Effects | AsyncEffects,
    *,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    tools: ToolsFactory | None = None,
    observer: DiagnosisObserver | None = None,
) -> StateGraph[DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState]:
    """The uncompiled graph, for embedding as a subgraph or compiling with other options.

    With :class:`AsyncEffects` the nodes are coroutines: run the compiled
    graph with ``ainvoke``. ``key``, ``resend_gatekeeper``, ``tools`` and
    ``observer`` are those of :func:`build_diagnosis_graph`. Compile it with no static
    ``interrupt_before``/``interrupt_after`` on these nodes: a static
    interrupt stops between an effect's two supersteps, after its started
    entry, and the resume rule then settles that call as interrupted.
    """
    graph: StateGraph[DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState]
    graph = core.state_graph(
        _FLOW,
        effects,
        key=key,
        resend_gatekeeper=resend_gatekeeper,
        tools=tools,
        observer=observer,
    )
    return graph


def build_diagnosis_graph(
    effects: Effects | AsyncEffects,
    *,
    checkpointer: Checkpointer = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    key: bytes | None = None,
    resend_gatekeeper: bool = False,
    durability: Durability = "sync",
    tools: ToolsFactory | None = None,
    observer: DiagnosisObserver | None = None,
) -> DiagnosisGraph:
    """The compiled diagnosis graph; pass a checkpointer to make runs resumable.

    ``interrupt_before`` / ``interrupt_after`` name effect nodes
    (:data:`EFFECT_NODES`; ``ValueError`` for another name): the run stops
    before that effect (or the one after it) and
    :func:`resume_diagnosis_graph` continues it. ``key`` is the host's HMAC
    key (spec §12 *Integrity*): every entry is signed, and a checkpoint with
    any edit is a :class:`JournalError`. ``resend_gatekeeper`` re-sends an
    interrupted gatekeeper call on resume instead of failing it closed.
    ``durability`` is the default checkpoint durability of the graph's runs
    (LangGraph's own default is ``async``, which may perform an effect
    before the checkpoint holding its started entry is written).

    ``tools`` (a :data:`~diagnosis_core.tools.ToolsFactory`, e.g. a
    :class:`~diagnosis_core.tools.RunRecorders`) gives each run its tool
    recorder in this process, seeded with the invocations its journal
    already carries: every executor entry carries the tool calls recorded
    during its call (spec §13), so a gatekeeper that runs after a resume in
    another process checks citations against the ledger rebuilt from the
    checkpoint, never an empty one. ``observer`` is told of every effect
    this process performs and every trace event it appends, exactly as by
    the drivers (spec §14); the events of effects performed before a resume
    were announced by the process that performed them. One observer serves
    every run of the graph: give runs that overlap an observer that tells
    runs apart (the OpenTelemetry observer follows one run at a time).
    ``TypeError`` before anything is built when ``effects`` are neither, or
    for what the drivers refuse (:func:`~diagnosis_core.machine.check_diagnosis_effects`:
    a missing, ``None``, non-callable or wrong-arity effect, one of the other
    kind, a gatekeeper built over other recorders than ``tools``).
    """
    graph: DiagnosisGraph = core.build_graph(
        _FLOW,
        effects,
        checkpointer=checkpointer,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        key=key,
        resend_gatekeeper=resend_gatekeeper,
        durability=durability,
        tools=tools,
        observer=observer,
    )
    return graph


# --- running -------------------------------------------------------------------------


def recursion_limit_for(config: DiagnosisConfig) -> int:
    """A LangGraph ``recursion_limit`` no correct run reaches (spec §7 step bound).

    Every effect takes two supersteps (its started entry, then the effect).
    """
    return core.recursion_limit(config.max_node_executions)


def graph_run_config(
    config: DiagnosisConfig,
    *,
    thread_id: str | None = None,
    base: RunnableConfig | None = None,
) -> RunnableConfig:
    """``base`` with the recursion limit of ``config`` and, if given, the thread id.

    LangGraph's default limit (25) is below the step bound, so the limit
    always comes from the config.
    """
    return core.run_config_for(config.max_node_executions, thread_id, base)


def run_diagnosis_graph(
    graph: DiagnosisGraph, request: DiagnosisRequest, **options: Unpack[RunOptions]
) -> DiagnosisState:
    """Run ``request`` through ``graph``; the state when the graph stops.

    That is the finished state, unless the graph was built with interrupts
    (then check ``state.finished`` and call :func:`resume_diagnosis_graph`).
    ``thread_id`` defaults to the run id, which is what a checkpointer keys
    on. ``durability`` overrides the graph's (``sync`` unless built otherwise).
    The thread is held exclusively while the run goes (spec §16): a live
    owner elsewhere is a :class:`ThreadBusyError`, unless it lets go within
    ``wait_for_owner`` seconds. ``TypeError`` before anything runs for a
    request that is not a :class:`DiagnosisRequest`; :class:`PayloadError`
    before anything runs or is checkpointed for a question longer than
    ``max_question_chars`` (default 100 000) or a lone surrogate anywhere in
    the request (:func:`~diagnosis_core.machine.check_diagnosis_request`).
    """
    state: DiagnosisState = core.run_graph(_FLOW, graph, request, options)
    return state


async def arun_diagnosis_graph(
    graph: DiagnosisGraph, request: DiagnosisRequest, **options: Unpack[RunOptions]
) -> DiagnosisState:
    """The asyncio variant of :func:`run_diagnosis_graph` (required with :class:`AsyncEffects`)."""
    state: DiagnosisState = await core.arun_graph(_FLOW, graph, request, options)
    return state


def resume_diagnosis_graph(
    graph: DiagnosisGraph, *, thread_id: str, **options: Unpack[ResumeOptions]
) -> DiagnosisState:
    """Continue the run checkpointed under ``thread_id``; the state when the graph stops.

    ``graph`` may be a new instance (another process, a new saver
    connection): everything the run needs is in the checkpoint — including
    a run whose worker died before its first step (the request is LangGraph's
    input checkpoint). The stored journal is verified first
    (:class:`JournalError` on any mismatch, with a key on any edit); an
    effect interrupted by the death of its process is settled by the resume
    rule of spec §12 (see the module docstring). The thread is held as by
    :func:`run_diagnosis_graph`.
    """
    state: DiagnosisState = core.resume_graph(_FLOW, graph, thread_id, options)
    return state


async def aresume_diagnosis_graph(
    graph: DiagnosisGraph, *, thread_id: str, **options: Unpack[ResumeOptions]
) -> DiagnosisState:
    """The asyncio variant of :func:`resume_diagnosis_graph`."""
    state: DiagnosisState = await core.aresume_graph(_FLOW, graph, thread_id, options)
    return state
