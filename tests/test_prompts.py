"""The agents' system prompts (spec §17): generated from the contract, and complete.

* Every prompt's example reply is accepted by the agent's own parser, with the
  context read from the example *input* (the skill names, the allowed claims,
  the known invocations), and by the payload's JSON Schema; the chat
  executor's example passes the reference gatekeeper over the example tool
  call, and the AIOps reporter's passes every rule of the report evaluator.
* The input a prompt documents is the input class's whitelist, key for key,
  and the example input is what the workflow's builder sends.
* Every rule the code enforces is in the rule table: the keys are *derived
  from the code* — the ``PayloadError`` raise sites reachable from each
  agent's parser (read from the source with :mod:`ast`), the enumerations its
  payload takes, the gatekeeper's failure codes, the round-2 constraints and
  the AIOps report rules — so a new check in a parser fails here until it has
  a sentence. Every sentence of the table is in the prompts that state it.
* A prompt changes only when the contract does: each one is compared with its
  golden file, ``tests/fixtures/prompts/<workflow>/<agent>.<locale>.txt``.
  After a contract change, regenerate them with
  ``diagnosis-core prompt --all --out tests/fixtures/prompts`` and review the diff.
"""

from __future__ import annotations

import ast
import enum
import json
import pathlib
import re
import subprocess
import sys
import typing
from collections.abc import Iterator

import attrs
import pytest

import diagnosis_core
from diagnosis_core import ReferenceGatekeeper
from diagnosis_core._prompts.agents import FIELD_DESCRIPTIONS, agent_spec
from diagnosis_core._prompts.examples import example, example_ledger
from diagnosis_core._prompts.notation import field_types
from diagnosis_core.cli import main
from diagnosis_core.conformance import PROTOCOL_VERSION
from diagnosis_core.tools import BindingFailure
from tests._reach import aiops as dca
from tests._reach import prompts as dcpr
from tests._reach import protocol as dcp
from tests._reach import tools as dct

PACKAGE = pathlib.Path(diagnosis_core.__file__).parent
GOLDEN = pathlib.Path(__file__).parent / "fixtures" / "prompts"
REGENERATE = "diagnosis-core prompt --all --out tests/fixtures/prompts"

AGENTS = [
    (workflow, agent) for workflow, agents in dcpr.PROMPT_AGENTS.items() for agent in agents
]
CASES = [(workflow, agent, locale) for workflow, agent in AGENTS for locale in dcpr.PROMPT_LOCALES]


def _id(case: tuple[str, ...]) -> str:
    return "-".join(case)


# --- the examples ---------------------------------------------------------------------


def _parse_reply(workflow: str, agent: str, reply: str, given: dict[str, object]) -> object:
    """The agent's own parser, with its context read from the example input ``given``."""
    if workflow == "chat":
        if agent == "planner":
            skills = typing.cast(list[dict[str, str]], given["skills"])
            return dcp.parse_planner_plan(reply, [skill["name"] for skill in skills])
        if agent == "executor":
            return dcp.parse_executor_evidence(reply)
        if agent == "verifier":
            return dcp.parse_verifier_output(reply)
        claims = typing.cast(list[dict[str, str]], given["allowed_claims"])
        return dcp.parse_composer_output(reply, [claim["claim_id"] for claim in claims])
    if agent == "supervisor":
        return dcp.parse_supervisor_decision(reply)
    if agent == "planner":
        return dcp.parse_aiops_plan(reply)
    if agent == "executor":
        known = typing.cast(list[str], given["known_invocation_ids"])
        return dcp.parse_aiops_executor_output(reply, known)
    return dcp.parse_aiops_report(reply)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_example_reply_parses_with_the_agents_own_parser(case: tuple[str, str, str]) -> None:
    workflow, agent, locale = case
    prompt = dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    given = json.loads(prompt.example_input)
    value = _parse_reply(workflow, agent, prompt.example_reply, given)
    assert dcp.to_wire(value) == json.loads(prompt.example_reply)
    assert f"```json\n{prompt.example_reply}\n```" in prompt.text
    assert f"```json\n{prompt.example_input}\n```" in prompt.text


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_example_reply_is_valid_against_the_payload_schema(
    case: tuple[str, str, str],
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    workflow, agent, locale = case
    prompt = dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    schema = prompt.schema
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads(prompt.example_reply))
    assert json.dumps(schema, ensure_ascii=False) in prompt.text


