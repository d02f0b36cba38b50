"""The Temporal workers' recovery bound: sticky-queue timeout and heartbeat (docs/temporal.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest

pytest.importorskip("temporalio")

from adapter_support import EXAMPLES_DIR, load_doc, scenario_of
from temporalio.client import Client

import diagnosis_core as dc
import diagnosis_core.aiops as dca
from diagnosis_core.adapters.temporal import create_diagnosis_worker
from diagnosis_core.adapters.temporal_aiops import create_aiops_worker


def _aiops_effects() -> dca.AiOpsEffects:
    doc = load_doc(EXAMPLES_DIR / "aiops_payload_targeted.json")
    return dca.aiops_scenario_effects(dca.load_aiops_scenario(doc))


async def test_workers_wait_three_seconds_on_a_sticky_queue_unless_the_host_says(
    temporal_address: str,
) -> None:
    client = await Client.connect(temporal_address)
    _, effects = scenario_of(load_doc(EXAMPLES_DIR / "payment_timeout.json"))
    chat = create_diagnosis_worker(client, effects, task_queue="recovery-defaults")
    aiops = create_aiops_worker(client, _aiops_effects(), task_queue="recovery-aiops")
    for worker in (chat, aiops):
        assert worker.config()["sticky_queue_schedule_to_start_timeout"] == timedelta(seconds=3)
    chosen = create_diagnosis_worker(
        client,
        effects,
        task_queue="recovery-chosen",
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=7),
    )
    assert chosen.config()["sticky_queue_schedule_to_start_timeout"] == timedelta(seconds=7)


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(seconds=-1), 5])
async def test_a_sticky_queue_timeout_that_is_not_positive_is_refused(
    temporal_address: str, bad: object
) -> None:
    client = await Client.connect(temporal_address)
    _, effects = scenario_of(load_doc(EXAMPLES_DIR / "payment_timeout.json"))
    with pytest.raises(dc.ConfigError, match="sticky_queue_schedule_to_start_timeout"):
        create_diagnosis_worker(
            client, effects, task_queue="recovery-bad", sticky_queue_schedule_to_start_timeout=bad
        )
    with pytest.raises(dc.ConfigError, match="sticky_queue_schedule_to_start_timeout"):
        create_aiops_worker(
            client,
            _aiops_effects(),
            task_queue="recovery-bad",
            sticky_queue_schedule_to_start_timeout=bad,
        )
