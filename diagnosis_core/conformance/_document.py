"""One conformance document in, one result line out: this package as an implementation.

The kit runs an implementation on *documents*: a §9 scenario (chat, or AIOps
with ``"workflow": "aiops"``), a §12 journal (``diagnosis_journal_v1`` or
``aiops_journal_v1``), or a resume request (``diagnosis_resume_v1``: a journal
prefix and the scripted effects that continue it). Each gives one *result
line*: the JSON object ``diagnosis-core run --json`` prints, or, when the
document is refused (exit status 2 on the command line), ``{"error":
MESSAGE}`` with the message that command writes to standard error.

:func:`run_document` is the reference: the corpus's expected results are
produced by it, ``diagnosis-core run --json --batch`` prints it per line, and
``conformance run --python diagnosis_core.conformance`` runs it in-process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from diagnosis_core import DiagnosisState, JournalError, JsonValue, ScenarioError, to_wire
from diagnosis_core.protocol import canonical_json
from diagnosis_core.scenarios import parse_document_text

__all__ = ["RESUME_FORMAT", "resume_document_state", "run_document", "run_document_line"]

RESUME_FORMAT = "diagnosis_resume_v1"
"""The ``format`` of a resume document (see ``docs/protocol.md``, conformance documents)."""

_AIOPS_JOURNAL = ("aiops_journal_v2", "aiops_journal_v1")
_RESUME_KEYS = frozenset({"format", "journal", "responses", "gatekeeper", "tool_ledger"})


class _Refused(Exception):
    """A document the command line refuses with exit status 2; the message is its stderr."""


def run_document(text: str) -> dict[str, JsonValue]:
    """The result line of one document's text (the protocol a ``--python`` module implements).

    Never raises for a bad document: a refusal is ``{"error": message}``.
    """
    try:
        return _run(text)
    except _Refused as refused:
        return {"error": str(refused)}
    except ScenarioError as error:
        return {"error": f"invalid scenario: {error}"}
    except JournalError as error:
        return {"error": f"invalid journal: {error}"}


def run_document_line(text: str) -> str:
    """:func:`run_document` as the one line ``run --json --batch`` prints (canonical JSON)."""
    return canonical_json(run_document(text))


def _parse(text: str) -> object:
    return parse_document_text(text, "<document>")


def _run(text: str) -> dict[str, JsonValue]:
    data = _parse(text)
    if isinstance(data, dict) and "format" in data:
        form = data.get("format")
        if form in _AIOPS_JOURNAL:
            return _aiops_journal(data)
        if form == RESUME_FORMAT:
            return _resume(data)
        return _chat_journal(text)
    if isinstance(data, dict) and "workflow" in data:
        from diagnosis_core.aiops import (
            aiops_replay_output,
            load_aiops_scenario,
            replay_aiops_scenario,
        )

        scenario = load_aiops_scenario(data)
        return aiops_replay_output(scenario, replay_aiops_scenario(scenario))
    from diagnosis_core import load_scenario, replay_scenario

    return _wire(replay_scenario(load_scenario(data)).result)


def _wire(value: object) -> dict[str, JsonValue]:
    wire = to_wire(value)
    assert isinstance(wire, dict)
    return wire


def _chat_journal(text: str) -> dict[str, JsonValue]:
    from diagnosis_core.journal import Journal, journal_status

    status = journal_status(Journal.from_json(text))
    if not status.complete:
        raise _Refused(
            f"the journal is {status.describe()} (the run that wrote it did not finish)"
        )
    return _wire(status.state.result)


def _aiops_journal(data: object) -> dict[str, JsonValue]:
    from diagnosis_core.journal import AiOpsJournal, replay_journal

    return replay_journal(AiOpsJournal.load(data))  # an incomplete one: JournalError


def _resume(data: Mapping[str, Any]) -> dict[str, JsonValue]:
    return _wire(resume_document_state(data).result)


def resume_document_state(data: Mapping[str, Any]) -> DiagnosisState:
    """Resume a journal prefix by the rule of spec §12, continuing with scripted effects.

    The continuation effects (``responses`` and ``gatekeeper`` or
    ``tool_ledger``, read as in a §9 scenario) serve the calls made *after*
    the resume point, in call order; an interrupted planner, verifier or
    composer call is re-sent, so it takes the next scripted response.

    Raises :class:`ScenarioError` for a malformed document or continuation,
    :class:`JournalError` for a journal that does not verify.
    """
    from diagnosis_core import load_scenario, run_diagnosis, scenario_effects, scenario_request
    from diagnosis_core.journal import Journal, journal_to_wire

    unknown = sorted(set(data) - _RESUME_KEYS)
    if unknown:
        raise ScenarioError(f"{unknown[0]}: unknown key")
    if "journal" not in data:
        raise ScenarioError("journal: missing")
    journal = Journal.load(data["journal"])
    scenario: dict[str, object] = dict(_request_wire(journal_to_wire(journal)))
    for key in ("responses", "gatekeeper", "tool_ledger"):
        if data.get(key) is not None:
            scenario[key] = data[key]
    loaded = load_scenario(scenario)
    return run_diagnosis(scenario_request(loaded), scenario_effects(loaded), journal=journal)


def _request_wire(journal: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
    request = journal["request"]
    assert isinstance(request, dict)
    return request
