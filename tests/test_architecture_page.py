"""The architecture page draws the tree as it is (docs/architecture.md)."""

from __future__ import annotations

import pathlib

from tests import architecture_figure as figure


def test_the_page_draws_todays_layers() -> None:
    page = figure.PAGE.read_text(encoding="utf-8")
    assert figure.page_table(page) == figure.table(figure.ROOT / "diagnosis_core"), (
        "the package's layers changed: run `python tests/architecture_figure.py`"
    )


def test_no_arrow_points_up() -> None:
    assert figure.table(figure.ROOT / "diagnosis_core").endswith("Arrows pointing up: none.")


def test_an_upward_arrow_is_drawn_as_one(tmp_path: pathlib.Path) -> None:
    package = tmp_path / "diagnosis_core"
    (package / "_kernel" / "wire").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_kernel" / "__init__.py").write_text("")
    (package / "_kernel" / "errors.py").write_text("from .wire import json\n")
    (package / "_kernel" / "wire" / "__init__.py").write_text("")
    (package / "_kernel" / "wire" / "json.py").write_text("def f():\n    from .. import errors\n")
    drawn = figure.table(package)
    assert "| `_kernel/wire` | 2 | `_kernel` |" in drawn
    assert drawn.endswith("Arrows pointing up: `_kernel` → `_kernel/wire`.")
