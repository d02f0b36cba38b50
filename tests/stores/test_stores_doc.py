"""The "Storing runs" page's snippet runs as written, pasted into a file in an empty folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from store_support import ROOT


def test_the_storing_runs_snippet_runs(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "stores.md").read_text(encoding="utf-8")
    (snippet,) = [block for block in re.findall(r"```python\n(.*?)```", page, re.DOTALL)
                  if "run_diagnosis" in block]
    (tmp_path / "snippet.py").write_text(snippet, encoding="utf-8")
    # The clone's root on the path, as `pip install -e .` puts it; nothing else here.
    completed = subprocess.run(
        [sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "ANSWERED None\n"
    assert (tmp_path / "runs.db").exists()
