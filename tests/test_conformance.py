"""The conformance kit (issue 20): corpus, runner, batch mode, schema bundle.

This package must pass its own kit through every entry point (batch, per
file, in-process); the shipped corpus must be what the package produces; the
corpus must reach every routing row and reason code; the runner must survive
a crashing, hanging or garbage-printing implementation; and every schema of
``schema --all`` must accept every corresponding document of the corpus.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

import diagnosis_core as dc
import diagnosis_core.machine as dcm
from diagnosis_core.cli import main
from diagnosis_core.conformance import PROTOCOL_VERSION, run_document
from diagnosis_core.conformance._corpus import Case, load_corpus
from diagnosis_core.conformance._runner import (
    FileCommand,
    PythonModule,
    compare,
    junit_xml,
    run_cases,
    select_cases,
)
from tests._reach import protocol as dcp

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "diagnosis_core"]
CLI_TEXT = f"{sys.executable} -m diagnosis_core"
CORPUS = load_corpus()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _kit(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "conformance", *args], capture_output=True, text=True, env=_env(), cwd=cwd,
        timeout=600,
    )


# --- the corpus -------------------------------------------------------------------------


def test_shipped_corpus_is_what_the_package_produces() -> None:
    """Regenerating changes nothing; a package that drifted from its corpus fails here."""
    from corpus_tools.generate import render_corpus

    rendered = render_corpus(ROOT / "examples")
    directory = ROOT / "diagnosis_core" / "conformance" / "corpus"
    assert sorted(rendered) == sorted(path.name for path in directory.glob("*.json"))
    for name, text in rendered.items():
        assert (directory / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python -m corpus_tools.generate"
        )


def test_generate_check_reports_a_stale_file(tmp_path: Path) -> None:
    from corpus_tools.generate import main as generate

    out = tmp_path / "corpus"
    assert generate(["--out", str(out)]) == 0
    assert generate(["--out", str(out), "--check"]) == 0
    (out / "routing.json").write_text("{}", encoding="utf-8")
    assert generate(["--out", str(out), "--check"]) == 1


def test_every_case_is_versioned_named_and_explained() -> None:
    directory = ROOT / "diagnosis_core" / "conformance" / "corpus"
    for path in directory.glob("*.json"):
        assert json.loads(path.read_text(encoding="utf-8"))["protocol_version"] == "1.2"
    assert 250 <= len(CORPUS) <= 600
    assert len({case.id for case in CORPUS}) == len(CORPUS)
    for case in CORPUS:
        assert case.why.startswith("§"), case.id
        assert "\n" not in case.why
    size = sum(path.stat().st_size for path in directory.glob("*.json"))
    assert size < 5_000_000


def test_every_bundled_example_is_a_case() -> None:
    names = {case.name for case in CORPUS if case.area == "examples"}
    assert names == {path.stem for path in (ROOT / "examples").glob("*.json")}


def _routes_taken(output: dict[str, Any]) -> set[int]:
    """The routing-table rows a run went through, read back from its trace (spec §7)."""
    table = dcm.ROUTING_TABLE
    events: list[dict[str, Any] | None] = [None, *output["trace"], None]
    rows: set[int] = set()
    for previous, current in itertools.pairwise(events):
        after = previous["node"] if previous else None
        following = current["node"] if current else None
        candidates = [
            index for index, row in enumerate(table)
            if (row.after.value if row.after else None) == after
            and (row.next.value if row.next else None) == following
        ]
        if len(candidates) > 1:
            assert previous is not None and previous["node"] == "gatekeeper"
            if following == "verified_input":
                wanted = "PASS" if previous["details"]["status"] == "PASS" else (
                    "LOW_CONFID, trusted bindings")
            else:
                wanted = ("LOW_CONFID, no trusted binding"
                          if previous["reason_code"] == "NO_TRUSTED_EVIDENCE" else "REJECT")
            candidates = [i for i in candidates if table[i].condition.value == wanted]
        assert len(candidates) == 1, (after, following)
        rows.add(candidates[0])
    return rows


def _chat_outputs() -> list[dict[str, Any]]:
    return [dict(case.expected) for case in CORPUS
            if "trace" in case.expected and "workflow" not in case.expected]


def test_every_routing_row_is_reached() -> None:
    reached: set[int] = set()
    for output in _chat_outputs():
        reached |= _routes_taken(output)
    missing = [dcm.ROUTING_TABLE[i] for i in range(len(dcm.ROUTING_TABLE)) if i not in reached]
    assert not missing


def test_every_reason_code_is_pinned() -> None:
    from diagnosis_core.aiops import AiOpsReasonCode

    seen = {output["reason_code"] for output in _chat_outputs()}
    assert {code.value for code in dc.ReasonCode} <= seen
    aiops = {case.expected.get("reason_code") for case in CORPUS
             if case.expected.get("workflow") == "aiops"}
    wanted = {"SUPERVISOR_FAILED", "EXECUTOR_INVALID_OUTPUT", "REPORTER_FAILED",
              "STEP_BUDGET_EXHAUSTED", "NO_PROGRESS"}
    assert wanted <= aiops
    assert wanted <= {code.value for code in AiOpsReasonCode}


def test_technical_retry_limits_and_locales_are_covered() -> None:
    limits = {case.document["config"]["technical_retry_limit"] for case in CORPUS
              if case.area == "technical_retry" and "config" in case.document}
    assert limits == {0, 1, 2, 3}
    outcomes = {(case.document["config"]["locale"], case.expected["outcome"])
                for case in CORPUS if case.area == "fallbacks"}
    for locale in ("en", "zh-CN"):
        assert (locale, "PRE_VERIFICATION_FALLBACK") in outcomes
        assert (locale, "POST_VERIFICATION_FALLBACK") in outcomes


def test_resume_cases_cover_every_prefix_of_a_journal() -> None:
    folds = [
        case for case in CORPUS
        if case.name.endswith("_fold") and case.area == "journals"
        and not case.name.startswith("v1_")  # the v1 journals are pinned by their fold only
    ]
    for fold in folds:
        base = fold.name.removesuffix("_fold")
        entries = len(fold.document["entries"])
        names = {case.name for case in CORPUS if case.area == "journals"}
        for k in range(entries):
            assert f"{base}_resume_after_{k}" in names
            assert f"{base}_resume_interrupted_{k}" in names


def test_resume_of_a_planner_prefix_ends_as_the_uninterrupted_run() -> None:
    by_name = {case.name: case for case in CORPUS if case.area == "journals"}
    fold = by_name["answered_fold"].expected
    assert by_name["answered_resume_interrupted_0"].expected == fold
    executor = by_name["answered_resume_interrupted_1"].expected
    assert executor["reason_code"] == "EXECUTOR_FAILED"
    assert executor["calls"]["executor"] == 1  # performed once, before the crash; never again
    assert by_name["answered_resume_interrupted_2"].expected["reason_code"] == (
        "GATEKEEPER_UNAVAILABLE")


# --- the runner against this package --------------------------------------------------------


def test_this_package_passes_its_kit_in_batch_mode(tmp_path: Path) -> None:
    junit = tmp_path / "kit.xml"
    done = _kit("run", "--cli", CLI_TEXT, "--batch", "--junit", str(junit))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"{len(CORPUS)} passed, 0 failed")
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == str(len(CORPUS)) and suite.get("failures") == "0"


def test_this_package_passes_its_kit_in_process() -> None:
    results = run_cases(PythonModule.load("diagnosis_core.conformance"), CORPUS)
    assert [r.case.id for r in results if not r.passed] == []


def test_this_package_passes_its_kit_per_file() -> None:
    """One case of every area through ``run --json FILE`` (a process per case is slow)."""
    first: dict[str, Case] = {}
    for case in CORPUS:
        if case.area not in first or case.expected.get("error"):
            first.setdefault(case.area, case)
    refusals = [case for case in CORPUS if "error" in case.expected][:3]
    kinds: dict[str, Case] = {}
    for case in CORPUS:
        kind = case.document.get("format", "workflow" in case.document) if isinstance(
            case.document, dict) else "text"
        kinds.setdefault(f"{kind}:{'error' in case.expected}", case)
    cases = [*first.values(), *refusals, *kinds.values()]
    results = run_cases(FileCommand(CLI), cases)
    assert [(r.case.id, r.problems) for r in results if not r.passed] == []


def test_list_prints_areas_with_counts() -> None:
    done = _kit("list")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == f"protocol {PROTOCOL_VERSION}"
    assert lines[-1].split() == ["total", str(len(CORPUS))]
    counts = {line.split()[0]: int(line.split()[1]) for line in lines[1:-1]}
    assert counts["payloads"] == sum(1 for case in CORPUS if case.area == "payloads")
    assert set(counts) >= {"examples", "routing", "reason_codes", "payloads", "gatekeeper",
                           "projection", "verdict_ceiling", "evidence_retry",
                           "technical_retry", "fallbacks", "reference_gatekeeper",
                           "journals", "aiops"}


def test_k_selects_and_an_empty_selection_is_a_usage_error() -> None:
    assert [c.id for c in select_cases(CORPUS, "routing/happy")] == ["routing/happy_path"]
    assert len(select_cases(CORPUS, "journals/tamper_*")) == 12
    done = _kit("run", "--python", "diagnosis_core.conformance", "-k", "no-such-case")
    assert done.returncode == 2
    assert "selects no case" in done.stderr


# --- a broken implementation fails cases, never the runner -------------------------------------

_FAKE = '''
import json, os, sys, time
sys.path.insert(0, {root!r})
from diagnosis_core.conformance import run_document

def answer(text):
    if "run-happy" in text:
        os._exit(3)                        # a crash
    if "run-planner-failed" in text:
        return "this is not JSON"
    if "run-gk-reject" in text:
        time.sleep(30)                     # a hang
    result = run_document(text)
    if "run-composer-failed" in text:
        result["outcome"] = "ANSWERED"     # a wrong value
    return json.dumps(result)

args = sys.argv[1:]
if args[:3] == ["run", "--json", "--batch"]:
    for line in sys.stdin:
        print(answer(line.rstrip("\\n")), flush=True)
elif args[:2] == ["run", "--json"]:
    print(answer(open(args[2], encoding="utf-8").read()))
'''


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "per-file"])
def test_a_crash_a_hang_and_garbage_fail_their_cases_only(tmp_path: Path, batch: bool) -> None:
    fake = tmp_path / "fake.py"
    fake.write_text(textwrap.dedent(_FAKE.format(root=str(ROOT))), encoding="utf-8")
    args = ["run", "--cli", f"{sys.executable} {fake}", "-k", "routing/", "--timeout", "3",
            "--junit", str(tmp_path / "out.xml")]
    done = _kit(*([*args, "--batch"] if batch else args))
    assert done.returncode == 1
    out = done.stdout
    assert "FAIL routing/happy_path: $: " in out
    assert "FAIL routing/planner_failed: $: " in out and "is not JSON" in out
    assert "FAIL routing/gatekeeper_reject: $: timed out after 3 s" in out
    assert ('FAIL routing/composer_failed: $.outcome: expected "POST_VERIFICATION_FALLBACK" '
            'got "ANSWERED"') in out
    assert "    why: §7 composer failure → post_verification_fallback COMPOSER_FAILED" in out
    total = sum(1 for case in CORPUS if case.id.startswith("routing/"))
    assert out.splitlines()[-1].startswith(f"{total - 4} passed, 4 failed")
    root = ElementTree.parse(tmp_path / "out.xml").getroot()
    failures = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert sorted(failures) == ["composer_failed", "gatekeeper_reject", "happy_path",
                                "planner_failed"]


def test_a_python_module_that_raises_or_hangs_fails_the_case() -> None:
    def flaky(text: str) -> Any:
        if "run-happy" in text:
            raise RuntimeError("kaput")
        if "run-planner-failed" in text:
            return ["not", "an", "object"]
        return run_document(text)

    results = run_cases(PythonModule(flaky), select_cases(CORPUS, "routing/"))
    failed = {r.case.name: r.problems for r in results if not r.passed}
    assert failed == {
        "happy_path": ("$: raised RuntimeError: kaput",),
        "planner_failed": ("$: returned list, not a JSON object",),
    }


def test_a_missing_command_fails_every_case_without_a_traceback() -> None:
    done = _kit("run", "--cli", "/nonexistent/impl", "--batch", "-k", "routing/happy")
    assert done.returncode == 1
    assert "FAIL routing/happy_path: $: cannot start '/nonexistent/impl'" in done.stdout
    assert "Traceback" not in done.stderr


def test_comparison_is_exact_about_json_types() -> None:
    case = Case("x", "y", "§9 test", document={}, expected={"n": 1, "f": 1.0, "b": True,
                                                           "a": [1, 2]})
    assert compare(case, {"n": 1, "f": 1.0, "b": True, "a": [1, 2]}) == []
    assert compare(case, {"n": 1.0, "f": 1.0, "b": True, "a": [1, 2]}) == [
        "$.n: expected 1 got 1.0"]
    assert compare(case, {"n": 1, "f": 1, "b": 1, "a": [1]}) == [
        "$.f: expected 1.0 got 1", "$.b: expected true got 1", "$.a: expected 2 items got 1"]
    assert compare(case, {"n": 1, "f": 1.0, "b": True, "a": [1, 2], "z": 0}) == [
        "$.z: expected nothing got 0"]


def test_a_refusal_must_name_the_path() -> None:
    case = Case("x", "y", "§9 test", document={}, expected={"error": "invalid scenario: q: x"},
                error_names="question")
    assert compare(case, {"error": "scenario error at question: missing"}) == []
    assert compare(case, {"error": "bad"}) == [
        "$.error: expected a message naming 'question' got \"bad\""]
    assert compare(case, {"outcome": "ANSWERED"})[0].startswith("$: expected a refusal")


def test_junit_xml_escapes_what_xml_cannot_hold() -> None:
    case = Case("a<b", "n&m", "§9 \x00 why", document={}, expected={"x": "\x01<"})
    results = run_cases(PythonModule(lambda text: {"x": "\ud800>"}), [case])
    root = ElementTree.fromstring(junit_xml(results))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and "why" in (failure.text or "")


# --- the batch entry point of run -------------------------------------------------------------


def test_run_batch_answers_one_line_per_document() -> None:
    docs = [CORPUS[0], next(c for c in CORPUS if c.id == "scenarios/unknown_top_key")]
    lines = "".join(json.dumps(c.document, ensure_ascii=False) + "\n" for c in docs)
    done = subprocess.run([*CLI, "run", "--json", "--batch"], input=lines + "\n{oops\n",
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert out[0] == CORPUS[0].expected
    assert out[1] == {"error": "invalid scenario: questions: unknown key"}
    assert out[2]["error"].startswith("invalid scenario: <document>: invalid JSON")
    assert len(out) == 3


def test_run_batch_needs_json_and_no_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--batch"]) == 2
    assert main(["run", "--json", "--batch", "x.json"]) == 2
    assert main(["run", "--json"]) == 2
    assert "--batch" in capsys.readouterr().err


def test_version_names_the_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.splitlines()[1] == f"protocol {PROTOCOL_VERSION}"


def test_a_resume_document_is_strict() -> None:
    result = run_document(json.dumps({"format": "diagnosis_resume_v1", "journal": {},
                                      "extra": 1}))
    assert result == {"error": "invalid scenario: extra: unknown key"}
    result = run_document(json.dumps({"format": "diagnosis_resume_v1"}))
    assert result == {"error": "invalid scenario: journal: missing"}


# --- schemas ------------------------------------------------------------------------------------


def _schemas(tmp_path: Path) -> dict[str, dict[str, Any]]:
    out = tmp_path / "schemas"
    assert main(["schema", "--all", "--out", str(out)]) == 0
    return {path.name.removesuffix(".schema.json"): json.loads(path.read_text("utf-8"))
            for path in out.glob("*.schema.json")}


def test_schema_all_writes_every_schema_with_a_stable_id(tmp_path: Path) -> None:
    schemas = _schemas(tmp_path)
    assert set(schemas) >= {*dcp.SCHEMA_NAMES, "scenario", "aiops_scenario", "replay_output",
                            "aiops_replay_output", "trace_report", "diagnosis_journal_v1",
                            "diagnosis_journal_v2", "aiops_journal_v1", "aiops_journal_v2",
                            "diagnosis_resume_v1", "aiops_report"}
    for name, schema in schemas.items():
        assert schema["$id"] == f"urn:diagnosis-core:{PROTOCOL_VERSION}:{name}"
    assert _schemas(tmp_path / "again") == schemas
    assert main(["schema", "--all"]) == 2
    assert main(["schema", "--out", str(tmp_path), "planner_plan"]) == 2


def _kind(document: Any) -> str:
    if isinstance(document, dict) and "format" in document:
        return str(document["format"])
    if isinstance(document, dict) and "workflow" in document:
        return "aiops_scenario"
    return "scenario"


def test_every_schema_accepts_every_corresponding_corpus_document(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    schemas = _schemas(tmp_path)
    registry = referencing.Registry().with_resources(
        (schema["$id"], referencing.Resource.from_contents(schema)) for schema in schemas.values()
    )
    validators = {name: jsonschema.Draft202012Validator(schema, registry=registry)
                  for name, schema in schemas.items()}
    checked: dict[str, int] = {}

    def check(name: str, document: Any, where: str) -> None:
        errors = list(validators[name].iter_errors(document))
        assert not errors, f"{where}: {name}: {errors[0].message[:300]} at {errors[0].json_path}"
        checked[name] = checked.get(name, 0) + 1

    for case in CORPUS:
        if case.text is not None or "error" in case.expected:
            continue
        kind = _kind(case.document)
        check(kind, case.document, case.id)
        if kind == "diagnosis_resume_v1":
            journal = case.document["journal"]
            check(str(journal.get("format", "diagnosis_journal_v2")), journal, case.id)
        output = "aiops_replay_output" if case.expected.get("workflow") else "replay_output"
        check(output, dict(case.expected), case.id)
        if kind == "aiops_scenario":
            _check_payloads(case, check, _AIOPS_PAYLOAD)
        if kind == "scenario":
            _check_payloads(case, check, _PAYLOAD)
            state = dc.replay_scenario(dc.load_scenario(case.document))
            check("trace_report", dc.to_wire(dc.build_trace_report(state)), case.id)
    for name in schemas:
        assert checked.get(name, 0) > 0, f"no corpus document checked against {name}"


_PAYLOAD = {"planner": "planner_plan", "executor": "executor_evidence_v2",
            "verifier": "verifier_output", "composer": "composer_output"}


_AIOPS_PAYLOAD = {"supervisor": "supervisor_decision", "planner": "aiops_plan",
                  "executor": "aiops_executor_output", "reporter": "aiops_report"}


def _check_payloads(case: Case, check: Any, payloads: dict[str, str]) -> None:
    """Every reply the run accepted (its attempt COMPLETED) validates against its payload schema."""
    used = {agent: 0 for agent in payloads}
    responses = case.document.get("responses") or {}
    for event in case.expected["trace"]:
        agent = event["node"]
        if agent not in payloads:
            continue
        script = responses.get(agent) or []
        index, used[agent] = used[agent], used[agent] + 1
        if event["status"] == "COMPLETED":
            reply = script[index]
            value = json.loads(dcp.extract_json_text(reply["text"]))
            check(payloads[agent], value, f"{case.id} {agent}")


def test_run_file_resumes_a_resume_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = next(c for c in CORPUS if c.id == "journals/evidence_retry_resume_interrupted_3")
    path = tmp_path / "resume.json"
    path.write_text(json.dumps(case.document), encoding="utf-8")
    assert main(["run", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == case.expected
    assert main(["run", str(path)]) == 0
    assert "outcome: ANSWERED" in capsys.readouterr().out
    key = tmp_path / "key"
    key.write_bytes(b"k")
    assert main(["run", "--journal-key-file", str(key), str(path)]) == 2
    assert "not verified with a key" in capsys.readouterr().err


# --- the same command line in this process (its own code measured, the implementation a child)


def test_the_kit_command_in_this_process_passes_this_package_in_batch_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from diagnosis_core.cli import main

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    junit = tmp_path / "kit.xml"
    assert main(["conformance", "run", "--cli", CLI_TEXT, "--batch", "--junit", str(junit)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"{len(CORPUS)} passed, 0 failed")
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"


def test_the_kit_command_in_this_process_runs_a_python_module_case_by_case(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from diagnosis_core.cli import main

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    chosen = [case for case in CORPUS if case.id.startswith("routing/")][:3]
    assert chosen
    code = main(["conformance", "run", "--python", "diagnosis_core.conformance",
                 "-k", chosen[0].id])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert out.splitlines()[-1].startswith("1 passed, 0 failed"), out[-2000:]


def test_the_kit_listing_in_this_process_counts_every_case(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from diagnosis_core.cli import main

    assert main(["conformance", "list", "-v"]) == 0
    out = capsys.readouterr().out
    assert str(len(CORPUS)) in out
    assert all(case.id in out for case in CORPUS[:5])
