"""Derived summaries (spec §16.1): what an ended run's store row says is what its journal folds to.

The oracle is the fold: a wrapper store that is not one of the package's
(so every report folds every journal, as before summaries) gives the
expected session and fleet reports; the summaries' reports must equal them.
``verify_summaries`` (``--verify``) must list every summary that was changed,
copied or relabelled, and only those.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
from diagnosis_core._kernel.journal.store import StoredRun
from diagnosis_core.cli import main
from diagnosis_core.conformance._corpus import load_corpus
from diagnosis_core.stores import (
    RunStory,
    fleet_report,
    open_store,
    record_feedback,
    session_report,
    verify_summaries,
)
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._story import run_digest
from diagnosis_core.stores._summary import RunDigest
from diagnosis_core.tools import ToolRecorder

KEY = b"summary key"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class _Folding:
    """The store seen through a host's wrapper: no summaries, every journal folded."""

    def __init__(self, inner: StoreBase) -> None:
        self.inner = inner

    def runs(self, *, session_id: str | None = None, since: float | None = None) -> Any:
        return self.inner.runs(session_id=session_id, since=since)

    def load(self, run_id: str) -> StoredRun | None:
        return self.inner.load(run_id)


def _run_document(store: StoreBase, doc: dict[str, Any], run_id: str, session: str) -> bool:
    """Run a scenario document into ``store``; False when it is not a runnable scenario."""
    doc = json.loads(json.dumps(doc))
    doc["run"] = {**doc.get("run", {}), "run_id": run_id, "session_id": session}
    try:
        if doc.get("workflow") == "aiops":
            from diagnosis_core._aiops.replay import (
                aiops_scenario_effects,
                aiops_scenario_request,
            )
            from diagnosis_core.aiops import load_aiops_scenario, run_aiops

            scenario = load_aiops_scenario(doc)
            run_aiops(aiops_scenario_request(scenario), aiops_scenario_effects(scenario),
                      store=store)
        else:
            scenario = dc.load_scenario(doc)
            dc.run_diagnosis(dc.scenario_request(scenario), dc.scenario_effects(scenario),
                             store=store)
    except dc.DiagnosisError:
        return False
    return True


def _assert_summaries_are_the_fold(store: StoreBase, session: str, since: float) -> None:
    rows = store.summary_rows(session_id=session)
    for row in rows:
        stored = store.load(row.run_id)
        assert stored is not None
        expected = run_digest(stored)
        if expected is None:
            assert row.payload is None
            continue
        assert row.payload is not None, f"{row.run_id}: an ended run without its summary"
        stored_digest = store.decode_summary(row.run_id, row.session_id, row.format,
                                             row.created_at, row.payload, row.fingerprint)
        assert stored_digest == expected, row.run_id
    assert verify_summaries(store, session_id=session) == ()
    folded = session_report(_Folding(store), session)  # type: ignore[arg-type]
    assert session_report(store, session) == folded
    assert dc.to_json(session_report(store, session)) == dc.to_json(folded)
    assert fleet_report(store, since=since) == fleet_report(
        _Folding(store), since=since)  # type: ignore[arg-type]