@pytest.mark.parametrize("locale", dcpr.PROMPT_LOCALES)
def test_the_chat_executor_example_passes_the_reference_gatekeeper(locale: str) -> None:
    prompt = dcpr.system_prompt("executor", locale=locale)
    evidence = dcp.parse_executor_evidence(prompt.example_reply)
    ledger = example_ledger("chat")
    raw = ReferenceGatekeeper(ledger)("run", evidence)
    assert raw["status"] == "pass"
    assert raw["checked_bindings"]
    # The tool result the prompt shows is the recorded call, envelope for envelope.
    (shown,) = example("chat", "executor", locale).tool_results
    envelope = json.loads(shown)
    assert f"```json\n{shown}\n```" in prompt.text
    (record,) = (invocation.to_record() for invocation in ledger.invocations)
    assert envelope == {key: record[key] for key in ("invocation_id", "tool_name", "output")}


@pytest.mark.parametrize("locale", dcpr.PROMPT_LOCALES)
def test_the_aiops_reporter_example_passes_every_report_rule(locale: str) -> None:
    prompt = dcpr.system_prompt("reporter", workflow="aiops", locale=locale)
    given = json.loads(prompt.example_input)
    alerts = [dcp.Alert(**alert) for alert in given["task"]["alerts"]]
    evaluation = dca.evaluate_aiops_report(
        json.loads(prompt.example_reply),
        mode=dca.AiOpsMode(given["mode"]),
        alerts=alerts,
        ledger=example_ledger("aiops"),
    )
    assert evaluation.passed, evaluation.violations
    assert evaluation.score == 1.0


@pytest.mark.parametrize("locale", dcpr.PROMPT_LOCALES)
def test_the_aiops_executor_example_cites_the_tool_call_it_shows(locale: str) -> None:
    sample = example("aiops", "executor", locale)
    (shown,) = sample.tool_results
    output = dcp.parse_aiops_executor_output(sample.reply, ())
    assert output.tool_invocation_ids == (json.loads(shown)["invocation_id"],)


# --- the inputs -------------------------------------------------------------------------


def _documented_keys(text: str) -> list[str]:
    section = text.split("\n## ", 2)[1]
    return [line[3:].split("`", 1)[0] for line in section.splitlines() if line.startswith("- `")]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_a_prompt_documents_exactly_the_input_whitelist(case: tuple[str, str, str]) -> None:
    workflow, agent, locale = case
    prompt = dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    spec = agent_spec(workflow, agent)
    whitelist: dict[str, None] = {}
    for cls in spec.inputs:
        whitelist.update(dict.fromkeys(field_types(cls)))
    assert _documented_keys(prompt.text) == list(whitelist)
    # The example input is one of the whitelists, exactly.
    keys = set(json.loads(prompt.example_input))
    assert keys in [set(field_types(cls)) for cls in spec.inputs]


def test_every_field_description_is_used_and_every_input_key_has_one() -> None:
    used = {
        (workflow, key)
        for workflow, agent in AGENTS
        for cls in agent_spec(workflow, agent).inputs
        for key in field_types(cls)
    }
    assert used == set(FIELD_DESCRIPTIONS)
    for sentences in FIELD_DESCRIPTIONS.values():
        assert set(sentences) == set(dcpr.PROMPT_LOCALES)


def test_the_chat_example_inputs_are_one_consistent_run() -> None:
    """The verifier sees what the executor's example passed; the composer, what it allowed."""
    executor = json.loads(dcpr.system_prompt("executor").example_reply)
    verifier_input = json.loads(dcpr.system_prompt("verifier").example_input)
    assert [claim["claim_id"] for claim in verifier_input["verified_executor_output"]] == [
        claim["claim_id"] for claim in executor["claims"]
    ]
    assert verifier_input["gatekeeper"]["status"] == "PASS"
    verdict = json.loads(dcpr.system_prompt("verifier").example_reply)
    composer_input = json.loads(dcpr.system_prompt("composer").example_input)
    assert [claim["claim_id"] for claim in composer_input["allowed_claims"]] == verdict[
        "allowed_claim_ids"
    ]


# --- the rule table against the code ---------------------------------------------------

_PARSER_MODULES = ("_chat/parsing.py", "_aiops/parsing.py", "_kernel/machine/plan.py")
_DOCUMENT_LAYER = {"parse_json_object", "extract_json_text", "loads_strict"}
_TYPES_LAYER = {"from_wire", "from_json_object_text"}


