"""The AIOps request codec: an :class:`AiOpsRequest` to and from its wire form.

One reader for both places a request arrives as JSON: an AIOps scenario's
request part (``run``, ``alerts`` or ``alertmanager``, ``config``) and an
``aiops_journal_v1`` journal's ``request`` object; the
:class:`~diagnosis_core._kernel.scenario.document.Document` it is given says which
error a problem raises and under which path.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._kernel.journal.codec import request_object
from .._kernel.scenario.document import (
    JOURNAL_REQUEST,
    Document,
    check_known_keys,
    expect_array,
    expect_object,
    expect_string,
    expect_strings,
    load_config_section,
    load_run_config,
)
from .._kernel.wire.converter import to_wire
from .._kernel.wire.json import JsonValue
from .alertmanager import AlertmanagerPayloadError, alerts_from_alertmanager
from .config import AiOpsConfig
from .machine import AiOpsRequest
from .payloads import Alert

__all__ = ["aiops_request_from_document", "aiops_request_to_wire", "load_aiops_request"]

_REQUEST_KEYS = frozenset({"run", "alerts", "config"})


def aiops_request_to_wire(request: AiOpsRequest) -> dict[str, JsonValue]:
    """The request as an AIOps journal holds it: ``{"run", "alerts", "config"}``."""
    return {
        "run": to_wire(request.run),
        "alerts": [to_wire(alert) for alert in request.alerts],
        "config": to_wire(request.config),
    }


def load_aiops_request(value: object) -> AiOpsRequest:
    """A journal's ``request`` object as an :class:`AiOpsRequest`; :class:`JournalError` else."""
    data = request_object(value, _REQUEST_KEYS, ("run", "alerts", "config"))
    return aiops_request_from_document(data, JOURNAL_REQUEST)


def aiops_request_from_document(data: Mapping[str, object], document: Document) -> AiOpsRequest:
    """The request a document describes: its ``run``, alerts and ``config``."""
    return AiOpsRequest(
        run=load_run_config(data, document),
        alerts=_load_alerts(data, document),
        config=load_config_section(data, AiOpsConfig, document),
    )


_ALERT_KEYS = frozenset({"name", "service", "severity", "started_at", "labels", "annotations"})


def _load_alert(item: object, path: str, document: Document) -> Alert:
    entry = expect_object(item, path, document)
    check_known_keys(entry, _ALERT_KEYS, path, document)
    for key in ("name", "service", "severity", "started_at"):
        if entry.get(key) is None:
            raise document.fail(f"{path}.{key}", "missing")
    return Alert(
        name=expect_string(entry["name"], f"{path}.name", non_empty=True, document=document),
        service=expect_string(
            entry["service"], f"{path}.service", non_empty=True, document=document
        ),
        severity=expect_string(entry["severity"], f"{path}.severity", document=document),
        started_at=expect_string(entry["started_at"], f"{path}.started_at", document=document),
        labels=expect_strings(entry.get("labels"), f"{path}.labels", document),
        annotations=expect_strings(entry.get("annotations"), f"{path}.annotations", document),
    )


def _load_alerts(data: Mapping[str, object], document: Document) -> tuple[Alert, ...]:
    raw = data.get("alerts")
    if data.get("alertmanager") is not None:
        if raw is not None:
            raise document.fail("alertmanager", 'give either "alerts" or "alertmanager", not both')
        try:
            return alerts_from_alertmanager(data["alertmanager"]).alerts
        except AlertmanagerPayloadError as error:
            path = f"alertmanager.{error.path}" if error.path else "alertmanager"
            raise document.fail(path, error.problem) from error
    if raw is None:
        return ()
    return tuple(
        _load_alert(item, f"alerts[{index}]", document)
        for index, item in enumerate(expect_array(raw, "alerts", document))
    )
