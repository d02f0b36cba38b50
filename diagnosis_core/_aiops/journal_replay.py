"""An AIOps scenario as a journal: :func:`record_aiops_scenario`.

``replay_journal`` of a complete AIOps journal is, byte for byte as JSON,
:func:`replay_aiops` of ``journal_to_scenario`` of it, and the output of the
live run that recorded it (``workflow.py``: the journal's ledger, scenario and
output). :func:`record_aiops_scenario` goes the other way: it runs a scenario
through the journaling driver.

Decisions where the spec is silent:

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

from .._kernel.errors import JournalError
from .._kernel.journal.codec import tool_invocation_from_record
from .._kernel.journal.mac import sign_journal
from .drivers import run_aiops
from .enums import AiOpsAgent
from .journal import AiOpsJournal, ListAiOpsJournalSink
from .replay import aiops_scenario_effects, aiops_scenario_request, load_aiops_scenario

__all__ = ["record_aiops_scenario"]


def record_aiops_scenario(
    scenario: Mapping[str, Any], *, key: bytes | None = None
) -> AiOpsJournal:
    """The journal of an AIOps scenario's run (its scripted agents through ``run_aiops``).

    The scenario's ``tool_ledger`` goes on the first executor entry (see the
    module's decisions), so ``replay_journal`` of the result equals
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
