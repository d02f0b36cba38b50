"""Child of the journal kill matrix: run, or resume, a run whose executor calls tools.

``python journal_kill_child.py JOB_JSON``. A job: ``op`` (``run`` or
``resume``), ``journal`` (the sink's JSON-lines file), ``side`` (the tools'
side file), ``die_at`` (``run``: SIGKILL after the executor's started entry
listing that many finished tool calls is durable), ``key`` (hex or null),
``resend_executor`` (``resume``) and ``out`` (where the result is written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import journal_tools_support as support

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct


def main() -> None:
    job = json.loads(sys.argv[1])
    key = bytes.fromhex(job["key"]) if job.get("key") else None
    journal_path, side = Path(job["journal"]), Path(job["side"])
    request = support.request_of()
    if job["op"] == "run":
        tools = dct.ToolRecorder()
        sink = support.FileSink(journal_path, die_at=job.get("die_at"))
        state = dc.run_diagnosis(
            request, support.effects_with_tools(side, tools), sink=sink, key=key, tools=tools
        )
    else:
        journal = support.read_journal(journal_path)
        tools = dct.ToolRecorder.from_records(dcj.journal_tool_records(journal))
        state = dc.run_diagnosis(
            request,
            support.effects_with_tools(side, tools),
            journal=journal,
            sink=support.FileSink(journal_path),
            key=key,
            tools=tools,
            resend_executor=job["resend_executor"],
        )
    Path(job["out"]).write_text(dc.to_json(state.result), encoding="utf-8")


if __name__ == "__main__":
    main()
