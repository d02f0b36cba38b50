"""The sans-IO machines of both workflows (spec §2, §7, §11): for custom drivers and auditors.

:func:`start_diagnosis`, :func:`next_action` and :func:`advance` are the whole
machine: it says which effect it needs (:class:`InvokeAgent`,
:class:`CallGatekeeper`) or that the run is :class:`Finished`, and takes the
effect's result (:class:`AgentReplied`, :class:`AgentFailed`,
:class:`GatekeeperReturned`, :class:`GatekeeperFailed`). Here too are the
routing table as data (:data:`ROUTING_TABLE`, one :class:`Route` a row), the pieces of a driver loop
(:func:`perform_effect`, :func:`notify`, :func:`observed_result`,
:func:`describe_error`, the door checks) and the workflow descriptor
(:class:`Workflow`, :data:`DIAGNOSIS_WORKFLOW`): the machine, call names,
request codec and resume rule in one typed value, which the journal, the
drivers and the engine adapters read. The request, state, result, trace,
observers and failure classifier a driver passes along are the host's names,
in :mod:`diagnosis_core`; the decisions the machine takes with (projection,
verdict ceiling, gatekeeper normalization, fallbacks) are its own, reached
through the trace (:class:`EventDetails`), not called one by one.

The AIOps machine is here too, named after its workflow: :func:`start_aiops`,
:func:`next_aiops_action`, :func:`advance_aiops` (:class:`InvokeAiOpsAgent`,
:class:`AiOpsFinished`), its routing table (:data:`AIOPS_ROUTING_TABLE`), its door
checks and effect performers, and :data:`AIOPS_WORKFLOW`. They load the AIOps workflow
on first use; a chat host never does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._aiops import AIOPS_NAMES
from ._chat.drivers import (
    check_diagnosis_effects,
    check_diagnosis_request,
    describe_error,
    perform_effect,
    perform_effect_async,
)
from ._chat.enums import (
    AgentName,
    NodeName,
)
from ._chat.machine import (
    Action,
    CallGatekeeper,
    EffectResult,
    Finished,
    GatekeeperFailed,
    GatekeeperReturned,
    InvokeAgent,
    advance,
    next_action,
    start_diagnosis,
)
from ._chat.routing import (
    ROUTING_TABLE,
    Route,
)
from ._chat.trace import (
    CallCounts,
    EventDetails,
    GatekeeperAudit,
    RawResult,
    VerifierEvaluation,
)
from ._chat.workflow import (
    DIAGNOSIS_WORKFLOW,
)
from ._kernel.driving.observe import (
    notify,
    observed_result,
)
from ._kernel.driving.options import (
    DEFAULT_MAX_QUESTION_CHARS,
)
from ._kernel.enums import (
    NodeStatus,
)
from ._kernel.journal.workflow import (
    Workflow,
)
from ._kernel.machine.results import (
    AgentFailed,
    AgentReplied,
)
from ._kernel.public import lazy_module

if TYPE_CHECKING:
    from ._aiops.drivers import (
        check_aiops_effects,
        check_aiops_request,
        perform_aiops_effect,
        perform_aiops_effect_async,
    )
    from ._aiops.enums import (
        AiOpsAgent,
        AiOpsNode,
    )
    from ._aiops.machine import (
        AiOpsAction,
        AiOpsFinished,
        InvokeAiOpsAgent,
        advance_aiops,
        next_aiops_action,
        start_aiops,
    )
    from ._aiops.routing import (
        AIOPS_ROUTING_TABLE,
        AiOpsRoute,
    )
    from ._aiops.workflow import AIOPS_WORKFLOW

__all__ = [
    "DEFAULT_MAX_QUESTION_CHARS",
    "DIAGNOSIS_WORKFLOW",
    "ROUTING_TABLE",
    "Action",
    "AgentFailed",
    "AgentName",
    "AgentReplied",
    "CallCounts",
    "CallGatekeeper",
    "EffectResult",
    "EventDetails",
    "Finished",
    "GatekeeperAudit",
    "GatekeeperFailed",
    "GatekeeperReturned",
    "InvokeAgent",
    "NodeName",
    "NodeStatus",
    "RawResult",
    "Route",
    "VerifierEvaluation",
    "Workflow",
    "advance",
    "check_diagnosis_effects",
    "check_diagnosis_request",
    "describe_error",
    "next_action",
    "notify",
    "observed_result",
    "perform_effect",
    "perform_effect_async",
    "start_diagnosis",
]
__all__ += [  # the AIOps workflow's, loaded on first use (``_aiops/__init__.py``)
    "AIOPS_ROUTING_TABLE", "AIOPS_WORKFLOW", "AiOpsAction", "AiOpsAgent", "AiOpsFinished",
    "AiOpsNode", "AiOpsRoute", "InvokeAiOpsAgent", "advance_aiops", "check_aiops_effects",
    "check_aiops_request", "next_aiops_action", "perform_aiops_effect",
    "perform_aiops_effect_async", "start_aiops",
]

if not TYPE_CHECKING:  # mypy reads the TYPE_CHECKING imports: a misspelt name stays an error
    __getattr__, __dir__ = lazy_module(__name__, __package__, AIOPS_NAMES[__name__], globals())
