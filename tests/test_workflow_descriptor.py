"""The workflow descriptors: one typed value per workflow, the resume rule read from it (§12)."""

from __future__ import annotations

import inspect
import itertools
import sys
import typing

import pytest

import diagnosis_core as dc
from diagnosis_core.machine import DIAGNOSIS_WORKFLOW, Workflow
from tests._reach import aiops as dca
from tests._reach import journal as dcj
from tests._reach import machine as dcm

AIOPS_WORKFLOW = dcm.AIOPS_WORKFLOW
Call = dcj.JournalCall
Agent = dcm.AiOpsAgent

# The resume rule of spec §12 (Resume) and §12.3, written out call by call:
# (call, resend_gatekeeper, resend_executor) -> re-sent as the same attempt?
# LLM calls always; the executor only when its tools are declared replay-safe;
# the read-only gatekeeper only when the host asks.
FLAGS = list(itertools.product((False, True), repeat=2))
CHAT_RULE: dict[tuple[Call, bool, bool], bool] = {}
for gk, ex in FLAGS:
    CHAT_RULE[(Call.PLANNER, gk, ex)] = True
    CHAT_RULE[(Call.VERIFIER, gk, ex)] = True
    CHAT_RULE[(Call.COMPOSER, gk, ex)] = True
    CHAT_RULE[(Call.EXECUTOR, gk, ex)] = ex
    CHAT_RULE[(Call.GATEKEEPER, gk, ex)] = gk
AIOPS_RULE: dict[tuple[dcm.AiOpsAgent, bool, bool], bool] = {}
for gk, ex in FLAGS:
    AIOPS_RULE[(Agent.SUPERVISOR, gk, ex)] = True
    AIOPS_RULE[(Agent.PLANNER, gk, ex)] = True
    AIOPS_RULE[(Agent.REPORTER, gk, ex)] = True
    AIOPS_RULE[(Agent.EXECUTOR, gk, ex)] = ex  # there is no gatekeeper call in this flow


def test_the_tables_cover_every_call_and_flag_combination() -> None:
    assert len(CHAT_RULE) == len(Call) * 4
    assert len(AIOPS_RULE) == len(Agent) * 4


@pytest.mark.parametrize(("key", "expected"), sorted(CHAT_RULE.items()))
def test_the_chat_resume_rule(key: tuple[Call, bool, bool], expected: bool) -> None:
    call, gk, ex = key
    assert DIAGNOSIS_WORKFLOW.resent_on_resume(
        call, resend_gatekeeper=gk, resend_executor=ex
    ) is expected
    assert dcj.resent_on_resume(call, resend_gatekeeper=gk, resend_executor=ex) is expected


@pytest.mark.parametrize(("key", "expected"), sorted(AIOPS_RULE.items()))
def test_the_aiops_resume_rule(key: tuple[dcm.AiOpsAgent, bool, bool], expected: bool) -> None:
    call, gk, ex = key
    assert AIOPS_WORKFLOW.resent_on_resume(
        call, resend_gatekeeper=gk, resend_executor=ex
    ) is expected


def test_asking_for_the_gatekeeper_does_not_resend_the_executor() -> None:
    """Regression: ``resend_gatekeeper=True`` used to say an executor call is re-sent too."""
    assert dcj.resent_on_resume(Call.EXECUTOR, resend_gatekeeper=True) is False
    assert dcj.resent_on_resume(Call.GATEKEEPER, resend_gatekeeper=True) is True


