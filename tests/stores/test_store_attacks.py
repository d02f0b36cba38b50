"""Attacks on a journal store and its command line (spec §16, §15), one test each.

Every test names the attack it refuses: a race that forked the feedback chain,
one unreadable run hiding a whole store, a sealed row relabelled or copied, a
report string that breaks its medium, a CLI option that was ignored or
misread, a keyless resume of a signed run. Real stores (a JSON Lines file, a
SQLite file, a PostgreSQL server), real threads and real processes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import (
    EXAMPLES_DIR,
    ROOT,
    failing_effects,
    load_example,
    scenario_of,
    with_ids,
)

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core import to_wire
from diagnosis_core.cli import main
from diagnosis_core.journal import MissingKeyError, StoreError
from diagnosis_core.stores import (
    fleet_report,
    fleet_report_html,
    open_store,
    record_feedback,
    session_report,
)
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._fleet import format_fleet_report
from diagnosis_core.stores._session import format_session_report
from diagnosis_core.tools import ToolRecorder

KEY = b"attack chain key"
CODEC_KEY = bytes(range(32))
FEEDBACKS = 100


def _codec() -> Any:
    pytest.importorskip("cryptography")
    from diagnosis_core.stores import AesGcmCodec

    return AesGcmCodec(CODEC_KEY)


def _record(store: StoreBase, run_id: str, session: str, *, key: bytes | None = None,
            name: str = "payment_timeout") -> dc.DiagnosisState:
    request, effects = scenario_of(with_ids(load_example(name), run_id=run_id,
                                            session_id=session))
    return dc.run_diagnosis(request, effects, store=store, key=key)


def _fresh(prefix: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:10]
    return f"{prefix}-{tag}", f"session-{tag}"


def _out(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> str:
    assert main(argv) == code, capsys.readouterr().err
    return capsys.readouterr().out


def _story(store: StoreBase, session: str, key: bytes | None = None) -> list[Any]:
    runs = to_wire(session_report(store, session, key=key))["runs"]  # type: ignore[index, call-overload]
    assert isinstance(runs, list)
    return runs


# --- the feedback race ---------------------------------------------------------------------


def _assert_all_feedback_recorded(url: str, run_id: str, session: str, count: int) -> None:
    store = open_store(url)
    try:
        (story,) = _story(store, session, KEY)
        assert story["status"] == "complete", story.get("problem")
        assert len(story["feedback"]) == count
        assert sorted(item["comment"] for item in story["feedback"]) == sorted(
            f"t{i}" for i in range(count))
        # the chain is one line: a further signed feedback is accepted
        record_feedback(store, run_id, 5, "after the race", key=KEY)
        (story,) = _story(store, session, KEY)
        assert story["status"] == "complete" and len(story["feedback"]) == count + 1
    finally:
        store.close()


def test_concurrent_signed_feedback_in_threads_never_forks_the_mac_chain(url: str) -> None:
    run_id, session = _fresh("race")
    store = open_store(url)
    _record(store, run_id, session, key=KEY)
    other = open_store(url)  # two store objects: one claim mutex each, one lock between them
    barrier = threading.Barrier(FEEDBACKS)
    errors: list[BaseException] = []

    def one(index: int) -> None:
        barrier.wait(timeout=120)
        try:
            record_feedback(store if index % 2 else other, run_id, 1 + index % 5,
                            f"t{index}", key=KEY)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(FEEDBACKS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not any(thread.is_alive() for thread in threads)
    store.close()
    other.close()
    assert errors == []
    _assert_all_feedback_recorded(url, run_id, session, FEEDBACKS)


_WORKER = """
import sys, threading
from diagnosis_core.stores import open_store, record_feedback
url, run_id, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = open_store(url)
barrier = threading.Barrier(count)
errors = []
def one(index):
    barrier.wait(timeout=120)
    try:
        record_feedback(store, run_id, 1 + index % 5, f"t{index}", key=%r)
    except BaseException as error:
        errors.append(repr(error))
