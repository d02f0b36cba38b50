"""Alertmanager webhook payloads as AIOps alerts (spec §11 "Real alert sources").

The fixtures in ``tests/fixtures/alertmanager`` follow the shapes Alertmanager
documents for its ``webhook_config`` receiver (payload version 4, Go's time
encoding, a zero ``endsAt`` for firing alerts) and the superset a Grafana
contact point sends; the expected alerts below are written by hand.
"""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diagnosis_core as dc
from diagnosis_core.cli import main
from tests._reach import aiops as dca
from tests._reach import protocol as dcp

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "alertmanager"
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


# --- the documented shapes ---------------------------------------------------------

EXPECTED: dict[str, tuple[list[dcp.Alert], int, int]] = {
    "firing_single.json": (
        [
            dcp.Alert(
                name="HighRequestLatency",
                service="pay-svc",
                severity="critical",
                started_at="2024-05-01T10:00:12.345678901+02:00",
                labels={
                    "alertname": "HighRequestLatency", "env": "prod",
                    "instance": "pay-svc-7d9f:8080", "job": "pay-svc-scrape",
                    "service": "pay-svc", "severity": "critical",
                },
                annotations={
                    "description": (
                        "p99 latency of /api/pay is 2.4 s (threshold 1 s) for 5 minutes."
                    ),
                    "runbook_url": "https://runbooks.example.internal/latency",
                    "summary": "pay-svc p99 latency above 1 s",
                },
            )
        ],
        0,
        0,
    ),
    "mixed_group.json": (
        [
            dcp.Alert(
                name="KubePodCrashLooping",
                service="kube-state-metrics",
                severity="warning",
                started_at="2024-05-01T10:04:00Z",
                labels={
                    "alertname": "KubePodCrashLooping", "env": "prod",
                    "job": "kube-state-metrics", "namespace": "orders",
                    "pod": "order-svc-5c8b7-x2q", "severity": "warning",
                },
                annotations={"summary": "Pod orders/order-svc-5c8b7-x2q is crash looping"},
            ),
            dcp.Alert(
                name="QueueBacklog",
                service="billing-worker",
                severity="",
                started_at="2024-05-01T10:06:30.5Z",
                labels={"alertname": "QueueBacklog", "app": "billing-worker", "env": "prod"},
                annotations={
                    "description": "More than 10 000 messages wait in billing.invoices.",
                    "runbook_url": "https://runbooks.example.internal/queue-backlog",
                },
            ),
        ],
        1,
        0,
    ),
    "all_resolved.json": ([], 2, 0),
    "truncated_no_service.json": (
        [
            dcp.Alert(
                name="InstanceDown",
                service="",
                severity="",
                started_at="2024-05-01T11:00:00Z",
                labels={"alertname": "InstanceDown", "instance": "10.0.3.17:9100", "job": ""},
            )
        ],
        0,
        3,
    ),
    "grafana_extra_fields.json": (
        [
            dcp.Alert(
                name="High memory usage",
                service="search-api",
                severity="",
                started_at="2024-05-01T12:15:03.157076+02:00",
                labels={
                    "alertname": "High memory usage", "service": "search-api",
                    "team": "blue", "zone": "eu-1",
                },
                annotations={
                    "description": "Resident memory of search-api is above 90% of its limit",
                    "runbook_url": "https://runbooks.example.internal/memory",
                    "summary": "search-api memory above 90%",
                },
            )
        ],
        0,
        0,
    ),
    # Grafana-managed alerting: the same body with version "1" and its own fields.
    "grafana_managed_v1.json": (
        [
            dcp.Alert(
                name="CheckoutLatencyHigh",
                service="checkout",
                severity="critical",
                started_at="2024-06-03T08:41:20Z",
                labels={
                    "alertname": "CheckoutLatencyHigh", "grafana_folder": "Payments",
                    "job": "checkout", "severity": "critical",
                },
                annotations={
                    "summary": "checkout p99 latency above 2 s",
                    "runbook_url": "https://runbooks.example.internal/checkout-latency",
                },
            )
        ],
        1,
        0,
    ),
    # A calert-style sender: Alertmanager's body without a version.
    "calert_no_version.json": (
        [
            dcp.Alert(
                name="KafkaConsumerLag",
                service="ledger-consumer",
                severity="warning",
                started_at="2024-06-03T09:00:00.000Z",
                labels={
                    "alertname": "KafkaConsumerLag", "app": "ledger-consumer",
                    "severity": "warning",
                },
                annotations={"summary": "consumer lag above 10k messages"},
            )
        ],
        0,
        0,
    ),
}  # fmt: skip


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(path.name for path in FIXTURES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_documented_payload_maps_to_the_expected_alerts(name: str) -> None:
    alerts, resolved, truncated = EXPECTED[name]
    result = dca.alerts_from_alertmanager(fixture(name))
    assert result == dca.AlertmanagerAlerts(tuple(alerts), resolved, truncated)
    for alert, expected in zip(result.alerts, alerts, strict=True):
        assert dict(alert.annotations) == dict(expected.annotations)
        assert type(alert.name) is str and type(alert.started_at) is str


def test_the_result_and_the_alerts_are_read_only() -> None:
    result = dca.alerts_from_alertmanager(fixture("firing_single.json"))
    (alert,) = result.alerts
    with pytest.raises(TypeError):
        alert.annotations["summary"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        alert.labels["env"] = "dev"  # type: ignore[index]
    with pytest.raises(AttributeError):
        result.resolved_count = 5  # type: ignore[misc]
    assert list(alert.annotations) == sorted(alert.annotations)


def test_the_mapping_does_not_keep_a_reference_to_the_payload() -> None:
    payload = fixture("firing_single.json")
    (alert,) = dca.alerts_from_alertmanager(payload).alerts
    payload["alerts"][0]["annotations"]["summary"] = "changed"
    payload["alerts"][0]["labels"]["service"] = "other"
    assert alert.annotations["summary"] == "pay-svc p99 latency above 1 s"
    assert alert.labels["service"] == "pay-svc"


# --- the service label and the optional fields ---------------------------------------


def payload(*entries: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"version": "4", "status": "firing", "alerts": list(entries), **top}


def entry(labels: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "status": "firing",
        "labels": {"alertname": "A"} if labels is None else labels,
        "annotations": {},
        "startsAt": "2024-05-01T10:00:00Z",
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("labels", "service"),
    [
        ({"service": "s", "job": "j", "app": "a"}, "s"),
        ({"job": "j", "app": "a"}, "j"),
        ({"app": "a"}, "a"),
        ({}, ""),
        ({"service": "", "job": "j"}, "j"),
        ({"service": "", "job": "", "app": ""}, ""),
        ({"Service": "s", "instance": "i"}, ""),
    ],
)
def test_service_is_the_first_non_empty_of_service_job_app(
    labels: dict[str, str], service: str
) -> None:
    result = dca.alerts_from_alertmanager(payload(entry({"alertname": "A", **labels})))
    assert [alert.service for alert in result.alerts] == [service]


def test_null_annotations_and_optional_fields_mean_absent() -> None:
    # Go encodes a nil map as null; every optional field may be null or absent.
    result = dca.alerts_from_alertmanager(
        {
            "version": "4", "alerts": [entry(annotations=None, endsAt=None, fingerprint=None)],
            "groupLabels": None, "commonLabels": None, "commonAnnotations": None,
            "receiver": None, "status": None, "externalURL": None, "groupKey": None,
            "truncatedAlerts": None,
        }
    )  # fmt: skip
    (alert,) = result.alerts
    assert dict(alert.annotations) == {} and result.truncated_count == 0
    del_annotations = entry()
    del del_annotations["annotations"]
    assert dca.alerts_from_alertmanager(payload(del_annotations)).alerts == (alert,)


def test_unknown_fields_are_ignored_at_every_level() -> None:
    junk = {"nested": [[{"deep": float("1e308")}]], "n": 10**400, "b": True}
    plain = dca.alerts_from_alertmanager(payload(entry()))
    noisy = dca.alerts_from_alertmanager(payload(entry(**junk), **junk))
    assert noisy == plain
    expected = dcp.Alert("A", "", "", "2024-05-01T10:00:00Z", {"alertname": "A"}, {})
    assert noisy == dca.AlertmanagerAlerts((expected,), 0, 0)


def test_an_empty_alerts_array_gives_no_alert() -> None:
    assert dca.alerts_from_alertmanager(payload()) == dca.AlertmanagerAlerts((), 0, 0)


# --- typed errors with a path --------------------------------------------------------

VERSIONS = "expected '4' (Alertmanager), '1' (Grafana) or none"

ERRORS: list[tuple[object, str]] = [
    ([], "$: expected an object, got array"),
    ("{}", "$: expected an object, got string"),
    (None, "$: expected an object, got null"),
    ({"version": "3", "alerts": []}, f"version: {VERSIONS}, got '3'"),
    ({"version": 4, "alerts": []}, f"version: {VERSIONS}, got 4"),
    ({"version": 1, "alerts": []}, f"version: {VERSIONS}, got 1"),
    ({"version": "", "alerts": []}, f"version: {VERSIONS}, got ''"),
    ({}, "alerts: missing"),
    ({"version": "1"}, "alerts: missing"),
    ({"status": "firing", "receiver": "x"}, "alerts: missing"),
    (payload(orgId="1"), "orgId: expected an integer, got string"),
    (payload(orgId=True), "orgId: expected an integer, got boolean"),
    (payload(state=1), "state: expected a string, got number"),
    (payload(entry(values=[1])), "alerts[0].values: expected an object, got array"),
    (payload(entry(values={"B": "93.5"})), "alerts[0].values.B: expected a number, got string"),
    (payload(entry(values={"C": True})), "alerts[0].values.C: expected a number, got boolean"),
    (payload(entry(silenceURL=7)), "alerts[0].silenceURL: expected a string, got number"),
    (payload(entry(valueString={})), "alerts[0].valueString: expected a string, got object"),
    ({"version": "4"}, "alerts: missing"),
    ({"version": "4", "alerts": None}, "alerts: missing"),
    ({"version": "4", "alerts": {"0": {}}}, "alerts: expected an array, got object"),
    ({"version": "4", "alerts": "[]"}, "alerts: expected an array, got string"),
    (payload(receiver=7), "receiver: expected a string, got number"),
    (payload(status=["firing"]), "status: expected a string, got array"),
    (payload(externalURL=False), "externalURL: expected a string, got boolean"),
    (payload(groupKey={}), "groupKey: expected a string, got object"),
    (payload(groupLabels=[]), "groupLabels: expected an object, got array"),
    (payload(commonLabels={"env": 1}), "commonLabels.env: expected a string, got number"),
    (payload(commonAnnotations="x"), "commonAnnotations: expected an object, got string"),
    (payload(truncatedAlerts="0"), "truncatedAlerts: expected an integer, got string"),
    (payload(truncatedAlerts=True), "truncatedAlerts: expected an integer, got boolean"),
    (payload(truncatedAlerts=1.0), "truncatedAlerts: expected an integer, got number"),
    (payload(truncatedAlerts=-1), "truncatedAlerts: expected an integer >= 0"),
    (payload(entry(), "x"), "alerts[1]: expected an object, got string"),
    (payload(entry(), entry(), entry({"severity": "critical"})),
     "alerts[2].labels.alertname: missing"),
    (payload(entry({"alertname": ""})), "alerts[0].labels.alertname: expected a non-empty string"),
    (payload(entry({"alertname": None})),
     "alerts[0].labels.alertname: expected a string, got null"),
    (payload(entry({"alertname": "A", "env": 1})),
     "alerts[0].labels.env: expected a string, got number"),
    (payload(entry({"alertname": "A", "odd key": []})),
     "alerts[0].labels['odd key']: expected a string, got array"),
    (payload({**entry(), "labels": None}), "alerts[0].labels: missing"),
    (payload(entry(labels=["alertname"])), "alerts[0].labels: expected an object, got array"),
    (payload(entry(status=None)), "alerts[0].status: missing"),
    (payload(entry(status="pending")),
     "alerts[0].status: expected 'firing' or 'resolved', got 'pending'"),
    (payload(entry(status="FIRING")),
     "alerts[0].status: expected 'firing' or 'resolved', got 'FIRING'"),
    (payload(entry(status=1)), "alerts[0].status: expected 'firing' or 'resolved', got 1"),
    (payload(entry(annotations=[])), "alerts[0].annotations: expected an object, got array"),
    (payload(entry(annotations={"summary": 3})),
     "alerts[0].annotations.summary: expected a string, got number"),
    (payload(entry(startsAt=None)), "alerts[0].startsAt: missing"),
    (payload(entry(startsAt=1714557600)), "alerts[0].startsAt: expected a string, got number"),
    (payload(entry(endsAt=0)), "alerts[0].endsAt: expected a string, got number"),
    (payload(entry(generatorURL=[])), "alerts[0].generatorURL: expected a string, got array"),
    (payload(entry(fingerprint=1)), "alerts[0].fingerprint: expected a string, got number"),
    (payload(entry(status="resolved", labels={})), "alerts[0].labels.alertname: missing"),
    (payload(entry(annotations={"summary": "bad \ud800"})),
     "alerts[0].annotations.summary: contains an unpaired surrogate"),
    (payload(entry({"alertname": "A", 1: "x"})),  # type: ignore[dict-item]
     "alerts[0].labels: keys must be strings, got number"),
]  # fmt: skip


@pytest.mark.parametrize(("document", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_bad_payloads_are_typed_errors_naming_the_path(document: object, message: str) -> None:
    with pytest.raises(dca.AlertmanagerPayloadError) as caught:
        dca.alerts_from_alertmanager(document)
    assert str(caught.value) == message
    path, _, problem = message.partition(": ")
    assert caught.value.path == ("" if path == "$" else path)
    assert caught.value.problem == problem
    assert isinstance(caught.value, dc.DiagnosisError) and isinstance(caught.value, ValueError)
    assert not isinstance(caught.value, dc.PayloadError)


def test_a_huge_value_never_lands_in_the_message() -> None:
    huge = "x" * 1_000_000
    with pytest.raises(dca.AlertmanagerPayloadError) as caught:
        dca.alerts_from_alertmanager({"version": huge, "alerts": []})
    assert len(str(caught.value)) < 200
    with pytest.raises(dca.AlertmanagerPayloadError) as caught:
        dca.alerts_from_alertmanager(payload(entry({"alertname": "A", huge: 1})))
    assert len(str(caught.value)) < 200


def test_the_cost_is_linear_in_the_number_of_entries() -> None:
    # A per-entry rescan of the list (or of earlier alerts) would be quadratic:
    # 50 000 entries would take minutes instead of about a second.
    n = 50_000
    entries = [entry({"alertname": f"A{i}", "service": "s"}) for i in range(n)]
    started = time.perf_counter()
    result = dca.alerts_from_alertmanager(payload(*entries))
    elapsed = time.perf_counter() - started
    assert len(result.alerts) == n
    bad = [*entries, entry({})]
    with pytest.raises(dca.AlertmanagerPayloadError, match=rf"^alerts\[{n}\]\.labels"):
        dca.alerts_from_alertmanager(payload(*bad))
    assert elapsed < 30


# --- Hypothesis: generated payloads --------------------------------------------------

label_text = st.text(max_size=12)
label_maps = st.dictionaries(
    st.sampled_from(("service", "job", "app", "severity", "env", "instance")) | label_text,
    label_text,
    max_size=5,
)


@st.composite
def valid_entries(draw: st.DrawFn) -> dict[str, Any]:
    labels = draw(label_maps)
    labels["alertname"] = draw(st.text(min_size=1, max_size=12))
    item: dict[str, Any] = {
        "status": draw(st.sampled_from(("firing", "resolved"))),
        "labels": labels,
        "startsAt": draw(st.sampled_from(("2024-05-01T10:00:00Z", "0001-01-01T00:00:00Z"))),
    }
    annotations = draw(st.none() | st.dictionaries(label_text, label_text, max_size=3))
    if annotations is not None or draw(st.booleans()):
        item["annotations"] = annotations
    for key in ("endsAt", "generatorURL", "fingerprint"):
        if draw(st.booleans()):
            item[key] = draw(st.none() | label_text)
    return item


@st.composite
def valid_payloads(draw: st.DrawFn) -> dict[str, Any]:
    document: dict[str, Any] = {"alerts": draw(st.lists(valid_entries(), max_size=6))}
    # Alertmanager "4", Grafana-managed alerting "1", a calert-style sender none.
    version = draw(st.sampled_from(("4", "1", None, "absent")))
    if version != "absent":
        document["version"] = version
    optional: dict[str, st.SearchStrategy[Any]] = {
        "orgId": st.integers(0, 10**6), "state": st.sampled_from(("alerting", "ok")),
        "title": label_text, "message": label_text,
        "groupKey": label_text, "status": st.sampled_from(("firing", "resolved")),
        "receiver": label_text, "externalURL": label_text, "groupLabels": label_maps,
        "commonLabels": label_maps, "commonAnnotations": label_maps,
        "truncatedAlerts": st.integers(0, 10**6), "unknownField": st.integers(),
    }  # fmt: skip
    for key, values in optional.items():
        if draw(st.booleans()):
            document[key] = draw(st.none() | values)
    return document


def _oracle_service(labels: dict[str, str]) -> str:
    return next((labels[k] for k in ("service", "job", "app") if labels.get(k)), "")


@SETTINGS
@given(valid_payloads())
def test_valid_payloads_map_one_alert_per_firing_entry(document: dict[str, Any]) -> None:
    result = dca.alerts_from_alertmanager(copy.deepcopy(document))
    firing = [item for item in document["alerts"] if item["status"] == "firing"]
    assert len(result.alerts) == len(firing)
    assert result.resolved_count == len(document["alerts"]) - len(firing)
    assert result.truncated_count == (document.get("truncatedAlerts") or 0)
    for alert, item in zip(result.alerts, firing, strict=True):
        assert alert.name == item["labels"]["alertname"]
        assert alert.service == _oracle_service(item["labels"])
        assert alert.severity == item["labels"].get("severity", "")
        assert alert.started_at == item["startsAt"]
        assert dict(alert.labels) == item["labels"]
        assert dict(alert.annotations) == (item.get("annotations") or {})


# One defect planted at a known place of a valid payload, and the path it must be
# reported at ({i}: the index of the damaged entry).
DEFECTS: list[tuple[str, Any, str]] = [
    ("version", "5", "version"),
    ("version", 4, "version"),
    ("orgId", "one", "orgId"),
    ("entry.values", {"A": "x"}, "alerts[{i}].values.A"),
    ("alerts", {}, "alerts"),
    ("receiver", 1, "receiver"),
    ("commonLabels", {"k": None}, "commonLabels.k"),
    ("truncatedAlerts", -3, "truncatedAlerts"),
    ("entry", 42, "alerts[{i}]"),
    ("entry.status", "silenced", "alerts[{i}].status"),
    ("entry.labels", None, "alerts[{i}].labels"),
    ("entry.labels.alertname", None, "alerts[{i}].labels.alertname"),
    ("entry.labels.env", ["prod"], "alerts[{i}].labels.env"),
    ("entry.annotations", "summary", "alerts[{i}].annotations"),
    ("entry.annotations.summary", 1.5, "alerts[{i}].annotations.summary"),
    ("entry.startsAt", 0, "alerts[{i}].startsAt"),
    ("entry.fingerprint", {}, "alerts[{i}].fingerprint"),
]


@st.composite
def damaged_payloads(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    document = draw(valid_payloads())
    where, value, path = draw(st.sampled_from(DEFECTS))
    if where.startswith("entry") and not document["alerts"]:
        document["alerts"].append(draw(valid_entries()))
    index = draw(st.integers(0, max(len(document["alerts"]) - 1, 0)))
    # Entries before the damaged one stay valid, so the first problem is the planted one.
    if where.startswith("entry."):
        item = document["alerts"][index]
        section = where.split(".")[1]
        if section in ("labels", "annotations") and where.count(".") == 2:
            if item.get(section) is None:
                item[section] = {}
            key = where.split(".")[2]
            if value is None:
                item[section].pop(key, None)
            else:
                item[section][key] = value
        else:
            item[section] = value
    elif where == "entry":
        document["alerts"][index] = value
    else:
        document[where] = value
    return document, path.format(i=index)


@SETTINGS
@given(damaged_payloads())
def test_a_planted_defect_is_reported_at_its_path(case: tuple[dict[str, Any], str]) -> None:
    document, path = case
    with pytest.raises(dca.AlertmanagerPayloadError) as caught:
        dca.alerts_from_alertmanager(document)
    assert caught.value.path == path, str(caught.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)
near_payloads = st.fixed_dictionaries(
    {"version": st.sampled_from(("4", 4, None)) | json_values},
    optional={
        "alerts": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "status": st.sampled_from(("firing", "resolved")) | json_values,
                    "labels": st.dictionaries(
                        st.sampled_from(("alertname", "service", "job")) | st.text(max_size=4),
                        st.text(max_size=4) | json_values,
                        max_size=4,
                    )
                    | json_values,
                    "annotations": json_values,
                    "startsAt": st.text(max_size=4) | json_values,
                    "fingerprint": json_values,
                },
            )
            | json_values,
            max_size=4,
        )
        | json_values,
        "truncatedAlerts": st.integers(-2, 2) | json_values,
        "commonLabels": json_values,
    },
)


@SETTINGS
@given(valid_payloads() | near_payloads | json_values)
def test_arbitrary_json_shapes_map_or_raise_the_typed_error(document: object) -> None:
    try:
        result = dca.alerts_from_alertmanager(document)
    except dca.AlertmanagerPayloadError as error:
        assert str(error).startswith(f"{error.path or '$'}: ") and error.problem
        return
    assert isinstance(result, dca.AlertmanagerAlerts)
    assert isinstance(document, dict)
    entries = document["alerts"]
    assert len(result.alerts) + result.resolved_count == len(entries)
    # The documented mapping (docs/alertmanager.md, "The mapping"), field by field.
    firing = [entry for entry in entries if entry["status"] == "firing"]
    assert result.resolved_count == len(entries) - len(firing)
    assert result.truncated_count == (document.get("truncatedAlerts") or 0)  # null: absent
    expected = [
        (
            entry["labels"]["alertname"],
            next(
                (entry["labels"][k] for k in ("service", "job", "app") if entry["labels"].get(k)),
                "",
            ),
            entry["labels"].get("severity", ""),
            entry["startsAt"],
            sorted(entry["labels"].items()),
            sorted((entry.get("annotations") or {}).items()),
        )
        for entry in firing
    ]
    assert [
        (a.name, a.service, a.severity, a.started_at, list(a.labels.items()),
         list(a.annotations.items()))
        for a in result.alerts
    ] == expected


# --- through the AIOps flow ----------------------------------------------------------


def _decision(choice: str) -> dict[str, str]:
    return {"text": json.dumps({"next": choice, "reason": ""})}


def scenario_of(webhook: object, **extra: Any) -> dict[str, Any]:
    return {
        "workflow": "aiops",
        "run": {"run_id": "am-1", "session_id": "ops"},
        "alertmanager": webhook,
        "responses": {"supervisor": [_decision("FINISH")], "reporter": []},
        **extra,
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_documented_payload_runs_through_the_aiops_flow(name: str) -> None:
    alerts, _, _ = EXPECTED[name]
    scenario = dca.load_aiops_scenario(scenario_of(fixture(name)))
    assert scenario.alerts == tuple(alerts)
    output = dca.replay_aiops(scenario_of(fixture(name)))
    assert output["mode"] == ("PAYLOAD_TARGETED" if alerts else "AUTO_DISCOVERY")
    invocations = output["invocations"]
    assert isinstance(invocations, list) and invocations
    for record in invocations:
        assert isinstance(record, dict) and isinstance(record["input"], str)
        task = json.loads(record["input"])["task"]
        if not alerts:
            assert task == {"instruction": dca.DISCOVERY_INSTRUCTION}
            continue
        assert [a["annotations"] for a in task["alerts"]] == [
            dict(alert.annotations) for alert in alerts
        ]
        assert [(a["name"], a["service"]) for a in task["alerts"]] == [a.key for a in alerts]


def test_the_same_alerts_given_by_hand_send_the_same_inputs() -> None:
    by_hand = scenario_of(None)
    by_hand["alerts"] = [dc.to_wire(alert) for alert in EXPECTED["mixed_group.json"][0]]
    assert dca.replay_aiops(by_hand) == dca.replay_aiops(scenario_of(fixture("mixed_group.json")))


def test_alerts_and_alertmanager_together_are_a_scenario_error() -> None:
    document = scenario_of(fixture("firing_single.json"))
    document["alerts"] = []
    with pytest.raises(dc.ScenarioError, match=r'^alertmanager: give either "alerts" or'):
        dca.load_aiops_scenario(document)
    document["alertmanager"] = None  # null means absent
    assert dca.load_aiops_scenario(document).alerts == ()


@pytest.mark.parametrize(
    ("webhook", "message"),
    [
        ([], "alertmanager: expected an object, got array"),
        ({"version": "3", "alerts": []}, f"alertmanager.version: {VERSIONS}, got '3'"),
        (payload(entry(), entry({"env": "prod"})),
         "alertmanager.alerts[1].labels.alertname: missing"),
    ],
)  # fmt: skip
def test_mapping_errors_are_scenario_errors_with_the_prefixed_path(
    webhook: object, message: str
) -> None:
    with pytest.raises(dc.ScenarioError) as caught:
        dca.load_aiops_scenario(scenario_of(webhook))
    assert str(caught.value) == message
    assert isinstance(caught.value.__cause__, dca.AlertmanagerPayloadError)


def test_the_command_line_runs_a_scenario_with_a_webhook_payload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario_of(fixture("mixed_group.json"))), encoding="utf-8")
    assert main(["run", "--json", str(path)]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["mode"] == "PAYLOAD_TARGETED" and output["workflow"] == "aiops"
    bad = scenario_of(payload(entry({})))
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "alertmanager.alerts[0].labels.alertname: missing" in err
    assert "Traceback" not in err


def test_the_bundled_example_runs_and_passes_the_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = ROOT / "examples" / "aiops_alertmanager.json"
    output = dca.replay_aiops(json.loads(path.read_text(encoding="utf-8")))
    assert output["mode"] == "PAYLOAD_TARGETED" and output["outcome"] == "REPORTED"
    assert output["aiops_rule_evaluation"] == {"passed": True, "score": 1.0, "violations": []}
    assert main(["run", str(path)]) == 0
    assert "outcome: REPORTED" in capsys.readouterr().out


def test_the_snippet_of_the_docs_page_runs() -> None:
    page = (ROOT / "docs" / "alertmanager.md").read_text(encoding="utf-8")
    match = re.search(r"^```python\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert match is not None
    namespace: dict[str, Any] = {}
    exec(compile(match.group(1), "docs/alertmanager.md", "exec"), namespace)
    assert namespace["mapped"].resolved_count == 1
    assert isinstance(namespace["request"], dca.AiOpsRequest)
