"""Prometheus Alertmanager webhook payloads as the AIOps flow's alerts (spec §11).

Alertmanager's ``webhook_config`` receiver POSTs one JSON document per
notification, payload ``version`` ``"4"``::

    {"version": "4", "groupKey": str, "truncatedAlerts": int,
     "status": "firing" | "resolved", "receiver": str,
     "groupLabels": {str: str}, "commonLabels": {str: str},
     "commonAnnotations": {str: str}, "externalURL": str,
     "alerts": [{"status": "firing" | "resolved", "labels": {str: str},
                 "annotations": {str: str}, "startsAt": str, "endsAt": str,
                 "generatorURL": str, "fingerprint": str}]}

:func:`alerts_from_alertmanager` turns it into :class:`Alert` values: one per
entry of ``alerts`` whose ``status`` is ``firing``, in payload order; resolved
entries are skipped and counted. The mapping:

=============== ==============================================================
``name``        ``labels.alertname`` (required, non-empty)
``service``     the first non-empty of ``labels.service``, ``labels.job``,
                ``labels.app``; else ``""``
``severity``    ``labels.severity``, else ``""``
``started_at``  ``startsAt``, as given
``labels``      the entry's ``labels``
``annotations`` the entry's ``annotations`` (absent or null: empty)
=============== ==============================================================

An empty label value counts as absent for ``service``, as Prometheus treats
a label with an empty value as no label at all.

**Other senders of the same body.** Grafana-managed alerting's webhook
contact point sends this body with ``version`` ``"1"`` and a few fields of
its own — top level ``orgId`` (integer), ``state``, ``title``, ``message``
(strings); per alert ``silenceURL``, ``dashboardURL``, ``panelURL``,
``imageURL``, ``valueString`` (strings) and ``values`` (an object of numbers,
or null). Senders modelled on Alertmanager's receiver, such as calert-style
bridges, send it with no ``version`` at all. All three are read with the
same mapping: ``version`` may be ``"4"``, ``"1"``, absent or null, and the
Grafana fields are type-checked when present but carried into no alert.
Any other ``version`` (``"3"``, the number ``4``) is refused, and so is a
document without ``alerts`` or with an entry that is not an alert: what is
not a webhook body stays refused.

The reading fails closed: every entry is checked, resolved ones included,
and so is the type of every documented top-level field that is present
(``null`` means absent for the optional ones). Unknown keys are ignored at
every level, since Alertmanager may add fields. Any problem is an
:class:`AlertmanagerPayloadError` whose path names the first bad value
(``alerts[2].labels.alertname: missing``) — never a ``KeyError`` or
``TypeError``. The cost is linear in the size of the payload: each string is
looked at once and no unknown value is walked.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from .._kernel.errors import DiagnosisError
from .._kernel.wire.json import SURROGATE as _SURROGATE
from .._kernel.wire.json import describe_value, json_path_index, json_path_key, json_type_name
from .payloads import Alert

__all__ = [
    "ALERTMANAGER_WEBHOOK_VERSION",
    "GRAFANA_WEBHOOK_VERSION",
    "AlertmanagerAlerts",
    "AlertmanagerPayloadError",
    "alerts_from_alertmanager",
]

ALERTMANAGER_WEBHOOK_VERSION = "4"
"""The webhook payload ``version`` of Prometheus Alertmanager's ``webhook_config``."""
GRAFANA_WEBHOOK_VERSION = "1"
"""The ``version`` Grafana-managed alerting's webhook contact point sends (same body)."""
_VERSIONS = (ALERTMANAGER_WEBHOOK_VERSION, GRAFANA_WEBHOOK_VERSION)

FIRING = "firing"
RESOLVED = "resolved"
_STATUSES = (FIRING, RESOLVED)
_SERVICE_LABELS = ("service", "job", "app")
_OPTIONAL_TOP_STRINGS = ("groupKey", "status", "receiver", "externalURL")
_OPTIONAL_TOP_MAPPINGS = ("groupLabels", "commonLabels", "commonAnnotations")
_OPTIONAL_ENTRY_STRINGS = (
    "endsAt",
    "generatorURL",
    "fingerprint",
    # Grafana-managed alerting
    "silenceURL",
    "dashboardURL",
    "panelURL",
    "imageURL",
    "valueString",
)
_GRAFANA_TOP_STRINGS = ("state", "title", "message")


