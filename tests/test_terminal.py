"""Terminal output is inert (spec §15): readable CLI output escapes controls, --json is exact."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _builders import composer, scenario, text
from hypothesis import given, settings
from hypothesis import strategies as st

import diagnosis_core as dc
import diagnosis_core.protocol as dcp
from diagnosis_core._kernel.terminal import terminal_safe
from diagnosis_core.cli import main

ESC = "\x1b"
HOSTILE_ANSWER = (
    f"Root cause found.{ESC}]0;pwned title\x07{ESC}[2J{ESC}[1;1H"
    f"{ESC}]8;;https://attacker.example/{ESC}\\click{ESC}]8;;{ESC}\\"
    "\x9b31m C1 CSI \rover\x08written\x7f \u202eevil\u202c \u2066iso\u2069 ok\ttab\n2nd line"
)

# What a terminal acts on: C0 but LF/TAB, DEL, C1, and the bidi controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _unescape(shown: str) -> str:
    return re.sub(
        r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})",
        lambda match: chr(int(match.group(1) or match.group(2), 16)),
        shown,
    )


# --- terminal_safe ----------------------------------------------------------------------


def test_escape_sequences_are_shown_not_sent() -> None:
    assert terminal_safe(f"a{ESC}[2Jb") == "a\\x1b[2Jb"
    assert terminal_safe(f"{ESC}]0;t\x07") == "\\x1b]0;t\\x07"
    assert terminal_safe("\x9b2J") == "\\x9b2J"
    assert terminal_safe("a\rb\x08c\x7f") == "a\\x0db\\x08c\\x7f"
    assert terminal_safe("\u202eabc\u2066") == "\\u202eabc\\u2066"


@pytest.mark.parametrize(
    "safe",
    ["", "plain", "line\n\ttabbed\n", "诊断未能完成", "👩\u200d💻 joined", "\\# escaped",
     "\u00a0\u2060"],
)
def test_text_without_controls_is_unchanged(safe: str) -> None:
    assert terminal_safe(safe) == safe


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=200))
def test_no_terminal_control_survives_and_nothing_is_lost(value: str) -> None:
    shown = terminal_safe(value)
    assert not UNSAFE.search(shown)
    if "\\" not in value:
        assert _unescape(shown) == value


# --- the command line -----------------------------------------------------------------


def _hostile_scenario(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    doc = scenario(composer_=[text(composer(HOSTILE_ANSWER))])
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, doc


def test_readable_run_output_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _hostile_scenario(tmp_path)
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert not UNSAFE.search(out)
    assert out.startswith("Root cause found.\\x1b]0;pwned title\\x07\\x1b[2J")
    assert "\\u202eevil\\u202c" in out and "ok\ttab\n2nd line" in out
    assert "outcome: ANSWERED" in out


def test_json_run_output_stays_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = _hostile_scenario(tmp_path)
    assert main(["run", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == dcp.canonical_json(dc.replay(doc)) + "\n"
    assert json.loads(out)["answer"] == HOSTILE_ANSWER


def test_scenario_error_message_is_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"question": "q", f"x{ESC}[2J": 1}), encoding="utf-8")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "x\\x1b[2J: unknown key" in err
    assert not UNSAFE.search(err)


def test_real_process_writes_no_escape_to_the_terminal(tmp_path: Path) -> None:
    path, doc = _hostile_scenario(tmp_path)
    readable = subprocess.run(
        [sys.executable, "-m", "diagnosis_core", "run", str(path)],
        capture_output=True, check=False,
    )
    assert readable.returncode == 0, readable.stderr
    assert not UNSAFE.search(readable.stdout.decode("utf-8"))
    assert b"\\x1b[2J" in readable.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "diagnosis_core", "run", "--json", str(path)],
        capture_output=True, check=False,
    )
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stdout == (dcp.canonical_json(dc.replay(doc)) + "\n").encode("utf-8")
