"""Behaviours of the core that no other test reached: edge inputs and defensive paths.

Each test states a guarantee of its module (fail closed, never raise, name the
path) and checks it on the input that needs the otherwise unused branch.
"""

from __future__ import annotations

import enum
import runpy
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pytest

import diagnosis_core as dc
from diagnosis_core import (
    ConfigError,
    DiagnosisConfig,
    ExecutorEvidence,
    LedgerError,
    RunConfig,
    ScenarioError,
    ToolInvocation,
    Verdict,
)
from diagnosis_core._chat.reference_gatekeeper import UNRESOLVED
from diagnosis_core._kernel.wire.json import JsonValue, is_json_value_type, json_type_name
from diagnosis_core._kernel.wire.schema import SchemaRules, _nullable
from diagnosis_core._kernel.wire.schema import _type_schema as _rules_type_schema
from diagnosis_core.protocol import BindingCheckStatus, Claim, EvidenceBinding, EvidenceStatus
from tests._reach import machine as dcm
from tests._reach import protocol as dcp
from tests._reach import tools as dct

# --- configuration --------------------------------------------------------------------


def test_a_locale_that_is_not_a_string_is_a_config_error_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="locale: expected one of 'en', 'zh-CN', got 1"):
        DiagnosisConfig(locale=1)


def test_run_metadata_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="metadata: expected a mapping of strings, got list"):
        RunConfig("run-1", "chat-1", [("tenant", "shop")])


def test_a_run_config_is_only_equal_to_a_run_config() -> None:
    run = RunConfig("run-1", "chat-1", {"a": "b"})
    assert run == RunConfig("run-1", "chat-1", {"a": "b"})
    assert run != ("run-1", "chat-1", {"a": "b"})
    assert run.__eq__("run-1") is NotImplemented


# --- verdict order ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["__lt__", "__le__", "__gt__", "__ge__"])
def test_verdicts_are_ranked_only_against_verdicts(method: str) -> None:
    # Against a plain string Python falls back to string order, never to ranks.
    assert getattr(Verdict.PASS, method)("LOW_CONFID") is NotImplemented
    assert getattr(Verdict.PASS, method)(Verdict.LOW_CONFID) is (method in ("__gt__", "__ge__"))


# --- gatekeeper --------------------------------------------------------------------------


class _NamelessMeta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class _Nameless(Exception, metaclass=_NamelessMeta):
    pass


def test_an_unavailable_gatekeeper_is_described_even_when_its_exception_has_no_name() -> None:
    normalized = dcm.gatekeeper_unavailable(_Nameless("socket closed"))
    assert normalized.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
    assert normalized.problem == "BaseException: socket closed"


# --- JSON helpers --------------------------------------------------------------------------


def test_the_json_value_alias_is_recognised_as_is() -> None:
    assert is_json_value_type(JsonValue)
    assert not is_json_value_type(int | None)


def test_values_outside_json_are_named_by_their_python_type() -> None:
    assert json_type_name({1, 2}) == "set"
    assert json_type_name((1,)) == "array"


# --- projection and routing --------------------------------------------------------------------

BINDING = EvidenceBinding("inv-1", "query_logs", "$.a", "timeout")


def test_a_repeated_claim_id_is_projected_once_with_its_first_text() -> None:
    # The parser rejects duplicate claim ids; a hand-built value still projects safely.
    evidence = ExecutorEvidence(
        EvidenceStatus.EVIDENCE_FOUND,
        (Claim("c1", "first text", (BINDING,)), Claim("c1", "second text", (BINDING,))),
    )
    checked = dcp.CheckedBinding("c1", "inv-1", "query_logs", "$.a", BindingCheckStatus.PASS, "m")
    verified = dcm.project_verified_input(evidence, [checked])
    assert [claim.text for claim in verified.verified_executor_output] == ["first text"]
    assert len(verified.verified_evidence) == 1


def test_a_custom_routing_table_without_a_catch_all_row_raises_lookup_error() -> None:
    table = (dcm.Route(dcm.NodeName.PLANNER, dcm.Condition.COMPLETED, dcm.NodeName.EXECUTOR),)
    facts = dcm.RoutingFacts(status=dcm.NodeStatus.INVALID_OUTPUT)
    with pytest.raises(LookupError, match="no route after"):
        dcm.choose_route(dcm.NodeName.PLANNER, facts, table)
    assert dcm.choose_route(dcm.NodeName.PLANNER, dcm.RoutingFacts(dcm.NodeStatus.COMPLETED), table)


# --- reference gatekeeper --------------------------------------------------------


def test_unresolved_shows_as_its_name() -> None:
    assert dct.resolve_raw_path({"a": 1}, "$.b") is UNRESOLVED
    assert repr(UNRESOLVED) == "UNRESOLVED"


