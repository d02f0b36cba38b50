"""``diagnosis-core run --journal-out``, ``run JOURNAL`` and ``journal to-scenario`` (spec §12)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.protocol as dcp
from diagnosis_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PAYMENT = EXAMPLES / "payment_timeout.json"


def chat_examples() -> list[Path]:
    return [
        path
        for path in sorted(EXAMPLES.glob("*.json"))
        if json.loads(path.read_text(encoding="utf-8")).get("workflow") != "aiops"
    ]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, scenario: Path, *extra: str
) -> tuple[Path, str]:
    out = tmp_path / "journal.json"
    args = ("run", "--json", "--journal-out", str(out), *extra, str(scenario))
    code, printed, err = run(capsys, *args)
    assert (code, err) == (0, "")
    return out, printed


def edited(tmp_path: Path, journal: Path, edit: Any, name: str = "edited.json") -> str:
    data = json.loads(journal.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("path", chat_examples(), ids=lambda path: path.stem)
def test_every_example_replays_from_its_journal_byte_for_byte(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path
) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    expected = dcp.canonical_json(dc.replay(document)) + "\n"
    journal, printed = record(capsys, tmp_path, path)
    assert printed == expected
    text = journal.read_text(encoding="utf-8")
    assert text == dcj.journal_to_json(dcj.Journal.from_json(text)) + "\n"  # canonical
    assert run(capsys, "run", "--json", str(journal)) == (0, expected, "")
    # The readable form is the scenario's too.
    assert run(capsys, "run", str(journal)) == run(capsys, "run", str(path))
    code, scenario, err = run(capsys, "journal", "to-scenario", str(journal))
    assert (code, err) == (0, "")
    assert scenario == dcp.canonical_json(json.loads(scenario)) + "\n"
    assert dcp.canonical_json(dc.replay(json.loads(scenario))) + "\n" == expected


def test_a_signed_journal_verifies_with_its_key_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"\x00host key\xff")
    journal, printed = record(capsys, tmp_path, PAYMENT, "--journal-key-file", str(key))
    assert all("mac" in entry for entry in json.loads(journal.read_text())["entries"])
    assert run(capsys, "run", "--json", "--journal-key-file", str(key), str(journal)) == (
        0, printed, ""
    )
    other = tmp_path / "other"
    other.write_bytes(b"another key")
    code, out, err = run(capsys, "run", "--journal-key-file", str(other), str(journal))
    assert (code, out) == (2, "")
    assert "invalid journal: entries[0].mac: does not match" in err
    tampered = edited(
        tmp_path, journal, lambda d: d["entries"][3]["outcome"].update(text="{}")
    )
    code, _, err = run(capsys, "run", "--journal-key-file", str(key), tampered)
    assert code == 2 and "entries[3].mac" in err
    code, _, err = run(
        capsys, "journal", "to-scenario", "--journal-key-file", str(other), str(journal)
    )
    assert code == 2 and "entries[0].mac" in err


def test_an_empty_key_file_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    out = tmp_path / "journal.json"
    code, _, err = run(
        capsys, "run", "--journal-out", str(out), "--journal-key-file", str(empty), str(PAYMENT)
    )
    assert code == 2 and "the key file is empty" in err
    assert not out.exists()
    code, _, err = run(capsys, "journal", "to-scenario", "--journal-key-file", str(empty), "x")
    assert code == 2 and "the key file is empty" in err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["entries"].pop(1), "invalid journal: entries[1].seq: expected 2, got 3"),
        (
            lambda d: d["entries"][0]["outcome"].update(text="not a plan"),
            "invalid journal: entries[1]: the run expects planner round 1 attempt 2, "
            "the journal has executor",
        ),
        (
            lambda d: d["entries"][1].update(round=2),
            "invalid journal: entries[1]: the run expects executor round 1 attempt 1",
        ),
        (lambda d: d["entries"][1].update(input_sha256="0" * 64), "entries[1].input_sha256"),
        (lambda d: d["entries"].append(dict(d["entries"][0], seq=6)), "entries[5]: the run has"),
        (lambda d: d.update(format="diagnosis_journal_v3"), "invalid journal: format: expected"),
        (lambda d: d["entries"][0].pop("outcome"), "entries[0].outcome: missing"),
    ],
    ids=["truncated-middle", "diverging", "wrong-round", "wrong-input", "after-end", "format",
         "malformed"],
)
def test_a_bad_journal_exits_2_naming_the_entry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, edit: Any, message: str
) -> None:
    journal, _ = record(capsys, tmp_path, PAYMENT)
    path = edited(tmp_path, journal, edit)
    for command in (["run", "--json"], ["journal", "to-scenario"]):
        code, out, err = run(capsys, *command, path)
        assert (code, out) == (2, "")
        assert err.startswith("diagnosis-core: ") and message in err, err
        assert "Traceback" not in err


def test_a_journal_that_ends_early_is_incomplete_at_a_named_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    journal, _ = record(capsys, tmp_path, PAYMENT)
    def cut(data: dict[str, Any]) -> None:  # as a crashed run leaves it: no end marker
        data.update(entries=data["entries"][:2])
        del data["end"]

    short = edited(tmp_path, journal, cut, "short.json")
    code, out, err = run(capsys, "run", "--json", short)
    assert (code, out) == (2, "")
    assert "the journal is incomplete: ends before gatekeeper round 1 attempt 1" in err

    def interrupt(data: dict[str, Any]) -> None:
        del data["entries"][3:]
        del data["end"]
        data["entries"][2]["state"] = "started"
        del data["entries"][2]["outcome"]

    died = edited(tmp_path, journal, interrupt, "died.json")
    for command in (["run"], ["journal", "to-scenario"]):
        code, out, err = run(capsys, *command, died)
        assert (code, out) == (2, "")
        assert "incomplete: interrupted during gatekeeper round 1 attempt 1" in err


def test_option_misuse_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    journal, _ = record(capsys, tmp_path, PAYMENT)
    key = tmp_path / "key"
    key.write_bytes(b"k")
    aiops = str(EXAMPLES / "aiops_auto_discovery.json")
    cases = [
        (["run", "--journal-out", "-", str(PAYMENT)], "--journal-out: give a file"),
        (["run", "--journal-out", str(tmp_path / "x"), str(journal)], "replayed, not recorded"),
        (["run", "--journal-key-file", str(key), str(PAYMENT)], "needs --journal-out"),
        (["run", "--journal-key-file", "-", str(journal)], "standard input is not a key"),
        (["run", "--journal-out", str(tmp_path / "x"), aiops], "only a chat scenario"),
        (["run", "--journal-key-file", str(tmp_path / "missing"), str(journal)], "cannot read"),
    ]
    for args, message in cases:
        code, out, err = run(capsys, *args)
        assert (code, out) == (2, ""), args
        assert message in err, (args, err)
    assert not (tmp_path / "x").exists()


def test_an_unwritable_journal_file_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "missing-dir" / "journal.json"
    code, out, err = run(capsys, "run", "--journal-out", str(target), str(PAYMENT))
    assert (code, out) == (1, "")
    assert err.startswith("diagnosis-core: cannot write journal")


def test_an_approximate_scenario_keeps_messages_a_script_cannot_reproduce(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    journal, _ = record(capsys, tmp_path, EXAMPLES / "composer_fails_twice.json")
    data = json.loads(journal.read_text(encoding="utf-8"))
    errors = [e for e in data["entries"] if "error" in e.get("outcome", {})]
    assert errors
    message = errors[0]["outcome"]["error"]["message"]
    errors[0]["outcome"]["error"]["message"] = "OSError: " + message
    # Edited outcomes fold to what they say: the run is the same run.
    path = tmp_path / "foreign.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run(capsys, "journal", "to-scenario", str(path))
    assert code == 2 and "cannot reproduce this message exactly" in err
    code, out, err = run(capsys, "journal", "to-scenario", "--approximate", str(path))
    assert (code, err) == (0, "")
    assert "OSError: " in out


def test_readable_output_of_a_journal_escapes_terminal_controls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads(PAYMENT.read_text(encoding="utf-8"))
    composer = json.loads(document["responses"]["composer"][0]["text"])
    composer["answer"] = "\x1b]0;owned\x07\x1b[31mred\x1b[0m " + composer["answer"]
    document["responses"]["composer"][0]["text"] = json.dumps(composer)
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(document), encoding="utf-8")
    journal, _ = record(capsys, tmp_path, scenario)
    code, out, _ = run(capsys, "run", str(journal))
    assert code == 0 and "red" in out
    assert "\x1b" not in out and "\x07" not in out


def _cli(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "diagnosis_core", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_standard_input_is_read_with_dash(tmp_path: Path) -> None:
    out = tmp_path / "journal.json"
    recorded = _cli("run", "--json", "--journal-out", str(out), "-", stdin=PAYMENT.read_bytes())
    assert recorded.returncode == 0, recorded.stderr
    replayed = _cli("run", "--json", "-", stdin=out.read_bytes())
    assert (replayed.returncode, replayed.stdout) == (0, recorded.stdout)
    converted = _cli("journal", "to-scenario", "-", stdin=out.read_bytes())
    assert converted.returncode == 0
    scenario = json.load(io.BytesIO(converted.stdout))
    assert dcp.canonical_json(dc.replay(scenario)) + "\n" == recorded.stdout.decode("utf-8")
