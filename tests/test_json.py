"""Strict JSON loading, fence extraction and canonical output (spec §5, §6.6)."""

from __future__ import annotations

import json
import math

import pytest
from _oracles import reference_accepts
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._kernel.errors import PayloadError
from diagnosis_core._kernel.wire.json import (
    canonical_json,
    escape_surrogates,
    extract_json_text,
    loads_strict,
    parse_json_object,
)

# --- canonical_json -------------------------------------------------------------------


def test_canonical_json_is_the_spec_dumps_call() -> None:
    value = {"b": [1, 2.5, None], "a": {"ü": "中文", "z": True}}
    expected = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    assert canonical_json(value) == expected
    assert canonical_json(value) == '{"a":{"z":true,"ü":"中文"},"b":[1,2.5,null]}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_canonical_json_refuses_non_finite_floats(bad: float) -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": bad})


def test_canonical_json_refuses_values_json_cannot_represent() -> None:
    with pytest.raises(TypeError):
        canonical_json({"x": {1, 2}})


# --- loads_strict: accepted --------------------------------------------------------------


def test_loads_strict_returns_what_json_loads_returns() -> None:
    text = '{"a": [1, 2.5, "x", null, true, {"b": {}}], "c": "é"}'
    assert loads_strict(text) == json.loads(text)


def test_escaped_surrogate_pair_is_accepted() -> None:
    assert loads_strict('{"k": "\\ud83d\\ude00"}') == {"k": "😀"}
    assert loads_strict('"\\uD83D\\uDE00"') == "😀"


def test_escaped_backslash_before_u_is_not_a_surrogate() -> None:
    assert loads_strict('"\\\\ud800"') == "\\ud800"
    assert loads_strict('"\\\\\\\\udc00x"') == "\\\\udc00x"


def test_same_key_in_different_objects_is_not_a_duplicate() -> None:
    assert loads_strict('[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]') == [
        {"a": 1},
        {"a": 2},
        {"b": {"a": 3}},
    ]


def test_large_numbers_that_fit_a_double_are_accepted() -> None:
    assert loads_strict("[1e308, -1e308, 1e-400]") == [1e308, -1e308, 0.0]


# --- loads_strict: rejected, each with a path -----------------------------------------------


def _error(text: str) -> PayloadError:
    with pytest.raises(PayloadError) as info:
        loads_strict(text)
    return info.value


def test_invalid_json_names_line_and_column() -> None:
    assert str(_error('{"a": 1,\n "b": }')) == (
        '$: invalid JSON at line 2 column 7: expected a value, found "}"'
    )


def test_duplicate_top_level_key_is_invalid() -> None:
    assert str(_error('{"a": 1, "b": 2, "a": 1}')) == "$: duplicate key 'a'"


def test_duplicate_nested_key_is_invalid_and_located() -> None:
    text = '{"claims": [{"x": 1}, {"bindings": [{"raw_path": "a", "raw_path": "b"}]}]}'
    assert str(_error(text)) == "claims[1].bindings[0]: duplicate key 'raw_path'"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_literals_are_invalid(literal: str) -> None:
    error = _error(f'{{"score": [0.5, {literal}]}}')
    assert str(error) == f"score[1]: {literal} is not a JSON number"


def test_number_overflowing_a_double_is_invalid() -> None:
    assert str(_error('{"x": 1e400}')) == "x: number 1e400 is out of range"
    assert _error("-" + "9" * 400 + ".0").path == "$"


def test_integer_with_too_many_digits_is_invalid() -> None:
    assert _error("1" * 5000).path == "$"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('"\\ud800"', "$"),
        ('{"a": "x\\udc00"}', "a"),
        ('{"a": ["ok", "\\ud83d\\ud83d\\ude00"]}', "a[1]"),  # high, then a pair
        ('{"a": "\\ude00\\ud83d"}', "a"),  # low before high is no pair
        ('{"a": "\\\\\\ud800"}', "a"),  # escaped backslash, then a real lone escape
        ('{"a": "\\ud83d\\\\ude00"}', "a"),  # high, then a literal text \\ude00
        ('{"a": "\\ud83d\\u0041"}', "a"),
    ],
)
def test_escaped_lone_surrogate_is_invalid(text: str, path: str) -> None:
    error = _error(text)
    assert error.path == path
    assert "unpaired surrogate" in error.problem


def test_escaped_lone_surrogate_in_a_key_is_invalid() -> None:
    assert "unpaired surrogate" in _error('{"k\\ud800": 1}').problem


