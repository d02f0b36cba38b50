"""The fast lane leaves out exactly the files tests/lanes.py names, and they exist; the time
limits are set; docs/testing.md states the count of tests each lane collects."""

from __future__ import annotations

import re
import tomllib

import pytest
from lane_figures import LANES, PAGE, _with_count, collected, page_counts
from lanes import (
    FILE_SECONDS,
    FILE_SECONDS_WITHOUT_SLOW,
    ROOT,
    SLOW_FILES,
    SLOW_TESTS,
    TIME_LIMITS,
    file_seconds,
    longest_files_first,
    workers_for,
)

from tests import lanes


@pytest.mark.parametrize("name", sorted(SLOW_FILES))
def test_every_slow_file_exists(name: str) -> None:
    # A renamed file would silently rejoin the fast lane.
    assert (ROOT / name).is_file()


@pytest.mark.parametrize("node", sorted(SLOW_TESTS))
def test_every_slow_test_exists(node: str) -> None:
    path, _, function = node.partition("::")
    function, _, case = function.partition("[")
    assert f"def {function}(" in (ROOT / path).read_text("utf-8")
    if case and path in lanes.COLLECTED_FILES:  # one case: this session collected it
        assert node in lanes.SLOW_CASES_FOUND


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


@pytest.mark.parametrize("name", sorted(TIME_LIMITS))
def test_every_file_with_its_own_time_limit_exists(name: str) -> None:
    assert (ROOT / name).is_file()
    assert TIME_LIMITS[name] > 300  # more than the default, or it would not be listed


def test_the_suite_has_a_default_time_limit_and_the_signal_method() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
    assert float(options["ini_options"]["timeout"]) > 0
    assert options["ini_options"]["timeout_method"] == "signal"


def test_items_of_a_file_with_its_own_limit_carry_it(request: pytest.FixtureRequest) -> None:
    for item in request.session.items:
        name = item.nodeid.split("::")[0]
        if name in TIME_LIMITS:
            marker = item.get_closest_marker("timeout")
            assert marker is not None and marker.args[0] == TIME_LIMITS[name], item.nodeid


def test_the_pages_lane_counts_are_what_each_lane_collects() -> None:
    # The times on the page cannot be checked; the counts can (tests/lane_figures.py).
    stated = page_counts(PAGE.read_text("utf-8"))
    assert set(stated) == set(LANES), "run python tests/lane_figures.py"
    assert stated == collected(), "run python tests/lane_figures.py"


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def test_no_node_id_shows_an_address(request: pytest.FixtureRequest) -> None:
    # An address differs in every xdist worker: the workers would refuse to start. A
    # parametrize ``ids`` must print values without one (give the class a ``__repr__``).
    assert not [item.nodeid for item in request.session.items if _ADDRESS.search(item.nodeid)]


@pytest.mark.parametrize("name", sorted(FILE_SECONDS.keys() | FILE_SECONDS_WITHOUT_SLOW.keys()))
def test_every_file_ranked_by_its_seconds_exists(name: str) -> None:
    # A renamed file would silently lose its place at the head of the queue.
    assert (ROOT / name).is_file()


def test_the_workers_collect_the_longest_files_first_each_file_whole(
    request: pytest.FixtureRequest,
) -> None:
    items = list(request.session.items)
    ordered = longest_files_first(items)
    assert sorted(item.nodeid for item in ordered) == sorted(item.nodeid for item in items)
    files = [item.nodeid.split("::")[0] for item in ordered]
    runs = [name for i, name in enumerate(files) if i == 0 or files[i - 1] != name]
    assert len(runs) == len(set(runs))  # each file in one piece
    for name in set(runs):  # within a file, the collected order
        mine = [item.nodeid for item in items if item.nodeid.split("::")[0] == name]
        assert [item.nodeid for item in ordered if item.nodeid.split("::")[0] == name] == mine
    expected = file_seconds(items)
    seconds = [expected[name] for name in runs]
    assert seconds == sorted(seconds, reverse=True)