def test_every_example_scenario_summary_is_its_refold(store: StoreBase) -> None:
    since = time.time() - 1
    session = f"examples-{uuid.uuid4().hex[:8]}"
    ran = 0
    for path in sorted(EXAMPLES.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        ran += _run_document(store, doc, f"{path.stem}-{uuid.uuid4().hex[:6]}", session)
    assert ran == len(list(EXAMPLES.glob("*.json")))
    recorder = ToolRecorder()
    request, effects = scenario_of(with_ids(load_example("payment_timeout"),
                                            session_id=session))
    dc.run_diagnosis(request, with_tools(effects, recorder), store=store, tools=recorder,
                     key=KEY)
    record_feedback(store, request.run.run_id, 4, "tools", key=KEY)
    _assert_summaries_are_the_fold(store, session, since)
    assert session_report(store, session, key=KEY).runs[-1].feedback[0].rating == 4


def test_every_conformance_corpus_scenario_summary_is_its_refold(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'corpus.db'}")
    ran = 0
    try:
        for index, case in enumerate(load_corpus()):
            document = getattr(case, "document", None)
            if isinstance(document, dict):
                ran += _run_document(store, document, f"case-{index}", "corpus")
        assert ran > 100
        _assert_summaries_are_the_fold(store, "corpus", 0.0)
    finally:
        store.close()


def _mixed_store(url: str, codec: Any = None) -> tuple[StoreBase, str, float]:
    """A session of ended runs (signed feedback, a failing tool) and an unfinished one."""
    store = open_store(url, codec=codec)
    since = time.time() - 1
    tag = uuid.uuid4().hex[:8]
    session = f"mixed-{tag}"
    for name in ("payment_timeout", "composer_fails_twice", "redis_latency_evidence_retry"):
        recorder = ToolRecorder()
        request, effects = scenario_of(with_ids(load_example(name), run_id=f"{name}-{tag}",
                                                session_id=session))
        dc.run_diagnosis(request, with_tools(effects, recorder), store=store, tools=recorder,
                         key=KEY)
        record_feedback(store, request.run.run_id, 3, name, key=KEY)
    waiting, _ = scenario_of(with_ids(load_example("payment_timeout"), run_id=f"waiting-{tag}",
                                      session_id=session))
    import diagnosis_core.journal as dcj

    with store.claim(waiting.run.run_id) as claim:
        store.begin(claim, dcj.Journal(waiting))
    return store, session, since


def test_the_reports_from_summaries_equal_the_folded_reports_with_a_key(url: str) -> None:
    store, session, since = _mixed_store(url)
    try:
        fast = session_report(store, session, key=KEY)
        assert [story.status for story in fast.runs] == [
            "complete", "complete", "complete", "incomplete"]
        assert fast == session_report(_Folding(store), session, key=KEY)  # type: ignore[arg-type]
        assert fleet_report(store, since=since, key=KEY) == fleet_report(
            _Folding(store), since=since, key=KEY)  # type: ignore[arg-type]
        assert verify_summaries(store, session_id=session, key=KEY) == ()
    finally:
        store.close()


def test_sealed_summaries_give_the_folded_reports_and_seal_what_the_journal_seals(
    url: str,
) -> None:
    pytest.importorskip("cryptography")
    from diagnosis_core.stores import AesGcmCodec

    store, session, since = _mixed_store(url, AesGcmCodec(bytes(range(32))))
    try:
        assert session_report(store, session) == session_report(
            _Folding(store), session)  # type: ignore[arg-type]
        assert fleet_report(store, since=since) == fleet_report(
            _Folding(store), since=since)  # type: ignore[arg-type]
        assert verify_summaries(store, session_id=session) == ()
        if not url.endswith(".jsonl"):
            rows = _select(url, "SELECT s.payload, workflow, outcome, reason_code, "
                           "evidence_retry, fallback, audits_pass, last_mac "
                           "FROM diagnosis_summaries s JOIN "
                           "diagnosis_runs r USING (run_id) WHERE r.session_id = ?", (session,))
            assert len(rows) == 3
            assert all(row[0].startswith("sealed:") and set(row[1:]) == {None} for row in rows)
            assert _select(url, "SELECT count(*) FROM diagnosis_summary_calls c JOIN "
                           "diagnosis_runs r USING (run_id) WHERE r.session_id = ?",
                           (session,)) == [(0,)]
        else:
            text = Path(url).read_text(encoding="utf-8")
            index = Path(f"{url}.summaries").read_text(encoding="utf-8")
            summaries = _jsonl_summaries(url)
            assert len(summaries) == 3 and '"kind":"summary"' not in text
            assert all(line["payload"].startswith("sealed:") for line in summaries)
            assert all("ANSWERED" not in part and "query_logs" not in part
                       for part in (text, index))
            assert Path(f"{url}.summaries").stat().st_mode & 0o777 == 0o600
    finally:
        store.close()


# --- tampering -----------------------------------------------------------------------


def _sql(url: str, *statements: str, parameters: tuple[object, ...] = ()) -> None:
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url[len("sqlite:///"):])) as db:
            for statement in statements:
                db.execute(statement, parameters)
            db.commit()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        for statement in statements:
            db.execute(statement.replace("?", "%s"), parameters)


def _select(url: str, statement: str, parameters: tuple[object, ...] = ()) -> list[Any]:
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url[len("sqlite:///"):])) as db:
            return db.execute(statement, parameters).fetchall()
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        return [tuple(row) for row in db.execute(statement.replace("?", "%s"), parameters)]


