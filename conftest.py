"""Hypothesis profiles for the whole test suite, chosen by ``HYPOTHESIS_PROFILE``.

* ``ci`` (the default when the variable is unset): 100 examples per property,
  no deadline, the ``too_slow`` / ``data_too_large`` health checks off (the
  run strategies draw whole scenarios). The full suite stays well within a
  few minutes on two cores.
* ``nightly``: 10 000 examples per property, otherwise like ``ci``.
* ``dev``: Hypothesis' own defaults (100 examples, 200 ms deadline, every
  health check), to notice slow examples while working locally.
* ``mutation``: for ``mutmut run`` — 50 examples chosen deterministically, no
  example database (every mutant meets exactly the same examples) and no
  shrinking (a mutant only has to be caught, not explained).

Tests that set ``max_examples`` in their own ``@settings`` keep that number
in every profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_SLOW_STRATEGIES = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    suppress_health_check=_SLOW_STRATEGIES,
    print_blob=True,
)
settings.register_profile(
    "nightly",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=_SLOW_STRATEGIES,
    print_blob=True,
)
settings.register_profile("dev", parent=settings.get_profile("default"))
settings.register_profile(
    "mutation",
    max_examples=50,
    deadline=None,
    suppress_health_check=_SLOW_STRATEGIES,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.target],
)

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# README.md and docs/: every Python block runs (tests/docs_blocks.py).
pytest_plugins = ["pytester", "tests.docs_blocks", "tests.lanes"]
