"""The conformance runner cannot be fooled by the implementation it checks.

Each test is one attack: an implementation that exits, crashes, hangs or prints
nothing; a result line that only looks right (duplicate keys, bytes that are
not UTF-8, a line too many, another case's line); output meant for the
reader's terminal rather than for the runner (a window title, a screen clear,
a forged summary); JSON nested deeper than a parser recurses. Every one must
fail its case (or the run) with a one-line reason, never pass and never end
the runner with a traceback or a zero exit status.

The implementations are real processes (``--cli``, per file and batch) and
real modules (``--python``) written to a temporary directory; the runner is
the real command line, run as a child process.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from diagnosis_core.conformance import run_document
from diagnosis_core.conformance._corpus import Case, document_text, load_corpus
from diagnosis_core.conformance._runner import CaseFailure, PythonModule, compare

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "diagnosis_core"]
ROUTING = [case for case in load_corpus() if case.id.startswith("routing/")]
HAPPY = next(case for case in ROUTING if case.id == "routing/happy_path")
DEEP = 100_000  # far deeper than any recursive parser or encoder goes
# The per-case time limit (``--timeout``) of the hang attacks: the hanging case waits it out,
# while every other case, a fresh process each, must pass within it. tests/test_conformance.py
# runs its hang with 3 s, a process importing the package per case; 5 s leaves room on a
# loaded machine, where 15 s made each of these tests wait 15 s for nothing.
HANG_TIMEOUT = 5


def _kit(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "conformance", "run", *args], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=cwd, timeout=timeout,
        encoding="utf-8", errors="surrogateescape",
    )


# A --cli implementation: this package's answers, except that the routing/happy_path
# case (its run id is "run-happy") gets ``attack(line)``: the bytes written instead. The
# answers to the routing cases are this package's, worked out once in the test process
# (``_ANSWERS``), so that the per-file mode's process per case starts without importing
# the package; any other document is answered by ``run_document`` itself.
_FAKE_CLI = '''
import json, os, signal, subprocess, sys, time
with open({answers!r}, encoding="utf-8") as answers:
    ANSWERS = json.load(answers)

def attack(line):
{body}

def run_document_json(text):
    if text in ANSWERS:
        return ANSWERS[text]
    sys.path.insert(0, {root!r})
    from diagnosis_core.conformance import run_document
    return json.dumps(run_document(text), ensure_ascii=False)

def answer(text):
    line = run_document_json(text).encode() + b"\\n"
    return attack(line) if '"run-happy"' in text else line

args = sys.argv[1:]
out = sys.stdout.buffer
if args[:3] == ["run", "--json", "--batch"]:
    for raw in iter(sys.stdin.buffer.readline, b""):
        out.write(answer(raw.decode("utf-8").rstrip("\\n")))
        out.flush()
elif args[:2] == ["run", "--json"]:
    with open(args[2], encoding="utf-8") as handle:
        out.write(answer(handle.read()))
    out.flush()
'''


@functools.cache
def _answers() -> str:
    """``{document text: run_document's answer, as the fake writes it}`` of the routing cases."""
    return json.dumps({
        text: json.dumps(run_document(text), ensure_ascii=False)
        for text in (document_text(case) for case in ROUTING)
    })


def _fake_cli(tmp_path: Path, body: str) -> str:
    fake = tmp_path / "fake_cli.py"
    answers = tmp_path / "fake_cli_answers.json"
    answers.write_text(_answers(), encoding="utf-8")
    fake.write_text(_FAKE_CLI.format(root=str(ROOT), answers=str(answers), body=textwrap.indent(
        textwrap.dedent(body).strip("\n"), "    ")), encoding="utf-8")
    return f"{sys.executable} {fake}"


def _run_cli(
    tmp_path: Path, body: str, batch: bool, *extra: str
) -> subprocess.CompletedProcess[str]:
    args = ["--cli", _fake_cli(tmp_path, body), "-k", "routing/", "--timeout", "30", *extra]
    return _kit(*args, *(["--batch"] if batch else []))


def _fake_module(tmp_path: Path, source: str, name: str = "fake_impl") -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


def _failures(out: str) -> dict[str, str]:
    """``case id -> first problem`` of every FAIL line of a report."""
    found: dict[str, str] = {}
    for line in out.splitlines():
        if line.startswith("FAIL "):
            case, _, problem = line[5:].partition(": ")
            found.setdefault(case, problem)
    return found


def _assert_only_happy_fails(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    failures = _failures(done.stdout)
    assert list(failures) == ["routing/happy_path"], done.stdout[-3000:]
    assert reason in failures["routing/happy_path"], failures
    assert done.stdout.splitlines()[-1].startswith(f"{len(ROUTING) - 1} passed, 1 failed")


BOTH = pytest.mark.parametrize("batch", [True, False], ids=["batch", "per-file"])


# --- the attacks of the issue -----------------------------------------------------------------


def test_an_implementation_exiting_zero_at_import_fails_the_run(tmp_path: Path) -> None:
    """``SystemExit(0)`` while the module loads was the runner's own exit: status 0, no output."""
    name = _fake_module(tmp_path, "raise SystemExit(0)\n")
    done = _kit("--python", name, "-k", "routing/happy", cwd=tmp_path)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "FAIL routing/happy_path: $: " in done.stdout
    assert "SystemExit" in done.stdout or "exit status 0" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("0 passed, 1 failed")


def test_an_implementation_ending_the_process_from_run_document_fails_the_run(
    tmp_path: Path,
) -> None:
    """``os._exit(0)`` cannot be caught in-process: the module runs in a child process."""
    name = _fake_module(tmp_path, """
        import os
        def run_document(text):
            os._exit(0)
    """)
    done = _kit("--python", name, "-k", "routing/happy", cwd=tmp_path)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "FAIL routing/happy_path: $: the implementation ended (exit status 0)" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("0 passed, 1 failed")


def test_a_module_that_exits_at_import_is_an_import_error_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _fake_module(tmp_path, "raise SystemExit(0)\n", "fake_exit_at_import")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"fake_exit_at_import: raised SystemExit: 0"):
        PythonModule.load(name)


@BOTH
def test_a_result_line_with_duplicate_keys_fails_the_case(tmp_path: Path, batch: bool) -> None:
    """``{"outcome": "X", ..., "outcome": "ANSWERED"}`` used to pass on its last value."""
    body = """
        text = line.decode("utf-8").rstrip("\\n")
        return ('{"outcome": "NOT_EVEN_A_VALUE", ' + text[1:]).encode() + b"\\n"
    """
    done = _run_cli(tmp_path, body, batch)
    _assert_only_happy_fails(done, "duplicate key")


def test_a_python_result_with_keys_that_collide_on_the_wire_fails_the_case() -> None:
    """``{1: …, "1": …}`` is two keys in Python and one duplicated key in JSON."""
    case = Case("x", "y", "§9 test", document={}, expected={"1": "b"})
    module = PythonModule(lambda text: {1: "a", "1": "b"})
    with pytest.raises(CaseFailure, match="duplicate key"):
        module.run("{}")
    assert compare(case, {"1": "b"}) == []


@BOTH
def test_an_implementations_stderr_is_shown_terminal_safe(tmp_path: Path, batch: bool) -> None:
    """A window title, a screen clear, C1 and bidi controls, a forged summary line."""
    body = """
        sys.stderr.write("\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\u009b31m\\u202eevil\\r\\n"
                         "326 passed, 0 failed (0.1 s)\\n")
        sys.stderr.flush()
        os._exit(1)
    """
    done = _run_cli(tmp_path, body, batch)
    _assert_only_happy_fails(done, "exit status 1")
    for control in ("\x1b", "\x07", "\r", "\x9b", "\u202e"):
        assert control not in done.stdout
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in done.stdout
    assert not any(line.startswith("326 passed") for line in done.stdout.splitlines())


@BOTH
def test_a_refusal_message_is_shown_terminal_safe(tmp_path: Path, batch: bool) -> None:
    """A refusal where a result was expected prints the message: inert, on one line."""
    body = """
        message = "\\x1b[2J\\u009b2J\\u202e\\n326 passed, 0 failed (0.1 s)"
        if "--batch" in sys.argv:
            return json.dumps({"error": message}).encode() + b"\\n"
        sys.stderr.write(message)
        sys.stderr.flush()
        os._exit(2)
    """
    done = _run_cli(tmp_path, body, batch)
    _assert_only_happy_fails(done, "expected a result got a refusal")
    for control in ("\x1b", "\x9b", "\u202e"):
        assert control not in done.stdout
    assert not any(line.startswith("326 passed") for line in done.stdout.splitlines())


def test_a_python_exception_message_is_shown_terminal_safe(tmp_path: Path) -> None:
    name = _fake_module(tmp_path, """
        def run_document(text):
            raise RuntimeError("\\x1b]0;pwned\\x07\\n326 passed, 0 failed (0.1 s)")
    """)
    done = _kit("--python", name, "-k", "routing/happy", cwd=tmp_path)
    assert done.returncode == 1
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "raised RuntimeError: \\x1b]0;pwned\\x07" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("0 passed, 1 failed")


def test_what_a_python_module_prints_never_reaches_the_report(tmp_path: Path) -> None:
    """Its standard output goes to standard error: the report is the runner's alone."""
    name = _fake_module(tmp_path, """
        import os, sys
        print("326 passed, 0 failed (0.1 s)", flush=True)
        os.write(1, b"\\x1b[2J326 passed, 0 failed (0.1 s)\\n")
        def run_document(text):
            print("\\x1b]0;pwned\\x07", flush=True)
            raise RuntimeError("broken")
    """)
    done = _kit("--python", name, "-k", "routing/happy", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].startswith("FAIL routing/happy_path: $: raised")
    assert "\x1b" not in done.stdout and "326 passed" not in done.stdout


def test_case_names_and_whys_of_another_corpus_are_shown_terminal_safe(tmp_path: Path) -> None:
    case = {"name": "x\x1b[2J", "why": "§9 \x1b]0;pwned\x07\n326 passed",
            "document": HAPPY.document, "expected": {"outcome": "NONE"}}
    _corpus_file(tmp_path / "corpus", [case])
    done = _kit("--python", "diagnosis_core.conformance", "--corpus", str(tmp_path / "corpus"))
    assert done.returncode == 1
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "FAIL routing/x\\x1b[2J: $.outcome" in done.stdout
    assert not any(line.startswith("326 passed") for line in done.stdout.splitlines())


@BOTH
def test_deeply_nested_json_from_the_cli_is_a_failed_case(tmp_path: Path, batch: bool) -> None:
    body = f"return b'[' * {DEEP} + b']' * {DEEP} + b'\\n'"
    done = _run_cli(tmp_path, body, batch)
    _assert_only_happy_fails(done, "nesting too deep")


@BOTH
def test_deeply_nested_json_in_a_refusal_from_the_cli_is_a_failed_case(
    tmp_path: Path, batch: bool
) -> None:
    body = f"""
        return b'{{"error": ' + b'[' * {DEEP} + b']' * {DEEP} + b'}}\\n'
    """
    done = _run_cli(tmp_path, body, batch)
    _assert_only_happy_fails(done, "nesting too deep")


def test_deeply_nested_json_from_a_python_module_is_a_failed_case(tmp_path: Path) -> None:
    name = _fake_module(tmp_path, f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from diagnosis_core.conformance import run_document as reference

        def run_document(text):
            if '"run-happy"' not in text:
                return reference(text)
            value = {{}}
            for _ in range({DEEP}):
                value = {{"a": value}}
            return value
    """)
    done = _kit("--python", name, "-k", "routing/", cwd=tmp_path)
    _assert_only_happy_fails(done, "nesting too deep")


def test_deeply_nested_json_in_process_is_a_failed_case() -> None:
    value: dict[str, object] = {}
    for _ in range(DEEP):
        value = {"a": value}
    with pytest.raises(CaseFailure, match="nesting too deep"):
        PythonModule(lambda text: value).run("{}")


def _corpus_file(directory: Path, cases: list[object], raw: str | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = raw if raw is not None else json.dumps(
        {"protocol_version": "1.2", "area": "routing", "cases": cases})
    (directory / "routing.json").write_text(text, encoding="utf-8")


def test_deeply_nested_json_in_a_corpus_is_refused_in_one_line(tmp_path: Path) -> None:
    deep = "[" * DEEP + "]" * DEEP
    raw = ('{"protocol_version": "1.2", "area": "routing", "cases": [{"name": "deep", '
           f'"why": "§9 deep", "document": {deep}, "expected": {{"outcome": "X"}}}}]}}')
    _corpus_file(tmp_path / "corpus", [], raw=raw)
    done = _kit("--python", "diagnosis_core.conformance", "--corpus", str(tmp_path / "corpus"))
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "diagnosis-core: cannot load the corpus: routing.json: $: nesting too deep"]


def test_a_corpus_case_nested_as_deep_as_the_parser_allows_is_a_failed_case(
    tmp_path: Path,
) -> None:
    """Loadable, but deeper than the comparison or the document's writer recurse."""
    for depth in range(1000, 0, -10):  # the deepest the reader accepts
        deep = "[" * depth + "]" * depth
        raw = ('{"protocol_version": "1.2", "area": "routing", "cases": [{"name": "deep", '
               f'"why": "§9 deep", "document": {{"q": {deep}}}, "expected": {{"x": {deep}}}}},'
               f'{{"name": "ok", "why": "§9 ok", "document": {json.dumps(HAPPY.document)}, '
               f'"expected": {json.dumps(dict(HAPPY.expected))}}}]}}')
        _corpus_file(tmp_path / "corpus", [], raw=raw)
        done = _kit("--python", "diagnosis_core.conformance", "--corpus",
                    str(tmp_path / "corpus"))
        if done.returncode != 2:
            break
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 1, done.stdout + done.stderr
    assert list(_failures(done.stdout)) == ["routing/deep"]
    assert done.stdout.splitlines()[-1].startswith("1 passed, 1 failed")


def test_a_corpus_of_the_wrong_shape_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    for raw in ('[]', '{"protocol_version": "1.2", "area": "routing", "cases": [1]}',
                '{"protocol_version": "1.2", "area": "routing", "cases": [{"name": "x"}]}',
                '{"protocol_version": "1.2", "area": "routing", "area": "x", "cases": []}'):
        _corpus_file(tmp_path / "corpus", [], raw=raw)
        done = _kit("--python", "diagnosis_core.conformance", "--corpus",
                    str(tmp_path / "corpus"))
        assert done.returncode == 2, (raw, done.stdout, done.stderr[-2000:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "diagnosis-core: cannot load the corpus: routing.json: "), (raw, lines)


# --- more attacks in the same spirit -------------------------------------------------------


def test_an_implementation_printing_its_line_twice_fails(tmp_path: Path) -> None:
    """The second copy is not the next case's answer: the batch is out of step.

    Whether a copy is seen waiting before the next document is sent or read as
    the next answer (and compared) depends on when it arrives; either way a
    copy is found no later than the end of the run, where every line nobody
    asked for is counted.
    """
    done = _run_cli(tmp_path, "return line + line", True)
    assert done.returncode == 1, done.stdout
    # Every problem counts, not only a case's first: when each copy arrived late and was
    # read as the next answer, every case fails its comparison first and the copy left
    # at the end is the last case's second problem.
    problems = [line for line in done.stdout.splitlines() if line.startswith("FAIL ")]
    assert any("more than one line" in problem for problem in problems), done.stdout[-3000:]
    assert not done.stdout.splitlines()[-1].startswith(f"{len(ROUTING)} passed")


def test_an_implementation_printing_its_line_twice_late_fails(tmp_path: Path) -> None:
    """A copy that comes after the next document was sent is read as that one's answer.

    That case fails its comparison; the batch is then one answer behind, which
    a later case (an answer already waiting when its document is due) or the
    end of the run (a line left over) reports as a second line, possibly as a
    case's second problem.
    """
    done = _run_cli(tmp_path, """
        out.write(line)
        out.flush()
        time.sleep(0.5)
        return line
    """, True)
    assert done.returncode == 1, done.stdout
    problems = [line for line in done.stdout.splitlines() if line.startswith("FAIL ")]
    assert any("more than one line" in problem for problem in problems), done.stdout[-3000:]
    assert not done.stdout.splitlines()[-1].startswith(f"{len(ROUTING)} passed")


def test_an_implementation_printing_a_line_after_the_last_document_fails(
    tmp_path: Path,
) -> None:
    """The extra line of the last case is found when the batch process ends."""
    done = _kit("--cli", _fake_cli(tmp_path, "return line + line"), "--batch",
                "-k", "routing/happy")
    assert done.returncode == 1
    assert "FAIL routing/happy_path: $: " in done.stdout
    assert "more than one line" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("0 passed, 1 failed")


@BOTH
def test_an_implementation_printing_nothing_fails(tmp_path: Path, batch: bool) -> None:
    done = _run_cli(tmp_path, "return b''" if not batch else "return b'\\n'", batch)
    _assert_only_happy_fails(done, "$: ")


@BOTH
def test_a_valid_line_for_a_different_case_fails(tmp_path: Path, batch: bool) -> None:
    other = json.dumps(dict(ROUTING[1].expected), ensure_ascii=False)
    done = _run_cli(tmp_path, f"return {other.encode()!r} + b'\\n'", batch)
    _assert_only_happy_fails(done, "expected")


@BOTH
def test_a_hanging_implementation_times_out_per_case(tmp_path: Path, batch: bool) -> None:
    started = time.monotonic()
    done = _run_cli(tmp_path, "time.sleep(600)", batch, "--timeout", str(HANG_TIMEOUT))
    _assert_only_happy_fails(done, f"timed out after {HANG_TIMEOUT} s")
    assert time.monotonic() - started < 240


@BOTH
def test_a_hang_whose_child_keeps_the_output_open_times_out(tmp_path: Path, batch: bool) -> None:
    """The implementation's own child holds stdout: the whole process group is ended."""
    pids = tmp_path / "pids"
    body = f"""
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open({str(pids)!r}, "a") as handle:
            handle.write(f"{{child.pid}}\\n")
        os._exit(3) if "--batch" not in sys.argv else time.sleep(600)
    """
    started = time.monotonic()
    done = _run_cli(tmp_path, body, batch, "--timeout", str(HANG_TIMEOUT))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL routing/happy_path: $: " in done.stdout
    assert time.monotonic() - started < 240
    started_pids = [int(line) for line in pids.read_text().split()]
    assert started_pids
    time.sleep(1)
    assert [pid for pid in started_pids if _alive(pid)] == []


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_batch_process_that_stops_reading_times_out(tmp_path: Path) -> None:
    """A document larger than the pipe's buffer cannot block the runner's write forever."""
    big = dict(HAPPY.document)
    big["history"] = [{"role": "user", "content": "x" * 1000}] * 1000
    case = {"name": "big", "why": "§9 big", "document": big, "expected": {"outcome": "X"}}
    _corpus_file(tmp_path / "corpus", [case])
    fake = tmp_path / "deaf.py"
    fake.write_text("import time\ntime.sleep(600)\n", encoding="utf-8")
    started = time.monotonic()
    done = _kit("--cli", f"{sys.executable} {fake}", "--batch", "--timeout", "2",
                "--corpus", str(tmp_path / "corpus"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL routing/big: $: timed out after 2 s" in done.stdout
    assert time.monotonic() - started < 120


def test_a_hanging_python_module_times_out_and_is_stopped(tmp_path: Path) -> None:
    name = _fake_module(tmp_path, f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from diagnosis_core.conformance import run_document as reference

        def run_document(text):
            if '"run-happy"' in text:
                while True:
                    time.sleep(0.01)
            return reference(text)
    """)
    done = _kit("--python", name, "-k", "routing/", "--timeout", str(HANG_TIMEOUT), cwd=tmp_path)
    _assert_only_happy_fails(done, f"timed out after {HANG_TIMEOUT} s")


@BOTH
def test_non_utf8_output_fails_the_case(tmp_path: Path, batch: bool) -> None:
    """Bytes that are not UTF-8 are not read as U+FFFD (which an expected string may hold)."""
    body = """
        return line.replace(b'"ANSWERED"', b'"ANSWERED\\xff"')
    """
    done = _run_cli(tmp_path, body, batch)
    _assert_only_happy_fails(done, "not UTF-8")


@BOTH
def test_an_implementation_killing_itself_with_sigkill_fails(tmp_path: Path, batch: bool) -> None:
    done = _run_cli(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)", batch)
    _assert_only_happy_fails(done, "SIGKILL")


def test_a_python_module_killing_itself_with_sigkill_fails(tmp_path: Path) -> None:
    name = _fake_module(tmp_path, """
        import os, signal
        def run_document(text):
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = _kit("--python", name, "-k", "routing/happy", cwd=tmp_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "FAIL routing/happy_path: $: the implementation ended (killed by SIGKILL)" in (
        done.stdout)


@BOTH
def test_a_refusal_without_a_reason_fails(tmp_path: Path, batch: bool) -> None:
    """Exit 2 (or ``{"error": ""}``) with no message passes no refusal case."""
    body = """
        if "--batch" in sys.argv:
            return b'{"error": " "}\\n'
        os._exit(2)
    """
    refused = next(case for case in load_corpus() if case.id == "scenarios/invalid_json_file")
    assert refused.error_names is None
    command = _fake_cli(tmp_path, body)
    fake = tmp_path / "fake_cli.py"
    fake.write_text(fake.read_text(encoding="utf-8").replace(
        "'\"run-happy\"' in text", "len(text) < 20"), encoding="utf-8")
    done = _kit("--cli", command, "-k", "scenarios/invalid_json_file",
                *(["--batch"] if batch else []))
    assert done.returncode == 1, done.stdout
    assert "FAIL scenarios/invalid_json_file: $" in done.stdout
    assert "empty" in done.stdout


@BOTH
def test_an_endless_line_fails_the_case_without_exhausting_memory(
    tmp_path: Path, batch: bool
) -> None:
    body = """
        chunk = b"x" * 65536
        while True:
            sys.stdout.buffer.write(chunk)
    """
    done = _run_cli(tmp_path, body, batch, "--timeout", "60")
    _assert_only_happy_fails(done, "longer than")


def test_a_python_module_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    done = _kit("--python", "no_such_module_here", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "diagnosis-core: --python: no module named 'no_such_module_here'\n"


@pytest.mark.parametrize("seconds", ["inf", "nan", "0", "-1", "1e300", "soon"])
def test_a_timeout_that_is_not_a_real_deadline_is_a_usage_error(seconds: str) -> None:
    """``--timeout inf`` was an OverflowError traceback once the first case waited."""
    done = _kit("--python", "diagnosis_core.conformance", "-k", "routing/happy",
                "--timeout", seconds)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--timeout" in done.stderr and "Traceback" not in done.stderr
