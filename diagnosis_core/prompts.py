"""Agent system prompts generated from the contract (spec §17): what a prompt author starts from.

For every agent of both workflows, in ``en`` and ``zh-CN``,
:func:`system_prompt` gives a :class:`Prompt` whose text states what the
agent receives (the exact input keys of spec §6.6, read from the input
classes), what it must return (the payload's JSON Schema and one valid
example) and every rule the parsers and the gatekeeper enforce
(:data:`PROMPT_RULES`, one sentence per rule and locale). The text is
versioned with the protocol (:attr:`Prompt.protocol_version`) and changes
only when the contract does. A host may use its own prompts; these are the
reference. ``diagnosis-core prompt AGENT [--workflow aiops] [--locale zh-CN]``
prints one.
"""

from __future__ import annotations

from ._prompts.agents import PROMPT_AGENTS
from ._prompts.render import Prompt, system_prompt
from ._prompts.rules import PROMPT_RULES, PromptRule

__all__ = [
    "PROMPT_AGENTS",
    "PROMPT_RULES",
    "Prompt",
    "PromptRule",
    "system_prompt",
]
