"""The routing table of spec §7, as data.

Everything that decides where a run goes next lives here: a frozen tuple of
rows, read by the state machine and drawn by ``diagnosis-core graph``. For
each node the rows are tried in order and the first whose condition holds
wins, exactly as the spec's table reads ("otherwise" is the last row). The
conditions are named predicates over :class:`RoutingFacts`, so a test can walk
every row and a changed row fails a test.
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
    always,
    completed,
    failed,
    mermaid_flowchart,
    status_predicates,
)
from .._kernel.records import share_repr
from .enums import GatekeeperStatus, NodeName, ReasonCode, Verdict

__all__ = [
    "ROUTING_TABLE",
    "Condition",
    "Route",
    "RoutingFacts",
    "choose_route",
    "routing_mermaid",
]


@attrs.frozen(repr=False)
class RoutingFacts(StatusRoutingFacts):
    """Everything a routing condition may look at, gathered by the machine.

    Attributes:
        status: the execution status of the node just finished (None for start).
        retries_left: for an LLM node, whether retries used in this round < L.
        gatekeeper_status: the normalized gatekeeper status (gatekeeper node).
        trusted_bindings: executor bindings matched by gatekeeper-passed keys.
        effective_verdict: the verifier's verdict after the ceiling.
        gap_count: critical evidence gaps found by the one extractor (§6.4).
        evidence_retry_left: whether evidence retries used < the configured limit.
    """

    gatekeeper_status: GatekeeperStatus | None = None
    trusted_bindings: int = 0
    effective_verdict: Verdict | None = None
    gap_count: int = 0
    evidence_retry_left: bool = False


class Condition(enum.StrEnum):
    """A named routing condition; its value is the label drawn on the graph."""

    ALWAYS = "always"
    COMPLETED = "COMPLETED"
    RETRY_LEFT = "retryable failure, retries left"
    ANY_FAILURE = "any failure"
    OTHERWISE = "otherwise"
    GATEKEEPER_PASS = "PASS"
    LOW_CONFID_TRUSTED = "LOW_CONFID, trusted bindings"
    LOW_CONFID_UNTRUSTED = "LOW_CONFID, no trusted binding"
    GATEKEEPER_REJECT = "REJECT"
    NON_RETRYABLE_OR_EXHAUSTED = "other failure"
    EVIDENCE_GAP = "effective LOW_CONFID, critical gap, retry left"
    COMPLETED_OTHERWISE = "otherwise COMPLETED"


def _evidence_gap(facts: RoutingFacts) -> bool:
    return (
        facts.status is NodeStatus.COMPLETED
        and facts.effective_verdict is Verdict.LOW_CONFID
        and facts.gap_count >= 1
        and facts.evidence_retry_left
    )


_PREDICATES: Mapping[Condition, Callable[[RoutingFacts], bool]] = MappingProxyType(
    {
        **status_predicates(Condition),
        Condition.GATEKEEPER_PASS: lambda facts: facts.gatekeeper_status is GatekeeperStatus.PASS,
        Condition.LOW_CONFID_TRUSTED: lambda facts: (
            facts.gatekeeper_status is GatekeeperStatus.LOW_CONFID and facts.trusted_bindings >= 1
        ),
        Condition.LOW_CONFID_UNTRUSTED: lambda facts: (
            facts.gatekeeper_status is GatekeeperStatus.LOW_CONFID and facts.trusted_bindings == 0
        ),
        # Anything that is neither PASS nor LOW_CONFID fails closed into REJECT.
        Condition.GATEKEEPER_REJECT: always,
        Condition.NON_RETRYABLE_OR_EXHAUSTED: failed,
        Condition.EVIDENCE_GAP: _evidence_gap,
        Condition.COMPLETED_OTHERWISE: completed,
    }
)


@attrs.frozen(repr=False)
class Route(RouteRow[NodeName, Condition, ReasonCode]):
    """One row of the chat routing table.

    After ``after`` (None: the start of a run), when ``condition`` holds, the
    run goes to ``next`` (None: END), leaving with ``reason`` — or, with
    ``reason_from_node``, with the reason the node reported (executor
    failures, gatekeeper rejections). ``same_input`` marks a technical retry.
    """


_N = NodeName
_C = Condition
_PRE = _N.PRE_VERIFICATION_FALLBACK

ROUTING_TABLE: tuple[Route, ...] = (
    Route(None, _C.ALWAYS, _N.PLANNER),
    Route(_N.PLANNER, _C.COMPLETED, _N.EXECUTOR),
    Route(_N.PLANNER, _C.RETRY_LEFT, _N.PLANNER, same_input=True),
    Route(_N.PLANNER, _C.OTHERWISE, _PRE, ReasonCode.PLANNER_FAILED),
    Route(_N.EXECUTOR, _C.COMPLETED, _N.GATEKEEPER),
    Route(_N.EXECUTOR, _C.ANY_FAILURE, _PRE, reason_from_node=True),
    Route(_N.GATEKEEPER, _C.GATEKEEPER_PASS, _N.VERIFIED_INPUT),
    Route(_N.GATEKEEPER, _C.LOW_CONFID_TRUSTED, _N.VERIFIED_INPUT),
    Route(_N.GATEKEEPER, _C.LOW_CONFID_UNTRUSTED, _PRE, ReasonCode.NO_TRUSTED_EVIDENCE),
    Route(_N.GATEKEEPER, _C.GATEKEEPER_REJECT, _PRE, reason_from_node=True),
    Route(_N.VERIFIED_INPUT, _C.ALWAYS, _N.VERIFIER),
    Route(_N.VERIFIER, _C.RETRY_LEFT, _N.VERIFIER, same_input=True),
    Route(_N.VERIFIER, _C.NON_RETRYABLE_OR_EXHAUSTED, _PRE, ReasonCode.VERIFIER_FAILED),
    Route(_N.VERIFIER, _C.EVIDENCE_GAP, _N.EVIDENCE_RETRY),
    Route(_N.VERIFIER, _C.COMPLETED_OTHERWISE, _N.COMPOSER),
    Route(_N.EVIDENCE_RETRY, _C.ALWAYS, _N.EXECUTOR),
    Route(_N.COMPOSER, _C.COMPLETED, None),
    Route(_N.COMPOSER, _C.RETRY_LEFT, _N.COMPOSER, same_input=True),
    Route(_N.COMPOSER, _C.OTHERWISE, _N.POST_VERIFICATION_FALLBACK, ReasonCode.COMPOSER_FAILED),
    Route(_PRE, _C.ALWAYS, None),
    Route(_N.POST_VERIFICATION_FALLBACK, _C.ALWAYS, None),
)
"""The chat routing rows, read in order: the first row whose condition holds wins."""


_ROUTER = Router(ROUTING_TABLE, _PREDICATES, "route")


def choose_route(
    after: NodeName | None, facts: RoutingFacts, table: tuple[Route, ...] = ROUTING_TABLE
) -> Route:
    """The first row for ``after`` whose condition holds (spec §7).

    Every node has a catch-all last row, so a route always exists for the
    default table; a custom table without one raises ``LookupError``.
    """
    return _ROUTER.choose(after, facts, table)


def routing_mermaid(table: tuple[Route, ...] = ROUTING_TABLE) -> str:
    """A Mermaid flowchart drawn from the routing table, so the picture cannot lie."""
    return mermaid_flowchart(table)


share_repr(RoutingFacts, Route)
