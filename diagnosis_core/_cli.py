"""The ``diagnosis-core`` command line.

``run [--json] SCENARIO.json`` replays a scenario (spec §9; a scenario with
``"workflow": "aiops"`` is an AIOps scenario, spec §11); ``schema NAME``
prints the JSON Schema of an agent payload; ``graph`` prints the Mermaid
diagram drawn from the routing table. A malformed scenario prints a message
naming the path and exits with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from ._aiops_drivers import evaluate_aiops_run
from ._aiops_replay import (
    AiOpsScenario,
    aiops_replay_output,
    format_aiops_result,
    load_aiops_scenario,
    replay_aiops_scenario,
)
from ._converter import to_wire
from ._errors import PayloadError, ScenarioError
from ._json import canonical_json, int_from_literal
from ._machine import DiagnosisResult
from ._replay import load_scenario, replay_scenario
from ._routing import routing_mermaid
from ._schema import SCHEMA_NAMES, json_schema
from ._terminal import terminal_safe

__all__ = ["main"]

EXIT_OK = 0
EXIT_USAGE = 2


def _write(text: str) -> None:
    data = text.encode("utf-8", "backslashreplace")
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _write_readable(text: str) -> None:
    """Write human-readable output: every terminal control escaped (spec §15)."""
    _write(terminal_safe(text))


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise ScenarioError(f"$: duplicate key {key!r} in a JSON object")
        result[key] = value
    return result


def _reject_constant(name: str) -> object:
    raise ScenarioError(f"$: {name} is not valid JSON")


def _scenario_int(literal: str) -> int:
    try:
        return int_from_literal(literal)
    except PayloadError as error:
        raise ScenarioError(f"$: {error.problem}") from None


def read_scenario_file(path: str) -> object:
    """Read a scenario file as JSON; every problem is a :class:`ScenarioError`."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ScenarioError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
            parse_int=_scenario_int,  # the fixed digit limit of spec §5
        )
    except json.JSONDecodeError as error:
        raise ScenarioError(
            f"{path}: invalid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise ScenarioError(f"{path}: JSON nested too deeply") from None
    except ScenarioError as error:  # from a hook: name the file
        raise ScenarioError(f"{path}: {error}") from None


def _cell(value: object) -> str:
    return "-" if value is None else str(getattr(value, "value", value))


def format_result(result: DiagnosisResult) -> str:
    """The readable report: answer, outcome, verdicts and a compact trace table."""
    lines = [result.answer.rstrip(), "", "-" * 72]
    lines.append(
        f"outcome: {result.outcome.value}   reason: {_cell(result.reason_code)}   "
        f"rounds: {result.rounds}   evidence retries: {result.evidence_retries}"
    )
    lines.append(
        f"gatekeeper: {_cell(result.gatekeeper_status)}   "
        f"model verdict: {_cell(result.model_verdict)}   "
        f"effective verdict: {_cell(result.effective_verdict)}"
    )
    calls = result.calls
    lines.append(
        f"calls: planner={calls.planner} executor={calls.executor} "
        f"gatekeeper={calls.gatekeeper} verifier={calls.verifier} composer={calls.composer}"
    )
    lines.append("")
    header = ("seq", "node", "round", "attempt", "status", "reason")
    rows = [header] + [
        (
            str(event.seq),
            event.node.value,
            str(event.round),
            str(event.attempt),
            event.status.value,
            _cell(event.reason_code),
        )
        for event in result.trace
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _run(args: argparse.Namespace) -> int:
    try:
        data = read_scenario_file(args.scenario)
        # The chat loader rejects unknown keys, so the AIOps branch comes first.
        if isinstance(data, dict) and "workflow" in data:
            return _run_aiops(args, load_aiops_scenario(data))
        scenario = load_scenario(data)
    except ScenarioError as error:
        sys.stderr.write(terminal_safe(f"diagnosis-core: invalid scenario: {error}\n"))
        return EXIT_USAGE
    result = replay_scenario(scenario).result
    if args.json:
        _write(canonical_json(to_wire(result)) + "\n")
    else:
        _write_readable(format_result(result))
    return EXIT_OK


def _run_aiops(args: argparse.Namespace, scenario: AiOpsScenario) -> int:
    """Replay an AIOps scenario (``"workflow": "aiops"``, spec §11)."""
    state = replay_aiops_scenario(scenario)
    if args.json:
        _write(canonical_json(aiops_replay_output(scenario, state)) + "\n")
    else:
        evaluation = evaluate_aiops_run(state, scenario.tool_ledger)
        _write_readable(format_aiops_result(state.result, evaluation, scenario.config))
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    _write(json.dumps(json_schema(args.name), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _graph(args: argparse.Namespace) -> int:
    _write(routing_mermaid())
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``diagnosis-core``."""
    parser = _ArgumentParser(
        prog="diagnosis-core",
        description="Replay diagnosis scenarios, print payload schemas and the routing graph.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    run = commands.add_parser("run", help="replay a scenario JSON file")
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument("scenario", help="path of the scenario JSON file")
    run.set_defaults(handler=_run)
    schema = commands.add_parser("schema", help="print the JSON Schema of an agent payload")
    schema.add_argument("name", choices=SCHEMA_NAMES)
    schema.set_defaults(handler=_schema)
    graph = commands.add_parser("graph", help="print the routing table as a Mermaid diagram")
    graph.set_defaults(handler=_graph)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``diagnosis-core`` console script."""
    args = build_parser().parse_args(argv)
    handler = args.handler
    code: int = handler(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