@attrs.frozen
class _Function:
    module: str
    raises: tuple[str, ...]
    calls: frozenset[str]


def _skeleton(node: ast.expr, constants: dict[str, str]) -> str:
    """A raise site's argument as the table writes it: literal text, ``{}`` for what is computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values
        )
    return "{}"


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def scan_functions(sources: dict[str, str]) -> dict[tuple[str, str], _Function]:
    """Every function of ``sources`` (module → text): its raise sites and the names it calls."""
    functions: dict[tuple[str, str], _Function] = {}
    for module, source in sources.items():
        tree = ast.parse(source)
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            raises: list[str] = []
            calls: set[str] = set()
            for inner in ast.walk(node):
                if not isinstance(inner, ast.Call):
                    continue
                name = _called_name(inner)
                if name == "PayloadError" and len(inner.args) == 2:
                    path, message = (_skeleton(arg, constants) for arg in inner.args)
                    raises.append(f"parse:{path}: {message}")
                elif name is not None:
                    calls.add(name)
            functions[(module, node.name)] = _Function(module, tuple(raises), frozenset(calls))
    return functions


def reachable_keys(functions: dict[tuple[str, str], _Function], module: str, name: str) -> set[str]:
    """The rule keys of everything ``module.name`` can reach: its checks and the shared layers."""
    keys: set[str] = set()
    seen: set[tuple[str, str]] = set()
    todo = [(module, name)]
    while todo:
        where = todo.pop()
        if where in seen:
            continue
        seen.add(where)
        function = functions[where]
        keys.update(function.raises)
        for called in function.calls:
            if called in _DOCUMENT_LAYER:
                keys.add("layer:document")
            if called in _TYPES_LAYER:
                keys.add("layer:types")
            if (function.module, called) in functions:  # the same module's own function
                todo.append((function.module, called))
            else:  # an imported one
                todo.extend(key for key in functions if key[1] == called)
    return keys


def _enums_of(cls: type[typing.Any]) -> Iterator[type[enum.Enum]]:
    stack: list[object] = [cls]
    seen: set[object] = set()
    while stack:
        tp = stack.pop()
        if tp in seen:
            continue
        seen.add(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            yield tp
        elif isinstance(tp, type) and attrs.has(tp):
            stack.extend(field_types(tp).values())
        else:
            stack.extend(typing.get_args(tp))


def _payload_class(workflow: str, payload: str) -> type[typing.Any]:
    from diagnosis_core._aiops.schema import _PAYLOAD_TYPES as AIOPS
    from diagnosis_core._chat.schema import _PAYLOAD_TYPES as CHAT

    types: dict[str, type[typing.Any]] = {**{str(k): v for k, v in CHAT.items()}} if (
        workflow == "chat"
    ) else {str(k): v for k, v in AIOPS.items()}
    return types[payload]


_PARSERS = {
    ("chat", "planner"): ("_chat/parsing.py", "parse_planner_plan"),
    ("chat", "executor"): ("_chat/parsing.py", "parse_executor_evidence"),
    ("chat", "verifier"): ("_chat/parsing.py", "parse_verifier_output"),
    ("chat", "composer"): ("_chat/parsing.py", "parse_composer_output"),
    ("aiops", "supervisor"): ("_aiops/parsing.py", "parse_supervisor_decision"),
    ("aiops", "planner"): ("_aiops/parsing.py", "parse_aiops_plan"),
    ("aiops", "executor"): ("_aiops/parsing.py", "parse_aiops_executor_output"),
    ("aiops", "reporter"): ("_aiops/parsing.py", "parse_aiops_report"),
}


def _package_functions() -> dict[tuple[str, str], _Function]:
    return scan_functions(
        {module: (PACKAGE / module).read_text(encoding="utf-8") for module in _PARSER_MODULES}
    )


def enforced_keys(workflow: str, agent: str) -> set[str]:
    """Every check the code applies to this agent's reply, as a rule-table key."""
    module, parser = _PARSERS[(workflow, agent)]
    keys = reachable_keys(_package_functions(), module, parser)
    payload = _payload_class(workflow, agent_spec(workflow, agent).payload)
    keys.update(f"enum:{kind.__name__}" for kind in _enums_of(payload))
    if (workflow, agent) == ("chat", "executor"):
        keys.update(f"gatekeeper:{code.value}" for code in BindingFailure)
        keys.update(f"retry:{constraint.value}" for constraint in dcp.RetryConstraint)
    if (workflow, agent) == ("aiops", "reporter"):
        keys.update(f"aiops_rule:{rule.id}" for rule in dca.AIOPS_RULES)
    return keys


