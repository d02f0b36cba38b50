"""Reading a host's JSON document strictly, path by path (spec §9, §12).

A §9 scenario and a journal's ``request`` are both documents a host hands
over: plain JSON data that may be malformed in any way. The readers here check
one value each and, on the first problem, raise the document's error naming
the path (``run.run_id: expected a non-empty string``). The same readers serve
both documents; a :class:`Document` says which error class is raised and
under which root path, so a journal's request reports
``request.run.run_id: …`` as a :class:`JournalError` directly, without
building a scenario or rewriting a scenario error's text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import attrs
from attrs import AttrsInstance

from ..errors import ConfigError, DiagnosisError, JournalError, PayloadError, ScenarioError
from ..machine.config import RunConfig
from ..wire.json import (
    canonical_json,
    describe_value,
    has_surrogate,
    int_from_literal,
    json_type_name,
)

__all__ = [
    "JOURNAL_REQUEST",
    "SCENARIO",
    "Document",
    "check_known_keys",
    "expect_array",
    "expect_object",
    "expect_string",
    "expect_strings",
    "load_config_section",
    "load_run_config",
    "parse_document_text",
    "scenario_error",
]

C = TypeVar("C", bound=AttrsInstance)

_RUN_KEYS = frozenset({"run_id", "session_id", "metadata"})


@attrs.frozen
class Document:
    """Which document is read: the error class its problems raise and its root path.

    ``root`` is empty for a §9 scenario (paths read ``run.run_id``, the whole
    document ``$``) and ``request`` for a journal's request (``request.run.run_id``,
    the whole request ``request``).
    """

    error: type[DiagnosisError] = ScenarioError
    root: str = ""

    def where(self, path: str) -> str:
        """``path`` of this document as the error shows it."""
        if not self.root:
            return path
        if path in ("$", ""):
            return self.root
        return f"{self.root}.{path}"

    def fail(self, path: str, problem: str) -> DiagnosisError:
        """The error for ``problem`` at ``path``."""
        return self.error(f"{self.where(path)}: {problem}")


SCENARIO = Document()
"""A §9 scenario document: :class:`ScenarioError`, paths from the top."""
JOURNAL_REQUEST = Document(JournalError, "request")
"""A journal's ``request`` object: :class:`JournalError`, paths under ``request``."""


def scenario_error(path: str, problem: str) -> ScenarioError:
    return ScenarioError(f"{path}: {problem}")


