"""The one LangGraph construction behind both workflows' graphs (public names only).

:mod:`diagnosis_core.adapters.langgraph` (chat) and
:mod:`diagnosis_core.adapters.langgraph_aiops` (AIOps) are typed fronts over
this module: each describes its workflow once (:class:`Flow` — how a request
and an entry are written, how a journal is folded, resumed and recorded, which
action is performed by which node) and everything else — the two supersteps of
an effect, the §12 resume rule, interrupt points, tools, observers, async
effects, the checkpoint encoding, the owner lock and the run/resume helpers —
is written here once. See ``docs/langgraph.md`` for the design.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple, TypeAlias, TypedDict

import attrs
from langchain_core.runnables import RunnableConfig
from langgraph.channels import EphemeralValue
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command, interrupt

from .. import JournalError, JsonValue, MachineError, PayloadError, to_wire
from ..journal import (
    EntryState,
    JournalBase,
    RecordedToolInvocation,
    journal_status,
    journal_tool_records,
    recorded_tool_invocations,
    resume_journal,
)
from ..machine import Workflow, notify, observed_result
from ..protocol import loads_stored
from ..tools import RecorderMark, ToolRecorder, ToolsFactory
from ._langgraph_owner import ThreadBusyError, aowner, owner

__all__ = [
    "BLOB_MIN_CHARS",
    "Durability",
    "Flow",
    "GraphState",
    "ResumeOptions",
    "RunOptions",
    "ThreadBusyError",
    "aresume_graph",
    "arun_graph",
    "ascii_text",
    "build_graph",
    "graph_values",
    "journal_of",
    "recursion_limit",
    "resume_graph",
    "run_config_for",
    "run_graph",
    "state_graph",
    "status_of",
    "text",
]

Durability: TypeAlias = Literal["sync", "async", "exit"]

# Each effect takes two supersteps (commit the started entry, perform); the
# margin keeps a correct run far from the limit while a wiring mistake stops.
_RECURSION_MARGIN = 5
# Folded journals kept per graph (by exact content), so a live run folds each
# entry once; a checkpoint loaded from storage is never in it and is verified whole.
_FOLD_CACHE_SIZE = 256
BLOB_MIN_CHARS = 16 * 1024
"""An entry text at least this long is checkpointed once, by content hash (docs/langgraph.md)."""
# LangGraph's configurable keys: the run's durability and the task's checkpointer.
_DURABILITY_KEY = "__pregel_durability"
_CHECKPOINTER_KEY = "__pregel_checkpointer"
# Set by the run helpers, whose ``invoke`` reads no node update (see _streams_updates).
_QUIET_KEY = "__diagnosis_core_values_only"  # "__": LangGraph keeps it out of metadata


# --- the state -----------------------------------------------------------------------


def _reduce_request(left: str | None, right: str | None) -> str:
    """The request is written once: a thread that holds another run refuses a new request."""
    if not left:
        return right or ""
    if right and right != left:
        raise MachineError(
            "the thread already holds another run's request; use a new thread_id for a new run"
        )
    return left


def _seq_prefix(entry_text: str) -> str:
    """``{"seq":N,`` of an entry text (entries and references are written with ``seq`` first)."""
    return entry_text[: entry_text.find(",") + 1]


def _reduce_journal(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Append entries; an entry with the last one's ``seq`` replaces it (finished for started).

    The reducer only merges: folding verifies whatever the list holds.
    """
    merged = list(left or ())
    for entry_text in right or ():
        if merged and _seq_prefix(merged[-1]) == _seq_prefix(entry_text):
            merged[-1] = entry_text
        else:
            merged.append(entry_text)
    return merged


def _reduce_trace(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Trace events travel in stream updates only; the state never keeps them."""
    return []


class GraphState(TypedDict, total=False):
    """The LangGraph state of a run: its request and journal entries as ASCII JSON text.

    ``blobs`` holds, for the one step that wrote them, the full text of
    entries the journal names by content hash (``docs/langgraph.md``).
    """

    request: Annotated[str, _reduce_request]
    journal: Annotated[list[str], _reduce_journal]
    trace: Annotated[list[str], _reduce_trace]
    blobs: Annotated[dict[str, str], EphemeralValue(dict)]


AnyGraph: TypeAlias = CompiledStateGraph[Any, None, Any, Any]


# --- the workflow description ------------------------------------------------------


@attrs.frozen
class Flow:
    """What differs between the workflows; every callable is a public ``diagnosis_core`` name.

    ``workflow`` is the workflow's descriptor (``DIAGNOSIS_WORKFLOW`` /
    ``AIOPS_WORKFLOW``): the machine, the request codec and the journal
    format are read from it, not listed again, so a graph cannot drift from
    the drivers; the journal functions (``journal_status``, ``resume_journal``)
    fold and resume either workflow's journal. ``node_of(action)`` names the
    node that performs an effect (the workflow's finished type goes to END,
    and its executor call is the node named like ``workflow.executor``, so
    neither is restated by a front); ``recorder(journal, key)`` is its journal
    recorder; ``new_journal`` its journal class (``new_journal(request)`` is a
    run's empty journal, ``new_journal.load`` reads one);
    ``entry_text(entry)`` an entry's ASCII JSON text, ``seq`` first.
    ``check_effects(effects, where, tools)`` and ``check_request(request,
    where, max_question_chars)`` are the drivers' own checks at the door
    (``check_diagnosis_effects`` / ``check_diagnosis_request`` and their
    AIOps twins), run before anything is built, run or written.
    """

    name: str
    workflow: Workflow[Any, Any, Any, Any, Any, Any, Any]
    nodes: tuple[str, ...]
    effects_type: type[Any]
    async_effects_type: type[Any]
    recorder: Callable[[Any, bytes | None], Any]
    new_journal: type[JournalBase[Any, Any]]
    node_of: Callable[[Any], str]
    perform: Callable[[Any, Any], Any]
    perform_async: Callable[[Any, Any], Awaitable[Any]]
    entry_text: Callable[[Any], str]
    input_hint: str
    check_effects: Callable[[Any, str, ToolsFactory | None], None]
    check_request: Callable[[Any, str, object], None]

    @property
    def journal_format(self) -> str:
        """The format the graph's journal is written in (the workflow's current one)."""
        return self.workflow.format

    @property
    def request_type(self) -> type[Any]:
        return self.workflow.request_type

    @property
    def request_to_wire(self) -> Callable[[Any], JsonValue]:
        return self.workflow.request_to_wire

    @property
    def advance(self) -> Callable[[Any, Any], Any]:
        return self.workflow.advance

    @property
    def next_action(self) -> Callable[[Any], Any]:
        return self.workflow.next_action

    def node(self, action: Any) -> str:
        """The node that performs ``action`` (every node is named like its journal call)."""
        if isinstance(action, self.workflow.finished_type):
            return END
        return self.node_of(action)

    def is_executor(self, action: Any) -> bool:
        """Whether ``action`` is the workflow's executor call (its tools are recorded)."""
        executor: str = self.workflow.executor.value
        return self.node(action) == executor

    def describe(self, action: Any) -> str:
        """An action in the workflow's words (``END`` once the run is finished)."""
        if isinstance(action, self.workflow.finished_type):
            return "END"
        described: str = self.workflow.expected_call(action).describe()
        return described


# --- encoding ------------------------------------------------------------------------


# Built once: ``json.dumps`` with options constructs a new encoder at every call.
_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def text(value: JsonValue) -> str:
    """JSON text that every checkpoint serializer keeps exactly (ASCII only, key order kept)."""
    return _ENCODER.encode(value)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def ascii_text(json_text: str) -> str:
    """``json_text`` with every non-ASCII character as a ``\\u`` escape (the same JSON value)."""
    return json_text if json_text.isascii() else _NON_ASCII.sub(_escape, json_text)


def _decode(value: object, where: str) -> JsonValue:
    if not isinstance(value, str):
        raise JournalError(f"{where}: expected JSON text, got {type(value).__name__}")
    try:
        return loads_stored(value)
    except PayloadError as error:
        raise JournalError(f"{where}: not valid JSON ({error.problem})") from None


# --- entries stored by content hash --------------------------------------------------

_REF_RE = re.compile(r'\{"seq":(\d+),"sha256":"([0-9a-f]{64})"\}\Z')


def _digest(entry_text: str) -> str:
    return hashlib.sha256(entry_text.encode("ascii", "surrogatepass")).hexdigest()


def _reference(entry_text: str) -> tuple[str, str]:
    """The short text naming ``entry_text`` by content hash, and that hash."""
    digest = _digest(entry_text)
    return text({"seq": int(_seq_prefix(entry_text)[7:-1]), "sha256": digest}), digest


class _Blobs:
    """Entry texts this process wrote or read, by SHA-256, up to a bound on their size."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.texts: collections.OrderedDict[str, str] = collections.OrderedDict()
        self.lock = threading.Lock()

    def put(self, digest: str, entry_text: str) -> None:
        with self.lock:
            if digest in self.texts:
                self.texts.move_to_end(digest)
                return
            self.texts[digest] = entry_text
            self.chars += len(entry_text)
            while self.chars > self.max_chars and len(self.texts) > 1:
                self.chars -= len(self.texts.popitem(last=False)[1])

    def get(self, digest: str) -> str | None:
        with self.lock:
            found = self.texts.get(digest)
            if found is not None:
                self.texts.move_to_end(digest)
            return found


_BLOBS = _Blobs(256 * 1024 * 1024)


def _missing(texts: Sequence[str]) -> list[str]:
    """The hashes of referenced entries this process does not hold."""
    wanted = []
    for entry_text in texts:
        match = _REF_RE.match(entry_text)
        if match is not None and _BLOBS.get(match.group(2)) is None:
            wanted.append(match.group(2))
    return wanted


def _learn(found: Mapping[str, object]) -> None:
    """Keep the blobs of a ``blobs`` channel value whose text matches its hash."""
    for digest, entry_text in found.items():
        if isinstance(entry_text, str) and _digest(entry_text) == digest:
            _BLOBS.put(digest, entry_text)


def _blobs_of(saved: Any) -> Iterable[Mapping[str, object]]:
    """The ``blobs`` values a saved checkpoint tuple holds: its channel and its pending writes."""
    values = (saved.checkpoint or {}).get("channel_values") or {}
    if isinstance(values.get("blobs"), Mapping):
        yield values["blobs"]
    for write in saved.pending_writes or ():
        if len(write) >= 3 and write[1] == "blobs" and isinstance(write[2], Mapping):
            yield write[2]


def _history_config(config: RunnableConfig | None) -> RunnableConfig | None:
    """The thread and graph namespace of a task's (or a lookup's) config."""
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    if thread is None:
        return None
    # A task's namespace ends with its own ``node:task-id``; the graph's is what precedes it.
    namespace = str(configurable.get("checkpoint_ns", "")).rpartition("|")[0]
    return {"configurable": {"thread_id": thread, "checkpoint_ns": namespace}}


def _find_blobs(saver: Any, config: RunnableConfig | None, wanted: list[str]) -> None:
    """Read the thread's checkpoint history until every wanted blob is known (sync savers)."""
    lookup = _history_config(config)
    if not wanted or saver is None or lookup is None:
        return
    needed = set(wanted)
    for saved in saver.list(lookup):
        for found in _blobs_of(saved):
            _learn(found)
        needed = {digest for digest in needed if _BLOBS.get(digest) is None}
        if not needed:
            return


