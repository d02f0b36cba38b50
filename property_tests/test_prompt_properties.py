"""Properties of :func:`diagnosis_core.prompts.system_prompt` over arbitrary arguments.

Whatever a host passes — a typo, an empty string, a control character — the
answer is a prompt or a one-line :class:`ValueError` naming the choices,
never another exception; and a prompt's text holds no control character but
the line break (a terminal or a model's tokenizer sees what was written).
The oracle is the published lists of agents and locales, not the code that
builds the text.
"""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from tests._reach import prompts as dcpr

WORKFLOWS = tuple(dcpr.PROMPT_AGENTS)
AGENT_NAMES = sorted({agent for agents in dcpr.PROMPT_AGENTS.values() for agent in agents})


def _maybe_valid(values: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(values), st.text(max_size=12))


@given(
    agent=_maybe_valid(AGENT_NAMES),
    workflow=_maybe_valid(list(WORKFLOWS)),
    locale=_maybe_valid(list(dcpr.PROMPT_LOCALES)),
)
def test_a_prompt_or_a_one_line_value_error_listing_the_choices(
    agent: str, workflow: str, locale: str
) -> None:
    valid = (
        workflow in WORKFLOWS
        and agent in dcpr.PROMPT_AGENTS[workflow]
        and locale in dcpr.PROMPT_LOCALES
    )
    try:
        prompt = dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    except ValueError as error:
        assert not valid
        message = str(error)
        assert "\n" not in message
        assert message.startswith("unknown ")
        assert "expected one of" in message
        return
    assert valid
    assert (prompt.workflow, prompt.agent, prompt.locale) == (workflow, agent, locale)
    assert prompt is dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    controls = {
        char for char in prompt.text if unicodedata.category(char).startswith("C") and char != "\n"
    }
    assert controls == set()
