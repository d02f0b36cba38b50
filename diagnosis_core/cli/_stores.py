"""The ``diagnosis-core`` commands on a journal store (spec §16).

* ``run [--json] --store URL SCENARIO`` records the run in the store (or
  resumes it when the store holds it) and prints exactly what ``run`` prints
  without ``--store``;
* ``runs ls --store URL [--session ID] [--json]`` lists the stored runs;
* ``runs resume RUN_ID --store URL [--scenario FILE] [--json]`` resumes a
  stored chat run with the scenario's scripted effects (each agent's
  responses continue after those the journal already used); without a
  scenario, a complete run is folded and its result printed;
* ``sessions show SESSION --store URL [--json]`` prints a session report;
* ``report --store URL [--since T] [--json] [--html PATH]`` the fleet report;
  ``--html DIR`` writes linked pages (``index.html``, ``sessions/…``,
  ``runs/…``), ``--html FILE.html`` the fleet page alone.

``--payload-key-file FILE`` (every store command) opens an encrypted store
with the AES-GCM key that is the file's bytes (``AesGcmCodec``, extra
``crypto``). A listing shows a run the store cannot give back as ``invalid``
with the reason and goes on. A store that cannot be opened or used is exit
status 2 with one line naming the problem, like any other bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .. import DiagnosisError, JournalError, ScenarioError, to_json
from .._kernel.terminal import terminal_safe
from ..protocol import canonical_json
from ._io import journal_key, payload_key, write, write_readable, write_result

if TYPE_CHECKING:
    from ..journal import JournalStore
    from ..stores import PayloadCodec
    from ..stores._summary import SummaryMismatch

__all__ = ["add_store_commands", "open_cli_store", "run_batch_with_store", "run_with_store"]

_USAGE = 2


def _fail(message: str) -> int:
    sys.stderr.write(terminal_safe(f"diagnosis-core: {message}\n"))
    return _USAGE


def _codec(args: argparse.Namespace) -> PayloadCodec | None:
    """The payload codec ``--payload-key-file`` names (None without it); ScenarioError if bad."""
    key = payload_key(getattr(args, "payload_key_file", None))
    if key is None:
        return None
    from ..journal import StoreError
    from ..stores import AesGcmCodec

    try:
        return AesGcmCodec(key)
    except StoreError as error:
        raise ScenarioError(f"--payload-key-file {args.payload_key_file}: {error}") from None


def open_cli_store(args: argparse.Namespace, *, create: bool = False) -> JournalStore:
    """The store of ``--store``, opened with the codec of ``--payload-key-file`` (if given).

    Only the writing commands create a store (``create=True``), never a listing. A bad
    key file is a :class:`ScenarioError`, a store that does not open a
    :class:`StoreError`.
    """
    from ..stores import open_store

    codec = _codec(args)
    return open_store(args.store, codec=codec, create=create)


@contextlib.contextmanager
def _opened(args: argparse.Namespace) -> Iterator[JournalStore]:
    """The command's store, closed when the command is done with it, whatever happened."""
    store = open_cli_store(args)
    try:
        yield store
    finally:
        store.close()


def _store_problem(error: DiagnosisError) -> str:
    """The one line for a failed store command.

    A :class:`ScenarioError` is a bad option (``--journal-key-file``,
    ``--payload-key-file``, ``--since``) and names itself; every other error
    came from the store.
    """
    return str(error) if isinstance(error, ScenarioError) else f"store: {error}"


def _key(args: argparse.Namespace) -> bytes | None:
    return journal_key(getattr(args, "journal_key_file", None))


def run_with_store(args: argparse.Namespace, data: object, key: bytes | None) -> int:
    """``run --store URL``: the scenario ``data`` recorded in (or resumed from) the store."""
    if args.journal_out is not None:
        return _fail("--journal-out: not with --store (the store holds the journal)")
    try:
        store = open_cli_store(args, create=True)
    except DiagnosisError as error:
        return _fail(_store_problem(error))
    try:
        if isinstance(data, dict) and "workflow" in data:
            return _run_aiops(args, data, store, key)
        from .. import load_scenario, scenario_effects, scenario_request

        scenario = load_scenario(data)
        return _run_chat(args, scenario_request(scenario), scenario_effects(scenario), store, key)
    except ScenarioError as error:
        return _fail(f"invalid scenario: {error}")
    finally:
        store.close()


