"""Rejecting large agent texts: time and peak memory against accepting one (spec §15).

``python benchmarks/rejection.py [--size BYTES] [--case NAME]`` prints a Markdown
table. Each case runs in a fresh interpreter: once timed (process CPU time), once under
:mod:`tracemalloc`, whose peak is the memory the call allocated on top of the
text itself (the text is built before tracing starts).
The target of §15 is < 2 s and < 10× the memory of accepting a text of the
same size. Nothing here is asserted; it is also section ``reject`` of
``run.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import payloads

CASES = ("accept", "nan_at_end", "duplicate_key_at_end", "lone_surrogate_at_end",
         "nested_nan_at_end")


def case_text(case: str, size: int) -> str:
    """The executor text of ``case``, about ``size`` UTF-8 bytes."""
    if case == "nested_nan_at_end":
        body = max(1, (size - 1800) // 2)
        return "[" * 900 + "0," * body + "NaN" + "]" * 900
    text, _ = payloads.text_of_size(size)
    head, last = text[: text.rindex("}")], text[text.rindex("}") :]
    tail = {
        "accept": "",
        "nan_at_end": ', "extra": NaN',
        "duplicate_key_at_end": ', "schema_version": "executor_evidence_v2"',
        "lone_surrogate_at_end": ', "extra": "\\ud800"',
    }[case]
    return head + tail + last


def measure(case: str, size: int) -> dict[str, object]:
    """Run one case in this process: seconds, peak increase in KiB, the outcome."""
    import diagnosis_core as dc
    import diagnosis_core.protocol as dcp

    text = case_text(case, size)

    def call() -> str:
        try:
            dcp.parse_executor_evidence(text)
        except dc.PayloadError as error:
            return f"PayloadError {error.path[:30]}: {error.problem}"[:80]
        return "accepted"

    gc.collect()
    start = time.process_time()
    outcome = call()
    seconds = time.process_time() - start
    gc.collect()
    tracemalloc.start()
    call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"case": case, "bytes": len(text.encode("utf-8", "surrogatepass")),
            "seconds": seconds, "peak_kib": peak // 1024, "outcome": outcome}


def run_isolated(case: str, size: int) -> dict[str, object]:
    here = Path(__file__).parent
    completed = subprocess.run(
        [sys.executable, str(Path(__file__)), "--child", "--case", case, "--size", str(size)],
        capture_output=True, text=True, cwd=here, check=True,
    )
    result: dict[str, object] = json.loads(completed.stdout)
    return result


def table(size: int, cases: tuple[str, ...] = CASES) -> tuple[str, list[dict[str, object]]]:
    results = [run_isolated(case, size) for case in cases]
    accept = next((r for r in results if r["case"] == "accept"), None)
    base = max(1, int(accept["peak_kib"])) if accept else 1  # type: ignore[call-overload]
    lines = ["| case | bytes | s | peak allocated MiB | × accepting | outcome |",
             "|---|---|---|---|---|---|"]
    for r in results:
        peak = int(r["peak_kib"])  # type: ignore[call-overload]
        lines.append(f"| {r['case']} | {r['bytes']:,} | {float(r['seconds']):.2f} | "  # type: ignore[arg-type]
                     f"{peak / 1024:.0f} | {peak / base:.1f} | {r['outcome']} |")
    return "\n".join(lines), results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--case", choices=CASES)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.case, args.size)))
        return
    text, _ = table(args.size, (args.case,) if args.case else CASES)
    print(text)


if __name__ == "__main__":
    main()