def test_a_non_finite_number_in_a_tool_output_is_a_ledger_error_naming_its_place() -> None:
    with pytest.raises(LedgerError, match=r"output: not a JSON value at \$\.a\[1\]"):
        ToolInvocation("inv-1", "query_logs", True, {"a": [1, float("nan")]})


class _Unreadable(Mapping[str, object]):
    def __getitem__(self, key: str) -> object:
        raise RuntimeError("gone")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("gone")

    def __len__(self) -> int:
        return 1


def test_an_unreadable_tool_output_or_record_is_a_ledger_error_not_a_crash() -> None:
    with pytest.raises(LedgerError, match=r"output: unreadable \(RuntimeError\)"):
        ToolInvocation("inv-1", "query_logs", True, _Unreadable())
    with pytest.raises(LedgerError, match=r"tool_ledger\[0\]: unreadable \(RuntimeError\)"):
        dct.ledger_from_records([_Unreadable()])


def test_resolving_a_path_in_an_output_that_raises_is_unresolved() -> None:
    assert dct.resolve_raw_path({"a": _Unreadable()}, "$.a.b") is UNRESOLVED


def test_a_number_too_long_to_print_is_refused_by_the_ledger() -> None:
    # Spec §5: an integer of more than 4300 digits is invalid everywhere, ledgers included.
    problem = r"^tool_ledger\[0\]\.output: not a JSON value at \$\.a: an integer of more"
    with pytest.raises(LedgerError, match=problem):
        dct.ledger_from_records(
            [{"invocation_id": "inv-1", "tool_name": "query_logs", "success": True,
              "output": {"a": 10**5000}}]
        )


class _BrokenLedger(dc.ToolLedger):
    def get(self, invocation_id: str) -> ToolInvocation | None:
        raise RuntimeError("ledger backend down")


def test_checking_a_binding_never_raises_it_fails_the_binding() -> None:
    checked = dct.check_binding(_BrokenLedger(), "c1", BINDING)
    assert (checked.status, checked.reason) == (BindingCheckStatus.FAIL, "INVOCATION_NOT_FOUND")


def test_a_repeated_binding_key_passes_only_if_every_copy_passes() -> None:
    ledger = dct.ledger_from_records(
        [{"invocation_id": "inv-1", "tool_name": "query_logs", "success": True,
          "output": {"a": "upstream timeout"}}]
    )
    wrong = attrs.evolve(BINDING, evidence_excerpt="no such text")
    claim = Claim("c1", "times out", (wrong, BINDING, wrong))
    entries = dct.check_bindings(ledger, ExecutorEvidence(EvidenceStatus.EVIDENCE_FOUND, (claim,)))
    assert [(entry.status, entry.reason) for entry in entries] == [
        (BindingCheckStatus.FAIL, "EXCERPT_MISMATCH")
    ]


