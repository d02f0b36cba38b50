"""The DBOS adapter on a real SQLite system database: parity, tools, traces, SIGKILL recovery.

A run is a DBOS workflow whose steps are its effects; a process killed during
an effect is recovered by a new process, and the §12 resume rule — not DBOS's
at-least-once step retry — says what the interrupted effect becomes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

pytest.importorskip("dbos")

from adapter_support import (
    EXAMPLES_DIR,
    RoutedEffects,
    chat_example_paths,
    load_doc,
    side_lines,
)
from dbos import DBOS
from tools_support import reference_tooled_state, tooled_effects

import diagnosis_core as dc
import diagnosis_core.aiops as dca
import diagnosis_core.journal as dcj
import diagnosis_core.tools as dct
from diagnosis_core.adapters.dbos import (
    configure_diagnosis_dbos,
    dbos_diagnosis_journal,
    run_diagnosis_dbos,
)

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server started for this module, as a DBOS system database URL."""
    pytest.importorskip("psycopg")
    from langgraph_support import postgres_server_url

    try:
        with postgres_server_url() as url:
            yield url
    except LookupError as error:
        pytest.skip(str(error))


def _database(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def system_database(tmp_path: Path) -> Iterator[str]:
    """A launched DBOS on a fresh SQLite system database; destroyed afterwards."""
    url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    yield url
    DBOS.destroy()


def _launch(url: str) -> None:
    DBOS(config={"name": "diagnosis-test", "system_database_url": url})
    DBOS.launch()


def test_every_chat_example_runs_like_the_sync_driver(system_database: str) -> None:
    routed = RoutedEffects()
    requests = [routed.add(load_doc(path)) for path in chat_example_paths()]
    configure_diagnosis_dbos(routed.effects())
    _launch(system_database)
    for path, request in zip(chat_example_paths(), requests, strict=True):
        state = run_diagnosis_dbos(request)
        expected = dc.run_diagnosis(*_scenario(path))
        assert dc.to_json(state) == dc.to_json(expected), path.name
        journal = dbos_diagnosis_journal(f"diagnosis-{request.run.run_id}")
        assert dc.to_json(dcj.fold_journal(journal)) == dc.to_json(state)
        assert dcj.journal_status(journal).complete


def test_each_effect_is_one_step_and_the_start_rides_on_the_step_before_it(
    system_database: str,
) -> None:
    """One engine round-trip per effect: an executor or gatekeeper start writes no step of its own.

    The recorded output of the step before such a call commits its start (the
    kill matrix checks that a resume still fails it closed).
    """
    request, effects = _scenario(EXAMPLES_DIR / "redis_latency_evidence_retry.json")
    configure_diagnosis_dbos(effects)
    _launch(system_database)
    run_diagnosis_dbos(request)
    workflow_id = f"diagnosis-{request.run.run_id}"
    journal = dbos_diagnosis_journal(workflow_id)
    calls = {entry.call for entry in journal.entries}
    assert {dcj.JournalCall.EXECUTOR, dcj.JournalCall.GATEKEEPER} <= calls
    steps = [step["function_name"] for step in DBOS.list_workflow_steps(workflow_id)]
    assert steps == ["diagnosis_core.effect"] * len(journal.entries)  # and no journal copy


@DBOS.workflow(name="tests.not_a_diagnosis")
def _not_a_diagnosis(value: int) -> int:
    return value


def test_the_journal_is_derived_from_the_recorded_facts_and_refuses_altered_ones(
    system_database: str,
) -> None:
    """Nothing but the facts is stored; the journal read back is the sync driver's, or refused.

    A recorded step output changed in the system database (an input hash
    that is not the run's, an outcome no worker records) is a
    :class:`JournalError`, as is a workflow that is not a diagnosis run or
    that DBOS does not hold.
    """
    import base64
    import pickle
    import sqlite3

    path = EXAMPLES_DIR / "redis_latency_evidence_retry.json"
    request, effects = _scenario(path)
    sink = dcj.ListJournalSink()
    dc.run_diagnosis(*_scenario(path), sink=sink)
    configure_diagnosis_dbos(effects)
    _launch(system_database)
    run_diagnosis_dbos(request)
    workflow_id = f"diagnosis-{request.run.run_id}"
    journal = dbos_diagnosis_journal(workflow_id)
    assert dcj.journal_to_wire(journal)["entries"] == (
        dcj.journal_to_wire(sink.journal(request))["entries"]
    )

    with pytest.raises(dc.JournalError, match="DBOS holds no such workflow"):
        dbos_diagnosis_journal("no-such-workflow")
    _not_a_diagnosis(3)
    (other,) = [w.workflow_id for w in DBOS.list_workflows(name="tests.not_a_diagnosis")]
    with pytest.raises(dc.JournalError, match=r"not 'diagnosis_core\.diagnosis'"):
        dbos_diagnosis_journal(other)

    database = system_database.removeprefix("sqlite:///")
    with sqlite3.connect(database) as connection:
        (function_id, output), *_ = connection.execute(
            "SELECT function_id, output FROM operation_outputs WHERE workflow_uuid = ? "
            "AND function_name = 'diagnosis_core.effect' ORDER BY function_id",
            (workflow_id,),
        ).fetchall()
        facts = pickle.loads(base64.b64decode(output))

        def store(changed: dict[str, object]) -> None:
            connection.execute(
                "UPDATE operation_outputs SET output = ? WHERE workflow_uuid = ? "
                "AND function_id = ?",
                (base64.b64encode(pickle.dumps(changed)).decode(), workflow_id, function_id),
            )
            connection.commit()

        store({**facts, "input_sha256": "0" * 64})
        with pytest.raises(dc.JournalError, match="hashing to '0000"):
            dbos_diagnosis_journal(workflow_id)
        store({**facts, "outcome": {"reply": 7}})
        with pytest.raises(dc.JournalError):
            dbos_diagnosis_journal(workflow_id)
        store(facts)
    assert dbos_diagnosis_journal(workflow_id) == journal


def _scenario(path: Path) -> tuple[dc.DiagnosisRequest, dc.Effects]:
    scenario = dc.load_scenario(load_doc(path))
    return dc.scenario_request(scenario), dc.scenario_effects(scenario)


def test_the_executor_entry_carries_its_tools_and_a_restarted_run_is_not_run_twice(
    system_database: str,
) -> None:
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    configure_diagnosis_dbos(effects, tools=recorders)
    _launch(system_database)
    state = run_diagnosis_dbos(request)
    assert dc.to_json(state) == dc.to_json(reference_tooled_state())
    journal = dbos_diagnosis_journal(f"diagnosis-{request.run.run_id}")
    executor = [e for e in journal.entries if e.call is dcj.JournalCall.EXECUTOR]
    assert [[i.invocation_id for i in e.tool_invocations or ()] for e in executor] == [
        ["inv-1", "inv-2"]
    ]
    # Starting the same run again returns the recorded run (no effect performed).
    again = run_diagnosis_dbos(request)
    assert dc.to_json(again) == dc.to_json(state)
    assert [r.invocation_id for r in recorders.recorder(request.run.run_id).records()] == [
        "inv-1", "inv-2",
    ]


def test_an_observer_sees_one_trace_with_tool_spans(system_database: str) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from diagnosis_core.adapters.otel import OpenTelemetryObserver, trace_id_for_run

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    recorders = dct.RunRecorders()
    request, effects = tooled_effects(recorders)
    observer = OpenTelemetryObserver(provider.get_tracer("tests"), activate=False)
    configure_diagnosis_dbos(effects, tools=recorders, observer=observer)
    _launch(system_database)
    state = run_diagnosis_dbos(request)
    assert state.result.outcome is dc.Outcome.ANSWERED
    spans = memory.get_finished_spans()
    assert {s.context.trace_id for s in spans if s.context} == {
        trace_id_for_run(request.run.run_id)
    }
    names = sorted(s.name for s in spans)
    assert names == sorted([
        "invoke_workflow diagnosis", "invoke_agent planner", "invoke_agent executor",
        "execute_tool query_logs", "execute_tool query_logs", "execute_tool gatekeeper",
        "verified_input", "invoke_agent verifier", "invoke_agent composer",
    ])


# --- SIGKILL during an effect, recovered by a new process --------------------------------


def _child(
    url: str, who: str, hang: str, side: Path, tools: Path, schema: str
) -> list[str]:
    return [
        sys.executable, str(HERE / "dbos_process.py"), url, who, hang, str(side), str(tools),
        schema,
    ]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, str(HERE), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("hang", ["executor", "gatekeeper", "verifier"])
def test_a_run_killed_during_an_effect_is_recovered_by_a_new_process(
    tmp_path: Path, hang: str, kind: str, request: pytest.FixtureRequest
) -> None:
    url = _database(kind, tmp_path, request)
    schema = "-" if kind == "sqlite" else f"dbos_{hang}"
    side, tools = tmp_path / "side.log", tmp_path / "tools.log"
    first = subprocess.Popen(
        _child(url, "first", hang, side, tools, schema), env=_environment(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(name == hang for _, _, name in side_lines(side)):
            assert first.poll() is None, "the first process ended before the effect"
            assert time.monotonic() < deadline, "the effect never began"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    second = subprocess.run(
        _child(url, "second", "-", side, tools, schema), env=_environment(),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert second.returncode == 0, second.stderr[-2000:]
    state = dc.from_wire(dc.DiagnosisState, json.loads(second.stdout.strip().splitlines()[-1]))
    calls = [(who, name) for who, _, name in side_lines(side)]
    # No tool is ever performed twice, and the executor is never called again.
    performed = tools.read_text().splitlines() if tools.exists() else []
    assert performed == ([] if hang == "executor" else ["query_logs gateway", "query_logs pay-svc"])
    assert [who for who, name in calls if name == "executor"] == ["first"]
    if hang == "executor":
        assert state.result.reason_code is dc.ReasonCode.EXECUTOR_FAILED
        assert ("second", "gatekeeper") not in calls
    elif hang == "gatekeeper":
        assert state.result.reason_code is dc.ReasonCode.GATEKEEPER_UNAVAILABLE
        assert [who for who, name in calls if name == "gatekeeper"] == ["first"]
    else:  # an LLM call is sent again as the same attempt: the uninterrupted result
        assert dc.to_json(state) == dc.to_json(reference_tooled_state())
        assert [who for who, name in calls if name == "verifier"] == ["first", "second"]


def test_the_worked_example_of_the_adapters_page_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    root = HERE.parent.parent
    page = (root / "docs" / "adapters.md").read_text(encoding="utf-8")
    section = page[page.index("## Worked example: DBOS") :]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    monkeypatch.chdir(root)
    exec(compile(block, "adapters.md", "exec"), {})  # the page's own code
    assert capsys.readouterr().out == "ANSWERED 5\n"


# --- the AIOps workflow ------------------------------------------------------------------


def test_every_aiops_example_runs_like_the_sync_driver(system_database: str) -> None:
    from adapter_support import EXAMPLES_DIR

    import diagnosis_core.aiops as dca
    from diagnosis_core.adapters.dbos import (
        configure_aiops_dbos,
        dbos_aiops_journal,
        run_aiops_dbos,
    )

    paths = sorted(EXAMPLES_DIR.glob("aiops*.json"))
    assert paths
    _launch(system_database)
    for path in paths:
        scenario = dca.load_aiops_scenario(load_doc(path))
        request = dca.aiops_scenario_request(scenario)
        expected = dca.run_aiops(request, dca.aiops_scenario_effects(scenario))
        configure_aiops_dbos(dca.aiops_scenario_effects(scenario))
        state = run_aiops_dbos(request)
        assert dc.to_json(state) == dc.to_json(expected), path.name
        journal = dbos_aiops_journal(f"aiops-{request.run.run_id}")
        assert dc.to_json(dcj.fold_journal(journal)) == dc.to_json(state)


@pytest.mark.parametrize("hang", ["executor", "reporter"])
def test_an_aiops_run_killed_during_an_agent_is_recovered_by_a_new_process(
    tmp_path: Path, hang: str
) -> None:
    url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    side = tmp_path / "side.log"
    script = str(HERE / "dbos_aiops_process.py")
    first = subprocess.Popen(
        [sys.executable, script, url, "first", hang, str(side)], env=_environment(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(name == hang for _, _, name in side_lines(side)):
            assert first.poll() is None, "the first process ended before the agent call"
            assert time.monotonic() < deadline, "the agent call never began"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    second = subprocess.run(
        [sys.executable, script, url, "second", "-", str(side)], env=_environment(),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert second.returncode == 0, second.stderr[-2000:]
    state = dc.from_wire(dca.AiOpsState, json.loads(second.stdout.strip().splitlines()[-1]))
    calls = [(who, name) for who, _, name in side_lines(side)]
    assert [who for who, name in calls if name == "executor"] == ["first"]
    scenario = dca.load_aiops_scenario(load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json"))
    scripted = dca.aiops_scenario_effects(scenario)
    reporter_calls: list[int] = []

    def reporter(input: str, config: dc.RunConfig, /) -> str:
        reporter_calls.append(1)
        return str(scripted.reporter(input, config))

    uninterrupted = dca.run_aiops(
        dca.aiops_scenario_request(scenario), attrs.evolve(scripted, reporter=reporter)
    )
    if hang == "executor":  # never called again: the run fails closed
        assert state.result.reason_code is not None
        assert state.result.reason_code.value == "EXECUTOR_FAILED"
    else:  # the reporter is sent again as the same attempt: the uninterrupted result
        assert dc.to_json(state) == dc.to_json(uninterrupted)
        # The interrupted attempt is sent again as the same attempt, so the new process
        # makes exactly the reporter calls of an uninterrupted run.
        reporters = [who for who, name in calls if name == "reporter"]
        assert reporters == ["first"] + ["second"] * len(reporter_calls)
