"""The chat workflow's request codec: a :class:`DiagnosisRequest` to and from its wire form.

One reader for both places a request arrives as JSON: a §9 scenario's
request part (``question``, ``run``, ``history``, ``skills``, ``config``) and
a §12 journal's ``request`` object. The reader is told which document it
reads (:class:`~diagnosis_core._kernel.scenario.document.Document`), so a journal's
request fails as a :class:`JournalError` at ``request.<path>`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._kernel.journal.codec import request_object
from .._kernel.scenario.document import (
    JOURNAL_REQUEST,
    Document,
    expect_array,
    expect_object,
    expect_string,
    load_config_section,
    load_run_config,
)
from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import JsonValue
from .config import DiagnosisConfig
from .machine import DiagnosisRequest
from .payloads import HistoryMessage, Skill

__all__ = ["load_request", "request_from_document", "request_to_wire"]

_REQUEST_KEYS = frozenset({"question", "run", "history", "skills", "config"})


def request_to_wire(request: DiagnosisRequest) -> dict[str, JsonValue]:
    """The request as §12 shows it; history and skills reduced to their whitelisted fields."""
    return {
        "question": request.question,
        "run": to_wire(request.run),
        "history": [{"role": item.role, "content": item.content} for item in request.history],
        "skills": [{"name": item.name, "description": item.description} for item in request.skills],
        "config": to_wire(request.config),
    }


def load_request(value: object) -> DiagnosisRequest:
    """A journal's ``request`` object as a :class:`DiagnosisRequest`; :class:`JournalError` else."""
    data = request_object(value, _REQUEST_KEYS, ("question", "run", "config"))
    question = expect_string(data["question"], "question", non_empty=True, document=JOURNAL_REQUEST)
    return request_from_document(data, question, JOURNAL_REQUEST)


def request_from_document(
    data: Mapping[str, object], question: str, document: Document
) -> DiagnosisRequest:
    """The request a document describes, ``question`` already read (its ``run`` … ``config``)."""
    return DiagnosisRequest(
        question=question,
        run=load_run_config(data, document),
        history=tuple(
            HistoryMessage(role, content)
            for role, content in _string_pairs(data, "history", ("role", "content"), document)
        ),
        skills=tuple(
            Skill(name, text)
            for name, text in _string_pairs(data, "skills", ("name", "description"), document)
        ),
        config=load_config_section(data, DiagnosisConfig, document),
    )


def _string_pairs(
    data: Mapping[str, object], section: str, keys: tuple[str, str], document: Document
) -> list[tuple[str, str]]:
    """The optional array ``section`` of objects holding the two string ``keys``."""
    raw = data.get(section)
    if raw is None:
        return []
    pairs = []
    for index, item in enumerate(expect_array(raw, section, document)):
        path = f"{section}[{index}]"
        entry = expect_object(item, path, document)
        for key in keys:
            if key not in entry:
                raise document.fail(f"{path}.{key}", "missing")
        first, second = (
            expect_string(entry[key], f"{path}.{key}", document=document) for key in keys
        )
        pairs.append((first, second))
    return pairs
