"""Run the README's two set-up commands in a fresh clone, several rounds in a row.

    python tests/fresh_clone_runs.py --runs 5      # then the table in docs/testing.md

A user's first hour is the README's first code block: one command installs the package
and runs the bundled example, the other installs every extra and runs the whole suite.
This script clones the repository's committed state (``HEAD``) into a new folder and
pastes both commands there, round after round in the same clone (the first round builds
the local model's runtime; later rounds find the virtual environment in place), and
writes each round's exit statuses and times between two markers of ``docs/testing.md``
("Fresh-clone runs"). The suite's time is pytest's own (``in N s``); the command's wall
time includes the install. Run it on a quiet machine: the figures are what the page
states about a new user's wait.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "testing.md"
START = "<!-- fresh-clone runs: written by tests/fresh_clone_runs.py; do not edit by hand -->"
END = "<!-- end of fresh-clone runs -->"
_BLOCK = re.compile(r"^```bash\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
_SUMMARY = re.compile(r"=+ (?P<summary>[^=]*\d+ (?:passed|failed)[^=]*?) in (?P<seconds>[\d.]+)s")


def readme_commands(text: str) -> tuple[str, str]:
    """The two commands of the README's first ``bash`` block: the example, the suite."""
    found = _BLOCK.search(text)
    lines = [] if found is None else [ln for ln in found["body"].splitlines() if ln.strip()]
    if len(lines) != 2:
        raise ValueError(f"the README's first bash block has {len(lines)} commands, not 2")
    return lines[0], lines[1]


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def _run(command: str, where: Path, log: Path) -> tuple[int, float, str]:
    """Exit status, wall seconds and the output's tail of ``command`` in a fresh shell."""
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        status = subprocess.run(
            ["bash", "-c", command], cwd=where, stdout=out, stderr=subprocess.STDOUT,
            timeout=3 * 3600, check=False,
        ).returncode
    return status, time.monotonic() - started, log.read_text(encoding="utf-8")[-4000:]


def suite_summary(output: str) -> str:
    """pytest's last summary line as ``<outcome>, <time>``, or what is missing."""
    found = list(_SUMMARY.finditer(output))
    if not found:
        return "no pytest summary"
    last = found[-1]
    return f"{last['summary'].strip()}, pytest {_duration(float(last['seconds']))}"


def round_row(number: int, example: tuple[int, float, str], suite: tuple[int, float, str]) -> str:
    """One round's row of the table."""
    return (
        f"| {number} | exit {example[0]}, {_duration(example[1])} | exit {suite[0]}, "
        f"{_duration(suite[1])} | {suite_summary(suite[2])} |"
    )


def table(rows: list[str], commit: str, load: tuple[float, float]) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        START,
        "",
        "| round | first command (install, the example) | second command (install, the "
        "suite) | the suite, as pytest reports it |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Written by `python tests/fresh_clone_runs.py` on {when}, in one fresh clone of "
        f"commit `{commit}`, on a {os.cpu_count()}-core machine; load average "
        f"{load[0]:.1f} at the start, {load[1]:.1f} at the end.",
        "",
        END,
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="the clone (default: a new "
                        "temporary folder, removed afterwards)")
    parser.add_argument("--log-dir", type=Path, default=Path(tempfile.gettempdir()))
    options = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{PAGE}: the markers of the fresh-clone runs are missing", file=sys.stderr)
        return 2
    example, suite = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.strip()
    clone = options.dir or Path(tempfile.mkdtemp(prefix="fresh-clone-")) / "repo"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    load_start = os.getloadavg()[0]
    rows: list[str] = []
    failed = False
    try:
        for number in range(1, options.runs + 1):
            first = _run(example, clone, options.log_dir / f"fresh-clone-{number}-example.log")
            second = _run(suite, clone, options.log_dir / f"fresh-clone-{number}-suite.log")
            rows.append(round_row(number, first, second))
            print(rows[-1], flush=True)
            failed = failed or first[0] != 0 or second[0] != 0
            # written after each round: a run stopped early keeps the rounds it finished
            before, _, rest = PAGE.read_text(encoding="utf-8").partition(START)
            PAGE.write_text(before + table(rows, commit, (load_start, os.getloadavg()[0]))
                            + rest.partition(END)[2], encoding="utf-8")
    finally:
        if options.dir is None:
            shutil.rmtree(clone.parent, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
