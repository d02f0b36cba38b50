"""Misuses of the public API that a type checker must reject.

``mypy --strict diagnosis_core tests/typing`` checks this file with
``warn_unused_ignores`` (part of ``--strict``): each ``# type: ignore[code]`` below is an
expectation — if mypy ever accepts the line, the ignore is unused and the check fails.
So the public signatures stay as precise as the validators behind them.

Every ``rejected_*`` function is also a misuse the runtime refuses with a typed error;
``tests/test_typing_misuse.py`` calls each one to prove it (a signature must not be
stricter than the runtime without a reason). ``static_*`` functions are caught by the
types only.
"""

from __future__ import annotations

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp

RUN = dc.RunConfig("run-1", "chat-1")


def rejected_history_of_strings() -> None:
    dc.DiagnosisRequest("q", RUN, history=["hello"])  # type: ignore[list-item]


def rejected_skills_of_dicts() -> None:
    dc.DiagnosisRequest("q", RUN, skills=[{"name": "x", "description": "y"}])  # type: ignore[list-item]


def rejected_metadata_with_a_number() -> None:
    dc.RunConfig("run-1", "chat-1", metadata={"attempt": 1})  # type: ignore[dict-item]


def rejected_metadata_that_is_a_list() -> None:
    dc.RunConfig("run-1", "chat-1", metadata=["a"])  # type: ignore[arg-type]


def rejected_locale_that_is_a_number() -> None:
    dc.DiagnosisConfig(locale=1)  # type: ignore[arg-type]


def rejected_retry_limit_as_text() -> None:
    dc.DiagnosisConfig(technical_retry_limit="1")  # type: ignore[arg-type]


def rejected_run_config_as_text() -> None:
    dc.DiagnosisRequest("q", "run-1")  # type: ignore[arg-type]


def rejected_alert_labels_with_a_number() -> None:
    dcp.Alert("HighLatency", "pay-svc", "critical", "2024-05-01T10:00:00Z", {"shard": 3})  # type: ignore[dict-item]


def rejected_aiops_locale_that_is_a_number() -> None:
    dca.AiOpsConfig(locale=1)  # type: ignore[arg-type]


def static_sink_of_text() -> None:
    dcj.ListJournalSink().write("entry")  # type: ignore[arg-type]


def static_sink_of_another_entry_type() -> None:
    dcj.ListJournalSink[str]()  # type: ignore[type-var]


def static_aiops_sink_of_chat_entries() -> None:
    dcj.ListAiOpsJournalSink[dcj.JournalEntry]()  # type: ignore[type-var]


def static_effects_with_a_non_callable() -> None:
    dc.Effects(planner="gpt-4o", executor=len, verifier=len, composer=len, gatekeeper=len)  # type: ignore[arg-type]
