"""Regressions of the strict JSON layer's hardening (spec §5 digit limit, §15)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import attrs
import pytest

import diagnosis_core as dc
import diagnosis_core.machine as dcm
from diagnosis_core._kernel.wire import converter as _converter
from diagnosis_core._kernel.wire.json import (
    canonical_json,
    int_from_literal,
    int_to_text,
    int_too_long,
)
from diagnosis_core._kernel.wire.schema import NOT_ONLY_WHITESPACE_PATTERN
from tests._reach import protocol as dcp

# --- §5 digit limit -------------------------------------------------------------------


def _run_python(code: str, digits: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONINTMAXSTRDIGITS": digits}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )


def test_the_digit_limit_does_not_depend_on_the_interpreter_setting() -> None:
    code = """
        import json, sys
        import diagnosis_core as dc
        import diagnosis_core.machine as dcm
        from tests._reach import protocol as dcp
        print(sys.get_int_max_str_digits(), file=sys.stderr)
        ok = dcp.parse_composer_output('{"answer": "a", "x": ' + "7" * 1000 + '}', ())
        print(ok.answer)
        print(dcp.loads_strict("[" + "9" * 4300 + "]")[0] == 10**4300 - 1)
        try:
            dcp.loads_strict("[" + "9" * 4301 + "]")
        except dc.PayloadError as error:
            print(error.path, error.problem)
        print(dcp.canonical_json([-(10**999)]) == "[-1" + "0" * 999 + "]")
    """
    for digits in ("640", "0"):
        completed = _run_python(code, digits)
        assert completed.returncode == 0, completed.stderr
        assert completed.stderr.strip() == digits
        lines = completed.stdout.splitlines()
        assert lines[0] == "a"
        assert lines[1] == "True"
        assert lines[2] == "$[0] integer literal of 4301 digits (at most 4300)"
        assert lines[3] == "True"


@pytest.mark.parametrize("digits", [4301, 5000, 20_000])
def test_long_integer_literals_are_payload_errors_naming_the_path(digits: int) -> None:
    text = '{"answer": "a", "n": [1, ' + "1" * digits + "]}"
    with pytest.raises(dc.PayloadError) as caught:
        dcp.parse_composer_output(text, ())
    assert caught.value.path == "n[1]"
    assert "4300" in caught.value.problem


def test_integer_conversions_are_exact_at_the_limit() -> None:
    for value in (0, -1, 10**600, -(10**600) + 7, 10**4300 - 1, -(10**4300) + 1, 3**9000):
        text = int_to_text(value)
        assert int_from_literal(text) == value
        assert len(text.lstrip("-")) <= 4300
    assert int_too_long(10**4300) and int_too_long(-(10**4300))
    assert not int_too_long(10**4300 - 1) and not int_too_long(-(10**4300) + 1)
    with pytest.raises(ValueError, match="4300"):
        int_to_text(10**4300)
    with pytest.raises(ValueError, match="4300"):
        canonical_json({"a": [10**4300]})


def test_a_long_integer_in_a_scenario_file_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"question": "q", "x": ' + "1" * 5000 + "}")
    completed = subprocess.run(
        [sys.executable, "-m", "diagnosis_core", "run", str(path)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert completed.returncode == 2, completed.stderr
    assert str(path) in completed.stderr and "4300" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_a_long_python_integer_in_a_replayed_scenario_is_a_scenario_error() -> None:
    with pytest.raises(dc.ScenarioError):
        dc.replay({"question": "q", "config": {"technical_retry_limit": 10**5000}})
    with pytest.raises(dc.ScenarioError, match="outside the range"):
        dc.replay({"question": "q", "run": {"run_id": "r"},
                   "config": {"technical_retry_limit": 10**5000}})
    with pytest.raises(dc.ConfigError, match=r"^technical_retry_limit: .* outside the range 0..3$"):
        dc.DiagnosisConfig(technical_retry_limit=10**5000)


# --- §15 lone surrogates in stored facts -------------------------------------------------


def _state_with_surrogates() -> dc.DiagnosisState:
    request = dc.DiagnosisRequest("q", dc.RunConfig("r", "s"))
    state = dcm.start_diagnosis(request)
    action = dcm.next_action(state)
    assert isinstance(action, dcm.InvokeAgent)
    return dcm.advance(state, dcm.AgentFailed(dc.FailureKind.NON_RETRYABLE, "boom \ud800 \udc80x"))


def test_states_and_trace_reports_with_lone_surrogates_round_trip() -> None:
    state = _state_with_surrogates()
    report = dc.build_trace_report(state)
    for value in (state, report):
        text = dc.to_json(value)
        text.encode("utf-8")
        assert "\\ud800" in text
        assert dc.from_json(type(value), text) == value


def test_agent_payloads_still_reject_escaped_lone_surrogates() -> None:
    with pytest.raises(dc.PayloadError, match="surrogate"):
        dcp.parse_composer_output('{"answer": "\\ud800"}', ())
    with pytest.raises(dc.PayloadError, match="surrogate"):
        dcp.loads_strict('["\\udc80"]')


def test_stored_text_keeps_its_other_rules() -> None:
    state_text = dc.to_json(_state_with_surrogates())
    with pytest.raises(dc.PayloadError, match="duplicate"):
        dc.from_json(dc.DiagnosisState, state_text[:-1] + ',"seq":1,"seq":2}')
    with pytest.raises(dc.PayloadError, match="raw surrogate"):
        dc.from_json(dc.DiagnosisState, state_text.replace("\\ud800", "\ud800"))


# --- §15 linear rejection ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 900 + "0," * 500_000 + "NaN" + "]" * 900,
        '{"a": [' + '{"k": "v", "n": 1},' * 50_000 + '{"k": "v", "k": 2}]}',
        '{"a": [' + '"\\u00e9 text",' * 100_000 + '"\\ud800"]}',
    ],
    ids=["nested-nan", "duplicate-key", "lone-surrogate"],
)
def test_rejecting_a_large_text_costs_memory_linear_in_its_size(text: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(dc.PayloadError):
            dcp.parse_verifier_output(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A quadratic pass needs hundreds of times the text (a path per value);
    # one parse plus one walk stays within a small multiple of it.
    assert peak < 40 * len(text), (peak, len(text))


# --- §15 no public mutable converter ------------------------------------------------------


def test_the_parsers_are_not_reachable_through_a_public_converter() -> None:
    assert "converter" not in dc.__all__
    assert not hasattr(dc, "converter")
    assert not hasattr(_converter, "converter")
    host = dcp.make_converter()
    assert host is not dcp.make_converter()
    host.register_structure_hook(float, lambda value, _: float(value))
    text = ('{"verdict": "PASS", "groundedness_score": "0.9", "facts_checked": [],'
            ' "allowed_claim_ids": []}')
    with pytest.raises(dc.PayloadError, match="groundedness_score"):
        dcp.parse_verifier_output(text)
    assert host.structure("0.9", float) == 0.9  # the host's copy does change
    assert dcp.make_converter().structure(1, float) == 1.0


# --- §5.4 schema pattern, engine-independent ------------------------------------------------


def _code_points() -> list[str]:
    return [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]


def test_the_answer_pattern_is_str_isspace_in_python_re() -> None:
    import re

    pattern = re.compile(NOT_ONLY_WHITESPACE_PATTERN)
    wrong = [ch for ch in _code_points() if (pattern.search(ch) is not None) == ch.isspace()]
    assert wrong == []
    schema = dcp.json_schema("composer_output")
    assert schema["properties"]["answer"]["pattern"] == NOT_ONLY_WHITESPACE_PATTERN  # type: ignore[index,call-overload]


def test_the_answer_pattern_is_str_isspace_in_an_ecma_262_engine() -> None:
    regress = pytest.importorskip("regress")
    for flags in ("", "u"):
        pattern = regress.Regex(NOT_ONLY_WHITESPACE_PATTERN, flags)
        wrong = [ch for ch in _code_points() if (pattern.find(ch) is not None) == ch.isspace()]
        assert wrong == [], (flags, [hex(ord(ch)) for ch in wrong[:8]])


# --- the detailed pass surfaces package bugs ------------------------------------------------


def _buggy(value: object) -> str:
    raise AttributeError("a bug in a converter")


@attrs.frozen
class _Holder:
    name: str = attrs.field(converter=_buggy)


def test_a_bug_in_the_structuring_code_is_not_reported_as_bad_data() -> None:
    with pytest.raises(AttributeError, match="a bug"):
        dc.from_wire(_Holder, {"name": "x"})


def test_bad_data_still_is_a_payload_error() -> None:
    with pytest.raises(dc.PayloadError) as caught:
        dc.from_wire(dcp.ComposerOutput, {"answer": 1})
    assert caught.value.path == "answer"
    assert json.loads(dc.to_json(dcp.ComposerOutput("a"))) == {"answer": "a", "cited_claim_ids": []}


# --- the sampled digit-run check (the fast path's choice of integer conversion) ---------


def _longest_digit_run(text: str) -> int:
    longest = current = 0
    for char in text:
        current = current + 1 if "0" <= char <= "9" else 0
        longest = max(longest, current)
    return longest


@pytest.mark.parametrize("length", [299, 300, 599, 600, 601, 602, 900, 4301])
def test_the_digit_run_check_finds_every_long_run_at_every_alignment(length: int) -> None:
    from diagnosis_core._kernel.wire.json import _has_long_digit_run

    for offset in range(0, 302):
        for before, after in (("x", "y"), ("é", ""), ("1 ", " 2")):
            text = "a" * offset + before + "7" * length + after + "b" * 301
            assert _has_long_digit_run(text) is (_longest_digit_run(text) > 600), (offset, before)


@pytest.mark.parametrize("length", [2149, 2150, 4299, 4300, 4301, 4302, 9000])
def test_the_long_integer_prefilter_never_misses_a_run(length: int) -> None:
    from diagnosis_core._kernel.wire.json import _may_hold_digit_run

    for offset in [*range(0, 40), *range(2100, 2200), *range(4280, 4310)]:
        text = '["' + "a" * offset + '",' + "7" * length + "]"
        if _longest_digit_run(text) > 4300:
            assert _may_hold_digit_run(text, 4300), offset


def test_canonical_json_refuses_long_integers_at_any_offset_whatever_the_interpreter() -> None:
    code = """
        import diagnosis_core.protocol as dcp
        for offset in [*range(0, 30), *range(2130, 2170), *range(4290, 4310)]:
            assert dcp.canonical_json(["x" * offset, 10**4299]).endswith("0]")
            try:
                dcp.canonical_json(["x" * offset, -(10**4300)])
            except ValueError as error:
                assert "4300" in str(error), error
            else:
                raise AssertionError(offset)
        print("ok")
    """
    completed = _run_python(code, "0")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_integers_longer_than_every_interpreter_converts_parse_exactly_at_any_offset() -> None:
    code = """
        from tests._reach import protocol as dcp
        for offset in range(0, 301, 7):
            for digits in (641, 1000, 4300):
                text = '{"p": "' + "x" * offset + '", "n": ' + "9" * digits + "}"
                assert dcp.loads_strict(text)["n"] == 10**digits - 1, (offset, digits)
        print("ok")
    """
    completed = _run_python(code, "640")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"
