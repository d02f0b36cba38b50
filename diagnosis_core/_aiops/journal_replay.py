"""An AIOps journal is a replay: its tool ledger, its §9-style scenario, its output.

:func:`replay_aiops_journal` of a complete journal is, byte for byte as JSON,
:func:`replay_aiops` of :func:`aiops_journal_to_scenario` of it, and the
output of the live run that recorded it. :func:`record_aiops_scenario` goes
the other way: it runs a scenario through the journaling driver.

Decisions where the spec is silent:

* The run's tool ledger is the executor entries' ``tool_invocations`` in
  entry order; an id recorded twice is a :class:`JournalError` naming the
  second place. The scenario gets a ``tool_ledger`` only when some executor
  entry carries ``tool_invocations``.
* A scenario's ``tool_ledger`` is not tied to a call, so
  :func:`record_aiops_scenario` puts all of it on the first executor entry
  (the scripted tools ran during the first executor call); a scenario with
  a non-empty ledger whose run makes no executor call cannot be journaled
  faithfully and is a :class:`JournalError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._kernel.errors import JournalError, ScenarioError
from .._kernel.journal.codec import (
    RecordedAgentError,
    RecordedReply,
    tool_invocation_from_record,
)
from .._kernel.journal.fold import require_complete, scenario_response
from .._kernel.journal.mac import sign_journal
from .._kernel.scenario.scripted import load_tool_ledger
from .._kernel.tools.ledger import ToolLedger
from .._kernel.wire.json import JsonValue
from .drivers import run_aiops
from .enums import AiOpsAgent
from .journal import (
    AiOpsJournal,
    AiOpsJournalStatus,
    ListAiOpsJournalSink,
    aiops_request_to_wire,
)
from .replay import (
    WORKFLOW,
    aiops_output,
    aiops_scenario_effects,
    aiops_scenario_request,
    load_aiops_scenario,
)

__all__ = [
    "aiops_journal_ledger",
    "aiops_journal_to_scenario",
    "record_aiops_scenario",
    "replay_aiops_journal",
]


def _ledger_records(journal: AiOpsJournal) -> list[JsonValue] | None:
    """The §13 records of every executor entry in order; None when no entry carries any."""
    records: list[JsonValue] = []
    seen: set[str] = set()
    present = False
    for index, entry in enumerate(journal.entries):
        if entry.tool_invocations is None:
            continue
        present = True
        for position, item in enumerate(entry.tool_invocations):
            if item.invocation_id in seen:
                raise JournalError(
                    f"entries[{index}].tool_invocations[{position}].invocation_id: "
                    f"{item.invocation_id!r} is recorded twice in the run"
                )
            seen.add(item.invocation_id)
            records.append(item.to_record())
    return records if present else None


def _ledger(records: list[JsonValue] | None) -> ToolLedger:
    if records is None:
        return ToolLedger()
    try:
        return load_tool_ledger(records)
    except ScenarioError as error:
        raise JournalError(f"tool_invocations: {error}") from None


def aiops_journal_ledger(journal: AiOpsJournal) -> ToolLedger:
    """The run's tool ledger: the executor entries' ``tool_invocations``, in entry order.

    Raises :class:`JournalError` for an invocation id recorded twice.
    """
    return _ledger(_ledger_records(journal))


def aiops_journal_to_scenario(
    journal: AiOpsJournal, *, key: bytes | None = None, exact: bool = True
) -> dict[str, JsonValue]:
    """The AIOps scenario equivalent to a complete journal (``"workflow": "aiops"``).

    Each agent's recorded outcomes in call order become its ``responses``;
    ``run``, ``alerts`` and ``config`` come from the request, ``tool_ledger``
    from the executor entries' ``tool_invocations`` when any carries them.
    Then ``replay_aiops(aiops_journal_to_scenario(j))`` equals
    :func:`replay_aiops_journal` of ``j``. Recorded error messages follow the
    chat conversion's rule (``journal_to_scenario``): reproducible exactly,
    or a :class:`JournalError` naming the entry unless ``exact=False``.

    Raises :class:`JournalError` when the journal does not verify or is not
    complete.
    """
    require_complete(AiOpsJournalStatus.of(journal, key=key))
    responses: dict[str, list[JsonValue]] = {agent.value: [] for agent in AiOpsAgent}
    for index, entry in enumerate(journal.entries):
        outcome = entry.outcome
        assert isinstance(outcome, RecordedReply | RecordedAgentError)
        responses[entry.call.value].append(scenario_response(outcome, exact, f"entries[{index}]"))
    scenario: dict[str, JsonValue] = {"workflow": WORKFLOW}
    scenario.update(aiops_request_to_wire(journal.request))
    scripted: dict[str, JsonValue] = {}
    for agent, items in responses.items():
        scripted[agent] = items
    scenario["responses"] = scripted
    records = _ledger_records(journal)
    if records is not None:
        scenario["tool_ledger"] = records
    return scenario


def replay_aiops_journal(
    journal: AiOpsJournal, *, key: bytes | None = None
) -> dict[str, JsonValue]:
    """The replay output (``replay_aiops``'s shape) of the run a complete journal records.

    The rule evaluation checks the report against :func:`aiops_journal_ledger`.
    Raises :class:`JournalError` when the journal does not verify or is not complete.
    """
    status = AiOpsJournalStatus.of(journal, key=key)
    require_complete(status)
    return aiops_output(status.state, aiops_journal_ledger(journal))


def record_aiops_scenario(
    scenario: Mapping[str, Any], *, key: bytes | None = None
) -> AiOpsJournal:
    """The journal of an AIOps scenario's run (its scripted agents through ``run_aiops``).

    The scenario's ``tool_ledger`` goes on the first executor entry (see the
    module's decisions), so :func:`replay_aiops_journal` of the result equals
    ``replay_aiops(scenario)``. Signed with ``key`` when given. Raises
    :class:`ScenarioError` for a malformed scenario, :class:`JournalError`
    for a ledger the journal cannot carry.
    """
    loaded = load_aiops_scenario(scenario)
    request = aiops_scenario_request(loaded)
    sink = ListAiOpsJournalSink()
    run_aiops(request, aiops_scenario_effects(loaded), sink=sink)
    entries = list(sink.entries)
    records: list[object] = list(scenario.get("tool_ledger") or ())  # validated by the loader
    if records:
        executors = [i for i, entry in enumerate(entries) if entry.call is AiOpsAgent.EXECUTOR]
        if not executors:
            raise JournalError(
                f"tool_ledger: the run makes no executor call, so its journal cannot carry "
                f"the {len(records)} recorded tool invocation(s)"
            )
        invocations = tuple(
            tool_invocation_from_record(record, f"tool_ledger[{index}]")
            for index, record in enumerate(records)
        )
        first = executors[0]
        entries[first] = attrs.evolve(entries[first], tool_invocations=invocations)
    journal = AiOpsJournal(request, tuple(entries), end=sink.end)
    return sign_journal(journal, key) if key is not None else journal
