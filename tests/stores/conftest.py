"""Fixtures of the store tests: one PostgreSQL server per session, a store of each kind."""

from __future__ import annotations

import os
import shutil
import tempfile
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


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory for the cut files: in memory when possible (durability is not under test)."""
    memory = Path("/dev/shm")
    if memory.is_dir() and os.access(memory, os.W_OK):
        directory = Path(tempfile.mkdtemp(dir=memory, prefix="crash-cut-"))
        yield directory
        shutil.rmtree(directory, ignore_errors=True)
    else:  # pragma: no cover - a machine without /dev/shm
        yield tmp_path