@pytest.mark.parametrize("raw", ["\ud800", "\udfff", "\ud83d\ude00"])
def test_raw_surrogate_code_points_in_the_text_are_invalid(raw: str) -> None:
    error = _error('{"a": {"b": "x' + raw + '"}}')
    assert error.path == "a.b"
    assert error.problem == "string contains an unpaired surrogate"


def test_raw_surrogate_in_a_key_is_invalid() -> None:
    assert _error('{"a\udc00": 1}').problem == "object key contains an unpaired surrogate"


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_nesting_100000_deep_is_a_payload_error(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    assert str(_error(opener * 100_000 + "1" + closer * 100_000)) == "$: nesting too deep"


def test_ten_megabytes_are_parsed_or_rejected_without_crashing() -> None:
    big = json.dumps({"items": [{"id": str(i), "text": "x" * 90} for i in range(100_000)]})
    assert len(big) > 10_000_000
    loaded = loads_strict(big)
    assert isinstance(loaded, dict)
    assert isinstance(loaded["items"], list)
    assert len(loaded["items"]) == 100_000
    assert _error(big[:-1]).path == "$"
    duplicated = big[:-1] + ', "items": []}'
    assert str(_error(duplicated)) == "$: duplicate key 'items'"


def test_non_text_input_is_a_payload_error() -> None:
    assert _error(b"{}").path == "$"  # type: ignore[arg-type]


def test_very_long_key_is_shortened_in_the_path() -> None:
    key = "k" * 10_000
    error = _error(f'{{"{key}": {{"x": 1, "x": 2}}}}')
    assert len(error.path) < 100
    assert error.problem == "duplicate key 'x'"


@settings(max_examples=150, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
))
def test_any_json_value_round_trips_through_canonical_json(value: object) -> None:
    assert loads_strict(canonical_json(value)) == value


_JSONISH = st.text(
    alphabet=st.sampled_from([*'{}[]",:0123456789.eE+-truefalsn \n\\u', "\ud800", "é"]),
    max_size=40,
) | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=8,
).map(json.dumps)


@settings(max_examples=300, deadline=None)
@given(st.text() | _JSONISH)
def test_arbitrary_text_is_accepted_exactly_when_the_reference_accepts(text: str) -> None:
    # The oracle: the stdlib parser with hooks for the protocol's rules (tests/_oracles.py).
    accepted, expected = reference_accepts(text)
    if accepted:
        value = loads_strict(text)
        assert value == expected
        assert loads_strict(canonical_json(value)) == value  # always serializable
    else:
        with pytest.raises(PayloadError):
            loads_strict(text)


# --- extract_json_text ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '  \n\t{"a": 1}\n  ',
        '\u3000{"a": 1}\u2028',  # Unicode whitespace, as str.strip() sees it
        '```\n{"a": 1}\n```',
        '```json\n{"a": 1}\n```',
        '```JSON\n{"a": 1}\n```',
        '```Json\n{"a": 1}\n```',
        '```  json  \n{"a": 1}\n```',
        '\n\n  ```json\n{"a": 1}\n```  \n\n',
        '```json\r\n{"a": 1}\r\n```',
        '```json\r{"a": 1}\r```',
    ],
)
def test_accepted_forms_yield_the_json_text(text: str) -> None:
    assert json.loads(extract_json_text(text)) == {"a": 1}


def test_fence_keeps_a_multi_line_body() -> None:
    assert extract_json_text('```json\n{\n  "a": 1\n}\n```') == '{\n  "a": 1\n}'


_INFO = (
    "a code fence labelled {} at line 1: only a ```json fence (or the bare JSON) is "
    "accepted — label the fence json"
)
_CLOSING = "closing code fence must be a line of exactly three backticks"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('~~~json\n{"a": 1}\n~~~', "only a ``` code fence is accepted, not ~~~"),
        ('````json\n{"a": 1}\n````', "code fences longer than three backticks are not accepted"),
        ('```json\n{"a": 1}\n````', "code fences longer than three backticks are not accepted"),
        ('```python\n{"a": 1}\n```', _INFO.format("'python'")),
        ('```json5\n{"a": 1}\n```', _INFO.format("'json5'")),
        ('```jſon\n{"a": 1}\n```', _INFO.format("'jſon'")),
        ('```json {"a": 1}```', "code fence has no closing line"),
        ('```json\n{"a": 1}', "code fence has no closing line"),
        (
            '```json\n{"a": 1}\n```\nHope this helps!',
            'text after the code fence: "Hope this helps!" — send only the JSON',
        ),
        ('```json\n{"a": 1}\n  ```', _CLOSING),
        ('```json\n{"a": 1}```', _CLOSING),
        ('```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```', "only one code fence is accepted"),
        ('```json\n\n```', "empty code fence"),
        ("   \n ", "empty output"),
        ('```json\u2028{"a": 1}\u2028```', "code fence has no closing line"),
    ],
)
def test_rejected_fences_are_payload_errors_at_the_root(text: str, problem: str) -> None:
    with pytest.raises(PayloadError) as info:
        extract_json_text(text)
    assert (info.value.path, info.value.problem) == ("$", problem)