def _jsonl_summaries(url: str) -> list[dict[str, Any]]:
    """The summary index of a JSON Lines store (its own file beside the store's)."""
    return [json.loads(line) for line in Path(f"{url}.summaries").read_text("utf-8").splitlines()]


def _append_line(url: str, record: dict[str, Any]) -> None:
    with open(url, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, separators=(",", ":")) + "\n")


def test_a_tampered_summary_is_found_by_verify(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store, session, since = _mixed_store(url)
    victim = store.summary_rows(session_id=session)[1]  # composer_fails_twice: a fallback
    assert victim.payload is not None and '"outcome":"ANSWERED"' not in victim.payload
    assert victim.run_id.startswith("composer_fails_twice")
    store.close()
    document = json.loads(victim.payload)  # positional: [story, last_mac], fields in order
    story = document[[field.name for field in attrs.fields(RunDigest)].index("story")]
    story[[field.name for field in attrs.fields(RunStory)].index("outcome")] = "ANSWERED"
    forged = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    if url.endswith(".jsonl"):
        _append_line(f"{url}.summaries", {"kind": "summary", "run_id": victim.run_id,
                                          "fingerprint": victim.fingerprint,
                                          "payload": forged})
    else:
        _sql(url, "UPDATE diagnosis_summaries SET payload = ? WHERE run_id = ?",
             parameters=(forged, victim.run_id))
    store = open_store(url)
    try:
        (mismatch,) = verify_summaries(store, session_id=session)
        assert mismatch.run_id == victim.run_id
        assert "story.outcome is not what the journal gives" in mismatch.problem
    finally:
        store.close()
    assert main(["sessions", "show", session, "--store", url, "--verify"]) == 1
    captured = capsys.readouterr()
    assert f"summary disagrees: run '{victim.run_id}' summary: story.outcome" in captured.err
    assert main(["report", "--store", url, "--since", str(since), "--verify", "--json"]) == 1
    assert victim.run_id in capsys.readouterr().err
    assert main(["sessions", "show", session, "--store", url]) == 0  # without --verify


@pytest.mark.parametrize("column, value", [("outcome", "FORGED"), ("audits_reject", 7)])
def test_a_tampered_summary_column_is_found_by_verify(
    tmp_path: Path, column: str, value: object, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store, session, _ = _mixed_store(url)
    victim = store.summary_rows(session_id=session)[0].run_id
    store.close()
    _sql(url, f"UPDATE diagnosis_summaries SET {column} = ? WHERE run_id = ?",
         parameters=(value, victim))
    store = open_store(url)
    try:
        (mismatch,) = verify_summaries(store)
        assert mismatch.run_id == victim and "its columns" in mismatch.problem
    finally:
        store.close()
    assert main(["report", "--store", url, "--verify"]) == 1
    assert victim in capsys.readouterr().err
    _sql(url, "DELETE FROM diagnosis_summary_calls")
    store = open_store(url)
    try:
        assert len(verify_summaries(store)) == 3  # every summary lost its latencies
    finally:
        store.close()


def test_a_journal_changed_under_its_summary_is_folded_not_summarized(url: str) -> None:
    """Any write to a summarized run's rows drops the summary (SQL triggers, file fingerprint)."""
    store, session, _ = _mixed_store(url)
    victim = store.summary_rows(session_id=session)[0].run_id
    store.close()
    if url.endswith(".jsonl"):
        lines = Path(url).read_text("utf-8").splitlines()
        for index, line in enumerate(lines):
            record = json.loads(line)
            if record["kind"] == "entry" and record["run_id"] == victim and record["seq"] == 1:
                record["duration_ms"] = 99999.0
                lines[index] = json.dumps(record, separators=(",", ":"))
        Path(url).write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        _sql(url, "UPDATE diagnosis_entries SET duration_ms = 99999 WHERE run_id = ? AND seq = 1",
             parameters=(victim,))
    store = open_store(url)
    try:
        (story,) = [s for s in session_report(store, session).runs if s.run_id == victim]
        assert story.effects[0].duration_ms == 99999.0  # told from the journal as it is now
    finally:
        store.close()


def test_sealed_summary_rows_copied_or_relabelled_do_not_decode(url: str) -> None:
    pytest.importorskip("cryptography")
    from diagnosis_core.stores import AesGcmCodec

    codec = AesGcmCodec(bytes(range(32)))
    store, session, _ = _mixed_store(url, codec)
    first, second = store.summary_rows(session_id=session)[:2]
    assert first.payload is not None and second.payload is not None
    own = session_report(store, session).runs[1]
    store.close()
    # copied: the first run's sealed summary put in place of the second's
    if url.endswith(".jsonl"):
        _append_line(f"{url}.summaries", {"kind": "summary", "run_id": second.run_id,
                                          "fingerprint": second.fingerprint,
                                          "payload": first.payload})
    else:
        _sql(url, "UPDATE diagnosis_summaries SET payload = ? WHERE run_id = ?",
             parameters=(first.payload, second.run_id))
    store = open_store(url, codec=codec)
    try:
        (mismatch,) = verify_summaries(store, session_id=session)
        assert mismatch.run_id == second.run_id and "does not decode" in mismatch.problem
        assert session_report(store, session).runs[1] == own  # told from its own journal
    finally:
        store.close()


def test_a_relabelled_run_under_a_sealed_summary_does_not_decode(tmp_path: Path) -> None:
    """Even with the trigger gone, the summary is bound to the run's clear columns."""
    pytest.importorskip("cryptography")
    from diagnosis_core.stores import AesGcmCodec

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    codec = AesGcmCodec(bytes(range(32)))
    store, session, _ = _mixed_store(url, codec)
    victim = store.summary_rows(session_id=session)[0].run_id
    answer = session_report(store, session).runs[0].answer
    store.close()
    _sql(url, "DROP TRIGGER diagnosis_runs_changed")
    _sql(url, "UPDATE diagnosis_runs SET session_id = 'attacker' WHERE run_id = ?",
         parameters=(victim,))
    assert _select(url, "SELECT count(*) FROM diagnosis_summaries WHERE run_id = ?",
                   (victim,)) == [(1,)]
    store = open_store(url, codec=codec)
    try:
        with pytest.raises(Exception, match="does not decode"):
            row = store.summary_rows(session_id="attacker")[0]
            assert row.payload is not None
            store.decode_summary(row.run_id, row.session_id, row.format, row.created_at,
                                 row.payload)
        (story,) = session_report(store, "attacker").runs
        assert story.status == "invalid" and answer is not None
        assert answer not in dc.to_json(story)
        assert [m.run_id for m in verify_summaries(store, session_id="attacker")] == [victim]
    finally:
        store.close()


# --- stores older than summaries -----------------------------------------------------------


def test_summaries_are_computed_on_the_first_report_of_an_older_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store, session, since = _mixed_store(url)
    expected = session_report(store, session, key=KEY)
    fleet = fleet_report(store, since=since, key=KEY)
    store.close()
    _sql(url, "DELETE FROM diagnosis_summaries")  # as a store written before summaries
    assert _select(url, "SELECT count(*) FROM diagnosis_summary_calls") == [(0,)]
    read_only = open_store(f"{url}?mode=ro")
    try:
        assert session_report(read_only, session, key=KEY) == expected  # folded, nothing written
    finally:
        read_only.close()
    assert _select(url, "SELECT count(*) FROM diagnosis_summaries") == [(0,)]
    store = open_store(url)
    try:
        assert fleet_report(store, since=since, key=KEY) == fleet
        assert _select(url, "SELECT count(*) FROM diagnosis_summaries") == [(3,)]
        assert session_report(store, session, key=KEY) == expected
        assert verify_summaries(store, key=KEY) == ()
    finally:
        store.close()


def test_a_summary_is_a_value_of_the_converter(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    request, effects = scenario_of(with_ids(load_example("payment_timeout")))
    dc.run_diagnosis(request, effects, store=store)
    stored = store.load(request.run.run_id)
    store.close()
    assert stored is not None
    digest = run_digest(stored)
    assert digest is not None and isinstance(digest.story, RunStory)
    assert dc.from_json(type(digest), dc.to_json(digest)) == digest
    unfinished = attrs.evolve(stored, journal=type(stored.journal)(stored.journal.request),
                              durations=(), written_at=())
    assert run_digest(unfinished) is None  # a run that has not ended has no summary
