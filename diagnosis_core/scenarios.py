"""Replay scenarios (spec §9): the conformance interface, and the scripted doubles behind it.

A scenario scripts every effect of a run as JSON. :func:`load_scenario` checks
it strictly (every problem a :class:`ScenarioError` naming the path) and
:func:`replay` runs it and returns the §9 result object; the scripted doubles
(:class:`ScriptedAgent`, :class:`ScriptedGatekeeper`, :class:`ScriptedResponse`)
play a script back, raising the failures the default classifier knows.
:func:`parse_document_text` reads a scenario's or journal's text strictly, as
the command line and the conformance kit do.
"""

from __future__ import annotations

from ._chat.replay import (
    Scenario,
    ScriptedGatekeeper,
    ScriptedGatekeeperEntry,
    load_scenario,
    replay,
    replay_scenario,
    scenario_effects,
    scenario_request,
)
from ._kernel.errors import (
    ScenarioError,
)
from ._kernel.public import publish as _publish
from ._kernel.scenario.document import (
    parse_document_text,
)
from ._kernel.scenario.scripted import (
    ERROR_KINDS,
    ScriptedAgent,
    ScriptedError,
    ScriptedResponse,
    UnknownScriptedError,
)

__all__ = [
    "ERROR_KINDS",
    "Scenario",
    "ScenarioError",
    "ScriptedAgent",
    "ScriptedError",
    "ScriptedGatekeeper",
    "ScriptedGatekeeperEntry",
    "ScriptedResponse",
    "UnknownScriptedError",
    "load_scenario",
    "parse_document_text",
    "replay",
    "replay_scenario",
    "scenario_effects",
    "scenario_request",
]

# Public classes name this namespace, not the private module defining them.
_publish(__name__, globals(), __all__)
