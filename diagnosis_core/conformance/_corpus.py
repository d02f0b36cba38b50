"""The corpus: cases by area, shipped as package data (``corpus/<area>.json``).

A corpus file is ``{"protocol_version": "1.2", "area": AREA, "cases": [...]}``;
a case is ``{"name", "why", "document" | "text", "expected", "error_names"?}``:
``document`` is the JSON document an implementation runs (``text`` instead
when the case is about the bytes of the file itself: a duplicate key, a
4301-digit integer), ``expected`` the result line (the ``run --json`` object,
or ``{"error": message}`` for a refused document), ``error_names`` the path a
refusal must name. Files are written one case per line, so a diff after
regeneration shows which cases changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from diagnosis_core import JsonValue
from diagnosis_core.protocol import describe_value, loads_stored

__all__ = ["AREAS", "PROTOCOL_VERSION", "Case", "corpus_files", "document_text", "load_corpus"]

PROTOCOL_VERSION = "1.2"
"""The protocol version the corpus pins (``docs/protocol.md``)."""

AREAS: tuple[str, ...] = (
    "examples", "routing", "reason_codes", "payloads", "gatekeeper", "projection",
    "verdict_ceiling", "evidence_retry", "technical_retry", "fallbacks", "agent_inputs",
    "reference_gatekeeper", "scenarios", "journals", "aiops",
)
"""The corpus areas, in the order ``conformance list`` prints them."""

CORPUS_PACKAGE = "diagnosis_core.conformance"
CORPUS_DIRECTORY = "corpus"


@attrs.frozen
class Case:
    """One conformance case: a document, its expected result line, and the rule it pins.

    Attributes:
        area: the corpus area (``routing``, ``payloads``, …).
        name: unique within the area; ``id`` is ``area/name``.
        why: one line citing the protocol section the case pins.
        document: the JSON document run (None when ``text`` is given).
        text: the document's exact text, for cases about the bytes themselves.
        expected: the result line this package produces.
        error_names: for a refusal, the path the error message must name.
    """

    area: str
    name: str
    why: str
    document: Any = None
    text: str | None = None
    expected: Mapping[str, Any] = attrs.field(factory=dict)
    error_names: str | None = None

    @property
    def id(self) -> str:
        """``area/name``, what ``-k`` matches and failures print."""
        return f"{self.area}/{self.name}"

    def to_wire(self) -> dict[str, JsonValue]:
        """The case as its corpus file holds it."""
        wire: dict[str, JsonValue] = {"name": self.name, "why": self.why}
        if self.text is not None:
            wire["text"] = self.text
        else:
            wire["document"] = self.document
        wire["expected"] = dict(self.expected)
        if self.error_names is not None:
            wire["error_names"] = self.error_names
        return wire


def document_text(case: Case) -> str:
    """The text handed to an implementation: one line (``run --json --batch`` reads lines)."""
    if case.text is not None:
        return case.text
    text = json.dumps(case.document, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only an escape can carry it
        return json.dumps(case.document)
    return text


def corpus_directory() -> Path:
    """The directory of the shipped corpus files."""
    return Path(str(resources.files(CORPUS_PACKAGE).joinpath(CORPUS_DIRECTORY)))


def corpus_files(directory: Path | None = None) -> list[Path]:
    """The corpus files, sorted by name."""
    return sorted((directory or corpus_directory()).glob("*.json"))


_CASE_KEYS = frozenset({"name", "why", "document", "text", "expected", "error_names"})


def _case(area: str, index: int, item: object) -> Case:
    """One case of a corpus file, its shape checked (``ValueError`` naming what is wrong)."""
    where = f"cases[{index}]"
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = sorted(set(item) - _CASE_KEYS)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key")
    for key in ("name", "why"):
        if not isinstance(item.get(key), str):
            raise ValueError(f"{where}.{key}: expected a string")
    if not isinstance(item.get("expected"), dict):
        raise ValueError(f"{where}.expected: expected an object")
    if ("document" in item) == ("text" in item):
        raise ValueError(f"{where}: expected one of document and text")
    if "text" in item and not isinstance(item["text"], str):
        raise ValueError(f"{where}.text: expected a string")
    if not isinstance(item.get("error_names", ""), str):
        raise ValueError(f"{where}.error_names: expected a string")
    return Case(
        area=area,
        name=item["name"],
        why=item["why"],
        document=item.get("document"),
        text=item.get("text"),
        expected=item["expected"],
        error_names=item.get("error_names"),
    )


def _corpus_file(path: Path) -> tuple[str, list[Case]]:
    """A corpus file's area and cases, read strictly (duplicate keys, depth, shape)."""
    data = loads_stored(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    if data.get("protocol_version") != PROTOCOL_VERSION:
        raise ValueError(
            f"protocol_version {describe_value(data.get('protocol_version'))}, "
            f"this kit checks {PROTOCOL_VERSION!r}"
        )
    area, cases = data.get("area"), data.get("cases")
    if not isinstance(area, str):
        raise ValueError("area: expected a string")
    if not isinstance(cases, list):
        raise ValueError("cases: expected an array")
    return area, [_case(area, index, item) for index, item in enumerate(cases)]


def load_corpus(directory: Path | None = None) -> list[Case]:
    """Every case of the corpus (the shipped one by default), in area order then file order.

    Files are read with the protocol's strict JSON. Raises ``ValueError``
    naming the file for a file of another protocol version, one that is not
    strict JSON (a duplicate key, nesting deeper than the parser goes) or not
    of a corpus file's shape, and ``OSError`` for one that cannot be read.
    """
    order = {area: index for index, area in enumerate(AREAS)}
    loaded: list[tuple[int, str, list[Case]]] = []
    for path in corpus_files(directory):
        try:
            area, cases = _corpus_file(path)
        except ValueError as error:  # PayloadError and UnicodeDecodeError included
            raise ValueError(f"{path.name}: {error}") from None
        loaded.append((order.get(area, len(order)), area, cases))
    loaded.sort(key=lambda item: (item[0], item[1]))
    return [case for _, _, cases in loaded for case in cases]
