"""Interleaved, side-by-side timing in one process.

Every contender of a comparison is timed in the same rounds: round ``r`` runs
each contender once (``loops`` calls per sample), in an order rotated by one
each round, so slow drift of the machine (another process, frequency
changes) lands on all of them alike. The clock is the process's CPU time
(:func:`time.process_time`): time the process spends descheduled on a busy
machine is not counted, time spent waiting for memory is. The garbage
collector stays on, as in production (see ``collect`` for large calls).

Reported per contender: the best sample (best of N, the primary number: noise
only ever adds time) and the median sample. Ratios are taken between best
samples; the median of the per-round ratios is reported next to them as a
robustness check.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence

import attrs

__all__ = ["Samples", "calibrate_loops", "interleave", "ratio"]

clock = time.process_time


@attrs.frozen
class Samples:
    """Per-sample times (seconds per call) of one contender, in round order."""

    times: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def calibrate_loops(function: Callable[[], object], target_seconds: float) -> int:
    """Calls per sample so that one sample of ``function`` takes about ``target_seconds``."""
    start = clock()
    function()
    once = max(clock() - start, 1e-7)
    return max(1, round(target_seconds / once))


def interleave(
    contenders: Mapping[str, Callable[[], object]],
    *,
    rounds: int,
    loops: Mapping[str, int],
    collect: bool = False,
) -> dict[str, Samples]:
    """Time every contender ``rounds`` times, interleaved and rotated (see module doc).

    With ``collect``, a full collection runs (untimed) before every sample, so
    that each sample starts from the same collector state; otherwise when the
    collector's full passes fall depends on what ran before, which matters
    once a call allocates tens of thousands of containers.
    """
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm-up: code generation, caches, first allocations
        contenders[name]()
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            function, count = contenders[name], loops[name]
            if collect:
                gc.collect()
            start = clock()
            for _ in range(count):
                function()
            times[name].append((clock() - start) / count)
    return {name: Samples(tuple(values)) for name, values in times.items()}


def ratio(numerator: Samples, denominator: Samples) -> tuple[float, float]:
    """(best / best, median of the per-round ratios)."""
    paired: Sequence[float] = [
        top / bottom for top, bottom in zip(numerator.times, denominator.times, strict=True)
    ]
    return numerator.best / denominator.best, statistics.median(paired)
