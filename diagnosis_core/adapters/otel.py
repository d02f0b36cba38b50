"""OpenTelemetry adapter: an observer that turns a run into spans (extra ``otel``, spec §14).

:class:`OpenTelemetryObserver` watches the chat workflow's drivers and
:class:`AiOpsOpenTelemetryObserver` the AIOps flow's; both need only
``opentelemetry-api`` (the host brings the SDK and its exporters).

**The span tree of a run is its trace, one to one.** One *run span* is
started at the observer's first hook and ended when the run's final event
is appended (the composer's or reporter's completion, or a fallback), or by
:meth:`~OpenTelemetryObserver.finish`. Under it, every trace event becomes
exactly one child span, in trace order:

* an effect's event (an agent attempt, the gatekeeper call) is the span of
  that effect: started at ``effect_started``, ended with the time of
  ``effect_finished`` — the driver's clock — and attributed from the event
  that the machine appends right after (status, reason code, input hash);
* a pure node's event (``verified_input``, ``evidence_retry``, the
  fallbacks) is a zero-duration span at the moment it was appended.

**Names follow the OpenTelemetry GenAI semantic conventions** (agent spans,
status Development): the run span is an ``invoke_workflow`` span
(``invoke_workflow diagnosis`` / ``invoke_workflow aiops``,
``gen_ai.workflow.name``) — a coordinated process of several agents is what
that span describes; an agent attempt is an ``invoke_agent`` *internal* span
(``invoke_agent planner``, ``gen_ai.agent.name``: the invoker runs in the
host's process); the gatekeeper, a deterministic host function and not a
model, is an ``execute_tool`` span (``execute_tool gatekeeper``,
``gen_ai.tool.name`` ``gatekeeper``, ``gen_ai.tool.type`` ``function``);
pure nodes are plain internal spans named after the node, with no
``gen_ai.operation.name`` (they are no GenAI operation). Every span is of
kind ``INTERNAL`` and carries ``diagnosis.run_id``, ``diagnosis.node``,
``diagnosis.seq``, ``diagnosis.round`` (AIOps: ``diagnosis.step``),
``diagnosis.attempt``, ``diagnosis.status``, ``diagnosis.reason_code`` and
``diagnosis.input_sha256`` (when the event has them), the event's counts and
verdicts as ``diagnosis.details.*``, and ``gen_ai.conversation.id`` (the
session id). Every ``invoke_agent`` span carries ``gen_ai.provider.name``:
the host's ``provider_name`` — one name, or one per agent
(:func:`provider_names` reads them from effects whose invokers expose a
``provider_name``, as the LangChain invokers do) — else
:data:`DEFAULT_PROVIDER_NAME`.

**Tool spans.** Each tool call recorded during an executor call (the
drivers' and engines' optional ``tools_recorded`` hook, spec §13) is an
``execute_tool <tool name>`` child span of that executor's span
(``gen_ai.tool.name``, ``gen_ai.tool.call.id`` = the invocation id,
``gen_ai.tool.type`` ``function``), ending when the executor returned and
starting ``duration_ms`` earlier when the recorder timed it (else at the
same instant). A failed call is ``ERROR`` with its exception type as the
description and ``diagnosis.tool.error_type``; no ``error.type``, since a
failed tool call does not by itself end the run's path (the executor
decides what it means).

**Status.** A failed agent attempt that the machine retries is not an
error: its span keeps status ``UNSET``, gets ``diagnosis.retried`` true and
a ``diagnosis.retry`` span event with the failure's status and reason code.
An effect span is ``ERROR`` when its event's status is not ``COMPLETED`` and
no retry follows it, and a gatekeeper span also when its event carries a
routing reason (rejected, invalid result, unavailable, no trusted
evidence): the run leaves for the fallback because of it. The description
and ``error.type`` are the reason code — set only on the span whose call
ended the run's path. The run span is ``ERROR`` when the run ended in a
fallback, with the fallback's reason code.

**No agent text by default.** Span attributes carry no agent input, reply
or error message unless ``record_text=True``; then agent spans get
``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON strings in the
conventions' message shape) and failed spans ``diagnosis.error``.

**One trace per run, even across a resume.** The trace id is the first 16
bytes of the SHA-256 of the UTF-8 run id (:func:`trace_id_for_run`), and
the run span is started under a remote, sampled, non-recording parent with
that trace id (:func:`run_trace_context`). Two processes that each observe
part of one run — a LangGraph or Temporal resume — therefore emit spans of
the same trace: each its own run span under the same parent. A span that is
current when the run span starts (a request span of the host) is kept as a
link. The drivers and engines call the optional ``run_opened(run)`` hook
before anything else in a process, so a resumed run whose first hook is
``event_appended`` (an interrupted call settled by the resume rule) still
opens its run span in the run's trace, with ``diagnosis.run_id``.

While an effect runs, its span is the current span (unless
``activate=False``), so the host's own instrumentation — an LLM client's or
an HTTP library's spans — nests under the agent's span. A host that calls
``effect_started`` and ``effect_finished`` from different threads or tasks
passes ``activate=False`` (a context is detached where it was attached).

An observer only watches (spec §14): the drivers call its hooks through the
one calling point that reports and swallows a hook's exception, and the SDK's
span processors catch an exporter's. One observer follows one run at a time;
after the run's final event it is ready for the next run.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from contextvars import Token
from typing import Generic, TypeAlias, TypeVar

import attrs
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
)
from opentelemetry.util.types import AttributeValue

from .. import RunConfig, TraceEvent
from ..aiops import AiOpsTraceEvent
from ..machine import (
    AgentFailed,
    AgentReplied,
    CallGatekeeper,
    EffectResult,
    GatekeeperFailed,
    InvokeAgent,
    InvokeAiOpsAgent,
)

__all__ = [
    "DEFAULT_PROVIDER_NAME",
    "AiOpsOpenTelemetryObserver",
    "OpenTelemetryObserver",
    "provider_names",
    "run_trace_context",
    "trace_id_for_run",
]

A = TypeVar("A")
R = TypeVar("R")
E = TypeVar("E")

_INSTRUMENTATION = "diagnosis_core.adapters.otel"

DEFAULT_PROVIDER_NAME = "unknown"
"""``gen_ai.provider.name`` of an agent whose provider neither the host nor its invoker names."""

ProviderNames: TypeAlias = "str | Mapping[str, str] | None"
"""``provider_name`` of the observers: one name for every agent, or one per agent name."""
_COMPLETED = "COMPLETED"

# GenAI semantic conventions (agent spans) and the diagnosis.* names of spec §14.
_OPERATION = "gen_ai.operation.name"
_AGENT_NAME = "gen_ai.agent.name"
_WORKFLOW_NAME = "gen_ai.workflow.name"
_TOOL_NAME = "gen_ai.tool.name"
_TOOL_TYPE = "gen_ai.tool.type"
_TOOL_CALL_ID = "gen_ai.tool.call.id"
_PROVIDER = "gen_ai.provider.name"
_CONVERSATION = "gen_ai.conversation.id"
_INPUT_MESSAGES = "gen_ai.input.messages"
_OUTPUT_MESSAGES = "gen_ai.output.messages"
_ERROR_TYPE = "error.type"

# Event details that are counts, enums or scores — never text.
_DETAIL_FIELDS = (
    "status",
    "checked",
    "passed",
    "failed",
    "trusted_bindings",
    "model_verdict",
    "effective_verdict",
    "ceiling",
    "groundedness_score",
    "gap_count",
    "next",
    "repeats",
    "plan_steps",
    "findings",
    "tool_invocations",
    "new_tool_invocations",
)


def trace_id_for_run(run_id: str) -> int:
    """The trace id of every span of run ``run_id``: the first 16 bytes of SHA-256(run id).

    Deterministic, so that every process that observes a part of the run —
    before and after a resume — emits spans into the same trace, and so that
    a host can find a run's trace from its id alone (hex:
    ``format(trace_id_for_run(run_id), "032x")``). Never 0 (an invalid id).
    """
    digest = _digest(run_id)
    return int.from_bytes(digest[:16], "big") or 1


def run_trace_context(run_id: str) -> Context:
    """A context whose current span is the run's remote root: trace id :func:`trace_id_for_run`.

    The run span is started under it; a host can start its own spans under
    it to put them into the run's trace. The parent is remote, sampled and
    non-recording: it is never exported, so a backend shows the run spans
    as the roots of the trace.
    """
    parent = SpanContext(
        trace_id=trace_id_for_run(run_id),
        span_id=int.from_bytes(_digest(run_id)[16:24], "big") or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent), Context())


def _digest(run_id: str) -> bytes:
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).digest()


def _value(value: object) -> AttributeValue:
    """An attribute value: enum members as their wire string, numbers as they are."""
    wire = getattr(value, "value", value)
    if isinstance(wire, bool | int | float):
        return wire
    return str(wire)


def _messages(role: str, text: str, *, finish: bool) -> str:
    message: dict[str, object] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish:
        message["finish_reason"] = "stop"
    return json.dumps([message], ensure_ascii=False)


@attrs.frozen
class _Workflow:
    """What distinguishes the two workflows' traces: names, position field, final nodes."""

    name: str
    position: str
    agents: frozenset[str]
    tools: frozenset[str]
    final_agent: str
    fallbacks: Mapping[str, str]
    answered: str

    def outcome(self, node: str, status: str) -> str | None:
        """The run's outcome when an event of ``node`` with ``status`` ends it, else None."""
        if node in self.fallbacks:
            return self.fallbacks[node]
        if node == self.final_agent and status == _COMPLETED:
            return self.answered
        return None


