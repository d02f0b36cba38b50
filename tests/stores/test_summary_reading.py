"""Reading a stored summary fast, and trusting it no more than before (spec §16.1).

A report reads one digest per ended run. A digest is stored in a positional
form: every record an array of its fields in the order its class declares
them, the JSON values a story carries (tool input and output, the raw
gatekeeper result) as they are. The oracle here is independent of the
reader: :func:`_keyed` turns the positional form back into the converter's
keyed wire form by the classes' field names, and the converter
(:func:`from_wire`) structures it. Every rule of the strict parser still
holds (a duplicate key anywhere is refused), a field that is not what its
class declares is a :class:`PayloadError` naming it, and the keyed form the
stores wrote before is still read. The collector's pause around a report's
build is restored on every way out.
"""

from __future__ import annotations

import gc
import json
import threading
import typing
from pathlib import Path
from typing import Any

import attrs
import pytest
from store_support import load_example, scenario_of, with_ids, with_tools

import diagnosis_core as dc
from diagnosis_core._chat.trace import GatekeeperAudit
from diagnosis_core._kernel.errors import PayloadError
from diagnosis_core._kernel.wire.converter import from_wire, to_json
from diagnosis_core.stores import open_store, session_report
from diagnosis_core.stores._base import StoreBase
from diagnosis_core.stores._reports import (
    AgentStep,
    EffectTiming,
    FeedbackItem,
    RunStory,
    StoryToolCall,
    StoryToolError,
    VerifierRow,
)
from diagnosis_core.stores._summary import (
    RunDigest,
    digest_from_json,
    digest_to_json,
    paused_gc,
)
from diagnosis_core.tools import ToolRecorder

# Tool outputs shaped like the report's own values, in both forms: they must stay JSON.
SHAPED_OUTPUTS: list[Any] = [
    {"message": "disk full", "type": "OSError"},  # a StoryToolError, keyed
    ["OSError", "disk full"],  # a StoryToolError, positional
    [1, "planner", 1, 1, "finished", 1.5],  # an EffectTiming, positional
    {"after_seq": 3, "comment": None, "rating": 5, "recorded_at": 1.0},  # a FeedbackItem
    [{"last_mac": None, "story": {"message": "m", "type": "t"}}],  # a RunDigest around one
]

RECORDS = (RunDigest, RunStory, EffectTiming, StoryToolCall, StoryToolError, AgentStep,
           GatekeeperAudit, VerifierRow, FeedbackItem)


def _keyed(cl: type[Any], row: Any) -> dict[str, Any]:
    """The converter's keyed wire form of the positional ``row`` of ``cl`` (the oracle)."""
    assert type(row) is list and len(row) == len(attrs.fields(cl))
    hints = typing.get_type_hints(cl)
    keyed = {}
    for field, value in zip(attrs.fields(cl), row, strict=True):
        kinds = [arg for arg in (hints[field.name], *typing.get_args(hints[field.name]))
                 if arg in RECORDS]
        if value is None or not kinds:
            keyed[field.name] = value
        elif typing.get_origin(hints[field.name]) is tuple:
            keyed[field.name] = [_keyed(kinds[0], item) for item in value]
        else:
            keyed[field.name] = _keyed(kinds[0], value)
    return keyed


def _oracle(text: str) -> RunDigest:
    return from_wire(RunDigest, _keyed(RunDigest, json.loads(text)))


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


