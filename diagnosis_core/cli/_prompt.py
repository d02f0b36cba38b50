"""``diagnosis-core prompt``: print an agent's system prompt (spec §17).

``prompt AGENT [--workflow aiops] [--locale zh-CN]`` prints the prompt of one
agent; ``prompt --all --out DIR`` writes every prompt of both workflows in
both locales as ``DIR/<workflow>/<agent>.<locale>.txt`` (how the golden files
``tests/fixtures/prompts`` are regenerated). An unknown workflow, agent or
locale is a usage error (exit 2) with one line listing the choices.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._commands import add_all_options, add_command
from ._io import EXIT_OK, EXIT_OUTPUT, usage_error, write

__all__ = ["add_prompt_parser", "write_all_prompts"]


def write_all_prompts(out: str) -> int:
    """Write every prompt under ``out``; exit 1 with one line when a file cannot be written."""
    from .._prompts.render import PROMPT_LOCALES
    from ..prompts import PROMPT_AGENTS, system_prompt

    try:
        for workflow, agents in PROMPT_AGENTS.items():
            folder = os.path.join(out, workflow)
            os.makedirs(folder, exist_ok=True)
            for agent in agents:
                for locale in PROMPT_LOCALES:
                    text = system_prompt(agent, workflow=workflow, locale=locale).text
                    path = os.path.join(folder, f"{agent}.{locale}.txt")
                    with open(path, "w", encoding="utf-8", newline="\n") as handle:
                        handle.write(text)
    except OSError as error:
        sys.stderr.write(f"diagnosis-core: cannot write {out} ({error.strerror or error})\n")
        return EXIT_OUTPUT
    return EXIT_OK


def _prompt(args: argparse.Namespace) -> int:
    from ..prompts import system_prompt

    if args.all:
        if args.out is None or args.agent is not None:
            return usage_error("prompt --all: give --out DIR and no agent")
        return write_all_prompts(args.out)
    if args.out is not None:
        return usage_error("prompt: --out goes with --all")
    if args.agent is None:
        return usage_error("prompt: give an agent (or --all --out DIR)")
    try:
        prompt = system_prompt(args.agent, workflow=args.workflow, locale=args.locale)
    except ValueError as error:
        return usage_error(f"prompt: {error}")
    write(prompt.text)
    return EXIT_OK


def add_prompt_parser(commands: Any) -> None:
    """Register ``prompt`` on the CLI's subcommands."""
    prompt = add_command(
        commands,
        "prompt",
        _prompt,
        help="print an agent's system prompt, generated from the contract",
        description="Print the system prompt of one agent (spec §17): its exact input, the "
        "schema and an example of its reply, and the rules the parsers and the gatekeeper "
        "enforce.",
    )
    prompt.add_argument(
        "agent",
        nargs="?",
        help="chat: planner, executor, verifier, composer; "
        "aiops: supervisor, planner, executor, reporter",
    )
    prompt.add_argument("--workflow", default="chat", help="chat (the default) or aiops")
    prompt.add_argument("--locale", default="en", help="en (the default) or zh-CN")
    add_all_options(
        prompt, "write every prompt to --out DIR as <workflow>/<agent>.<locale>.txt"
    )
