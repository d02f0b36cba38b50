"""The blocks of the README and of ``docs/`` are what the code does.

* Every ``console`` block starts with the command it shows (``$ …``); the test runs
  that command and compares its output line by line — a line ``…`` stands for any
  number of lines, a line ending in `` …`` for any continuation of that line — so an
  output that drifts fails here.
* Every example in ``docs/getting-started.md``'s table has the outcome
  ``diagnosis-core run`` prints, and every example is in the table.
* Every ``notest`` Python block (it needs a real model endpoint) is type-checked with
  ``mypy --strict`` exactly as written: it defines or imports every name it uses.
* The runnable blocks themselves are collected by ``tests/docs_blocks.py``; the tests
  here check that plugin on pages of their own: a block gets nothing injected (a name
  nobody defines fails it, and the summary counts it), runs in an empty directory and a
  fresh interpreter, and imports only what the extras its page names install.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docs_blocks import (
    ROOT,
    Block,
    is_python,
    markdown_pages,
    page_blocks,
    python_blocks,
    shown_output_matches,
)

from diagnosis_core.cli import main


def console_blocks() -> list[Block]:
    return [
        block for page in markdown_pages() for block in page_blocks(page) if block.lang == "console"
    ]


def command_output(command: str) -> str:
    """What a documented command prints, run the way the page says, from the root."""
    argv = command.split()
    if argv[0] == "diagnosis-core":
        buffer = io.BytesIO()
        stdout = io.TextIOWrapper(buffer, encoding="utf-8")
        with contextlib.redirect_stdout(stdout), contextlib.chdir(ROOT):
            status = main(argv[1:])
        stdout.flush()
        assert status == 0, command
        return buffer.getvalue().decode("utf-8")
    if argv[0] == "python":
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        completed = subprocess.run(
            [sys.executable, *argv[1:]],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=True,
            timeout=120,
        )
        return completed.stdout
    raise AssertionError(f"no way to run the documented command {command!r}")


def test_the_pages_have_console_blocks_and_notest_blocks() -> None:
    # The scan sees what it checks: a parser change that found nothing would pass.
    assert len(console_blocks()) >= 3
    assert {block.name.split(":")[0] for block in console_blocks()} >= {
        "README.md",
        "docs/getting-started.md",
    }
    sketches = [block.name.split(":")[0] for block in python_blocks(runnable=False)]
    assert "docs/embedding.md" in sketches
    assert len(python_blocks(runnable=True)) >= 13


@pytest.mark.parametrize("block", console_blocks(), ids=lambda block: block.name)
def test_every_console_block_is_the_output_of_its_command(block: Block) -> None:
    first, _, shown = block.code.partition("\n")
    assert first.startswith("$ "), f"{block.name}: a console block starts with `$ command`"
    actual = command_output(first.removeprefix("$ "))
    assert shown_output_matches(shown, actual), f"{block.name}: the output drifted:\n{actual}"


@pytest.mark.parametrize(
    ("shown", "actual", "matches"),
    [
        ("a\nb\n", "a\nb\n", True),
        ("a\nb\n", "a\nc\n", False),  # a changed line
        ("a\n…\nd\n", "a\nb\nc\nd\n", True),
        ("a\n…\nd\n", "a\nd\n", True),
        ("a\n…\nd\n", "a\nb\nc\n", False),  # the line after the elision is gone
        ("title …\nb\n", "title and more\nb\n", True),
        ("title …\nb\n", "other and more\nb\n", False),
        ("a\n", "a\nextra\n", False),  # an added line
    ],
)
def test_the_output_comparison_elides_only_where_the_page_says(
    shown: str, actual: str, matches: bool
) -> None:
    assert shown_output_matches(shown, actual) is matches


def _outcome_table() -> dict[str, str]:
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([\w.-]+\.json)` \| `([A-Z_]+)` \|", text, re.MULTILINE)
    return dict(rows)


def test_every_example_is_in_the_getting_started_table() -> None:
    examples = {path.name for path in (ROOT / "examples").glob("*.json")}
    assert set(_outcome_table()) == examples


@pytest.mark.parametrize("example", sorted(_outcome_table()))
def test_each_documented_outcome_is_what_the_cli_prints(example: str) -> None:
    printed = command_output(f"diagnosis-core run examples/{example}")
    (outcome,) = re.findall(r"\boutcome: ([A-Z_]+)", printed)
    assert _outcome_table()[example] == outcome


def _mypy(sources: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy")
    for name, source in sources.items():
        (tmp_path / name).write_text(source, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            "--no-error-summary",
            *sorted(sources),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_blocks_that_cannot_run_here_type_check_strictly(tmp_path: Path) -> None:
    blocks = python_blocks(runnable=False)
    sources = {f"block_{index}.py": block.code for index, block in enumerate(blocks)}
    # A name the block does not define is an error: nothing declares it for the check.
    sources["planted_error.py"] = "KEY = 'k'\nKEY + 1\n"
    sources["planted_undefined.py"] = "print(executor)\n"
    result = _mypy(sources, tmp_path)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    # Only the planted mistakes: the check sees type errors, and the pages have none.
    assert sorted({line.split(":")[0] for line in errors}) == [
        "planted_error.py",
        "planted_undefined.py",
    ], result.stdout


def test_no_block_asks_for_a_name_to_be_injected() -> None:
    # Blocks once named fixtures in their fence (```python fixture:executor), which the
    # plugin injected and a reader never saw: the option is gone from every page, and
    # the plugin defines no fixture any more.
    every = [block for page in markdown_pages() for block in page_blocks(page)]
    assert [b.name for b in every if any(o.startswith("fixture:") for o in b.options)] == []
    plugin = ast.parse((ROOT / "tests" / "docs_blocks.py").read_text(encoding="utf-8"))
    fixtures = [
        node.name
        for node in ast.walk(plugin)
        if isinstance(node, ast.FunctionDef)
        and any("fixture" in ast.unparse(d) for d in node.decorator_list)
    ]
    assert fixtures == []


def _after_the_server(code: str) -> str | None:
    """The statement after the block's ``async with`` around a Temporal server.

    ``None`` when the block starts none; ``""`` when nothing follows it.
    """
    for node in ast.walk(ast.parse(code)):
        for body in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
            if not isinstance(body, list):
                continue
            for index, statement in enumerate(body):
                if isinstance(statement, ast.AsyncWith) and "start_local(" in ast.unparse(
                    statement.items[0].context_expr
                ):
                    return ast.unparse(body[index + 1]) if index + 1 < len(body) else ""
    return None


def test_a_block_that_starts_a_temporal_server_pauses_after_it() -> None:
    # A pasted Temporal example printed its answer, then aborted at interpreter exit
    # (an SDK thread still handing a result to Python, docs/temporal.md): the pause lets
    # those threads finish. A run cannot show its absence (it aborts in about one run of
    # 240), so every such block is checked to have it.
    every = [block for page in markdown_pages() for block in page_blocks(page)]
    found = {b.name: _after_the_server(b.code) for b in every if is_python(b)}
    temporal = {name: after for name, after in found.items() if after is not None}
    assert len(temporal) == 2, temporal
    assert all(after.startswith("await asyncio.sleep(0.1)") for after in temporal.values()), (
        temporal
    )


def test_the_pause_check_finds_a_block_without_it() -> None:
    block = (
        "async def main():\n"
        "    async with await WorkflowEnvironment.start_local() as env:\n"
        "        await work(env)\n"
        "    print('done')\n"
    )
    assert _after_the_server(block) == "print('done')"
    assert _after_the_server(block.replace("    print('done')\n", "")) == ""
    assert _after_the_server("print('no server')\n") is None


def _run_page(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, page: str) -> Any:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makefile(".md", page=page)
    return pytester.runpytest_subprocess("-p", "tests.docs_blocks", "page.md")


def test_a_block_with_an_undefined_name_fails_and_is_counted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run_page(
        pytester,
        monkeypatch,
        "# A page\n\n```python\nprint('ok')\n```\n\n```python\nprint(executor)\n```\n",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NameError: name 'executor' is not defined*",
            "documentation blocks: 1 run and passed, 1 failed, 0 skipped*",
        ]
    )


def test_a_fixture_named_in_the_fence_is_not_injected(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run_page(
        pytester, monkeypatch, "# A page\n\n```python fixture:executor\nprint(executor)\n```\n"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*NameError: name 'executor' is not defined*"])


def test_a_block_runs_alone_in_an_empty_directory_with_the_clone_importable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stores page once opened ``sqlite:///runs.db`` from the checkout's root and
    # wrote a database into the clone; blocks also once read ``examples/…`` from the
    # working directory, which a reader's new folder does not have.
    name = "written-by-a-doc-block.txt"
    result = _run_page(
        pytester,
        monkeypatch,
        "# A page\n\n```python\n"
        "import pathlib, sys\n"
        "from examples.doc_agents import PAYMENT\n"
        "assert sorted(p.name for p in pathlib.Path().iterdir()) == ['block.py']\n"
        "assert not pathlib.Path('examples').exists() and PAYMENT.is_file()\n"
        "assert sys.argv == [str(pathlib.Path('block.py').resolve())]\n"
        f"pathlib.Path('{name}').write_text('x')\n"
        "import builtins; builtins.left_behind = 1\n"
        "```\n\n"
        "```python\nimport builtins\nassert not hasattr(builtins, 'left_behind')\n```\n",
    )
    result.assert_outcomes(passed=2)
    assert not (ROOT / name).exists()


def _run_pages(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pages: dict[str, str]
) -> dict[str, str]:
    """Run several pages in one session; ``page name -> outcome`` of its one block."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makefile(".md", **pages)
    result = pytester.runpytest_subprocess(
        "-p", "tests.docs_blocks", "-rA", *(f"{name}.md" for name in pages)
    )
    outcomes = {}
    for line in result.outlines:
        match = re.match(r"(PASSED|FAILED) (\w+)\.md::\[line:\d+\]", line)
        if match:
            outcomes[match.group(2)] = match.group(1).lower()
    assert set(outcomes) == set(pages), result.stdout.str()
    return outcomes


