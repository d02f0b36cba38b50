"""The AIOps workflow (supervisor → planner → executor → reporter; spec §10, §11).

It mirrors ``diagnosis_core._chat`` module for module and is built on
``diagnosis_core._kernel``. Its host-facing names live in ``diagnosis_core.aiops``; the
rest in the shared audience namespaces, beside the chat workflow's, by
:data:`AIOPS_NAMES`. Importing this package loads none of its modules.
"""

from __future__ import annotations

__all__ = ["AIOPS_NAMES"]


def _homes(*rows: tuple[str, tuple[str, ...]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((f"{__name__}.{module}", names) for module, names in rows)


AIOPS_NAMES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "diagnosis_core.protocol": _homes(
        ("enums", ("SupervisorChoice",)),
        ("parsing", (
            "parse_aiops_executor_output", "parse_aiops_plan", "parse_aiops_report",
            "parse_supervisor_decision",
        )),
        ("payloads", (
            "AiOpsEvidence", "AiOpsExecutorFinding", "AiOpsExecutorOutput", "AiOpsFinding",
            "AiOpsPlan", "AiOpsRecommendedAction", "AiOpsReport", "Alert", "SupervisorDecision",
        )),
        ("schema", ("AIOPS_SCHEMA_NAMES", "aiops_json_schema")),
    ),
    "diagnosis_core.machine": _homes(
        ("drivers", (
            "check_aiops_effects", "check_aiops_request", "perform_aiops_effect",
            "perform_aiops_effect_async",
        )),
        ("enums", ("AiOpsAgent", "AiOpsNode")),
        ("machine", (
            "AiOpsAction", "AiOpsFinished", "InvokeAiOpsAgent", "advance_aiops",
            "next_aiops_action", "start_aiops",
        )),
        ("routing", ("AIOPS_ROUTING_TABLE", "AiOpsRoute")),
        ("workflow", ("AIOPS_WORKFLOW",)),
    ),
    "diagnosis_core.journal": _homes(
        ("journal", (
            "AiOpsJournal", "AiOpsJournalRecorder", "AiOpsJournalStatus",
            "ListAiOpsJournalSink",
        )),
        ("request_codec", ("aiops_request_to_wire",)),
        ("workflow", ("aiops_expected_call", "aiops_journal_ledger")),
    ),
    # The AIOps executor effect is not part of the workflow: it sits above it, beside
    # the chat executor (``diagnosis_core/_executor``).
    "diagnosis_core.tools": (
        ("diagnosis_core._executor.aiops", (
            "aiops_executor_agent", "aiops_grounding_schema", "async_aiops_executor_agent",
        )),
    ),
}
"""The names each shared namespace serves from this workflow: (its module, the names).

A namespace loads them on first use (``_kernel/public.py``'s :func:`lazy_module`), so
a chat host that imports ``diagnosis_core.protocol`` never loads this workflow; and
``diagnosis_core.aiops``, which loads it, publishes them in their namespaces
(:func:`publish_homes`) so a class reached through it names its namespace.
"""