def test_the_descriptors_values() -> None:
    chat, flow = DIAGNOSIS_WORKFLOW, AIOPS_WORKFLOW
    assert (chat.name, chat.format, chat.v1_format) == (
        "diagnosis", "diagnosis_journal_v2", "diagnosis_journal_v1"
    )
    assert (flow.name, flow.format, flow.v1_format) == (
        "aiops", "aiops_journal_v2", "aiops_journal_v1"
    )
    assert chat.formats == (dcj.JOURNAL_FORMAT, dcj.JOURNAL_FORMAT_V1)
    assert flow.formats == (dca.AIOPS_JOURNAL_FORMAT, dca.AIOPS_JOURNAL_FORMAT_V1)
    assert chat.calls is Call and flow.calls is Agent
    assert chat.executor is Call.EXECUTOR and flow.executor is Agent.EXECUTOR
    assert chat.gatekeeper == frozenset({Call.GATEKEEPER}) and flow.gatekeeper == frozenset()
    assert (chat.round_name, flow.round_name) == ("round", "step")
    assert chat.request_type is dcm.DiagnosisRequest and flow.request_type is dca.AiOpsRequest
    assert chat.finished_type is dcm.Finished and flow.finished_type is dcm.AiOpsFinished
    # The public names of the journal header and the recorded facts are the workflow's methods.
    assert chat.expected_call == dcj.expected_call
    assert flow.expected_call == dcj.aiops_expected_call
    assert chat.entry_result == dcj.entry_result and chat.outcome_of == dcj.outcome_of
    # Each workflow overrides every method the kernel calls; only chat derives (§12.4).
    for workflow in (chat, flow):
        for method in (
            "request_to_wire", "load_request", "start", "next_action", "advance",
            "expected_call", "entry_result", "outcome_of",
        ):
            assert getattr(type(workflow), method) is not getattr(Workflow, method), method
    assert type(chat).derive is not Workflow.derive and type(flow).derive is Workflow.derive


def test_the_workflow_methods_are_the_public_machine_and_codec() -> None:
    chat, flow = DIAGNOSIS_WORKFLOW, AIOPS_WORKFLOW
    request = dc.DiagnosisRequest("why?", dc.RunConfig("run-x", "chat-x"))
    state = chat.start(request)
    assert state == dcm.start_diagnosis(request)
    assert chat.next_action(state) == dcm.next_action(state)
    assert chat.request_to_wire(request) == dcj.request_to_wire(request)
    assert chat.load_request(chat.request_to_wire(request)) == request
    result = dcm.AgentReplied("{}")
    assert chat.advance(state, result) == dcm.advance(state, result)
    flow_request = dca.AiOpsRequest(dc.RunConfig("run-a", "ops-1"))
    flow_state = flow.start(flow_request)
    assert flow_state == dcm.start_aiops(flow_request)
    assert flow.next_action(flow_state) == dcm.next_aiops_action(flow_state)
    assert flow.request_to_wire(flow_request) == dcj.aiops_request_to_wire(flow_request)
    assert flow.load_request(flow.request_to_wire(flow_request)) == flow_request
    assert flow.advance(flow_state, result) == dcm.advance_aiops(flow_state, result)


def test_the_journal_classes_read_their_descriptor() -> None:
    assert dcj.Journal._form is DIAGNOSIS_WORKFLOW
    assert dcj.JournalEntry._form is DIAGNOSIS_WORKFLOW
    assert dcj.AiOpsJournal._form is AIOPS_WORKFLOW
    assert dca.AiOpsJournalEntry._form is AIOPS_WORKFLOW


def test_an_expected_call_says_a_round_in_its_workflows_words() -> None:
    assert dcj.ExpectedCall(Call.VERIFIER, 1, 2, "0" * 64).describe() == (
        "verifier round 1 attempt 2"
    )
    assert dca.AiOpsExpectedCall(Agent.EXECUTOR, 2, 1, "0" * 64).describe() == (
        "executor step 2 attempt 1"
    )


def test_a_descriptor_is_frozen() -> None:
    with pytest.raises(AttributeError):
        DIAGNOSIS_WORKFLOW.round_name = "step"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        DIAGNOSIS_WORKFLOW.other = 1  # type: ignore[attr-defined]


