"""Bad input and damaged stores (spec §16): always a typed error or a status naming the problem."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from store_support import load_example, scenario_of, with_ids

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core.cli import main
from diagnosis_core.journal import StoreError, entry_from_json, entry_to_json
from diagnosis_core.stores import (
    AesGcmCodec,
    JsonlStore,
    SqliteStore,
    fleet_report,
    open_store,
    record_feedback,
    session_report,
)
from diagnosis_core.stores._feedback import feedback_from_json


def _run(store: Any, run_id: str = "r", session: str = "s") -> dc.DiagnosisState:
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                            session_id=session))
    return dc.run_diagnosis(request, effects, store=store)


def _request(run_id: str = "r") -> dc.DiagnosisRequest:
    return scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                session_id="s"))[0]


def test_the_entry_codec_refuses_what_is_not_an_entry() -> None:
    with pytest.raises(dc.JournalError, match="entry: expected a journal entry, got dict"):
        entry_to_json({})  # type: ignore[arg-type]
    with pytest.raises(dc.JournalError, match="entry: expected text, got bytes"):
        entry_from_json(b"{}")  # type: ignore[arg-type]
    with pytest.raises(dc.JournalError, match="entry_type: expected a journal entry class"):
        entry_from_json("{}", dict)
    with pytest.raises(dc.JournalError, match=r"entry: expected an object, got array"):
        entry_from_json("[]")


def test_store_misuse_is_a_store_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "r.db")
    with pytest.raises(StoreError, match="codec: expected a PayloadCodec"):
        SqliteStore(tmp_path / "x.db", codec=object())  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="run_id: expected a non-empty string"):
        store.claim("")
    with pytest.raises(StoreError, match="session_id: expected a string, got int"):
        store.runs(session_id=3)  # type: ignore[arg-type]
    with store.claim("r") as claim:
        with pytest.raises(StoreError, match="journal: expected a journal, got str"):
            store.begin(claim, "journal")  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="the journal's request is run 'other'"):
            store.begin(claim, dcj.Journal(_request("other")))
        store.begin(claim, dcj.Journal(_request()))
        store.begin(claim, dcj.Journal(_request()))  # idempotent
        changed = dcj.Journal(attrs_evolve(_request(), question="another"))
        with pytest.raises(StoreError, match="the store holds it with another request"):
            store.begin(claim, changed)
        _, journal = _journal()
        with pytest.raises(StoreError, match="duration_ms: expected a number >= 0"):
            store.append(claim, journal.entries[0], duration_ms=-1.0)
    with pytest.raises(StoreError, match="run 'nope': not in the store"):
        store.add_feedback("nope", dc_feedback())
    with store as same:
        assert same is store
    with pytest.raises(StoreError, match="cannot open the SQLite store"):
        SqliteStore(tmp_path / "missing" / "dir" / "r.db")
    with pytest.raises(StoreError, match="cannot create the lock directory"):
        (tmp_path / "file").write_text("")
        JsonlStore(tmp_path / "j.jsonl")._locks.__class__(tmp_path / "file" / "x").acquire("r")


def attrs_evolve(request: dc.DiagnosisRequest, **changes: Any) -> dc.DiagnosisRequest:
    import attrs

    return attrs.evolve(request, **changes)


def dc_feedback() -> Any:
    from diagnosis_core.journal import Feedback

    return Feedback(3, None, 1)


def _journal() -> tuple[dc.DiagnosisState, dcj.Journal]:
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id="r"))
    sink = dcj.ListJournalSink()
    state = dc.run_diagnosis(request, effects, sink=sink)
    return state, sink.journal(request)


def test_damaged_sql_rows_are_refused_naming_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.db"
    store = SqliteStore(path)
    _run(store)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_entries SET seq = 9 WHERE seq = 2")
        db.execute("UPDATE diagnosis_entries SET seq = 2 WHERE seq = 3")
        db.execute("UPDATE diagnosis_entries SET seq = 3 WHERE seq = 9")
    with pytest.raises(StoreError, match="run 'r' entry 2: the entry says seq 3 finished"):
        store.load("r")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_entries SET payload = '{\"seq\": 1}' WHERE seq = 2")
    with pytest.raises(StoreError, match=r"run 'r' entry 2: entry\.call: missing"):
        store.load("r")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_runs SET format = 'other_v1'")
    with pytest.raises(StoreError, match="run 'r': unknown journal format 'other_v1'"):
        store.load("r")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE diagnosis_runs SET format = 'diagnosis_journal_v1', payload = '{}'")
    with pytest.raises(StoreError, match="run 'r': the stored request is not valid"):
        store.load("r")
    # the listing names the bad run and goes on (exit 0, the run invalid with its reason)
    capsys.readouterr()
    assert main(["runs", "ls", "--store", f"sqlite:///{path}", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    assert row["status"] == "invalid"
    assert row["problem"].startswith("run 'r': the stored request is not valid")
    store.close()


def test_a_journal_that_does_not_fold_is_invalid_in_the_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.db"
    store = SqliteStore(path)
    _run(store, "good")
    _run(store, "bad")
    _, journal = _journal()
    with sqlite3.connect(path) as db:  # the planner's reply replaced by another finished entry
        forged = attrs_evolve(journal.entries[0], input_sha256="0" * 64)
        db.execute("UPDATE diagnosis_entries SET payload = ? WHERE run_id = 'bad' AND seq = 1",
                   (entry_to_json(forged),))
    report: Any = dc.to_wire(session_report(store, "s"))
    assert [story["status"] for story in report["runs"]] == ["complete", "invalid"]
    assert "entries[0].input_sha256: the input of planner" in report["runs"][1]["problem"]
    fleet: Any = dc.to_wire(fleet_report(store))
    assert fleet["runs"] == {"total": 2, "complete": 1, "incomplete": 0, "invalid": 1}
    store.close()
    assert main(["runs", "ls", "--store", f"sqlite:///{path}", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["status"] for row in listed["runs"]] == ["complete", "invalid"]
    assert main(["sessions", "show", "s", "--store", f"sqlite:///{path}"]) == 0
    assert "problem: entries[0]" in capsys.readouterr().out
    scenario = tmp_path / "bad.json"
    scenario.write_text(json.dumps(with_ids(load_example("payment_timeout"), run_id="bad",
                                            session_id="s")))
    assert main(["run", "--store", f"sqlite:///{path}", str(scenario)]) == 2
    assert "invalid journal in the store: entries[0]" in capsys.readouterr().err


def test_damaged_json_lines_are_skipped_or_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    store = JsonlStore(path)
    _run(store, "a")
    lines = path.read_text().splitlines()
    entry_line = json.loads(lines[1])
    extra = [
        json.dumps({"kind": "feedback", "run_id": "later", "payload": "{}",
                    "recorded_at": 1.0}),
        json.dumps({"kind": "mystery", "run_id": "a"}),
        json.dumps({"kind": "entry", "run_id": 7}),
        json.dumps({**entry_line, "run_id": "ghost"}),
        json.dumps({**entry_line, "seq": "1"}),
        json.dumps({**entry_line, "duration_ms": True}),
        json.dumps({**entry_line, "written_at": "now"}),
        json.dumps({**entry_line, "payload": 3}),
        json.dumps({"kind": "run", "run_id": "a", "session_id": 1, "format": "f",
                    "payload": "", "created_at": 1}),
        json.dumps({"kind": "run", "run_id": "z", "session_id": "s", "format": "f",
                    "payload": "", "created_at": True}),
        "\xff not json",
    ]
    path.write_text("\n".join([*lines, *extra]) + "\n")
    reader = JsonlStore(path)
    stored = reader.load("a")
    assert stored is not None and len(stored.journal.entries) == 5
    assert reader.torn_lines == len(extra) - 1  # the orphan feedback waits for its run
    with open(path, "a") as handle:
        handle.write(json.dumps({**entry_line, "seq": 9}) + "\n")
        handle.write(lines[0] + "\n")  # the run recorded twice
    with pytest.raises(StoreError, match="run 'a': the store file is inconsistent: entry 9"):
        reader.load("a")
    with pytest.raises(StoreError, match="the store file is inconsistent"):
        reader.claim("a")
    with pytest.raises(StoreError, match="run 'nope': not in the store"):
        reader.add_feedback("nope", dc_feedback())
    with pytest.raises(StoreError, match="cannot open the store file"):
        JsonlStore(tmp_path / "missing" / "r.jsonl")
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join([*lines, lines[0]]) + "\n")
    with pytest.raises(StoreError, match="inconsistent: the run is recorded twice"):
        JsonlStore(twice).load("a")


def test_feedback_records_are_read_strictly() -> None:
    for text, problem in [
        ("[]", "not a feedback record"),
        ('{"rating": 3, "after_seq": 1, "extra": 1}', "not a feedback record"),
        ('{"rating": true, "after_seq": 1}', "rating: expected an integer from 1 to 5"),
        ('{"rating": 3, "comment": 5, "after_seq": 1}', "comment: expected text"),
        ('{"rating": 3, "after_seq": 0}', "not a feedback record"),
        ('{"rating": 3, "after_seq": 1, "mac": 1}', "not a feedback record"),
        ('{"rating": 3,', "where:"),
    ]:
        with pytest.raises(StoreError, match=problem):
            feedback_from_json(text, "where")
    assert feedback_from_json('{"rating": 3, "after_seq": 2}', "w").after_seq == 2


def test_feedback_arguments_and_keys_are_checked(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "r.jsonl"))
    _run(store)
    for rating in (True, 0, 2.5):
        with pytest.raises(StoreError, match="rating: expected an integer from 1 to 5"):
            record_feedback(store, "r", rating)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="comment: expected text of at most 10000"):
        record_feedback(store, "r", 3, "x" * 10_001)
    with pytest.raises(dc.JournalError, match=r"entries\[0\]\.mac: missing"):
        record_feedback(store, "r", 3, key=b"k")  # an unsigned journal, verified with a key
    record_feedback(store, "r", 3)
    report: Any = dc.to_wire(session_report(store, "s", key=None))
    assert report["runs"][0]["feedback"][0]["rating"] == 3
    with pytest.raises(StoreError, match="session_id: expected a non-empty string"):
        session_report(store, "")


def test_a_codec_with_another_name_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store = open_store(url, codec=AesGcmCodec(bytes(32)))
    _run(store)

    class Renamed(AesGcmCodec):
        name = "other"

    with pytest.raises(StoreError, match="sealed with codec 'aesgcm', not 'other'"):
        open_store(url, codec=Renamed(bytes(32))).load("r")


def test_cli_store_errors_and_times(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = str(tmp_path / "r.jsonl")
    aiops = Path(__file__).resolve().parents[2] / "examples" / "aiops_payload_targeted.json"
    assert main(["runs", "resume", "x", "--store", url, "--scenario", str(aiops)]) == 2
    assert "only a chat scenario" in capsys.readouterr().err
    assert main(["runs", "ls", "--store", "nowhere"]) == 2
    assert "store: store URL 'nowhere'" in capsys.readouterr().err
    assert main(["runs", "ls", "--store", url, "--journal-key-file", str(tmp_path / "no")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["report", "--store", "nowhere"]) == 2
    assert main(["sessions", "show", "s", "--store", url, "--journal-key-file",
                 str(tmp_path / "no")]) == 2
    capsys.readouterr()
    store = open_store(url)
    _run(store)
    store.close()
    assert main(["report", "--store", url, "--since", "2000-01-01T00:00:00+01:00",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"]["total"] == 1
    assert main(["report", "--store", url, "--since", "4102444800"]) == 0
    assert "runs: 0 (" in capsys.readouterr().out
    assert main(["report", "--store", url, "--html", str(tmp_path / "no" / "x.html")]) == 1
    assert "cannot write" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"question": 1}')
    assert main(["run", "--store", url, str(bad)]) == 2
    assert "invalid scenario" in capsys.readouterr().err
    assert main(["run", "--store", "sqlite:///" + str(tmp_path / "no" / "r.db"),
                 str(bad)]) == 2
    assert "store: cannot open the SQLite store" in capsys.readouterr().err
