"""LangGraph adapter: the diagnosis workflow as a ``StateGraph`` on the run journal.

Needs the extra ``langgraph``.

The graph performs effects; the core decides. The LangGraph state
(:class:`DiagnosisGraphState`) holds the request and the run's journal
entries (spec §12) — facts only, never the derived state: every node folds
the journal (verifying it, and its HMAC chain when the graph has a host key)
and asks :func:`next_action` what to do. No node or edge decides anything
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
:func:`load_journal`, so a damaged checkpoint fails loudly.

**Interrupts.** ``interrupt_before`` / ``interrupt_after`` name effect nodes
and stop the run before that effect's ``started`` entry is committed (or
before the next effect's, after it): a stop between the two supersteps of an
effect would leave an entry that only the resume rule can settle. They are
LangGraph dynamic interrupts; :func:`resume_diagnosis_graph` continues past
them (plain ``invoke(None, ...)`` stops at the same place again).
"""

from __future__ import annotations

import collections
import json
import re
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeAlias, TypedDict

import attrs
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command, interrupt

from .. import (
    AsyncEffects,
    DiagnosisConfig,
    DiagnosisObserver,
    DiagnosisRequest,
    DiagnosisState,
    Effects,
    JournalError,
    JsonValue,
    MachineError,
    PayloadError,
    to_wire,
)
from ..journal import (
    JOURNAL_FORMAT,
    EntryState,
    Journal,
    JournalEntry,
    JournalStatus,
    RecordedGatekeeperError,
    RecordedGatekeeperResult,
    RecordedToolInvocation,
    entry_result,
    entry_to_wire,
    expected_call,
    finish_entry,
    journal_status,
    journal_tool_records,
    load_journal,
    recorded_tool_invocations,
    request_to_wire,
    resent_on_resume,
    resume_journal,
    start_entry,
)
from ..machine import (
    AgentName,
    CallGatekeeper,
    EffectResult,
    Finished,
    InvokeAgent,
    advance,
    next_action,
    notify,
    perform_effect,
    perform_effect_async,
)
from ..protocol import loads_stored
from ..tools import RecorderMark, ToolRecorder, ToolsFactory