@pytest.mark.parametrize(
    ("cores", "workers"), [(None, 2), (1, 2), (2, 3), (4, 5), (7, 8), (8, 8), (64, 8)]
)
def test_auto_starts_one_worker_more_than_the_cores_and_at_most_eight(
    cores: int | None, workers: int
) -> None:
    assert workers_for(cores) == workers


def test_the_suite_asks_pytest_xdist_for_auto_workers_and_the_hook_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "--numprocesses=auto" in options["tool"]["pytest"]["ini_options"]["addopts"]
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert lanes.pytest_xdist_auto_num_workers(None) in range(2, 9)  # type: ignore[arg-type]
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")  # pytest-xdist's own hook reads it
    assert lanes.pytest_xdist_auto_num_workers(None) is None  # type: ignore[arg-type]


def test_pytest_xdist_keeps_the_order_the_workers_collect() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
    addopts = options["ini_options"]["addopts"].split()
    assert "--dist=loadfile" in addopts and "--no-loadscope-reorder" in addopts


def test_a_file_whose_slow_tests_are_left_out_is_ranked_by_the_seconds_of_the_others(
    request: pytest.FixtureRequest,
) -> None:
    items = list(request.session.items)
    for name in FILE_SECONDS_WITHOUT_SLOW:
        mine = [item for item in items if item.nodeid.split("::")[0] == name]
        if not any(item.get_closest_marker("slow") for item in mine):
            continue  # this session runs the fast lane (or not this file)
        assert FILE_SECONDS_WITHOUT_SLOW[name] < FILE_SECONDS[name]
        assert file_seconds(mine) == {name: FILE_SECONDS[name]}
        fast = [item for item in mine if item.get_closest_marker("slow") is None]
        assert fast, name  # only a file with tests in both lanes is listed
        assert file_seconds(fast) == {name: FILE_SECONDS_WITHOUT_SLOW[name]}


def test_the_counts_are_written_before_the_lanes_run_keeping_each_rows_times() -> None:
    # lane_figures.py writes the counts first, so the count check above passes in the run
    # that times the lanes; a lane with no row yet gets one that says it has not run.
    row = ("| full | `python -m pytest` | 5 125 | 5125 passed (exit 0) | 9 min 01 s | 1 s "
           "| 1.0 → 1.0 |")
    updated = _with_count(row, "full", 5145)
    assert page_counts(updated) == {"full": 5145}
    assert updated.replace("5 145", "5 125") == row
    fresh = _with_count(None, "fast", 4141)
    assert page_counts(fresh) == {"fast": 4141} and "not run" in fresh


def test_the_fresh_clone_script_finds_the_readmes_two_commands() -> None:
    from fresh_clone_runs import END, START, readme_commands

    example, suite = readme_commands((ROOT / "README.md").read_text("utf-8"))
    assert "diagnosis-core run examples/" in example and "pip install -e . " in example
    assert suite.endswith("-m pytest") and "'.[all]'" in suite
    page = PAGE.read_text("utf-8")
    assert page.count(START) == 1 and page.count(END) == 1
    with pytest.raises(ValueError, match="3 commands"):
        readme_commands("# x\n\n```bash\na\nb\nc\n```\n")


def test_the_fresh_clone_rows_carry_pytests_own_summary_and_time() -> None:
    from fresh_clone_runs import round_row, suite_summary

    output = "....\n=== 5145 passed, 2 warnings in 655.21s (0:10:55) ===\n"
    assert suite_summary(output) == "5145 passed, 2 warnings, pytest 10 min 55 s"
    assert suite_summary("Killed\n") == "no pytest summary"
    row = round_row(2, (0, 9.6, "answer"), (1, 700.0, "=== 1 failed, 9 passed in 3.0s ==="))
    assert row == ("| 2 | exit 0, 10 s | exit 1, 11 min 40 s | 1 failed, 9 passed, "
                   "pytest 3 s |")
