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

# The enum and payload modules are public in full: their ``__all__`` is the
# list (star imports re-export exactly it, and mypy sees each name), added to
# this namespace's ``__all__`` below instead of being written out a second time.
from ._aiops import enums as _enums
from ._aiops import payloads as _payloads
from ._aiops.alertmanager import (
    AlertmanagerPayloadError,
    alerts_from_alertmanager,
)
from ._aiops.config import (
    AiOpsConfig,
)
from ._aiops.drivers import (
    AiOpsEffects,
    AiOpsObserver,
    AsyncAiOpsEffects,
    aiter_aiops,
    arun_aiops,
    check_aiops_effects,
    check_aiops_request,
    evaluate_aiops_run,
    iter_aiops,
    perform_aiops_effect,
    perform_aiops_effect_async,
    run_aiops,
)
from ._aiops.enums import *  # noqa: F403
from ._aiops.executor_loop import aiops_executor_agent, async_aiops_executor_agent
from ._aiops.grounding import aiops_grounding_schema
from ._aiops.journal import (
    AiOpsJournal,
    AiOpsJournalRecorder,
    AiOpsJournalStatus,
    ListAiOpsJournalSink,
    aiops_expected_call,
    aiops_request_to_wire,
)
from ._aiops.journal_replay import (
    aiops_journal_ledger,
    aiops_journal_to_scenario,
    replay_aiops_journal,
)
from ._aiops.machine import (
    AiOpsAction,
    AiOpsFinished,
    AiOpsRequest,
    AiOpsResult,
    AiOpsState,
    InvokeAiOpsAgent,
    advance_aiops,
    next_aiops_action,
    start_aiops,
)
from ._aiops.parsing import (
    parse_aiops_executor_output,
    parse_aiops_plan,
    parse_aiops_report,
    parse_supervisor_decision,
)
from ._aiops.payloads import *  # noqa: F403
from ._aiops.rendering import render_aiops_report
from ._aiops.replay import (
    AiOpsScenario,
    aiops_output,
    aiops_replay_output,
    aiops_scenario_effects,
    aiops_scenario_request,
    load_aiops_scenario,
    replay_aiops,
    replay_aiops_scenario,
)
from ._aiops.routing import (
    AIOPS_ROUTING_TABLE,
    AiOpsRoute,
)
from ._aiops.rules import (
    AIOPS_RULES,
    AiOpsRule,
    AiOpsRuleEvaluation,
    LedgerSource,
    evaluate_aiops_report,
)
from ._aiops.schema import (
    AIOPS_SCHEMA_NAMES,
    aiops_json_schema,
)
from ._aiops.trace import (
    AiOpsTraceEvent,
)
from ._aiops.workflow import (
    AIOPS_WORKFLOW,
)

__all__ = [
    "AIOPS_ROUTING_TABLE",
    "AIOPS_RULES",
    "AIOPS_SCHEMA_NAMES",
    "AIOPS_WORKFLOW",
    "AiOpsAction",
    "AiOpsConfig",
    "AiOpsEffects",
    "AiOpsFinished",
    "AiOpsJournal",
    "AiOpsJournalRecorder",
    "AiOpsJournalStatus",
    "AiOpsObserver",
    "AiOpsRequest",
    "AiOpsResult",
    "AiOpsRoute",
    "AiOpsRule",
    "AiOpsRuleEvaluation",
    "AiOpsScenario",
    "AiOpsState",
    "AiOpsTraceEvent",
    "AlertmanagerPayloadError",
    "AsyncAiOpsEffects",
    "InvokeAiOpsAgent",
    "LedgerSource",
    "ListAiOpsJournalSink",
    "advance_aiops",
    "aiops_executor_agent",
    "aiops_expected_call",
    "aiops_grounding_schema",
    "aiops_journal_ledger",
    "aiops_journal_to_scenario",
    "aiops_json_schema",
    "aiops_output",
    "aiops_replay_output",
    "aiops_request_to_wire",
    "aiops_scenario_effects",
    "aiops_scenario_request",
    "aiter_aiops",
    "alerts_from_alertmanager",
    "arun_aiops",
    "async_aiops_executor_agent",
    "check_aiops_effects",
    "check_aiops_request",
    "evaluate_aiops_report",
    "evaluate_aiops_run",
    "iter_aiops",
    "load_aiops_scenario",
    "next_aiops_action",
    "parse_aiops_executor_output",
    "parse_aiops_plan",
    "parse_aiops_report",
    "parse_supervisor_decision",
    "perform_aiops_effect",
    "perform_aiops_effect_async",
    "render_aiops_report",
    "replay_aiops",
    "replay_aiops_journal",
    "replay_aiops_scenario",
    "run_aiops",
    "start_aiops",
]
__all__ += _enums.__all__
__all__ += _payloads.__all__