async def _afind_blobs(saver: Any, config: RunnableConfig | None, wanted: list[str]) -> None:
    """:func:`_find_blobs` for a saver used from the event loop."""
    lookup = _history_config(config)
    if not wanted or saver is None or lookup is None:
        return
    needed = set(wanted)
    async for saved in saver.alist(lookup):
        for found in _blobs_of(saved):
            _learn(found)
        needed = {digest for digest in needed if _BLOBS.get(digest) is None}
        if not needed:
            return


def _resolved(texts: Sequence[object]) -> list[object]:
    """The entry texts with each reference replaced by the text it names (hash checked)."""
    out: list[object] = []
    for index, entry_text in enumerate(texts):
        match = _REF_RE.match(entry_text) if isinstance(entry_text, str) else None
        if match is None:
            out.append(entry_text)
            continue
        found = _BLOBS.get(match.group(2))
        if found is None:
            raise JournalError(
                f"entries[{index}]: stored by content hash sha256:{match.group(2)} and not "
                "found in this thread's checkpoints (read the thread with graph_values)"
            )
        if _seq_prefix(found) != _seq_prefix(match.group()):
            raise JournalError(f"entries[{index}]: the stored entry has another seq")
        out.append(found)
    return out


# --- reading graph values ------------------------------------------------------------


