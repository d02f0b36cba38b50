"""A host that resumes a stored run with its tools: type-checked, never run.

The path ``docs/stores.md`` recommends: rebuild the run's recorder from the
journal the store holds, build its gatekeeper over that recorder, and pass
the recorder as ``tools=``. ``mypy --strict`` must accept it as written, with
no cast: ``ToolRecorder.from_records`` returns the class it is called on.
"""

from __future__ import annotations

from typing import assert_type

import diagnosis_core as dc
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct


def resume(
    store: dcj.JournalStore,
    request: dc.DiagnosisRequest,
    planner: dc.AgentInvoker,
    executor: dc.AgentInvoker,
    verifier: dc.AgentInvoker,
    composer: dc.AgentInvoker,
) -> dc.DiagnosisResult:
    stored = store.load(request.run.run_id)
    records = [] if stored is None else dcj.journal_tool_records(stored.journal)
    tools = dct.ToolRecorder.from_records(records)
    assert_type(tools, dct.ToolRecorder)
    gatekeeper: dc.Gatekeeper = dct.ToolRecorder.from_records(records).gatekeeper()
    effects = dc.Effects(
        planner=planner,
        executor=executor,
        verifier=verifier,
        composer=composer,
        gatekeeper=tools.gatekeeper(),
    )
    state = dc.run_diagnosis(request, effects, store=store, tools=tools)
    assert gatekeeper is not None
    return state.result


def keep_head(text: str) -> dcj.JournalHead:
    head = dcj.JournalHead.from_json(text)  # alternate constructors return their class
    assert_type(head, dcj.JournalHead)
    return head
