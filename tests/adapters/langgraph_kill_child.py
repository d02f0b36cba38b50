"""Fork server of the LangGraph kill tests: one process per job, each may SIGKILL itself.

Reads one JSON line per batch from stdin: ``{"jobs": [job, ...]}``; forks one
child per job (all at once, so two jobs are two concurrent workers), waits
for all, and answers one JSON line: each child's exit ``code`` and ``signal``.

A job: ``doc`` (a §9 scenario), ``thread``, ``saver`` (``{"sqlite": path}``
or ``{"postgres": conninfo}``), ``side`` (the side file every effect call is
appended to), ``kill`` (``[call, index, point]`` or null), ``key`` (hex or
null), ``op`` (``run`` or ``resume``) and ``out`` (where a child that
finishes writes the result JSON, or its traceback).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import langgraph_support as support

# Imported before any fork, so each child starts in milliseconds.
from langgraph.checkpoint.sqlite import SqliteSaver

import diagnosis_core as dc
from diagnosis_core.adapters import langgraph as adapter
from diagnosis_core.adapters import langgraph_aiops as aiops_adapter

with contextlib.suppress(ImportError):
    import langgraph.checkpoint.postgres  # noqa: F401
    import psycopg  # noqa: F401


@contextlib.contextmanager
def open_saver(saver: dict[str, str]) -> Iterator[Any]:
    if "sqlite" in saver:
        with SqliteSaver.from_conn_string(saver["sqlite"]) as opened:
            yield opened
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(saver["postgres"]) as opened:
        yield opened


def run_job(job: dict[str, Any]) -> None:
    kill = tuple(job["kill"]) if job.get("kill") else None
    effect_kill = kill if kill and kill[2] not in ("after", "input") else None
    aiops = job.get("workflow") == "aiops"
    record = support.recording_aiops_effects if aiops else support.recording_effects
    request, effects = record(job["doc"], job["side"], effect_kill)  # type: ignore[arg-type]
    key = bytes.fromhex(job["key"]) if job.get("key") else None
    tools = support.file_tools(job["tools"]) if job.get("tools") else None
    with open_saver(job["saver"]) as saver:
        if kill is not None and kill[2] == "after":
            support.kill_after_checkpoint(saver, kill[0], kill[1])
        if kill is not None and kill[2] == "input":
            support.kill_after_input_checkpoint(saver)
        if aiops:
            if tools is not None:
                effects = support.tooled_aiops(effects, tools, job["tools"], job.get("tool_kill"))
            graph: Any = aiops_adapter.build_aiops_graph(
                effects, checkpointer=saver, key=key, tools=tools
            )
            run, resume = aiops_adapter.run_aiops_graph, aiops_adapter.resume_aiops_graph
        else:
            if tools is not None:
                effects = support.tooled_chat(effects, tools, job["tools"], job.get("tool_kill"))
            graph = adapter.build_diagnosis_graph(
                effects, checkpointer=saver, key=key, tools=tools,
                resend_gatekeeper=bool(job.get("resend_gatekeeper")),
            )
            run, resume = adapter.run_diagnosis_graph, adapter.resume_diagnosis_graph
        if job["op"] == "run":
            state = run(graph, request, thread_id=job["thread"])
        else:
            state = resume(graph, thread_id=job["thread"])
    Path(job["out"]).write_text(
        json.dumps({"result": dc.to_json(state.result), "calls": dc.to_wire(state.calls)}),
        encoding="utf-8",
    )


def child(job: dict[str, Any]) -> None:
    code = 0
    try:
        run_job(job)
    except BaseException:
        Path(job["out"]).write_text(json.dumps({"error": traceback.format_exc()}), "utf-8")
        code = 1
    finally:
        os._exit(code)


def main() -> None:
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        jobs = json.loads(line)["jobs"]
        pids = []
        for job in jobs:
            pid = os.fork()
            if pid == 0:
                child(job)
            pids.append(pid)
        outcomes = []
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            outcomes.append(
                {
                    "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                    "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                }
            )
        print(json.dumps(outcomes), flush=True)


if __name__ == "__main__":
    main()