# --- scenarios -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (None, "$: expected an object, got null"),
        (True, "$: expected an object, got boolean"),
        ({1, 2}, "$: expected an object, got set"),
        ({1: "question"}, "$: keys must be strings, got 1"),
        ({"question": "q", "history": 5}, "history: expected an array, got number"),
    ],
)
def test_a_malformed_scenario_names_the_json_type_it_got(document: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        dc.load_scenario(document)
    assert str(error.value) == message


def test_a_scripted_gatekeeper_result_must_be_a_json_value() -> None:
    with pytest.raises(ScenarioError, match=r"gatekeeper\[0\]: not a JSON value"):
        dc.load_scenario({"question": "q", "gatekeeper": [{"result": {"score": float("nan")}}]})


# --- JSON schema generator -------------------------------------------------------


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class _Undocumented:
    size: int
    derived: int = attrs.field(init=False, default=0)


def test_the_schema_generator_covers_every_shape_the_converter_reads() -> None:
    def _type_schema(cl: object) -> Any:
        return _rules_type_schema(cl, SchemaRules())

    assert _type_schema(_Level) == {"enum": [1, 2]}
    assert _type_schema(tuple[int, str]) == {
        "type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False, "minItems": 2,
    }
    assert _type_schema(Mapping[str, int]) == {
        "type": "object", "additionalProperties": {"type": "integer"}
    }
    assert _type_schema(_Level | None) == {"enum": [1, 2, None]}
    assert _type_schema(Any) == {}
    schema = _type_schema(_Undocumented)
    assert "description" not in schema and list(schema["properties"]) == ["size"]  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no JSON Schema"):
        _type_schema(int | str)
    assert _nullable({"const": "x"}) == {"enum": ["x", None]}
    assert _nullable({"anyOf": []}) == {"anyOf": [{"anyOf": []}, {"type": "null"}]}


# --- the module entry point -------------------------------------------------------


def test_python_dash_m_runs_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["diagnosis-core", "graph"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("diagnosis_core", run_name="__main__")
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("flowchart TD")


# --- the converter on classes beyond the payloads -------------------------------------


class _Scale(float, enum.Enum):
    HALF = 0.5
    FULL = 1.0


@attrs.frozen
class _Gauge:
    level: _Level
    scale: _Scale
    extra: JsonValue = None
    anything: Any = None
    pair: tuple = ()  # type: ignore[type-arg]


@attrs.frozen
class _Window:
    start: int
    end: int = attrs.field(default=attrs.Factory(lambda self: self.start + 1, takes_self=True))


def test_from_wire_structures_int_and_float_enums_json_values_and_bare_tuples() -> None:
    gauge = dc.from_wire(
        _Gauge, {"level": 2, "scale": 0.5, "extra": {"a": [1, None]}, "pair": [1, "a"]}
    )
    assert gauge == _Gauge(_Level.HIGH, _Scale.HALF, {"a": [1, None]}, None, (1, "a"))
    with pytest.raises(dc.PayloadError, match="level: expected one of 1, 2, got boolean"):
        dc.from_wire(_Gauge, {"level": True, "scale": 1.0, "anything": object()})
    with pytest.raises(dc.PayloadError, match="scale"):
        dc.from_wire(_Gauge, {"level": 1, "scale": 0.25})
    with pytest.raises(dc.PayloadError, match="extra: object keys must be strings"):
        dc.from_wire(_Gauge, {"level": 1, "scale": 1.0, "extra": {1: "one"}})


def test_a_default_computed_from_the_instance_is_used_but_null_stays_an_error() -> None:
    assert dc.from_wire(_Window, {"start": 1}) == _Window(1, 2)
    with pytest.raises(dc.PayloadError, match="end"):
        dc.from_wire(_Window, {"start": 1, "end": None})


def test_an_audit_raw_result_must_be_a_json_value() -> None:
    wire: Any = dc.to_wire(dcm.GatekeeperAudit(
        1, dcm.RawResult("{}"), None, dcp.GatekeeperStatus.PASS, None, None, 0, 0, 0, 0))
    wire["raw_result"] = {"score": float("nan")}
    with pytest.raises(dc.PayloadError, match="raw_result: expected a JSON value"):
        dc.from_wire(dcm.GatekeeperAudit, wire)


def test_json_text_helpers_refuse_values_that_are_not_text() -> None:
    with pytest.raises(dc.PayloadError, match="expected text, got int"):
        dcp.extract_json_text(5)  # type: ignore[arg-type]
    from diagnosis_core._kernel.wire.json import loads_strict_with_objects

    assert loads_strict_with_objects(5, dict) == (False, None)  # type: ignore[arg-type]
    assert loads_strict_with_objects('{"a": 1}', dict) == (True, {"a": 1})

    def refuse(pairs: object) -> object:
        raise LookupError("a shape the hook does not build")

    assert loads_strict_with_objects('{"a": 1}', refuse) == (False, None)
    with pytest.raises(dc.PayloadError, match="the JSON is cut off"):
        loads_strict_with_objects("{", dict)


_EVIDENCE_HEAD = (
    '{"schema_version": "executor_evidence_v2", "evidence_status": "evidence_found", '
    '"claims": [{"claim_id": "c1", "text": "t", "is_critical": true, "bindings": '
    '[{"source_invocation_id": "i", "tool_name": "q", "raw_path": "$", '
    '"evidence_excerpt": "e"}]}]'
)


@pytest.mark.parametrize(
    "tail",
    [
        ', "extra": NaN}',
        ', "claims": []}',
        ', "extra": "\\ud800"}',
        ', "extra": "\ud800"}',
        ', "extra": [1e400]}',
        ', "extra": [1' + "0" * 5000 + "]}",
        ', "extra": {"a": 1, "a": 2}}',
        ', "extra": "\\ud83d\\ude00 \\\\ud800 \\udc00"}',
        ', "extra":',
    ],
)
def test_the_one_pass_parse_rejects_as_the_strict_loader(tail: str) -> None:
    # The executor parser's one-pass JSON layer raises the strict loader's own
    # error when it finds one, without a second parse: same path, same words.
    text = _EVIDENCE_HEAD + tail
    with pytest.raises(dc.PayloadError) as strict:
        dcp.loads_strict(text)
    with pytest.raises(dc.PayloadError) as parsed:
        dcp.parse_executor_evidence(text)
    assert (parsed.value.path, parsed.value.problem) == (strict.value.path, strict.value.problem)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # The first problem in document order is reported (spec §5 digit limit).
        ("[NaN, 1" + "0" * 5000 + "]", "NaN is not a JSON number"),
        ("[1" + "0" * 5000 + ", NaN]", "integer literal of 5001 digits (at most 4300)"),
        ('[{"a": 1, "a": 2}, ' + "[" * 100_000 + "]" * 100_000 + "]", "nesting too deep"),
    ],
)
def test_the_diagnostic_pass_reports_what_stops_it(text: str, problem: str) -> None:
    with pytest.raises(dc.PayloadError) as error:
        dcp.loads_strict(text)
    assert error.value.problem == problem
