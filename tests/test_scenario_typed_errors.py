"""A malformed scenario is a ScenarioError naming the path, whatever value it holds (spec §9, §5).

A message that embeds a value must never raise itself: an integer of 5000
digits, as a value or a key anywhere in a scenario, gives a ``ScenarioError``
(or is accepted) — never the interpreter's bare ``ValueError`` for converting
it to text. Every position of a complete scenario of each workflow is tried.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _builders as b
import pytest

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core import ScenarioError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BIG = 10**5000  # more digits than the interpreter converts to text by default

FULL_CONFIG = {
    "locale": "en", "max_rounds": 2, "max_evidence_retries": 1, "max_agent_attempts": 2,
    "max_node_executions": 16,
}


def documents() -> list[tuple[str, dict[str, Any]]]:
    """Every example, plus two that hold every optional field."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(EXAMPLES.glob("*.json")):
        found.append((path.stem, json.loads(path.read_text(encoding="utf-8"))))
    full = b.scenario(config=dict(FULL_CONFIG))
    full["run"]["metadata"] = {"tenant": "shop-eu"}
    full["responses"]["executor"].insert(0, b.error("retryable", "flaky"))
    full["gatekeeper"].insert(0, {"error": {"kind": "non_retryable", "message": "down"}})
    found.append(("every_field", full))
    ledger = json.loads((EXAMPLES / "tool_ledger_reference_gatekeeper.json").read_text("utf-8"))
    ledger["tool_ledger"].append({
        "invocation_id": "inv-99", "tool_name": "query_logs", "success": False, "output": None,
        "input": {"args": [1], "kwargs": {"since": "10:00"}},
        "error": {"type": "TimeoutError", "message": "slow"}, "duration_ms": 12,
    })
    found.append(("every_ledger_field", ledger))
    return found


def paths(value: object, prefix: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    """Every position in a JSON document: object members and array items."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from paths(child, (*prefix, index))


def containers(value: object, prefix: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    if isinstance(value, dict):
        yield prefix
        for key, child in value.items():
            yield from containers(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from containers(child, (*prefix, index))


def at(document: Any, path: tuple[object, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


def runner(document: dict[str, Any]) -> Callable[[dict[str, Any]], object]:
    return dca.replay_aiops if document.get("workflow") == "aiops" else dc.replay


def variants(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in paths(document):
        changed = copy.deepcopy(document)
        at(changed, path[:-1])[path[-1]] = BIG
        yield f"value at {path}", changed
    for path in containers(document):
        changed = copy.deepcopy(document)
        at(changed, path)[BIG] = "x"
        yield f"key in {path}", changed
        target = at(changed, path)
        if len(target) > 1:
            first = next(key for key in target if key != BIG)
            target[BIG] = target.pop(first)
            yield f"key replacing {path}.{first}", changed


@pytest.mark.parametrize(("name", "document"), documents(), ids=[n for n, _ in documents()])
def test_a_5000_digit_integer_anywhere_is_a_scenario_error_or_accepted(
    name: str, document: dict[str, Any]
) -> None:
    if document.get("workflow") != "aiops":
        document.setdefault("config", dict(FULL_CONFIG))
    run = runner(document)
    escaped: list[str] = []
    for where, changed in variants(document):
        try:
            run(changed)
        except ScenarioError:
            continue
        except Exception as error:  # a bare ValueError from int -> str, or any other leak
            escaped.append(f"{where}: {type(error).__name__}: {str(error)[:120]}")
    assert escaped == []


def nested(depth: int, leaf: object = "x") -> Any:
    value: Any = leaf
    for _ in range(depth):
        value = [value]
    return value


def ledger_document() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (EXAMPLES / "tool_ledger_reference_gatekeeper.json").read_text(encoding="utf-8")
    )
    return data


@pytest.mark.parametrize("run_id", [None, "given-run"])
def test_a_ledger_output_nested_100000_deep_is_the_same_error_with_or_without_a_run_id(
    run_id: str | None,
) -> None:
    document = ledger_document()
    if run_id is None:
        document.get("run", {}).pop("run_id", None)
    else:
        document.setdefault("run", {})["run_id"] = run_id
    document["tool_ledger"][0]["output"] = nested(100_000)
    with pytest.raises(ScenarioError, match=r"tool_ledger\[0\]\.output: .*nesting deeper than"):
        dc.replay(document)


def test_a_gatekeeper_result_nested_10000_deep_is_a_status_not_a_scenario_error() -> None:
    document = json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
    document["gatekeeper"] = [{"result": nested(10_000)}]
    result = dc.replay(document)
    assert result["reason_code"] == "GATEKEEPER_INVALID_RESULT"


def test_messages_embedding_host_values_never_raise() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __str__(self) -> str:
            raise RuntimeError("no str")

    document = json.loads((EXAMPLES / "payment_timeout.json").read_text(encoding="utf-8"))
    for position in ("question", "config", "run", "responses"):
        changed = copy.deepcopy(document)
        changed[position] = Hostile()
        with pytest.raises(ScenarioError):
            dc.replay(changed)