def test_the_parsers_named_in_this_test_are_the_agents_parsers() -> None:
    for (workflow, agent), (module, name) in _PARSERS.items():
        assert (module, name) in _package_functions(), (workflow, agent)


@pytest.mark.parametrize("agent", AGENTS, ids=_id)
def test_every_rule_the_code_enforces_is_in_the_agents_prompt_table(
    agent: tuple[str, str],
) -> None:
    workflow, name = agent
    stated = {key for rule in dcpr.prompt_rules(workflow, name) for key in rule.enforces}
    missing = enforced_keys(workflow, name) - stated
    assert not missing, f"rules without a sentence in the {workflow} {name} prompt: {missing}"


def test_every_key_of_the_table_is_enforced_by_the_code() -> None:
    """No stale row: each key stands for a check of at least one agent of its scope."""
    for rule in dcpr.PROMPT_RULES:
        enforced = set().union(*(enforced_keys(w, a) for w, a in rule.scope))
        assert set(rule.enforces) <= enforced, (rule.id, set(rule.enforces) - enforced)


def test_a_new_raise_site_in_a_parser_is_a_key_the_table_lacks() -> None:
    """The derivation sees a new check: a parser with one more rule fails the test above."""
    source = (PACKAGE / "_chat/parsing.py").read_text(encoding="utf-8")
    changed = source.replace(
        '    return output\n\n\n# --- §5.4',
        '    if output.rationale == "x":\n'
        '        raise PayloadError("rationale", "must not be x")\n'
        '    return output\n\n\n# --- §5.4',
    )
    assert changed != source
    sources = {m: (PACKAGE / m).read_text(encoding="utf-8") for m in _PARSER_MODULES}
    sources["_chat/parsing.py"] = changed
    keys = reachable_keys(scan_functions(sources), "_chat/parsing.py", "parse_verifier_output")
    assert "parse:rationale: must not be x" in keys
    stated = {key for rule in dcpr.prompt_rules("chat", "verifier") for key in rule.enforces}
    assert "parse:rationale: must not be x" not in stated


def test_every_rule_has_a_sentence_in_every_locale_and_a_unique_id() -> None:
    ids = [rule.id for rule in dcpr.PROMPT_RULES]
    assert len(ids) == len(set(ids))
    for rule in dcpr.PROMPT_RULES:
        assert set(rule.sentences) == set(dcpr.PROMPT_LOCALES), rule.id
        assert rule.scope, rule.id
        for locale in dcpr.PROMPT_LOCALES:
            assert "{" not in rule.sentence(locale).replace("{}", ""), rule.id


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_sentence_of_the_table_is_in_the_prompt(case: tuple[str, str, str]) -> None:
    workflow, agent, locale = case
    text = dcpr.system_prompt(agent, workflow=workflow, locale=locale).text
    rules = dcpr.prompt_rules(workflow, agent)
    assert rules
    for number, rule in enumerate(rules, 1):
        assert f"\n{number}. {rule.sentence(locale)}\n" in text, rule.id


def test_the_sentences_quote_the_codes_vocabulary() -> None:
    verifier = dcpr.system_prompt("verifier").text
    for verdict in dcp.Verdict:
        assert f"`{verdict.value}`" in verifier
    supervisor = dcpr.system_prompt("supervisor", workflow="aiops", locale="zh-CN").text
    for choice in dcp.SupervisorChoice:
        assert f"`{choice.value}`" in supervisor


# --- versioned, golden, public ------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_a_prompt_changes_only_when_the_contract_does(case: tuple[str, str, str]) -> None:
    workflow, agent, locale = case
    prompt = dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    golden = GOLDEN / workflow / f"{agent}.{locale}.txt"
    assert golden.is_file(), f"no golden file {golden}; run: {REGENERATE}"
    expected = golden.read_text(encoding="utf-8")
    assert prompt.text == expected, f"the prompt changed; if the contract did, run: {REGENERATE}"


