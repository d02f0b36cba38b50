"""``diagnosis-core conformance list|run`` and ``schema --all``: the kit's command line."""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..conformance import PROTOCOL_VERSION
from ..conformance._corpus import Case, load_corpus
from ..conformance._runner import (
    BatchCommand,
    FileCommand,
    failure_lines,
    inert,
    junit_xml,
    python_process,
    run_cases,
    select_cases,
)
from ..conformance._schemas import write_schemas
from ._commands import add_command
from ._io import write

__all__ = ["add_conformance_parser", "write_all_schemas"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2



def _iter_areas(cases: list[Case]) -> Iterator[tuple[str, list[Case]]]:
    """The cases grouped by area, in corpus order."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.area, []).append(case)
    yield from groups.items()



def _command_words(command: str) -> list[str]:
    """``--cli CMD`` split as a POSIX shell would (``CMD`` may name an interpreter and args)."""
    words = shlex.split(command)
    if not words:
        raise ValueError("--cli: empty command")
    return words


def _write_lines(lines: Iterable[str]) -> None:
    """Write report lines to stdout (UTF-8, undecodable characters escaped)."""
    write("".join(line + "\n" for line in lines))


MAX_TIMEOUT = 86400.0
"""The longest ``--timeout`` (a day): a case's deadline is always a real time."""


def _seconds(text: str) -> float:
    """``--timeout``'s value: a number of seconds, more than 0 and at most a day."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds <= MAX_TIMEOUT:  # also refuses nan
        raise argparse.ArgumentTypeError(
            f"{text!r}: give more than 0 and at most {MAX_TIMEOUT:g} seconds")
    return seconds


def _usage(message: str) -> int:
    sys.stderr.write(f"diagnosis-core: {inert(message)}\n")
    return EXIT_USAGE


def _corpus(args: argparse.Namespace) -> list[Any]:
    directory = Path(args.corpus) if args.corpus else None
    return load_corpus(directory)


def _list(args: argparse.Namespace) -> int:

    try:
        cases = select_cases(_corpus(args), args.k)
    except (OSError, ValueError) as error:
        return _usage(f"cannot load the corpus: {error}")
    lines = [f"protocol {PROTOCOL_VERSION}"]
    for area, items in _iter_areas(cases):
        lines.append(f"{inert(area):<24}{len(items):>5}")
        if args.verbose:
            lines += [f"  {inert(case.name)}: {inert(case.why)}" for case in items]
    lines.append(f"{'total':<24}{len(cases):>5}")
    write("\n".join(lines) + "\n")
    return EXIT_OK


def _implementation(args: argparse.Namespace) -> Any:

    if args.python is not None:
        if args.batch:
            raise ValueError("--batch goes with --cli, not --python")
        top = args.python.partition(".")[0]
        try:
            found = bool(top) and importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ValueError(f"--python: no module named {args.python!r}")
        # In a child process: the module's exit, crash or hang fails a case, not the run.
        return python_process(args.python, args.timeout)
    words = _command_words(args.cli)
    if args.batch:
        return BatchCommand(words, args.timeout)
    return FileCommand(words, args.timeout)


def _run(args: argparse.Namespace) -> int:

    try:
        cases = select_cases(_corpus(args), args.k)
    except (OSError, ValueError) as error:
        return _usage(f"cannot load the corpus: {error}")
    if not cases:
        return _usage(f"-k {args.k!r} selects no case")
    try:
        implementation = _implementation(args)
    except (ImportError, ValueError) as error:
        return _usage(str(error))
    started = time.perf_counter()
    results = run_cases(
        implementation, cases,
        report=lambda result: None if result.passed else _write_lines(failure_lines(result)),
    )
    seconds = time.perf_counter() - started
    failed = sum(1 for result in results if not result.passed)
    _write_lines([f"{len(results) - failed} passed, {failed} failed ({seconds:.1f} s)"])
    if args.junit:
        try:
            Path(args.junit).write_text(junit_xml(results), encoding="utf-8")
        except OSError as error:
            sys.stderr.write(f"diagnosis-core: cannot write {args.junit} ({error})\n")
            return EXIT_FAILED
    return EXIT_FAILED if failed else EXIT_OK


def add_conformance_parser(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Register ``conformance list`` and ``conformance run`` on the CLI's subcommands."""
    conformance = commands.add_parser(
        "conformance",
        help="check an implementation against the protocol's conformance corpus",
        description=f"The conformance kit of protocol {PROTOCOL_VERSION}: a corpus of "
        "documents with expected results, and a runner for any implementation.",
    )
    sub = conformance.add_subparsers(dest="conformance_command", required=True,
                                     parser_class=parser_class)
    listing = add_command(sub, "list", _list, help="print the cases by area with counts")
    listing.add_argument("-k", metavar="PATTERN", help="only cases whose area/name matches")
    listing.add_argument("-v", "--verbose", action="store_true", help="list every case")
    listing.add_argument("--corpus", metavar="DIR", help="another corpus directory")
    run = add_command(
        sub,
        "run",
        _run,
        help="run the corpus against an implementation",
        description="Run every case and compare exactly; prints 'FAIL <case>: <path>: "
        "expected … got …' with the case's why, then 'N passed, M failed'. Exit 1 on any "
        "failure.",
    )
    target = run.add_mutually_exclusive_group(required=True)
    target.add_argument("--cli", metavar="CMD",
                        help='a command; "CMD run --json FILE" is run per case')
    target.add_argument("--python", metavar="MODULE",
                        help="a module defining run_document(text: str) -> dict "
                        "(run in a child process)")
    run.add_argument("--batch", action="store_true",
                     help='start "CMD run --json --batch" once; one document per line')
    run.add_argument("-k", metavar="PATTERN",
                     help="only cases whose area/name contains PATTERN (or matches a glob)")
    run.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
    run.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                     help="time-out per case (default 30, at most a day)")
    run.add_argument("--corpus", metavar="DIR", help="another corpus directory")


def write_all_schemas(directory: str) -> int:
    """``schema --all --out DIR``: write every schema file, print the paths."""

    try:
        paths = write_schemas(Path(directory))
    except OSError as error:
        sys.stderr.write(f"diagnosis-core: cannot write schemas to {directory} ({error})\n")
        return EXIT_FAILED
    write("".join(f"{path}\n" for path in paths))
    return EXIT_OK
