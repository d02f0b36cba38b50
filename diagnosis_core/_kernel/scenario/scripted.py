"""Scripted doubles for §9 replays, and the loaders of their scenario sections.

A scenario scripts every agent of a run as JSON; these doubles play the
script back. They raise exceptions the default classifier knows (or, for
``unknown``, one it has never heard of), so a replay exercises the same
failure classification as a live run. Both workflows' scenario loaders use
the section loaders here (``responses``, ``tool_ledger``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from ..errors import LedgerError, NonRetryableError, ScenarioError, ToolBlockedError
from ..machine.config import RunConfig
from ..tools.ledger import ToolLedger, ledger_from_records
from ..wire.json import describe_value
from .document import check_known_keys, expect_array, expect_object, expect_string, scenario_error

__all__ = [
    "ERROR_KINDS",
    "ScriptedAgent",
    "ScriptedError",
    "ScriptedResponse",
    "UnknownScriptedError",
    "frozen_responses",
    "load_responses_section",
    "load_scripted_response",
    "load_tool_ledger",
    "scripted_agents",
]

E = TypeVar("E", bound=enum.StrEnum)


ERROR_KINDS = ("retryable", "non_retryable", "tool_blocked", "unknown")
"""The ``error.kind`` values a scripted response may raise (spec §9)."""


class ScriptedError(Exception):
    """A scripted agent failure of kind ``retryable`` (it carries ``retryable = True``)."""

    retryable = True


class UnknownScriptedError(Exception):
    """A scripted failure of kind ``unknown``: an exception no classifier knows."""


@attrs.frozen
class ScriptedResponse:
    """One scripted agent response: ``text``, or an error of ``error_kind``."""

    text: str | None = None
    error_kind: str | None = None
    error_message: str = ""

    def perform(self) -> str:
        """Return the text, or raise the scripted error."""
        if self.text is not None:
            return self.text
        message = self.error_message
        if self.error_kind == "retryable":
            raise ScriptedError(message)
        if self.error_kind == "tool_blocked":
            raise ToolBlockedError(message)
        if self.error_kind == "unknown":
            raise UnknownScriptedError(message)
        raise NonRetryableError(message)


def frozen_responses(
    responses: Mapping[Any, Sequence[ScriptedResponse]],
) -> Mapping[Any, tuple[ScriptedResponse, ...]]:
    """A read-only copy of scripted responses per agent (tuples in a ``MappingProxyType``).

    A frozen scenario must not be changed through its ``responses`` mapping.
    """
    return MappingProxyType({agent: tuple(items) for agent, items in responses.items()})


class ScriptedAgent:
    """An :class:`AgentInvoker` that plays scripted responses in call order.

    A call with nothing left behaves as a ``non_retryable`` error. Every input
    string it receives is kept in :attr:`inputs`.
    """

    def __init__(self, responses: Sequence[ScriptedResponse]) -> None:
        self._responses = tuple(responses)
        self.inputs: list[str] = []

    def __call__(self, input: str, config: RunConfig, /) -> str:
        index = len(self.inputs)
        self.inputs.append(input)
        if index >= len(self._responses):
            raise NonRetryableError("no scripted response left")
        return self._responses[index].perform()


def scripted_agents(
    responses: Mapping[E, Sequence[ScriptedResponse]], agents: type[E]
) -> dict[str, Any]:  # Any: spread into an effects class, whose other fields differ
    """Fresh scripted agents for one run, keyed by each agent's value: its effects field."""
    return {agent.value: ScriptedAgent(responses[agent]) for agent in agents}


def load_tool_ledger(raw: object) -> ToolLedger:
    """A scenario's ``tool_ledger`` (spec §9 v1.1), for the chat and AIOps replays.

    Each entry is a §13 ledger entry: ``invocation_id``, ``tool_name``,
    ``success`` and ``output``, plus optionally the audit fields ``input``
    (any JSON), ``error`` (``{type, message}`` strings) and ``duration_ms``
    (a number ≥ 0), which are *kept* in the ledger; ``null`` means absent.
    The rules are the ledger's own (:func:`ledger_from_records`), so a
    scenario, a recorder and a journal read entries alike. Any other key is
    a :class:`ScenarioError`; every :class:`LedgerError` (missing field,
    duplicate id, wrong type) becomes one naming the path, with the
    ``LedgerError`` as its ``__cause__``.
    """
    records = expect_array(raw, "tool_ledger")
    for index, record in enumerate(records):
        expect_object(record, f"tool_ledger[{index}]")
    try:
        return ledger_from_records(list(records))
    except LedgerError as error:
        raise ScenarioError(str(error)) from error


def load_scripted_response(item: object, path: str) -> ScriptedResponse:
    entry = expect_object(item, path)
    check_known_keys(entry, frozenset({"text", "error"}), path)
    entry = {key: value for key, value in entry.items() if value is not None}  # null: absent
    if ("text" in entry) == ("error" in entry):
        raise scenario_error(path, 'expected "text" or "error"')
    if "text" in entry:
        # Agent text is scripted *model output*: anything goes, the parsers judge it.
        return ScriptedResponse(text=expect_string(entry["text"], f"{path}.text", text=False))
    error = expect_object(entry["error"], f"{path}.error")
    check_known_keys(error, frozenset({"kind", "message"}), f"{path}.error")
    if "kind" not in error:
        raise scenario_error(f"{path}.error.kind", "missing")
    kind = error["kind"]
    if kind not in ERROR_KINDS:
        allowed = ", ".join(repr(k) for k in ERROR_KINDS)
        raise scenario_error(
            f"{path}.error.kind", f"expected one of {allowed}, got {describe_value(kind)}"
        )
    message = error.get("message")
    text = "" if message is None else expect_string(message, f"{path}.error.message")
    return ScriptedResponse(error_kind=str(kind), error_message=text)


def load_responses_section(
    data: Mapping[str, object], agents: type[E]
) -> dict[E, tuple[ScriptedResponse, ...]]:
    """The scripted ``responses`` of a scenario, one tuple per agent of ``agents``.

    Shared by both workflows' loaders; keys other than the agents' wire names
    are a :class:`ScenarioError` naming the path.
    """
    raw = data.get("responses")
    responses = expect_object(raw, "responses") if raw is not None else {}
    check_known_keys(responses, frozenset(agent.value for agent in agents), "responses")
    loaded: dict[E, tuple[ScriptedResponse, ...]] = {}
    for agent in agents:
        items = responses.get(agent.value)
        path = f"responses.{agent.value}"
        entries = expect_array(items, path) if items is not None else ()
        loaded[agent] = tuple(
            load_scripted_response(item, f"{path}[{index}]") for index, item in enumerate(entries)
        )
    return loaded