def expect_object(
    value: object, path: str, document: Document = SCENARIO
) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise document.fail(path, f"expected an object, got {_type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise document.fail(path, f"keys must be strings, got {describe_value(key)}")
    return value


def expect_array(value: object, path: str, document: Document = SCENARIO) -> Sequence[object]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise document.fail(path, f"expected an array, got {_type_name(value)}")
    return value


def expect_string(
    value: object,
    path: str,
    *,
    non_empty: bool = False,
    text: bool = True,
    document: Document = SCENARIO,
) -> str:
    """A string; request material (``text``) must also be valid Unicode text."""
    if not isinstance(value, str):
        raise document.fail(path, f"expected a string, got {_type_name(value)}")
    if non_empty and not value:
        raise document.fail(path, "expected a non-empty string")
    if text and has_surrogate(value):
        raise document.fail(path, "contains an unpaired surrogate")
    return value


def expect_strings(raw: object, path: str, document: Document = SCENARIO) -> dict[str, str]:
    """An optional object of strings (absent or null: empty), as a plain dict."""
    if raw is None:
        return {}
    value = expect_object(raw, path, document)
    return {
        key: expect_string(item, f"{path}.{key}", document=document)
        for key, item in value.items()
    }


def _type_name(value: object) -> str:
    # Any Mapping / Sequence, not just dict / list: a host may hand over its own.
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "array"
    return json_type_name(value)


def check_known_keys(
    value: Mapping[str, object], allowed: frozenset[str], path: str, document: Document = SCENARIO
) -> None:
    for key in value:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise document.fail(where, "unknown key")


def _json_text(value: object, path: str) -> str:
    try:
        return canonical_json(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise scenario_error(path, f"not a JSON value ({error})") from error


def _scenario_run_id(data: Mapping[str, object]) -> str:
    # Agent texts may hold lone surrogates (§9: they are model output), so encode
    # them as the trace hashes do instead of failing.
    digest = hashlib.sha256(_json_text(data, "$").encode("utf-8", "surrogatepass")).hexdigest()
    return f"run-{digest[:16]}"


def load_run_config(data: Mapping[str, object], document: Document = SCENARIO) -> RunConfig:
    """The ``run`` object of a document; a scenario without ``run_id`` gets one from its hash."""
    raw = data.get("run")
    run = expect_object(raw, "run", document) if raw is not None else {}
    check_known_keys(run, _RUN_KEYS, "run", document)
    run_id = (
        expect_string(run["run_id"], "run.run_id", non_empty=True, document=document)
        if run.get("run_id") is not None
        else _scenario_run_id(data)
    )
    session_id = (
        expect_string(run["session_id"], "run.session_id", non_empty=True, document=document)
        if run.get("session_id") is not None
        else run_id
    )
    metadata = expect_strings(run.get("metadata"), "run.metadata", document)
    values = {"run_id": run_id, "session_id": session_id, "metadata": metadata}
    return _built(RunConfig, values, "run", document)


def load_config_section(
    data: Mapping[str, object], config_class: type[C], document: Document = SCENARIO
) -> C:
    """The ``config`` object of a document as ``config_class`` (an ``attrs`` class).

    Shared by both workflows' loaders: absent or null means the defaults, unknown
    keys and values the class rejects are the document's error naming the path.
    """
    raw = data.get("config")
    if raw is None:
        return config_class()
    config = expect_object(raw, "config", document)
    check_known_keys(config, frozenset(attrs.fields_dict(config_class)), "config", document)
    values = {key: value for key, value in config.items() if value is not None}  # null: absent
    return _built(config_class, values, "config", document)


def _built(cls: type[C], values: Mapping[str, Any], section: str, document: Document) -> C:
    """``cls(**values)`` for a document's ``section`` (``run``, ``config``).

    A :class:`ConfigError` becomes the document's error whose path names the
    field (``config.locale: expected one of …``) and whose ``__cause__`` is
    the ``ConfigError``.
    """
    try:
        return cls(**values)
    except ConfigError as error:
        field, _, problem = str(error).partition(": ")
        raise document.fail(f"{section}.{field}", problem or str(error)) from error


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise ScenarioError(f"$: duplicate key {key!r} in a JSON object")
        result[key] = value
    return result


def _reject_constant(name: str) -> object:
    raise ScenarioError(f"$: {name} is not valid JSON")


def _document_int(literal: str) -> int:
    try:
        return int_from_literal(literal)
    except PayloadError as error:
        raise ScenarioError(f"$: {error.problem}") from None


def parse_document_text(text: str, name: str = "<document>") -> object:
    """A scenario's or journal's text as JSON data, read strictly (spec §5, §9).

    Duplicate keys, ``NaN``/``Infinity`` and integers past the fixed digit limit
    are refused, whatever the interpreter's own limits say; every problem is a
    :class:`ScenarioError` that starts with ``name`` (``-`` reads as
    ``<stdin>``), so the command line, the conformance runner and a host all
    report one bad document the same way.
    """
    if name == "-":
        name = "<stdin>"
    try:
        return json.loads(
            text,
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
            parse_int=_document_int,  # the fixed digit limit of spec §5
        )
    except json.JSONDecodeError as error:
        raise ScenarioError(
            f"{name}: invalid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise ScenarioError(f"{name}: JSON nested too deeply") from None
    except ScenarioError as error:  # from a hook: name the document
        raise ScenarioError(f"{name}: {error}") from None
