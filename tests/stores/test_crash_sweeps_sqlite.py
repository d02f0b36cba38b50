"""The SQLite crash sweep: a real writer process killed at every write it makes.

The harness, its oracle and its checks are in ``test_crash_harness.py`` (which also runs
three kill points in the fast lane); this file holds the whole sweep, in shards that
parallel test workers share.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_support import FLOWS
from test_crash_harness import SHARDS, kill_and_resume, sqlite_points, strace_binary


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("shard", SHARDS)
@pytest.mark.parametrize("flow", FLOWS)
def test_sqlite_writer_killed_at_every_write_resumes_loads_and_stays(
    flow: str, shard: int, tmp_path: Path
) -> None:
    strace = strace_binary()
    for k in sqlite_points(flow, shard):
        kill_and_resume(flow, k, strace, tmp_path)
