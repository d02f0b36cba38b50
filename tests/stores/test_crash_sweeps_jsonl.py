"""The JSON Lines crash sweep: the file cut at every byte offset of a recorded run.

The harness, its oracle and its checks are in ``test_crash_harness.py`` (which also runs
every record's edges in the fast lane); this file holds the whole sweep, in shards that
parallel test workers share.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_support import FLOWS
from test_crash_harness import SHARDS, cut_and_resume, recorded


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("shard", SHARDS)
@pytest.mark.parametrize("flow", FLOWS)
def test_jsonl_cut_at_every_byte_offset_resumes_loads_and_stays(
    flow: str, shard: int, scratch: Path
) -> None:
    _, whole = recorded(flow)
    for cut in range(shard, len(whole) + 1, len(SHARDS)):
        cut_and_resume(flow, cut, scratch)
