"""Helpers of the LangGraph journal tests: recording effects, forged checkpoints, a fork server,
and a throwaway PostgreSQL server.

Imports LangGraph only inside functions, so the kill child can import this
module before it forks.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import glob
import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.machine as dcm

KILL_POINTS = ("before", "during", "after")
CHILD_SCRIPT = Path(__file__).resolve().parent / "langgraph_kill_child.py"


def die() -> None:
    """SIGKILL this process: no cleanup, no flush, no atexit (a power cut, for a process)."""
    os.kill(os.getpid(), signal.SIGKILL)


def _append_fsync(path: str, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as side:
        side.write(json.dumps(record) + "\n")
        side.flush()
        os.fsync(side.fileno())


def _append_line(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def side_records(path: str | Path) -> list[dict[str, Any]]:
    """Every effect call recorded in the side file, in call order."""
    if not Path(path).exists():
        return []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line]


def side_counts(path: str | Path) -> dict[str, int]:
    counts = {name: 0 for name in ("planner", "executor", "gatekeeper", "verifier", "composer")}
    counts.update({name: 0 for name in ("supervisor", "reporter")})
    for record in side_records(path):
        counts[record["call"]] += 1
    return counts


def _recorder_of(
    side: str, kill: tuple[str, int, str] | None
) -> Callable[[str, str], None]:
    """``enter(call, digest)``: count, record (append + fsync) and maybe die at ``kill``."""
    seen: dict[str, int] = {}

    def enter(call: str, digest: str) -> None:
        index = seen.get(call, 0)
        seen[call] = index + 1
        at = kill[2] if kill is not None and kill[:2] == (call, index) else None
        if at == "before":
            die()
        _append_fsync(side, {"call": call, "input_sha256": digest, "pid": os.getpid()})
        if at == "during":
            die()
        if at == "stall":
            Path(side + ".stalled").write_text(str(os.getpid()), encoding="utf-8")
            time.sleep(120)  # holds the thread until the test kills this process

    return enter


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def recording_effects(
    doc: dict[str, Any], side: str, kill: tuple[str, int, str] | None = None
) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    """Scripted effects of ``doc`` that append every call to ``side`` (append + fsync).

    ``kill`` = ``(call, index, point)``: SIGKILL this process at the
    ``index``-th call (0-based) of ``call``, ``before`` it is recorded or
    ``during`` it (recorded, not yet returned); ``stall`` records it and
    sleeps (the test kills the process). ``after`` is the saver's business
    (:func:`kill_after_checkpoint`).
    """
    scenario = dc.load_scenario(doc)
    request, effects = dc.scenario_request(scenario), dc.scenario_effects(scenario)
    enter = _recorder_of(side, kill)

    def agent(name: dcm.AgentName) -> dc.AgentInvoker:
        inner = effects.agent(name)

        def call(input: str, config: dc.RunConfig, /) -> str:
            enter(name.value, _digest(input))
            return inner(input, config)

        return call

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        enter("gatekeeper", _digest(run_id))
        return effects.gatekeeper(run_id, output)

    wrapped = dc.Effects(
        planner=agent(dcm.AgentName.PLANNER),
        executor=agent(dcm.AgentName.EXECUTOR),
        verifier=agent(dcm.AgentName.VERIFIER),
        composer=agent(dcm.AgentName.COMPOSER),
        gatekeeper=gatekeeper,
    )
    return request, wrapped


def recording_aiops_effects(
    doc: dict[str, Any], side: str, kill: tuple[str, int, str] | None = None
) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    """:func:`recording_effects` for an AIOps scenario (its four agents).

    A scripted double answers its calls in order, so a process that resumes
    a run would start its script again. These agents answer as the
    uninterrupted run was answered: the n-th answered call with an input gets
    that run's n-th outcome for it, n counted in ``<side>.answers`` across
    processes (a call killed before it answered does not count: its re-send
    gets the same outcome).
    """
    scenario = dca.load_aiops_scenario(doc)
    request = dca.aiops_scenario_request(scenario)
    scripted = dca.aiops_scenario_effects(scenario)
    outcomes: dict[tuple[str, str], list[tuple[str | None, BaseException | None]]] = {}

    def learning(name: str) -> dc.AgentInvoker:
        inner = getattr(scripted, name)

        def call(input: str, config: dc.RunConfig, /) -> str:
            try:
                reply = str(inner(input, config))
            except Exception as error:
                outcomes.setdefault((name, input), []).append((None, error))
                raise
            outcomes.setdefault((name, input), []).append((reply, None))
            return reply

        return call

    dca.run_aiops(request, dca.AiOpsEffects(*(learning(n) for n in _AIOPS_AGENTS)))
    enter = _recorder_of(side, kill)
    answered = Path(side + ".answers")

    def agent(name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            digest = _digest(input)
            enter(name, digest)
            line = f"{name} {digest}"
            done = answered.read_text("utf-8").splitlines() if answered.exists() else []
            known = outcomes[(name, input)]
            reply, error = known[min(done.count(line), len(known) - 1)]
            _append_line(str(answered), line)
            if error is not None:
                raise error
            assert reply is not None
            return reply

        return call

    wrapped = dca.AiOpsEffects(
        supervisor=agent("supervisor"),
        planner=agent("planner"),
        executor=agent("executor"),
        reporter=agent("reporter"),
        classifier=scripted.classifier,
    )
    return request, wrapped


_AIOPS_AGENTS = ("supervisor", "planner", "executor", "reporter")


def kill_after_input_checkpoint(saver: Any) -> None:
    """Make ``saver`` SIGKILL the process right after LangGraph saved a run's input checkpoint.

    That is the instant between ``invoke`` storing the input (on its
    ``__start__`` channel) and step 0 copying the request into the state.
    """
    put = saver.put

    def put_then_die(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        result = put(config, checkpoint, metadata, new_versions)
        if metadata.get("source") == "input":
            die()
        return result

    saver.put = put_then_die


def entry_calls(texts: list[str]) -> list[tuple[str, str]]:
    """``(call, state)`` of each entry text of a graph's journal."""
    return [(json.loads(text)["call"], json.loads(text)["state"]) for text in texts]


