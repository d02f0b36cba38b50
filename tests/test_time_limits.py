"""Every test finishes: planted hangs fail within their time limit and the session exits.

A child pytest (``pytester.runpytest_subprocess``, itself bounded) runs planted tests with a
2-second limit, the suite's own settings (``timeout_method = signal``) and its time-limit
plugin (``-p tests.lanes``):

* a test that sleeps forever, a fixture whose teardown hangs, a test that hangs and then its
  fixture's teardown hangs too, and an asyncio fixture whose task refuses cancellation (the
  hang of the original report: ``asyncio.runners._cancel_all_tasks`` in the teardown) each
  fail with pytest-timeout's message and the stack of every thread, within their limit, and
  the session goes on to its summary;
* a test that swallows the alarm's failure and hangs on is ended by the process backstop
  (faulthandler: every thread's stack, exit status 1) at twice its limit plus the grace;
* a session whose non-daemon thread never ends still exits after its summary.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

LIMIT = 2.0
GRACE = 10.0
CHILD_INI = f"""
[pytest]
timeout = {LIMIT}
timeout_method = signal
time_limit_kill_grace = {GRACE}
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""
# A loaded 2-core machine starts a Python process in seconds, not milliseconds: a phase
# may overrun its limit by SLACK, a child pytest may take STARTUP to start and to end.
SLACK = 8.0
STARTUP = 60.0

HANGS = '''
import asyncio
import threading
import time

import pytest


def test_sleeps_forever():
    stop = threading.Event()
    threading.Thread(target=stop.wait, name="helper", daemon=True).start()
    time.sleep(3600)


@pytest.fixture
def stuck_teardown():
    yield
    time.sleep(3600)


def test_teardown_hangs(stuck_teardown):
    pass


def test_hangs_then_its_teardown_hangs(stuck_teardown):
    time.sleep(3600)


@pytest.fixture
async def stubborn_task():
    async def refuse_cancellation():
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue

    task = asyncio.ensure_future(refuse_cancellation())
    await asyncio.sleep(0)
    yield task


async def test_async_fixture_task_refuses_cancellation(stubborn_task):
    assert not stubborn_task.done()


def test_after_the_hangs_still_runs():
    pass
'''


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child's short summary keeps each line whole.
    monkeypatch.setenv("COLUMNS", "400")


def _child(
    pytester: pytest.Pytester, *args: str, within: float
) -> tuple[pytest.RunResult, float]:
    """The child pytest's result and wall time; it must end ``within`` seconds plus STARTUP."""
    pytester.makeini(CHILD_INI)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "-p", "tests.lanes", "-p", "no:cacheprovider", "-p", "no:xdist", *args,
        timeout=within + STARTUP,
    )
    return result, time.monotonic() - started


def _times(pytester: pytest.Pytester) -> dict[str, float]:
    tree = ET.parse(pytester.path / "report.xml")
    return {case.attrib["name"]: float(case.attrib["time"]) for case in tree.iter("testcase")}


def test_hanging_tests_and_teardowns_fail_within_their_limit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_hangs=HANGS)
    # 5 limits: three hangs, one hang and then its teardown's.
    result, _ = _child(pytester, "--junitxml=report.xml", within=5 * (LIMIT + SLACK))
    out = result.stdout.str()
    # The session went on to its summary, every hang a failure or an error, the last test ran.
    result.assert_outcomes(passed=3, failed=2, errors=3)
    # One summary line per failed phase (the terminal is wide: no line is cut short).
    summary = [line for line in out.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    assert sorted(summary) == sorted(
        f"{kind} test_hangs.py::{name} - Failed: Timeout (>2.0s) {source}"
        for kind, name, source in [
            ("FAILED", "test_sleeps_forever", "from pytest-timeout."),
            ("ERROR", "test_teardown_hangs", "from pytest-timeout."),
            ("FAILED", "test_hangs_then_its_teardown_hangs", "from pytest-timeout."),
            ("ERROR", "test_hangs_then_its_teardown_hangs", "in teardown, from tests/lanes.py"),
            ("ERROR", "test_async_fixture_task_refuses_cancellation", "from pytest-timeout."),
        ]
    ), summary
    # The stack of every other thread (pytest-timeout), of every thread (a teardown's own
    # alarm); the main thread's is the failure's traceback, down to where each hang waits.
    assert "~ Stack of helper (" in out
    assert "Timeout (>2.0s) in teardown" in out
    assert "~ Stack of MainThread (" in out
    assert "in _cancel_all_tasks" in out or "_cancel_all_tasks(loop)" in out
    times = _times(pytester)
    assert times["test_sleeps_forever"] < LIMIT + SLACK
    assert times["test_teardown_hangs"] < LIMIT + SLACK
    # The test's limit, then the teardown's limit once more.
    assert times["test_hangs_then_its_teardown_hangs"] < 2 * LIMIT + SLACK
    assert times["test_async_fixture_task_refuses_cancellation"] < LIMIT + SLACK


SWALLOWS = '''
import time


def test_swallows_the_alarm():
    while True:
        try:
            time.sleep(3600)
        except BaseException:
            pass
'''


def test_a_hang_that_swallows_the_alarm_ends_the_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_swallows=SWALLOWS)
    result, wall = _child(pytester, within=2 * LIMIT + GRACE + SLACK)
    assert result.ret == 1
    err = result.stderr.str()
    # faulthandler's dump of every thread, down to the planted test's frame.
    assert "most recent call first" in err
    assert "in test_swallows_the_alarm" in err
    assert wall >= 2 * LIMIT + GRACE


LEAKS_A_THREAD = '''
import threading
import time


def test_leaves_a_thread_that_never_ends():
    threading.Thread(target=time.sleep, args=(3600,), name="forever").start()
'''


def test_a_session_whose_thread_never_ends_still_exits(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaks=LEAKS_A_THREAD)
    result, _ = _child(pytester, within=GRACE + SLACK)
    result.stdout.fnmatch_lines(["*1 passed*"])
    assert result.ret == 1  # the hang at exit is not a pass
    assert "most recent call first" in result.stderr.str()
