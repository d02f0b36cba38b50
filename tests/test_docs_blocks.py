"""The blocks of the README and of ``docs/`` are what the code does.

* Every ``console`` block starts with the command it shows (``$ …``); the test runs
  that command and compares its output line by line — a line ``…`` stands for any
  number of lines, a line ending in `` …`` for any continuation of that line — so an
  output that drifts fails here.
* Every example in ``docs/getting-started.md``'s table has the outcome
  ``diagnosis-core run`` prints, and every example is in the table.
* Every ``notest`` Python block (it needs a real model endpoint) is type-checked with
  ``mypy --strict``, the names it assumes declared as their fixtures type them.
* A block that uses a name nobody defines fails the suite, and the summary says how many
  blocks ran (the runnable blocks themselves are collected by ``tests/docs_blocks.py``).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import (
    ROOT,
    Block,
    fixture_types,
    markdown_pages,
    page_blocks,
    python_blocks,
    typed_prelude,
)

from diagnosis_core._cli import main

ELLIPSIS = "…"


def console_blocks() -> list[Block]:
    return [
        block for page in markdown_pages() for block in page_blocks(page) if block.lang == "console"
    ]


def output_pattern(expected: str) -> re.Pattern[str]:
    """The lines of a shown output as a pattern: ``…`` elides lines or a line's end."""
    parts = []
    for line in expected.splitlines():
        if line.strip() == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
        elif line.endswith(" " + ELLIPSIS):
            parts.append(re.escape(line[: -len(ELLIPSIS)]) + r"[^\n]*\n")
        else:
            parts.append(re.escape(line) + r"\n")
    return re.compile("".join(parts))


def shown_output_matches(expected: str, actual: str) -> bool:
    return output_pattern(expected).fullmatch(actual.rstrip("\n") + "\n") is not None


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


def _typed_source(block: Block) -> str:
    return typed_prelude(block) + block.code


def test_blocks_that_cannot_run_here_type_check_strictly(tmp_path: Path) -> None:
    blocks = python_blocks(runnable=False)
    sources = {f"block_{index}.py": _typed_source(block) for index, block in enumerate(blocks)}
    sources["planted_error.py"] = _typed_source(
        Block(ROOT / "README.md", 1, "python", frozenset({"fixture:KEY"}), "KEY + 1\n")
    )
    result = _mypy(sources, tmp_path)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    # Only the planted mistake: the check sees type errors, and the pages have none.
    assert [line.split(":")[0] for line in errors] == ["planted_error.py"], result.stdout


def test_every_name_a_block_assumes_is_a_typed_fixture() -> None:
    types = fixture_types()
    assumed = {
        name
        for runnable in (True, False)
        for block in python_blocks(runnable=runnable)
        for name in block.fixtures
    }
    assert assumed - set(types) == set()
    assert types["executor"] == "dc.AgentInvoker"


def test_a_block_with_an_undefined_name_fails_and_is_counted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makefile(
        ".md",
        page="# A page\n\n```python\nprint('ok')\n```\n\n```python\nprint(executor)\n```\n",
    )
    result = pytester.runpytest_subprocess("-p", "tests.docs_blocks", "page.md")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NameError: name 'executor' is not defined*",
            "documentation blocks: 1 run and passed, 1 failed, 0 skipped*",
        ]
    )


def test_a_block_writes_in_a_scratch_directory_not_the_checkout(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stores page opens ``sqlite:///runs.db``: run from the checkout's root, it
    # wrote a database into the clone (and one was committed by mistake).
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    name = "written-by-a-doc-block.txt"
    pytester.makefile(
        ".md",
        page="# A page\n\n```python\n"
        "import pathlib\n"
        "assert pathlib.Path('examples/payment_timeout.json').is_file()\n"
        f"pathlib.Path('{name}').write_text('x')\n"
        "```\n",
    )
    result = pytester.runpytest_subprocess("-p", "tests.docs_blocks", "page.md")
    result.assert_outcomes(passed=1)
    assert not (ROOT / name).exists()