def test_a_descriptor_refuses_to_always_resend_the_executor_or_the_gatekeeper() -> None:
    chat = type(DIAGNOSIS_WORKFLOW)
    with pytest.raises(ValueError, match=r"^resent: the executor and gatekeeper calls"):
        type("Resending", (chat,), {"resent": frozenset({Call.PLANNER, Call.EXECUTOR})})
    with pytest.raises(ValueError, match=r"\['gatekeeper'\]"):
        type("Resending", (chat,), {"resent": frozenset({Call.GATEKEEPER})})


def _mentions_any(hint: object) -> bool:
    if hint is typing.Any:
        return True
    args = list(hint) if isinstance(hint, list) else typing.get_args(hint)  # Callable's [params]
    return any(_mentions_any(arg) for arg in args)


def test_the_any_check_sees_inside_callables() -> None:
    assert _mentions_any(typing.Callable[[int, typing.Any], int])
    assert _mentions_any(dict[str, typing.Any] | None)
    assert not _mentions_any(typing.Callable[[int], str])


def test_no_public_signature_of_the_descriptor_says_any() -> None:
    # Where its annotations are written: the defining module (its methods keep it;
    # the class itself names its public namespace).
    namespace = vars(sys.modules[Workflow.resent_on_resume.__module__])
    fields = typing.get_type_hints(Workflow, globalns=namespace)
    assert set(fields) >= {
        "name", "format", "v1_format", "calls", "executor", "gatekeeper", "resent",
        "request_type", "finished_type", "round_name",
    }
    offenders = [name for name, hint in fields.items() if _mentions_any(hint)]
    for name, member in inspect.getmembers(Workflow):
        if name.startswith("_"):
            continue
        function = member.fget if isinstance(member, property) else member
        if not inspect.isfunction(function):
            continue
        hints = typing.get_type_hints(function, globalns=namespace)
        offenders += [f"{name}.{arg}" for arg, hint in hints.items() if _mentions_any(hint)]
    assert offenders == []
    assert typing.get_type_hints(Workflow.resent_on_resume)["return"] is bool



def test_one_set_of_journal_functions_folds_each_journal_under_its_own_workflow() -> None:
    """The fold, status and resume take either journal; a workflow refuses the other's."""
    chat_journal = dcj.Journal(dc.DiagnosisRequest("why?", dc.RunConfig("run-x", "chat-x")))
    flow_journal = dcj.AiOpsJournal(dca.AiOpsRequest(dc.RunConfig("run-a", "ops-1")))
    chat_start = dcm.start_diagnosis(chat_journal.request)
    flow_start = dcm.start_aiops(flow_journal.request)
    assert type(dcj.journal_status(chat_journal)) is dcj.JournalStatus
    assert type(dcj.journal_status(flow_journal)) is dcj.AiOpsJournalStatus
    assert dcj.journal_status(flow_journal).action == dcm.next_aiops_action(flow_start)
    assert dcj.fold_journal(chat_journal) == chat_start
    assert dcj.fold_journal(flow_journal) == flow_start
    assert dcj.resume_journal(chat_journal) == (chat_journal, chat_start)
    assert dcj.resume_journal(flow_journal) == (flow_journal, flow_start)
    for workflow, other in ((DIAGNOSIS_WORKFLOW, flow_journal), (AIOPS_WORKFLOW, chat_journal)):
        expected, got = workflow.journal_name, type(other).__name__
        with pytest.raises(dc.JournalError, match=rf"^expected a {expected}, got {got}$"):
            workflow.fold(other, None, None)
        with pytest.raises(dc.JournalError, match=rf"^expected a {expected}, got {got}$"):
            workflow.resume_journal(other)
    assert dcj.Journal.load(dcj.journal_to_wire(chat_journal)) == chat_journal
    assert dcj.AiOpsJournal.load(dcj.journal_to_wire(flow_journal)) == flow_journal
    assert type(dcj.Journal.from_json(dcj.journal_to_json(chat_journal))) is dcj.Journal
    with pytest.raises(dc.JournalError, match=r"^format: expected 'aiops_journal_v2'"):
        dcj.AiOpsJournal.load(dcj.journal_to_wire(chat_journal))
