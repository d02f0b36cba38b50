"""The deterministic rule evaluator of the AIOps report (spec §11, seed ``004`` §4).

The AIOps flow has no LLM verifier: the final report is checked by rules,
and the result is stored as ``self_evaluation.aiops_rule_evaluation``::

    {"passed": bool, "score": number, "violations": [{"rule_id", "message"}]}

Rules are *data*: :data:`AIOPS_RULES` is a tuple of frozen :class:`AiOpsRule`
values, each with a stable ``id``, a ``description``, an ``applies``
predicate and a ``check`` that returns the violation messages (none: the
rule passed). Extend the set by passing ``rules=(*AIOPS_RULES, my_rule)``.

``score`` is the share of applicable rules that passed, in [0, 1] (1.0 when
no rule applies); ``passed`` is true exactly when there is no violation.

:func:`evaluate_aiops_report` never raises on any report: a typed
:class:`AiOpsReport`, a raw JSON object, or anything else. A report that is
not a well-formed ``aiops_report`` fails ``report_well_formed`` with the
path of the first problem, and is otherwise read leniently (unreadable
sections count as empty, unreadable items are skipped), so the other rules
still say what they can. A rule whose own code raises counts as applicable
and failed, with a message naming the exception type (fail closed).

Matching is exact: an alert is ``(name, service)``, compared with a finding's
or action's ``(alert_name, service)`` without trimming or case folding, the
way invocation ids are compared with the ledger.

The ledger is the run's tool recorder's (spec §13): ``ledger=`` takes a
:class:`ToolLedger` or any :class:`LedgerSource` — a
:class:`diagnosis_core.tools.ToolRecorder`, whose ``ledger()`` is read *when
the report is evaluated*, so citations of tools called during the run are
checked against what was really recorded, never against a copy taken when
the run started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import attrs

from .._kernel.errors import PayloadError
from .._kernel.tools.ledger import ToolLedger
from .._kernel.wire.converter import from_wire, to_wire
from .._kernel.wire.json import describe_value
from .enums import AiOpsMode
from .machine import AiOpsState
from .parsing import validate_aiops_report
from .payloads import (
    AiOpsEvidence,
    AiOpsFinding,
    AiOpsRecommendedAction,
    AiOpsReport,
    Alert,
)

__all__ = [
    "AIOPS_RULES",
    "AiOpsRule",
    "AiOpsRuleContext",
    "AiOpsRuleEvaluation",
    "AiOpsRuleViolation",
    "LedgerSource",
    "evaluate_aiops_report",
    "evaluate_aiops_run",
    "ledger_now",
]


@runtime_checkable
class LedgerSource(Protocol):
    """Anything that gives the run's ledger as it is now: a :class:`ToolRecorder`."""

    def ledger(self) -> ToolLedger:
        """A snapshot of the invocations recorded so far."""
        ...


def ledger_now(ledger: ToolLedger | LedgerSource) -> ToolLedger:
    """The ledger to judge with: ``ledger`` itself, or a source's ``ledger()`` read now.

    Raises:
        TypeError: for anything else, or a source whose ``ledger()`` does not
            return a :class:`ToolLedger` (a host mistake, never a silent pass).
    """
    if isinstance(ledger, ToolLedger):
        return ledger
    if not isinstance(ledger, LedgerSource):
        kind = type(ledger).__name__
        raise TypeError(f"ledger: expected a ToolLedger or a ToolRecorder, got {kind}")
    snapshot = ledger.ledger()
    if not isinstance(snapshot, ToolLedger):
        raise TypeError(
            f"ledger: {type(ledger).__name__}.ledger() returned {type(snapshot).__name__}, "
            "not a ToolLedger"
        )
    return snapshot


@attrs.frozen
class AiOpsRuleContext:
    """What a rule may look at.

    Attributes:
        report: the report as read (leniently, when it is malformed).
        mode: the run's mode.
        alerts: the input alert payload (empty in ``AUTO_DISCOVERY``).
        ledger: the recorded tool invocations of the run.
        problem: why the report is not a well-formed ``aiops_report``
            (``findings[0].text: must not be blank``), or None.
    """

    report: AiOpsReport
    mode: AiOpsMode
    alerts: tuple[Alert, ...]
    ledger: ToolLedger
    problem: str | None = None

    @property
    def alert_keys(self) -> tuple[tuple[str, str], ...]:
        """The distinct ``(name, service)`` pairs of the input alerts, in payload order."""
        return tuple(dict.fromkeys(alert.key for alert in self.alerts))


@attrs.frozen
class AiOpsRule:
    """One rule: ``check`` returns violation messages; an empty result means it passed.

    ``check`` runs only when ``applies`` is true; only applicable rules count
    in the score.
    """

    id: str
    description: str
    applies: Callable[[AiOpsRuleContext], bool]
    check: Callable[[AiOpsRuleContext], Sequence[str]]


@attrs.frozen
class AiOpsRuleViolation:
    """One broken rule, with a message that says where and why."""

    rule_id: str
    message: str


