"""The test lanes: ``pytest -m "not slow"`` leaves out the files listed here.

The whole suite (``python -m pytest``, what the README and CI run) runs everything. The
fast lane, for before a commit, leaves out the engine tests (a Temporal dev server, a
PostgreSQL cluster, LangGraph parity on every example and generated scenario, runs
killed with SIGKILL) and the property files that take minutes because their tests pin
their own example counts. Measured on a 2-core machine; see docs/testing.md
("Test lanes"). A file is marked here, in one place, so that no test file has to change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SLOW_FILES = frozenset(
    {
        # engines
        "tests/test_parity.py",
        "tests/adapters/test_langgraph_kill.py",
        "tests/adapters/test_langgraph_postgres.py",
        "tests/adapters/test_temporal_adapter.py",
        # the heaviest property files (minutes each on a loaded 2-core machine)
        "tests/test_testing_module.py",
        "property_tests/test_invariants.py",
        "property_tests/test_journal_drivers_properties.py",
        "property_tests/test_journal_properties.py",
        "property_tests/test_aiops_properties.py",
        "property_tests/test_aiops_journal_properties.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.is_relative_to(ROOT) and path.relative_to(ROOT).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