def kill_after_checkpoint(saver: Any, call: str, index: int) -> None:
    """Make ``saver`` SIGKILL the process right after writing the checkpoint that holds the
    ``index``-th finished entry of ``call`` as the journal's last entry."""
    put = saver.put

    def put_then_die(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        result = put(config, checkpoint, metadata, new_versions)
        texts = checkpoint.get("channel_values", {}).get("journal") or []
        calls = entry_calls(list(texts))
        finished = [c for c, state in calls if c == call and state == "finished"]
        if calls and calls[-1] == (call, "finished") and len(finished) == index + 1:
            die()
        return result

    saver.put = put_then_die


# --- forged checkpoints ----------------------------------------------------------------


def forge_checkpoint(saver: Any, thread_id: str, edit: Callable[[list[str]], list[str]]) -> None:
    """Write a new latest checkpoint of ``thread_id`` whose journal is ``edit(journal)``.

    Straight through the saver API (any saver), as an attacker with write
    access to the checkpoint store would; nothing of the graph runs.
    """
    from langgraph.checkpoint.base.id import uuid6

    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    saved = saver.get_tuple(config)
    assert saved is not None, thread_id
    checkpoint = copy.deepcopy(saved.checkpoint)
    checkpoint["channel_values"]["journal"] = edit(list(checkpoint["channel_values"]["journal"]))
    version = saver.get_next_version(checkpoint["channel_versions"]["journal"], None)
    checkpoint["channel_versions"]["journal"] = version
    checkpoint["id"] = str(uuid6())
    saver.put(saved.config, checkpoint, saved.metadata, {"journal": version})


def edit_entry(
    index: int, change: Callable[[dict[str, Any]], None]
) -> Callable[[list[str]], list[str]]:
    """An edit of entry ``index`` (negative from the end) of a journal list, kept ASCII JSON."""

    def edit(texts: list[str]) -> list[str]:
        wire = json.loads(texts[index])
        change(wire)
        texts[index] = json.dumps(wire, ensure_ascii=True, separators=(",", ":"))
        return texts

    return edit


# --- the fork server ---------------------------------------------------------------------


class ForkServer:
    """A child process that imports LangGraph once, then forks one process per job.

    Starting Python and importing LangGraph costs seconds on a loaded machine;
    a fork costs milliseconds, and every job is still its own process, killed
    with SIGKILL at its chosen point.
    """

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        ready = self._read()
        assert ready == {"ready": True}, ready

    def _read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server exited with {self.process.wait()}")
        return json.loads(line)

    def run(self, *jobs: dict[str, Any]) -> list[dict[str, Any]]:
        """Run the jobs in concurrent child processes; each one's exit ``code`` / ``signal``."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jobs": list(jobs)}) + "\n")
        self.process.stdin.flush()
        outcomes: list[dict[str, Any]] = self._read()
        return outcomes

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck server
            self.process.kill()
            self.process.wait()


# --- a throwaway PostgreSQL server ----------------------------------------------------------


def postgres_binaries() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: the newest Debian server, else PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version_key(path: str) -> tuple[int, ...]:
    version = Path(path).parent.parent.name
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _free_port() -> int:
    from adapter_support import free_port  # this xdist worker's own block of ports

    return free_port()


def _as_server_user(command: list[str]) -> list[str]:
    """As root, initdb refuses to run: run the server as the ``postgres`` system user."""
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser")
    if runuser is not None:
        return [runuser, "-u", "postgres", "--", *command]
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(command)]  # pragma: no cover


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh PostgreSQL cluster on 127.0.0.1 and a free port; yields a conninfo string.

    ``LookupError`` when no server binary exists, or (as root) no ``postgres``
    user to run it as.
    """
    binaries = postgres_binaries()
    if binaries is None:
        raise LookupError("no PostgreSQL server binaries (initdb) found")
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise LookupError("running as root and there is no postgres user") from None
    root = Path(tempfile.mkdtemp(prefix="diagnosis-pg-"))
    data, log = root / "data", root / "server.log"
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    os.chmod(root, 0o700)
    port = _free_port()
    pg_ctl = str(binaries / "pg_ctl")
    try:
        subprocess.run(
            _as_server_user(["cp", "-a", str(_initialized_cluster(binaries, owner)), str(data)]),
            check=True, capture_output=True, timeout=120,
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w",
                             "-t", "60", "start"]),
            check=True, capture_output=True, timeout=90,
        )
        admin = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
        database = f"diagnosis_{uuid.uuid4().hex[:8]}"
        _create_database(admin, database)
        yield f"host=127.0.0.1 port={port} user=postgres dbname={database}"
    finally:
        _stop_postgres(pg_ctl, data)
        shutil.rmtree(root, ignore_errors=True)


