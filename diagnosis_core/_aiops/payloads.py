"""Frozen value types of the AIOps flow: the alert payload and every agent payload.

Wire shapes (the parsers in :mod:`diagnosis_core._aiops.parsing` enforce the
rules; Python attribute names equal the wire names):

* ``supervisor_decision``: ``{"next": "planner_agent" | "executor_agent" |
  "FINISH", "reason": str}``;
* ``aiops_plan``: ``{"steps": [{"step_id", "goal", "tools"?}]}`` (the chat
  :class:`PlanStep`);
* ``aiops_executor_output``: ``{"findings": [{"text", "alert_name"?,
  "service"?, "cited_invocation_ids"?}], "tool_invocation_ids": [str]}``;
* ``aiops_report``: ``{"summary", "findings": [{"alert_name", "service",
  "text", "cited_invocation_ids"}], "evidence": [{"text",
  "cited_invocation_ids"}], "recommended_actions": [{"text", "alert_name"?,
  "service"?}]}``.

An alert is identified by the exact pair ``(name, service)``; findings and
actions point at one with ``(alert_name, service)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from .._kernel.machine.config import freeze_strings
from .._kernel.machine.plan import PlanStep
from .enums import SupervisorChoice

__all__ = [
    "AiOpsEvidence",
    "AiOpsExecutorFinding",
    "AiOpsExecutorOutput",
    "AiOpsFinding",
    "AiOpsPlan",
    "AiOpsRecommendedAction",
    "AiOpsReport",
    "Alert",
    "SupervisorDecision",
]


def _freeze_labels(value: Mapping[str, str]) -> Mapping[str, str]:
    return freeze_strings("labels", value)


def _freeze_annotations(value: Mapping[str, str]) -> Mapping[str, str]:
    return freeze_strings("annotations", value)


def _labels_key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(labels.items())


# --- the alert payload ------------------------------------------------------------


@attrs.frozen
class Alert:
    """One alert of a structured payload, kept as given (every field a string).

    ``labels`` and ``annotations`` are read-only mappings of strings, sorted by
    key. ``labels`` identify the alert (Prometheus style); ``annotations`` carry
    the human context (``summary``, ``description``, ``runbook_url`` …) that
    every agent's input shows with the alert (spec §11). :attr:`key` is the
    alert's identity for the rules; :attr:`is_critical` compares ``severity``
    to ``critical`` ignoring case and surrounding whitespace.
    """

    name: str
    service: str
    severity: str
    started_at: str
    labels: Mapping[str, str] = attrs.field(
        factory=lambda: MappingProxyType({}), converter=_freeze_labels, eq=_labels_key
    )
    annotations: Mapping[str, str] = attrs.field(
        factory=lambda: MappingProxyType({}), converter=_freeze_annotations, eq=_labels_key
    )

    @property
    def key(self) -> tuple[str, str]:
        """``(name, service)``: how findings and actions refer to this alert."""
        return (self.name, self.service)

    @property
    def is_critical(self) -> bool:
        """True when ``severity`` is ``critical`` (case and whitespace ignored)."""
        return self.severity.strip().lower() == "critical"


# --- supervisor_decision ----------------------------------------------------------


@attrs.frozen
class SupervisorDecision:
    """The supervisor's routing decision and its stated reason."""

    next: SupervisorChoice
    reason: str


# --- aiops_plan -------------------------------------------------------------------


@attrs.frozen
class AiOpsPlan:
    """The planner's investigation steps: non-empty, unique non-empty ids and goals."""

    steps: tuple[PlanStep, ...]


# --- aiops_executor_output --------------------------------------------------------


@attrs.frozen
class _TextAboutAnAlert:
    """A text that may be aimed at one alert: both ``alert_name`` and ``service``, or neither.

    The executor's findings and the report's recommended actions share this
    optional alert reference (one parser rule, one schema note, one
    :attr:`alert_key`), so it is written once; each payload adds its own fields.
    """

    text: str
    alert_name: str | None = None
    service: str | None = None

    @property
    def alert_key(self) -> tuple[str, str] | None:
        """``(alert_name, service)`` when the text is aimed at an alert, else None."""
        if self.alert_name is None or self.service is None:
            return None
        return (self.alert_name, self.service)


@attrs.frozen
class AiOpsExecutorFinding(_TextAboutAnAlert):
    """One thing the executor found, optionally about one alert, citing tool invocations."""

    cited_invocation_ids: tuple[str, ...] = ()


@attrs.frozen
class AiOpsExecutorOutput:
    """One executor step: its findings and the ids of the tool invocations it made.

    New ids (never reported before in the run) are what counts as progress
    for the no-progress guard.
    """

    tool_invocation_ids: tuple[str, ...]
    findings: tuple[AiOpsExecutorFinding, ...] = ()


# --- aiops_report -----------------------------------------------------------------


@attrs.frozen
class AiOpsFinding:
    """What the report says about one alert, citing tool invocations."""

    alert_name: str
    service: str
    text: str
    cited_invocation_ids: tuple[str, ...] = ()

    @property
    def alert_key(self) -> tuple[str, str]:
        """``(alert_name, service)``, compared exactly with :attr:`Alert.key`."""
        return (self.alert_name, self.service)


@attrs.frozen
class AiOpsEvidence:
    """One evidence item of the report; it cites at least one tool invocation."""

    text: str
    cited_invocation_ids: tuple[str, ...]


@attrs.frozen
class AiOpsRecommendedAction(_TextAboutAnAlert):
    """A recommended action, either general or aimed at one alert (both names or neither)."""


@attrs.frozen
class AiOpsReport:
    """The final alert report. Every section key is required on the wire.

    A section may be empty or the summary blank: that is a finding of the
    rule evaluator (``aiops_rule_evaluation``), not a broken payload.
    """

    summary: str
    findings: tuple[AiOpsFinding, ...]
    evidence: tuple[AiOpsEvidence, ...]
    recommended_actions: tuple[AiOpsRecommendedAction, ...]

    @property
    def cited_invocation_ids(self) -> tuple[str, ...]:
        """Every id cited by a finding or an evidence item, first occurrence first."""
        cited: tuple[AiOpsFinding | AiOpsEvidence, ...] = (*self.findings, *self.evidence)
        return tuple(dict.fromkeys(i for item in cited for i in item.cited_invocation_ids))