# --- parse_json_object -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[1]", "an array of 1 item — send one object"),
        ("[{}, {}]", "an array of 2 items — send one object"),
        ("[{}]", "an array holding one object — send that object without the [ ] around it"),
        ('"x"', "string"),
        ("1", "number"),
        ("true", "boolean"),
        ("null", "null"),
    ],
)
def test_a_non_object_document_is_invalid(text: str, kind: str) -> None:
    with pytest.raises(PayloadError) as info:
        parse_json_object(text)
    assert str(info.value) == f"$: expected a JSON object, got {kind}"


_ONLY = " — send only the JSON"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            'Here is the plan: {"a": 1}',
            'expected JSON; the text starts with prose "Here is the plan:" '
            "(the JSON starts at line 1 column 19)" + _ONLY,
        ),
        (
            '{"a": 1} Let me know!',
            'more text after the JSON, at line 1 column 10: "Let me know!"' + _ONLY,
        ),
        ('{"a": 1}\n{"b": 2}', 'more text after the JSON, at line 2 column 1: "{"b": 2}"' + _ONLY),
        (
            'Sure!\n```json\n{"a": 1}\n```',
            'expected JSON; the text starts with prose "Sure!…" '
            "(the JSON starts at line 3 column 1)" + _ONLY,
        ),
    ],
)
def test_prose_or_a_second_object_around_the_json_is_invalid(text: str, problem: str) -> None:
    with pytest.raises(PayloadError) as info:
        parse_json_object(text)
    assert (info.value.path, info.value.problem) == ("$", problem)


def test_parse_json_object_accepts_a_fenced_object() -> None:
    assert parse_json_object('```json\n{"a": [1]}\n```\n') == {"a": [1]}


def test_the_rare_paths_patterns_are_compiled_on_first_use_only() -> None:
    # Compiling them at import is a measurable part of `import diagnosis_core`.
    import subprocess
    import sys

    code = (
        "import diagnosis_core\n"
        "from tests._reach import protocol as p\n"
        "from diagnosis_core._kernel.wire import json as j, converter as c\n"
        "rare = (j._LONG_INTEGER_TOKEN, j._UNSAFE_DIGIT_RUN, j._LONE_SURROGATE_ESCAPE,\n"
        "        j._CUT_LITERAL, j._INNER_FENCE, c._PATH_STEP)\n"
        "print(sum(pattern._compiled is None for pattern in rare))\n"
        "p.parse_executor_evidence(p.canonical_json({'schema_version': 'executor_evidence_v2',\n"
        "    'evidence_status': 'no_evidence', 'claims': [], 'note': '\\\\\\\\ud800'}))\n"
        "print(sum(pattern._compiled is None for pattern in rare))\n"
        "try:\n"
        "    p.loads_strict('{\"a\": tru')\n"
        "except Exception as error:\n"
        "    print(error)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[:2] == ["6", "5"]  # the escaped backslash before "ud800" needed the exact scan
    assert lines[2].startswith("$: the JSON is cut off: the text ends early at line 1 column 10")


# --- escape_surrogates ------------------------------------------------------------------


@given(st.text(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr))))
def test_escape_surrogates_escapes_exactly_the_surrogate_code_points(text: str) -> None:
    # Oracle: each code point on its own, the surrogates written as \uXXXX.
    expected = "".join(
        f"\\u{ord(char):04x}" if 0xD800 <= ord(char) <= 0xDFFF else char for char in text
    )
    assert escape_surrogates(text) == expected
    escape_surrogates(text).encode("utf-8")  # always encodable


def test_escape_surrogates_keeps_text_without_one_as_it_is() -> None:
    for text in ("", "plain", "é中文😀"):
        assert escape_surrogates(text) is text
    assert escape_surrogates("é\ud83d\ude00x") == "é\\ud83d\\ude00x"  # a pair is two escapes