def _run_chat(
    args: argparse.Namespace, request: Any, effects: Any, store: JournalStore, key: bytes | None,
    *, reasons: bool = False,
) -> int:
    from .. import run_diagnosis

    try:
        problem = _stored_request_problem(store, request)
        if problem is not None:
            return _fail(problem)
        state = run_diagnosis(request, effects, store=store, key=key)
        why = _stored_reasons(store, request.run.run_id, key) if reasons else []
    except DiagnosisError as error:
        return _fail(_run_problem(error))
    if reasons and not args.json:
        write_readable(_format_with_reasons(state.result, why))
    else:
        write_result(args, state.result)
    return 0


def _stored_reasons(store: JournalStore, run_id: str, key: bytes | None) -> list[str]:
    """The failure reasons of the stored run (its story's), as a report gives them."""
    from ..stores import failure_reasons
    from ..stores._story import run_story

    stored = store.load(run_id)
    return [] if stored is None else failure_reasons(run_story(stored, key=key))


def _format_with_reasons(result: Any, reasons: list[str]) -> str:
    """The readable result of ``runs resume``: ``run``'s, its trace table with a message column.

    The message of a step is its trace event's error (a parse error, an
    exception); ``why:`` then lists the run's other failure reasons (a
    gatekeeper's failed bindings, a tool's error).
    """
    from .._kernel.machine.tables import trace_table_lines
    from ..stores._escape import text_line
    from ._io import format_result

    text = format_result(result)
    table = trace_table_lines(result.trace, "round")
    plain = "\n".join(table) + "\n"
    assert text.endswith(plain)
    messages = [event.details.error for event in result.trace]
    if any(messages):
        width = max(len(row) for row in table)
        table = [table[0].ljust(width) + "  message"] + [
            row if message is None else row.ljust(width) + "  " + text_line(message)
            for row, message in zip(table[1:], messages, strict=True)
        ]
    lines = [text[: len(text) - len(plain)].rstrip("\n"), "", *table]
    shown = [f": {message}" for message in messages if message]
    reasons = [reason for reason in reasons if not reason.endswith(tuple(shown))]
    if reasons:
        lines += ["", "why:"] + [f"  {text_line(reason)}" for reason in reasons]
    return "\n".join(lines) + "\n"


def _stored_request_problem(store: JournalStore, request: Any) -> str | None:
    """Why the store's run cannot be recorded or resumed with ``request`` (None: it can).

    The store holding the run id with another request is the command line's
    mistake (another scenario), said in its terms before anything runs.
    """
    run_id = request.run.run_id
    stored = store.load(run_id)
    if stored is not None and stored.journal.request != request:
        return (f"run {run_id!r}: the store holds it with another request; the scenario is "
                "not the one that recorded it (give that scenario, or another run id)")
    return None


def _run_problem(error: DiagnosisError) -> str:
    """The one line for a run through a store that failed, in the command line's terms."""
    from ..journal import MissingKeyError

    if isinstance(error, MissingKeyError):
        return (f"store: run {error.run_id!r}: the stored journal is signed (its entries "
                "carry MACs); give its key with --journal-key-file FILE to resume it")
    if isinstance(error, JournalError):
        return f"invalid journal in the store: {error}"
    return f"store: {error}"


def _run_aiops(
    args: argparse.Namespace, data: object, store: JournalStore, key: bytes | None
) -> int:
    from .._aiops.replay import format_aiops_result
    from ..aiops import (
        aiops_replay_output,
        aiops_scenario_effects,
        aiops_scenario_request,
        evaluate_aiops_run,
        load_aiops_scenario,
        run_aiops,
    )

    scenario = load_aiops_scenario(data)
    request = aiops_scenario_request(scenario)
    try:
        problem = _stored_request_problem(store, request)
        if problem is not None:
            return _fail(problem)
        state = run_aiops(request, aiops_scenario_effects(scenario), store=store, key=key)
    except DiagnosisError as error:
        return _fail(_run_problem(error))
    if args.json:
        write(canonical_json(aiops_replay_output(scenario, state)) + "\n")
    else:
        evaluation = evaluate_aiops_run(state, scenario.tool_ledger)
        write_readable(format_aiops_result(state.result, evaluation, scenario.config))
    return 0


# --- run --json --batch --store ----------------------------------------------------------


def run_batch_with_store(args: argparse.Namespace, lines: Iterator[bytes]) -> int:
    """``run --json --batch --store URL``: every scenario line recorded in the store.

    Each line gives the result line ``run --json --batch`` prints without the
    store (the run is recorded, or resumed or folded when the store holds
    it); a line the command refuses gives ``{"error": MESSAGE}`` and the
    batch goes on. A journal or resume document is not a run to record: it
    is refused (run it without ``--store``). A store that does not open is
    exit status 2 before any line is read.
    """
    try:
        key = _key(args)
        store = open_cli_store(args, create=True)
    except DiagnosisError as error:
        return _fail(_store_problem(error))
    try:
        for raw in lines:
            try:
                text = raw.decode("utf-8-sig").strip("\r\n")
            except UnicodeDecodeError as error:
                line: dict[str, Any] = {"error": f"invalid scenario: not UTF-8 ({error.reason})"}
            else:
                if not text.strip():
                    continue
                line = _batch_line(text, store, key)
            write(canonical_json(line) + "\n")
    finally:
        store.close()
    return 0


