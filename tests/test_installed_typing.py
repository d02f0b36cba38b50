"""The installed package type-checks from a user's own project, outside the repository.

``pip install -e .`` must leave something static tools can read: this
project's ``pyproject.toml`` makes setuptools write a plain path into the
editable install's ``.pth`` instead of an import-hook finder, which mypy cannot
follow (``import-not-found``). The test runs mypy from a temporary directory,
as a user would, against whatever install the test environment has.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import diagnosis_core

USER_FILE = """\
from typing import assert_type

import diagnosis_core
from diagnosis_core import DiagnosisRequest, DiagnosisState, Effects, run_diagnosis
from diagnosis_core.aiops import AiOpsEffects, AiOpsRequest, AiOpsState, run_aiops


def host(request: DiagnosisRequest, effects: Effects) -> DiagnosisState:
    return run_diagnosis(request, effects)


def aiops_host(request: AiOpsRequest, effects: AiOpsEffects) -> AiOpsState:
    return run_aiops(request, effects)


assert_type(diagnosis_core.__version__, str)
"""

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="needs mypy (the dev extra)"
)
def test_mypy_resolves_the_installed_package_from_outside_the_repository(tmp_path: Path) -> None:
    user = tmp_path / "user_project"
    user.mkdir()
    (user / "app.py").write_text(USER_FILE, encoding="utf-8")
    assert REPO not in user.resolve().parents
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "app.py"],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_an_editable_install_uses_a_static_path() -> None:
    """No import-hook finder: the ``.pth`` of an editable install is a plain directory."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    pth_files = sorted(purelib.glob("__editable__*diagnosis_core*.pth"))
    if not pth_files:
        pytest.skip("not an editable install")
    lines = [line for pth in pth_files for line in pth.read_text().splitlines() if line.strip()]
    assert lines and all(not line.startswith("import ") for line in lines), lines
    assert Path(diagnosis_core.__file__).resolve().parent.parent in [
        Path(line).resolve() for line in lines
    ]
