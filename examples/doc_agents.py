"""Scripted stand-ins for the agents, model client and gatekeeper the documentation uses.

A code block of the README or of ``docs/`` that needs something it does not define — an
executor agent, a gatekeeper service, a model client — imports it from here::

    from examples.doc_agents import executor, my_gatekeeper

``pip install -e .`` from a clone puts the clone's root on ``sys.path`` (the editable
install's ``.pth`` names it), so that import works from any folder: paste a block into a
new file anywhere and run it. In production each of these is yours — a real model, your
citation-checking service — and nothing else in the block changes.

The chat stand-ins reply what ``examples/payment_timeout.json`` scripts (its plan selects
no skill: a block's request carries no skill catalog); the AIOps ones play
``examples/aiops_payload_targeted.json``. The chat ones are stateless — every call gives
the same reply — so a block may call them as often as it likes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.tools as dct

__all__ = [
    "AIOPS",
    "COMPOSER_JSON",
    "COMPOSER_PROMPT",
    "EVIDENCE_JSON",
    "EXAMPLES",
    "PAYMENT",
    "PLANNER_PROMPT",
    "PLAN_JSON",
    "VERIFIER_JSON",
    "VERIFIER_PROMPT",
    "aiops_ledger",
    "composer",
    "executor",
    "my_gatekeeper",
    "my_llm",
    "my_tool_using_executor",
    "my_tools",
    "payment_effects",
    "scripted_aiops_effects",
    "verifier",
]

#: This folder: the bundled examples, wherever the block that imports this runs.
EXAMPLES = Path(__file__).resolve().parent
PAYMENT = EXAMPLES / "payment_timeout.json"
AIOPS = EXAMPLES / "aiops_payload_targeted.json"

PLANNER_PROMPT = "You plan incident investigations. Reply with a planner_plan JSON object only."
VERIFIER_PROMPT = "You verify claims against the evidence. Reply with a verifier_output JSON."
COMPOSER_PROMPT = "You write the answer from verified facts. Reply with a composer_output JSON."


def _document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _reply(agent: str) -> str:
    text: str = _document(PAYMENT)["responses"][agent][0]["text"]
    if agent == "planner":
        plan = json.loads(text.removeprefix("```json").removesuffix("```"))
        return json.dumps({**plan, "selected_skill": None})
    return text


#: The payloads the example's agents reply with (a ``planner_plan``, an
#: ``executor_evidence_v2``, a ``verifier_output``, a ``composer_output``).
PLAN_JSON = _reply("planner")
EVIDENCE_JSON = _reply("executor")
VERIFIER_JSON = _reply("verifier")
COMPOSER_JSON = _reply("composer")

_REPLIES = {
    PLANNER_PROMPT: PLAN_JSON,
    VERIFIER_PROMPT: VERIFIER_JSON,
    COMPOSER_PROMPT: COMPOSER_JSON,
}
_GATEKEEPER_RESULT: dict[str, Any] = _document(PAYMENT)["gatekeeper"][0]["result"]


def my_llm(prompt: str, input: str) -> str:
    """A model client, ``(system prompt, input) -> reply``: the example's reply for that prompt."""
    return _REPLIES[prompt]


def executor(input: str, config: dc.RunConfig) -> str:
    """A tool-using executor agent: the example's evidence, citing its tool calls."""
    return EVIDENCE_JSON


#: The same executor, under the name the Embedding page gives it.
my_tool_using_executor = executor


def verifier(input: str, config: dc.RunConfig) -> str:
    """The verifier agent: the example's verdict."""
    return VERIFIER_JSON


def composer(input: str, config: dc.RunConfig) -> str:
    """The composer agent: the example's answer."""
    return COMPOSER_JSON


def my_gatekeeper(run_id: str, executor_output: dc.ExecutorEvidence) -> Mapping[str, object]:
    """The citation checker (a service in production): the example's raw §6.1 result."""
    result: dict[str, object] = copy.deepcopy(_GATEKEEPER_RESULT)
    return result


def payment_effects() -> dc.Effects:
    """Fresh scripted effects of ``examples/payment_timeout.json`` (each call plays it anew)."""
    return dc.scenario_effects(dc.load_scenario(_document(PAYMENT)))


def scripted_aiops_effects() -> dca.AiOpsEffects:
    """Fresh scripted agents of ``examples/aiops_payload_targeted.json``."""
    return dca.aiops_scenario_effects(dca.load_aiops_scenario(_document(AIOPS)))


def aiops_ledger() -> dc.ToolLedger:
    """The tool ledger of the AIOps example's tool calls."""
    return dca.load_aiops_scenario(_document(AIOPS)).tool_ledger


def _query_logs(service: str) -> dict[str, object]:
    return {"items": [{"ts": "10:00:12",
                       "message": f"{service}: timeout waiting for connection from pool"}]}


my_tools: list[dct.Tool] = [
    dct.Tool(
        dct.ToolSpec(
            "query_logs", "Recent error log lines of a service.",
            {"type": "object", "properties": {"service": {"type": "string"}},
             "required": ["service"]},
        ),
        _query_logs,
    ),
]
"""The executor loop's tools (yours query your backends): one log tool on canned lines."""
