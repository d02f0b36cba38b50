"""Reading a stored summary fast, and trusting it no more than before (spec §16.1).

A report reads one digest per ended run; the digest reader builds its values
while the strict parser reads the text. The oracle is the converter's own
path (:func:`from_json`): whatever the reader gives is that value, a text it
does not take is left to the converter, and every text the strict parser
refuses (a duplicate key anywhere) is still refused. The collector's pause
around a report's build is restored on every way out.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
from diagnosis_core._kernel.errors import PayloadError
from diagnosis_core._kernel.wire.converter import from_json
from diagnosis_core.stores import open_store, session_report
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._summary import (
    RunDigest,
    _read_digest,
    digest_from_json,
    digest_to_json,
    paused_gc,
)
from diagnosis_core.tools import ToolRecorder

# Tool outputs shaped like the report's own values: they must stay JSON.
SHAPED_OUTPUTS: list[Any] = [
    {"message": "disk full", "type": "OSError"},  # a StoryToolError
    {"attempt": 1, "call": "planner", "duration_ms": 1.5, "round": 1, "seq": 1,
     "state": "finished"},  # an EffectTiming
    {"after_seq": 3, "comment": None, "rating": 5, "recorded_at": 1.0},  # a FeedbackItem
    [{"last_mac": None, "story": {"message": "m", "type": "t"}}],  # a RunDigest around one
]


def _recorded(store: StoreBase, name: str, run_id: str, session: str,
              log_output: object = None) -> None:
    recorder = ToolRecorder()
    request, effects = scenario_of(with_ids(load_example(name), run_id=run_id,
                                            session_id=session))
    dc.run_diagnosis(request, with_tools(effects, recorder, log_output=log_output),
                     store=store, tools=recorder)


def _texts(store: StoreBase, session: str) -> list[str]:
    texts = [row.payload for row in store.summary_rows(session_id=session)]
    assert texts and all(text is not None for text in texts)
    return [text for text in texts if text is not None]


def test_a_stored_digest_is_read_in_one_pass_as_the_converter_reads_it(
    tmp_path: Path,
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        for index, name in enumerate(("payment_timeout", "composer_fails_twice",
                                      "redis_latency_evidence_retry", "db_pool_forged_citations",
                                      "zh_cn_gatekeeper_unavailable")):
            _recorded(store, name, f"run-{index}", "s")
        for text in _texts(store, "s"):
            fast = _read_digest(text)
            assert fast is not None, "a digest as stored is read in one pass"
            assert fast == from_json(RunDigest, text) == digest_from_json(text)
            assert digest_to_json(fast) == text
    finally:
        store.close()


@pytest.mark.parametrize("output", SHAPED_OUTPUTS, ids=["error", "effect", "feedback", "digest"])
def test_a_tool_output_shaped_like_a_report_value_stays_json(
    tmp_path: Path, output: Any
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        _recorded(store, "payment_timeout", "shaped", "s", log_output=output)
        (text,) = _texts(store, "s")
        expected = from_json(RunDigest, text)
        assert expected.story.tool_invocations[0].output == output
        assert _read_digest(text) is None  # an instance was built inside a JSON value
        assert digest_from_json(text) == expected
        (story,) = session_report(store, "s").runs
        assert story.tool_invocations[0].output == output
        assert story == expected.story
    finally:
        store.close()


def _one_digest_text(tmp_path: Path) -> str:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        _recorded(store, "payment_timeout", "one", "s")
        (text,) = _texts(store, "s")
        return text
    finally:
        store.close()


def test_a_duplicate_key_in_a_stored_digest_is_refused_wherever_it_is(tmp_path: Path) -> None:
    text = _one_digest_text(tmp_path)
    assert '"outcome":"' in text and '"lines":[' in text
    duplicated = [
        text.replace('"outcome":"', '"outcome":"FORGED","outcome":"', 1),  # in the story
        text.replace('"lines":[', '"lines":1,"lines":[', 1),  # in a tool's output
        text.replace('"last_mac":null', '"last_mac":null,"last_mac":null', 1),  # at the root
    ]
    for changed in duplicated:
        with pytest.raises(PayloadError, match="duplicate"):
            _read_digest(changed)
        with pytest.raises(PayloadError, match="duplicate"):
            digest_from_json(changed)


def test_a_digest_written_otherwise_is_left_to_the_converter(tmp_path: Path) -> None:
    text = _one_digest_text(tmp_path)
    expected = from_json(RunDigest, text)
    head, _, rest = text.partition('"story":')
    reordered = '{"story":' + rest[:-1] + "," + head[1:-1] + "}"  # last_mac after story
    assert _read_digest(reordered) is None
    assert digest_from_json(reordered) == expected
    nulls = text.replace('"feedback":[]', '"feedback":null', 1)  # null for an empty list
    assert _read_digest(nulls) is None
    assert digest_from_json(nulls) == expected


def test_a_summary_that_tells_another_run_is_still_refused(tmp_path: Path) -> None:
    text = _one_digest_text(tmp_path)
    digest = digest_from_json(text)
    incomplete = digest_to_json(attrs.evolve(
        digest, story=attrs.evolve(digest.story, status="incomplete")))
    with pytest.raises(PayloadError, match="complete run"):
        digest_from_json(incomplete)


def test_a_digest_holding_a_surrogate_pair_is_refused_not_stored_changed(
    tmp_path: Path,
) -> None:
    # JSON reads a high surrogate followed by a low one back as one other character: such
    # a digest (built by hand; a journal never holds one) would come back as another value.
    digest = digest_from_json(_one_digest_text(tmp_path))
    assert digest.story.tool_invocations and digest.story.answer is not None
    paired = attrs.evolve(digest, story=attrs.evolve(
        digest.story, answer=digest.story.answer + "\ud800\udc00"))
    with pytest.raises(PayloadError, match=r"^summary: a string holding a surrogate pair"):
        digest_to_json(paired)
    call = digest.story.tool_invocations[0]
    in_output = attrs.evolve(digest, story=attrs.evolve(digest.story, tool_invocations=(
        attrs.evolve(call, output={"k\udbff\udfff": 1}),)))
    with pytest.raises(PayloadError, match="surrogate pair"):
        digest_to_json(in_output)
    lone = attrs.evolve(digest, story=attrs.evolve(
        digest.story, answer="\ud800 and \udc00"))  # lone ones are stored as they are
    assert digest_from_json(digest_to_json(lone)) == lone


# --- the collector's pause ---------------------------------------------------------------


def test_the_collector_is_enabled_again_after_a_report_even_when_it_fails() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("the build failed")
    assert gc.isenabled()


def test_a_collector_the_host_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_resumes_when_the_last_of_concurrent_reports_ends() -> None:
    inside, release = threading.Barrier(2, timeout=30), threading.Event()
    states: list[bool] = []

    def report() -> None:
        with paused_gc():
            inside.wait()
            release.wait(30)

    thread = threading.Thread(target=report)
    thread.start()
    try:
        with paused_gc():
            inside.wait()
        states.append(gc.isenabled())  # the other report still builds
    finally:
        release.set()
        thread.join(30)
    assert states == [False] and gc.isenabled()