threads = [threading.Thread(target=one, args=(first + i,)) for i in range(count)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
store.close()
print(errors)
sys.exit(1 if errors else 0)
"""


def test_concurrent_signed_feedback_from_processes_never_forks_the_mac_chain(
    url: str, tmp_path: Path
) -> None:
    run_id, session = _fresh("race")
    store = open_store(url)
    _record(store, run_id, session, key=KEY)
    store.close()
    script = tmp_path / "feedback_worker.py"
    script.write_text(_WORKER.replace("%r", repr(KEY)), encoding="utf-8")
    processes, threads = 4, FEEDBACKS // 4
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    workers = [
        subprocess.Popen([sys.executable, str(script), url, run_id, str(p * threads),
                          str(threads)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
        for p in range(processes)
    ]
    try:
        results = [worker.communicate(timeout=900) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert [worker.returncode for worker in workers] == [0] * processes, results
    _assert_all_feedback_recorded(url, run_id, session, FEEDBACKS)


# --- one bad run never hides the others ---------------------------------------------------------


def _all_listings(
    capsys: pytest.CaptureFixture[str], url: str, session: str, extra: list[str]
) -> dict[str, Any]:
    """What every listing says about the session's runs, keyed by listing."""
    listed = json.loads(_out(capsys, ["runs", "ls", "--store", url, "--json", *extra]))
    shown = json.loads(_out(capsys, ["sessions", "show", session, "--store", url, "--json",
                                     *extra]))
    text = _out(capsys, ["sessions", "show", session, "--store", url, *extra])
    report = json.loads(_out(capsys, ["report", "--store", url, "--json", *extra]))
    ls_text = _out(capsys, ["runs", "ls", "--store", url, *extra])
    return {"ls": listed, "show": shown, "text": text, "report": report, "ls_text": ls_text}


def test_one_inconsistent_run_does_not_hide_the_others_in_any_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    store = open_store(str(path))
    _record(store, "good-1", "s")
    _record(store, "bad", "s")
    _record(store, "good-2", "s")
    store.close()
    with path.open("a", encoding="utf-8") as handle:  # an entry that follows nothing
        handle.write(json.dumps({"kind": "entry", "run_id": "bad", "seq": 40,
                                 "state": "started", "payload": "{}", "duration_ms": None,
                                 "token": "t", "written_at": 1.0}) + "\n")
    seen = _all_listings(capsys, str(path), "s", [])
    problem = "run 'bad': the store file is inconsistent: entry 40 does not follow entry"
    assert [(r["run_id"], r["status"]) for r in seen["ls"]["runs"]] == [
        ("good-1", "complete"), ("bad", "invalid"), ("good-2", "complete")]
    assert seen["ls"]["runs"][1]["problem"].startswith(problem)
    runs = seen["show"]["runs"]
    assert [(r["run_id"], r["status"]) for r in runs] == [
        ("good-1", "complete"), ("bad", "invalid"), ("good-2", "complete")]
    assert runs[1]["problem"].startswith(problem)
    assert not any(runs[1][name] for name in ("next_call", "effects", "tool_invocations",
                                               "question", "agent_steps", "gatekeeper_audits",
                                               "verifier_evaluations", "outcome", "reason_code",
                                               "answer", "feedback"))
    assert problem in seen["text"] and problem in seen["ls_text"]
    assert seen["report"]["runs"] == {"total": 3, "complete": 2, "incomplete": 0, "invalid": 1}
    reopened = open_store(str(path))
    assert fleet_report(reopened).runs.invalid == 1
    assert [r["status"] for r in _story(reopened, "s")] == ["complete", "invalid", "complete"]
    reopened.close()


def test_a_run_sealed_under_another_key_is_listed_invalid_and_the_others_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codec = _codec()
    from diagnosis_core.stores import AesGcmCodec

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = open_store(url, codec=codec)
    _record(store, "ours", "s")
    store.close()
    foreign = open_store(url, codec=AesGcmCodec(bytes(32)))
    _record(foreign, "foreign", "s")
    foreign.close()
    key_file = tmp_path / "payload.key"
    key_file.write_bytes(CODEC_KEY)
    seen = _all_listings(capsys, url, "s", ["--payload-key-file", str(key_file)])
    assert [(r["run_id"], r["status"]) for r in seen["ls"]["runs"]] == [
        ("ours", "complete"), ("foreign", "invalid")]
    assert seen["ls"]["runs"][1]["problem"] == (
        "run 'foreign': the payload does not decode (another key, or it was changed or moved)")
    assert [r["status"] for r in seen["show"]["runs"]] == ["complete", "invalid"]
    assert seen["report"]["runs"]["invalid"] == 1


# --- sealed means bound ------------------------------------------------------------------------


def _sql(url: str, statement: str, parameters: tuple[object, ...] = ()) -> None:
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url[len("sqlite:///"):])) as db:
            db.execute(statement, parameters)
            db.commit()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(statement.replace("?", "%s"), parameters)


