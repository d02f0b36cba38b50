"""A scripted tool-calling chat model: a real ``ToolCallingModel`` that replays a script.

Each call takes the next step of the script: a :class:`ModelTurn` returned as
is, or a function of the request (to answer from what the tools returned).
Every request is kept, so a test sees what the loop offered (tools, response
schema, time left). A script that runs out raises :class:`ScriptExhausted`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import diagnosis_core.tools as dct
from diagnosis_core import NonRetryableError

Step = dct.ModelTurn | Callable[[dct.TurnRequest], dct.ModelTurn]


class ScriptExhausted(NonRetryableError):
    """The model was called more often than its script has steps."""


class ScriptedToolModel:
    """Replays ``steps`` in order, one per turn; ``requests`` holds every request."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[dct.TurnRequest] = []

    def __call__(self, request: dct.TurnRequest, /) -> dct.ModelTurn:
        self.requests.append(request)
        if len(self.requests) > len(self.steps):
            raise ScriptExhausted(f"turn {len(self.requests)}: the script has {len(self.steps)}")
        step = self.steps[len(self.requests) - 1]
        return step if isinstance(step, dct.ModelTurn) else step(request)


class AsyncScriptedToolModel(ScriptedToolModel):
    """The asyncio variant; ``delay`` seconds of ``asyncio.sleep`` before each turn."""

    def __init__(self, steps: Sequence[Step], *, delay: float = 0.0) -> None:
        super().__init__(steps)
        self.delay = delay

    async def __call__(self, request: dct.TurnRequest, /) -> dct.ModelTurn:  # type: ignore[override]
        import asyncio

        await asyncio.sleep(self.delay)
        return super().__call__(request)


def calls(*calls: tuple[str, dict[str, Any]], text: str = "") -> dct.ModelTurn:
    """A tool turn: ``(name, arguments)`` pairs, ids ``call-1``, ``call-2`` …"""
    return dct.ModelTurn(
        text=text,
        tool_calls=[
            dct.ToolCall(f"call-{n}", name, arguments)
            for n, (name, arguments) in enumerate(calls, 1)
        ],
    )


def answer(payload: dict[str, Any]) -> dct.ModelTurn:
    """The final turn: ``payload`` as JSON text."""
    return dct.ModelTurn(text=json.dumps(payload))


def evidence(*bindings: tuple[str, str, str, str]) -> dict[str, Any]:
    """An ``executor_evidence_v2`` payload, one claim per ``(id, tool, path, excerpt)``."""
    if not bindings:
        return {"schema_version": "executor_evidence_v2", "evidence_status": "no_evidence",
                "claims": []}
    return {
        "schema_version": "executor_evidence_v2",
        "evidence_status": "evidence_found",
        "claims": [
            {
                "claim_id": f"c{n}",
                "text": f"claim {n}",
                "is_critical": True,
                "bindings": [
                    {"source_invocation_id": invocation, "tool_name": tool,
                     "raw_path": path, "evidence_excerpt": excerpt}
                ],
            }
            for n, (invocation, tool, path, excerpt) in enumerate(bindings, 1)
        ],
    }
