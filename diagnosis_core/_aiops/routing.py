"""The routing table of the AIOps flow, as data (spec §11, in the style of §7).

Everything that decides where an AIOps run goes next lives here: a frozen
tuple of rows, read by :mod:`diagnosis_core._aiops.machine` and drawn by
:func:`aiops_routing_mermaid`. For each node the rows are tried in order and
the first whose condition holds wins. ``L = technical_retry_limit``.

============ ================================================= ==========================
after        condition                                         next
============ ================================================= ==========================
start        —                                                 supervisor
supervisor   retryable failure or invalid output, retries < L  supervisor (same input)
supervisor   other failure                                     fallback (SUPERVISOR_FAILED)
supervisor   FINISH                                            reporter
supervisor   same agent 3× in a row without new invocations    fallback (NO_PROGRESS)
supervisor   last step of the budget, not FINISH               fallback (STEP_BUDGET_EXHAUSTED)
supervisor   planner_agent                                     planner
supervisor   executor_agent                                    executor
planner      COMPLETED                                         supervisor
planner      retryable failure or invalid output, retries < L  planner (same input)
planner      otherwise                                         fallback (PLANNER_FAILED)
executor     COMPLETED                                         supervisor
executor     any failure (never retried: tools have effects)   fallback (EXECUTOR_*)
reporter     COMPLETED                                         END (REPORTED)
reporter     retryable failure or invalid output, retries < L  reporter (same input)
reporter     otherwise                                         fallback (REPORTER_FAILED)
fallback     —                                                 END (FALLBACK)
============ ================================================= ==========================
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from types import MappingProxyType

import attrs

from .._kernel.enums import NodeStatus
from .._kernel.machine.tables import (
    Router,
    RouteRow,
    StatusRoutingFacts,
    failed,
    mermaid_flowchart,
    status_predicates,
)
from .config import NO_PROGRESS_REPEATS
from .enums import AiOpsNode, AiOpsReasonCode, SupervisorChoice

__all__ = [
    "AIOPS_ROUTING_TABLE",
    "AiOpsCondition",
    "AiOpsRoute",
    "AiOpsRoutingFacts",
    "aiops_routing_mermaid",
    "choose_aiops_route",
]


@attrs.frozen
class AiOpsRoutingFacts(StatusRoutingFacts):
    """Everything an AIOps routing condition may look at, gathered by the machine.

    ``status`` and ``retries_left`` as in :class:`~diagnosis_core.machine.RoutingFacts`
    (retries are counted per call here), and:

    Attributes:
        choice: the supervisor's ``next`` (supervisor node, when COMPLETED).
        last_step: whether this supervisor decision used the last step of the budget.
        repeats: how many times in a row the chosen agent has now been chosen
            with no new tool invocation id reported in between.
    """

    choice: SupervisorChoice | None = None
    last_step: bool = False
    repeats: int = 0


class AiOpsCondition(enum.StrEnum):
    """A named routing condition; its value is the label drawn on the graph."""

    ALWAYS = "always"
    COMPLETED = "COMPLETED"
    RETRY_LEFT = "retryable failure, retries left"
    ANY_FAILURE = "any failure"
    OTHER_FAILURE = "other failure"
    OTHERWISE = "otherwise"
    FINISH = "FINISH"
    NO_PROGRESS = "same agent 3x without new invocations"
    BUDGET_EXHAUSTED = "last step, not FINISH"
    PLANNER_AGENT = "planner_agent"
    EXECUTOR_AGENT = "executor_agent"


def _completed_choice(choice: SupervisorChoice) -> Callable[[AiOpsRoutingFacts], bool]:
    return lambda facts: facts.status is NodeStatus.COMPLETED and facts.choice is choice


_PREDICATES: Mapping[AiOpsCondition, Callable[[AiOpsRoutingFacts], bool]] = MappingProxyType(
    {
        **status_predicates(AiOpsCondition),
        AiOpsCondition.OTHER_FAILURE: failed,
        AiOpsCondition.FINISH: _completed_choice(SupervisorChoice.FINISH),
        AiOpsCondition.NO_PROGRESS: lambda facts: (
            facts.status is NodeStatus.COMPLETED and facts.repeats >= NO_PROGRESS_REPEATS
        ),
        AiOpsCondition.BUDGET_EXHAUSTED: lambda facts: (
            facts.status is NodeStatus.COMPLETED and facts.last_step
        ),
        AiOpsCondition.PLANNER_AGENT: _completed_choice(SupervisorChoice.PLANNER_AGENT),
        AiOpsCondition.EXECUTOR_AGENT: _completed_choice(SupervisorChoice.EXECUTOR_AGENT),
    }
)


@attrs.frozen
class AiOpsRoute(RouteRow[AiOpsNode, AiOpsCondition, AiOpsReasonCode]):
    """One row of the AIOps routing table, read like a :class:`~diagnosis_core.machine.Route`.

    The only node whose own reason a row takes (``reason_from_node``) is the executor.
    """


_N = AiOpsNode
_C = AiOpsCondition
_R = AiOpsReasonCode

AIOPS_ROUTING_TABLE: tuple[AiOpsRoute, ...] = (
    AiOpsRoute(None, _C.ALWAYS, _N.SUPERVISOR),
    AiOpsRoute(_N.SUPERVISOR, _C.RETRY_LEFT, _N.SUPERVISOR, same_input=True),
    AiOpsRoute(_N.SUPERVISOR, _C.OTHER_FAILURE, _N.FALLBACK, _R.SUPERVISOR_FAILED),
    AiOpsRoute(_N.SUPERVISOR, _C.FINISH, _N.REPORTER),
    AiOpsRoute(_N.SUPERVISOR, _C.NO_PROGRESS, _N.FALLBACK, _R.NO_PROGRESS),
    AiOpsRoute(_N.SUPERVISOR, _C.BUDGET_EXHAUSTED, _N.FALLBACK, _R.STEP_BUDGET_EXHAUSTED),
    AiOpsRoute(_N.SUPERVISOR, _C.PLANNER_AGENT, _N.PLANNER),
    AiOpsRoute(_N.SUPERVISOR, _C.EXECUTOR_AGENT, _N.EXECUTOR),
    AiOpsRoute(_N.PLANNER, _C.COMPLETED, _N.SUPERVISOR),
    AiOpsRoute(_N.PLANNER, _C.RETRY_LEFT, _N.PLANNER, same_input=True),
    AiOpsRoute(_N.PLANNER, _C.OTHERWISE, _N.FALLBACK, _R.PLANNER_FAILED),
    AiOpsRoute(_N.EXECUTOR, _C.COMPLETED, _N.SUPERVISOR),
    AiOpsRoute(_N.EXECUTOR, _C.ANY_FAILURE, _N.FALLBACK, reason_from_node=True),
    AiOpsRoute(_N.REPORTER, _C.COMPLETED, None),
    AiOpsRoute(_N.REPORTER, _C.RETRY_LEFT, _N.REPORTER, same_input=True),
    AiOpsRoute(_N.REPORTER, _C.OTHERWISE, _N.FALLBACK, _R.REPORTER_FAILED),
    AiOpsRoute(_N.FALLBACK, _C.ALWAYS, None),
)
"""The AIOps routing rows, read in order: the first row whose condition holds wins."""


_ROUTER = Router(AIOPS_ROUTING_TABLE, _PREDICATES, "AIOps route")


def choose_aiops_route(
    after: AiOpsNode | None,
    facts: AiOpsRoutingFacts,
    table: tuple[AiOpsRoute, ...] = AIOPS_ROUTING_TABLE,
) -> AiOpsRoute:
    """The first row for ``after`` whose condition holds.

    The default table routes every reachable situation; a situation no row
    covers (a completed supervisor without a choice, a custom table without
    a catch-all) raises ``LookupError``.
    """
    return _ROUTER.choose(after, facts, table)


def aiops_routing_mermaid(table: tuple[AiOpsRoute, ...] = AIOPS_ROUTING_TABLE) -> str:
    """A Mermaid flowchart drawn from the AIOps routing table."""
    return mermaid_flowchart(table)