def _rewrite_jsonl(url: str, change: Any) -> None:
    """Rewrite the JSON Lines file record by record: ``change(records)`` edits the list."""
    path = Path(url)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    change(records)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")


def _relabel_run(url: str, run_id: str, column: str, value: object) -> None:
    """``UPDATE diagnosis_runs SET column = value`` (or the run line of the file)."""
    if not url.endswith(".jsonl"):
        _sql(url, f"UPDATE diagnosis_runs SET {column} = ? WHERE run_id = ?", (value, run_id))
        return

    def change(records: list[Any]) -> None:
        for record in records:
            if record["kind"] == "run" and record["run_id"] == run_id:
                record[column] = value

    _rewrite_jsonl(url, change)


def _relabel_entry(url: str, run_id: str, seq: int, column: str, value: object) -> None:
    """The stored entry ``seq`` (its last write) relabelled in one column."""
    if not url.endswith(".jsonl"):
        _sql(url, f"UPDATE diagnosis_entries SET {column} = ? WHERE run_id = ? AND seq = ?",
             (value, run_id, seq))
        return

    def change(records: list[Any]) -> None:
        last = [r for r in records if r["kind"] == "entry" and r["run_id"] == run_id
                and r["seq"] == seq][-1]
        last[column] = value

    _rewrite_jsonl(url, change)


def _copy_feedback(url: str, run_id: str, times: int, to: str | None = None) -> None:
    """The run's first feedback row inserted ``times`` more times (for run ``to``)."""
    if not url.endswith(".jsonl"):
        for _ in range(times):
            _sql(url, "INSERT INTO diagnosis_feedback (run_id, payload, recorded_at) "
                 "SELECT ?, payload, recorded_at FROM diagnosis_feedback WHERE run_id = ? "
                 "ORDER BY id LIMIT 1", (to or run_id, run_id))
        return

    def change(records: list[Any]) -> None:
        first = next(r for r in records if r["kind"] == "feedback" and r["run_id"] == run_id)
        records.extend({**first, "run_id": to or run_id} for _ in range(times))

    _rewrite_jsonl(url, change)


def test_a_relabelled_session_id_does_not_move_a_sealed_run_into_another_session(
    url: str,
) -> None:
    run_id, victim = _fresh("victim")
    attacker = f"attacker-{run_id}"
    store = open_store(url, codec=_codec())
    state = _record(store, run_id, victim)
    _record(store, f"{run_id}-own", attacker)
    store.close()
    _relabel_run(url, run_id, "session_id", attacker)
    store = open_store(url, codec=_codec())
    runs = _story(store, attacker)
    assert [(r["run_id"], r["status"]) for r in runs] == [
        (run_id, "invalid"), (f"{run_id}-own", "complete")]
    assert "does not decode" in runs[0]["problem"]
    told = json.dumps(runs)
    assert state.result.answer not in told and victim not in told
    assert _story(store, victim) == []
    store.close()


def test_a_relabelled_session_id_of_a_plain_run_is_refused_too(url: str) -> None:
    run_id, victim = _fresh("victim")
    store = open_store(url)
    state = _record(store, run_id, victim)
    store.close()
    _relabel_run(url, run_id, "session_id", f"attacker-{run_id}")
    store = open_store(url)
    with pytest.raises(StoreError, match="the record's session_id is not the stored request's"):
        store.load(run_id)
    (story,) = _story(store, f"attacker-{run_id}")
    assert story["status"] == "invalid" and state.result.answer not in json.dumps(story)
    store.close()