def test_a_stored_digest_reads_back_as_the_converter_structures_it(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        for index, name in enumerate(("payment_timeout", "composer_fails_twice",
                                      "redis_latency_evidence_retry", "db_pool_forged_citations",
                                      "zh_cn_gatekeeper_unavailable")):
            _recorded(store, name, f"run-{index}", "s")
        for text in _texts(store, "s"):
            assert text.startswith("[["), "a digest is stored in its positional form"
            digest = digest_from_json(text)
            assert digest == _oracle(text)
            assert digest_to_json(digest) == text
    finally:
        store.close()


def test_the_positional_form_of_a_digest_is_pinned() -> None:
    story = RunStory(
        run_id="r", session_id="s", workflow="chat", created_at=1.5, status="complete",
        effects=(EffectTiming(1, "planner", 1, 1, "finished", 2.0),),
        tool_invocations=(StoryToolCall("call-1", "logs", False, {"q": "x"}, None,
                                        StoryToolError("OSError", "disk"), None),),
        agent_steps=(AgentStep(1, "planner", 1, 1, "COMPLETED", None),),
        outcome="ANSWERED", answer="ok")
    text = digest_to_json(RunDigest(story, "mac"))
    assert text == (
        '[["r","s","chat",1.5,"complete",null,null,[[1,"planner",1,1,"finished",2.0]],'
        '[["call-1","logs",false,{"q":"x"},null,["OSError","disk"],null]],null,'
        '[[1,"planner",1,1,"COMPLETED",null,null]],[],[],"ANSWERED",null,"ok",[]],"mac"]')
    assert digest_from_json(text) == RunDigest(story, "mac")


@pytest.mark.parametrize("output", SHAPED_OUTPUTS,
                         ids=["error", "positional-error", "effect", "feedback", "digest"])
def test_a_tool_output_shaped_like_a_report_value_stays_json(
    tmp_path: Path, output: Any
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        _recorded(store, "payment_timeout", "shaped", "s", log_output=output)
        (text,) = _texts(store, "s")
        expected = _oracle(text)
        assert expected.story.tool_invocations[0].output == output
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
    keyed = to_json(digest_from_json(text))  # the keyed form the stores wrote before
    assert '"lines":[' in text and '"outcome":"' in keyed
    duplicated = [
        text.replace('"lines":[', '"lines":1,"lines":[', 1),  # in a tool's output
        keyed.replace('"outcome":"', '"outcome":"FORGED","outcome":"', 1),  # in a story
        keyed.replace('"last_mac":null', '"last_mac":null,"last_mac":null', 1),  # at a root
    ]
    for changed in duplicated:
        with pytest.raises(PayloadError, match="duplicate"):
            digest_from_json(changed)


def test_the_keyed_form_the_stores_wrote_before_is_still_read(tmp_path: Path) -> None:
    text = _one_digest_text(tmp_path)
    expected = digest_from_json(text)
    keyed = to_json(expected)
    assert digest_from_json(keyed) == expected
    head, _, rest = keyed.partition('"story":')
    reordered = '{"story":' + rest[:-1] + "," + head[1:-1] + "}"  # last_mac after story
    assert digest_from_json(reordered) == expected


def _story_index(name: str) -> int:
    return [field.name for field in attrs.fields(RunStory)].index(name)


def _changed(text: str, name: str, value: object) -> str:
    document = json.loads(text)
    document[0][_story_index(name)] = value
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(("name", "value", "where"), [
    ("created_at", "1.5", "RunStory.created_at"),
    ("created_at", True, "RunStory.created_at"),
    ("status", "done", "RunStory.status"),
    ("workflow", "batch", "RunStory.workflow"),
    ("question", 3, "RunStory.question"),
    ("effects", {"seq": 1}, "RunStory.effects"),
    ("effects", [[1, "planner", 1, 1, "finished"]], "EffectTiming"),
    ("effects", [[1, "planner", 1.0, 1, "finished", None]], "EffectTiming.round"),
    ("agent_steps", [[1, "planner", 1, 1, "COMPLETED", None, None, None]], "AgentStep"),
], ids=lambda value: repr(value)[:30])
def test_a_field_that_is_not_what_its_class_declares_is_refused_by_name(
    tmp_path: Path, name: str, value: object, where: str
) -> None:
    text = _changed(_one_digest_text(tmp_path), name, value)
    with pytest.raises(PayloadError, match=rf"^{where}\b"):
        digest_from_json(text)


def test_an_integer_where_a_float_is_declared_is_that_float(tmp_path: Path) -> None:
    text = _one_digest_text(tmp_path)
    digest = digest_from_json(_changed(text, "created_at", 1796000000))
    assert digest.story.created_at == 1796000000.0 and type(digest.story.created_at) is float


@pytest.mark.parametrize("text", ["", "null", '"digest"', "{}", "[]", "[[], null]", "NaN",
                                  '[["r","s","chat",1e400]]'])
def test_a_text_that_is_no_digest_is_a_payload_error(text: str) -> None:
    with pytest.raises(PayloadError):
        digest_from_json(text)


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
