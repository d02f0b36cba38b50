"""Hypothesis strategies, test doubles and invariant checks for diagnosis_core users.

Install with the ``testing`` extra (in the checkout: ``pip install -e '.[testing]'``).
Everything here is deterministic given Hypothesis' choices: no clock, no
global random state.

* **Payload values** (parse-valid): :func:`planner_plans` (consistent with a
  skill catalog), :func:`executor_evidences`, :func:`verifier_outputs`
  (referring to given claim ids), :func:`composer_outputs` (citing allowed
  ids), and the request material around them.
* **Texts**: :func:`payload_texts` encodes a value the way a model might;
  :func:`adversarial_texts` breaks it (mutated fields, wrong types, fences,
  duplicate keys, surrogates, huge and deep input, random bytes).
* **Gatekeeper**: consistent, contradictory, malformed and hostile raw
  results for an executor output; :func:`ledger_cases` and
  :func:`tool_ledger_records` for the reference gatekeeper.
* **Whole runs**: :func:`scenarios` (spec §9 documents),
  :func:`effect_scripts` (Python doubles that may raise anything) and
  :func:`planted_scenarios` (canaries for the information-flow invariant).
* **Doubles**: scripted, fake and recording effects, sync and async (the
  scenario doubles, ``ScriptedAgent`` and its kin, are in
  :mod:`diagnosis_core.scenarios`).
* **Checks**: :func:`run_invariant_violations` / :func:`assert_run_invariants`
  (spec §10 invariants 1, 3, 4, 5) and :meth:`PlantedScenario.leaks`
  (invariant 2).
"""

from __future__ import annotations

try:
    import hypothesis as _hypothesis  # noqa: F401 - fail early with a helpful message
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "diagnosis_core.testing needs Hypothesis: install the testing extra "
        "(in the diagnosis_core checkout: pip install -e '.[testing]')"
    ) from error

from ._doubles import (
    AsyncEffectsRecorder,
    AsyncFakeGatekeeper,
    AsyncRecordingGatekeeper,
    AsyncRecordingInvoker,
    AsyncScriptedInvoker,
    EffectsRecorder,
    FakeGatekeeper,
    RecordingGatekeeper,
    RecordingInvoker,
    ScriptedInvoker,
    passing_gatekeeper,
    scripted_effects,
)
from ._invariants import assert_run_invariants, run_invariant_violations
from ._results import (
    LedgerCase,
    contradictory_gatekeeper_results,
    gatekeeper_raw_results,
    gatekeeper_results,
    hostile_gatekeeper_factories,
    hostile_gatekeeper_values,
    ledger_cases,
    malformed_gatekeeper_results,
    tool_ledger_records,
)
from ._scenarios import (
    PLANT_SINKS,
    EffectScript,
    Leak,
    PlantedScenario,
    agent_exceptions,
    effect_scripts,
    planted_scenarios,
    scenarios,
    unknown_exceptions,
)
from ._texts import (
    adversarial_texts,
    json_document_texts,
    mutated_documents,
    payload_documents,
    payload_texts,
    random_garbage_texts,
)
from ._values import (
    claims,
    composer_outputs,
    diagnosis_configs,
    diagnosis_requests,
    executor_evidences,
    gatekeeper_result_values,
    identifiers,
    json_values,
    planner_plans,
    skill_catalogs,
    texts,
    tool_names,
    verifier_outputs,
)

__all__ = [
    "PLANT_SINKS",
    "AsyncEffectsRecorder",
    "AsyncFakeGatekeeper",
    "AsyncRecordingGatekeeper",
    "AsyncRecordingInvoker",
    "AsyncScriptedInvoker",
    "EffectScript",
    "EffectsRecorder",
    "FakeGatekeeper",
    "Leak",
    "LedgerCase",
    "PlantedScenario",
    "RecordingGatekeeper",
    "RecordingInvoker",
    "ScriptedInvoker",
    "adversarial_texts",
    "agent_exceptions",
    "assert_run_invariants",
    "claims",
    "composer_outputs",
    "contradictory_gatekeeper_results",
    "diagnosis_configs",
    "diagnosis_requests",
    "effect_scripts",
    "executor_evidences",
    "gatekeeper_raw_results",
    "gatekeeper_result_values",
    "gatekeeper_results",
    "hostile_gatekeeper_factories",
    "hostile_gatekeeper_values",
    "identifiers",
    "json_document_texts",
    "json_values",
    "ledger_cases",
    "malformed_gatekeeper_results",
    "mutated_documents",
    "passing_gatekeeper",
    "payload_documents",
    "payload_texts",
    "planner_plans",
    "planted_scenarios",
    "random_garbage_texts",
    "run_invariant_violations",
    "scenarios",
    "scripted_effects",
    "skill_catalogs",
    "texts",
    "tool_ledger_records",
    "tool_names",
    "unknown_exceptions",
    "verifier_outputs",
]