def test_the_golden_files_are_exactly_the_prompts() -> None:
    files = {str(path.relative_to(GOLDEN)) for path in GOLDEN.rglob("*.txt")}
    assert files == {f"{w}/{a}.{locale}.txt" for w, a, locale in CASES}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_a_prompt_is_versioned_with_the_protocol(case: tuple[str, str, str]) -> None:
    workflow, agent, locale = case
    prompt = dcpr.system_prompt(agent, workflow=workflow, locale=locale)
    assert prompt.protocol_version == PROTOCOL_VERSION
    assert f" {PROTOCOL_VERSION} " in prompt.text
    assert (prompt.workflow, prompt.agent, prompt.locale) == case
    assert prompt.payload == agent_spec(workflow, agent).payload


def test_the_schema_is_a_fresh_dict_each_time() -> None:
    prompt = dcpr.system_prompt("composer")
    schema = prompt.schema
    schema["title"] = "changed"
    assert prompt.schema["title"] == "composer_output"
    assert prompt.schema == dcp.json_schema("composer_output")


def test_a_locale_value_is_accepted_as_well_as_its_string() -> None:
    assert dcpr.system_prompt("planner", locale=diagnosis_core.Locale.ZH_CN) == (
        dcpr.system_prompt("planner", locale="zh-CN")
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agent": "judge"}, "unknown chat agent 'judge'; expected one of 'planner', 'executor'"),
        ({"agent": "reporter"}, "unknown chat agent 'reporter'"),
        ({"agent": "planner", "locale": "fr"}, "unknown locale 'fr'; expected one of 'en'"),
        ({"agent": "planner", "workflow": "ops"}, "unknown workflow 'ops'; expected one of 'chat'"),
    ],
)
def test_an_unknown_agent_locale_or_workflow_is_a_value_error_listing_the_choices(
    kwargs: dict[str, str], message: str
) -> None:
    agent = kwargs.pop("agent")
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        dcpr.system_prompt(agent, **kwargs)


def test_the_prompt_value_names_the_public_namespace() -> None:
    assert dcpr.Prompt.__module__ == "diagnosis_core.prompts"
    assert dcpr.PromptRule.__module__ == "diagnosis_core.prompts"


def test_importing_the_prompts_loads_no_workflow_package() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, diagnosis_core.prompts as p\n"
            "p.system_prompt('planner')\n"
            "assert 'diagnosis_core.aiops' not in sys.modules\n",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# --- the command line --------------------------------------------------------------------


def test_the_prompt_command_prints_the_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompt", "reporter", "--workflow", "aiops", "--locale", "zh-CN"]) == 0
    expected = dcpr.system_prompt("reporter", workflow="aiops", locale="zh-CN").text
    assert capsys.readouterr().out == expected


def test_the_prompt_command_defaults_to_the_chat_workflow_in_english(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["prompt", "executor"]) == 0
    assert capsys.readouterr().out == dcpr.system_prompt("executor").text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["prompt", "judge"],
            "diagnosis-core: prompt: unknown chat agent 'judge'; expected one of 'planner', "
            "'executor', 'verifier', 'composer'\n",
        ),
        (
            ["prompt", "planner", "--locale", "de"],
            "diagnosis-core: prompt: unknown locale 'de'; expected one of 'en', 'zh-CN'\n",
        ),
        (
            ["prompt", "planner", "--workflow", "ops"],
            "diagnosis-core: prompt: unknown workflow 'ops'; expected one of 'chat', 'aiops'\n",
        ),
        (["prompt"], "diagnosis-core: prompt: give an agent (or --all --out DIR)\n"),
        (["prompt", "--all"], "diagnosis-core: prompt --all: give --out DIR and no agent\n"),
        (["prompt", "planner", "--out", "x"], "diagnosis-core: prompt: --out goes with --all\n"),
    ],
)
def test_a_bad_prompt_command_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == message


def test_prompt_all_writes_the_golden_files(tmp_path: pathlib.Path) -> None:
    assert main(["prompt", "--all", "--out", str(tmp_path)]) == 0
    written = {
        str(path.relative_to(tmp_path)): path.read_bytes() for path in tmp_path.rglob("*.txt")
    }
    golden = {str(path.relative_to(GOLDEN)): path.read_bytes() for path in GOLDEN.rglob("*.txt")}
    assert written == golden


