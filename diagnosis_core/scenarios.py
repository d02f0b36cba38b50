"""Scripted doubles (spec §9): the effects a replay scenario plays back.

A scenario scripts every effect of a run as JSON; the host's
:func:`diagnosis_core.load_scenario` checks it and :func:`diagnosis_core.replay`
runs it. The doubles behind them are here, for a test that scripts a run by hand:
:class:`ScriptedAgent` and :class:`ScriptedGatekeeper` play a script back
(:class:`ScriptedResponse`, :class:`ScriptedGatekeeperEntry`), raising a
failure of each kind of :data:`ERROR_KINDS` for the failure classifier;
:func:`scenario_effects` builds a scenario's effects from them (the top level
re-exports it for the host).
:func:`parse_document_text` reads a scenario's or journal's text strictly, as
the command line and the conformance kit do.
"""

from __future__ import annotations

from ._chat.replay import (
    ScriptedGatekeeper,
    ScriptedGatekeeperEntry,
    scenario_effects,
)
from ._kernel.scenario.document import (
    parse_document_text,
)
from ._kernel.scenario.scripted import (
    ERROR_KINDS,
    ScriptedAgent,
    ScriptedResponse,
)

__all__ = [
    "ERROR_KINDS",
    "ScriptedAgent",
    "ScriptedGatekeeper",
    "ScriptedGatekeeperEntry",
    "ScriptedResponse",
    "parse_document_text",
    "scenario_effects",
]
