"""Run the corpus against an implementation and compare exactly.

Three ways to reach an implementation, one result per case:

* :class:`FileCommand` — ``CMD run --json FILE`` per case: exit 0 with one
  JSON object on stdout is a result; exit 2 is a refusal (``{"error":
  stderr}``); anything else, a time-out or stdout that is not one JSON object
  fails the case.
* :class:`BatchCommand` — one ``CMD run --json --batch`` process reads one
  document per line on stdin and answers one line each (the JVM starts once).
  A crash, a time-out or a line that is not a JSON object fails that case;
  the process is started again for the next one.
* :class:`PythonModule` — a module with ``run_document(text: str) -> dict``
  (the result line as a Python value), called in-process on a worker thread
  so a time-out fails the case without stopping the run.

A result is compared with the case's expected result exactly: same JSON
types (``1`` is not ``1.0`` nor ``true``), same keys, same order of arrays.
A refusal matches an expected refusal when its message names the path the
case records (``error_names``); the rest of the wording is free.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any, Protocol
from xml.sax.saxutils import escape, quoteattr

import attrs

from ._corpus import Case, document_text

__all__ = [
    "BatchCommand",
    "CaseFailure",
    "CaseResult",
    "FileCommand",
    "Implementation",
    "PythonModule",
    "compare",
    "junit_xml",
    "run_cases",
    "select_cases",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds one case may take before it fails as a time-out."""


class Implementation(Protocol):
    """Something that turns a document's text into a result line (or a failure message)."""

    def run(self, text: str) -> Any:
        """The result line as a JSON value, or raise :class:`CaseFailure`."""
        ...

    def close(self) -> None:
        """Release what the implementation holds (a child process)."""
        ...


class CaseFailure(Exception):
    """The implementation crashed, timed out or printed something that is not JSON."""


