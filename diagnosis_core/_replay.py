"""Replay scenarios: the conformance interface of spec §9.

A scenario scripts every effect of a run as JSON. :func:`load_scenario` checks
it strictly (every problem is a :class:`ScenarioError` naming the path),
:func:`replay` runs it through the synchronous driver and returns the
JSON-compatible result. The scripted doubles here raise exceptions the default
classifier knows (or, for ``unknown``, one it has never heard of).
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
from attrs import AttrsInstance

from ._config import DiagnosisConfig, RunConfig
from ._converter import to_wire
from ._drivers import run_diagnosis
from ._effects import Effects, Gatekeeper
from ._enums import AgentName
from ._errors import ConfigError, LedgerError, NonRetryableError, ScenarioError, ToolBlockedError
from ._facts import gatekeeper_fact
from ._json import JsonValue, canonical_json, describe_value
from ._machine import DiagnosisRequest, DiagnosisState
from ._payloads import ExecutorEvidence, HistoryMessage, Skill
from ._reference_gatekeeper import ReferenceGatekeeper, ToolLedger, ledger_from_records

__all__ = [
    "ERROR_KINDS",
    "Scenario",
    "ScriptedAgent",
    "ScriptedError",
    "ScriptedGatekeeper",
    "ScriptedGatekeeperEntry",
    "ScriptedResponse",
    "UnknownScriptedError",
    "config_from_scenario",
    "frozen_responses",
    "load_scenario",
    "load_tool_ledger",
    "replay",
    "replay_scenario",
    "scenario_effects",
    "scenario_request",
]

C = TypeVar("C", bound=AttrsInstance)
E = TypeVar("E", bound=enum.StrEnum)

_SURROGATE = re.compile("[\ud800-\udfff]")
ERROR_KINDS = ("retryable", "non_retryable", "tool_blocked", "unknown")
"""The ``error.kind`` values a scripted response may raise (spec §9)."""
_TOP_KEYS = frozenset(
    {"question", "run", "history", "skills", "config", "responses", "gatekeeper", "tool_ledger"}
)
_RUN_KEYS = frozenset({"run_id", "session_id", "metadata"})


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


@attrs.frozen
class ScriptedGatekeeperEntry:
    """One scripted gatekeeper call: a raw result (as JSON text), or an error."""

    result_json: str | None = None
    error_message: str | None = None


def frozen_responses(
    responses: Mapping[Any, Sequence[ScriptedResponse]],
) -> Mapping[Any, tuple[ScriptedResponse, ...]]:
    """A read-only copy of scripted responses per agent (tuples in a ``MappingProxyType``).

    A frozen scenario must not be changed through its ``responses`` mapping.
    """
    return MappingProxyType({agent: tuple(items) for agent, items in responses.items()})


@attrs.frozen
class Scenario:
    """A validated replay scenario (spec §9); ``responses`` is a read-only mapping."""

    question: str
    run: RunConfig
    history: tuple[HistoryMessage, ...]
    skills: tuple[Skill, ...]
    config: DiagnosisConfig
    responses: Mapping[AgentName, tuple[ScriptedResponse, ...]] = attrs.field(
        converter=frozen_responses
    )
    gatekeeper: tuple[ScriptedGatekeeperEntry, ...] = ()
    tool_ledger: ToolLedger | None = None


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


class ScriptedGatekeeper:
    """A :class:`Gatekeeper` that plays scripted entries; with none left it raises."""

    def __init__(self, entries: Sequence[ScriptedGatekeeperEntry]) -> None:
        self._entries = tuple(entries)
        self.calls = 0

    def __call__(self, run_id: str, executor_output: ExecutorEvidence, /) -> object:
        index = self.calls
        self.calls += 1
        if index >= len(self._entries):
            raise NonRetryableError("no scripted gatekeeper result left")
        entry = self._entries[index]
        if entry.result_json is None:
            raise NonRetryableError(entry.error_message or "scripted gatekeeper error")
        result: object = json.loads(entry.result_json)
        return result


# --- validation -----------------------------------------------------------------


def scenario_error(path: str, problem: str) -> ScenarioError:
    return ScenarioError(f"{path}: {problem}")


def expect_object(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise scenario_error(path, f"expected an object, got {_type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise scenario_error(path, f"keys must be strings, got {describe_value(key)}")
    return value


def expect_array(value: object, path: str) -> Sequence[object]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise scenario_error(path, f"expected an array, got {_type_name(value)}")
    return value


def expect_string(value: object, path: str, *, non_empty: bool = False, text: bool = True) -> str:
    """A string; request material (``text``) must also be valid Unicode text."""
    if not isinstance(value, str):
        raise scenario_error(path, f"expected a string, got {_type_name(value)}")
    if non_empty and not value:
        raise scenario_error(path, "expected a non-empty string")
    if text and _SURROGATE.search(value):
        raise scenario_error(path, "contains an unpaired surrogate")
    return value


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, Sequence):
        return "array"
    return type(value).__name__


def check_known_keys(value: Mapping[str, object], allowed: frozenset[str], path: str) -> None:
    for key in value:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise scenario_error(where, "unknown key")


def _json_text(value: object, path: str) -> str:
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise scenario_error(path, f"not a JSON value ({error})") from error


def _scenario_run_id(data: Mapping[str, object]) -> str:
    # Agent texts may hold lone surrogates (§9: they are model output), so encode
    # them as the trace hashes do instead of failing.
    digest = hashlib.sha256(_json_text(data, "$").encode("utf-8", "surrogatepass")).hexdigest()
    return f"run-{digest[:16]}"


def load_run_config(data: Mapping[str, object]) -> RunConfig:
    raw = data.get("run")
    run = expect_object(raw, "run") if raw is not None else {}
    check_known_keys(run, _RUN_KEYS, "run")
    run_id = (
        expect_string(run["run_id"], "run.run_id", non_empty=True)
        if run.get("run_id") is not None
        else _scenario_run_id(data)
    )
    session_id = (
        expect_string(run["session_id"], "run.session_id", non_empty=True)
        if run.get("session_id") is not None
        else run_id
    )
    metadata_raw = run.get("metadata")
    metadata = expect_object(metadata_raw, "run.metadata") if metadata_raw is not None else {}
    for key, value in metadata.items():
        expect_string(value, f"run.metadata.{key}")
    try:
        return RunConfig(run_id, session_id, dict(metadata))
    except ConfigError as error:
        field, _, problem = str(error).partition(": ")
        raise scenario_error(f"run.{field}", problem or str(error)) from error


def _load_history(data: Mapping[str, object]) -> tuple[HistoryMessage, ...]:
    raw = data.get("history")
    if raw is None:
        return ()
    items = []
    for index, item in enumerate(expect_array(raw, "history")):
        path = f"history[{index}]"
        entry = expect_object(item, path)
        for key in ("role", "content"):
            if key not in entry:
                raise scenario_error(f"{path}.{key}", "missing")
        items.append(
            HistoryMessage(
                expect_string(entry["role"], f"{path}.role"),
                expect_string(entry["content"], f"{path}.content"),
            )
        )
    return tuple(items)


def _load_skills(data: Mapping[str, object]) -> tuple[Skill, ...]:
    raw = data.get("skills")
    if raw is None:
        return ()
    items = []
    for index, item in enumerate(expect_array(raw, "skills")):
        path = f"skills[{index}]"
        entry = expect_object(item, path)
        for key in ("name", "description"):
            if key not in entry:
                raise scenario_error(f"{path}.{key}", "missing")
        items.append(
            Skill(
                expect_string(entry["name"], f"{path}.name"),
                expect_string(entry["description"], f"{path}.description"),
            )
        )
    return tuple(items)


def load_config_section(data: Mapping[str, object], config_class: type[C]) -> C:
    """The ``config`` object of a scenario as ``config_class`` (an ``attrs`` class).

    Shared by both workflows' loaders: absent or null means the defaults, unknown
    keys and values the class rejects are :class:`ScenarioError` naming the path.
    """
    raw = data.get("config")
    if raw is None:
        return config_class()
    config = expect_object(raw, "config")
    check_known_keys(config, frozenset(attrs.fields_dict(config_class)), "config")
    return config_from_scenario(config_class, config)


def config_from_scenario(cls: type[C], config: Mapping[str, object]) -> C:
    """Build the config class ``cls`` from a scenario's (key-checked) ``config`` object.

    ``null`` means absent. A :class:`ConfigError` becomes a :class:`ScenarioError`
    whose path names the field (``config.locale: expected one of …``) and
    whose ``__cause__`` is the ``ConfigError``.
    """
    values: dict[str, Any] = {key: value for key, value in config.items() if value is not None}
    try:
        return cls(**values)
    except ConfigError as error:
        field, _, problem = str(error).partition(": ")
        raise scenario_error(f"config.{field}", problem or str(error)) from error


def _present(entry: Mapping[str, object]) -> Mapping[str, object]:
    """``entry`` without its ``null`` values: null means absent (spec §9 v1.1)."""
    return {key: value for key, value in entry.items() if value is not None}


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
    entry = _present(entry)
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


def _load_gatekeeper(items: object) -> tuple[ScriptedGatekeeperEntry, ...]:
    entries = []
    for index, item in enumerate(expect_array(items, "gatekeeper")):
        path = f"gatekeeper[{index}]"
        entry = expect_object(item, path)
        check_known_keys(entry, frozenset({"result", "error"}), path)
        if entry.get("error") is None:
            # ``"result": null`` is a result (the gatekeeper returned null);
            # ``"error": null`` is absent.
            entry = {key: value for key, value in entry.items() if key != "error"}
        if ("result" in entry) == ("error" in entry):
            raise scenario_error(path, 'expected "result" or "error"')
        if "result" in entry:
            # The fact codec (spec §12.1): a JSON result the journal cannot
            # store (nested deeper than the limit, a surrogate pair …) is played
            # as the live driver would feed it — the ``unserializable``
            # stand-in, a GATEKEEPER_INVALID_RESULT status — not a
            # ScenarioError (§5: nesting up to the parser's limits is a status).
            _json_text(entry["result"], path)  # a scenario is JSON: NaN, a set … are errors
            fact = gatekeeper_fact(entry["result"])
            entries.append(ScriptedGatekeeperEntry(result_json=_json_text(fact, path)))
            continue
        error = expect_object(entry["error"], f"{path}.error")
        check_known_keys(error, frozenset({"kind", "message"}), f"{path}.error")
        message = error.get("message")
        text = "" if message is None else expect_string(message, f"{path}.error.message")
        entries.append(ScriptedGatekeeperEntry(error_message=text))
    return tuple(entries)


def load_scenario(data: object) -> Scenario:
    """Validate a scenario document strictly; every problem names its path."""
    top = expect_object(data, "$")
    check_known_keys(top, _TOP_KEYS, "")
    if "question" not in top:
        raise scenario_error("question", "missing")
    question = expect_string(top["question"], "question", non_empty=True)
    if top.get("gatekeeper") is not None and top.get("tool_ledger") is not None:
        raise scenario_error("$", 'give "gatekeeper" or "tool_ledger", not both')
    ledger: ToolLedger | None = None
    gatekeeper: tuple[ScriptedGatekeeperEntry, ...] = ()
    if top.get("tool_ledger") is not None:
        ledger = load_tool_ledger(top["tool_ledger"])
    elif top.get("gatekeeper") is not None:
        gatekeeper = _load_gatekeeper(top["gatekeeper"])
    return Scenario(
        question=question,
        run=load_run_config(top),
        history=_load_history(top),
        skills=_load_skills(top),
        config=load_config_section(top, DiagnosisConfig),
        responses=load_responses_section(top, AgentName),
        gatekeeper=gatekeeper,
        tool_ledger=ledger,
    )


# --- running ---------------------------------------------------------------------


def scenario_request(scenario: Scenario) -> DiagnosisRequest:
    """The :class:`DiagnosisRequest` a scenario describes."""
    return DiagnosisRequest(
        question=scenario.question,
        run=scenario.run,
        history=scenario.history,
        skills=scenario.skills,
        config=scenario.config,
    )


def scenario_effects(scenario: Scenario) -> Effects:
    """Fresh scripted effects for one run of ``scenario``."""
    gatekeeper: Gatekeeper = (
        ReferenceGatekeeper(scenario.tool_ledger)
        if scenario.tool_ledger is not None
        else ScriptedGatekeeper(scenario.gatekeeper)
    )
    agents = {agent: ScriptedAgent(scenario.responses[agent]) for agent in AgentName}
    return Effects(
        planner=agents[AgentName.PLANNER],
        executor=agents[AgentName.EXECUTOR],
        verifier=agents[AgentName.VERIFIER],
        composer=agents[AgentName.COMPOSER],
        gatekeeper=gatekeeper,
    )


def replay_scenario(scenario: Scenario) -> DiagnosisState:
    """Run a validated scenario through the synchronous driver; the finished state."""
    return run_diagnosis(scenario_request(scenario), scenario_effects(scenario))


def replay(scenario: Mapping[str, Any]) -> dict[str, JsonValue]:
    """Run a scenario document and return the result object of spec §9.

    Raises :class:`ScenarioError` (a ``ValueError``) naming the path when the
    scenario is malformed. The same scenario always gives the same result.
    """
    state = replay_scenario(load_scenario(scenario))
    wire = to_wire(state.result)
    assert isinstance(wire, dict)
    return wire
