"""AIOps cases for the engine parity and kill tests: the examples and generated scenarios.

The generated scenarios come from the package's own Hypothesis strategy of AIOps
scenarios (``property_tests/test_aiops_properties.py``), drawn derandomized, so
the same 300 scenarios every run; each gets its own run id.
"""

from __future__ import annotations

from typing import Any

from adapter_support import EXAMPLES_DIR, load_doc

import diagnosis_core as dc
import diagnosis_core.aiops as dca

GENERATED = 300


def example_docs() -> list[tuple[str, dict[str, Any]]]:
    """Every AIOps example, named by its file."""
    return [(path.stem, load_doc(path)) for path in sorted(EXAMPLES_DIR.glob("aiops*.json"))]


def generated_docs(count: int = GENERATED) -> list[tuple[str, dict[str, Any]]]:
    """``count`` scenarios drawn (derandomized) from the package's AIOps strategy."""
    from hypothesis import HealthCheck, Phase, given, settings

    import property_tests.test_aiops_properties as properties

    drawn: list[dict[str, Any]] = []

    @settings(
        derandomize=True,
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(properties.scenarios())
    def collect(scenario: dict[str, Any]) -> None:
        drawn.append(scenario)

    collect()
    return [
        (f"generated-{i:03d}", {**doc, "run": {"run_id": f"gen-{i:03d}", "session_id": "ops"}})
        for i, doc in enumerate(drawn[:count])
    ]


def request_and_effects(doc: dict[str, Any]) -> tuple[dca.AiOpsRequest, dca.AiOpsEffects]:
    """The request and fresh scripted agents of one run of ``doc``."""
    scenario = dca.load_aiops_scenario(doc)
    return dca.aiops_scenario_request(scenario), dca.aiops_scenario_effects(scenario)


class RoutedAiOpsEffects:
    """AIOps effects that send each call to the scripted agents of its run id.

    One worker, process or graph then serves many scenarios at once.
    """

    def __init__(self) -> None:
        self.runs: dict[str, dca.AiOpsEffects] = {}

    def add(self, doc: dict[str, Any]) -> dca.AiOpsRequest:
        request, effects = request_and_effects(doc)
        assert request.run.run_id not in self.runs, request.run.run_id
        self.runs[request.run.run_id] = effects
        return request

    def _agent(self, name: str) -> dc.AgentInvoker:
        def call(input: str, config: dc.RunConfig, /) -> str:
            invoker: dc.AgentInvoker = getattr(self.runs[config.run_id], name)
            return invoker(input, config)

        return call

    def effects(self) -> dca.AiOpsEffects:
        return dca.AiOpsEffects(
            supervisor=self._agent("supervisor"),
            planner=self._agent("planner"),
            executor=self._agent("executor"),
            reporter=self._agent("reporter"),
        )
