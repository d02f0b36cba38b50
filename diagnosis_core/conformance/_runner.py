"""Run the corpus against an implementation and compare exactly.

Three ways to reach an implementation, one result per case:

* :class:`FileCommand` — ``CMD run --json FILE`` per case: exit 0 with one
  JSON object on stdout is a result; exit 2 with a reason on stderr is a
  refusal (``{"error": stderr}``); anything else, a time-out or stdout that
  is not one JSON object fails the case.
* :class:`BatchCommand` — one ``CMD run --json --batch`` process reads one
  document per line on stdin and answers one line each (the JVM starts once).
  A crash, a time-out, a line that is not a JSON object or a line too many
  fails that case; the process is started again for the next one.
* :class:`PythonModule` — a module with ``run_document(text: str) -> dict``
  (the result line as a Python value), called in-process on a worker thread
  so a time-out fails the case without stopping the run. ``conformance run
  --python`` runs the module in a child process instead (:func:`python_process`),
  so that a module that exits, is killed or hangs fails its case and cannot
  end, stop or write into the runner.

The implementation is not trusted. A result line is read with the protocol's
strict JSON (:func:`~diagnosis_core.protocol.loads_stored`: a duplicate key,
``NaN`` or nesting deeper than the parser goes is a failed case, never a
last-value-wins object or a traceback), must be UTF-8, and is at most
:data:`MAX_LINE_BYTES` long. A child process runs in its own session (it has
no controlling terminal) and its whole process group is killed when its case
ends badly. What an implementation wrote is quoted in a failure with every
terminal control and line break shown as a visible escape
(``terminal_safe``, spec §15), so it can neither act on the
reader's terminal nor forge a line of the report.

A result is compared with the case's expected result exactly: same JSON
types (``1`` is not ``1.0`` nor ``true``), same keys, same order of arrays.
A refusal matches an expected refusal when its message names the path the
case records (``error_names``); the rest of the wording is free, but it must
say something.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any, Protocol
from xml.sax.saxutils import escape, quoteattr

import attrs

from diagnosis_core import PayloadError, terminal_safe
from diagnosis_core.protocol import loads_stored

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

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest result (a batch line, a file's stdout) read; a longer one fails its case."""

_STDERR_BYTES = 65536  # what is kept of an implementation's standard error
_GRACE = 2.0  # seconds to wait for a process that should already be ending


class Implementation(Protocol):
    """Something that turns a document's text into a result line (or a failure message)."""

    def run(self, text: str) -> Any:
        """The result line as a JSON value, or raise :class:`CaseFailure`."""
        ...

    def close(self) -> None:
        """Release what the implementation holds (a child process).

        May raise :class:`CaseFailure` for something found only at the end
        (a batch process that wrote a line after the last answer): it fails
        the last case.
        """
        ...


class CaseFailure(Exception):
    """The implementation crashed, timed out or printed something that is not JSON."""


def inert(text: str) -> str:
    """``text`` safe to print on one line of a report (its controls and line breaks escaped).

    ``terminal_safe`` (spec §15), plus the line break it
    keeps, so foreign text can neither act on a terminal nor start a line of
    its own (a forged ``324 passed``).
    """
    return terminal_safe(text).replace("\n", "\\n")


def _short(text: str, limit: int = 200) -> str:
    text = text.strip()
    return inert(text if len(text) <= limit else text[:limit] + "…")


def _json_object(text: str, what: str) -> Any:
    """The JSON object ``text`` holds, read strictly; anything else fails the case."""
    if not text.strip():
        raise CaseFailure(f"{what} is empty")
    try:
        value = loads_stored(text)
    except PayloadError as error:
        raise CaseFailure(f"{what} is not strict JSON ({_short(str(error))}): "
                          f"{_short(text)}") from None
    if not isinstance(value, dict):
        raise CaseFailure(f"{what} is not a JSON object: {_short(text)}")
    return value