def test_a_block_imports_only_what_the_extras_its_page_names_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/temporal.md and docs/dbos.md named `otel`, which brought the OpenTelemetry API
    # only: pasted after that install, their blocks failed on `opentelemetry.sdk`.
    pytest.importorskip("opentelemetry.sdk")
    block = "```python\nfrom opentelemetry.sdk.trace import TracerProvider\nTracerProvider()\n```\n"
    installs = {
        "core_only": ("", "failed"),
        "another_extra": ("```bash\npip install -e '.[testing]'\n```\n", "failed"),
        "otel": ("```bash\npip install -e '.[otel]'\n```\n", "passed"),
        "otel_in_prose": ("Install `pip install -e '.[temporal,otel]'` first.\n", "passed"),
    }
    pages = {name: f"# A page\n\n{install}\n{block}" for name, (install, _) in installs.items()}
    assert _run_pages(pytester, monkeypatch, pages) == {
        name: outcome for name, (_, outcome) in installs.items()
    }


def test_what_a_page_says_a_block_prints_is_what_it_prints(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = {
        "inline": ("prints `1 2`.\n", "passed"),
        "inline_drifted": ("prints `1 3`.\n", "failed"),
        "text_block": ("prints\n\n```text\n1 2\n```\n", "passed"),
        "text_block_elided": ("prints, after a banner if any,\n\n```text\n…\n1 2\n```\n", "passed"),
        "text_block_drifted": ("prints\n\n```text\n1 2\nmore\n```\n", "failed"),
    }
    pages = {
        name: f"# A page\n\n```python\nprint(1, 2)\n```\n\n{text}"
        for name, (text, _) in said.items()
    }
    assert _run_pages(pytester, monkeypatch, pages) == {
        name: outcome for name, (_, outcome) in said.items()
    }