@attrs.frozen
class AiOpsRuleEvaluation:
    """``aiops_rule_evaluation``: passed, the share of applicable rules passed, violations."""

    passed: bool
    score: float
    violations: tuple[AiOpsRuleViolation, ...]


# --- the default rules ------------------------------------------------------------


def _always(context: AiOpsRuleContext) -> bool:
    return True


def _payload_targeted(context: AiOpsRuleContext) -> bool:
    return context.mode is AiOpsMode.PAYLOAD_TARGETED


def _alert(key: tuple[str, str]) -> str:
    return f"{describe_value(key[0])} on {describe_value(key[1])}"


def _check_well_formed(context: AiOpsRuleContext) -> Sequence[str]:
    if context.problem is None:
        return ()
    return (f"the report is not a valid aiops_report: {context.problem}",)


def _check_summary(context: AiOpsRuleContext) -> Sequence[str]:
    return () if context.report.summary.strip() else ("the summary is missing or blank",)


def _check_evidence(context: AiOpsRuleContext) -> Sequence[str]:
    return () if context.report.evidence else ("the evidence section is missing or empty",)


def _check_actions(context: AiOpsRuleContext) -> Sequence[str]:
    if context.report.recommended_actions:
        return ()
    return ("the recommended actions section is missing or empty",)


def _check_addressed(context: AiOpsRuleContext) -> Sequence[str]:
    addressed = {finding.alert_key for finding in context.report.findings}
    return tuple(
        f"input alert {_alert(key)} is not addressed by any finding"
        for key in context.alert_keys
        if key not in addressed
    )


def _check_no_foreign_subject(context: AiOpsRuleContext) -> Sequence[str]:
    inputs = set(context.alert_keys)
    messages = [
        f"findings[{index}] is about {_alert(finding.alert_key)}, which is not an input alert"
        for index, finding in enumerate(context.report.findings)
        if finding.alert_key not in inputs
    ]
    messages += [
        f"recommended_actions[{index}] is aimed at {_alert(key)}, which is not an input alert"
        for index, action in enumerate(context.report.recommended_actions)
        if (key := action.alert_key) is not None and key not in inputs
    ]
    return tuple(messages)


def _citations(report: AiOpsReport) -> Iterator[tuple[str, str]]:
    """``(path, id)`` for every cited id, findings first, in document order."""
    for index, finding in enumerate(report.findings):
        for position, value in enumerate(finding.cited_invocation_ids):
            yield f"findings[{index}].cited_invocation_ids[{position}]", value
    for index, item in enumerate(report.evidence):
        for position, value in enumerate(item.cited_invocation_ids):
            yield f"evidence[{index}].cited_invocation_ids[{position}]", value


def _has_citations(context: AiOpsRuleContext) -> bool:
    return next(_citations(context.report), None) is not None


def _check_citations(context: AiOpsRuleContext) -> Sequence[str]:
    messages = []
    for path, value in _citations(context.report):
        invocation = context.ledger.get(value)
        if invocation is None:
            messages.append(f"{path}: {describe_value(value)} is not in the tool ledger")
        elif not invocation.success:
            messages.append(f"{path}: {describe_value(value)} did not succeed")
    return tuple(messages)


def _has_findings(context: AiOpsRuleContext) -> bool:
    return bool(context.report.findings)


def _check_findings_cite(context: AiOpsRuleContext) -> Sequence[str]:
    return tuple(
        f"findings[{index}] cites no tool invocation"
        for index, finding in enumerate(context.report.findings)
        if not finding.cited_invocation_ids
    )


def _has_critical_alert(context: AiOpsRuleContext) -> bool:
    return _payload_targeted(context) and any(alert.is_critical for alert in context.alerts)


def _check_critical_actions(context: AiOpsRuleContext) -> Sequence[str]:
    aimed = {action.alert_key for action in context.report.recommended_actions}
    critical = dict.fromkeys(alert.key for alert in context.alerts if alert.is_critical)
    return tuple(
        f"critical alert {_alert(key)} has no recommended action aimed at it"
        for key in critical
        if key not in aimed
    )


AIOPS_RULES: tuple[AiOpsRule, ...] = (
    AiOpsRule(
        "report_well_formed",
        "The report is a well-formed aiops_report.",
        _always,
        _check_well_formed,
    ),
    AiOpsRule(
        "summary_present",
        "The report has a non-blank summary.",
        _always,
        _check_summary,
    ),
    AiOpsRule(
        "evidence_present",
        "The report has at least one evidence item.",
        _always,
        _check_evidence,
    ),
    AiOpsRule(
        "recommended_actions_present",
        "The report has at least one recommended action.",
        _always,
        _check_actions,
    ),
    AiOpsRule(
        "payload_alerts_addressed",
        "PAYLOAD_TARGETED: every input alert is the subject of at least one finding.",
        _payload_targeted,
        _check_addressed,
    ),
    AiOpsRule(
        "no_foreign_alert_subject",
        "PAYLOAD_TARGETED: no finding or action is about an alert outside the payload.",
        _payload_targeted,
        _check_no_foreign_subject,
    ),
    AiOpsRule(
        "cited_invocations_succeeded",
        "Every cited invocation id is in the tool ledger and that invocation succeeded.",
        _has_citations,
        _check_citations,
    ),
    AiOpsRule(
        "findings_cite_invocations",
        "Every finding cites at least one tool invocation.",
        _has_findings,
        _check_findings_cite,
    ),
    AiOpsRule(
        "critical_alerts_have_actions",
        "PAYLOAD_TARGETED: every critical input alert has a recommended action aimed at it.",
        _has_critical_alert,
        _check_critical_actions,
    ),
)
"""The default rules, in evaluation order (violations are listed in this order)."""