def journal_of(flow: Flow, values: Mapping[str, Any]) -> Any:
    """The journal graph values hold, checked for form (not folded)."""
    request = values.get("request")
    if not isinstance(request, str) or not request:
        raise MachineError(f"the graph values hold no run (start one with {flow.input_hint})")
    texts = values.get("journal") or []
    if not isinstance(texts, list):
        raise JournalError(f"journal: expected a list of entries, got {type(texts).__name__}")
    blobs = values.get("blobs")
    if isinstance(blobs, Mapping):
        _learn(blobs)
    return flow.new_journal.load(
        {
            "format": flow.journal_format,
            "request": _decode(request, "request"),
            "entries": [
                _decode(entry_text, f"entries[{i}]")
                for i, entry_text in enumerate(_resolved(texts))
            ],
        }
    )


def status_of(flow: Flow, values: Mapping[str, Any], key: bytes | None) -> Any:
    """The folded and verified status of graph values."""
    return journal_status(journal_of(flow, values), key=key)


class _Folded(NamedTuple):
    """A journal and what its fold says: the state, the next action, an interrupted entry.

    Built from a verified :func:`status_of` when values are folded whole, and
    step by step (no fold) from the entries this process itself appends. A
    named tuple: two are built per effect, on the path every step takes.
    """

    journal: Any
    state: Any
    action: Any
    interrupted: Any

    @classmethod
    def of(cls, journal: Any, status: Any) -> _Folded:
        return cls(journal, status.state, status.action, status.interrupted)


_Token: TypeAlias = tuple[str, str, str, str]


@attrs.define(eq=False)
class _Runs:
    """What one compiled graph knows in this process: folds it verified, entries it started.

    ``folds`` maps the exact content of graph values to their verified fold,
    so a node of a live run does not fold the journal again; content loaded
    from a checkpoint that this process did not produce is folded (and
    verified) whole. ``started`` holds the ``started`` entries this graph
    committed and whose effect has not begun: a started entry that is not
    there was committed by a process that died (or a run that was aborted),
    and only the resume rule may settle it. Compared by identity: one per
    compiled graph.
    """

    flow: Flow
    key: bytes | None
    resend_gatekeeper: bool
    tools: ToolsFactory | None
    observer: object | None
    lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    recorders: collections.OrderedDict[str, ToolRecorder] = attrs.field(
        init=False, factory=collections.OrderedDict
    )
    folds: collections.OrderedDict[tuple[str, ...], _Folded] = attrs.field(
        init=False, factory=collections.OrderedDict
    )
    started: set[_Token] = attrs.field(init=False, factory=set)

    def cached(self, values: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, _Folded | None]:
        request = values.get("request")
        texts = values.get("journal") or []
        if not isinstance(request, str) or not isinstance(texts, list):
            return None, None
        content = (request, *texts)
        try:
            with self.lock:
                found = self.folds.get(content)
                if found is not None:  # only texts this process folded are keys
                    self.folds.move_to_end(content)
                    return content, found
        except TypeError:  # an unhashable item: not text
            return None, None
        if not all(isinstance(entry_text, str) for entry_text in texts):
            return None, None
        return content, None

    def fold(
        self, values: Mapping[str, Any], config: RunnableConfig | None = None, find: bool = False
    ) -> tuple[tuple[str, ...], _Folded]:
        """The verified fold of ``values``: remembered, or folded whole (and remembered).

        Content this process folded or appended itself is found by its exact
        texts, so a live run neither re-reads its journal nor looks for blobs;
        anything else is folded whole. ``find``: before that, read the
        entries stored by content hash from the saver in ``config`` (sync
        callers only; the async nodes read them first).
        """
        content, found = self.cached(values)
        if content is not None and found is not None:
            return content, found
        if find:
            _ensure_blobs(values, config)
        journal = journal_of(self.flow, values)
        folded = _Folded.of(journal, journal_status(journal, key=self.key))
        assert content is not None  # journal_of refused anything else
        self.remember(content, folded)
        return content, folded

    def remember(self, content: tuple[str, ...], folded: _Folded) -> None:
        with self.lock:
            self.folds[content] = folded
            self.folds.move_to_end(content)
            while len(self.folds) > _FOLD_CACHE_SIZE:
                self.folds.popitem(last=False)

    def recorder_for(self, journal: Any) -> ToolRecorder | None:
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
        with self.lock:
            cached = self.recorders.get(run_id)
        if cached is not None and {r.invocation_id for r in cached.records()} == {
            record["invocation_id"] for record in records
        }:
            return cached
        recorder = self.tools(run_id, records)
        with self.lock:
            self.recorders[run_id] = recorder
            self.recorders.move_to_end(run_id)
            while len(self.recorders) > _FOLD_CACHE_SIZE:
                self.recorders.popitem(last=False)
        return recorder


