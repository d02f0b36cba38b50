"""Racing claimants on every store (spec §16): exactly one holder each time, no effect twice.

For each store (JSON Lines, SQLite, and PostgreSQL on a server the tests start),
1 000 pairs of threads of this process and 100 pairs of forked processes, released
at the same instant, claim one fresh run. Each time exactly one holds it while the
other is refused, and only the holder performs the trial's effect. Half of the
thread pairs share one store object (for PostgreSQL: one session, whose advisory
locks are re-entrant), the other half hold a store each, the second one opened
through another spelling of the same file (a symlinked directory).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import pytest
from ownership_support import process_pair, symlinked, thread_pair

from diagnosis_core.stores import open_store

pytestmark = pytest.mark.timeout(900)

THREAD_PAIRS = 1000
PROCESS_PAIRS = 100


def test_thread_pairs_racing_for_a_run_leave_exactly_one_holder(
    url: str, tmp_path: Path
) -> None:
    first, second = open_store(url), open_store(symlinked(url, tmp_path))
    prefix = f"threads-{time.monotonic_ns()}"
    try:
        for trial in range(THREAD_PAIRS):
            stores = (first, first) if trial % 2 == 0 else (first, second)
            outcomes, effects = thread_pair(stores, f"{prefix}-{trial}")
            assert sorted(outcomes) == ["held", "refused"], (trial, outcomes)
            assert effects == 1, (trial, effects)
    finally:
        first.close()
        second.close()


def test_process_pairs_racing_for_a_run_leave_exactly_one_holder(
    url: str, tmp_path: Path
) -> None:
    open_store(url).close()  # the store exists before the racers open it
    side = tmp_path / "effects.log"
    spelled = symlinked(url, tmp_path)
    prefix = f"processes-{time.monotonic_ns()}"
    for trial in range(PROCESS_PAIRS):
        opens = (functools.partial(open_store, url),
                 functools.partial(open_store, spelled if trial % 2 else url))
        outcomes = process_pair(opens, f"{prefix}-{trial}", side)
        assert sorted(outcomes[:2]) == [b"0", b"1"], (trial, outcomes)
        assert outcomes[2:] == [b"exit 0", b"exit 0"], (trial, outcomes)
    performed = [line.split()[0] for line in side.read_text().splitlines()]
    assert performed == [f"{prefix}-{trial}" for trial in range(PROCESS_PAIRS)]