@pytest.mark.parametrize("column, value", [
    ("created_at", 1.0), ("format", "diagnosis_journal_v1"),
], ids=["created_at", "format"])
def test_a_relabelled_time_or_format_of_a_sealed_run_does_not_decode(
    url: str, column: str, value: object
) -> None:
    run_id, session = _fresh("relabel")
    store = open_store(url, codec=_codec())
    _record(store, run_id, session)
    store.close()
    _relabel_run(url, run_id, column, value)
    store = open_store(url, codec=_codec())
    with pytest.raises(StoreError, match=f"run '{run_id}': the payload does not decode"):
        store.load(run_id)
    assert [r["status"] for r in _story(store, session)] == ["invalid"]
    store.close()


@pytest.mark.parametrize("column, value", [
    ("duration_ms", 99999.0), ("written_at", 2.0),
], ids=["duration_ms", "written_at"])
def test_a_relabelled_entry_time_of_a_sealed_run_does_not_decode(
    url: str, column: str, value: object
) -> None:
    run_id, session = _fresh("relabel")
    store = open_store(url, codec=_codec())
    _record(store, run_id, session)
    store.close()
    _relabel_entry(url, run_id, 2, column, value)
    store = open_store(url, codec=_codec())
    with pytest.raises(StoreError, match=f"run '{run_id}' entry 2: the payload does not decode"):
        store.load(run_id)
    report: Any = to_wire(fleet_report(store))
    assert report["runs"]["invalid"] >= 1
    assert all(row["p95"] != 99999.0 for row in report["latency_ms"].values())
    store.close()


def test_a_sealed_feedback_copied_to_other_rows_does_not_decode(url: str) -> None:
    run_id, session = _fresh("copied")
    store = open_store(url, codec=_codec())
    _record(store, run_id, session)
    record_feedback(store, run_id, 1, "one rating")
    store.close()
    _copy_feedback(url, run_id, 9)
    store = open_store(url, codec=_codec())
    with pytest.raises(StoreError, match=f"run '{run_id}' feedback 2: the payload does not"):
        store.load(run_id)
    report: Any = to_wire(fleet_report(store))
    assert report["feedback"]["ratings"]["1"] < 10
    (story,) = _story(store, session)
    assert story["status"] == "invalid"
    store.close()


def test_a_sealed_feedback_moved_to_another_run_does_not_decode(url: str) -> None:
    run_id, session = _fresh("moved")
    store = open_store(url, codec=_codec())
    _record(store, run_id, session)
    _record(store, f"{run_id}-b", session)
    record_feedback(store, run_id, 1, "a's rating")
    store.close()
    _copy_feedback(url, run_id, 1, to=f"{run_id}-b")
    store = open_store(url, codec=_codec())
    with pytest.raises(StoreError, match="feedback 1: the payload does not decode"):
        store.load(f"{run_id}-b")
    store.close()


# --- every string a report prints is escaped for its medium ---------------------------------


def _record_with_tool(store: StoreBase, run_id: str, session: str, tool_name: str) -> None:
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                            session_id=session))
    recorder = ToolRecorder()
    tool = recorder.wrap(tool_name, lambda service: {"ok": service})
    executor = effects.executor

    def run_tool(input: str, config: dc.RunConfig, /) -> str:
        tool("pay-svc")
        return executor(input, config)

    dc.run_diagnosis(request, attrs.evolve(effects, executor=run_tool), store=store,
                     tools=recorder)


def test_report_html_of_a_tool_name_with_a_lone_surrogate_is_written_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.jsonl")
    store = open_store(url)
    _record_with_tool(store, "r", "s", "logs\ud800<b>\u202e")
    store.close()
    page = tmp_path / "fleet.html"
    assert main(["report", "--store", url, "--html", str(page)]) == 0, capsys.readouterr().err
    text = page.read_text(encoding="utf-8")
    assert "logs\\ud800&lt;b&gt;\\u202e" in text and "<b>" not in text
    assert fleet_report_html(fleet_report(open_store(url))).encode("utf-8")
    assert main(["report", "--store", url, "--json"]) == 0  # data, encoded without failing
    assert "logs\\ud800<b>\u202e" in capsys.readouterr().out
    assert main(["report", "--store", url]) == 0
    assert "\u202e" not in capsys.readouterr().out


