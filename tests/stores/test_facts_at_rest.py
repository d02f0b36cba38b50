"""Facts at rest (spec §16): with a payload codec no stored byte reveals a fact.

Canaries are planted in an agent reply, a tool output, the question and a
feedback comment; the raw JSON Lines file, the SQLite files (database and
WAL) and the PostgreSQL rows are searched for them. The same run without a
codec shows every canary, so the search can fail.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from store_support import load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
import diagnosis_core.journal as dcj
from diagnosis_core.journal import StoreError
from diagnosis_core.stores import AesGcmCodec, open_store, record_feedback, session_report
from diagnosis_core.tools import ToolRecorder

pytest.importorskip("cryptography")

KEY = b"chain key"
CODEC_KEY = bytes(range(32))


def _planted(run_id: str, session: str) -> tuple[dict[str, Any], dict[str, str]]:
    canaries = {name: f"CANARY{name.upper()}{uuid.uuid4().hex}"
                for name in ("reply", "tool", "feedback", "question")}
    doc = with_ids(load_example("payment_timeout"), run_id=run_id, session_id=session)
    composer = json.loads(doc["responses"]["composer"][0]["text"])
    composer["answer"] += " " + canaries["reply"]
    doc["responses"]["composer"][0]["text"] = json.dumps(composer)
    doc["question"] += " " + canaries["question"]
    return doc, canaries


def _raw_bytes(url: str, tmp_path: Path, run_id: str) -> bytes:
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as db:
            rows = []
            for table in ("diagnosis_runs", "diagnosis_entries", "diagnosis_feedback"):
                rows += db.execute(f"SELECT t::text FROM {table} t WHERE run_id = %s",
                                   (run_id,)).fetchall()
        assert rows
        return "\n".join(row[0] for row in rows).encode("utf-8")
    return b"".join(path.read_bytes() for path in sorted(tmp_path.iterdir()) if path.is_file())


@pytest.mark.parametrize("sealed", [True, False], ids=["codec", "plain"])
def test_no_canary_reaches_the_medium_with_a_codec(
    url: str, tmp_path: Path, sealed: bool
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    doc, canaries = _planted(run_id, f"s-{run_id}")
    store = open_store(url, codec=AesGcmCodec(CODEC_KEY) if sealed else None)
    request, effects = scenario_of(doc)
    recorder = ToolRecorder()
    state = dc.run_diagnosis(
        request, with_tools(effects, recorder, log_output={"line": canaries["tool"]}),
        store=store, tools=recorder, key=KEY,
    )
    assert canaries["reply"] in state.result.answer
    record_feedback(store, run_id, 3, canaries["feedback"], key=KEY)
    story = session_report(store, f"s-{run_id}", key=KEY).runs[0]
    told = json.dumps(dc.to_wire(story))
    assert story.status == "complete"
    assert all(canary in told for canary in canaries.values())
    stored = store.load(run_id)
    assert stored is not None and dcj.fold_journal(stored.journal, key=KEY) == state
    store.close()
    raw = _raw_bytes(url, tmp_path, run_id)
    found = {name for name, canary in canaries.items() if canary.encode() in raw}
    assert found == (set() if sealed else set(canaries))


def test_a_sealed_store_refuses_the_wrong_key_plaintext_and_moved_payloads(
    tmp_path: Path,
) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = open_store(url, codec=AesGcmCodec(CODEC_KEY))
    for run_id in ("a", "b"):
        request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id))
        dc.run_diagnosis(request, effects, store=store)
    store.close()
    with pytest.raises(StoreError, match="run 'a': the payload does not decode"):
        open_store(url, codec=AesGcmCodec(bytes(32))).load("a")
    with pytest.raises(StoreError, match="the payload is encrypted; open the store with its"):
        open_store(url).load("a")
    with sqlite3.connect(tmp_path / "runs.db") as db:
        (moved,) = db.execute(
            "SELECT payload FROM diagnosis_entries WHERE run_id='b' AND seq=1").fetchone()
        db.execute("UPDATE diagnosis_entries SET payload=? WHERE run_id='a' AND seq=1", (moved,))
        db.execute("UPDATE diagnosis_entries SET payload='{}' WHERE run_id='b' AND seq=2")
    sealed = open_store(url, codec=AesGcmCodec(CODEC_KEY))
    with pytest.raises(StoreError, match="run 'a' entry 1: the payload does not decode"):
        sealed.load("a")
    with pytest.raises(StoreError, match="run 'b' entry 2: the payload is not encrypted"):
        sealed.load("b")
    with pytest.raises(StoreError, match="key: expected 16, 24 or 32 bytes"):
        AesGcmCodec(b"short")


class _Recording:
    """A codec that seals nothing and records every context it is given (an oracle by hand)."""

    name = "recording"

    def __init__(self) -> None:
        self.contexts: list[Any] = []

    def encode(self, data: bytes, context: bytes, /) -> bytes:
        self.contexts.append(json.loads(context))
        return context + b"\x00" + data

    def decode(self, data: bytes, context: bytes, /) -> bytes:
        bound, _, plain = data.partition(b"\x00")
        if bound != context:
            raise ValueError("another context")
        return plain


def test_every_clear_column_a_report_reads_is_in_the_associated_data(url: str) -> None:
    codec = _Recording()
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    store = open_store(url, codec=codec)
    request, effects = scenario_of(with_ids(load_example("payment_timeout"), run_id=run_id,
                                            session_id=f"s-{run_id}"))
    dc.run_diagnosis(request, effects, store=store)
    record_feedback(store, run_id, 2, "one")
    record_feedback(store, run_id, 3, "two")
    stored = store.load(run_id)
    raw = store._get_run(run_id)
    store.close()
    assert stored is not None and raw is not None
    run, *entries, end, summary, first, second = codec.contexts
    assert run == ["run", run_id, f"s-{run_id}", "diagnosis_journal_v2", raw.created_at]
    written = [c for c in entries if c[0] == "entry"]
    assert written[-1][:4] == ["entry", run_id, len(stored.journal.entries), "finished"]
    finals = {c[2]: c for c in written}  # the last write of each seq is the stored one
    assert [finals[r.seq] for r in raw.entries[:-1]] == [
        ["entry", run_id, r.seq, r.state, r.duration_ms, r.written_at] for r in raw.entries[:-1]]
    assert end == ["end", run_id, raw.entries[-1].seq, raw.entries[-1].written_at]
    # the derived summary written at the end is bound to the run's clear columns too
    assert summary[:5] == ["summary", run_id, f"s-{run_id}", "diagnosis_journal_v2",
                           raw.created_at]
    assert [first, second] == [["feedback", run_id, 1, raw.feedback[0][1]],
                               ["feedback", run_id, 2, raw.feedback[1][1]]]
