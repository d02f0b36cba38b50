"""The ``diagnosis-core`` command line.

``run [--json] SCENARIO.json`` replays a scenario (spec §9; a scenario with
``"workflow": "aiops"`` is an AIOps scenario, spec §11), ``--journal-out FILE``
writing the run's journal (spec §12); ``run [--json] JOURNAL.json`` replays a
journal (told apart by ``"format": "diagnosis_journal_v2"`` or ``…_v1``) to the output of
the run that recorded it; ``--journal-key-file FILE`` signs the journal
written and verifies the journal read; ``journal to-scenario JOURNAL`` prints
the equivalent §9 scenario; ``validate NAME
REPLY`` parses one agent reply with the payload parser ``NAME`` and prints the
value as canonical JSON, or the path-named error; ``schema [--profile P]
NAME`` prints the JSON Schema of an agent payload (profile ``validation`` by
default, or a provider's structured-output subset, spec §5.5); ``graph``
prints the Mermaid diagram drawn from the routing table (``--workflow aiops``
for the AIOps workflow's). ``-`` reads standard input wherever a file is read.

Exit status: 0 on success; 2 for bad input (a malformed scenario, a reply the
parser rejects, a usage error), with a message naming the path; 1 when the
output cannot be written (a closed pipe such as ``| head -1``, a full disk),
with a one-line message on standard error. Never a traceback. The AIOps
package is imported only when an AIOps scenario or ``--workflow aiops`` is used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from ._converter import from_wire, to_wire
from ._errors import JournalError, PayloadError, ScenarioError
from ._json import canonical_json, int_from_literal
from ._machine import DiagnosisResult
from ._parsing import (
    PayloadName,
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from ._payloads import Skill
from ._replay import Scenario, load_scenario, replay_scenario, scenario_effects, scenario_request
from ._routing import routing_mermaid
from ._schema import SCHEMA_NAMES, SCHEMA_PROFILES, json_schema
from ._tables import text_cell, trace_table_lines
from ._terminal import terminal_safe

if TYPE_CHECKING:
    from ._journal import JournalStatus
    from ._journal_wire import Journal
    from .aiops import AiOpsScenario

__all__ = ["main"]

EXIT_OK = 0
EXIT_OUTPUT = 1
EXIT_USAGE = 2

_STDIN = "-"
_WORKFLOWS = ("chat", "aiops")
# the AIOps journal's formats (spec §12): the one written now, and v1 (still read)
_AIOPS_JOURNAL = ("aiops_journal_v2", "aiops_journal_v1")


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


def _read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (``-``: standard input); problems are :class:`ScenarioError`."""
    name = "<stdin>" if path == _STDIN else path
    try:
        if path == _STDIN:
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
    return _parse_scenario_text(_read_text(path), path)


def _parse_scenario_text(text: str, path: str) -> object:
    """A scenario file's text as JSON (duplicate keys, NaN, huge integers refused)."""
    if path == _STDIN:
        path = "<stdin>"
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


def _usage_error(message: str) -> int:
    sys.stderr.write(terminal_safe(f"diagnosis-core: {message}\n"))
    return EXIT_USAGE


def _journal_key(path: str | None) -> bytes | None:
    """The host key: the bytes of ``path``; an empty or unreadable file is a ScenarioError."""
    if path is None:
        return None
    if path == _STDIN:
        raise ScenarioError("--journal-key-file: give a file (standard input is not a key)")
    try:
        with open(path, "rb") as handle:
            key = handle.read()
    except OSError as error:
        raise ScenarioError(
            f"--journal-key-file {path}: cannot read ({error.strerror or error})"
        ) from None
    if not key:
        raise ScenarioError(f"--journal-key-file {path}: the key file is empty")
    return key


def _write_result(args: argparse.Namespace, result: DiagnosisResult) -> None:
    if args.json:
        _write(canonical_json(to_wire(result)) + "\n")
    else:
        _write_readable(format_result(result))


