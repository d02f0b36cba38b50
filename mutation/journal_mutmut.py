"""Mutation testing of the journal, tool-recorder and observer modules (mutmut 3).

mutmut 3 reads one ``[tool.mutmut]`` table from ``pyproject.toml``; the
project's own table mutates the decision modules. This script runs mutmut on
one *group* of modules — ``journal``, ``tools`` (the recorder) or ``observer``
(the hooks and their dispatch) — against the unit tests that exercise that
group, without touching the checkout: it copies the project to a work
directory (``mutants-<group>/``, git-ignored), replaces the table there with
the group's configuration, and runs ``mutmut`` in it with one child process
(``--max-children 1``: the machine is shared).

    python mutation/journal_mutmut.py --group journal run            # every mutant of the group
    python mutation/journal_mutmut.py --group journal run "diagnosis_core._kernel.journal.mac*"
    python mutation/journal_mutmut.py --group journal sample --size 40 --seed 23
    python mutation/journal_mutmut.py --group journal report         # per-module counts
    python mutation/journal_mutmut.py --group journal snapshot       # keep results (baseline/)
    python mutation/journal_mutmut.py --group journal survivors      # names not killed
    python mutation/journal_mutmut.py --group journal results        # survivors
    python mutation/journal_mutmut.py --group journal show NAME       # one mutant's diff

``sample`` generates the group's mutants, draws ``--size`` of them per module
with ``random.Random(seed)`` (every mutant of a module that has fewer; of the
observer group's dispatch modules only the mutants of the functions in
:data:`GROUPS`' ``functions``), writes the drawn names to
``mutants-<group>/sample.txt`` and runs mutmut on exactly those. ``report``
counts, per module, the mutants generated and the sampled ones by status.

Property tests, the SIGKILL matrix and the adapter tests are left out of the
selection: they cost seconds to minutes per mutant; the figures are therefore
what the unit tests alone kill (a lower bound).
"""

from __future__ import annotations

import fnmatch
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TypedDict

ROOT = Path(__file__).resolve().parent.parent


class Group(TypedDict):
    """Modules mutated, the tests run, and (optionally) the functions sampled."""

    modules: tuple[str, ...]
    tests: tuple[str, ...]
    functions: tuple[str, ...]


DECISION_MODULES: tuple[str, ...] = (
    "diagnosis_core/_chat/routing.py",
    "diagnosis_core/_chat/machine.py",
    "diagnosis_core/_chat/gatekeeper.py",
    "diagnosis_core/_chat/projection.py",
    "diagnosis_core/_chat/verdict.py",
    "diagnosis_core/_chat/gaps.py",
    "diagnosis_core/_chat/parsing.py",
    "diagnosis_core/_kernel/machine/classify.py",
    "diagnosis_core/_kernel/machine/tables.py",
    "diagnosis_core/_kernel/machine/stepping.py",
    "diagnosis_core/_aiops/routing.py",
    "diagnosis_core/_aiops/rules.py",
    "diagnosis_core/_aiops/machine.py",
)
"""The decision modules: mutmut mutates their function bodies (the ``decisions`` group),
mutation/table_mutants.py their module-level tables and class defaults."""

DECISION_TESTS: tuple[str, ...] = (
    "tests/test_decisions_pinned.py",
    "tests/test_decisions.py",
    "tests/test_decision_details.py",
    "tests/test_routing_machine.py",
    "tests/test_classify.py",
    "tests/test_classify_http_clients.py",
    "tests/test_gatekeeper.py",
    "tests/test_hardening_gatekeeper.py",
    "tests/test_parsing.py",
    "tests/test_stepping.py",
    "tests/test_kernel_shared_rules.py",
    "tests/test_aiops_rules.py",
    "tests/test_aiops_machine.py",
    "tests/test_aiops_parsing.py",
    "property_tests/test_routing_table_walk.py",
)
"""The fast tests of the decision modules (shared with mutation/table_mutants.py)."""


