"""The ``diagnosis-core`` command line.

``run [--json] SCENARIO.json`` replays a scenario (spec §9; a scenario with
``"workflow": "aiops"`` is an AIOps scenario, spec §11), ``--journal-out FILE``
writing the run's journal (spec §12); ``run [--json] JOURNAL.json`` replays a
journal (told apart by ``"format": "diagnosis_journal_v2"`` or ``…_v1``) to the output of
the run that recorded it; ``--journal-key-file FILE`` signs the journal
written and verifies the journal read; ``journal to-scenario JOURNAL`` prints
the equivalent §9 scenario; ``--store URL`` and the ``runs``, ``sessions``
and ``report`` commands work on a journal store (``_stores.py``); ``validate NAME
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
from typing import TYPE_CHECKING

from .. import (
    JournalError,
    PayloadError,
    Scenario,
    ScenarioError,
    Skill,
    from_wire,
    load_scenario,
    replay_scenario,
    scenario_effects,
    scenario_request,
    to_wire,
)
from .._chat.routing import routing_mermaid
from .._kernel.terminal import terminal_safe
from ..protocol import (
    SCHEMA_NAMES,
    SCHEMA_PROFILES,
    PayloadName,
    canonical_json,
    json_schema,
    parse_composer_output,
    parse_executor_evidence,
    parse_planner_plan,
    parse_verifier_output,
)
from ..scenarios import parse_document_text
from ._commands import add_all_options, add_command, add_key_option
from ._io import (
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
    STDIN,
    ArgumentParser,
    journal_key,
    read_scenario_file,
    read_text,
    usage_error,
    write,
    write_readable,
    write_result,
)

if TYPE_CHECKING:
    from ..aiops import AiOpsScenario
    from ..journal import Journal, JournalStatus

__all__ = ["main"]

_WORKFLOWS = ("chat", "aiops")
# the AIOps journal's formats (spec §12): the one written now, and v1 (still read)
_AIOPS_JOURNAL = ("aiops_journal_v2", "aiops_journal_v1")
_RESUME = "diagnosis_resume_v1"  # the conformance kit's resume document (spec §9)


def _run_batch(args: argparse.Namespace) -> int:
    """``run --json --batch``: one document per stdin line, one result line each (the kit's)."""
    if args.store is not None:
        if not args.json or args.scenario is not None or args.journal_out:
            return usage_error("--batch: use it as 'run --json --batch --store URL', reading "
                               "standard input")
        from ._stores import run_batch_with_store

        return run_batch_with_store(args, iter(sys.stdin.buffer.readline, b""))
    if not args.json or args.scenario is not None or args.journal_out or args.journal_key_file:
        return usage_error("--batch: use it as 'run --json --batch', reading standard input")
    if args.payload_key_file is not None:
        return usage_error("--payload-key-file: only with --store")
    from ..conformance._document import run_document_line

    for raw in iter(sys.stdin.buffer.readline, b""):
        try:
            text = raw.decode("utf-8-sig").strip("\r\n")
        except UnicodeDecodeError as error:
            write(canonical_json({"error": f"invalid scenario: not UTF-8 ({error.reason})"}))
            write("\n")
            continue
        if text.strip():
            write(run_document_line(text) + "\n")
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    if args.batch:
        return _run_batch(args)
    if args.scenario is None:
        return usage_error("run: give a scenario or journal file (or --batch)")
    if args.payload_key_file is not None and args.store is None:
        return usage_error("--payload-key-file: only with --store")
    try:
        key = journal_key(args.journal_key_file)
    except ScenarioError as error:
        return usage_error(str(error))
    try:
        text = read_text(args.scenario)
        data = parse_document_text(text, args.scenario)
        if args.store is not None:  # spec §16: recorded in (or resumed from) a store
            from ._stores import run_with_store

            return run_with_store(args, data, key)
        # A journal names its format; a scenario has no "format" key (it would be refused).
        if isinstance(data, dict) and "format" in data:
            if args.journal_out is not None:
                return usage_error("--journal-out: a journal is replayed, not recorded again")
            if data.get("format") in _AIOPS_JOURNAL:
                return _run_aiops_journal(args, data, key)
            if data.get("format") == _RESUME:
                return _run_resume(args, data, key)
            return _replay_journal_text(args, text, key)
        if args.journal_out == STDIN:
            return usage_error("--journal-out: give a file (standard output has the result)")
        if key is not None and args.journal_out is None:
            return usage_error("--journal-key-file: needs --journal-out or a journal to verify")
        # The chat loader rejects unknown keys, so the AIOps branch comes first.
        if isinstance(data, dict) and "workflow" in data:
            if args.journal_out is not None:
                return usage_error("--journal-out: only a chat scenario writes a journal")
            return _run_aiops(args, data)
        scenario = load_scenario(data)
    except ScenarioError as error:
        sys.stderr.write(terminal_safe(f"diagnosis-core: invalid scenario: {error}\n"))
        return EXIT_USAGE
    if args.journal_out is None:
        write_result(args, replay_scenario(scenario).result)
        return EXIT_OK
    return _record_journal(args, scenario, key)


def _run_resume(args: argparse.Namespace, data: dict[str, object], key: bytes | None) -> int:
    """A resume document (the conformance kit's ``diagnosis_resume_v1``): resume, then finish."""
    from ..conformance._document import resume_document_state

    if key is not None:
        return usage_error("--journal-key-file: a resume document is not verified with a key")
    try:
        state = resume_document_state(data)
    except JournalError as error:
        return usage_error(f"invalid journal: {error}")
    write_result(args, state.result)
    return EXIT_OK


def _record_journal(args: argparse.Namespace, scenario: Scenario, key: bytes | None) -> int:
    """Run ``scenario`` writing its journal to ``--journal-out``, then print the result."""
    from .. import run_diagnosis
    from ..journal import ListJournalSink, journal_to_json

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
    write_result(args, state.result)
    return EXIT_OK


def _load_journal_text(text: str, key: bytes | None) -> tuple[Journal, JournalStatus]:
    """Parse, fold and verify a journal; :class:`JournalError` names the first bad entry."""
    from ..journal import Journal, journal_status

    journal = Journal.from_json(text)
    return journal, journal_status(journal, key=key)


def _replay_journal_text(args: argparse.Namespace, text: str, key: bytes | None) -> int:
    """Replay a complete journal: the output of the run that recorded it, byte for byte."""
    try:
        _, status = _load_journal_text(text, key)
    except JournalError as error:
        return usage_error(f"invalid journal: {error}")
    if not status.complete:
        return usage_error(
            f"the journal is {status.describe()} (the run that wrote it did not finish)"
        )
    write_result(args, status.state.result)
    return EXIT_OK


def _journal_to_scenario(args: argparse.Namespace) -> int:
    """``journal to-scenario JOURNAL``: the equivalent §9 scenario as canonical JSON."""
    from ..journal import journal_to_scenario, stored_json

    try:
        key = journal_key(args.journal_key_file)
        text = read_text(args.journal)
    except ScenarioError as error:
        return usage_error(str(error))
    try:
        journal, status = _load_journal_text(text, key)
        if not status.complete:
            return usage_error(
                f"the journal is {status.describe()} (the run that wrote it did not finish)"
            )
        scenario = journal_to_scenario(journal, key=key, exact=not args.approximate)
    except JournalError as error:
        return usage_error(f"invalid journal: {error}")
    write(stored_json(scenario) + "\n")
    return EXIT_OK


def _run_aiops(args: argparse.Namespace, data: object) -> int:
    """Replay an AIOps scenario (``"workflow": "aiops"``, spec §11)."""
    from .._aiops.replay import format_aiops_result
    from ..aiops import (
        aiops_replay_output,
        evaluate_aiops_run,
        load_aiops_scenario,
        replay_aiops_scenario,
    )

    scenario: AiOpsScenario = load_aiops_scenario(data)
    state = replay_aiops_scenario(scenario)
    if args.json:
        write(canonical_json(aiops_replay_output(scenario, state)) + "\n")
    else:
        evaluation = evaluate_aiops_run(state, scenario.tool_ledger)
        write_readable(format_aiops_result(state.result, evaluation, scenario.config))
    return EXIT_OK


def _run_aiops_journal(args: argparse.Namespace, data: object, key: bytes | None) -> int:
    """Replay an AIOps journal (``"format": "aiops_journal_v2"`` or ``…_v1``, spec §12).

    Refused with exit 2 naming the entry when it does not verify, and when it
    is incomplete (its process died) saying at which call.
    """
    from .. import JournalError
    from .._aiops.replay import format_aiops_result
    from ..aiops import aiops_output, evaluate_aiops_run
    from ..journal import AiOpsJournal, aiops_journal_ledger, journal_status

    try:
        journal = AiOpsJournal.load(data)
        status = journal_status(journal, key=key)
        if not status.complete:
            raise JournalError(f"the journal is {status.describe()}")
        ledger = aiops_journal_ledger(journal)
    except JournalError as error:
        sys.stderr.write(terminal_safe(f"diagnosis-core: invalid journal: {error}\n"))
        return EXIT_USAGE
    if args.json:
        write(canonical_json(aiops_output(status.state, ledger)) + "\n")
    else:
        evaluation = evaluate_aiops_run(status.state, ledger)
        config = journal.request.config
        write_readable(format_aiops_result(status.state.result, evaluation, config))
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    if args.all:
        if args.out is None or args.name is not None:
            return usage_error("schema --all: give --out DIR and no payload name")
        from ._conformance import write_all_schemas

        return write_all_schemas(args.out)
    if args.name is None:
        return usage_error("schema: give a payload name (or --all --out DIR)")
    if args.out is not None:
        return usage_error("schema: --out goes with --all")
    if args.workflow == "aiops":
        from ..protocol import aiops_json_schema as schema_of
    else:
        schema_of = json_schema
    try:
        schema = schema_of(args.name, args.profile)
    except ValueError as error:
        sys.stderr.write(f"diagnosis-core: {error}\n")
        return EXIT_USAGE
    write(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _graph(args: argparse.Namespace) -> int:
    if args.workflow == "aiops":
        from .._aiops.routing import aiops_routing_mermaid

        write(aiops_routing_mermaid())
    else:
        write(routing_mermaid())
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
    from ..protocol import AIOPS_SCHEMA_NAMES

    if name not in AIOPS_SCHEMA_NAMES:
        return None
    from .._aiops import parsing as aiops_parsing

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
            from ..protocol import AIOPS_SCHEMA_NAMES

            valid = ", ".join(repr(known) for known in (*SCHEMA_NAMES, *AIOPS_SCHEMA_NAMES))
            sys.stderr.write(
                f"diagnosis-core: unknown payload {args.name!r}; expected one of {valid}\n"
            )
            return EXIT_USAGE
        text = read_text(args.reply)
    except ScenarioError as error:
        sys.stderr.write(f"diagnosis-core: {error}\n")
        return EXIT_USAGE
    try:
        value = parser(text)
    except PayloadError as error:
        sys.stderr.write(f"diagnosis-core: invalid {args.name}: {error}\n")
        return EXIT_USAGE
    write(canonical_json(to_wire(value)) + "\n")
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("diagnosis-core")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from .. import __version__

        return __version__


class _VersionAction(argparse.Action):
    """``--version``, reading the distribution's metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from ..conformance import PROTOCOL_VERSION

        write(f"diagnosis-core {_version()}\nprotocol {PROTOCOL_VERSION}\n")
        parser.exit(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``diagnosis-core``."""
    parser = ArgumentParser(
        prog="diagnosis-core",
        description="Replay diagnosis scenarios and run journals, print payload schemas "
        "and the routing graph.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print the installed version and exit"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)
    run = add_command(
        commands,
        "run",
        _run,
        help="replay a scenario or a run journal JSON file",
        description="Replay a scenario (spec §9), or a run journal (spec §12, told apart by "
        '"format": "diagnosis_journal_v2" or "diagnosis_journal_v1") to the output of the run '
        "that recorded it.",
    )
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument(
        "--journal-out", metavar="FILE", help="write the run's journal (a chat scenario only)"
    )
    add_key_option(
        run, "host key (the file's bytes): sign the journal written, verify the journal read"
    )
    run.add_argument(
        "--batch",
        action="store_true",
        help="with --json: read one document per line on standard input, print one result "
        "line each (refusals as {\"error\": message})",
    )
    run.add_argument(
        "scenario",
        nargs="?",
        help="path of the scenario or journal JSON file, or - for standard input",
    )
    from ._stores import add_store_commands

    add_store_commands(commands, run)
    journal = commands.add_parser("journal", help="work with a run journal")
    journal_commands = journal.add_subparsers(
        dest="journal_command", required=True, parser_class=ArgumentParser
    )
    to_scenario = add_command(
        journal_commands,
        "to-scenario",
        _journal_to_scenario,
        help="print the §9 scenario equivalent to a complete journal",
        description="Print the §9 scenario that replays to the journal's result, as "
        "canonical JSON. An error message a scripted scenario cannot reproduce exactly "
        "is refused unless --approximate.",
    )
    add_key_option(to_scenario, "verify with this key")
    to_scenario.add_argument(
        "--approximate",
        action="store_true",
        help="keep error messages a scenario cannot reproduce exactly, as they are",
    )
    to_scenario.add_argument("journal", help="path of the journal JSON file, or - for stdin")
    validate = add_command(
        commands,
        "validate",
        _validate,
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
    schema = add_command(
        commands, "schema", _schema, help="print the JSON Schema of an agent payload"
    )
    schema.add_argument("--workflow", choices=_WORKFLOWS, default="chat")
    schema.add_argument(
        "--profile",
        choices=SCHEMA_PROFILES,
        default="validation",
        help="validation (what the parser accepts, the default) or a provider's "
        "structured-output subset",
    )
    schema.add_argument(
        "name", nargs="?", help=f"payload name (chat: {', '.join(SCHEMA_NAMES)})"
    )
    add_all_options(
        schema,
        "write every payload, scenario, output, trace report and journal schema "
        "(validation profile) to --out DIR, one file each with a stable $id",
    )
    graph = add_command(
        commands, "graph", _graph, help="print the routing table as a Mermaid diagram"
    )
    graph.add_argument("--workflow", choices=_WORKFLOWS, default="chat")
    from ._conformance import add_conformance_parser

    add_conformance_parser(commands, ArgumentParser)
    from ._prompt import add_prompt_parser

    add_prompt_parser(commands)
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
