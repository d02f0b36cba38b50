"""Properties of the agent inputs' window over the chat history (spec §6.6).

The planner sees the last ``history_limit`` history messages, each reduced to
``{role, content}``. The expected window is built here by walking indices
back from the end, independently of the package's slicing.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from diagnosis_core import DiagnosisConfig, DiagnosisRequest, HistoryMessage, RunConfig
from diagnosis_core._chat.inputs import last_items
from diagnosis_core.machine import InvokeAgent, next_action, start_diagnosis


@st.composite
def limits_and_histories(draw: st.DrawFn) -> tuple[int, list[HistoryMessage]]:
    limit = draw(st.integers(0, 100))
    length = draw(st.integers(0, 3 * limit) | st.sampled_from([0, limit, max(limit - 1, 0)]))
    roles = st.sampled_from(["user", "assistant", "system"])
    # Index-labelled contents make every message distinct, so order and count show.
    history = [HistoryMessage(draw(roles), f"message {index}") for index in range(length)]
    return limit, history


def _expected_window(history: list[HistoryMessage], limit: int) -> list[dict[str, str]]:
    window: list[dict[str, str]] = []
    index = len(history) - 1
    while index >= 0 and len(window) < limit:
        window.insert(0, {"role": history[index].role, "content": history[index].content})
        index -= 1
    return window


@given(limits_and_histories())
def test_the_planner_sees_exactly_the_last_min_n_limit_messages_in_order(
    case: tuple[int, list[HistoryMessage]],
) -> None:
    limit, history = case
    request = DiagnosisRequest(
        "why?", RunConfig("r", "s"), history=history, config=DiagnosisConfig(history_limit=limit)
    )
    action = next_action(start_diagnosis(request))
    assert isinstance(action, InvokeAgent)
    sent = json.loads(action.input)["history"]
    assert sent == _expected_window(history, limit)
    assert len(sent) == min(len(history), limit)


@given(st.lists(st.integers(), max_size=40), st.integers(-5, 60))
def test_last_items_is_the_index_walk(items: list[int], count: int) -> None:
    expected: list[int] = []
    index = len(items) - 1
    while index >= 0 and len(expected) < count:
        expected.insert(0, items[index])
        index -= 1
    assert last_items(items, count) == tuple(expected)
