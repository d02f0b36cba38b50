"""Mutation testing of the journal, tool-recorder and observer modules (mutmut 3).

mutmut 3 reads one ``[tool.mutmut]`` table from ``pyproject.toml``; the
project's own table mutates the decision modules. This script runs mutmut on
the journal, tool-recorder and observer modules instead, against the tests
that exercise them, without touching the checkout: it copies the project to a
work directory (``--workdir``, default ``mutants-journal/``, git-ignored),
replaces the table there with :data:`CONFIG`, and runs ``mutmut`` in it.

    python mutation/journal_mutmut.py run                 # every mutant (hours on 2 cores)
    python mutation/journal_mutmut.py run "diagnosis_core._kernel.journal.mac*"   # a subset
    python mutation/journal_mutmut.py results             # survivors
    python mutation/journal_mutmut.py show NAME           # one mutant's diff

The SIGKILL matrix and the LangGraph/Temporal tests are left out (subprocesses
and servers add minutes per mutant; the in-process crash tests cover the same
code paths).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES = (
    "diagnosis_core/_chat/journal.py",
    "diagnosis_core/_kernel/journal/fold.py",
    "diagnosis_core/_kernel/journal/mac.py",
    "diagnosis_core/_kernel/journal/codec.py",
    "diagnosis_core/_kernel/journal/tool_calls.py",
    "diagnosis_core/_kernel/tools.py",
    "diagnosis_core/_kernel/observe.py",
    "diagnosis_core/aiops/_journal.py",
    "diagnosis_core/aiops/_journal_replay.py",
)
TESTS = (
    "tests/test_journal.py",
    "tests/test_journal_integrity.py",
    "tests/test_journal_tools.py",
    "tests/test_journal_drivers.py",
    "tests/test_aiops_journal.py",
    "tests/test_cli_journal.py",
    "tests/test_tools.py",
    "tests/test_aiops_tools.py",
    "tests/test_observe.py",
    "property_tests/test_journal_properties.py",
    "property_tests/test_journal_drivers_properties.py",
    "property_tests/test_aiops_journal_properties.py",
)


def _list(items: tuple[str, ...]) -> str:
    return "[\n" + "".join(f'    "{item}",\n' for item in items) + "]"


CONFIG = f"""[tool.mutmut]
# Written by mutation/journal_mutmut.py: the journal, tool-recorder and observer modules.
source_paths = ["diagnosis_core/"]
only_mutate = {_list(MODULES)}
pytest_add_cli_args_test_selection = {_list(TESTS)}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-k", "not sigkill"]
also_copy = ["property_tests/", "conftest.py", "examples/", "tests/", "docs/"]
use_git_change_detection = false

"""

_TABLE = re.compile(r"^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", re.MULTILINE | re.DOTALL)
_SKIP = shutil.ignore_patterns(".git", "mutants", "mutants-*", "__pycache__", ".hypothesis",
                               "site", "*.egg-info")


def prepare(workdir: Path) -> None:
    """A copy of the project whose ``[tool.mutmut]`` table is :data:`CONFIG`."""
    if not workdir.exists():
        shutil.copytree(ROOT, workdir, ignore=_SKIP)
    else:  # keep mutmut's state (it resumes); refresh the sources and tests
        for name in ("diagnosis_core", "tests", "property_tests", "examples", "docs"):
            shutil.rmtree(workdir / name, ignore_errors=True)
            shutil.copytree(ROOT / name, workdir / name, ignore=_SKIP)
        shutil.copy2(ROOT / "conftest.py", workdir / "conftest.py")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    replaced, count = _TABLE.subn(CONFIG, text)
    if count != 1:
        raise SystemExit("pyproject.toml: expected exactly one [tool.mutmut] table")
    (workdir / "pyproject.toml").write_text(replaced, encoding="utf-8")


def main(argv: list[str]) -> int:
    workdir = ROOT / "mutants-journal"
    if argv[:1] == ["--workdir"]:
        workdir, argv = Path(argv[1]).resolve(), argv[2:]
    prepare(workdir)
    env = dict(os.environ, HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "mutation"))
    env.pop("PYTHONPATH", None)  # mutmut puts its mutated copy first on the path
    mutmut = shutil.which("mutmut") or str(Path(sys.executable).parent / "mutmut")
    return subprocess.call([mutmut, *(argv or ["run"])], cwd=workdir, env=env)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
