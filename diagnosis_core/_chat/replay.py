"""Replay scenarios: the conformance interface of spec §9.

A scenario scripts every effect of a run as JSON. :func:`load_scenario` checks
it strictly (every problem is a :class:`ScenarioError` naming the path),
:func:`replay` runs it through the synchronous driver and returns the
JSON-compatible result. The scripted agents are the kernel's
(``_kernel/scenario/scripted.py``); the scripted gatekeeper is this workflow's. The
request part of a scenario is read by the request codec
(``request_codec.py``), the same reader a journal's request goes through.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._kernel.errors import NonRetryableError
from .._kernel.machine.config import RunConfig
from .._kernel.scenario.document import (
    SCENARIO,
    _json_text,
    check_known_keys,
    expect_array,
    expect_object,
    expect_string,
    scenario_error,
)
from .._kernel.scenario.scripted import (
    ScriptedResponse,
    frozen_responses,
    load_responses_section,
    load_tool_ledger,
    scripted_agents,
)
from .._kernel.tools.ledger import ToolLedger
from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import JsonValue
from .config import DiagnosisConfig
from .drivers import run_diagnosis
from .effects import Effects, Gatekeeper
from .enums import AgentName
from .facts import gatekeeper_fact
from .machine import DiagnosisRequest, DiagnosisState
from .payloads import ExecutorEvidence, HistoryMessage, Skill
from .reference_gatekeeper import ReferenceGatekeeper
from .request_codec import request_from_document

__all__ = [
    "Scenario",
    "ScriptedGatekeeper",
    "ScriptedGatekeeperEntry",
    "load_scenario",
    "replay",
    "replay_scenario",
    "scenario_effects",
    "scenario_request",
]

_TOP_KEYS = frozenset(
    {"question", "run", "history", "skills", "config", "responses", "gatekeeper", "tool_ledger"}
)


@attrs.frozen
class ScriptedGatekeeperEntry:
    """One scripted gatekeeper call: a raw result (as JSON text), or an error."""

    result_json: str | None = None
    error_message: str | None = None


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
        return json.loads(entry.result_json)


# --- validation -----------------------------------------------------------------


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
    ledger = None if top.get("tool_ledger") is None else load_tool_ledger(top["tool_ledger"])
    gatekeeper = () if top.get("gatekeeper") is None else _load_gatekeeper(top["gatekeeper"])
    request = request_from_document(top, question, SCENARIO)
    return Scenario(
        question=question,
        run=request.run,
        history=request.history,
        skills=request.skills,
        config=request.config,
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
    return Effects(**scripted_agents(scenario.responses, AgentName), gatekeeper=gatekeeper)


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