def _token(config: RunnableConfig | None, content: tuple[str, ...]) -> _Token:
    configurable = (config or {}).get("configurable") or {}
    thread = str(configurable.get("thread_id", ""))
    # A task's namespace ends with its own ``node:task-id``; the graph's is what precedes it.
    namespace = str(configurable.get("checkpoint_ns", "")).rpartition("|")[0]
    return (thread, namespace, content[0], content[-1])


def _appended(content: tuple[str, ...], entry_text: str) -> tuple[str, ...]:
    """The content the journal reducer makes of ``content`` and one new entry text.

    :func:`_reduce_journal` for one entry, without copying the list twice.
    """
    if len(content) > 1 and _seq_prefix(content[-1]) == _seq_prefix(entry_text):
        return (*content[:-1], entry_text)
    return (*content, entry_text)


def _stores_blobs(config: RunnableConfig | None) -> bool:
    """Whether this run's checkpoints keep every step (so a blob written once stays readable)."""
    configurable = (config or {}).get("configurable") or {}
    return (
        configurable.get(_CHECKPOINTER_KEY) is not None
        and configurable.get(_DURABILITY_KEY, "async") != "exit"
    )


# --- the nodes -----------------------------------------------------------------------

_Step: TypeAlias = Command[str]
"""A node's return: its journal update, and the node that performs what the core asks next."""


def _interrupt_point(
    node: str, journal: Any, before: frozenset[str], after: frozenset[str]
) -> dict[str, str] | None:
    if node in before:
        return {"before": node}
    if journal.entries:
        last = journal.entries[-1]
        if last.state is EntryState.FINISHED and last.call.value in after:
            return {"after": last.call.value}
    return None


class _Prepared(NamedTuple):
    """What phase two of an effect node needs: the content, its fold, and what to do."""

    content: tuple[str, ...]
    folded: _Folded
    action: Any
    perform: bool
    blobs: bool
    trace: bool


def _streams_updates(config: RunnableConfig | None) -> bool:
    """Whether this task's update may be read (the trace events ride on it).

    The run and resume helpers drive the graph with ``invoke``, which
    returns values only, where the trace channel is always empty: they mark
    their runs so, and the events are not encoded for nobody. A graph driven
    directly (``stream(..., stream_mode="updates")``) carries them.
    """
    return not ((config or {}).get("configurable") or {}).get(_QUIET_KEY)