def test_prompt_all_into_an_unwritable_place_exits_1_with_one_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert main(["prompt", "--all", "--out", str(blocker)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"diagnosis-core: cannot write {blocker} (")
    assert err.count("\n") == 1


# --- every enforced rule has a reply that breaks it ------------------------------------
# For each rule that stands for a check, one change to its agent's example reply that
# the check refuses: a parser's PayloadError matching one of the rule's keys, the
# gatekeeper's failure code, or the AIOps evaluator's violation. So each sentence is
# tied to a check that fires, not only to a name in the table.

Json = typing.Any


def _claim(reply: Json) -> Json:
    return reply["claims"][0]


def _binding(reply: Json) -> Json:
    return reply["claims"][0]["bindings"][0]


def _set(path: tuple[str | int, ...], value: object) -> typing.Callable[[Json], None]:
    def change(reply: Json) -> None:
        node = reply
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value

    return change


def _delete(path: tuple[str | int, ...]) -> typing.Callable[[Json], None]:
    def change(reply: Json) -> None:
        node = reply
        for step in path[:-1]:
            node = node[step]
        del node[path[-1]]

    return change


def _append_copy(path: tuple[str | int, ...]) -> typing.Callable[[Json], None]:
    def change(reply: Json) -> None:
        node = reply
        for step in path:
            node = node[step]
        node.append(json.loads(json.dumps(node[0])))

    return change


# rule id -> the change to the reply (of the rule's first agent); text changes take the text
COUNTEREXAMPLES: dict[str, typing.Callable[[Json], None]] = {
    "schema_shape": _delete(("steps", 0, "step_id")),
    "plan_has_steps": _set(("steps",), []),
    "plan_step_ids": _append_copy(("steps",)),
    "plan_goals": _set(("steps", 0, "goal"), ""),
    "planner_skill_from_catalog": _set(("selected_skill",), "no-such-skill"),
    "executor_schema_version": _delete(("schema_version",)),
    "executor_evidence_status": _set(("evidence_status",), "no_evidence"),
    "executor_claim_ids": _append_copy(("claims",)),
    "executor_claim_text": _set(("claims", 0, "text"), ""),
    "executor_bindings_complete": _set(("claims", 0, "bindings"), []),
    "executor_bindings_distinct": _append_copy(("claims", 0, "bindings")),
    "executor_cite_recorded_invocation": _set(
        ("claims", 0, "bindings", 0, "source_invocation_id"), "inv-99"
    ),
    "executor_cite_successful_invocation": _set(
        ("claims", 0, "bindings", 0, "source_invocation_id"), "inv-2"
    ),
    "executor_tool_name_matches": _set(("claims", 0, "bindings", 0, "tool_name"), "query_db"),
    "executor_raw_path_resolves": _set(("claims", 0, "bindings", 0, "raw_path"), "$.items[0]"),
    "executor_excerpt_occurs": _set(
        ("claims", 0, "bindings", 0, "evidence_excerpt"), "upstream timeout after 5000ms"
    ),
    "executor_trace_summary": _set(("tool_trace_summary", 0, "tool_name"), ""),
    "verifier_verdict_vocabulary": _set(("verdict",), "pass"),
    "verifier_verification_vocabulary": _set(("facts_checked", 0, "verification"), "supported"),
    "verifier_score_range": _set(("groundedness_score",), 1.5),
    "verifier_claim_ids": _set(("allowed_claim_ids",), [""]),
    "verifier_critical_count": _set(("critical_fact_count",), -1),
    "composer_answer": _set(("answer",), "\n "),
    "composer_cite_allowed": _set(("cited_claim_ids",), ["c2"]),
    "supervisor_choice": _set(("next",), "reporter"),
    "aiops_executor_invocation_ids": _append_copy(("tool_invocation_ids",)),
    "aiops_finding_text": _set(("findings", 0, "text"), " "),
    "aiops_finding_alert": _delete(("findings", 0, "service")),
    "aiops_executor_cite_reported": _set(("findings", 0, "cited_invocation_ids"), ["inv-9"]),
    "report_texts": _set(("evidence", 0, "text"), " "),
    "report_action_alert": _delete(("recommended_actions", 0, "service")),
    "report_finding_subject": _set(("findings", 0, "cited_invocation_ids"), [""]),
    "report_evidence_cites": _set(("evidence", 0, "cited_invocation_ids"), []),
    "report_well_formed": _delete(("summary",)),
    "report_summary": _set(("summary",), "  "),
    "report_sections": _set(("evidence",), []),
    "report_alerts_addressed": _set(("findings",), []),
    "report_cite_recorded": _set(("evidence", 0, "cited_invocation_ids"), ["inv-9"]),
    "report_critical_actions": _set(
        ("recommended_actions", 0), {"text": "Page the on-call engineer."}
    ),
}
TEXT_COUNTEREXAMPLES: dict[str, typing.Callable[[str], str]] = {
    "json_only": lambda text: "Here is the plan:\n" + text,
    "strict_json": lambda text: text.replace("{", '{"steps": [], ', 1),
}
# Rules that stand for instructions the code applies rather than refuses (the round-2
# constraints steer the executor; the retry context enforces them by construction).
NOT_REFUSABLE = {"executor_retry_round"}


def _key_pattern(key: str) -> str:
    return "".join(".*" if part == "{}" else re.escape(part) for part in re.split(r"(\{\})", key))


def _chat_ledger_with_a_failed_call() -> dct.ToolLedger:
    """The example tool call, then a second call of the same tool that raised."""
    (shown,) = example("chat", "executor", "en").tool_results
    envelope = json.loads(shown)
    recorder = dct.ToolRecorder()
    recorder.wrap(envelope["tool_name"], lambda query: envelope["output"])("q")

    def broken(query: str) -> object:
        raise ConnectionError("log store unreachable")

    with pytest.raises(ConnectionError):
        recorder.wrap(envelope["tool_name"], broken)("q")
    return recorder.ledger()


def _refusal(rule: dcpr.PromptRule, workflow: str, agent: str, text: str) -> str:
    """What the check behind ``rule`` says about reply ``text`` ("" when it accepts it)."""
    given = json.loads(example(workflow, agent, "en").input)
    keys = set(rule.enforces)
    if any(key.startswith("aiops_rule:") for key in keys):  # the evaluator reads any report
        evaluation = dca.evaluate_aiops_report(
            json.loads(text),
            mode=dca.AiOpsMode(given["mode"]),
            alerts=[dcp.Alert(**alert) for alert in given["task"]["alerts"]],
            ledger=example_ledger("aiops"),
        )
        return " ".join(f"aiops_rule:{v.rule_id}" for v in evaluation.violations)
    try:
        value = _parse_reply(workflow, agent, text, given)
    except dcp.PayloadError as error:
        return f"parse:{error.path or '$'}: {error.problem}"
    if any(key.startswith("gatekeeper:") for key in keys):
        raw = ReferenceGatekeeper(_chat_ledger_with_a_failed_call())(
            "run", typing.cast(dcp.ExecutorEvidence, value)
        )
        codes = typing.cast(list[str], raw["reason_codes"])
        return " ".join(f"gatekeeper:{code}" for code in codes)
    return ""


def test_every_rule_that_stands_for_a_check_has_a_counterexample() -> None:
    checked = {rule.id for rule in dcpr.PROMPT_RULES if rule.enforces} - NOT_REFUSABLE
    assert checked == set(COUNTEREXAMPLES) | set(TEXT_COUNTEREXAMPLES)


@pytest.mark.parametrize(
    "rule", [rule for rule in dcpr.PROMPT_RULES if rule.enforces and rule.id not in NOT_REFUSABLE],
    ids=lambda rule: rule.id,
)
def test_the_check_behind_each_rule_refuses_its_counterexample(rule: dcpr.PromptRule) -> None:
    workflow, agent = rule.scope[0]
    reply = example(workflow, agent, "en").reply
    assert _refusal(rule, workflow, agent, reply) == ""  # the example itself passes
    if rule.id in TEXT_COUNTEREXAMPLES:
        broken = TEXT_COUNTEREXAMPLES[rule.id](reply)
    else:
        data = json.loads(reply)
        COUNTEREXAMPLES[rule.id](data)
        broken = json.dumps(data)
    said = _refusal(rule, workflow, agent, broken)
    assert said, f"{rule.id}: the counterexample was accepted"
    layers = {"layer:document": "parse:$: ", "layer:types": "parse:"}
    patterns = [
        _key_pattern(layers[key]) + ".*" if key in layers
        else "parse:.*" if key.startswith("enum:")
        else ".*" + _key_pattern(key) + ".*"
        for key in rule.enforces
    ]
    assert any(re.fullmatch(pattern, said, re.DOTALL) for pattern in patterns), (rule.id, said)