_CHAT = _Workflow(
    name="diagnosis",
    position="round",
    agents=frozenset({"planner", "executor", "verifier", "composer"}),
    tools=frozenset({"gatekeeper"}),
    final_agent="composer",
    fallbacks=types.MappingProxyType(
        {
            "pre_verification_fallback": "PRE_VERIFICATION_FALLBACK",
            "post_verification_fallback": "POST_VERIFICATION_FALLBACK",
        }
    ),
    answered="ANSWERED",
)

_AIOPS = _Workflow(
    name="aiops",
    position="step",
    agents=frozenset({"supervisor", "planner", "executor", "reporter"}),
    tools=frozenset(),
    final_agent="reporter",
    fallbacks=types.MappingProxyType({"fallback": "FALLBACK"}),
    answered="REPORTED",
)


class _Effect:
    """The span of an effect that was started and whose event has not arrived yet."""

    def __init__(
        self, node: str, span: Span, token: Token[Context] | None, start_ns: int
    ) -> None:
        self.node = node
        self.span = span
        self.token = token
        self.start_ns = start_ns
        self.end_ns: int | None = None
        self.text: str | None = None
        self.tools: tuple[object, ...] = ()


@attrs.define
class _Failed:
    """A failed agent attempt's span, held until the next hook says whether it is retried."""

    span: Span
    node: str
    attempt: int
    end: int
    status: str
    code: str
    text: str | None


