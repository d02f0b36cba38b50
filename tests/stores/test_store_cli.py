"""The command line on a store (spec §16): run --store, runs ls, runs resume, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_support import EXAMPLES_DIR, load_example, scenario_of

import diagnosis_core.journal as dcj
from diagnosis_core.cli import main
from diagnosis_core.stores import open_store

EXAMPLES = sorted(EXAMPLES_DIR.glob("*.json"))


def _out(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> str:
    assert main(argv) == code
    return capsys.readouterr().out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_run_with_a_store_prints_exactly_what_it_prints_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path, json_flag: list[str]
) -> None:
    plain = _out(capsys, ["run", *json_flag, str(path)])
    for url in (f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "r.jsonl")):
        assert _out(capsys, ["run", *json_flag, "--store", url, str(path)]) == plain
        # the store holds it now: the same output again, folded from the store
        assert _out(capsys, ["run", *json_flag, "--store", url, str(path)]) == plain


def test_runs_ls_lists_with_a_session_filter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "r.jsonl")
    for name in ("payment_timeout", "redis_latency_evidence_retry"):
        _out(capsys, ["run", "--store", url, str(EXAMPLES_DIR / f"{name}.json")])
    listed = json.loads(_out(capsys, ["runs", "ls", "--store", url, "--json"]))
    assert listed["format"] == "diagnosis_run_list_v1"
    assert [(r["run_id"], r["status"], r["workflow"]) for r in listed["runs"]] == [
        ("run-payment-001", "complete", "chat"), ("run-redis-002", "complete", "chat")]
    one = json.loads(_out(capsys, ["runs", "ls", "--store", url, "--session", "chat-42",
                                   "--json"]))
    assert [r["run_id"] for r in one["runs"]] == ["run-payment-001"]
    text = _out(capsys, ["runs", "ls", "--store", url])
    assert "run-redis-002" in text and "complete" in text


@pytest.mark.parametrize("cut", [1, 3, 4, 5])
def test_runs_resume_finishes_an_interrupted_run_with_the_scripted_effects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: int
) -> None:
    path = EXAMPLES_DIR / "payment_timeout.json"
    url = f"sqlite:///{tmp_path / 'r.db'}"
    request, effects = scenario_of(load_example("payment_timeout"))
    import diagnosis_core as dc

    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink)
    journal = sink.journal(request)
    store = open_store(url)
    with store.claim(request.run.run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        for entry in journal.entries[: cut - 1]:
            store.append(claim, entry)
        last = journal.entries[cut - 1]
        store.append(claim, dcj.JournalEntry(last.seq, last.call, last.round, last.attempt,
                                             last.input_sha256, dcj.EntryState.STARTED))
    store.close()
    resumed = json.loads(_out(capsys, ["runs", "resume", request.run.run_id, "--store", url,
                                       "--scenario", str(path), "--json"]))
    expected = json.loads(_out(capsys, ["run", "--json", str(path)]))
    if last.call is dcj.JournalCall.GATEKEEPER:
        assert resumed["reason_code"] == "GATEKEEPER_UNAVAILABLE"
    else:
        assert resumed == expected


def test_store_commands_refuse_bad_input_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(EXAMPLES_DIR / "payment_timeout.json")
    assert main(["run", "--store", "ftp://x", path]) == 2
    assert "expected sqlite:///PATH" in capsys.readouterr().err
    url = str(tmp_path / "r.jsonl")
    assert main(["runs", "resume", "nope", "--store", url, "--scenario", path]) == 2
    assert "its run is 'run-payment-001', not 'nope'" in capsys.readouterr().err
    assert main(["runs", "resume", "run-payment-001", "--store", url, "--scenario", path]) == 2
    assert "not in the store" in capsys.readouterr().err
    assert main(["run", "--store", url, "--journal-out", str(tmp_path / "j"), path]) == 2
    assert "--journal-out: not with --store" in capsys.readouterr().err
    assert main(["report", "--store", url, "--since", "yesterday"]) == 2
    assert "--since 'yesterday'" in capsys.readouterr().err


def test_runs_resume_without_a_scenario_prints_a_complete_run_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = EXAMPLES_DIR / "payment_timeout.json"
    url = str(tmp_path / "r.jsonl")
    expected = _out(capsys, ["run", "--json", "--store", url, str(path)])
    assert _out(capsys, ["runs", "resume", "run-payment-001", "--store", url, "--json"]) == (
        expected)
    request, _ = scenario_of(load_example("payment_timeout"))
    import attrs

    other = attrs.evolve(request, run=attrs.evolve(request.run, run_id="half"))
    store = open_store(url)
    with store.claim("half") as claim:
        store.begin(claim, dcj.Journal(other))
    store.close()
    assert main(["runs", "resume", "half", "--store", url]) == 2
    assert "has not ended; give --scenario FILE" in capsys.readouterr().err


def test_runs_ls_prints_an_unreadable_run_with_its_problem_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'r.db'}"
    for name in ("payment_timeout", "redis_latency_evidence_retry"):
        _out(capsys, ["run", "--store", url, str(EXAMPLES_DIR / f"{name}.json")])
    with sqlite3.connect(tmp_path / "r.db") as db:
        db.execute("UPDATE diagnosis_runs SET session_id = 'x\ny' "
                   "WHERE run_id = 'run-payment-001'")
    text = _out(capsys, ["runs", "ls", "--store", url])
    lines = text.splitlines()
    assert lines[1].startswith("run-payment-001") and "x\\ny" in lines[1]
    assert lines[1].endswith("invalid")
    assert lines[2] == ("  problem: run 'run-payment-001': the record's session_id is not "
                        "the stored request's")
    assert lines[3].startswith("run-redis-002") and lines[3].endswith("complete")


def test_payload_key_file_is_checked_like_the_journal_key_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "r.jsonl")
    empty = tmp_path / "empty.key"
    empty.write_bytes(b"")
    for value, message in (("-", "--payload-key-file: give a file"),
                           (str(empty), "the key file is empty"),
                           (str(tmp_path / "missing"), "cannot read")):
        assert main(["report", "--store", url, "--payload-key-file", value]) == 2
        assert message in capsys.readouterr().err


def test_run_batch_with_a_store_refuses_a_journal_line_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    import diagnosis_core as dc

    request, effects = scenario_of(load_example("payment_timeout"))
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink)
    journal_line = dcj.journal_to_json(sink.journal(request))
    scenario_line = json.dumps(load_example("payment_timeout"))
    text = f"{journal_line}\n\n{scenario_line}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    url = str(tmp_path / "r.jsonl")
    lines = _out(capsys, ["run", "--json", "--batch", "--store", url]).splitlines()
    assert json.loads(lines[0]) == {"error": "--store: a journal or resume document is "
                                    "replayed, not recorded (run it without --store)"}
    assert json.loads(lines[1])["outcome"] == dc.to_wire(dc.replay_scenario(
        dc.load_scenario(load_example("payment_timeout"))).result)["outcome"]  # type: ignore[index]
    assert len(lines) == 2
    store = open_store(url)
    assert [s.run_id for s in store.runs()] == ["run-payment-001"]
    store.close()
    assert main(["run", "--json", "--batch", "--store", "ftp://x"]) == 2
    assert "expected sqlite:///PATH" in capsys.readouterr().err