class _Node:
    """One effect node: phase one commits the started entry, phase two performs and finishes it."""

    def __init__(
        self, name: str, runs: _Runs, before: frozenset[str], after: frozenset[str]
    ) -> None:
        self.name = name
        self.runs = runs
        self.before = before
        self.after = after
        # START's one edge leads to the workflow's first node (see _state_graph).
        self.entry = name == runs.flow.nodes[0]

    def _update(
        self, content: tuple[str, ...], entry_text: str, blobs: bool
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The new content and the journal update of one entry (large ones by reference)."""
        if blobs and len(entry_text) >= BLOB_MIN_CHARS:
            reference, digest = _reference(entry_text)
            _BLOBS.put(digest, entry_text)
            return _appended(content, reference), {
                "journal": [reference],
                "blobs": {digest: entry_text},
            }
        return _appended(content, entry_text), {"journal": [entry_text]}

    def prepare(
        self, values: Mapping[str, Any], config: RunnableConfig | None, find: bool
    ) -> _Step | _Prepared:
        """Either the update of phase one, or what phase two needs (and whether to perform)."""
        runs, flow = self.runs, self.runs.flow
        content, folded = runs.fold(values, config, find)
        action = folded.action
        wanted = flow.node(action)
        if wanted != self.name:
            if self.entry:  # the run goes where its journal leads (a resume, a finished run)
                return Command(goto=wanted)
            raise MachineError(
                f"the {self.name} node ran while the run awaits {flow.describe(action)}"
            )
        journal = folded.journal
        blobs = _stores_blobs(config)
        if folded.interrupted is None:
            point = _interrupt_point(self.name, journal, self.before, self.after)
            if point is not None:
                interrupt(point)
            recorder = flow.recorder(journal, runs.key)
            entry = recorder.begin(action)
            new_content, update = self._update(content, flow.entry_text(entry), blobs)
            runs.remember(
                new_content,
                _Folded(recorder.journal, folded.state, action, entry),
            )
            with runs.lock:
                runs.started.add(_token(config, new_content))
            return Command(update=update, goto=self.name)
        # Taken before the effect begins: if it never returns, the entry is no longer ours.
        token = _token(config, content)
        with runs.lock:
            ours = token in runs.started
            runs.started.discard(token)
        return _Prepared(content, folded, action, ours, blobs, _streams_updates(config))

    def begin(self, prepared: _Prepared) -> tuple[ToolRecorder, RecorderMark] | None:
        """Before the effect: the run's recorder (and a mark, for an executor call); observe."""
        runs = self.runs
        journal = prepared.folded.journal
        recorder = runs.recorder_for(journal)
        if runs.observer is not None:
            notify(runs.observer, "run_opened", journal.request.run)
            notify(runs.observer, "effect_started", prepared.action)
        if recorder is None or not runs.flow.is_executor(prepared.action):
            return None
        return recorder, recorder.mark()

    def end(
        self, action: Any, marked: tuple[ToolRecorder, RecorderMark] | None
    ) -> Sequence[RecordedToolInvocation] | None:
        """After the effect: the tool calls recorded during an executor call."""
        if marked is None:
            return None
        recorder, mark = marked
        invocations = recorded_tool_invocations(recorder.since(mark))
        notify(self.runs.observer, "tools_recorded", action, invocations)
        return invocations

    def settled(self, prepared: _Prepared) -> _Step | None:
        """§12 Resume of an entry this process did not start: its finish, or None to re-send."""
        if prepared.perform:
            return None
        runs = self.runs
        journal, state = resume_journal(
            prepared.folded.journal, key=runs.key, resend_gatekeeper=runs.resend_gatekeeper
        )
        entry = journal.entries[-1]
        if entry.state is EntryState.STARTED:
            return None  # re-sent with the identical input as the same attempt
        # This process's first hook for the run may be event_appended: name the run.
        notify(runs.observer, "run_opened", journal.request.run)
        return self._finished(prepared, journal, entry, state)

    def finish(
        self,
        prepared: _Prepared,
        result: Any,
        invocations: Sequence[RecordedToolInvocation] | None,
    ) -> _Step:
        """The update of phase two: the finished entry and the trace events it produced."""
        runs, flow = self.runs, self.runs.flow
        recorder = flow.recorder(prepared.folded.journal, runs.key)
        fed = recorder.end(result, tool_invocations=invocations)
        # As the drivers do: the observer is told the recorded fact, as a private copy
        # (a hook that edits a gatekeeper result changes neither the run nor its journal).
        if runs.observer is not None:
            notify(runs.observer, "effect_finished", prepared.action, observed_result(fed))
        state = flow.advance(prepared.folded.state, fed)
        return self._finished(prepared, recorder.journal, recorder.journal.entries[-1], state)

    def _finished(self, prepared: _Prepared, journal: Any, entry: Any, state: Any) -> _Step:
        runs, flow = self.runs, self.runs.flow
        action = flow.next_action(state)
        new_content, update = self._update(prepared.content, flow.entry_text(entry), prepared.blobs)
        runs.remember(new_content, _Folded(journal, state, action, None))
        appended = state.events[len(prepared.folded.state.events) :]
        if runs.observer is not None:
            for event in appended:
                notify(runs.observer, "event_appended", event)
        if prepared.trace:
            update["trace"] = [text(to_wire(event)) for event in appended]
        return Command(update=update, goto=flow.node(action))


def _opened(
    node: _Node, values: GraphState, config: RunnableConfig, find: bool
) -> _Step | tuple[_Prepared, tuple[ToolRecorder, RecorderMark] | None]:
    """A step that performs nothing (phase one, or §12 settled), or the effect to perform."""
    prepared = node.prepare(values, config, find)
    if isinstance(prepared, Command):
        return prepared
    settled = node.settled(prepared)
    return settled if settled is not None else (prepared, node.begin(prepared))


def _sync_node(node: _Node, effects: Any) -> Callable[..., _Step]:
    def run(values: GraphState, config: RunnableConfig) -> _Step:
        opened = _opened(node, values, config, True)
        if isinstance(opened, Command):
            return opened
        result = node.runs.flow.perform(opened[0].action, effects)
        return node.finish(opened[0], result, node.end(opened[0].action, opened[1]))

    return run


def _async_node(node: _Node, effects: Any) -> Callable[..., Awaitable[_Step]]:
    async def run(values: GraphState, config: RunnableConfig) -> _Step:
        if node.runs.cached(values)[1] is None:
            await _aensure_blobs(values, config)
        opened = _opened(node, values, config, False)
        if isinstance(opened, Command):
            return opened
        performed = await node.runs.flow.perform_async(opened[0].action, effects)
        return node.finish(opened[0], performed, node.end(opened[0].action, opened[1]))

    return run


def _wanted(values: Mapping[str, Any]) -> list[str]:
    texts = values.get("journal")
    if not isinstance(texts, list):
        return []
    blobs = values.get("blobs")
    if isinstance(blobs, Mapping):
        _learn(blobs)
    return _missing([t for t in texts if isinstance(t, str)])


def _ensure_blobs(values: Mapping[str, Any], config: RunnableConfig | None) -> None:
    wanted = _wanted(values)
    if wanted:
        saver = ((config or {}).get("configurable") or {}).get(_CHECKPOINTER_KEY)
        _find_blobs(saver, config, wanted)


async def _aensure_blobs(values: Mapping[str, Any], config: RunnableConfig | None) -> None:
    wanted = _wanted(values)
    if wanted:
        saver = ((config or {}).get("configurable") or {}).get(_CHECKPOINTER_KEY)
        await _afind_blobs(saver, config, wanted)


def check_nodes(flow: Flow, names: Sequence[str] | None, what: str) -> frozenset[str]:
    chosen = frozenset(names or ())
    unknown = sorted(chosen - set(flow.nodes))
    if unknown:
        raise ValueError(f"{what}: unknown node(s) {unknown}; the nodes are {list(flow.nodes)}")
    return chosen


# The compiled graphs built here and what each knows (its workflow, key, folds).
_GRAPHS: weakref.WeakKeyDictionary[Any, _Runs] = weakref.WeakKeyDictionary()


def _state_graph(
    effects: Any, runs: _Runs, before: frozenset[str], after: frozenset[str], where: str
) -> StateGraph[Any, None, Any, Any]:
    flow = runs.flow
    # The drivers' checks: the effects (kind, callability, arity) and a gatekeeper
    # built over other recorders than tools=, before anything is built or runs.
    flow.check_effects(effects, where, runs.tools)
    graph: StateGraph[Any, None, Any, Any] = StateGraph(GraphState)
    targets = (*flow.nodes, END)
    is_async = isinstance(effects, flow.async_effects_type)
    for name in flow.nodes:
        node = _Node(name, runs, before, after)
        # LangGraph's node protocols do not accept a TypedDict under mypy; the
        # nodes are typed where they are defined.
        perform: Any = _async_node(node, effects) if is_async else _sync_node(node, effects)
        graph.add_node(name, perform, destinations=targets)
    # START has one plain edge, to the workflow's first node: a new run's first effect.
    # That node sends any other run (one resumed or re-routed from START, one already
    # finished) where its journal leads, in one step that performs nothing; a conditional
    # edge would cost LangGraph a traced call on every run for that rare case.
    graph.add_edge(START, flow.nodes[0])
    return graph


def state_graph(
    flow: Flow,
    effects: Any,
    *,
    key: bytes | None,
    resend_gatekeeper: bool,
    tools: ToolsFactory | None,
    observer: object | None,
) -> StateGraph[Any, None, Any, Any]:
    """The uncompiled graph of ``flow``."""
    runs = _Runs(flow, key, resend_gatekeeper, tools, observer)
    return _state_graph(effects, runs, frozenset(), frozenset(), f"{flow.name}_state_graph")


def build_graph(
    flow: Flow,
    effects: Any,
    checkpointer: Checkpointer,
    interrupt_before: list[str] | None,
    interrupt_after: list[str] | None,
    key: bytes | None,
    resend_gatekeeper: bool,
    durability: Durability,
    tools: ToolsFactory | None,
    observer: object | None,
) -> AnyGraph:
    """The compiled graph of ``flow`` (see ``build_diagnosis_graph``)."""
    before = check_nodes(flow, interrupt_before, "interrupt_before")
    after = check_nodes(flow, interrupt_after, "interrupt_after")
    runs = _Runs(flow, key, resend_gatekeeper, tools, observer)
    where = f"build_{flow.name}_graph"
    compiled = _state_graph(effects, runs, before, after, where).compile(checkpointer=checkpointer)
    # Without a checkpointer there is nothing to make durable (and LangGraph
    # cannot run a "sync" default there).
    graph = (
        compiled
        if checkpointer is None or checkpointer is False
        else compiled.with_config({"configurable": {_DURABILITY_KEY: durability}})
    )
    _GRAPHS[graph] = runs
    return graph


def _runs_of(graph: AnyGraph) -> _Runs | None:
    try:
        return _GRAPHS.get(graph)
    except TypeError:  # pragma: no cover - a graph object that cannot be weakly referenced
        return None


def _flow_runs(flow: Flow, graph: AnyGraph) -> _Runs | None:
    runs = _runs_of(graph)
    if runs is not None and runs.flow is not flow:
        raise TypeError(f"graph: a {runs.flow.name} graph, not a {flow.name} graph")
    return runs


# --- running -------------------------------------------------------------------------


def recursion_limit(max_node_executions: int) -> int:
    """A LangGraph ``recursion_limit`` no correct run reaches (spec §7 step bound)."""
    return 2 * max_node_executions + _RECURSION_MARGIN


def run_config_for(
    max_node_executions: int, thread_id: str | None, base: RunnableConfig | None
) -> RunnableConfig:
    """``base`` with the recursion limit and, if given, the thread id."""
    run_config: RunnableConfig = {**(base or {})}
    run_config["recursion_limit"] = recursion_limit(max_node_executions)
    if thread_id is not None:
        run_config["configurable"] = {**run_config.get("configurable", {}), "thread_id": thread_id}
    return run_config


def _state(flow: Flow, graph: AnyGraph, values: Mapping[str, Any]) -> Any:
    runs = _runs_of(graph)
    if runs is None:
        return status_of(flow, values, None).state
    return runs.fold(values)[1].state


def _durability(graph: AnyGraph, durability: Durability | None) -> Durability | None:
    if graph.checkpointer in (None, False):
        return None  # LangGraph warns that durability means nothing without a checkpointer
    if durability is not None:
        return durability
    chosen: Durability = (graph.config or {}).get("configurable", {}).get(_DURABILITY_KEY, "sync")
    return chosen


class ResumeOptions(TypedDict, total=False):
    """The options of the resume helpers (all keywords, all optional).

    ``config``: a base LangGraph run config (callbacks, tags, ...);
    ``durability``: overrides the graph's checkpoint durability;
    ``wait_for_owner``: seconds to wait for another live driver of the
    thread to let go before :class:`ThreadBusyError` (default: refuse at once).
    """

    config: RunnableConfig | None
    durability: Durability | None
    wait_for_owner: float | None


class RunOptions(ResumeOptions, total=False):
    """The options of the run helpers: those of :class:`ResumeOptions`, ``thread_id`` and
    ``max_question_chars``.

    ``thread_id`` defaults to the request's run id, which is what a
    checkpointer keys on. ``max_question_chars`` is the longest question a
    chat run accepts (the drivers' default, 100 000 characters): a longer one
    is a :class:`PayloadError` before anything runs or is checkpointed (AIOps
    requests hold no question).
    """

    thread_id: str | None
    max_question_chars: int


@attrs.frozen
class _Drive:
    """One run or resume call, checked before anything runs."""

    flow: Flow
    graph: AnyGraph
    saver: Any
    thread_id: str
    lookup: RunnableConfig
    base: RunnableConfig | None
    durability: Durability | None
    wait: float | None

    def config_for(self, request: Any) -> RunnableConfig:
        run_config = run_config_for(request.config.max_node_executions, self.thread_id, self.base)
        run_config["configurable"] = {**run_config.get("configurable", {}), _QUIET_KEY: True}
        return run_config


def _drive(
    flow: Flow, graph: AnyGraph, thread_id: object, options: Mapping[str, Any]
) -> _Drive:
    _flow_runs(flow, graph)
    if not isinstance(thread_id, str):
        raise TypeError(f"thread_id: expected str, got {type(thread_id).__name__}")
    base = options.get("config")
    return _Drive(
        flow,
        graph,
        _saver(graph),
        thread_id,
        run_config_for(0, thread_id, base),
        base,
        _durability(graph, options.get("durability")),
        options.get("wait_for_owner"),
    )


def _started(flow: Flow, graph: AnyGraph, request: Any, options: Mapping[str, Any]) -> _Drive:
    """Validate before anything runs: the request's type, the graph's workflow, the options.

    The request gets the drivers' own check (a question over the limit, a lone
    surrogate anywhere: :class:`PayloadError`) before the thread is held or
    anything is checkpointed.
    """
    if not isinstance(request, flow.request_type):
        raise TypeError(
            f"request: expected {flow.request_type.__name__}, got {type(request).__name__}"
        )
    flow.check_request(request, f"run_{flow.name}_graph", options.get("max_question_chars"))
    thread_id = options.get("thread_id")
    return _drive(flow, graph, request.run.run_id if thread_id is None else thread_id, options)


def graph_input(flow: Flow, request: Any) -> dict[str, Any]:
    return {"request": text(flow.request_to_wire(request))}


def _seeded_input(flow: Flow, graph: AnyGraph, request: Any) -> dict[str, Any]:
    """The graph input of a run this helper starts, its fold remembered first.

    The request object is at hand (and typed): its run starts from it, as a
    driver's does, instead of the first step decoding and checking the text
    it was just written to (about 0.2 ms a run). Values read from a
    checkpoint are never seeded; they are folded whole.
    """
    graph_values = graph_input(flow, request)
    runs = _runs_of(graph)
    if runs is not None:
        state = flow.workflow.start(request)
        folded = _Folded(flow.new_journal(request), state, flow.next_action(state), None)
        runs.remember((graph_values["request"],), folded)
    return graph_values


def run_graph(flow: Flow, graph: AnyGraph, request: Any, options: Mapping[str, Any]) -> Any:
    """Run ``request`` on its thread, holding the thread (see ``run_diagnosis_graph``)."""
    drive = _started(flow, graph, request, options)
    with owner(drive.saver, drive.thread_id, drive.wait):
        values = graph.invoke(
            _seeded_input(flow, graph, request),
            drive.config_for(request),
            durability=drive.durability,
        )
    return _state(flow, graph, values)


async def arun_graph(
    flow: Flow, graph: AnyGraph, request: Any, options: Mapping[str, Any]
) -> Any:
    """The asyncio variant of :func:`run_graph`."""
    drive = _started(flow, graph, request, options)
    async with aowner(drive.saver, drive.thread_id, drive.wait):
        values = await graph.ainvoke(
            _seeded_input(flow, graph, request),
            drive.config_for(request),
            durability=drive.durability,
        )
    return _state(flow, graph, values)


def _unknown_thread(thread_id: str) -> MachineError:
    return MachineError(
        f"thread_id {thread_id!r} is unknown to this graph's checkpointer: no run was "
        "started on it (start one with the run helper, or check the thread id "
        "and the checkpointer's database)"
    )


def _pending_input(drive: _Drive, saved: Any) -> Any:
    """The request of a thread whose last checkpoint is LangGraph's input one.

    A worker can die after LangGraph saved the input (on its ``__start__``
    channel) and before step 0 copied it into the state: the run exists, and
    continuing the thread performs that step. Anything else without a
    request is not a run.
    """
    flow = drive.flow
    if saved is None:
        raise _unknown_thread(drive.thread_id)
    values = (saved.checkpoint or {}).get("channel_values") or {}
    pending = values.get(START)
    if not isinstance(pending, Mapping) or not isinstance(pending.get("request"), str):
        raise MachineError(
            f"thread_id {drive.thread_id!r}: the graph values hold no run "
            f"(start one with {flow.input_hint})"
        )
    document = {
        "format": flow.journal_format,
        "request": _decode(pending["request"], "request"),
        "entries": [],
    }
    return flow.new_journal.load(document).request


def _holds_request(saved: Any) -> bool:
    """Whether a saved checkpoint (None without a saver) holds the run's request in its state."""
    if saved is None:
        return True
    return bool(((saved.checkpoint or {}).get("channel_values") or {}).get("request"))


def _resume_plan(
    drive: _Drive, snapshot: Any
) -> tuple[Command[Any] | None, RunnableConfig, bool]:
    """The input, the run config, and whether the stored next step is stale.

    Folding verifies the stored journal before anything runs. The step
    LangGraph stored as next was chosen from the journal as it was then; a
    checkpoint whose journal was edited (without a key, to facts that still
    verify) may imply another step, and the run goes where the facts lead
    (then the graph is routed again from START).
    """
    flow, values = drive.flow, snapshot.values
    runs = _runs_of(drive.graph)
    if runs is None:
        journal = journal_of(flow, values)
        folded = _Folded.of(journal, journal_status(journal))
    else:
        folded = runs.fold(values)[1]
    run_config = drive.config_for(folded.state.request)
    wanted = flow.node(folded.action)
    reroute = tuple(snapshot.next) != (() if wanted == END else (wanted,))
    # ``Command(resume=...)`` continues past a dynamic interrupt of this graph.
    resume_input: Command[Any] | None = (
        Command(resume=True) if snapshot.interrupts and not reroute else None
    )
    return resume_input, run_config, reroute


def resume_graph(
    flow: Flow, graph: AnyGraph, thread_id: str, options: Mapping[str, Any]
) -> Any:
    """Continue the thread's run, holding the thread (see ``resume_diagnosis_graph``)."""
    drive = _drive(flow, graph, thread_id, options)
    with owner(drive.saver, thread_id, drive.wait):
        snapshot = graph.get_state(drive.lookup)
        saved = drive.saver.get_tuple(drive.lookup) if drive.saver is not None else None
        # Decided on the saved checkpoint, not on the snapshot: step 0's pending writes
        # (saved just before a kill) show the request in the snapshot's values already.
        if not snapshot.values.get("request") or not _holds_request(saved):
            run_input: Command[Any] | None = None
            run_config = drive.config_for(_pending_input(drive, saved))
        else:
            _find_blobs(drive.saver, drive.lookup, _wanted(snapshot.values))
            run_input, run_config, reroute = _resume_plan(drive, snapshot)
            if reroute:
                graph.update_state(drive.lookup, {}, as_node=START)
        values = graph.invoke(run_input, run_config, durability=drive.durability)
    return _state(flow, graph, values)


async def aresume_graph(
    flow: Flow, graph: AnyGraph, thread_id: str, options: Mapping[str, Any]
) -> Any:
    """The asyncio variant of :func:`resume_graph`."""
    drive = _drive(flow, graph, thread_id, options)
    async with aowner(drive.saver, thread_id, drive.wait):
        snapshot = await graph.aget_state(drive.lookup)
        saved = await drive.saver.aget_tuple(drive.lookup) if drive.saver is not None else None
        if not snapshot.values.get("request") or not _holds_request(saved):
            run_input: Command[Any] | None = None
            run_config = drive.config_for(_pending_input(drive, saved))
        else:
            await _afind_blobs(drive.saver, drive.lookup, _wanted(snapshot.values))
            run_input, run_config, reroute = _resume_plan(drive, snapshot)
            if reroute:
                await graph.aupdate_state(drive.lookup, {}, as_node=START)
        values = await graph.ainvoke(run_input, run_config, durability=drive.durability)
    return _state(flow, graph, values)


def _saver(graph: AnyGraph) -> Any:
    """The graph's own checkpoint saver, or None (no saver, or one inherited from a parent)."""
    saver = graph.checkpointer
    return None if saver is None or isinstance(saver, bool) else saver


def graph_values(
    graph: AnyGraph, thread_id: str, config: RunnableConfig | None = None
) -> dict[str, Any]:
    """The thread's latest values with every entry stored by content hash written out in full."""
    lookup = run_config_for(0, thread_id, config)
    values = dict(graph.get_state(lookup).values)
    if not values:
        raise _unknown_thread(thread_id)
    saver = _saver(graph)
    _find_blobs(saver, lookup, _wanted(values))
    texts = values.get("journal")
    if isinstance(texts, list):
        values["journal"] = _resolved(texts)
    values.pop("blobs", None)
    return values
