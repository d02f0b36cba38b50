"""Pollers of processes and ports tolerate the thing vanishing or being taken at any instant.

The original report: the kill matrix's ``_dead()`` read ``/proc/PID/stat`` of a doomed child
that exited between the opening and the reading of the file; the read failed with
``ProcessLookupError`` (ESRCH), only ``FileNotFoundError`` was caught, and the test failed
under load. Real processes here, killed with SIGKILL and reaped.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from adapter_support import free_port, parent_of, process_gone, stat_state

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_a_process_that_exits_between_opening_and_reading_its_stat_is_gone() -> None:
    child = _sleeper()
    try:
        stat = open(f"/proc/{child.pid}/stat", encoding="ascii")  # noqa: SIM115
        with stat:
            child.kill()
            child.wait(timeout=30)  # reaped: the pid no longer exists
            # What the old poller met: the read itself fails with ESRCH.
            with pytest.raises(ProcessLookupError):
                os.pread(stat.fileno(), 512, 0)
            assert stat_state(stat) is None
    finally:
        child.kill()
        child.wait(timeout=30)


def test_an_already_reaped_pid_is_gone() -> None:
    child = _sleeper()
    child.kill()
    child.wait(timeout=30)
    assert process_gone(child.pid)
    assert parent_of(child.pid) is None


def test_a_killed_child_not_yet_reaped_is_gone_and_a_live_one_is_not() -> None:
    child = _sleeper()
    try:
        assert not process_gone(child.pid)
        assert parent_of(child.pid) == os.getpid()
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not process_gone(child.pid):  # a zombie until reaped
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert parent_of(child.pid) is None
    finally:
        child.kill()
        child.wait(timeout=30)


def test_pids_vanishing_while_polled_never_raise() -> None:
    # Children exit while the poller reads their stat files: every answer is a bool.
    children = [subprocess.Popen(["true"]) for _ in range(20)]
    deadline = time.monotonic() + 60
    while not all(process_gone(c.pid) for c in children):
        for child in children:
            child.poll()  # reaps those that exited: their /proc entries vanish
            parent_of(child.pid)
        assert time.monotonic() < deadline
    for child in children:
        child.wait(timeout=30)


def test_a_free_port_is_bindable_and_in_this_workers_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for worker, block in (("gw0", 15000), ("gw1", 16000), ("gw3", 18000)):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        port = free_port()
        assert block <= port < block + 1000
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_taken_port_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    taken = []
    try:
        for _ in range(50):
            sock = socket.socket()
            sock.bind(("127.0.0.1", free_port()))
            sock.listen()
            taken.append(sock)
        assert len({sock.getsockname()[1] for sock in taken}) == 50
    finally:
        for sock in taken:
            sock.close()