GROUPS: dict[str, Group] = {
    "journal": {
        "modules": (
            "diagnosis_core/_kernel/journal/mac.py",
            "diagnosis_core/_kernel/journal/fold.py",
            "diagnosis_core/_kernel/journal/codec.py",
            "diagnosis_core/_kernel/journal/tool_calls.py",
            "diagnosis_core/_kernel/journal/store.py",
            "diagnosis_core/_chat/journal.py",
            "diagnosis_core/_aiops/journal.py",
        ),
        "tests": (
            "tests/test_journal.py",
            "tests/test_journal_integrity.py",
            "tests/test_journal_tools.py",
            "tests/test_journal_drivers.py",
            "tests/test_aiops_journal.py",
            "tests/test_fact_codec.py",
            "tests/test_journal_mutants.py",
        ),
        "functions": (),
    },
    "tools": {
        "modules": (
            "diagnosis_core/_kernel/tools/recorder.py",
            "diagnosis_core/_chat/run_recorders.py",
        ),
        "tests": (
            "tests/test_tools.py",
            "tests/test_aiops_tools.py",
            "tests/test_journal_tools.py",
            "tests/test_storable_values.py",
            "tests/test_tools_mutants.py",
        ),
        "functions": (),
    },
    "decisions": {
        # The decision modules of the issue "Decisions no test pins"; their
        # module-level tables are mutated by mutation/table_mutants.py (mutmut
        # only mutates function bodies).
        "modules": DECISION_MODULES,
        "tests": DECISION_TESTS,
        "functions": (),
    },
    "observer": {
        "modules": (
            "diagnosis_core/_kernel/driving/observe.py",
            "diagnosis_core/_kernel/driving/loop.py",
            "diagnosis_core/_chat/drivers.py",
            "diagnosis_core/_aiops/drivers.py",
        ),
        "tests": (
            "tests/test_observe.py",
            "tests/test_observer_isolation.py",
            "tests/test_observe_mutants.py",
            "tests/test_machine_and_drivers.py",
            "tests/test_aiops_drivers.py",
        ),
        # observe.py whole; of the drivers only the observer dispatch
        "functions": (
            "diagnosis_core._kernel.driving.observe.*",
            "diagnosis_core._kernel.driving.loop.x_watcher_of__*",
            "diagnosis_core._kernel.driving.loop.x_drive_steps__*",
            "diagnosis_core._kernel.driving.loop.x_adrive_steps__*",
            "diagnosis_core._chat.drivers.xǁ_JournalRecorderǁend__*",
            "diagnosis_core._chat.drivers.xǁ_Runǁ*",
            "diagnosis_core._chat.drivers.x__returned__*",
            "diagnosis_core._aiops.drivers.xǁ_Runǁopening__*",
        ),
    },
}


def _list(items: tuple[str, ...]) -> str:
    return "[\n" + "".join(f'    "{item}",\n' for item in items) + "]"


def config(group: Group) -> str:
    """The ``[tool.mutmut]`` table of one group."""
    tests = tuple(t for t in group["tests"] if (ROOT / t).exists())
    return f"""[tool.mutmut]
# Written by mutation/journal_mutmut.py for one group of modules.
source_paths = ["diagnosis_core/"]
only_mutate = {_list(group["modules"])}
pytest_add_cli_args_test_selection = {_list(tests)}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-k", "not sigkill"]
also_copy = ["property_tests/", "conftest.py", "examples/", "tests/", "docs/"]
use_git_change_detection = false

"""


_TABLE = re.compile(r"^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", re.MULTILINE | re.DOTALL)
_SKIP = shutil.ignore_patterns(".git", "mutants", "mutants-*", "__pycache__", ".hypothesis",
                               "site", "*.egg-info")


def prepare(workdir: Path, group: Group) -> None:
    """A copy of the project whose ``[tool.mutmut]`` table is the group's."""
    if not workdir.exists():
        shutil.copytree(ROOT, workdir, ignore=_SKIP)
    else:  # keep mutmut's state (it resumes); refresh the sources and tests
        for name in ("diagnosis_core", "tests", "property_tests", "examples", "docs"):
            shutil.rmtree(workdir / name, ignore_errors=True)
            shutil.copytree(ROOT / name, workdir / name, ignore=_SKIP)
        shutil.copy2(ROOT / "conftest.py", workdir / "conftest.py")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    replaced, count = _TABLE.subn(config(group), text)
    if count != 1:
        raise SystemExit("pyproject.toml: expected exactly one [tool.mutmut] table")
    (workdir / "pyproject.toml").write_text(replaced, encoding="utf-8")


_GENERATE = """
import os
from mutmut.__main__ import create_mutants
from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(1)
"""