__all__ = [
    "COMPOSER_NODE",
    "EFFECT_NODES",
    "EXECUTOR_NODE",
    "GATEKEEPER_NODE",
    "PLANNER_NODE",
    "VERIFIER_NODE",
    "DiagnosisGraph",
    "DiagnosisGraphState",
    "Durability",
    "aresume_diagnosis_graph",
    "arun_diagnosis_graph",
    "build_diagnosis_graph",
    "diagnosis_journal_of",
    "diagnosis_state_graph",
    "diagnosis_state_of",
    "graph_input",
    "graph_run_config",
    "recursion_limit_for",
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

# Each effect takes two supersteps (commit the started entry, perform); the
# margin keeps a correct run far from the limit while a wiring mistake stops.
_RECURSION_MARGIN = 5
# Folded journals kept per graph (by exact content), so a live run folds each
# entry once; a checkpoint loaded from storage is never in it and is verified whole.
_FOLD_CACHE_SIZE = 256


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
    """``{"seq":N,`` of an entry text (entries are written with ``seq`` first)."""
    return text[: text.find(",") + 1]


def _reduce_journal(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Append entries; an entry with the last one's ``seq`` replaces it (finished for started).

    The reducer only merges: folding verifies whatever the list holds.
    """
    merged = list(left or ())
    for text in right or ():
        if merged and _seq_prefix(merged[-1]) == _seq_prefix(text):
            merged[-1] = text
        else:
            merged.append(text)
    return merged


def _reduce_trace(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Trace events travel in stream updates only; the state never keeps them."""
    return []


class DiagnosisGraphState(TypedDict, total=False):
    """The LangGraph state: the request and the journal entries, as ASCII JSON text (spec §12).

    ``request`` is the §12 ``request`` object, written once. ``journal`` is
    the entries in call order (a ``finished`` entry replaces its ``started``
    one). ``trace`` appears in a node's update only: the trace events of the
    effect it finished (``to_wire`` of each :class:`TraceEvent`, as JSON
    text); the state itself always holds an empty list there.
    """

    request: Annotated[str, _reduce_request]
    journal: Annotated[list[str], _reduce_journal]
    trace: Annotated[list[str], _reduce_trace]


DiagnosisGraph: TypeAlias = CompiledStateGraph[
    DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState
]
"""The compiled LangGraph graph of a diagnosis run."""


# --- encoding ----------------------------------------------------------------------


def _text(value: JsonValue) -> str:
    """JSON text that every checkpoint serializer keeps exactly (ASCII only, key order kept)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _ascii(json_text: str) -> str:
    """``json_text`` with every non-ASCII character as a ``\\u`` escape (the same JSON value).

    Outside strings JSON text is ASCII, so escaping every other character
    changes nothing but the bytes.
    """
    return json_text if json_text.isascii() else _NON_ASCII.sub(_escape, json_text)


# Stands for a gatekeeper result in the header's JSON text, then replaced by it.
_RESULT_SLOT = "\x00result\x00"
_RESULT_SLOT_TEXT = json.dumps(_RESULT_SLOT)


def _entry_text(entry: JournalEntry) -> str:
    """The entry's §12 wire object as ASCII JSON text, ``seq`` first (see ``_reduce_journal``).

    A gatekeeper result is spliced in as its recorded canonical JSON rather
    than decoded and encoded again: it can be large, and it is already exact.
    """
    outcome = entry.outcome
    if not isinstance(outcome, RecordedGatekeeperResult):
        return _text(entry_to_wire(entry))
    wire = entry_to_wire(attrs.evolve(entry, outcome=RecordedGatekeeperError(_RESULT_SLOT)))
    wire["outcome"] = {"result": _RESULT_SLOT}
    return _text(wire).replace(_RESULT_SLOT_TEXT, _ascii(outcome.result_json), 1)


def graph_input(request: DiagnosisRequest) -> DiagnosisGraphState:
    """The graph input that starts a run of ``request``."""
    return {"request": _text(request_to_wire(request))}


def _decode(text: object, where: str) -> JsonValue:
    if not isinstance(text, str):
        raise JournalError(f"{where}: expected JSON text, got {type(text).__name__}")
    try:
        return loads_stored(text)
    except PayloadError as error:
        raise JournalError(f"{where}: not valid JSON ({error.problem})") from None


def _load(values: Mapping[str, Any]) -> Journal:
    """The journal the graph values hold, checked for form (not folded)."""
    request = values.get("request")
    if not isinstance(request, str) or not request:
        raise MachineError('the graph values hold no run (start one with graph_input(request))')
    texts = values.get("journal") or []
    if not isinstance(texts, list):
        raise JournalError(f"journal: expected a list of entries, got {type(texts).__name__}")
    return load_journal(
        {
            "format": JOURNAL_FORMAT,
            "request": _decode(request, "request"),
            "entries": [_decode(text, f"entries[{i}]") for i, text in enumerate(texts)],
        }
    )


def diagnosis_journal_of(values: Mapping[str, Any]) -> Journal:
    """The run :class:`Journal` held by graph values (an invoke result or a snapshot's values).

    Checks the form only (:class:`JournalError` naming the entry); fold it
    with :func:`fold_journal` / :func:`journal_status` to verify it.
    :class:`MachineError` when the values hold no run.
    """
    return _load(values)


def diagnosis_state_of(values: Mapping[str, Any], *, key: bytes | None = None) -> DiagnosisState:
    """The :class:`DiagnosisState` graph values fold to (an invoke result or a snapshot's values).

    The journal is folded and verified (with ``key``: its HMAC chain too),
    so a damaged or edited checkpoint raises :class:`JournalError`. When the
    last entry is ``started`` the state is the one before that effect.
    Raises :class:`MachineError` when the values hold no run yet.
    """
    return journal_status(_load(values), key=key).state


# --- the nodes -----------------------------------------------------------------------


def _node_of(action: InvokeAgent | CallGatekeeper | Finished) -> str:
    if isinstance(action, InvokeAgent):
        return action.agent.value
    if isinstance(action, CallGatekeeper):
        return GATEKEEPER_NODE
    return END


@attrs.frozen
class _Folded:
    journal: Journal
    status: JournalStatus


_Token: TypeAlias = tuple[str, str, str, str]


class _Runs:
    """What one compiled graph knows in this process: folds it verified, entries it started.

    ``folds`` maps the exact content of graph values to their verified fold,
    so a node of a live run does not fold the journal again; content loaded
    from a checkpoint that this process did not produce is folded (and
    verified) whole. ``started`` holds the ``started`` entries this graph
    committed and whose effect has not begun: a started entry that is not
    there was committed by a process that died (or a run that was aborted),
    and only the resume rule may settle it.
    """

    def __init__(
        self,
        key: bytes | None,
        resend_gatekeeper: bool,
        tools: ToolsFactory | None = None,
        observer: DiagnosisObserver | None = None,
    ) -> None:
        self.key = key
        self.resend_gatekeeper = resend_gatekeeper
        self.tools = tools
        self.observer = observer
        self.recorders: collections.OrderedDict[str, ToolRecorder] = collections.OrderedDict()
        self.folds: collections.OrderedDict[tuple[str, ...], _Folded] = (
            collections.OrderedDict()
        )
        self.started: set[_Token] = set()

    def fold(self, values: Mapping[str, Any]) -> tuple[tuple[str, ...], _Folded]:
        request = values.get("request")
        texts = values.get("journal") or []
        content: tuple[str, ...] | None = None
        if (
            isinstance(request, str)
            and isinstance(texts, list)
            and all(isinstance(text, str) for text in texts)
        ):
            content = (request, *texts)
            cached = self.folds.get(content)
            if cached is not None:
                self.folds.move_to_end(content)
                return content, cached
        journal = _load(values)
        folded = _Folded(journal, journal_status(journal, key=self.key))
        assert content is not None  # _load refused anything else
        self.remember(content, folded)
        return content, folded

    def recorder_for(self, journal: Journal) -> ToolRecorder | None:
        """The run's tool recorder in this process, holding the ledger its journal carries.

        A recorder this process made for the run is kept while it holds
        exactly the journal's invocations (a live run); otherwise — the run
        was resumed here, or another process advanced it — the host's
        factory is asked for a new one seeded from the journal (spec §13).
        """
        if self.tools is None:
            return None
        run_id = journal.request.run.run_id
        records = journal_tool_records(journal)
        cached = self.recorders.get(run_id)
        if cached is not None and {r.invocation_id for r in cached.records()} == {
            record["invocation_id"] for record in records
        }:
            return cached
        recorder = self.tools(run_id, records)
        self.recorders[run_id] = recorder
        self.recorders.move_to_end(run_id)
        while len(self.recorders) > _FOLD_CACHE_SIZE:
            self.recorders.popitem(last=False)
        return recorder

    def remember(self, content: tuple[str, ...], folded: _Folded) -> None:
        self.folds[content] = folded
        self.folds.move_to_end(content)
        while len(self.folds) > _FOLD_CACHE_SIZE:
            self.folds.popitem(last=False)


def _token(config: RunnableConfig | None, content: tuple[str, ...]) -> _Token:
    configurable = (config or {}).get("configurable") or {}
    thread = str(configurable.get("thread_id", ""))
    # A task's namespace ends with its own ``node:task-id``; the graph's is what precedes it.
    namespace = str(configurable.get("checkpoint_ns", "")).rpartition("|")[0]
    return (thread, namespace, content[0], content[-1])


def _appended(content: tuple[str, ...], text: str) -> tuple[str, ...]:
    """The content the journal reducer makes of ``content`` and one new entry text."""
    return (content[0], *_reduce_journal(list(content[1:]), [text]))


def _interrupt_point(
    node: str, journal: Journal, before: frozenset[str], after: frozenset[str]
) -> dict[str, str] | None:
    if node in before:
        return {"before": node}
    if journal.entries:
        last = journal.entries[-1]
        if last.state is EntryState.FINISHED and last.call.value in after:
            return {"after": last.call.value}
    return None


_Step: TypeAlias = Command[str]
"""A node's return: its journal update, and the node that performs what the core asks next."""


class _Node:
    """One effect node: phase one commits the started entry, phase two performs and finishes it."""

    def __init__(
        self,
        name: str,
        runs: _Runs,
        before: frozenset[str],
        after: frozenset[str],
    ) -> None:
        self.name = name
        self.runs = runs
        self.before = before
        self.after = after

    def prepare(
        self, values: Mapping[str, Any], config: RunnableConfig | None
    ) -> _Step | tuple[tuple[str, ...], _Folded, InvokeAgent | CallGatekeeper, bool]:
        """Either the update of phase one, or what phase two needs (and whether to perform)."""
        content, folded = self.runs.fold(values)
        action = folded.status.action
        if _node_of(action) != self.name or isinstance(action, Finished):
            awaits = "END" if isinstance(action, Finished) else expected_call(action).describe()
            raise MachineError(f"the {self.name} node ran while the run awaits {awaits}")
        journal = folded.journal
        if folded.status.interrupted is None:
            point = _interrupt_point(self.name, journal, self.before, self.after)
            if point is not None:
                interrupt(point)
            entry = start_entry(journal, action, key=self.runs.key)
            text = _entry_text(entry)
            new_content = _appended(content, text)
            self.runs.remember(
                new_content,
                _Folded(
                    Journal(journal.request, (*journal.entries, entry)),
                    JournalStatus(folded.status.state, action, entry),
                ),
            )
            self.runs.started.add(_token(config, new_content))
            return Command(update={"journal": [text]}, goto=self.name)
        # Taken before the effect begins: if it never returns, the entry is no longer ours.
        token = _token(config, content)
        ours = token in self.runs.started
        self.runs.started.discard(token)
        interrupted = folded.status.interrupted
        perform = ours or resent_on_resume(
            interrupted.call, resend_gatekeeper=self.runs.resend_gatekeeper
        )
        return content, folded, action, perform

    def begin(
        self, folded: _Folded, action: InvokeAgent | CallGatekeeper
    ) -> tuple[ToolRecorder, RecorderMark] | None:
        """Before the effect: the run's recorder (and a mark, for an executor call); observe."""
        recorder = self.runs.recorder_for(folded.journal)
        notify(self.runs.observer, "run_opened", folded.journal.request.run)
        notify(self.runs.observer, "effect_started", action)
        executor = isinstance(action, InvokeAgent) and action.agent is AgentName.EXECUTOR
        if recorder is None or not executor:
            return None
        return recorder, recorder.mark()

    def end(
        self,
        action: InvokeAgent | CallGatekeeper,
        result: EffectResult,
        marked: tuple[ToolRecorder, RecorderMark] | None,
    ) -> tuple[EffectResult, Sequence[RecordedToolInvocation] | None]:
        """After the effect: the tool calls recorded during an executor call."""
        if marked is None:
            return result, None
        recorder, mark = marked
        invocations = recorded_tool_invocations(recorder.since(mark))
        notify(self.runs.observer, "tools_recorded", action, invocations)
        return result, invocations

    def finish(
        self,
        content: tuple[str, ...],
        folded: _Folded,
        result: EffectResult | None,
        invocations: Sequence[RecordedToolInvocation] | None = None,
    ) -> _Step:
        """The update of phase two: the finished entry and the trace events it produced."""
        journal, before = folded.journal, folded.status.state
        if result is None:  # §12 Resume: an executor (or gatekeeper) whose outcome is unknown
            # This process's first hook for the run may be event_appended: name the run.
            notify(self.runs.observer, "run_opened", journal.request.run)
            journal, state = resume_journal(
                journal, key=self.runs.key, resend_gatekeeper=self.runs.resend_gatekeeper
            )
            entry = journal.entries[-1]
        else:
            entry = finish_entry(
                journal, result, key=self.runs.key, tool_invocations=invocations
            )
            journal = Journal(journal.request, (*journal.entries[:-1], entry))
            recorded = entry_result(entry)
            # As the drivers do: the observer is told the recorded fact.
            notify(self.runs.observer, "effect_finished", folded.status.action, recorded)
            state = advance(before, recorded)
        text = _entry_text(entry)
        action = next_action(state)
        self.runs.remember(_appended(content, text), _Folded(journal, JournalStatus(state, action)))
        appended = state.events[len(before.events) :]
        for event in appended:
            notify(self.runs.observer, "event_appended", event)
        events = [_text(to_wire(event)) for event in appended]
        return Command(update={"journal": [text], "trace": events}, goto=_node_of(action))


def _sync_node(node: _Node, effects: Effects) -> Callable[..., _Step]:
    def run(values: DiagnosisGraphState, config: RunnableConfig) -> _Step:
        prepared = node.prepare(values, config)
        if isinstance(prepared, Command):
            return prepared
        content, folded, action, perform = prepared
        if not perform:
            return node.finish(content, folded, None)
        marked = node.begin(folded, action)
        result, invocations = node.end(action, perform_effect(action, effects), marked)
        return node.finish(content, folded, result, invocations)

    return run


def _async_node(
    node: _Node, effects: AsyncEffects
) -> Callable[..., Awaitable[_Step]]:
    async def run(values: DiagnosisGraphState, config: RunnableConfig) -> _Step:
        prepared = node.prepare(values, config)
        if isinstance(prepared, Command):
            return prepared
        content, folded, action, perform = prepared
        if not perform:
            return node.finish(content, folded, None)
        marked = node.begin(folded, action)
        performed = await perform_effect_async(action, effects)
        result, invocations = node.end(action, performed, marked)
        return node.finish(content, folded, result, invocations)

    return run


def _check_nodes(names: Sequence[str] | None, what: str) -> frozenset[str]:
    chosen = frozenset(names or ())
    unknown = sorted(chosen - set(EFFECT_NODES))
    if unknown:
        raise ValueError(f"{what}: unknown node(s) {unknown}; the nodes are {list(EFFECT_NODES)}")
    return chosen


# The compiled graphs of build_diagnosis_graph and what each knows (its key, its folds).
_GRAPHS: weakref.WeakKeyDictionary[DiagnosisGraph, _Runs] = weakref.WeakKeyDictionary()
# LangGraph reads a run's default durability from this configurable key when
# ``invoke``/``stream`` get none; the run helpers below also pass it explicitly.
_DURABILITY_KEY = "__pregel_durability"


def _state_graph(
    effects: Effects | AsyncEffects,
    runs: _Runs,
    before: frozenset[str],
    after: frozenset[str],
) -> StateGraph[DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState]:
    graph: StateGraph[DiagnosisGraphState, None, DiagnosisGraphState, DiagnosisGraphState]
    graph = StateGraph(DiagnosisGraphState)

    def route(values: DiagnosisGraphState) -> str:
        """The one conditional edge: the node that performs what the core asks for next."""
        return _node_of(runs.fold(values)[1].status.action)

    targets = (*EFFECT_NODES, END)
    for name in EFFECT_NODES:
        node = _Node(name, runs, before, after)
        # LangGraph's node protocols do not accept a TypedDict under mypy; the
        # nodes are typed where they are defined.
        perform: Any = (
            _async_node(node, effects)
            if isinstance(effects, AsyncEffects)
            else _sync_node(node, effects)
        )
        graph.add_node(name, perform, destinations=targets)
    graph.add_conditional_edges(START, route, list(targets))
    return graph


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
    runs = _Runs(key, resend_gatekeeper, tools, observer)
    return _state_graph(effects, runs, frozenset(), frozenset())


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
    """
    before = _check_nodes(interrupt_before, "interrupt_before")
    after = _check_nodes(interrupt_after, "interrupt_after")
    runs = _Runs(key, resend_gatekeeper, tools, observer)
    compiled = _state_graph(effects, runs, before, after).compile(checkpointer=checkpointer)
    # Without a checkpointer there is nothing to make durable (and LangGraph
    # cannot run a "sync" default there).
    graph = (
        compiled
        if checkpointer is None or checkpointer is False
        else compiled.with_config({"configurable": {_DURABILITY_KEY: durability}})
    )
    _GRAPHS[graph] = runs
    return graph


def _runs_of(graph: DiagnosisGraph) -> _Runs | None:
    try:
        return _GRAPHS.get(graph)
    except TypeError:  # pragma: no cover - a graph object that cannot be weakly referenced
        return None


# --- running -------------------------------------------------------------------------


def recursion_limit_for(config: DiagnosisConfig) -> int:
    """A LangGraph ``recursion_limit`` no correct run reaches (spec §7 step bound).

    Every effect takes two supersteps (its started entry, then the effect).
    """
    return 2 * config.max_node_executions + _RECURSION_MARGIN


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
    run_config: RunnableConfig = {**(base or {})}
    run_config["recursion_limit"] = recursion_limit_for(config)
    if thread_id is not None:
        run_config["configurable"] = {**run_config.get("configurable", {}), "thread_id": thread_id}
    return run_config


def _state(graph: DiagnosisGraph, values: Mapping[str, Any]) -> DiagnosisState:
    runs = _runs_of(graph)
    if runs is None:
        return diagnosis_state_of(values)
    return runs.fold(values)[1].status.state


def _durability(graph: DiagnosisGraph, durability: Durability | None) -> Durability | None:
    if graph.checkpointer in (None, False):
        return None  # LangGraph warns that durability means nothing without a checkpointer
    if durability is not None:
        return durability
    chosen: Durability = (graph.config or {}).get("configurable", {}).get(_DURABILITY_KEY, "sync")
    return chosen


def run_diagnosis_graph(
    graph: DiagnosisGraph,
    request: DiagnosisRequest,
    *,
    thread_id: str | None = None,
    config: RunnableConfig | None = None,
    durability: Durability | None = None,
) -> DiagnosisState:
    """Run ``request`` through ``graph``; the state when the graph stops.

    That is the finished state, unless the graph was built with interrupts
    (then check ``state.finished`` and call :func:`resume_diagnosis_graph`).
    ``thread_id`` defaults to the run id, which is what a checkpointer keys
    on. ``durability`` overrides the graph's (``sync`` unless built otherwise).
    """
    thread = request.run.run_id if thread_id is None else thread_id
    run_config = graph_run_config(request.config, thread_id=thread, base=config)
    values = graph.invoke(
        graph_input(request), run_config, durability=_durability(graph, durability)
    )
    return _state(graph, values)


async def arun_diagnosis_graph(
    graph: DiagnosisGraph,
    request: DiagnosisRequest,
    *,
    thread_id: str | None = None,
    config: RunnableConfig | None = None,
    durability: Durability | None = None,
) -> DiagnosisState:
    """The asyncio variant of :func:`run_diagnosis_graph` (required with :class:`AsyncEffects`)."""
    thread = request.run.run_id if thread_id is None else thread_id
    run_config = graph_run_config(request.config, thread_id=thread, base=config)
    values = await graph.ainvoke(
        graph_input(request), run_config, durability=_durability(graph, durability)
    )
    return _state(graph, values)


def _resume_input(interrupts: Sequence[object]) -> Command[Any] | None:
    """``Command(resume=...)`` past a dynamic interrupt of this graph, else None."""
    return Command(resume=True) if interrupts else None


def _resume_plan(
    graph: DiagnosisGraph, snapshot: Any, thread_id: str, config: RunnableConfig | None
) -> tuple[RunnableConfig, bool]:
    """The run config, and whether the stored next step is stale (then route from START).

    Folding verifies the stored journal before anything runs. The step
    LangGraph stored as next was chosen from the journal as it was then; a
    checkpoint whose journal was edited (without a key, to facts that still
    verify) may imply another step, and the run goes where the facts lead.
    """
    values: Mapping[str, Any] = snapshot.values
    if snapshot.created_at is None and not values:
        raise MachineError(
            f"thread_id {thread_id!r} is unknown to this graph's checkpointer: no run was "
            "started on it (start one with run_diagnosis_graph, or check the thread id "
            "and the checkpointer's database)"
        )
    runs = _runs_of(graph)
    if runs is None:
        journal = _load(values)
        folded = _Folded(journal, journal_status(journal))
    else:
        folded = runs.fold(values)[1]
    state = folded.status.state
    run_config = graph_run_config(state.request.config, thread_id=thread_id, base=config)
    wanted = _node_of(folded.status.action)
    return run_config, tuple(snapshot.next) != (() if wanted == END else (wanted,))


def resume_diagnosis_graph(
    graph: DiagnosisGraph,
    *,
    thread_id: str,
    config: RunnableConfig | None = None,
    durability: Durability | None = None,
) -> DiagnosisState:
    """Continue the run checkpointed under ``thread_id``; the state when the graph stops.

    ``graph`` may be a new instance (another process, a new saver
    connection): everything the run needs is in the checkpoint. The stored
    journal is verified first (:class:`JournalError` on any mismatch, with a
    key on any edit); an effect interrupted by the death of its process is
    settled by the resume rule of spec §12 (see the module docstring).
    """
    lookup = graph_run_config(DiagnosisConfig(), thread_id=thread_id, base=config)
    snapshot = graph.get_state(lookup)
    run_config, reroute = _resume_plan(graph, snapshot, thread_id, config)
    interrupts = snapshot.interrupts
    if reroute:
        graph.update_state(lookup, {}, as_node=START)
        interrupts = ()
    values = graph.invoke(
        _resume_input(interrupts), run_config, durability=_durability(graph, durability)
    )
    return _state(graph, values)


async def aresume_diagnosis_graph(
    graph: DiagnosisGraph,
    *,
    thread_id: str,
    config: RunnableConfig | None = None,
    durability: Durability | None = None,
) -> DiagnosisState:
    """The asyncio variant of :func:`resume_diagnosis_graph`."""
    lookup = graph_run_config(DiagnosisConfig(), thread_id=thread_id, base=config)
    snapshot = await graph.aget_state(lookup)
    run_config, reroute = _resume_plan(graph, snapshot, thread_id, config)
    interrupts = snapshot.interrupts
    if reroute:
        await graph.aupdate_state(lookup, {}, as_node=START)
        interrupts = ()
    values = await graph.ainvoke(
        _resume_input(interrupts), run_config, durability=_durability(graph, durability)
    )
    return _state(graph, values)