def _batch_line(text: str, store: JournalStore, key: bytes | None) -> dict[str, Any]:
    from .. import load_scenario, run_diagnosis, scenario_effects, scenario_request, to_wire
    from ..aiops import (
        aiops_replay_output,
        aiops_scenario_effects,
        aiops_scenario_request,
        load_aiops_scenario,
        run_aiops,
    )
    from ..scenarios import parse_document_text

    try:
        data = parse_document_text(text, "<document>")
        if isinstance(data, dict) and "format" in data:
            return {"error": "--store: a journal or resume document is replayed, not recorded "
                    "(run it without --store)"}
        if isinstance(data, dict) and "workflow" in data:
            scenario: Any = load_aiops_scenario(data)
            request: Any = aiops_scenario_request(scenario)
        else:
            scenario = load_scenario(data)
            request = scenario_request(scenario)
    except ScenarioError as error:
        return {"error": f"invalid scenario: {error}"}
    try:
        problem = _stored_request_problem(store, request)
        if problem is not None:
            return {"error": problem}
        if isinstance(data, dict) and "workflow" in data:
            aiops = run_aiops(request, aiops_scenario_effects(scenario), store=store, key=key)
            output: dict[str, Any] = aiops_replay_output(scenario, aiops)
            return output
        state = run_diagnosis(request, scenario_effects(scenario), store=store, key=key)
    except DiagnosisError as error:
        return {"error": _run_problem(error)}
    wire = to_wire(state.result)
    assert isinstance(wire, dict)
    return wire


# --- runs ls / runs resume ---------------------------------------------------------------


def _fold_problem(stored: Any, key: bytes | None) -> tuple[str, str | None]:
    """A loaded run's status and, when ``invalid``, why (its journal does not fold or verify)."""
    from ..journal import journal_status

    try:
        complete = journal_status(stored.journal, key=key).complete
    except JournalError as error:
        return "invalid", str(error)
    return ("complete" if complete else "incomplete"), None


def _runs_ls(args: argparse.Namespace) -> int:
    from ..stores._escape import text_line
    from ..stores._session import listed_runs

    rows: list[dict[str, Any]] = []
    try:
        key = _key(args)
        with _opened(args) as store:
            for summary, stored, problem in listed_runs(store, session_id=args.session):
                status = "invalid"
                if stored is not None:
                    status, problem = _fold_problem(stored, key)
                rows.append({
                    "run_id": summary.run_id, "session_id": summary.session_id,
                    "workflow": "aiops" if summary.format.startswith("aiops_journal_")
                    else "chat",
                    "created_at": summary.created_at, "entries": summary.entry_count,
                    "status": status, "problem": problem,
                })
    except DiagnosisError as error:
        return _fail(_store_problem(error))
    if args.json:
        write(canonical_json({"format": "diagnosis_run_list_v1", "runs": rows}) + "\n")
        return 0
    lines = [f"{'run':<32} {'session':<24} {'workflow':<8} {'entries':>7} status"]
    for row in rows:
        lines.append(
            f"{text_line(row['run_id']):<32} {text_line(row['session_id']):<24} "
            f"{row['workflow']:<8} {row['entries']:>7} {row['status']}"
        )
        if row["problem"] is not None:
            lines.append(f"  problem: {text_line(row['problem'])}")
    write_readable("\n".join(lines) + "\n")
    return 0


def _consumed(journal: Any) -> dict[str, int]:
    """How many scripted outcomes of each effect the stored journal has used already.

    A finished entry used one; an interrupted executor or gatekeeper call too
    (the resume rule completes it as a failure); an interrupted LLM call is
    re-sent with the same input and uses its response again.
    """
    used: dict[str, int] = {}
    for entry in journal.entries:
        started = entry.state.value == "started"
        if not started or entry.call.value in ("executor", "gatekeeper"):
            used[entry.call.value] = used.get(entry.call.value, 0) + 1
    return used


