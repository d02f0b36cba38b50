"""How a ``diagnosis-core`` subcommand is declared: its name, texts and handler in one call.

The main command line (``_main.py``) and the subcommand modules declare their
commands with :func:`add_command`, so a command's handler is named where the
command is, not in a separate ``set_defaults`` after its options; ``main``
calls ``args.handler(args)``. The host key option, which several commands take
in the same meaning (the file whose bytes are the journal key, spec §12.2), is
declared by :func:`add_key_option`, with each command's own help; so are
``--all --out DIR`` (write every file of a kind) by :func:`add_all_options`. The help
texts are passed to argparse unchanged, so ``--help`` reads the same.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Handler", "add_all_options", "add_command", "add_key_option"]

P = TypeVar("P", bound=argparse.ArgumentParser)

Handler = Callable[[argparse.Namespace], int]
"""A subcommand's body: the parsed arguments in, the exit code out."""


def add_command(
    commands: argparse._SubParsersAction[P],
    name: str,
    handler: Handler,
    *,
    help: str,
    description: str | None = None,
) -> P:
    """Add the subcommand ``name`` to ``commands``; parsing it sets ``args.handler``."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    return parser


def add_key_option(parser: argparse.ArgumentParser, help: str) -> None:
    """Add ``--journal-key-file FILE``: the host key, read by ``journal_key`` (``_io.py``)."""
    parser.add_argument("--journal-key-file", metavar="FILE", help=help)


def add_all_options(parser: argparse.ArgumentParser, help: str) -> None:
    """Add ``--all`` (``help``: what it writes) and ``--out DIR``, where it writes."""
    parser.add_argument("--all", action="store_true", help=help)
    parser.add_argument("--out", metavar="DIR", help="the directory --all writes to")
