"""The AIOps workflow's names: a supervisor, a planner, an executor and a reporter (spec §10).

The workflow itself is the private package ``_aiops``, laid out module for module as
the chat workflow's ``_chat`` is, on the same kernel: the strict JSON reader, the
converter, the errors, the routing-table drawing, the failure classifier and the driver
loop are shared; the machine, its payloads, routing table, rules, renderers and replay
format are its own. Its run journal (``aiops_journal_v2``) is the chat journal's kernel
with its own call names (``AiOpsJournal``, ``run_aiops(..., sink=...)``; ``fold_journal``
and ``journal_status`` of :mod:`diagnosis_core.journal` fold it), described to the
kernel by one value, ``AIOPS_WORKFLOW``. ``import diagnosis_core`` does not import this
namespace; import it explicitly (``from diagnosis_core.aiops import run_aiops``).
"""

from __future__ import annotations

from ._aiops import AIOPS_NAMES
from ._aiops.alertmanager import AlertmanagerPayloadError, alerts_from_alertmanager
from ._aiops.config import AiOpsConfig
from ._aiops.drivers import (
    AiOpsEffects,
    AiOpsObserver,
    AsyncAiOpsEffects,
    aiter_aiops,
    arun_aiops,
    iter_aiops,
    run_aiops,
)
from ._aiops.enums import AiOpsMode, AiOpsOutcome, AiOpsReasonCode
from ._aiops.machine import AiOpsRequest, AiOpsResult, AiOpsState
from ._aiops.rendering import render_aiops_report
from ._aiops.replay import (
    AiOpsScenario,
    aiops_replay_output,
    aiops_scenario_effects,
    aiops_scenario_request,
    load_aiops_scenario,
    replay_aiops,
    replay_aiops_scenario,
)
from ._aiops.rules import (
    AIOPS_RULES,
    AiOpsRule,
    AiOpsRuleEvaluation,
    LedgerSource,
    evaluate_aiops_report,
    evaluate_aiops_run,
)
from ._aiops.trace import AiOpsTraceEvent
from ._aiops.workflow import aiops_output
from ._kernel.public import publish_homes

__all__ = [
    "AIOPS_RULES",
    "AiOpsConfig",
    "AiOpsEffects",
    "AiOpsMode",
    "AiOpsObserver",
    "AiOpsOutcome",
    "AiOpsReasonCode",
    "AiOpsRequest",
    "AiOpsResult",
    "AiOpsRule",
    "AiOpsRuleEvaluation",
    "AiOpsScenario",
    "AiOpsState",
    "AiOpsTraceEvent",
    "AlertmanagerPayloadError",
    "AsyncAiOpsEffects",
    "LedgerSource",
    "aiops_output",
    "aiops_replay_output",
    "aiops_scenario_effects",
    "aiops_scenario_request",
    "aiter_aiops",
    "alerts_from_alertmanager",
    "arun_aiops",
    "evaluate_aiops_report",
    "evaluate_aiops_run",
    "iter_aiops",
    "load_aiops_scenario",
    "render_aiops_report",
    "replay_aiops",
    "replay_aiops_scenario",
    "run_aiops",
]

# This namespace loads the whole workflow: the classes the shared namespaces serve from
# it name their namespace from now on, however they are reached (``_kernel/public.py``).
publish_homes(AIOPS_NAMES)