def _runs_resume(args: argparse.Namespace) -> int:
    """Resume a stored chat run; without ``--scenario`` only a complete run (folded, printed)."""
    from .. import load_scenario, scenario_request
    from ._io import read_scenario_file

    scenario = None
    try:
        key = _key(args)
        if args.scenario is not None:
            data = read_scenario_file(args.scenario)
            if isinstance(data, dict) and "workflow" in data:
                return _fail("runs resume: only a chat scenario can be resumed from the "
                             "command line")
            scenario = load_scenario(data)
    except ScenarioError as error:
        return _fail(f"invalid scenario: {error}")
    if scenario is not None and scenario_request(scenario).run.run_id != args.run_id:
        return _fail(f"--scenario: its run is {scenario_request(scenario).run.run_id!r}, "
                     f"not {args.run_id!r}")
    try:
        store = open_cli_store(args, create=True)
    except DiagnosisError as error:
        return _fail(_store_problem(error))
    try:
        return _resume_stored(args, store, scenario, key)
    except DiagnosisError as error:
        return _fail(f"store: {error}")
    finally:
        store.close()


def _resume_stored(
    args: argparse.Namespace, store: JournalStore, scenario: Any, key: bytes | None
) -> int:
    """``runs resume`` once the store is open: check the run and the scenario, then run."""
    import attrs

    from .. import scenario_effects, scenario_request

    stored = store.load(args.run_id)
    if stored is None:
        return _fail(f"run {args.run_id!r}: not in the store")
    if not stored.format.startswith("diagnosis_journal_"):
        return _fail("runs resume: only a chat run can be resumed from the command line")
    if scenario is None:
        if _fold_problem(stored, key)[0] != "complete":
            return _fail(f"run {args.run_id!r}: has not ended; give --scenario FILE "
                         "to perform the remaining calls with its scripted effects")
        return _run_chat(args, stored.journal.request, _no_effects(), store, key, reasons=True)
    if scenario_request(scenario) != stored.journal.request:
        return _fail(f"--scenario {args.scenario}: its request is not the one run "
                     f"{args.run_id!r} was recorded with (give the scenario that recorded it)")
    used = _consumed(stored.journal)
    responses = {agent: scenario.responses[agent][used.get(agent.value, 0):]
                 for agent in scenario.responses}
    resumed = attrs.evolve(scenario, responses=responses,
                           gatekeeper=scenario.gatekeeper[used.get("gatekeeper", 0):])
    return _run_chat(args, scenario_request(scenario), scenario_effects(resumed), store, key,
                     reasons=True)


def _no_effects() -> Any:
    """Effects for a complete run: folding it performs none (each would fail closed)."""
    from .. import Effects
    from ..scenarios import ScriptedAgent, ScriptedGatekeeper

    return Effects(planner=ScriptedAgent(()), executor=ScriptedAgent(()),
                   verifier=ScriptedAgent(()), composer=ScriptedAgent(()),
                   gatekeeper=ScriptedGatekeeper(()))


# --- sessions show / report ----------------------------------------------------------------


def _sessions_show(args: argparse.Namespace) -> int:
    from ..stores import session_report, verify_summaries
    from ..stores._session import format_session_report

    try:
        key = _key(args)
        with _opened(args) as store:
            report = session_report(store, args.session, key=key)
            mismatches = (verify_summaries(store, session_id=args.session, key=key)
                          if args.verify else ())
    except DiagnosisError as error:
        return _fail(_store_problem(error))
    if args.json:
        write(to_json(report) + "\n")
    else:
        write_readable(format_session_report(report))
    return _verified(mismatches)


def _verified(mismatches: Sequence[SummaryMismatch]) -> int:
    """``--verify``: every summary that disagrees with its journal on stderr; 1 when any does."""
    for mismatch in mismatches:
        sys.stderr.write(terminal_safe(
            f"diagnosis-core: summary disagrees: {mismatch.problem}\n"))
    return 1 if mismatches else 0


def _since(text: str | None) -> float | None:
    """``--since``: seconds since the epoch, or an ISO 8601 time (UTC when no offset is given).

    Only a finite time: ``nan``, ``inf`` or ``1e400`` (an infinity once read)
    is refused, so the filter means the same in every store.
    """
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise ScenarioError(f"--since {text!r}: expected a finite time")
        return seconds
    try:
        moment = datetime.datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        return moment.timestamp()
    except (ValueError, OverflowError):
        raise ScenarioError(
            f"--since {text!r}: expected seconds since the epoch or an ISO 8601 time"
        ) from None


def _html_target(path: str) -> str:
    """What ``--html PATH`` writes: ``page`` (one file) or ``folder`` (the linked pages).

    A path ending in ``.html`` or ``.htm`` that is not a folder is the one
    fleet page, as before; any other path is a folder of pages.
    """
    if os.path.isdir(path):
        return "folder"
    return "page" if path.lower().endswith((".html", ".htm")) else "folder"


