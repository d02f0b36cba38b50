"""One parser per AIOps agent payload (spec §11, with the rules of spec §5).

Same contract as :mod:`diagnosis_core._chat.parsing`: the model's text goes
through the document layer (:func:`parse_json_object`: one object, bare or in
one ``json`` fence, no duplicate keys, no lone surrogates), then the shapes
and types (:func:`from_wire`), then the rules below. Anything else is a
:class:`PayloadError` naming the path (``findings[2].cited_invocation_ids[0]:
must not be empty``), which the machine records as ``INVALID_OUTPUT``.
Unknown extra fields are ignored and never kept.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence

from .._kernel.errors import PayloadError
from .._kernel.machine.plan import check_plan_steps, duplicate_error
from .._kernel.wire.converter import from_wire
from .._kernel.wire.json import describe_value, parse_json_object
from .payloads import (
    AiOpsExecutorOutput,
    AiOpsPlan,
    AiOpsReport,
    SupervisorDecision,
    _TextAboutAnAlert,
)

__all__ = [
    "AiOpsPayloadName",
    "parse_aiops_executor_output",
    "parse_aiops_plan",
    "parse_aiops_report",
    "parse_supervisor_decision",
    "validate_aiops_report",
]

_EMPTY = "must not be empty"
_BLANK = "must not be blank"


class AiOpsPayloadName(enum.StrEnum):
    """The wire name of each AIOps agent payload."""

    SUPERVISOR_DECISION = "supervisor_decision"
    AIOPS_PLAN = "aiops_plan"
    AIOPS_EXECUTOR_OUTPUT = "aiops_executor_output"
    AIOPS_REPORT = "aiops_report"


def _check_ids(owner: str, field: str, ids: Sequence[str], *, unique: bool) -> None:
    """Every id non-empty (and unique when asked); ``owner`` is the item's path, "" at the top.

    The error path is written only when there is an error: this runs for every
    item of a payload.
    """
    seen: set[str] = set()
    for index, value in enumerate(ids):
        if not value or (unique and value in seen):
            path = f"{owner}.{field}[{index}]" if owner else f"{field}[{index}]"
            if not value:
                raise PayloadError(path, _EMPTY)
            raise duplicate_error(path, value)
        seen.add(value)


def _check_text(path: str, text: str) -> None:
    """A text field (finding, evidence, action) must say something: not blank."""
    if not text.strip():
        raise PayloadError(f"{path}.text", _BLANK)


def _check_text_about_an_alert(path: str, item: _TextAboutAnAlert) -> None:
    """An executor finding or a report action: non-blank text, and an optional
    alert reference that names both the alert and its service, or neither."""
    _check_text(path, item.text)
    alert_name, service = item.alert_name, item.service
    if alert_name == "":
        raise PayloadError(f"{path}.alert_name", _EMPTY)
    if service == "":
        raise PayloadError(f"{path}.service", _EMPTY)
    if alert_name is not None and service is None:
        raise PayloadError(f"{path}.service", "missing (required with alert_name)")
    if service is not None and alert_name is None:
        raise PayloadError(f"{path}.alert_name", "missing (required with service)")


# --- supervisor_decision ----------------------------------------------------------


def parse_supervisor_decision(text: str) -> SupervisorDecision:
    """Parse the supervisor's decision ``{"next", "reason"}``.

    Guarantees: ``next`` is one of ``planner_agent``, ``executor_agent``,
    ``FINISH`` (exact case); ``reason`` is a string (it may be empty: the
    route depends on ``next`` only, the reason is kept for the trace).
    """
    return from_wire(SupervisorDecision, parse_json_object(text))


# --- aiops_plan -------------------------------------------------------------------


def parse_aiops_plan(text: str) -> AiOpsPlan:
    """Parse the planner's steps (the rules of spec §5.1 without a skill).

    Guarantees: at least one step; every ``step_id`` non-empty and unique;
    every ``goal`` non-blank; ``tools`` an array of strings (default empty).
    """
    plan = from_wire(AiOpsPlan, parse_json_object(text))
    check_plan_steps(plan.steps, blank_goals=False)
    return plan


# --- aiops_executor_output --------------------------------------------------------


def parse_aiops_executor_output(
    text: str, known_invocation_ids: Collection[str] = ()
) -> AiOpsExecutorOutput:
    """Parse one executor step.

    Guarantees: ``tool_invocation_ids`` is present (an array, possibly empty)
    of non-empty, unique ids; every finding has non-blank ``text``, an alert
    reference with both ``alert_name`` and ``service`` (non-empty) or
    neither, and cites only non-empty ids that this step reported or that
    ``known_invocation_ids`` (earlier steps) holds — a finding cannot cite a
    tool call nobody reported.
    """
    output = from_wire(AiOpsExecutorOutput, parse_json_object(text))
    _check_ids("", "tool_invocation_ids", output.tool_invocation_ids, unique=True)
    citable = set(known_invocation_ids).union(output.tool_invocation_ids)
    for index, finding in enumerate(output.findings):
        path = f"findings[{index}]"
        _check_text_about_an_alert(path, finding)
        _check_ids(path, "cited_invocation_ids", finding.cited_invocation_ids, unique=False)
        for position, invocation_id in enumerate(finding.cited_invocation_ids):
            if invocation_id not in citable:
                raise PayloadError(
                    f"{path}.cited_invocation_ids[{position}]",
                    f"{describe_value(invocation_id)} is not a reported tool invocation",
                )
    return output


# --- aiops_report -----------------------------------------------------------------


def validate_aiops_report(report: AiOpsReport) -> None:
    """Check the rules of ``aiops_report`` that its types cannot express.

    Every finding names a non-empty ``alert_name`` and ``service`` and has
    non-blank ``text``; every evidence item has non-blank ``text`` and cites
    at least one id; an action has non-blank ``text`` and names both an alert
    and its service, or neither; every cited id is non-empty. Empty sections
    and a blank summary are *allowed* here: they are the rule evaluator's
    business. Raises :class:`PayloadError` naming the path.
    """
    for index, finding in enumerate(report.findings):
        path = f"findings[{index}]"
        if not finding.alert_name:
            raise PayloadError(f"{path}.alert_name", _EMPTY)
        if not finding.service:
            raise PayloadError(f"{path}.service", _EMPTY)
        _check_text(path, finding.text)
        _check_ids(path, "cited_invocation_ids", finding.cited_invocation_ids, unique=False)
    for index, item in enumerate(report.evidence):
        path = f"evidence[{index}]"
        _check_text(path, item.text)
        if not item.cited_invocation_ids:
            raise PayloadError(f"{path}.cited_invocation_ids", _EMPTY)
        _check_ids(path, "cited_invocation_ids", item.cited_invocation_ids, unique=False)
    for index, action in enumerate(report.recommended_actions):
        path = f"recommended_actions[{index}]"
        _check_text_about_an_alert(path, action)


def parse_aiops_report(text: str) -> AiOpsReport:
    """Parse the reporter's final alert report (see :func:`validate_aiops_report`).

    ``summary``, ``findings``, ``evidence`` and ``recommended_actions`` are
    required keys (``null`` is not accepted for them).
    """
    report = from_wire(AiOpsReport, parse_json_object(text))
    validate_aiops_report(report)
    return report