def _utf8(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CaseFailure(
            f"{what} is not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def _status(code: int | None) -> str:
    """``exit status 3``, ``killed by SIGKILL``: how a process ended."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _popen(command: Sequence[str], stdin: int) -> subprocess.Popen[bytes]:
    """Start an implementation in a session of its own (no terminal, one process group)."""
    try:
        return subprocess.Popen(
            list(command), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (OSError, ValueError) as error:
        raise CaseFailure(f"cannot start {inert(repr(command[0]))}: {_short(str(error))}"
                          ) from None


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the process and everything it started in its group, and reap it."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)  # the group outlives its reaped leader
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_GRACE)


def _close_streams(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _drain(stream: IO[bytes], sink: list[bytes]) -> None:
    """Read ``stream`` to its end, keeping its first :data:`_STDERR_BYTES`."""
    with contextlib.suppress(OSError, ValueError):
        kept = 0
        for chunk in iter(lambda: stream.read(4096), b""):
            if kept < _STDERR_BYTES:
                sink.append(chunk)
                kept += len(chunk)


def _stderr_text(sink: list[bytes]) -> str:
    return _short(b"".join(sink).decode("utf-8", "replace"))


class _Oversize:
    """The marker of a line longer than :data:`MAX_LINE_BYTES` (reading stopped there)."""


_EOF = object()
_OVERSIZE = _Oversize()


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
        deadline = time.monotonic() + self.timeout
        process = _popen([*self.command, "run", "--json", path], subprocess.DEVNULL)
        assert process.stdout is not None and process.stderr is not None
        out: list[object] = []
        err: list[bytes] = []
        reader = threading.Thread(target=_read_all, args=(process.stdout, out), daemon=True)
        drainer = threading.Thread(target=_drain, args=(process.stderr, err), daemon=True)
        reader.start()
        drainer.start()
        try:
            reader.join(max(0.0, deadline - time.monotonic()))
            if out and out[-1] is _OVERSIZE:
                raise CaseFailure(f"stdout is longer than {MAX_LINE_BYTES} bytes")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            # A child of the implementation may hold the pipes open after it exited.
            drainer.join(max(0.0, deadline - time.monotonic()))
            if process.returncode is None or reader.is_alive() or drainer.is_alive():
                raise CaseFailure(f"timed out after {self.timeout:g} s")
        finally:
            _kill(process)
            _close_streams(process)
        code = process.returncode
        if code == 2:
            reason = b"".join(err).decode("utf-8", "replace").strip()
            if not reason:
                raise CaseFailure("exit status 2 with an empty standard error "
                                  "(a refusal gives its reason)")
            return {"error": reason}
        if code != 0:
            stderr = _stderr_text(err)
            raise CaseFailure(_status(code) + (f": {stderr}" if stderr else ""))
        data = b"".join(part for part in out if isinstance(part, bytes))
        return _json_object(_utf8(data, "stdout"), "stdout")

    def close(self) -> None:
        self._directory.cleanup()


def _read_all(stream: IO[bytes], sink: list[object]) -> None:
    """Read ``stream`` to its end; past :data:`MAX_LINE_BYTES`, stop with the oversize mark."""
    with contextlib.suppress(OSError, ValueError):
        size = 0
        for chunk in iter(lambda: stream.read(65536), b""):
            size += len(chunk)
            if size > MAX_LINE_BYTES:
                sink.append(_OVERSIZE)
                return
            sink.append(chunk)


def _pump(stream: IO[bytes], lines: queue.Queue[object]) -> None:
    """Put each line of ``stream`` on ``lines``, then :data:`_EOF` (or the oversize mark)."""
    try:
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES:
                lines.put(_OVERSIZE)
                return
            lines.put(line)
    except (OSError, ValueError):
        pass
    lines.put(_EOF)


def _write(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.flush()


@attrs.define
class BatchCommand:
    """One ``CMD run --json --batch`` process: a document per line in, a result per line out."""

    command: Sequence[str]
    timeout: float = DEFAULT_TIMEOUT
    _process: subprocess.Popen[bytes] | None = None
    _lines: queue.Queue[object] = attrs.field(factory=queue.Queue)
    _stderr: list[bytes] = attrs.field(factory=list)
    _drainer: threading.Thread | None = attrs.field(default=None, init=False)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        self._lines = queue.Queue()
        self._stderr = []
        process = _popen([*self.command, "run", "--json", "--batch"], subprocess.PIPE)
        assert process.stdout is not None and process.stderr is not None
        threading.Thread(target=_pump, args=(process.stdout, self._lines), daemon=True).start()
        self._drainer = threading.Thread(
            target=_drain, args=(process.stderr, self._stderr), daemon=True
        )
        self._drainer.start()
        self._process = process
        return process

    def run(self, text: str) -> Any:
        if self._process is not None and self._pending_lines():
            # Every document so far was answered: a waiting line is one too many.
            self._stop()
            raise CaseFailure("the previous document was answered with more than one line "
                              "(the batch was out of step; the process is started again)")
        deadline = time.monotonic() + self.timeout
        process = self._start()
        assert process.stdin is not None
        # Written on a thread: a process that stops reading cannot block the runner
        # past the deadline (a document may be larger than the pipe's buffer).
        writer = threading.Thread(
            target=_write, args=(process.stdin, text.encode("utf-8", "surrogatepass") + b"\n"),
            daemon=True,
        )
        writer.start()
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            self._stop()
            raise CaseFailure(f"timed out after {self.timeout:g} s") from None
        if line is _EOF:
            raise CaseFailure(f"the implementation ended ({self._ended()})")
        if line is _OVERSIZE:
            self._stop()
            raise CaseFailure(f"the result line is longer than {MAX_LINE_BYTES} bytes")
        writer.join(max(0.0, deadline - time.monotonic()))
        if writer.is_alive():
            self._stop()
            raise CaseFailure("answered before reading the whole document")
        assert isinstance(line, bytes)
        try:
            return self._result(_json_object(_utf8(line, "the result line"), "the result line"))
        except CaseFailure:
            self._stop()  # the stream may be out of step: start afresh
            raise

    def _pending_lines(self) -> bool:
        """Whether a line came that no document asked for (an end of output is not one)."""
        pending = False
        with contextlib.suppress(queue.Empty):
            while True:
                item = self._lines.get_nowait()
                if item is _EOF:
                    self._lines.put(_EOF)  # kept: the process ended between two documents
                    break
                pending = True
        return pending

    def _result(self, line: dict[str, Any]) -> Any:
        """The case's result, given the object the line holds."""
        return line

    def _ended(self) -> str:
        """How the process ended and the start of what it wrote on stderr; it is stopped."""
        process = self._process
        status = None
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_GRACE)
            status = process.poll()
        if self._drainer is not None:  # what it wrote before it ended, read to the end
            self._drainer.join(_GRACE)
        self._stop()
        tail = _stderr_text(self._stderr)
        return _status(status) + (f": {tail}" if tail else "")

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        _kill(process)
        _close_streams(process)

    def close(self) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=self.timeout)
        extra: list[object] = []
        with contextlib.suppress(queue.Empty):
            while True:  # the pump ends at EOF (or at the deadline, when a child holds stdout)
                item = self._lines.get(timeout=_GRACE)
                if item is _EOF:
                    break
                extra.append(item)
        self._stop()
        if extra:
            raise CaseFailure(
                f"the last document was answered with more than one line "
                f"({len(extra)} more before the process ended)"
            )