def _report(args: argparse.Namespace) -> int:
    from ..stores import (
        fleet_report,
        fleet_report_html,
        session_report,
        verify_summaries,
    )
    from ..stores._fleet import format_fleet_report
    from ..stores._pages import write_page, write_report_pages

    target = None if args.html is None else _html_target(args.html)
    sessions: list[Any] = []
    try:
        key = _key(args)
        since = _since(args.since)
        with _opened(args) as store:
            report = fleet_report(store, since=since, key=key)
            if target == "folder":
                seen: dict[str, None] = {}
                for summary in store.runs(since=since):
                    seen.setdefault(summary.session_id)
                sessions = [session_report(store, session_id, key=key) for session_id in seen]
            mismatches = verify_summaries(store, since=since, key=key) if args.verify else ()
    except DiagnosisError as error:
        return _fail(_store_problem(error))
    generated_at = time.time()
    if args.html is not None:
        try:
            if target == "folder":
                write_report_pages(args.html, report, sessions, generated_at=generated_at)
            else:
                write_page(args.html, fleet_report_html(report, generated_at=generated_at))
        except OSError as error:
            sys.stderr.write(terminal_safe(
                f"diagnosis-core: cannot write {args.html} ({error.strerror or error})\n"
            ))
            return 1
    if args.json:
        write(to_json(report) + "\n")
    elif args.html is None:
        write_readable(format_fleet_report(report))
    return _verified(mismatches)


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", metavar="URL", required=True,
        help="the journal store: sqlite:///PATH, postgresql://..., or a .jsonl file path",
    )


def _key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--journal-key-file", metavar="FILE",
                        help="host key (the file's bytes): verify the stored journals")
    _payload_key_option(parser)


def _verify_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verify", action="store_true",
                        help="also fold every journal and list each run whose stored summary "
                        "disagrees (exit status 1 if any)")


def _payload_key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--payload-key-file", metavar="FILE",
                        help="the store's payload key (the file's 16, 24 or 32 bytes): open "
                        "an encrypted store (AES-GCM, extra crypto)")


def add_store_commands(commands: Any, run: argparse.ArgumentParser) -> None:
    """Add ``--store`` to ``run`` and the ``runs``, ``sessions`` and ``report`` commands."""
    run.add_argument(
        "--store", metavar="URL",
        help="record the run in this journal store (resume it when the store holds it)",
    )
    _payload_key_option(run)
    runs = commands.add_parser("runs", help="the runs of a journal store")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True,
                                        parser_class=type(run))
    ls = runs_commands.add_parser("ls", help="list the stored runs")
    _store_option(ls)
    _key_option(ls)
    ls.add_argument("--session", metavar="ID", help="only the runs of this session")
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.set_defaults(handler=_runs_ls)
    resume = runs_commands.add_parser(
        "resume", help="resume a stored chat run with a scenario's scripted effects"
    )
    resume.add_argument("run_id", help="the run id")
    _store_option(resume)
    _key_option(resume)
    resume.add_argument("--scenario", metavar="FILE",
                        help="the scenario whose scripted effects perform the remaining calls "
                        "(without it, only a complete run is folded and printed)")
    resume.add_argument("--json", action="store_true", help="print the result as one JSON object")
    resume.set_defaults(handler=_runs_resume)
    sessions = commands.add_parser("sessions", help="the sessions of a journal store")
    sessions_commands = sessions.add_subparsers(dest="sessions_command", required=True,
                                                parser_class=type(run))
    show = sessions_commands.add_parser("show", help="every run of a session, derived from "
                                        "its journals (spec §16)")
    show.add_argument("session", help="the session id")
    _store_option(show)
    _key_option(show)
    show.add_argument("--json", action="store_true",
                      help="print the diagnosis_session_report_v2 JSON form")
    _verify_option(show)
    show.set_defaults(handler=_sessions_show)
    report = commands.add_parser("report", help="the fleet report of a journal store")
    _store_option(report)
    _key_option(report)
    report.add_argument("--since", metavar="T",
                        help="only runs first stored at or after T (epoch seconds or ISO 8601)")
    report.add_argument("--json", action="store_true",
                        help="print the diagnosis_fleet_report_v1 JSON form")
    report.add_argument("--html", metavar="PATH",
                        help="write the report as self-contained HTML: into the folder PATH "
                        "(index.html, a page per session and per run), or, when PATH ends "
                        "in .html, the fleet page alone")
    _verify_option(report)
    report.set_defaults(handler=_report)
