"""LangGraph checkpoint bytes grow with the journal, not with its square (docs/langgraph.md).

An entry text of at least ``BLOB_MIN_CHARS`` characters is written once, in
the step that produced it, and named by its SHA-256 everywhere else. The
contract measured here, in the saver's own tables: a run whose executor
output is 1 MB writes at most 3x the journal's canonical JSON size, on the
SQLite and the PostgreSQL savers. Before, every checkpoint held every entry
(about 8x for this run). A resumed process reads the entry back from the
thread's history and checks its hash; a reference to content nowhere in the
history is a JournalError.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from adapter_support import EXAMPLES_DIR, load_doc, reference_state, scenario_of
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_support import (
    doc_with_executor_output,
    forge_checkpoint,
    postgres_saver_bytes,
    sqlite_saver_bytes,
)

import diagnosis_core as dc
import diagnosis_core.adapters._langgraph_core as core
import diagnosis_core.journal as dcj
from diagnosis_core.adapters.langgraph import (
    BLOB_MIN_CHARS,
    EXECUTOR_NODE,
    build_diagnosis_graph,
    diagnosis_graph_values,
    diagnosis_journal_of,
    diagnosis_state_of,
    resume_diagnosis_graph,
    run_diagnosis_graph,
)

DOC = load_doc(EXAMPLES_DIR / "payment_timeout.json")
MB = 1 << 20
KEY = b"host key of the size tests"


def _journal_bytes(graph: Any, thread_id: str) -> int:
    journal = diagnosis_journal_of(diagnosis_graph_values(graph, thread_id=thread_id))
    return len(dcj.journal_to_json(journal).encode("utf-8"))


@pytest.mark.parametrize("size", [1024, MB], ids=["1KB", "1MB"])
def test_sqlite_bytes_per_run_are_linear_in_the_journal(size: int, tmp_path: Path) -> None:
    doc = doc_with_executor_output(DOC, size)
    request, effects = scenario_of(doc)
    connection = sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False)
    graph = build_diagnosis_graph(effects, checkpointer=SqliteSaver(connection))
    state = run_diagnosis_graph(graph, request)
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    written = sqlite_saver_bytes(connection, request.run.run_id)
    journal = _journal_bytes(graph, request.run.run_id)
    connection.close()
    assert journal > size
    if size >= BLOB_MIN_CHARS:
        assert written <= 3 * journal, (written, journal)
    else:  # small entries stay inline: a bounded number of checkpoints of a small journal
        assert written <= 16 * journal, (written, journal)


def test_a_fresh_process_reads_the_large_entry_back_from_the_history(tmp_path: Path) -> None:
    doc = doc_with_executor_output(DOC, MB)
    request, effects = scenario_of(doc)
    database = tmp_path / "c.sqlite"
    with sqlite3.connect(database, check_same_thread=False) as connection:
        graph = build_diagnosis_graph(
            effects, checkpointer=SqliteSaver(connection), interrupt_after=[EXECUTOR_NODE]
        )
        assert not run_diagnosis_graph(graph, request).finished
        texts = graph.get_state({"configurable": {"thread_id": request.run.run_id}}).values[
            "journal"
        ]
    assert texts[1].startswith('{"seq":2,"sha256":"')  # the executor entry is a reference
    assert max(len(text) for text in texts) < BLOB_MIN_CHARS
    core._BLOBS.texts.clear()  # a new process: nothing in memory
    core._BLOBS.chars = 0
    with sqlite3.connect(database, check_same_thread=False) as connection:
        fresh = build_diagnosis_graph(effects, checkpointer=SqliteSaver(connection))
        state = resume_diagnosis_graph(fresh, thread_id=request.run.run_id)
        values = diagnosis_graph_values(fresh, thread_id=request.run.run_id)
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    assert dc.to_json(diagnosis_state_of(values)) == dc.to_json(state)


def test_a_reference_to_content_the_history_does_not_hold_is_refused(tmp_path: Path) -> None:
    doc = doc_with_executor_output(DOC, MB)
    request, effects = scenario_of(doc)
    database = tmp_path / "c.sqlite"
    with sqlite3.connect(database, check_same_thread=False) as connection:
        saver = SqliteSaver(connection)
        graph = build_diagnosis_graph(
            effects, checkpointer=saver, interrupt_after=[EXECUTOR_NODE], key=KEY
        )
        run_diagnosis_graph(graph, request)

        def elsewhere(texts: list[str]) -> list[str]:
            forged = re.sub(r"[0-9a-f]{64}", "0" * 64, texts[-1])
            assert forged != texts[-1]
            return [*texts[:-1], forged]

        forge_checkpoint(saver, request.run.run_id, elsewhere)
        core._BLOBS.texts.clear()
        core._BLOBS.chars = 0
        fresh = build_diagnosis_graph(effects, checkpointer=saver, key=KEY)
        with pytest.raises(dc.JournalError, match=r"entries\[1\]: stored by content hash"):
            resume_diagnosis_graph(fresh, thread_id=request.run.run_id)


def test_a_blob_whose_text_does_not_match_its_hash_is_never_used() -> None:
    text = '{"seq":2,"call":"executor"}'
    reference, digest = core._reference(text)
    core._BLOBS.texts.clear()
    core._BLOBS.chars = 0
    core._learn({digest: text.replace("executor", "planner")})
    with pytest.raises(dc.JournalError, match="stored by content hash"):
        core._resolved([reference])
    core._learn({digest: text})
    assert core._resolved([reference]) == [text]


@pytest.fixture(scope="module")
def conninfo() -> Iterator[str]:
    pytest.importorskip("langgraph.checkpoint.postgres")
    pytest.importorskip("psycopg")
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph_support import postgres_server

    try:
        with postgres_server() as info:
            with PostgresSaver.from_conn_string(info) as saver:
                saver.setup()
            yield info
    except LookupError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("size", [1024, MB], ids=["1KB", "1MB"])
def test_postgres_bytes_per_run_are_linear_in_the_journal(size: int, conninfo: str) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    doc = doc_with_executor_output(DOC, size)
    request, effects = scenario_of(doc)
    with PostgresSaver.from_conn_string(conninfo) as saver:
        graph = build_diagnosis_graph(effects, checkpointer=saver)
        state = run_diagnosis_graph(graph, request, thread_id=f"size-{size}")
        journal = _journal_bytes(graph, f"size-{size}")
    assert dc.to_json(state) == dc.to_json(reference_state(doc))
    written = postgres_saver_bytes(conninfo, f"size-{size}")
    assert journal > size
    if size >= BLOB_MIN_CHARS:
        assert written <= 3 * journal, (written, journal)
    else:
        assert written <= 16 * journal, (written, journal)