_TEMPLATE: list[Path] = []  # this process's initialized, never started, data directory


def _initialized_cluster(binaries: Path, owner: pwd.struct_passwd | None) -> Path:
    """A data directory fresh from ``initdb``, made once per process and copied for each server.

    Every server of a test session starts from a copy of the same never-started directory,
    the bytes ``initdb`` would write again (its system identifier aside): the seconds of
    ``initdb`` are paid once per process, not once per server. Removed at the process's exit.
    """
    if _TEMPLATE and (_TEMPLATE[0] / "PG_VERSION").is_file():
        return _TEMPLATE[0]
    root = Path(tempfile.mkdtemp(prefix="diagnosis-pg-template-"))
    atexit.register(_remove_template, root, os.getpid())
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    os.chmod(root, 0o700)
    data = root / "data"
    subprocess.run(
        _as_server_user([str(binaries / "initdb"), "-D", str(data), "-A", "trust",
                         "-U", "postgres", "-E", "UTF8", "--no-sync"]),
        check=True, capture_output=True, timeout=120,
    )
    _TEMPLATE[:] = [data]
    return data


def _remove_template(root: Path, creator: int) -> None:
    if os.getpid() == creator:  # not in a child forked from the creator that exits normally
        shutil.rmtree(root, ignore_errors=True)


def _stop_postgres(pg_ctl: str, data: Path) -> None:
    """Stop the cluster within a minute, whatever state the test left it in.

    ``pg_ctl stop -m immediate`` first; should it not return in time, the postmaster (its
    pid in ``postmaster.pid``, if that still exists) is killed: no server outlives a test.
    """
    try:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "-t", "30",
                             "stop"]),
            check=False, capture_output=True, timeout=60,
        )
        return
    except subprocess.TimeoutExpired:
        pass
    try:
        pid = int((data / "postmaster.pid").read_text(encoding="ascii").split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _create_database(admin: str, name: str) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'CREATE DATABASE "{name}"')
                return
        except psycopg.OperationalError:  # pragma: no cover - the server is still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# --- checkpoint size ---------------------------------------------------------------------


def doc_with_executor_output(doc: dict[str, Any], size: int) -> dict[str, Any]:
    """``doc`` whose executor reply carries ``size`` more characters (in a hypothesis)."""
    doc = copy.deepcopy(doc)
    output = json.loads(doc["responses"]["executor"][0]["text"])
    output["hypotheses"][0]["missing_evidence"] = "x" * size
    doc["responses"]["executor"][0]["text"] = json.dumps(output)
    return doc


def sqlite_saver_bytes(connection: Any, thread_id: str) -> int:
    """Bytes the SQLite saver's tables hold for ``thread_id`` (checkpoints, metadata, writes)."""
    checkpoints = connection.execute(
        "SELECT coalesce(sum(length(checkpoint)) + sum(length(metadata)), 0) "
        "FROM checkpoints WHERE thread_id = ?", (thread_id,),
    ).fetchone()[0]
    writes = connection.execute(
        "SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?", (thread_id,)
    ).fetchone()[0]
    return int(checkpoints) + int(writes)