def provider_names(effects: object) -> dict[str, str]:
    """The ``gen_ai.provider.name`` of each agent whose invoker names its provider.

    Reads a non-empty string attribute ``provider_name`` from each agent
    invoker of ``effects`` (chat or AIOps effects; the LangChain invokers
    expose their chat model's provider). Pass the result as the observers'
    ``provider_name``; agents it lacks get :data:`DEFAULT_PROVIDER_NAME`.
    """
    names: dict[str, str] = {}
    for agent in sorted(_CHAT.agents | _AIOPS.agents):
        name = getattr(getattr(effects, agent, None), "provider_name", None)
        if isinstance(name, str) and name:
            names[agent] = name
    return names


def _attempt(item: object) -> int:
    attempt = getattr(item, "attempt", 1)
    return attempt if isinstance(attempt, int) else 1


class _SpanObserver(Generic[A, R, E]):
    """The span logic both workflows share; see the module docstring for the contract."""

    _workflow: _Workflow

    def __init__(
        self,
        tracer: Tracer | None = None,
        *,
        record_text: bool = False,
        provider_name: ProviderNames = None,
        activate: bool = True,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._tracer = tracer if tracer is not None else trace.get_tracer(_INSTRUMENTATION)
        self._record_text = record_text
        self._provider_name = provider_name
        self._activate = activate
        self._clock = clock
        self._lock = threading.Lock()
        self._run: Span | None = None
        self._run_id: str | None = None
        self._session_id: str | None = None
        self._effect: _Effect | None = None
        self._failed: _Failed | None = None

    # --- the hooks (spec §14) -----------------------------------------------------

    def run_opened(self, run: RunConfig, /) -> None:
        """Open the run's span (in the run's trace) if it is not open: before any other hook."""
        with self._lock:
            if isinstance(run, RunConfig):
                self._ensure_run(run.run_id, run.session_id, self._clock())

    def tools_recorded(self, action: A, invocations: Sequence[object], /) -> None:
        """Keep the tool calls of the running executor call: its span's children (spec §13)."""
        with self._lock:
            if self._effect is not None:
                self._effect.tools = tuple(invocations)

    def effect_started(self, action: A, /) -> None:
        """Start the effect's span under the run span (starting the run span first if needed)."""
        with self._lock:
            now = self._clock()
            run_id, session_id = _run_of(action)
            failed = self._failed
            if failed is not None:
                node = self._node_of(action)
                self._settle(failed.node == node and _attempt(action) > failed.attempt)
            run = self._ensure_run(run_id, session_id, now)
            if self._effect is not None:
                self._abandon_effect("the next effect started before this one's trace event")
            node, attributes = self._effect_attributes(action)
            agent = node in self._workflow.agents
            name = f"invoke_agent {node}" if agent else f"execute_tool {node}"
            span = self._tracer.start_span(
                name,
                context=trace.set_span_in_context(run),
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=now,
            )
            text = getattr(action, "input", None)
            if self._record_text and agent and isinstance(text, str):
                span.set_attribute(_INPUT_MESSAGES, _messages("user", text, finish=False))
            token = None
            if self._activate:
                token = otel_context.attach(trace.set_span_in_context(span))
            self._effect = _Effect(node, span, token, now)

    def effect_finished(self, action: A, result: R, /) -> None:
        """Note the effect's end time (the span ends with its event, which carries its status)."""
        with self._lock:
            now = self._clock()
            effect = self._effect
            if effect is None:
                return
            effect.end_ns = now
            self._deactivate(effect)
            if not self._record_text:
                return
            if isinstance(result, AgentReplied) and isinstance(result.text, str):
                effect.span.set_attribute(
                    _OUTPUT_MESSAGES, _messages("assistant", result.text, finish=True)
                )
            elif isinstance(result, AgentFailed | GatekeeperFailed):
                effect.text = result.message

    def event_appended(self, event: E, /) -> None:
        """End the matching effect span or emit a pure node's span; the last event ends the run."""
        with self._lock:
            now = self._clock()
            if self._failed is not None:
                self._settle(False)  # no retry came: that failure ended the path
            run = self._ensure_run(None, None, now)
            node = str(_value(getattr(event, "node", "")))
            status = str(_value(getattr(event, "status", "")))
            attributes = self._event_attributes(event)
            effect = self._effect
            if effect is not None and effect.node != node:
                self._abandon_effect("its trace event never arrived")
                effect = None
            if effect is not None:
                self._effect = None
                self._deactivate(effect)
                span = effect.span
                span.set_attributes(attributes)
                end = effect.end_ns if effect.end_ns is not None else now
            else:
                span = self._tracer.start_span(
                    node,
                    context=trace.set_span_in_context(run),
                    kind=SpanKind.INTERNAL,
                    attributes={**self._common(), **attributes},
                    start_time=now,
                )
                end = now
            reason = getattr(event, "reason_code", None)
            failed = status != _COMPLETED or (node in self._workflow.tools and reason is not None)
            if effect is not None and effect.tools:
                self._tool_spans(effect, end)
            if failed:
                code = str(_value(reason)) if reason is not None else status
                error = getattr(getattr(event, "details", None), "error", None)
                text = effect.text if effect is not None and effect.text else error
                self._failed = _Failed(span, node, _attempt(event), end, status, code, text)
                if effect is None or node not in self._workflow.agents:
                    self._settle(False)
                # else: held; the next hook tells whether the attempt is retried
            else:
                span.end(end_time=end)
            outcome = self._workflow.outcome(node, status)
            if outcome is not None:
                self._end_run(outcome, node, reason, now)

    # --- ending a run by hand ---------------------------------------------------

    def finish(self) -> None:
        """End the open spans of a run that will not be driven further here.

        For a host that stops before the run's final event (the run is
        suspended and resumes elsewhere, or the driver raised): an effect span
        still open ends ``ERROR`` ("unfinished"), the run span ends with
        ``diagnosis.finished`` false. A no-op when no run is open.
        """
        with self._lock:
            now = self._clock()
            if self._failed is not None:
                self._settle(False)
            if self._effect is not None:
                self._abandon_effect("the run was finished before this effect's trace event")
            run = self._run
            self._run = None
            if run is not None:
                run.set_attribute("diagnosis.finished", False)
                run.end(end_time=now)

    def __enter__(self) -> _SpanObserver[A, R, E]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: types.TracebackType | None,
    ) -> None:
        if error is not None:
            with self._lock:
                if self._run is not None:
                    self._run.set_status(Status(StatusCode.ERROR, type(error).__name__))
        self.finish()

    # --- helpers ----------------------------------------------------------------

    def _settle(self, retried: bool) -> None:
        """End the held failed attempt: retried (no error) or the failure that ended the path."""
        failed, self._failed = self._failed, None
        if failed is None:
            return
        span = failed.span
        if retried:
            span.set_attribute("diagnosis.retried", True)
            span.add_event(
                "diagnosis.retry",
                {"diagnosis.status": failed.status, "diagnosis.reason_code": failed.code},
                timestamp=failed.end,
            )
        else:
            span.set_attribute(_ERROR_TYPE, failed.code)
            span.set_status(Status(StatusCode.ERROR, failed.code))
        if self._record_text and failed.text:
            span.set_attribute("diagnosis.error", failed.text)
        span.end(end_time=failed.end)

    def _tool_spans(self, effect: _Effect, end: int) -> None:
        """One ``execute_tool <name>`` child of the executor span per recorded call (spec §13)."""
        parent = trace.set_span_in_context(effect.span)
        for call in effect.tools:
            name = str(getattr(call, "tool_name", ""))
            attributes: dict[str, AttributeValue] = {
                **self._common(),
                _OPERATION: "execute_tool",
                _TOOL_NAME: name,
                _TOOL_TYPE: "function",
                _TOOL_CALL_ID: str(getattr(call, "invocation_id", "")),
            }
            duration = getattr(call, "duration_ms", None)
            start = end
            if isinstance(duration, int | float) and not isinstance(duration, bool):
                start = max(effect.start_ns, end - int(duration * 1_000_000))
            span = self._tracer.start_span(
                f"execute_tool {name}",
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=start,
            )
            if getattr(call, "success", True) is False:
                kind = str(getattr(getattr(call, "error", None), "type", "") or "error")
                span.set_attribute("diagnosis.tool.error_type", kind)
                span.set_status(Status(StatusCode.ERROR, kind))
            span.end(end_time=end)

    def _ensure_run(self, run_id: str | None, session_id: str | None, now: int) -> Span:
        if self._run is not None and run_id is not None and run_id != self._run_id:
            self._settle(False)
            self._run.set_attribute("diagnosis.finished", False)
            self._run.end(end_time=now)
            self._run = None
        if self._run is None:
            self._run_id, self._session_id = run_id, session_id
            self._run = self._start_run(now)
        elif session_id is not None and self._session_id is None:
            self._session_id = session_id
            self._run.set_attribute(_CONVERSATION, session_id)
        return self._run

    def _start_run(self, now: int) -> Span:
        attributes: dict[str, AttributeValue] = {
            _OPERATION: "invoke_workflow",
            _WORKFLOW_NAME: self._workflow.name,
            **self._common(),
        }
        context = links = None  # no run id: under the current span, as any span
        if self._run_id is not None:
            ambient = trace.get_current_span().get_span_context()
            links = [Link(ambient)] if ambient.is_valid else None
            context = run_trace_context(self._run_id)
        return self._tracer.start_span(
            f"invoke_workflow {self._workflow.name}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            start_time=now,
        )

    def _end_run(self, outcome: str, node: str, reason: object, now: int) -> None:
        run = self._run
        self._run = None
        if run is None:
            return
        run.set_attribute("diagnosis.outcome", outcome)
        run.set_attribute("diagnosis.finished", True)
        if reason is not None:
            run.set_attribute("diagnosis.reason_code", _value(reason))
        if node in self._workflow.fallbacks:
            code = str(_value(reason)) if reason is not None else outcome
            run.set_attribute(_ERROR_TYPE, code)
            run.set_status(Status(StatusCode.ERROR, code))
        run.end(end_time=now)

    def _common(self) -> dict[str, AttributeValue]:
        common: dict[str, AttributeValue] = {}
        if self._run_id is not None:
            common["diagnosis.run_id"] = self._run_id
        if self._session_id is not None:
            common[_CONVERSATION] = self._session_id
        return common

    def _effect_attributes(self, action: A) -> tuple[str, dict[str, AttributeValue]]:
        attributes = self._common()
        agent = getattr(action, "agent", None)
        position = self._workflow.position
        if agent is not None:
            node = str(_value(agent))
            attributes[_OPERATION] = "invoke_agent"
            attributes[_AGENT_NAME] = node
            attributes[_PROVIDER] = self._provider_for(node)
        else:
            node = "gatekeeper"
            attributes[_OPERATION] = "execute_tool"
            attributes[_TOOL_NAME] = node
            attributes[_TOOL_TYPE] = "function"
        attributes["diagnosis.node"] = node
        attributes[f"diagnosis.{position}"] = _value(getattr(action, position, 0))
        attributes["diagnosis.attempt"] = _value(getattr(action, "attempt", 1))
        return node, attributes

    def _node_of(self, action: A) -> str:
        agent = getattr(action, "agent", None)
        return "gatekeeper" if agent is None else str(_value(agent))

    def _provider_for(self, agent: str) -> str:
        names = self._provider_name
        if isinstance(names, str):
            return names
        if names is not None:
            name = names.get(agent)
            if isinstance(name, str) and name:
                return name
        return DEFAULT_PROVIDER_NAME

    def _event_attributes(self, event: E) -> dict[str, AttributeValue]:
        position = self._workflow.position
        attributes: dict[str, AttributeValue] = {
            "diagnosis.node": _value(getattr(event, "node", "")),
            "diagnosis.seq": _value(getattr(event, "seq", 0)),
            f"diagnosis.{position}": _value(getattr(event, position, 0)),
            "diagnosis.attempt": _value(getattr(event, "attempt", 1)),
            "diagnosis.status": _value(getattr(event, "status", "")),
        }
        for name in ("reason_code", "input_sha256"):
            value = getattr(event, name, None)
            if value is not None:
                attributes[f"diagnosis.{name}"] = _value(value)
        details = getattr(event, "details", None)
        for name in _DETAIL_FIELDS:
            value = getattr(details, name, None)
            if value is not None:
                attributes[f"diagnosis.details.{name}"] = _value(value)
        return attributes

    def _deactivate(self, effect: _Effect) -> None:
        token, effect.token = effect.token, None
        if token is not None:
            otel_context.detach(token)

    def _abandon_effect(self, why: str) -> None:
        effect, self._effect = self._effect, None
        if effect is None:
            return
        self._deactivate(effect)
        effect.span.set_status(Status(StatusCode.ERROR, "unfinished"))
        effect.span.set_attribute("diagnosis.unfinished", why)
        effect.span.end(end_time=effect.end_ns if effect.end_ns is not None else self._clock())


