"""Fixtures of the store tests: one PostgreSQL server per session, a store of each kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_support import store_url

from diagnosis_core.stores import open_store
from diagnosis_core.stores._base import StoreBase


@pytest.fixture(scope="session")
def pg_conninfo() -> Iterator[str]:
    """A conninfo of a real PostgreSQL server the tests started (skip when impossible)."""
    pytest.importorskip("psycopg")
    from langgraph_support import postgres_server

    try:
        with postgres_server() as info:
            yield info
    except LookupError as error:
        pytest.skip(str(error))


@pytest.fixture(params=["jsonl", "sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Each store kind in turn."""
    kind: str = request.param
    return kind


@pytest.fixture
def url(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A store URL of the kind under test."""
    conninfo = request.getfixturevalue("pg_conninfo") if store_kind == "postgres" else None
    return store_url(store_kind, tmp_path, conninfo)


@pytest.fixture
def store(url: str) -> Iterator[StoreBase]:
    """An open store of the kind under test."""
    opened = open_store(url)
    yield opened
    opened.close()