@attrs.define
class PythonModule:
    """An in-process implementation: ``module.run_document(text) -> dict``."""

    function: Callable[[str], Mapping[str, Any]]
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def load(cls, name: str, timeout: float = DEFAULT_TIMEOUT) -> PythonModule:
        """Import ``name``; it must define a callable ``run_document``.

        Raises :class:`ImportError` when the module cannot be imported, also
        when importing it raises something else (``SystemExit`` included),
        and :class:`ValueError` when it has no callable ``run_document``.
        """
        module = _import(name)
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
            raise CaseFailure(raised(value))
        return _json_object(wire_text(value), "the returned value")

    def close(self) -> None:
        pass


def _import(name: str) -> Any:
    """``importlib.import_module``; whatever the import raises becomes an ImportError."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise
    except BaseException as error:  # SystemExit too: the module's exit is not the runner's
        raise ImportError(f"{name}: {raised(error)}", name=name) from None


def raised(error: BaseException) -> str:
    """``raised RuntimeError: message``, shortened and inert (never raises itself)."""
    try:
        message = str(error)
    except Exception:  # an exception whose __str__ fails
        message = "(a message that cannot be shown)"
    return f"raised {type(error).__name__}: {_short(message)}"


def wire_text(value: object) -> str:
    """What ``run_document`` returned, as the JSON text a wire would carry.

    Raises :class:`CaseFailure` for anything else than a mapping, or a value
    JSON cannot carry (a set, ``NaN``, a cycle, nesting deeper than the
    encoder goes). Keys are written as :func:`json.dumps` writes them, so
    ``1`` and ``"1"`` collide, and the strict reader refuses the duplicate.
    """
    if not isinstance(value, Mapping):
        raise CaseFailure(f"returned {type(value).__name__}, not a JSON object")
    try:
        return json.dumps(dict(value), allow_nan=False)  # ASCII: lone surrogates escaped
    except RecursionError:
        raise CaseFailure("returned a value that is not JSON: nesting too deep") from None
    except (TypeError, ValueError) as error:
        raise CaseFailure(f"returned a value that is not JSON: {_short(str(error))}") from None


# --- a Python module in a child process ---------------------------------------------------

_BOOT = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "from diagnosis_core.conformance._worker import main\n"
    "sys.exit(main(sys.argv[2]))\n"
)


@attrs.define
class _PythonProcess(BatchCommand):
    """A ``run_document`` module run by ``_worker`` in a child process, one document a line.

    The worker answers ``{"result": value}`` or ``{"failure": reason}`` per
    line; the module's own output goes to the child's standard error.
    """

    def _result(self, line: dict[str, Any]) -> Any:
        if set(line) == {"failure"} and isinstance(line["failure"], str):
            raise CaseFailure(inert(line["failure"]))
        if set(line) != {"result"}:
            raise CaseFailure("the worker's line is not {\"result\": …}")
        result = line["result"]
        if not isinstance(result, dict):
            raise CaseFailure(f"returned {type(result).__name__}, not a JSON object")
        return result


def python_process(name: str, timeout: float = DEFAULT_TIMEOUT) -> Implementation:
    """``MODULE.run_document`` run in a child process (what ``conformance run --python`` uses).

    The child imports the module with this process's ``sys.path``. Importing
    it, exiting, being killed or hanging fails the case at hand, and the
    next case starts a new child.
    """
    command = [sys.executable, "-c", _BOOT, json.dumps(sys.path), name]
    return _PythonProcess(command, timeout)


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
    try:
        text = json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return f"an {_kind(value)} nested too deep to show"
    except (TypeError, ValueError):
        text = repr(value)
    return inert(text if len(text) <= limit else text[:limit] + "…")


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
        if len(actual) != 1:
            other = next(key for key in actual if key != "error")
            return [f"$.{inert(other)}: a refusal is {{\"error\": message}} alone, "
                    f"got {_show(actual[other])}"]
        if not actual["error"].strip():
            return ["$.error: expected a message giving the reason got an empty message"]
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
    last: CaseResult | None = None  # reported once the implementation is closed
    try:
        for case in cases:
            if last is not None and report is not None:
                report(last)
            started = time.perf_counter()
            try:
                actual = implementation.run(document_text(case))
                problems = tuple(compare(case, actual))
            except CaseFailure as failure:
                problems = (f"$: {failure}",)
            except RecursionError:  # a corpus nested as deep as its reader allows
                problems = ("$: nesting too deep to write or compare",)
            last = CaseResult(case, problems, time.perf_counter() - started)
            results.append(last)
    finally:
        try:
            implementation.close()
        except CaseFailure as failure:  # found at the end: it fails the last case
            if last is not None:
                last = attrs.evolve(last, problems=(*last.problems, f"$: {failure}"))
                results[-1] = last
    if last is not None and report is not None:
        report(last)
    return results


def failure_lines(result: CaseResult) -> list[str]:
    """``FAIL <case>: <path>: expected … got …`` lines, then the case's ``why``."""
    lines = [f"FAIL {inert(result.case.id)}: {inert(problem)}" for problem in result.problems]
    lines.append(f"    why: {inert(result.case.why)}")
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