def _meta(workdir: Path, module: str) -> dict[str, int | None]:
    """Each mutant's exit code; one not checked since tests were added keeps its baseline code.

    mutmut forgets every result when the test selection changes. Tests are only
    ever added, so a mutant killed before stays killed: ``snapshot`` keeps the
    codes in ``baseline/`` before a re-run of the survivors, and a mutant that
    was not re-run reports its baseline code.
    """
    path = workdir / "mutants" / (module + ".meta")
    codes: dict[str, int | None] = json.loads(path.read_text(encoding="utf-8"))["exit_code_by_key"]
    base = workdir / "baseline" / (module + ".meta")
    if base.exists():
        before = json.loads(base.read_text(encoding="utf-8"))["exit_code_by_key"]
        codes = {n: before.get(n) if c is None else c for n, c in codes.items()}
    return codes


def snapshot(workdir: Path, group: Group) -> None:
    """Keep the current results in ``baseline/`` (merged with an earlier baseline)."""
    for module in group["modules"]:
        codes = _meta(workdir, module)
        target = workdir / "baseline" / (module + ".meta")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"exit_code_by_key": codes}), encoding="utf-8")


def _wanted(group: Group, name: str) -> bool:
    patterns = group["functions"]
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def draw(workdir: Path, group: Group, size: int, seed: int) -> list[str]:
    """``size`` mutant names per module (all when fewer), drawn with ``Random(seed)``."""
    rng = random.Random(seed)
    drawn: list[str] = []
    for module in group["modules"]:
        names = sorted(n for n in _meta(workdir, module) if _wanted(group, n))
        drawn += sorted(names if len(names) <= size else rng.sample(names, size))
    return drawn


def _status(code: int | None) -> str:
    from mutmut.stats import status_by_exit_code  # mutmut's own reading of an exit code

    return str(status_by_exit_code[code])


def report(workdir: Path, group: Group) -> str:
    """Per module: mutants generated (of the sampled functions), sampled, and their statuses."""
    sample_file = workdir / "sample.txt"
    sample = set(sample_file.read_text(encoding="utf-8").split()) if sample_file.exists() else None
    lines = []
    for module in group["modules"]:
        codes = {n: c for n, c in _meta(workdir, module).items() if _wanted(group, n)}
        chosen = [n for n in codes if sample is None or n in sample]
        counts = Counter(_status(codes[n]) for n in chosen)
        lines.append(f"{module}: generated {len(codes)}, sampled {len(chosen)}, "
                     + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        lines += [f"    {n}: {_status(codes[n])}" for n in sorted(chosen)
                  if _status(codes[n]) not in ("killed", "caught by type check")]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    name = "journal"
    workdir: Path | None = None
    while argv[:1] in (["--workdir"], ["--group"]):
        if argv[0] == "--workdir":
            workdir = Path(argv[1]).resolve()
        else:
            name = argv[1]
        argv = argv[2:]
    group = GROUPS[name]
    workdir = workdir or ROOT / f"mutants-{name}"
    prepare(workdir, group)
    env = dict(os.environ, HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "mutation"))
    # mutmut puts its mutated copy first on the path: the checkout must not be on it
    # (other entries, e.g. a directory mutmut was installed into, are kept).
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != ROOT]
    env["PYTHONPATH"] = os.pathsep.join(kept)
    found = shutil.which("mutmut")
    mutmut = [found] if found else [sys.executable, "-m", "mutmut"]
    command = argv[0] if argv else "run"
    if command == "report":
        print(report(workdir, group))
        return 0
    if command == "snapshot":
        snapshot(workdir, group)
        return 0
    if command == "survivors":  # the sampled mutants not killed: what a re-run needs
        print("\n".join(line.split(":")[0].strip() for line in report(workdir, group).splitlines()
                        if line.startswith("    ")))
        return 0
    if command == "sample":
        options = dict(zip(argv[1::2], argv[2::2], strict=False))
        subprocess.check_call([sys.executable, "-c", _GENERATE], cwd=workdir, env=env)
        names = draw(workdir, group, int(options.get("--size", "40")),
                     int(options.get("--seed", "23")))
        (workdir / "sample.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
        print(f"{len(names)} mutants drawn; names in {workdir / 'sample.txt'}")
        return subprocess.call([*mutmut, "run", "--max-children", "1", *names],
                               cwd=workdir, env=env)
    if command == "run" and "--max-children" not in argv:
        argv = ["run", "--max-children", "1", *argv[1:]]
    return subprocess.call([*mutmut, *(argv or ["run"])], cwd=workdir, env=env)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
