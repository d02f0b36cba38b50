"""The test lanes and the time limits: ``pytest -m "not slow"`` leaves out the files listed here,
and every test has a time limit (pytest-timeout), its file's in ``TIME_LIMITS`` or the default.

The whole suite (``python -m pytest``, what the README and CI run) runs everything. The
fast lane, for before a commit, leaves out the engine tests (a Temporal dev server, a
PostgreSQL cluster, LangGraph parity on every example and generated scenario, runs
killed with SIGKILL) and the property files that take minutes because their tests pin
their own example counts. Each lane's count and wall time are in docs/testing.md ("Test
lanes"), written by ``python tests/lane_figures.py``. A file is marked here, in one place,
so that no test file has to change.

Time limits (docs/testing.md, "Test lanes"): ``timeout`` in pyproject.toml is the default
for every test; ``TIME_LIMITS`` gives the engine, kill-matrix and load files more; a test's
own ``@pytest.mark.timeout(...)`` and a ``--timeout`` on the command line win over both, as
pytest-timeout resolves them. pytest-timeout's ``signal`` method fails a test that runs past
its limit (SIGALRM in the main thread, the stack of every thread dumped, ``Failed`` raised)
and the session goes on. Two backstops here cover what one alarm cannot:

* a teardown still running when the alarm has already fired (the test hung, then a
  fixture's teardown hangs too, e.g. an asyncio fixture whose task refuses cancellation)
  gets the alarm once more, for the test's limit again;
* a hang that no signal reaches (C code holding the GIL, a handler that swallows the
  failure) ends the process: at twice the limit plus ``time_limit_kill_grace`` seconds,
  faulthandler's own watchdog thread dumps every thread's stack and exits with status 1.
  Under pytest-xdist the controller reports that worker's crash and goes on.

After the session the same watchdog bounds the interpreter's exit (a non-daemon thread that
never ends would otherwise hold the process after the summary is printed).

This module is a plugin (the root conftest's ``pytest_plugins``); a child pytest loads it
with ``-p tests.lanes`` (tests/test_time_limits.py).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import traceback
from collections.abc import Generator
from pathlib import Path
from typing import TextIO

import pytest

ROOT = Path(__file__).resolve().parent.parent

SLOW_FILES = frozenset(
    {
        # engines
        "tests/test_parity.py",
        "tests/adapters/test_langgraph_kill.py",
        "tests/adapters/test_langgraph_postgres.py",
        "tests/adapters/test_temporal_adapter.py",
        # kill matrices, runs killed with SIGKILL, engines under load (minutes each)
        "tests/adapters/test_engine_kill_matrix.py",
        "tests/adapters/test_langgraph_kill_matrix.py",
        "tests/adapters/test_langgraph_owner.py",
        "tests/adapters/test_dbos_adapter.py",
        "tests/adapters/test_temporal_aiops.py",
        "tests/adapters/test_aiops_engine_parity.py",
        "tests/stores/test_kill_and_race.py",
        "tests/load/test_engines_under_load.py",
        "tests/load/test_langgraph_lost_run.py",
        # a real model (SmolLM2-135M on the CPU) running both workflows, one file each
        "tests/adapters/test_local_model_runs.py",
        "tests/adapters/test_local_model_aiops.py",
        "docs/bring-your-model.md",
        # the heaviest property files (minutes each on a loaded 2-core machine)
        "tests/test_testing_module.py",
        "property_tests/test_invariants.py",
        "property_tests/test_journal_drivers_properties.py",
        "property_tests/test_journal_properties.py",
        "property_tests/test_aiops_properties.py",
        "property_tests/test_aiops_journal_properties.py",
    }
)

# Single tests of otherwise quick files (ten seconds and more each, loaded): a function
# (every case of it), or one case, ``path::function[id]``.
SLOW_TESTS = frozenset(
    {
        "tests/test_schema_profiles.py::"
        "test_a_profile_instance_that_keeps_the_cross_field_rules_parses_to_the_same_value",
        "tests/test_converter.py::test_json_value_field_accepts_any_json_and_refuses_other_values",
        "tests/test_hardening_json.py::test_rejecting_a_large_text_costs_memory_linear_in_its_size",
        "tests/test_alertmanager.py::test_the_cost_is_linear_in_the_number_of_entries",
        "tests/adapters/test_otel_observer.py::"
        "test_every_generated_run_is_its_span_tree_and_is_unchanged",
        # Waits of a child pytest for its own watchdog (twice a limit, plus a grace); the
        # lane keeps test_hanging_tests_and_teardowns_fail_within_their_limit.
        "tests/test_time_limits.py::test_a_hang_that_swallows_the_alarm_ends_the_process",
        "tests/test_time_limits.py::test_a_session_whose_thread_never_ends_still_exits",
        # The conformance kit's per-file mode starts one process per corpus case; the
        # lane runs every attack in batch mode (one process), the same checks of the report.
        "tests/test_conformance.py::test_this_package_passes_its_kit_per_file",
        "tests/test_conformance.py::"
        "test_a_crash_a_hang_and_garbage_fail_their_cases_only[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_a_hang_whose_child_keeps_the_output_open_times_out[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_a_hanging_implementation_times_out_per_case[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_a_refusal_message_is_shown_terminal_safe[per-file]",
        "tests/test_conformance_attacks.py::test_a_refusal_without_a_reason_fails[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_a_result_line_with_duplicate_keys_fails_the_case[per-file]",
        "tests/test_conformance_attacks.py::test_a_valid_line_for_a_different_case_fails[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_an_endless_line_fails_the_case_without_exhausting_memory[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_an_implementation_killing_itself_with_sigkill_fails[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_an_implementation_printing_nothing_fails[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_an_implementations_stderr_is_shown_terminal_safe[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_deeply_nested_json_from_the_cli_is_a_failed_case[per-file]",
        "tests/test_conformance_attacks.py::"
        "test_deeply_nested_json_in_a_refusal_from_the_cli_is_a_failed_case[per-file]",
        "tests/test_conformance_attacks.py::test_non_utf8_output_fails_the_case[per-file]",
        # Pairs of processes racing on a PostgreSQL server; the lane keeps JSON Lines, SQLite.
        "tests/stores/test_claim_races.py::"
        "test_process_pairs_racing_for_a_run_leave_exactly_one_holder[postgres]",
    }
)


# Time limits in seconds above the default (pyproject.toml: ``timeout``), by file. Each is
# several times the file's slowest test measured under coverage on a loaded 2-core machine.
TIME_LIMITS: dict[str, int] = {
    # a Temporal dev server, PostgreSQL clusters, DBOS launches, runs killed with SIGKILL
    "tests/adapters/test_engine_kill_matrix.py": 1200,
    "tests/adapters/test_langgraph_kill_matrix.py": 900,
    "tests/adapters/test_langgraph_kill.py": 600,
    "tests/adapters/test_langgraph_postgres.py": 600,
    "tests/adapters/test_dbos_adapter.py": 600,
    "tests/adapters/test_temporal_adapter.py": 600,
    "tests/adapters/test_temporal_aiops.py": 600,
    "tests/adapters/test_aiops_engine_parity.py": 600,
    "tests/test_parity.py": 900,
    # the load tests: batches of runs on every engine, workers killed on purpose
    "tests/load/test_engines_under_load.py": 1200,
    "tests/load/test_langgraph_lost_run.py": 600,
    "tests/load/test_load_checks.py": 600,
    # a real model on the CPU: each workflow's run takes one to a few minutes, loaded
    "tests/adapters/test_local_model_runs.py": 900,
    "tests/adapters/test_local_model_aiops.py": 900,
    "docs/bring-your-model.md": 900,
    # processes racing and killed on every store kind (PostgreSQL included)
    "tests/stores/test_kill_and_race.py": 600,
    # the heaviest property files: their tests pin their own example counts
    "tests/test_testing_module.py": 900,
    "property_tests/test_invariants.py": 900,
    "property_tests/test_journal_drivers_properties.py": 900,
    "property_tests/test_journal_properties.py": 900,
    "property_tests/test_aiops_properties.py": 900,
    "property_tests/test_aiops_journal_properties.py": 900,
}


# The longest files, by the seconds their tests took in one run of the whole suite (per
# test: the CPU seconds of the worker and of the processes it started and waited for,
# or the wall seconds over 2.5 where that is more, for tests that wait on servers and
# timers; summed per file; measured on a 2-core machine loaded about 2.5 times over:
# only their order matters). pytest-xdist's ``loadfile`` hands out files in the order of
# the collection (``--no-loadscope-reorder`` in pyproject.toml), and each worker collects
# them longest first (``longest_files_first``): a long file started last would keep one
# worker busy while the other has nothing left to do. Files not listed follow, those with
# the most tests first (pytest-xdist's own order).
FILE_SECONDS: dict[str, int] = {
    "tests/stores/test_crash_sweeps_jsonl.py": 154,
    "tests/adapters/test_engine_kill_matrix.py": 89,
    # a real model (one thread, the CPU seconds of a run alone): listed, or the three
    # start last and run alone at the end
    "tests/adapters/test_local_model_runs.py": 82,
    "tests/stores/test_kill_and_race.py": 67,
    "tests/test_conformance_attacks.py": 62,
    "docs/bring-your-model.md": 61,
    "tests/test_parity.py": 61,
    "tests/test_docs_blocks.py": 59,
    "property_tests/test_journal_drivers_properties.py": 58,
    "property_tests/test_invariants.py": 55,
    "tests/load/test_engines_under_load.py": 51,
    "tests/adapters/test_local_model_aiops.py": 49,
    "tests/adapters/test_aiops_engine_parity.py": 48,
    "tests/test_testing_module.py": 45,
    "tests/stores/test_claim_races.py": 28,
    "tests/test_conformance.py": 27,
    "tests/adapters/test_dbos_adapter.py": 27,
    "tests/test_conformance_mutations.py": 24,
    "tests/stores/test_crash_sweeps_sqlite.py": 20,  # forked writers (test_crash_harness.py)
    "property_tests/test_journal_properties.py": 24,
    "tests/test_time_limits.py": 16,
    "tests/test_schema_profiles.py": 14,
    "tests/stores/test_store_attacks.py": 11,
    "docs/embedding.md": 11,
    "tests/test_docs.py": 10,
}

# Files with tests in both lanes, by the seconds of their tests that are not ``slow``: how
# they rank in the fast lane (``pytest -m "not slow"``), where their slow tests are left out.
FILE_SECONDS_WITHOUT_SLOW: dict[str, int] = {
    "tests/test_conformance_attacks.py": 38,
    "tests/stores/test_claim_races.py": 20,
    "tests/test_conformance.py": 12,
    "docs/embedding.md": 9,
    "tests/test_time_limits.py": 5,
    "tests/test_conformance_mutations.py": 2,
    "tests/test_docs.py": 1,
    "tests/test_schema_profiles.py": 0,
}


MAX_WORKERS = 8
"""The most pytest-xdist workers ``-n auto`` starts, however many cores: each worker starts
its own Temporal dev server and PostgreSQL clusters."""


def workers_for(cores: int | None) -> int:
    """How many workers ``-n auto`` starts: one more than the cores, at most ``MAX_WORKERS``.

    Measured on a 2-core machine, the whole suite keeps two workers busy but the cores
    only three quarters of the time (a Temporal dev server's timers, DBOS launches, child
    pytest sessions waiting for their watchdog, conformance hangs waited out): a third
    worker fills those waits, 13 min 58 s → 11 min 41 s, the cores busy 97 % of the run.
    """
    return max(1, min((cores or 1) + 1, MAX_WORKERS))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``'s count (pyproject.toml); ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    affinity = getattr(os, "sched_getaffinity", None)  # the cores this process may use
    return workers_for(len(affinity(0)) if affinity is not None else os.cpu_count())


# What this session's collection met (before any deselection): tests/test_lanes.py checks
# that every ``path::function[id]`` of SLOW_TESTS names a case that exists.
COLLECTED_FILES: set[str] = set()
SLOW_CASES_FOUND: set[str] = set()


def pytest_itemcollected(item: pytest.Item) -> None:
    path = Path(str(item.path)).resolve()
    if not path.is_relative_to(ROOT):
        return
    name = path.relative_to(ROOT).as_posix()
    function = getattr(item, "originalname", item.name)
    COLLECTED_FILES.add(name)
    if f"{name}::{item.name}" in SLOW_TESTS:
        SLOW_CASES_FOUND.add(f"{name}::{item.name}")
    if (
        name in SLOW_FILES
        or f"{name}::{function}" in SLOW_TESTS
        or f"{name}::{item.name}" in SLOW_TESTS
    ):
        item.add_marker(pytest.mark.slow)
    if name in TIME_LIMITS and item.get_closest_marker("timeout") is None:
        item.add_marker(pytest.mark.timeout(TIME_LIMITS[name]))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # After ``-m``'s deselection: a file whose slow tests are left out is ranked by the
    # seconds of the tests that stay (``FILE_SECONDS_WITHOUT_SLOW``).
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller's order
        items[:] = longest_files_first(items)


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def file_seconds(items: list[pytest.Item]) -> dict[str, int]:
    """The seconds each file of ``items`` is expected to take: ``FILE_SECONDS``, or, when
    none of its items is ``slow``, ``FILE_SECONDS_WITHOUT_SLOW`` where it is listed."""
    files: dict[str, bool] = {}
    for item in items:
        name = _file_of(item)
        files[name] = files.get(name, False) or item.get_closest_marker("slow") is not None
    return {
        name: FILE_SECONDS_WITHOUT_SLOW.get(name, FILE_SECONDS.get(name, 0))
        if not slow
        else FILE_SECONDS.get(name, 0)
        for name, slow in files.items()
    }


def longest_files_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` file by file, the longest files (:func:`file_seconds`) first, then the others
    by their number of tests, most first (what pytest-xdist's ``loadfile`` does by default);
    within a file the collected order."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(_file_of(item), []).append(item)
    seconds = file_seconds(items)
    ranked = sorted(
        files.values(), key=lambda group: (-seconds[_file_of(group[0])], -len(group))
    )
    return [item for group in ranked for item in group]


# --- every test finishes ----------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "time_limit_kill_grace",
        "seconds past twice a test's time limit (and past the session's end) after which "
        "the process dumps every thread's stack and exits with status 1",
        default="60",
    )


_OWNER: list[int] = []  # id() of the outermost config: an in-process inner run stays out
_STDERR: list[TextIO] = []  # the real stderr: a copy of fd 2 taken before any test's capture


def pytest_configure(config: pytest.Config) -> None:
    if _OWNER:
        return
    _OWNER.append(id(config))
    _STDERR.append(os.fdopen(os.dup(sys.__stderr__.fileno()), "w", encoding="utf-8"))


def _owned(config: pytest.Config) -> bool:
    return bool(_OWNER) and _OWNER[0] == id(config)


def _grace(config: pytest.Config) -> float:
    return float(config.getini("time_limit_kill_grace"))


def time_limit(item: pytest.Item) -> float:
    """The item's time limit in seconds, resolved as pytest-timeout does (0: none)."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.kwargs.get("timeout", marker.args[0] if marker.args else None)
        if value is not None:
            return float(value)
    option = item.config.getoption("timeout", None)
    if option is not None:
        return float(option)
    if os.environ.get("PYTEST_TIMEOUT"):
        return float(os.environ["PYTEST_TIMEOUT"])
    try:
        return float(item.config.getini("timeout") or 0)
    except ValueError:  # no pytest-timeout: no ``timeout`` ini key, no limit
        return 0.0


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    limit = time_limit(item)
    armed = limit > 0 and _owned(item.config)
    if armed:
        faulthandler.dump_traceback_later(
            2 * limit + _grace(item.config), exit=True, file=_STDERR[0]
        )
    try:
        return (yield)
    finally:
        if armed:
            faulthandler.cancel_dump_traceback_later()


