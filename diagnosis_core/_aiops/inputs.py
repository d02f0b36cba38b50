"""Mode selection and the exact agent inputs of the AIOps flow (spec §11, §6.6 style).

The mode decides the *task* every agent is given: in ``PAYLOAD_TARGETED`` the
alerts of the payload, as given; in ``AUTO_DISCOVERY`` a fixed instruction to
discover the active alerts first. Each agent input is canonical JSON of one
of the typed classes below: the classes *are* the whitelists, so a value that
is not declared here cannot reach an agent. Identical state gives
byte-identical input, and the machine stores the string it sent so that a
technical retry re-sends exactly the same bytes.

Top-level keys, exactly:

=========== ===========================================================================
supervisor  ``mode``, ``task``, ``step``, ``max_steps``, ``decisions``, ``plan``,
            ``findings``, ``tool_invocation_count``
planner     ``mode``, ``task``, ``findings``
executor    ``mode``, ``task``, ``plan``, ``known_invocation_ids``
reporter    ``mode``, ``task``, ``plan``, ``findings``, ``tool_invocation_ids``
=========== ===========================================================================

``task`` is ``{"alerts": [...]}`` or ``{"instruction": "..."}``; each alert
is exactly ``name``, ``service``, ``severity``, ``started_at``, ``labels``
and ``annotations`` (the fields of :class:`Alert`, whatever class the host
passes). The supervisor's own ``reason`` texts are never forwarded.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import canonical_json
from .enums import AiOpsMode, SupervisorChoice
from .payloads import AiOpsExecutorFinding, AiOpsPlan, Alert

__all__ = [
    "DISCOVERY_INSTRUCTION",
    "AiOpsExecutorInput",
    "AiOpsInput",
    "AiOpsPlannerInput",
    "AiOpsTask",
    "AlertDiscoveryTask",
    "AlertPayloadTask",
    "ReporterInput",
    "SupervisorInput",
    "aiops_task",
    "build_aiops_executor_input",
    "build_aiops_planner_input",
    "build_reporter_input",
    "build_supervisor_input",
    "encode_aiops_input",
    "select_aiops_mode",
]

DISCOVERY_INSTRUCTION = (
    "No alert payload was given. First discover the currently active alerts with the"
    " alert tools, then diagnose each of them."
)
"""The fixed task of an ``AUTO_DISCOVERY`` run."""


def select_aiops_mode(alerts: Sequence[Alert] | None) -> AiOpsMode:
    """``PAYLOAD_TARGETED`` when at least one alert is given, else ``AUTO_DISCOVERY``.

    An empty payload names no alert to focus on, so it is treated like no
    payload at all.
    """
    return AiOpsMode.PAYLOAD_TARGETED if alerts else AiOpsMode.AUTO_DISCOVERY


@attrs.frozen
class AlertPayloadTask:
    """The ``PAYLOAD_TARGETED`` task: the payload's alerts, as given."""

    alerts: tuple[Alert, ...]


@attrs.frozen
class AlertDiscoveryTask:
    """The ``AUTO_DISCOVERY`` task: discover the active alerts first."""

    instruction: str = DISCOVERY_INSTRUCTION


AiOpsTask = AlertPayloadTask | AlertDiscoveryTask
"""The task an AIOps agent is given: the alerts of the payload, or discovery."""


def aiops_task(alerts: Sequence[Alert] | None) -> AiOpsTask:
    """The task of the mode :func:`select_aiops_mode` picks for ``alerts``."""
    if select_aiops_mode(alerts) is AiOpsMode.PAYLOAD_TARGETED:
        assert alerts is not None
        return AlertPayloadTask(tuple(alerts))
    return AlertDiscoveryTask()


@attrs.frozen
class SupervisorInput:
    """Supervisor whitelist: the task, the budget, what was decided and found so far."""

    mode: AiOpsMode
    task: AiOpsTask
    step: int
    max_steps: int
    decisions: tuple[SupervisorChoice, ...]
    plan: AiOpsPlan | None
    findings: tuple[AiOpsExecutorFinding, ...]
    tool_invocation_count: int


@attrs.frozen
class AiOpsPlannerInput:
    """Planner whitelist: the task and the findings so far (for re-planning)."""

    mode: AiOpsMode
    task: AiOpsTask
    findings: tuple[AiOpsExecutorFinding, ...]


@attrs.frozen
class AiOpsExecutorInput:
    """Executor whitelist: the task, the latest plan, and the tool invocations already made."""

    mode: AiOpsMode
    task: AiOpsTask
    plan: AiOpsPlan | None
    known_invocation_ids: tuple[str, ...]


@attrs.frozen
class ReporterInput:
    """Reporter whitelist: the task, the latest plan, every finding and every reported id."""

    mode: AiOpsMode
    task: AiOpsTask
    plan: AiOpsPlan | None
    findings: tuple[AiOpsExecutorFinding, ...]
    tool_invocation_ids: tuple[str, ...]


AiOpsInput = SupervisorInput | AiOpsPlannerInput | AiOpsExecutorInput | ReporterInput
"""Any AIOps agent input, as :func:`encode_aiops_input` writes it."""


def encode_aiops_input(value: AiOpsInput) -> str:
    """Canonical JSON of an input object: the exact string an agent receives."""
    return canonical_json(to_wire(value))


def _mode_and_task(alerts: Sequence[Alert]) -> tuple[AiOpsMode, AiOpsTask]:
    """The first two fields of every input: the mode ``alerts`` select and its task."""
    return select_aiops_mode(alerts), aiops_task(alerts)


def build_supervisor_input(
    alerts: Sequence[Alert],
    *,
    step: int,
    max_steps: int,
    decisions: Sequence[SupervisorChoice],
    plan: AiOpsPlan | None,
    findings: Sequence[AiOpsExecutorFinding],
    tool_invocation_count: int,
) -> str:
    """The supervisor's input for decision number ``step`` (1-based) of ``max_steps``."""
    return encode_aiops_input(
        SupervisorInput(
            *_mode_and_task(alerts),
            step=step,
            max_steps=max_steps,
            decisions=tuple(decisions),
            plan=plan,
            findings=tuple(findings),
            tool_invocation_count=tool_invocation_count,
        )
    )


def build_aiops_planner_input(
    alerts: Sequence[Alert], findings: Sequence[AiOpsExecutorFinding]
) -> str:
    """The planner's input."""
    return encode_aiops_input(AiOpsPlannerInput(*_mode_and_task(alerts), tuple(findings)))


def build_aiops_executor_input(
    alerts: Sequence[Alert], plan: AiOpsPlan | None, known_invocation_ids: Sequence[str]
) -> str:
    """The executor's input (``plan`` is null when the supervisor skipped the planner)."""
    return encode_aiops_input(
        AiOpsExecutorInput(*_mode_and_task(alerts), plan, tuple(known_invocation_ids))
    )


def build_reporter_input(
    alerts: Sequence[Alert],
    plan: AiOpsPlan | None,
    findings: Sequence[AiOpsExecutorFinding],
    tool_invocation_ids: Sequence[str],
) -> str:
    """The reporter's input, built once the supervisor said FINISH."""
    return encode_aiops_input(
        ReporterInput(*_mode_and_task(alerts), plan, tuple(findings), tuple(tool_invocation_ids))
    )
