"""The test lanes: ``pytest -m "not slow"`` leaves out the files listed here.

The whole suite (``python -m pytest``, what the README and CI run) runs everything. The
fast lane, for before a commit, leaves out the engine tests (a Temporal dev server, a
PostgreSQL cluster, LangGraph parity on every example and generated scenario, runs
killed with SIGKILL) and the property files that take minutes because their tests pin
their own example counts. Measured on a loaded 2-core machine: 2 min 37 s (docs/testing.md,
"Test lanes"). A file is marked here, in one place, so that no test file has to change.
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

# Single property tests of otherwise quick files (ten seconds and more each, loaded).
SLOW_TESTS = frozenset(
    {
        "tests/test_schema_profiles.py::"
        "test_a_profile_instance_that_keeps_the_cross_field_rules_parses_to_the_same_value",
        "tests/test_converter.py::test_json_value_field_accepts_any_json_and_refuses_other_values",
        "tests/test_hardening_json.py::test_rejecting_a_large_text_costs_memory_linear_in_its_size",
        "tests/adapters/test_otel_observer.py::"
        "test_every_generated_run_is_its_span_tree_and_is_unchanged",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path)).resolve()
        if not path.is_relative_to(ROOT):
            continue
        name = path.relative_to(ROOT).as_posix()
        function = getattr(item, "originalname", item.name)
        if name in SLOW_FILES or f"{name}::{function}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