def _run_of(action: object) -> tuple[str | None, str | None]:
    """The run id and session id an action names (the gatekeeper call has no session)."""
    config = getattr(action, "config", None)
    if isinstance(config, RunConfig):
        return config.run_id, config.session_id
    run_id = getattr(action, "run_id", None)
    return (run_id if isinstance(run_id, str) else None), None


class OpenTelemetryObserver(_SpanObserver[InvokeAgent | CallGatekeeper, EffectResult, TraceEvent]):
    """A :data:`~diagnosis_core.DiagnosisObserver` that emits the chat run as spans (spec §14).

    ``tracer`` defaults to the global tracer provider's tracer for this
    module. ``record_text`` opts in to agent inputs, replies and error
    messages in span attributes (off: none of them is ever recorded).
    ``provider_name`` is the ``gen_ai.provider.name`` of the agent spans:
    one name, or a mapping from agent name to provider (see
    :func:`provider_names`); an agent it does not name gets
    :data:`DEFAULT_PROVIDER_NAME`. ``activate`` makes an effect's span current while it
    runs. ``clock`` (nanoseconds since the epoch, the SDK's own clock by
    default) times every span: it is read when a hook is called.
    """

    _workflow = _CHAT

    def __enter__(self) -> OpenTelemetryObserver:
        return self


class AiOpsOpenTelemetryObserver(
    _SpanObserver[InvokeAiOpsAgent, AgentReplied | AgentFailed, AiOpsTraceEvent]
):
    """The AIOps flow's observer: the same spans, ``diagnosis.step`` for the round (spec §14).

    The run span is ``invoke_workflow aiops``; the four agents are
    ``invoke_agent`` spans, the fallback a zero-duration span. Parameters as
    for :class:`OpenTelemetryObserver`.
    """

    _workflow = _AIOPS

    def __enter__(self) -> AiOpsOpenTelemetryObserver:
        return self