class AlertmanagerPayloadError(DiagnosisError, ValueError):
    """An alert webhook payload is not a valid document (Alertmanager, Grafana or calert).

    ``path`` locates the offending value (``alerts[2].labels.alertname``,
    empty for the document itself) and ``problem`` says what is wrong with it
    (``missing``, ``expected a string, got number`` …); ``str(error)`` is
    ``"<path>: <problem>"``. It is not a :class:`PayloadError`: the payload
    comes from the host's alert source, not from an agent.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path or '$'}: {problem}")


@attrs.frozen
class AlertmanagerAlerts:
    """What one webhook payload gives the flow.

    ``alerts`` are the firing entries as :class:`Alert` values, in payload
    order; ``resolved_count`` is the number of resolved entries skipped;
    ``truncated_count`` is the payload's ``truncatedAlerts`` (entries
    Alertmanager left out because of ``max_alerts``, 0 when absent), so a host
    can tell that the payload does not hold every alert of the group.
    """

    alerts: tuple[Alert, ...]
    resolved_count: int = 0
    truncated_count: int = 0


def _string(value: object, path: str, *, non_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise AlertmanagerPayloadError(path, f"expected a string, got {json_type_name(value)}")
    text = str.__str__(value)  # a plain ``str``, even from a ``str`` subclass
    if non_empty and not text:
        raise AlertmanagerPayloadError(path, "expected a non-empty string")
    if not text.isascii() and _SURROGATE.search(text):
        raise AlertmanagerPayloadError(path, "contains an unpaired surrogate")
    return text


def _object(value: object, path: str) -> Mapping[object, object]:
    if not isinstance(value, Mapping):
        raise AlertmanagerPayloadError(path, f"expected an object, got {json_type_name(value)}")
    return value


def _strings(value: object, path: str) -> dict[str, str]:
    """An object whose keys and values are all strings, as a plain dict.

    The common case (plain ``str`` keys and values, ASCII or free of
    surrogates) is one pass; only a bad item builds its path.
    """
    result: dict[str, str] = {}
    for key, item in _object(value, path).items():
        if key.__class__ is str and item.__class__ is str and (
            (key.isascii() and item.isascii())
            or not (_SURROGATE.search(key) or _SURROGATE.search(item))
        ):
            result[key] = item
            continue
        if not isinstance(key, str):
            raise AlertmanagerPayloadError(
                path, f"keys must be strings, got {json_type_name(key)}"
            )
        name = _string(key, path)
        result[name] = _string(item, json_path_key(path, name))
    return result


def _service(labels: Mapping[str, str]) -> str:
    for label in _SERVICE_LABELS:
        value = labels.get(label, "")
        if value:
            return value
    return ""


def _check_top_level(document: Mapping[object, object]) -> int:
    """Check the documented top-level fields; the ``truncatedAlerts`` count."""
    version = document.get("version")
    if version is not None and (version.__class__ is not str or version not in _VERSIONS):
        raise AlertmanagerPayloadError(
            "version",
            f"expected {ALERTMANAGER_WEBHOOK_VERSION!r} (Alertmanager), "
            f"{GRAFANA_WEBHOOK_VERSION!r} (Grafana) or none, got {describe_value(version)}",
        )
    for key in _GRAFANA_TOP_STRINGS:
        if document.get(key) is not None:
            _string(document[key], key)
    org = document.get("orgId")
    if org is not None and org.__class__ is not int:
        raise AlertmanagerPayloadError("orgId", f"expected an integer, got {json_type_name(org)}")
    for key in _OPTIONAL_TOP_STRINGS:
        if document.get(key) is not None:
            _string(document[key], key)
    for key in _OPTIONAL_TOP_MAPPINGS:
        if document.get(key) is not None:
            _strings(document[key], key)
    truncated = document.get("truncatedAlerts")
    if truncated is None:
        return 0
    if truncated.__class__ is not int:  # a boolean is not a count
        raise AlertmanagerPayloadError(
            "truncatedAlerts", f"expected an integer, got {json_type_name(truncated)}"
        )
    if truncated < 0:
        raise AlertmanagerPayloadError("truncatedAlerts", "expected an integer >= 0")
    return truncated


def _values(value: object, path: str) -> None:
    """Grafana's ``values``: the query results by reference id, numbers (or null)."""
    for key, item in _object(value, path).items():
        if not isinstance(key, str):
            raise AlertmanagerPayloadError(
                path, f"keys must be strings, got {json_type_name(key)}"
            )
        if item is not None and (item.__class__ is bool or not isinstance(item, int | float)):
            raise AlertmanagerPayloadError(
                json_path_key(path, _string(key, path)),
                f"expected a number, got {json_type_name(item)}",
            )