def test_a_tool_name_with_a_line_break_cannot_forge_a_report_line(tmp_path: Path) -> None:
    url = str(tmp_path / "runs.jsonl")
    store = open_store(url)
    forged = "logs\n   outcome: ANSWERED_FORGED\x1b[2J"
    _record_with_tool(store, "r", "s", forged)
    session_text = format_session_report(session_report(store, "s"))
    fleet_text = format_fleet_report(fleet_report(store))
    store.close()
    for text in (session_text, fleet_text):
        assert "\n   outcome: ANSWERED_FORGED" not in text and "\x1b" not in text
        assert "logs\\n   outcome: ANSWERED_FORGED\\x1b[2J" in text


# --- the command line -----------------------------------------------------------------------------


def test_run_batch_with_a_store_records_every_run_of_the_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    docs = [with_ids(load_example("payment_timeout"), run_id=f"batch-{i}", session_id="b")
            for i in range(3)]
    docs.append(load_example("aiops_alertmanager"))
    lines = "".join(json.dumps(doc) + "\n" for doc in docs) + "not json\n"
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    def batch(*extra: str) -> list[Any]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
        out = _out(capsys, ["run", "--json", "--batch", *extra])
        return [json.loads(line) for line in out.splitlines()]

    plain = batch()
    assert batch("--store", url) == plain
    store = open_store(url)
    listed = [summary.run_id for summary in store.runs()]
    assert listed[:3] == ["batch-0", "batch-1", "batch-2"] and len(listed) == 4
    assert all(store.load(run_id) is not None for run_id in listed)
    store.close()
    assert batch("--store", url) == plain  # folded from the store, nothing recorded twice
    assert main(["run", "--batch", "--store", url]) == 2
    assert "--batch" in capsys.readouterr().err


@pytest.mark.parametrize("since", ["nan", "inf", "-inf", "1e400", "NaN", "Infinity"])
def test_report_since_a_non_finite_time_is_refused_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], since: str
) -> None:
    url = str(tmp_path / "runs.jsonl")
    assert main(["report", "--store", url, f"--since={since}", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"diagnosis-core: --since {since!r}: expected a finite time\n"


@pytest.mark.parametrize("since", [math.nan, math.inf, -math.inf, 10**400],
                         ids=["nan", "inf", "-inf", "10**400"])
def test_since_nan_or_infinite_has_one_meaning_in_every_store(
    store: StoreBase, since: float
) -> None:
    _record(store, *_fresh("since"))
    with pytest.raises(StoreError, match="since: expected a finite time"):
        store.runs(since=since)
    with pytest.raises(StoreError, match="since: expected a finite time"):
        fleet_report(store, since=since)
    with pytest.raises(StoreError, match="since: expected seconds since the epoch"):
        store.runs(since=True)


def test_runs_resume_with_another_requests_scenario_says_so_in_cli_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.jsonl")
    path = EXAMPLES_DIR / "payment_timeout.json"
    _out(capsys, ["run", "--store", url, str(path)])
    other = load_example("payment_timeout")
    other["question"] += " (another question)"
    other_path = tmp_path / "other.json"
    other_path.write_text(json.dumps(other), encoding="utf-8")
    assert main(["runs", "resume", "run-payment-001", "--store", url,
                 "--scenario", str(other_path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"diagnosis-core: --scenario {other_path}: its request is not the one run "
                   "'run-payment-001' was recorded with (give the scenario that recorded it)\n")
    assert "journal=" not in err and "invalid journal" not in err
    assert main(["run", "--store", url, str(other_path)]) == 2
    err = capsys.readouterr().err
    assert "the store holds it with another request" in err and "journal=" not in err


def test_an_encrypted_store_is_listed_and_reported_with_payload_key_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _codec()
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    key_file = tmp_path / "payload.key"
    key_file.write_bytes(CODEC_KEY)
    path = str(EXAMPLES_DIR / "payment_timeout.json")
    sealed = ["--payload-key-file", str(key_file)]
    expected = _out(capsys, ["run", "--json", path])
    assert _out(capsys, ["run", "--json", "--store", url, *sealed, path]) == expected
    assert _out(capsys, ["runs", "resume", "run-payment-001", "--store", url, "--json",
                         *sealed]) == expected
    seen = _all_listings(capsys, url, "chat-42", sealed)
    assert [r["status"] for r in seen["ls"]["runs"]] == ["complete"]
    assert [r["status"] for r in seen["show"]["runs"]] == ["complete"]
    assert seen["report"]["runs"]["complete"] == 1
    # without the key the run is there but unreadable, and said so
    listed = json.loads(_out(capsys, ["runs", "ls", "--store", url, "--json"]))
    assert listed["runs"][0]["status"] == "invalid"
    assert "the payload is encrypted; open the store with its codec" in (
        listed["runs"][0]["problem"])
    (tmp_path / "short.key").write_bytes(b"short")
    assert main(["runs", "ls", "--store", url, "--payload-key-file",
                 str(tmp_path / "short.key")]) == 2
    assert "--payload-key-file" in capsys.readouterr().err
    assert main(["run", "--payload-key-file", str(key_file), path]) == 2
    assert "--payload-key-file: only with --store" in capsys.readouterr().err


# --- a keyless resume of a signed run ---------------------------------------------------------


def _interrupted_signed_run(store: StoreBase, run_id: str, session: str, cut: int) -> Any:
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                            session_id=session))
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(request, effects, sink=sink, key=KEY)
    journal = sink.journal(request)
    with store.claim(run_id) as claim:
        store.begin(claim, dcj.Journal(request))
        for entry in journal.entries[:cut]:
            assert entry.mac is not None
            store.append(claim, entry)
    return request


def test_a_keyless_resume_of_a_signed_run_is_refused_before_any_effect(
    store: StoreBase,
) -> None:
    run_id, session = _fresh("signed")
    request = _interrupted_signed_run(store, run_id, session, 2)
    before = store.load(run_id)
    with pytest.raises(MissingKeyError, match=f"run '{run_id}': the stored journal is signed"):
        dc.run_diagnosis(request, failing_effects(), store=store)
    after = store.load(run_id)
    assert after == before  # nothing appended, not even a started entry
    import pickle

    error = pickle.loads(pickle.dumps(MissingKeyError(run_id)))
    assert error.run_id == run_id and isinstance(error, StoreError)
    # the claim was released and the run resumes under its key, verified to the end
    _, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                      session_id=session))
    dc.run_diagnosis(request, effects, store=store, key=KEY)
    (story,) = _story(store, session, KEY)
    assert story["status"] == "complete"


