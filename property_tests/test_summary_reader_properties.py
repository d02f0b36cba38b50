"""Properties of reading a stored summary (spec §16.1): the positional form changes nothing.

The oracle is the value written: any digest, written as the store writes it,
reads back equal to itself, and equal to what the converter gives for the
converter's own keyed form of it. The JSON values a run holds (a tool's
input and output, the gatekeeper's raw result) are drawn with the keys of
the report's own classes and as arrays, so that some of them are shaped
exactly like those values, keyed or positional, and must stay JSON.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis_core._chat.enums import GatekeeperStatus, ReasonCode
from diagnosis_core._chat.trace import GatekeeperAudit, RawResult
from diagnosis_core._kernel.errors import PayloadError
from diagnosis_core._kernel.wire.converter import from_json, to_json
from diagnosis_core._kernel.wire.json import canonical_json
from diagnosis_core.stores import RunStory
from diagnosis_core.stores._reports import (
    AgentStep,
    EffectTiming,
    StoryToolCall,
    StoryToolError,
    VerifierRow,
)
from diagnosis_core.stores._summary import (
    RunDigest,
    digest_from_json,
    digest_to_json,
)

# Any code point, lone surrogates included (a tool's output may hold one).
texts = st.text(max_size=12) | st.text(st.characters(exclude_categories=()), max_size=6)
numbers = st.integers(-(10**20), 10**20)
finite = st.floats(allow_nan=False, allow_infinity=False)
# The keys of the report's classes: some drawn objects are shaped like them.
KEYS = ["message", "type", "attempt", "call", "duration_ms", "round", "seq", "state",
        "after_seq", "comment", "rating", "recorded_at", "last_mac", "story"]
SHAPES: list[st.SearchStrategy[Any]] = [
    st.fixed_dictionaries({"message": texts, "type": texts}),
    st.fixed_dictionaries({"attempt": numbers, "call": texts, "duration_ms": finite | st.none(),
                           "round": numbers, "seq": numbers, "state": texts}),
    st.fixed_dictionaries({"after_seq": numbers, "comment": texts | st.none(),
                           "rating": numbers, "recorded_at": finite | st.none()}),
    # The same records in the positional form a digest is stored in.
    st.lists(texts, min_size=2, max_size=2),
    st.tuples(numbers, texts, numbers, numbers, texts, finite | st.none()).map(list),
]
scalars = st.none() | st.booleans() | numbers | finite | texts
json_values = st.recursive(
    scalars | st.one_of(SHAPES),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(KEYS) | texts, inner, max_size=4)
    | st.fixed_dictionaries({"last_mac": st.none() | texts, "story": inner}),
    max_leaves=12,
)
optional_texts = st.none() | texts

effects = st.builds(EffectTiming, numbers, texts, numbers, numbers, texts, st.none() | finite)
tool_calls = st.builds(
    StoryToolCall, texts, texts, st.booleans(), json_values, json_values,
    st.none() | st.builds(StoryToolError, texts, texts), st.none() | finite,
)
steps = st.builds(AgentStep, numbers, texts, numbers, numbers, texts, optional_texts,
                  optional_texts)


@st.composite
def audits(draw: st.DrawFn) -> GatekeeperAudit:
    error = draw(optional_texts)
    raw = None if error is not None else RawResult(canonical_json(draw(json_values)))
    return GatekeeperAudit(
        draw(numbers), raw, error, draw(st.sampled_from(GatekeeperStatus)),
        draw(st.none() | st.sampled_from(ReasonCode)), draw(optional_texts),
        draw(numbers), draw(numbers), draw(numbers), draw(numbers),
    )


verifier_rows = st.builds(
    VerifierRow, numbers, numbers, texts, optional_texts, optional_texts, optional_texts,
    optional_texts, st.none() | finite, st.lists(texts, max_size=3).map(tuple),
)


def _tuples(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(strategy, max_size=3).map(tuple)


digests = st.builds(
    RunDigest,
    st.builds(
        RunStory,
        run_id=texts, session_id=texts, workflow=st.sampled_from(["chat", "aiops"]),
        created_at=finite, status=st.just("complete"), problem=optional_texts,
        next_call=optional_texts, effects=_tuples(effects), tool_invocations=_tuples(tool_calls),
        question=optional_texts, agent_steps=_tuples(steps),
        gatekeeper_audits=_tuples(audits()), verifier_evaluations=_tuples(verifier_rows),
        outcome=optional_texts, reason_code=optional_texts, answer=optional_texts,
    ),
    optional_texts,
)


_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _holds_surrogate_pair(value: object) -> bool:
    """Whether any string of ``value`` (keys included) has a high surrogate before a low one."""
    if isinstance(value, str):
        return _PAIR.search(value) is not None
    if isinstance(value, enum.Enum):
        return _holds_surrogate_pair(value.value)
    if isinstance(value, dict):
        return any(_holds_surrogate_pair(k) or _holds_surrogate_pair(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_surrogate_pair(item) for item in value)
    if attrs.has(type(value)):
        return any(_holds_surrogate_pair(getattr(value, field.name))
                   for field in attrs.fields(type(value)))
    return False


@settings(max_examples=300, deadline=None)
@given(digests)
def test_a_stored_digest_reads_back_as_itself(digest: RunDigest) -> None:
    if _holds_surrogate_pair(digest):  # JSON would read it back as another text: refused
        with pytest.raises(PayloadError, match="surrogate pair"):
            digest_to_json(digest)
        return
    text = digest_to_json(digest)
    assert digest_from_json(text) == digest
    assert digest_to_json(digest_from_json(text)) == text
    keyed = to_json(digest)  # the converter's form, which the stores wrote before
    assert from_json(RunDigest, keyed) == digest_from_json(keyed) == digest
