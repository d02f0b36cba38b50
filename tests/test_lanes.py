"""The fast lane leaves out exactly the files tests/lanes.py names, and they exist."""

from __future__ import annotations

import tomllib

import pytest
from lanes import ROOT, SLOW_FILES, SLOW_TESTS


@pytest.mark.parametrize("name", sorted(SLOW_FILES))
def test_every_slow_file_exists(name: str) -> None:
    # A renamed file would silently rejoin the fast lane.
    assert (ROOT / name).is_file()


@pytest.mark.parametrize("node", sorted(SLOW_TESTS))
def test_every_slow_test_exists(node: str) -> None:
    path, _, function = node.partition("::")
    assert f"def {function}(" in (ROOT / path).read_text("utf-8")


def test_the_slow_marker_is_registered() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
    markers = options["ini_options"]["markers"]
    assert any(marker.startswith("slow:") for marker in markers)


def test_items_of_a_slow_file_carry_the_marker(request: pytest.FixtureRequest) -> None:
    marked = {
        item.nodeid.split("::")[0]
        for item in request.session.items
        if item.get_closest_marker("slow") is not None
    }
    collected = {item.nodeid.split("::")[0] for item in request.session.items}
    assert marked >= SLOW_FILES & collected
    assert "tests/test_lanes.py" not in marked
