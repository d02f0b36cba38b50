"""Run each test lane and write its count and wall time into docs/testing.md ("Test lanes").

    python tests/lane_figures.py                 # both lanes, one after the other, then the page
    python tests/lane_figures.py --lane fast     # one lane; the other's row is kept as it was

Each lane is run as a user runs it (``python -m pytest [-m "not slow"] -p no:cacheprovider``,
the options of ``addopts`` included), on whatever else the machine is doing: run it on a
quiet machine for figures worth printing. The table between the two markers of the page
is replaced; nothing else of the page changes. The collected counts come from a
``--collect-only`` of each lane and ``tests/test_lanes.py`` checks them against the page;
the times cannot be checked, so the table says when, where and under what load they
were taken.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "testing.md"
START = "<!-- lane figures: written by tests/lane_figures.py; do not edit by hand -->"
END = "<!-- end of lane figures -->"
LANES: dict[str, list[str]] = {"full": [], "fast": ["-m", "not slow"]}
COMMANDS = {"full": "python -m pytest", "fast": 'python -m pytest -m "not slow"'}
_ROW = re.compile(r"^\| (?P<lane>full|fast) \| .*?\| (?P<count>[\d ]+) \|", re.MULTILINE)


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]


def collected() -> dict[str, int]:
    """The number of tests each lane collects, from one ``--collect-only`` of the fast lane.

    Its last line, ``F/A tests collected (D deselected)``, holds both counts: ``A`` is the
    full lane's, ``F`` the fast lane's.
    """
    out = subprocess.run(
        _pytest("--collect-only", "-q", "-n", "0", *LANES["fast"]),
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    ).stdout
    found = re.search(r"^(\d+)(?:/(\d+))? tests? collected", out, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no count in the collection:\n{out[-2000:]}")
    fast = int(found.group(1))
    return {"full": int(found.group(2) or fast), "fast": fast}


def page_counts(text: str) -> dict[str, int]:
    """The collected count of each lane as the page's table states it."""
    return {m["lane"]: int(m["count"].replace(" ", "")) for m in _ROW.finditer(text)}


def _thousands(number: int) -> str:
    return f"{number:,}".replace(",", " ")


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def run_lane(lane: str, log: Path) -> str:
    """Run ``lane`` and return its table row."""
    count = collected()[lane]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        status = subprocess.run(
            _pytest(*LANES[lane]), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            timeout=3 * 3600, check=False,
        ).returncode
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = log.read_text(encoding="utf-8").splitlines()
    summary = next(
        (line.strip("= ") for line in reversed(lines) if re.search(r"\d+ (passed|failed)", line)),
        "no summary line",
    )
    summary = re.sub(r" in [\d.]+s.*$", "", summary)
    return (
        f"| {lane} | `{COMMANDS[lane]}` | {_thousands(count)} | {summary} (exit {status}) "
        f"| {_duration(wall)} | {_duration(cpu)} | {load:.1f} → {os.getloadavg()[0]:.1f} |"
    )


def _rows(text: str) -> dict[str, str]:
    block = text.split(START, 1)[1].split(END, 1)[0] if START in text else ""
    return {m["lane"]: line for line in block.splitlines() if (m := _ROW.match(line))}


def table(rows: dict[str, str]) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
        check=False,
    ).stdout.strip() or "unknown"
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        START,
        "",
        "| lane | command | tests collected | outcome | wall time | CPU time | load average "
        "(start → end) |",
        "|---|---|---|---|---|---|---|",
        *(rows[lane] for lane in LANES if lane in rows),
        "",
        f"Written by `python tests/lane_figures.py` on {when} at commit `{commit}`, on a "
        f"{os.cpu_count()}-core machine; CPU time is that of every process the lane started.",
        "",
        END,
    ]
    return "\n".join(head)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", choices=[*LANES, "both"], default="both")
    parser.add_argument("--log-dir", type=Path, default=Path("/tmp"))
    options = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{PAGE}: the markers of the lane figures are missing", file=sys.stderr)
        return 2
    rows = _rows(text)
    # The counts first: tests/test_lanes.py checks them during the very run that times
    # the lanes, which would otherwise fail on the page's old counts.
    counts = collected()
    for lane, count in counts.items():
        rows[lane] = _with_count(rows.get(lane), lane, count)
    _write(rows)
    for lane in LANES if options.lane == "both" else [options.lane]:
        log = options.log_dir / f"lane-{lane}.log"
        rows[lane] = run_lane(lane, log)
        print(rows[lane], f"(output: {log})", flush=True)
        _write(rows)  # after each lane: nothing is lost
    return 0


def _with_count(row: str | None, lane: str, count: int) -> str:
    """``row`` with its collected count replaced (a row of dashes when there was none)."""
    if row is None:
        return f"| {lane} | `{COMMANDS[lane]}` | {_thousands(count)} | not run | - | - | - |"
    cells = row.split(" | ")
    cells[2] = _thousands(count)
    return " | ".join(cells)


def _write(rows: dict[str, str]) -> None:
    text = PAGE.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    PAGE.write_text(before + table(rows) + rest.partition(END)[2], encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