def postgres_saver_bytes(conninfo: str, thread_id: str) -> int:
    """Bytes the PostgreSQL saver's tables hold for ``thread_id`` (checkpoints, blobs, writes)."""
    import psycopg

    with psycopg.connect(conninfo) as connection:
        row = connection.execute(
            "SELECT (SELECT coalesce(sum(octet_length(checkpoint::text)"
            " + octet_length(metadata::text)), 0) FROM checkpoints WHERE thread_id = %(t)s)"
            " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs"
            " WHERE thread_id = %(t)s)"
            " + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes"
            " WHERE thread_id = %(t)s)",
            {"t": thread_id},
        ).fetchone()
    assert row is not None
    return int(row[0])


# --- file-backed tools (the kill matrix) ---------------------------------------------------


def file_tools(path: str) -> Any:
    """The run recorders of a job whose tools log each performed call to ``path``."""
    import diagnosis_core.tools as dct

    return dct.RunRecorders()


def tool_lines(path: str | Path) -> list[str]:
    """The tool calls actually performed (one line each, across processes)."""
    return Path(path).read_text(encoding="utf-8").splitlines() if Path(path).exists() else []


def _logged_tool(
    log: str, tool_kill: list[Any] | None, answer: Callable[[str], dict[str, Any]]
) -> Callable[[str], dict[str, Any]]:
    """A tool that logs each call (append + fsync); SIGKILL ``before``/``during`` call N."""
    count = [0]

    def tool(argument: str) -> dict[str, Any]:
        index = count[0]
        count[0] += 1
        point = tool_kill[1] if tool_kill is not None and tool_kill[0] == index else None
        if point == "before":
            die()
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"tool {argument} pid={os.getpid()}\n")
            out.flush()
            os.fsync(out.fileno())
        if point == "during":
            die()
        return answer(argument)

    return tool


def _after(
    recorded: Callable[[str], dict[str, Any]], tool_kill: list[Any] | None
) -> Callable[[str], dict[str, Any]]:
    """SIGKILL right after call N returned and was recorded (``after``)."""
    count = [0]

    def call(argument: str) -> dict[str, Any]:
        index = count[0]
        count[0] += 1
        result = recorded(argument)
        if tool_kill is not None and tool_kill == [index, "after"]:
            die()
        return result

    return call


def tooled_chat(effects: Any, recorders: Any, log: str, tool_kill: list[Any] | None) -> Any:
    """Chat effects whose executor calls two logged tools and cites them honestly; the
    gatekeeper is the reference gatekeeper over the run's ledger."""
    import attrs
    from tools_support import honest_evidence, query_logs

    tool = _logged_tool(log, tool_kill, query_logs)

    def executor(input: str, config: dc.RunConfig, /) -> str:
        effects.executor(input, config)  # recorded in the side file (and maybe killed)
        call = _after(recorders.recorder(config.run_id).wrap("query_logs", tool), tool_kill)
        gateway, service = call("gateway"), call("pay-svc")
        return honest_evidence(gateway["invocation_id"], service["invocation_id"])

    ledger_gatekeeper = recorders.gatekeeper()

    def gatekeeper(run_id: str, output: dc.ExecutorEvidence, /) -> object:
        effects.gatekeeper(run_id, output)  # recorded in the side file (and maybe killed)
        return ledger_gatekeeper(run_id, output)

    return attrs.evolve(effects, executor=executor, gatekeeper=gatekeeper)


def tooled_aiops(effects: Any, recorders: Any, log: str, tool_kill: list[Any] | None) -> Any:
    """AIOps effects whose executor calls two logged tools before answering."""
    import attrs

    tool = _logged_tool(log, tool_kill, lambda name: {"p99": 3.4, "metric": name})
    inner = effects.executor

    def executor(input: str, config: dc.RunConfig, /) -> str:
        call = _after(recorders.recorder(config.run_id).wrap("query_metrics", tool), tool_kill)
        call("latency")
        call("errors")
        return str(inner(input, config))

    return attrs.evolve(effects, executor=executor)


@contextlib.contextmanager
def postgres_server_url() -> Iterator[str]:
    """:func:`postgres_server` as a ``postgresql://`` URL (what DBOS takes), same lifetime."""
    with postgres_server() as conninfo:
        fields = dict(item.split("=", 1) for item in conninfo.split())
        yield f"postgresql://{fields['user']}@{fields['host']}:{fields['port']}/{fields['dbname']}"