def _run(args: argparse.Namespace) -> int:
    try:
        key = _journal_key(args.journal_key_file)
    except ScenarioError as error:
        return _usage_error(str(error))
    try:
        text = _read_text(args.scenario)
        data = _parse_scenario_text(text, args.scenario)
        # A journal names its format; a scenario has no "format" key (it would be refused).
        if isinstance(data, dict) and "format" in data:
            if args.journal_out is not None:
                return _usage_error("--journal-out: a journal is replayed, not recorded again")
            if data.get("format") in _AIOPS_JOURNAL:
                return _run_aiops_journal(args, data, key)
            return _replay_journal_text(args, text, key)
        if args.journal_out == _STDIN:
            return _usage_error("--journal-out: give a file (standard output has the result)")
        if key is not None and args.journal_out is None:
            return _usage_error("--journal-key-file: needs --journal-out or a journal to verify")
        # The chat loader rejects unknown keys, so the AIOps branch comes first.
        if isinstance(data, dict) and "workflow" in data:
            if args.journal_out is not None:
                return _usage_error("--journal-out: only a chat scenario writes a journal")
            return _run_aiops(args, data)
        scenario = load_scenario(data)
    except ScenarioError as error:
        sys.stderr.write(terminal_safe(f"diagnosis-core: invalid scenario: {error}\n"))
        return EXIT_USAGE
    if args.journal_out is None:
        _write_result(args, replay_scenario(scenario).result)
        return EXIT_OK
    return _record_journal(args, scenario, key)


