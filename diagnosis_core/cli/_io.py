"""What every ``diagnosis-core`` subcommand shares: exit codes, output, reading input.

Kept apart from the parser (``_main.py``) so that the subcommand modules
(``_conformance.py``, ``_stores.py``) and the main command line share
one way to write output (bytes, undecodable characters escaped; readable
output made inert for a terminal, spec §15), to read a scenario file and to
report a usage error, without importing each other.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from .. import DiagnosisResult, ScenarioError, to_wire
from .._kernel.machine.tables import text_cell, trace_table_lines
from .._kernel.terminal import terminal_safe
from ..protocol import canonical_json
from ..scenarios import parse_document_text

__all__ = [
    "EXIT_OK",
    "EXIT_OUTPUT",
    "EXIT_USAGE",
    "STDIN",
    "ArgumentParser",
    "format_result",
    "journal_key",
    "payload_key",
    "read_scenario_file",
    "read_text",
    "usage_error",
    "write",
    "write_readable",
    "write_result",
]

EXIT_OK = 0
EXIT_OUTPUT = 1
EXIT_USAGE = 2

STDIN = "-"


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def write(text: str) -> None:
    data = text.encode("utf-8", "backslashreplace")
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def write_readable(text: str) -> None:
    """Write human-readable output: every terminal control escaped (spec §15)."""
    write(terminal_safe(text))


def read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (``-``: standard input); problems are :class:`ScenarioError`."""
    name = "<stdin>" if path == STDIN else path
    try:
        if path == STDIN:
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as error:
        raise ScenarioError(f"{name}: cannot read ({error.strerror or error})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{name}: not UTF-8 ({error.reason} at byte {error.start})") from None


def read_scenario_file(path: str) -> object:
    """Read a scenario file (``-``: standard input) as JSON; problems are :class:`ScenarioError`."""
    return parse_document_text(read_text(path), path)


def format_result(result: DiagnosisResult) -> str:
    """The readable report: answer, outcome, verdicts and a compact trace table."""
    lines = [result.answer.rstrip(), "", "-" * 72]
    lines.append(
        f"outcome: {result.outcome.value}   reason: {text_cell(result.reason_code)}   "
        f"rounds: {result.rounds}   evidence retries: {result.evidence_retries}"
    )
    lines.append(
        f"gatekeeper: {text_cell(result.gatekeeper_status)}   "
        f"model verdict: {text_cell(result.model_verdict)}   "
        f"effective verdict: {text_cell(result.effective_verdict)}"
    )
    calls = result.calls
    lines.append(
        f"calls: planner={calls.planner} executor={calls.executor} "
        f"gatekeeper={calls.gatekeeper} verifier={calls.verifier} composer={calls.composer}"
    )
    lines.append("")
    lines += trace_table_lines(result.trace, "round")
    return "\n".join(lines) + "\n"


def usage_error(message: str) -> int:
    sys.stderr.write(terminal_safe(f"diagnosis-core: {message}\n"))
    return EXIT_USAGE


def _key_file(option: str, path: str | None) -> bytes | None:
    if path is None:
        return None
    if path == STDIN:
        raise ScenarioError(f"{option}: give a file (standard input is not a key)")
    try:
        with open(path, "rb") as handle:
            key = handle.read()
    except OSError as error:
        raise ScenarioError(
            f"{option} {path}: cannot read ({error.strerror or error})"
        ) from None
    if not key:
        raise ScenarioError(f"{option} {path}: the key file is empty")
    return key


def journal_key(path: str | None) -> bytes | None:
    """The host key: the bytes of ``path``; an empty or unreadable file is a ScenarioError."""
    return _key_file("--journal-key-file", path)


def payload_key(path: str | None) -> bytes | None:
    """A store's payload key: the bytes of ``path`` (``--payload-key-file``), read alike."""
    return _key_file("--payload-key-file", path)


def write_result(args: argparse.Namespace, result: DiagnosisResult) -> None:
    if args.json:
        write(canonical_json(to_wire(result)) + "\n")
    else:
        write_readable(format_result(result))