def _json_object(text: str, what: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise CaseFailure(f"{what} is not JSON ({error}): {_short(text)}") from None
    if not isinstance(value, dict):
        raise CaseFailure(f"{what} is not a JSON object: {_short(text)}")
    return value


def _short(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


@attrs.define
class FileCommand:
    """``CMD run --json FILE`` for every case (``CMD`` split like a shell would)."""

    command: Sequence[str]
    timeout: float = DEFAULT_TIMEOUT
    _directory: tempfile.TemporaryDirectory[str] = attrs.field(
        factory=lambda: tempfile.TemporaryDirectory(prefix="conformance-")
    )

    def run(self, text: str) -> Any:
        path = os.path.join(self._directory.name, "case.json")
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        try:
            done = subprocess.run(
                [*self.command, "run", "--json", path],
                capture_output=True, timeout=self.timeout, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise CaseFailure(f"timed out after {self.timeout:g} s") from None
        except OSError as error:
            raise CaseFailure(f"cannot start {self.command[0]!r}: {error}") from None
        stdout = done.stdout.decode("utf-8", "replace")
        stderr = done.stderr.decode("utf-8", "replace")
        if done.returncode == 2:
            return {"error": stderr.strip()}
        if done.returncode != 0:
            raise CaseFailure(f"exit status {done.returncode}: {_short(stderr)}")
        return _json_object(stdout, "stdout")

    def close(self) -> None:
        self._directory.cleanup()


_EOF = object()


@attrs.define
class BatchCommand:
    """One ``CMD run --json --batch`` process: a document per line in, a result per line out."""

    command: Sequence[str]
    timeout: float = DEFAULT_TIMEOUT
    _process: subprocess.Popen[bytes] | None = None
    _lines: queue.Queue[object] = attrs.field(factory=queue.Queue)
    _stderr: list[bytes] = attrs.field(factory=list)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._lines = queue.Queue()
        self._stderr = []
        try:
            process = subprocess.Popen(
                [*self.command, "run", "--json", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except OSError as error:
            raise CaseFailure(f"cannot start {self.command[0]!r}: {error}") from None
        lines = self._lines
        assert process.stdout is not None and process.stderr is not None
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        threading.Thread(
            target=_drain, args=(process.stderr, self._stderr), daemon=True
        ).start()
        self._process = process
        return process

    def run(self, text: str) -> Any:
        process = self._start()
        assert process.stdin is not None
        try:
            process.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")
            process.stdin.flush()
        except OSError:
            self._stop()
            raise CaseFailure(f"the batch process ended: {self._stderr_tail()}") from None
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._stop()
            raise CaseFailure(f"timed out after {self.timeout:g} s") from None
        if line is _EOF:
            self._stop()
            raise CaseFailure(f"the batch process ended: {self._stderr_tail()}")
        assert isinstance(line, bytes)
        try:
            return _json_object(line.decode("utf-8", "replace"), "the result line")
        except CaseFailure:
            self._stop()  # the stream may be out of step: start afresh
            raise

    def _stderr_tail(self) -> str:
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=2)
        status = self._process.poll() if self._process is not None else None
        tail = _short(b"".join(self._stderr).decode("utf-8", "replace"))
        return f"exit status {status}" + (f": {tail}" if tail else "")

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        process = self._process
        if process is not None and process.stdin is not None and process.poll() is None:
            try:
                process.stdin.close()
                process.wait(timeout=self.timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop()


def _pump(stream: IO[bytes], lines: queue.Queue[object]) -> None:
    for line in iter(stream.readline, b""):
        lines.put(line)
    lines.put(_EOF)


def _drain(stream: IO[bytes], sink: list[bytes]) -> None:
    for chunk in iter(lambda: stream.read(4096), b""):
        if sum(len(part) for part in sink) < 65536:
            sink.append(chunk)


@attrs.define
class PythonModule:
    """An in-process implementation: ``module.run_document(text) -> dict``."""

    function: Callable[[str], Mapping[str, Any]]
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def load(cls, name: str, timeout: float = DEFAULT_TIMEOUT) -> PythonModule:
        """Import ``name``; it must define a callable ``run_document``."""
        module = importlib.import_module(name)
        function = getattr(module, "run_document", None)
        if not callable(function):
            raise ValueError(f"{name}: no callable run_document(text: str) -> dict")
        return cls(function, timeout)

    def run(self, text: str) -> Any:
        box: list[tuple[bool, Any]] = []

        def call() -> None:
            try:
                box.append((True, self.function(text)))
            except BaseException as error:  # a crash fails the case, never the runner
                box.append((False, error))

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not box:
            raise CaseFailure(f"timed out after {self.timeout:g} s")
        ok, value = box[0]
        if not ok:
            raise CaseFailure(f"raised {type(value).__name__}: {_short(str(value))}")
        if not isinstance(value, Mapping):
            raise CaseFailure(f"returned {type(value).__name__}, not a JSON object")
        # Through JSON, so a value JSON cannot carry fails here as it would on a wire.
        try:
            return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as error:
            raise CaseFailure(f"returned a value that is not JSON: {error}") from None

    def close(self) -> None:
        pass


# --- comparison ------------------------------------------------------------------------


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: object, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def _diff(expected: object, actual: object, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if _kind(expected) != _kind(actual):
        out.append(f"{path}: expected {_show(expected)} got {_show(actual)}")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        for key in expected:
            if key not in actual:
                out.append(f"{path}.{key}: expected {_show(expected[key])} got nothing")
            else:
                _diff(expected[key], actual[key], f"{path}.{key}", out, limit)
            if len(out) >= limit:
                return
        for key in actual:
            if key not in expected:
                out.append(f"{path}.{key}: expected nothing got {_show(actual[key])}")
                if len(out) >= limit:
                    return
    elif isinstance(expected, list):
        assert isinstance(actual, list)
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            _diff(left, right, f"{path}[{index}]", out, limit)
            if len(out) >= limit:
                return
        if len(expected) != len(actual):
            out.append(f"{path}: expected {len(expected)} items got {len(actual)}")
    elif expected != actual:
        out.append(f"{path}: expected {_show(expected)} got {_show(actual)}")


def compare(case: Case, actual: object, limit: int = 5) -> list[str]:
    """The differences between ``case.expected`` and ``actual`` (empty: the case passes)."""
    expected = case.expected
    if "error" in expected and isinstance(expected.get("error"), str):
        if not isinstance(actual, dict) or not isinstance(actual.get("error"), str):
            return [f"$: expected a refusal naming {case.error_names or 'the problem'} "
                    f"got {_show(actual)}"]
        if case.error_names is not None and case.error_names not in actual["error"]:
            return [f"$.error: expected a message naming {case.error_names!r} "
                    f"got {_show(actual['error'])}"]
        return []
    if isinstance(actual, dict) and isinstance(actual.get("error"), str) and len(actual) == 1:
        return [f"$: expected a result got a refusal: {_show(actual['error'], 300)}"]
    out: list[str] = []
    _diff(dict(expected), actual, "$", out, limit)
    return out


# --- running -------------------------------------------------------------------------------


@attrs.frozen
class CaseResult:
    """One case's verdict: passed, or the differences / failure that make it fail."""

    case: Case
    problems: tuple[str, ...]
    seconds: float

    @property
    def passed(self) -> bool:
        return not self.problems


def select_cases(cases: Iterable[Case], pattern: str | None) -> list[Case]:
    """Cases whose ``area/name`` contains ``pattern`` (or matches it, with ``*``/``?``)."""
    if not pattern:
        return list(cases)
    if any(mark in pattern for mark in "*?["):
        return [case for case in cases if fnmatch.fnmatchcase(case.id, pattern)]
    return [case for case in cases if pattern in case.id]


def run_cases(
    implementation: Implementation,
    cases: Sequence[Case],
    report: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run every case through ``implementation``; ``report`` sees each result as it comes."""
    results: list[CaseResult] = []
    try:
        for case in cases:
            started = time.perf_counter()
            try:
                actual = implementation.run(document_text(case))
                problems = tuple(compare(case, actual))
            except CaseFailure as failure:
                problems = (f"$: {failure}",)
            result = CaseResult(case, problems, time.perf_counter() - started)
            results.append(result)
            if report is not None:
                report(result)
    finally:
        implementation.close()
    return results


def failure_lines(result: CaseResult) -> list[str]:
    """``FAIL <case>: <path>: expected … got …`` lines, then the case's ``why``."""
    lines = [f"FAIL {result.case.id}: {problem}" for problem in result.problems]
    lines.append(f"    why: {result.case.why}")
    return lines


def junit_xml(results: Sequence[CaseResult], name: str = "diagnosis-core conformance") -> str:
    """The results as JUnit XML (one ``testcase`` per case, ``classname`` its area)."""
    failures = sum(1 for result in results if not result.passed)
    total = sum(result.seconds for result in results)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites tests=\"{len(results)}\" failures=\"{failures}\" time=\"{total:.3f}\">",
        f"  <testsuite name={quoteattr(name)} tests=\"{len(results)}\" "
        f"failures=\"{failures}\" errors=\"0\" time=\"{total:.3f}\">",
    ]
    for result in results:
        head = (
            f"    <testcase classname={quoteattr(result.case.area)} "
            f"name={quoteattr(result.case.name)} time=\"{result.seconds:.3f}\""
        )
        if result.passed:
            lines.append(head + "/>")
            continue
        message = _xml_text(result.problems[0])
        body = _xml_text("\n".join([*result.problems, f"why: {result.case.why}"]))
        lines.append(head + ">")
        lines.append(f"      <failure message={quoteattr(message)}>{escape(body)}</failure>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines) + "\n"


def _xml_text(text: str) -> str:
    """Characters XML 1.0 cannot hold, replaced."""
    return "".join(
        char if char in "\t\n\r" or (char >= " " and char not in "\ufffe\uffff"
                                     and not "\ud800" <= char <= "\udfff") else "\ufffd"
        for char in text
    )