# --- reading any report -----------------------------------------------------------

T = TypeVar("T")

_EMPTY_REPORT = AiOpsReport(summary="", findings=(), evidence=(), recommended_actions=())


def _readable_items(value: object, cls: type[T]) -> tuple[T, ...]:
    if not isinstance(value, list | tuple):
        return ()
    items = []
    for item in value:
        try:
            items.append(from_wire(cls, item))
        except PayloadError:
            continue
    return tuple(items)


def _lenient_report(wire: object) -> AiOpsReport:
    """Whatever can be read of a malformed report; unreadable parts count as empty."""
    if not isinstance(wire, Mapping):
        return _EMPTY_REPORT
    summary = wire.get("summary")
    return AiOpsReport(
        summary=summary if isinstance(summary, str) else "",
        findings=_readable_items(wire.get("findings"), AiOpsFinding),
        evidence=_readable_items(wire.get("evidence"), AiOpsEvidence),
        recommended_actions=_readable_items(
            wire.get("recommended_actions"), AiOpsRecommendedAction
        ),
    )


def _read_report(report: object) -> tuple[AiOpsReport, str | None]:
    """The report to judge and, when it is malformed, the first problem with its path."""
    try:
        wire = to_wire(report) if isinstance(report, AiOpsReport) else report
    except Exception as error:
        return _EMPTY_REPORT, f"$: unreadable report ({type(error).__name__})"
    try:
        typed = from_wire(AiOpsReport, wire)
        validate_aiops_report(typed)
        return typed, None
    except PayloadError as error:
        problem = error.reason
    except Exception as error:
        problem = f"$: unreadable report ({type(error).__name__})"
    try:
        return _lenient_report(wire), problem
    except Exception:
        return _EMPTY_REPORT, problem


def _run_rule(rule: AiOpsRule, context: AiOpsRuleContext) -> tuple[bool, tuple[str, ...]]:
    """``(applicable, messages)``; a rule that raises is applicable and failed."""
    try:
        if not rule.applies(context):
            return False, ()
        return True, tuple(str(message) for message in rule.check(context))
    except Exception as error:
        return True, (f"the rule could not be evaluated ({type(error).__name__})",)


def evaluate_aiops_report(
    report: object,
    *,
    mode: AiOpsMode,
    alerts: Sequence[Alert],
    ledger: ToolLedger | LedgerSource,
    rules: Sequence[AiOpsRule] = AIOPS_RULES,
) -> AiOpsRuleEvaluation:
    """Judge a final AIOps report with ``rules`` (default :data:`AIOPS_RULES`).

    ``ledger`` is a :class:`ToolLedger`, or the run's tool recorder (any
    :class:`LedgerSource`), whose ledger is read once, now (spec §13).

    ``report`` may be an :class:`AiOpsReport`, a raw JSON object or any
    value; this function never raises because of it. Guarantees:
    ``0 <= score <= 1``; ``passed`` is true exactly when ``violations`` is
    empty; violations follow the order of ``rules``, then each rule's
    messages.
    """
    snapshot = ledger_now(ledger)
    typed, problem = _read_report(report)
    context = AiOpsRuleContext(typed, mode, tuple(alerts), snapshot, problem)
    applicable = passed = 0
    violations: list[AiOpsRuleViolation] = []
    for rule in rules:
        counts, messages = _run_rule(rule, context)
        if not counts:
            continue
        applicable += 1
        if messages:
            violations.extend(AiOpsRuleViolation(rule.id, message) for message in messages)
        else:
            passed += 1
    score = passed / applicable if applicable else 1.0
    return AiOpsRuleEvaluation(passed=not violations, score=score, violations=tuple(violations))


def evaluate_aiops_run(
    state: AiOpsState,
    ledger: ToolLedger | LedgerSource,
    *,
    rules: Sequence[AiOpsRule] = AIOPS_RULES,
) -> AiOpsRuleEvaluation | None:
    """``aiops_rule_evaluation`` of a finished run's report; None for a fallback.

    ``ledger`` is read as :func:`evaluate_aiops_report` reads it. The fallback
    report is deterministic text built from facts only; there is no agent
    report to judge. Raises :class:`MachineError` before END.
    """
    result = state.result
    if result.report is None:
        return None
    return evaluate_aiops_report(
        result.report, mode=result.mode, alerts=state.request.alerts, ledger=ledger, rules=rules
    )
