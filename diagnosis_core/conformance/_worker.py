"""The child process of ``conformance run --python MODULE``: the module, isolated.

Started by :func:`~diagnosis_core.conformance._runner.python_process` with the
runner's ``sys.path``. It reads one document per line on standard input and
answers one line per document: ``{"result": value}`` with what
``MODULE.run_document`` returned, or ``{"failure": reason}`` when it raised
or returned something JSON cannot carry. The answers go to a private copy of
the original standard output; the module's own standard output (``print``,
``os.write(1, …)``) is sent to standard error, and its standard input is
empty, so it can neither answer for the worker nor eat a document. When the
module cannot be imported the worker says why on standard error and exits
with status 3: the runner fails the case and starts a new worker.
"""

from __future__ import annotations

import json
import os
import sys

from ._runner import CaseFailure, PythonModule, raised, wire_text

__all__ = ["main"]

EXIT_IMPORT = 3


def main(name: str) -> int:
    """Serve ``name``'s ``run_document`` on stdin/stdout until standard input ends."""
    answers = os.fdopen(os.dup(1), "wb")
    documents = os.fdopen(os.dup(0), "rb")
    os.dup2(2, 1)
    with open(os.devnull, "rb") as empty:
        os.dup2(empty.fileno(), 0)
    try:
        module = PythonModule.load(name)
    except (ImportError, ValueError) as error:  # raised at import: SystemExit included
        return _cannot_import(name, str(error))
    except BaseException as error:  # KeyboardInterrupt: reported, not obeyed
        return _cannot_import(name, raised(error))
    for raw in iter(documents.readline, b""):
        text = raw.decode("utf-8", "surrogatepass").rstrip("\n")
        try:
            line = '{"result": ' + wire_text(module.function(text)) + "}"
        except CaseFailure as failure:
            line = json.dumps({"failure": str(failure)})
        except BaseException as error:  # SystemExit, KeyboardInterrupt: the case fails
            line = json.dumps({"failure": raised(error)})
        answers.write(line.encode("ascii") + b"\n")
        answers.flush()
    return 0


def _cannot_import(name: str, reason: str) -> int:
    sys.stderr.write(f"cannot import {name}: {reason}\n")
    sys.stderr.flush()
    return EXIT_IMPORT
