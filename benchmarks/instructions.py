"""Instructions per call, counted by valgrind's callgrind: a measure that does not drift.

On a shared two-core machine the best of 20 timed rounds of a 7 ms run still
moves by ±20 % from one process to the next, which is more than the glue the
engine sections measure. The number of instructions the CPU executes for one
call does not move: it is the same on every run (±0.5 % here), so a ratio of
instruction counts shows the work an adapter adds, without the machine's noise.
What it cannot show is time the work costs beyond its instructions — cache
misses, waiting for a disk — so it is printed *next to* the timed ratios,
never instead of them.

How: a contender runs in a child interpreter under ``valgrind --tool=callgrind
--instr-atstart=no``; the child sets up, warms up (three calls), then switches
counting on through callgrind's client requests (a four-line C library built
here with the system compiler), makes ``calls`` calls and switches it off.
Every thread is counted (a checkpoint LangGraph writes from its executor
thread is the engine's work), unless ``caller_only``: then only the calling
thread is read (``--separate-threads=yes``), for an engine whose background
threads poll on a timer (DBOS's queue manager) and would add counts that
depend on how long the calls took. Without ``valgrind``, its
``callgrind.h`` or a C compiler the rows say so.

A child is ``python benchmarks/instructions.py MODULE FACTORY ARG CALLS``:
``MODULE.FACTORY(ARG)`` returns the contender (a callable of no argument)
and a clean-up callable.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["count", "unavailable"]

HERE = Path(__file__).resolve().parent
_TOGGLE_C = """#include <valgrind/callgrind.h>
void counting_on(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void counting_off(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("measured"); }
"""
_BUILD_DIR = Path(tempfile.gettempdir()) / "diagnosis-core-bench-callgrind"


@functools.cache
def _library() -> Path | str:
    """The client-request library (built once per machine), or why it cannot be."""
    if shutil.which("valgrind") is None:
        return "no valgrind"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return "no C compiler"
    _BUILD_DIR.mkdir(exist_ok=True)
    source, library = _BUILD_DIR / "toggle.c", _BUILD_DIR / "libtoggle.so"
    source.write_text(_TOGGLE_C, encoding="ascii")
    built = subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(source)],
        capture_output=True, text=True, check=False,
    )
    if built.returncode != 0:
        return "valgrind/callgrind.h is not installed" if "callgrind.h" in built.stderr else (
            f"the client-request library did not build: {built.stderr.strip()[:120]}"
        )
    return library


def unavailable() -> str | None:
    """Why instructions cannot be counted on this machine, or None."""
    built = _library()
    return built if isinstance(built, str) else None


def count(
    module: str, factory: str, argument: str, calls: int = 5, *, caller_only: bool = False
) -> float:
    """Instructions per call of ``module.factory(argument)``'s contender (see the module doc)."""
    library = _library()
    if isinstance(library, str):
        raise RuntimeError(library)
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "callgrind.out"
        child = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             f"--separate-threads={'yes' if caller_only else 'no'}",
             f"--callgrind-out-file={output}", sys.executable, str(Path(__file__).resolve()),
             module, factory, argument, str(calls)],
            capture_output=True, text=True, check=False,
            env={**os.environ, "DIAGNOSIS_CORE_BENCH_TOGGLE": str(library)},
        )
        if child.returncode != 0:
            raise RuntimeError(f"{module}.{factory}({argument!r}): {child.stderr.strip()[-400:]}")
        # The dump taken when counting stops (``-01``: the thread that made the calls).
        dumps = sorted(Path(folder).glob("callgrind.out.1-01" if caller_only else
                                          "callgrind.out.1"))
        if not dumps:
            raise RuntimeError(f"{module}.{factory}({argument!r}): no callgrind dump")
        totals = re.search(r"^totals: (\d+)", dumps[0].read_text(), re.MULTILINE)
        if totals is None:
            raise RuntimeError(f"{dumps[0]}: no totals line")
        return int(totals.group(1)) / calls


def _child(module: str, factory: str, argument: str, calls: int) -> None:
    toggle = ctypes.CDLL(os.environ["DIAGNOSIS_CORE_BENCH_TOGGLE"])
    sys.path.insert(0, str(HERE))
    make: Callable[[str], tuple[Callable[[], object], Callable[[], None]]] = getattr(
        importlib.import_module(module), factory
    )
    contender, clean_up = make(argument)
    try:
        for _ in range(3):  # warm-up: code generation, caches, first allocations
            contender()
        toggle.counting_on()
        for _ in range(calls):
            contender()
        toggle.counting_off()
    finally:
        clean_up()


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