def _dump_stacks(config: pytest.Config) -> None:
    """The stack of every thread, into the test's report (as pytest-timeout writes its own)."""
    writer = config.get_terminal_writer()
    frames = sys._current_frames()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident) if thread.ident is not None else None
        if frame is not None:
            writer.sep("~", f"Stack of {thread.name} ({thread.ident})")
            writer.write("".join(traceback.format_stack(frame)))


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector) -> None:
    # pytest-timeout and pytest's faulthandler plugin both stop their timers as soon as a
    # phase fails (meant for --pdb): a teardown that then hangs would be bounded by nothing
    # (the original report: the test failed, its asyncio teardown hung for 13 minutes).
    # Without --pdb, the process backstop starts again for what is left of the protocol.
    if (
        isinstance(node, pytest.Item)
        and not node.config.getoption("usepdb", False)
        and _owned(node.config)
    ):
        limit = time_limit(node)
        if limit > 0:
            faulthandler.dump_traceback_later(
                2 * limit + _grace(node.config), exit=True, file=_STDERR[0]
            )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    """A teardown left without a pending alarm (the call failed, or timed out) gets its own."""
    limit = time_limit(item)
    if limit <= 0 or item.config.getoption("usepdb", False) or not hasattr(signal, "setitimer"):
        return (yield)
    if signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        return (yield)  # pytest-timeout's alarm is still pending: it covers the teardown

    def expired(signum: int, frame: object) -> None:
        __tracebackhide__ = True
        _dump_stacks(item.config)
        pytest.fail(f"Timeout (>{limit}s) in teardown, from tests/lanes.py")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Not in a pytest-xdist worker: it finishes its share and then serves the controller
    # until every worker is done; the controller's own watchdog bounds the session's end.
    if _owned(config) and not hasattr(config, "workerinput"):
        faulthandler.dump_traceback_later(_grace(config), exit=True, file=_STDERR[0])