def _record_journal(args: argparse.Namespace, scenario: Scenario, key: bytes | None) -> int:
    """Run ``scenario`` writing its journal to ``--journal-out``, then print the result."""
    from ._drivers import run_diagnosis
    from ._journal import ListJournalSink
    from ._journal_wire import journal_to_json

    request = scenario_request(scenario)
    sink = ListJournalSink()
    state = run_diagnosis(request, scenario_effects(scenario), sink=sink, key=key)
    try:
        with open(args.journal_out, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(journal_to_json(sink.journal(request)) + "\n")
    except OSError as error:
        sys.stderr.write(
            terminal_safe(
                f"diagnosis-core: cannot write journal {args.journal_out} "
                f"({error.strerror or error})\n"
            )
        )
        return EXIT_OUTPUT
    _write_result(args, state.result)
    return EXIT_OK


def _load_journal_text(text: str, key: bytes | None) -> tuple[Journal, JournalStatus]:
    """Parse, fold and verify a journal; :class:`JournalError` names the first bad entry."""
    from ._journal import journal_status
    from ._journal_wire import journal_from_json

    journal = journal_from_json(text)
    return journal, journal_status(journal, key=key)


def _replay_journal_text(args: argparse.Namespace, text: str, key: bytes | None) -> int:
    """Replay a complete journal: the output of the run that recorded it, byte for byte."""
    try:
        _, status = _load_journal_text(text, key)
    except JournalError as error:
        return _usage_error(f"invalid journal: {error}")
    if not status.complete:
        return _usage_error(
            f"the journal is {status.describe()} (the run that wrote it did not finish)"
        )
    _write_result(args, status.state.result)
    return EXIT_OK


def _journal_to_scenario(args: argparse.Namespace) -> int:
    """``journal to-scenario JOURNAL``: the equivalent §9 scenario as canonical JSON."""
    from ._journal import journal_to_scenario
    from ._journal_wire import stored_json

    try:
        key = _journal_key(args.journal_key_file)
        text = _read_text(args.journal)
    except ScenarioError as error:
        return _usage_error(str(error))
    try:
        journal, status = _load_journal_text(text, key)
        if not status.complete:
            return _usage_error(
                f"the journal is {status.describe()} (the run that wrote it did not finish)"
            )
        scenario = journal_to_scenario(journal, key=key, exact=not args.approximate)
    except JournalError as error:
        return _usage_error(f"invalid journal: {error}")
    _write(stored_json(scenario) + "\n")
    return EXIT_OK


def _run_aiops(args: argparse.Namespace, data: object) -> int:
    """Replay an AIOps scenario (``"workflow": "aiops"``, spec §11)."""
    from .aiops._drivers import evaluate_aiops_run
    from .aiops._replay import (
        aiops_replay_output,
        format_aiops_result,
        load_aiops_scenario,
        replay_aiops_scenario,
    )

    scenario: AiOpsScenario = load_aiops_scenario(data)
    state = replay_aiops_scenario(scenario)
    if args.json:
        _write(canonical_json(aiops_replay_output(scenario, state)) + "\n")
    else:
        evaluation = evaluate_aiops_run(state, scenario.tool_ledger)
        _write_readable(format_aiops_result(state.result, evaluation, scenario.config))
    return EXIT_OK


def _run_aiops_journal(args: argparse.Namespace, data: object, key: bytes | None) -> int:
    """Replay an AIOps journal (``"format": "aiops_journal_v2"`` or ``…_v1``, spec §12).

    Refused with exit 2 naming the entry when it does not verify, and when it
    is incomplete (its process died) saying at which call.
    """
    from ._errors import JournalError
    from .aiops._drivers import evaluate_aiops_run
    from .aiops._journal import aiops_journal_status, load_aiops_journal
    from .aiops._journal_replay import aiops_journal_ledger
    from .aiops._replay import aiops_output, format_aiops_result

    try:
        journal = load_aiops_journal(data)
        status = aiops_journal_status(journal, key=key)
        if not status.complete:
            raise JournalError(f"the journal is {status.describe()}")
        ledger = aiops_journal_ledger(journal)
    except JournalError as error:
        sys.stderr.write(terminal_safe(f"diagnosis-core: invalid journal: {error}\n"))
        return EXIT_USAGE
    if args.json:
        _write(canonical_json(aiops_output(status.state, ledger)) + "\n")
    else:
        evaluation = evaluate_aiops_run(status.state, ledger)
        config = journal.request.config
        _write_readable(format_aiops_result(status.state.result, evaluation, config))
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    if args.workflow == "aiops":
        from .aiops._schema import aiops_json_schema as schema_of
    else:
        schema_of = json_schema
    try:
        schema = schema_of(args.name, args.profile)
    except ValueError as error:
        sys.stderr.write(f"diagnosis-core: {error}\n")
        return EXIT_USAGE
    _write(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _graph(args: argparse.Namespace) -> int:
    if args.workflow == "aiops":
        from .aiops._routing import aiops_routing_mermaid

        _write(aiops_routing_mermaid())
    else:
        _write(routing_mermaid())
    return EXIT_OK


def _id_list(text: str | None) -> tuple[str, ...]:
    """``a,b,c`` as ids; none given means none (fail closed)."""
    return tuple(item for item in (text or "").split(",") if item)


def _skill_catalog(path: str | None) -> tuple[str, ...]:
    """The skill names of a catalog file (a JSON array of ``{"name", "description"}``)."""
    if path is None:
        return ()
    data = read_scenario_file(path)
    try:
        skills = from_wire(tuple[Skill, ...], data)
    except PayloadError as error:
        raise ScenarioError(f"{path}: not a skill catalog: {error}") from None
    return tuple(skill.name for skill in skills)


def _reply_parser(args: argparse.Namespace) -> Callable[[str], object] | None:
    """The parser of payload ``args.name`` with its context, or None for an unknown name."""
    name: str = args.name
    if name == PayloadName.PLANNER_PLAN:
        skills = _skill_catalog(args.skills)
        return lambda text: parse_planner_plan(text, skills)
    if name == PayloadName.EXECUTOR_EVIDENCE_V2:
        return parse_executor_evidence
    if name == PayloadName.VERIFIER_OUTPUT:
        return parse_verifier_output
    if name == PayloadName.COMPOSER_OUTPUT:
        allowed = _id_list(args.allowed_claims)
        return lambda text: parse_composer_output(text, allowed)
    from .aiops._schema import AIOPS_SCHEMA_NAMES

    if name not in AIOPS_SCHEMA_NAMES:
        return None
    from .aiops import _parsing as aiops_parsing

    if name == aiops_parsing.AiOpsPayloadName.AIOPS_EXECUTOR_OUTPUT:
        known = _id_list(args.known_invocations)
        return lambda text: aiops_parsing.parse_aiops_executor_output(text, known)
    parsers: dict[str, Callable[[str], object]] = {
        aiops_parsing.AiOpsPayloadName.SUPERVISOR_DECISION: (
            aiops_parsing.parse_supervisor_decision
        ),
        aiops_parsing.AiOpsPayloadName.AIOPS_PLAN: aiops_parsing.parse_aiops_plan,
        aiops_parsing.AiOpsPayloadName.AIOPS_REPORT: aiops_parsing.parse_aiops_report,
    }
    return parsers[name]


def _validate(args: argparse.Namespace) -> int:
    try:
        parser = _reply_parser(args)
        if parser is None:
            from .aiops._schema import AIOPS_SCHEMA_NAMES

            valid = ", ".join(repr(known) for known in (*SCHEMA_NAMES, *AIOPS_SCHEMA_NAMES))
            sys.stderr.write(
                f"diagnosis-core: unknown payload {args.name!r}; expected one of {valid}\n"
            )
            return EXIT_USAGE
        text = _read_text(args.reply)
    except ScenarioError as error:
        sys.stderr.write(f"diagnosis-core: {error}\n")
        return EXIT_USAGE
    try:
        value = parser(text)
    except PayloadError as error:
        sys.stderr.write(f"diagnosis-core: invalid {args.name}: {error}\n")
        return EXIT_USAGE
    _write(canonical_json(to_wire(value)) + "\n")
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("diagnosis-core")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from . import __version__

        return __version__


class _VersionAction(argparse.Action):
    """``--version``, reading the distribution's metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        _write(f"diagnosis-core {_version()}\n")
        parser.exit(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``diagnosis-core``."""
    parser = _ArgumentParser(
        prog="diagnosis-core",
        description="Replay diagnosis scenarios and run journals, print payload schemas "
        "and the routing graph.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print the installed version and exit"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    run = commands.add_parser(
        "run",
        help="replay a scenario or a run journal JSON file",
        description="Replay a scenario (spec §9), or a run journal (spec §12, told apart by "
        '"format": "diagnosis_journal_v2" or "diagnosis_journal_v1") to the output of the run '
        "that recorded it.",
    )
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument(
        "--journal-out", metavar="FILE", help="write the run's journal (a chat scenario only)"
    )
    run.add_argument(
        "--journal-key-file",
        metavar="FILE",
        help="host key (the file's bytes): sign the journal written, verify the journal read",
    )
    run.add_argument(
        "scenario", help="path of the scenario or journal JSON file, or - for standard input"
    )
    run.set_defaults(handler=_run)
    journal = commands.add_parser("journal", help="work with a run journal")
    journal_commands = journal.add_subparsers(
        dest="journal_command", required=True, parser_class=_ArgumentParser
    )
    to_scenario = journal_commands.add_parser(
        "to-scenario",
        help="print the §9 scenario equivalent to a complete journal",
        description="Print the §9 scenario that replays to the journal's result, as "
        "canonical JSON. An error message a scripted scenario cannot reproduce exactly "
        "is refused unless --approximate.",
    )
    to_scenario.add_argument("--journal-key-file", metavar="FILE", help="verify with this key")
    to_scenario.add_argument(
        "--approximate",
        action="store_true",
        help="keep error messages a scenario cannot reproduce exactly, as they are",
    )
    to_scenario.add_argument("journal", help="path of the journal JSON file, or - for stdin")
    to_scenario.set_defaults(handler=_journal_to_scenario)
    validate = commands.add_parser(
        "validate",
        help="parse one agent reply with a payload parser",
        description="Parse one agent reply; print the value as canonical JSON (exit 0) "
        "or the path-named error (exit 2). Context the parser needs is given by options; "
        "without it, nothing is allowed: a planner's selected_skill is not in the (empty) "
        "catalog, a composer may cite no claim, an AIOps executor finding may cite only "
        "the invocations of its own step.",
    )
    validate.add_argument(
        "name", help=f"payload name: {', '.join(SCHEMA_NAMES)}, or an AIOps payload name"
    )
    validate.add_argument("reply", help="file holding the reply text, or - for standard input")
    validate.add_argument(
        "--skills", metavar="FILE", help="planner_plan: the skill catalog (a JSON array of skills)"
    )
    validate.add_argument(
        "--allowed-claims", metavar="IDS", help="composer_output: allowed claim ids, a,b,c"
    )
    validate.add_argument(
        "--known-invocations",
        metavar="IDS",
        help="aiops_executor_output: invocation ids of earlier steps, a,b,c",
    )
    validate.set_defaults(handler=_validate)
    schema = commands.add_parser("schema", help="print the JSON Schema of an agent payload")
    schema.add_argument("--workflow", choices=_WORKFLOWS, default="chat")
    schema.add_argument(
        "--profile",
        choices=SCHEMA_PROFILES,
        default="validation",
        help="validation (what the parser accepts, the default) or a provider's "
        "structured-output subset",
    )
    schema.add_argument("name", help=f"payload name (chat: {', '.join(SCHEMA_NAMES)})")
    schema.set_defaults(handler=_schema)
    graph = commands.add_parser("graph", help="print the routing table as a Mermaid diagram")
    graph.add_argument("--workflow", choices=_WORKFLOWS, default="chat")
    graph.set_defaults(handler=_graph)
    return parser


def _output_failed(error: OSError) -> int:
    """End quietly after the output broke: one line on stderr, status 1, no traceback.

    Standard output is pointed at ``os.devnull`` so that the interpreter's own
    flush at exit does not fail a second time.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
        pass
    reason = "output closed" if isinstance(error, BrokenPipeError) else "cannot write output"
    try:
        sys.stderr.write(f"diagnosis-core: {reason} ({error.strerror or error})\n")
        sys.stderr.flush()
    except OSError:  # pragma: no cover - stderr gone as well
        pass
    return EXIT_OUTPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``diagnosis-core`` console script."""
    try:
        args = build_parser().parse_args(argv)
        code: int = args.handler(args)
        sys.stdout.flush()
    except OSError as error:  # input errors are ScenarioError: this is the output
        return _output_failed(error)
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