def _entry(item: object, path: str) -> Alert | None:
    """The alert of one entry of ``alerts``, or None for a resolved entry."""
    entry = _object(item, path)
    status = entry.get("status")
    if status is None:
        raise AlertmanagerPayloadError(f"{path}.status", "missing")
    if status.__class__ is not str or status not in _STATUSES:
        raise AlertmanagerPayloadError(
            f"{path}.status", f"expected 'firing' or 'resolved', got {describe_value(status)}"
        )
    if entry.get("labels") is None:
        raise AlertmanagerPayloadError(f"{path}.labels", "missing")
    labels = _strings(entry["labels"], f"{path}.labels")
    if "alertname" not in labels:
        raise AlertmanagerPayloadError(f"{path}.labels.alertname", "missing")
    name = _string(labels["alertname"], f"{path}.labels.alertname", non_empty=True)
    raw_annotations = entry.get("annotations")
    annotations = (
        {} if raw_annotations is None else _strings(raw_annotations, f"{path}.annotations")
    )
    if entry.get("startsAt") is None:
        raise AlertmanagerPayloadError(f"{path}.startsAt", "missing")
    started_at = _string(entry["startsAt"], f"{path}.startsAt")
    for key in _OPTIONAL_ENTRY_STRINGS:
        if entry.get(key) is not None:
            _string(entry[key], f"{path}.{key}")
    if entry.get("values") is not None:
        _values(entry["values"], f"{path}.values")
    if status == RESOLVED:
        return None
    return Alert(
        name=name,
        service=_service(labels),
        severity=labels.get("severity", ""),
        started_at=started_at,
        labels=labels,
        annotations=annotations,
    )


def alerts_from_alertmanager(payload: object) -> AlertmanagerAlerts:
    """Map an alert webhook payload to the flow's alerts (Alertmanager, Grafana, calert).

    Prometheus Alertmanager sends ``version`` ``"4"``, Grafana-managed
    alerting the same body with ``version`` ``"1"``, calert-style senders no
    ``version``: all are read with the same mapping (module docstring).

    ``payload`` is the decoded JSON body of the webhook request. Returns the
    firing entries as alerts (payload order), the number of resolved entries
    skipped, and the payload's ``truncatedAlerts``. An empty result (every
    entry resolved) names no alert, so a run given it is ``AUTO_DISCOVERY``
    (spec §11, an empty payload is no payload).

    Raises:
        AlertmanagerPayloadError: for anything that is not such a payload
            as documented, with the path of the first problem:
            ``version: expected '4' (Alertmanager), '1' (Grafana) or none, got
            '3'``, ``alerts[2].labels.alertname:
            missing``, ``alerts[0].annotations.summary: expected a string, got
            number``.
    """
    document = _object(payload, "")
    truncated = _check_top_level(document)
    if document.get("alerts") is None:
        raise AlertmanagerPayloadError("alerts", "missing")
    entries = document["alerts"]
    if not isinstance(entries, list | tuple):
        raise AlertmanagerPayloadError(
            "alerts", f"expected an array, got {json_type_name(entries)}"
        )
    alerts: list[Alert] = []
    resolved = 0
    for index, item in enumerate(entries):
        alert = _entry(item, json_path_index("alerts", index))
        if alert is None:
            resolved += 1
        else:
            alerts.append(alert)
    return AlertmanagerAlerts(tuple(alerts), resolved_count=resolved, truncated_count=truncated)