def test_a_keyless_resume_of_a_signed_run_from_the_cli_asks_for_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.jsonl")
    store = open_store(url)
    _interrupted_signed_run(store, "run-payment-001", "chat-42", 2)
    before = store.load("run-payment-001")
    store.close()
    path = str(EXAMPLES_DIR / "payment_timeout.json")
    for argv in (["run", "--store", url, path],
                 ["runs", "resume", "run-payment-001", "--store", url, "--scenario", path]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            "diagnosis-core: store: run 'run-payment-001': the stored journal is signed "
            "(its entries carry MACs); give its key with --journal-key-file FILE to resume it\n")
    reopened = open_store(url)
    assert reopened.load("run-payment-001") == before
    reopened.close()


def test_run_with_a_store_sealed_under_a_key_not_given_is_refused_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = open_store(url, codec=_codec())
    _record(store, "run-payment-001", "chat-42")
    store.close()
    for argv in (["run", "--store", url, str(EXAMPLES_DIR / "payment_timeout.json")],
                 ["run", "--json", "--store", url, str(EXAMPLES_DIR / "payment_timeout.json")],
                 ["runs", "resume", "run-payment-001", "--store", url]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("diagnosis-core: store: run '") and "Traceback" not in err


def test_keyless_feedback_on_a_signed_run_is_refused_and_the_run_stays_valid(
    store: StoreBase,
) -> None:
    run_id, session = _fresh("signed")
    _record(store, run_id, session, key=KEY)
    with pytest.raises(MissingKeyError, match=f"run '{run_id}': the stored journal is signed"):
        record_feedback(store, run_id, 1, "unsigned")
    stored = store.load(run_id)
    assert stored is not None and stored.feedback == ()
    record_feedback(store, run_id, 5, "signed", key=KEY)
    (story,) = _story(store, session, KEY)
    assert story["status"] == "complete" and len(story["feedback"]) == 1
