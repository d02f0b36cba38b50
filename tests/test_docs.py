"""The documentation stays inside the repository and agrees with the code.

* No file a user reads (the README, ``docs/``, the package's sources and docstrings)
  links or refers to a path outside the repository: a clone must be complete.
* Every relative link of the README and of ``docs/`` resolves to a file of the
  repository, and every ``#anchor`` to a heading of the target page (the docs site is
  checked again by ``mkdocs build --strict``; this also covers the README, which the
  site does not include, and runs without the ``docs`` extra).
* The routing diagrams and the example agent input pasted into the docs are exactly
  what the code produces today.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import diagnosis_core as dc
from diagnosis_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# A Markdown link or image that climbs out of its folder, the sibling folder the
# contract once lived in, and an absolute path of the machine the repository was
# written on.
OUTSIDE = (
    re.compile(r"\]\(\.\./"),
    re.compile(r"\.\./shared"),
    re.compile(r"(?<![\w.])/work/"),
)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def scanned_files() -> Iterator[Path]:
    """The files a user of the package reads."""
    yield ROOT / "README.md"
    yield ROOT / "CHANGELOG.md"
    yield ROOT / "mkdocs.yml"
    for folder in (DOCS, ROOT / "diagnosis_core"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in {".md", ".py", ".pyi", ".yml", ".toml", ".txt"}:
                yield path


def outside_references(text: str) -> list[str]:
    """Every occurrence of a reference to a path outside the repository."""
    return [match.group(0) for pattern in OUTSIDE for match in pattern.finditer(text)]


def slug(heading: str) -> str:
    """The anchor of a heading, as Python-Markdown's ``toc`` and the repository host make it."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\s-]", "", text.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(heading) for heading in _HEADING.findall(text)}


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_the_scan_sees_the_readme_the_docs_and_the_package() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in scanned_files()}
    assert {"README.md", "docs/protocol.md", "diagnosis_core/__init__.py"} <= names


@pytest.mark.parametrize(
    "text",
    [
        "The contract is [`PROTOCOL.md`](../shared/spec/PROTOCOL.md).",
        "see ../shared/spec",
        "specified in /work/shared/spec/PROTOCOL.md",
        "![diagram](../images/x.png)",
    ],
)
def test_the_scan_finds_references_outside_the_repository(text: str) -> None:
    assert outside_references(text)


@pytest.mark.parametrize(
    "text", ["[the protocol](docs/protocol.md)", "[6.1](protocol.md#61-x)", "a/work/b", "x.work/"]
)
def test_the_scan_accepts_references_inside_the_repository(text: str) -> None:
    assert outside_references(text) == []


def test_nothing_refers_to_a_path_outside_the_repository() -> None:
    found = {
        path.relative_to(ROOT).as_posix(): hits
        for path in scanned_files()
        if (hits := outside_references(path.read_text(encoding="utf-8")))
    }
    assert found == {}


@pytest.mark.parametrize(
    "page", markdown_files(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_relative_links_resolve_to_files_and_headings(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        outside = not destination.is_relative_to(ROOT) or not destination.is_file()
        unknown_anchor = (
            not outside
            and bool(anchor)
            and destination.suffix == ".md"
            and anchor not in anchors(destination)
        )
        if outside or unknown_anchor:
            broken.append(target)
    assert broken == []


def test_protocol_sections_are_headed_by_their_numbers() -> None:
    # Docstrings cite "spec §6.1": each section number must be a heading of the page.
    headed = anchors(DOCS / "protocol.md")
    cited = {
        match.group(1).rstrip(".")
        for path in (ROOT / "diagnosis_core").rglob("*.py")
        for match in re.finditer(r"§(\d+(?:\.\d+)*)", path.read_text(encoding="utf-8"))
    }
    # "§10.8" is invariant 8 of the numbered list in section 10, not a heading.
    sections = {re.sub(r"^10\.\d+$", "10", section) for section in cited}
    numbers = {section.replace(".", "") for section in sections | {str(n) for n in range(1, 16)}}
    missing = sorted(
        number for number in numbers if not any(a.startswith(f"{number}-") for a in headed)
    )
    assert missing == []


def _pasted(page: Path, marker: str) -> str:
    text = page.read_text(encoding="utf-8")
    match = re.search(
        rf"<!-- {re.escape(marker)} -->\n```mermaid\n(.*?)```\n<!-- end {re.escape(marker)} -->",
        text,
        re.DOTALL,
    )
    assert match is not None, f"{page.name}: no pasted diagram marked {marker!r}"
    return match.group(1)


def _cli_output(*argv: str) -> str:
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="utf-8")
    with contextlib.redirect_stdout(stdout):
        assert main(list(argv)) == 0
    stdout.flush()
    return buffer.getvalue().decode("utf-8")


def test_the_routing_diagram_in_the_protocol_is_the_generated_one() -> None:
    # Regenerate with `diagnosis-core graph` and paste between the markers.
    generated = _cli_output("graph")
    assert _pasted(DOCS / "protocol.md", "diagnosis-core graph").strip() == generated.strip()


def _aiops_mermaid() -> str:
    try:
        return _cli_output("graph", "--workflow", "aiops")
    except SystemExit:  # a command line that knows only the chat workflow
        drawing = getattr(dc, "aiops_routing_mermaid")  # noqa: B009 - may move to .aiops
        return str(drawing())


def test_the_aiops_routing_diagram_is_the_generated_one() -> None:
    generated = _aiops_mermaid()
    assert _pasted(DOCS / "aiops.md", "aiops routing").strip() == generated.strip()


def test_the_example_verifier_input_in_the_protocol_is_what_the_core_sends() -> None:
    scenario = json.loads((ROOT / "examples" / "payment_timeout.json").read_text("utf-8"))
    invocations: list[dict[str, str | int]] = json.loads(
        json.dumps(dc.replay(scenario)["invocations"])
    )
    (sent,) = [item["input"] for item in invocations if item["agent"] == "verifier"]
    assert f"```json\n{sent}\n```" in (DOCS / "protocol.md").read_text(encoding="utf-8")


def test_the_readme_fits_on_two_screens() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 120


@pytest.mark.parametrize(
    "page", markdown_files(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_no_prose_line_is_repeated_right_after_itself(page: Path) -> None:
    # A merge that doubles a line (protocol §14 once said its "Status" twice).
    lines = _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines()
    repeated = [a for a, b in itertools.pairwise(lines) if a.strip() and a == b]
    assert repeated == []


def test_decisions_say_matched_text_is_folded_not_stripped() -> None:
    decisions = (DOCS / "decisions.md").read_text(encoding="utf-8")
    assert "starts and ends on non-whitespace" not in decisions
    embedding = (DOCS / "embedding.md").read_text(encoding="utf-8")
    assert "recorder.gatekeeper()" in embedding


def public_namespaces() -> set[str]:
    """Every public module and package of the package: no part of its name starts with ``_``.

    Found by walking the source tree (no import, so no extra is needed).
    """
    package = ROOT / "diagnosis_core"
    names = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            names.add(".".join(parts))
    return names


def _reference_pages() -> dict[str, str]:
    """``namespace -> page`` for every ``::: namespace`` of ``docs/reference/``."""
    return {
        match.group(1): path.name
        for path in sorted((DOCS / "reference").glob("*.md"))
        for match in re.finditer(r"^::: ([\w.]+)\s*$", path.read_text("utf-8"), re.MULTILINE)
    }


def test_the_namespace_walk_sees_modules_and_packages() -> None:
    assert {"diagnosis_core", "diagnosis_core.journal", "diagnosis_core.adapters.otel"} <= (
        public_namespaces()
    )
    assert not any("._" in name for name in public_namespaces())


def test_every_public_namespace_has_a_reference_page_in_the_site() -> None:
    pages = _reference_pages()
    assert public_namespaces() - set(pages) == set()
    index = (DOCS / "reference" / "index.md").read_text("utf-8")
    site = (ROOT / "mkdocs.yml").read_text("utf-8")
    for page in set(pages.values()):
        assert f"]({page})" in index, f"reference/index.md does not link {page}"
        assert f"reference/{page}" in site, f"mkdocs.yml's nav does not list {page}"
    assert "reference/index.md" in site


# --- docs/benchmarks.md holds the output of benchmarks/run.py -------------------------

_BENCH_BEGIN = "<!-- benchmarks/run.py output: begin (generated; do not edit) -->"
_BENCH_END = "<!-- benchmarks/run.py output: end -->"


def _printed_format() -> tuple[list[re.Pattern[str]], set[tuple[str, ...]]]:
    """The headings and table headers ``benchmarks/run.py`` prints, read from its source.

    A heading is a ``print("## …")`` (its formatted parts match anything); a table header
    is the first argument of a ``_table([...])`` call (``table([...])`` in
    ``stores_bench.py``, ``langgraph_bench.py`` and ``engines_bench.py``, which receive
    ``_table``), or the header line of ``rejection.py``'s table.
    """
    import ast

    headings: list[re.Pattern[str]] = []
    headers: set[tuple[str, ...]] = set()
    # run.py and the section modules it hands its ``_table`` to (as ``table``).
    sources = [(ROOT / "benchmarks" / name).read_text("utf-8")
               for name in ("run.py", "stores_bench.py", "langgraph_bench.py", "engines_bench.py")]
    calls = [
        node for source in sources for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    for node in calls:
        assert isinstance(node.func, ast.Name)
        first = node.args[0] if node.args else None
        if node.func.id == "print" and isinstance(first, ast.Constant | ast.JoinedStr):
            parts = first.values if isinstance(first, ast.JoinedStr) else [first]
            text = "".join(
                re.escape(str(part.value).strip()) if isinstance(part, ast.Constant) else ".+"
                for part in parts
            )
            if text.startswith(re.escape("## ")):
                headings.append(re.compile(text))
        if node.func.id in ("_table", "table") and isinstance(first, ast.List):
            headers.add(tuple(ast.literal_eval(item) for item in first.elts))
    rejection = (ROOT / "benchmarks" / "rejection.py").read_text("utf-8")
    line = re.search(r'"(\| case \|[^"]*)"', rejection)
    assert line is not None
    headers.add(tuple(cell.strip() for cell in line.group(1).strip("|").split("|")))
    return headings, headers


def _generated_block() -> str:
    text = (DOCS / "benchmarks.md").read_text("utf-8")
    assert _BENCH_BEGIN in text and _BENCH_END in text, "docs/benchmarks.md lost its markers"
    return text[text.index(_BENCH_BEGIN) + len(_BENCH_BEGIN) : text.index(_BENCH_END)]


def _page_format(block: str) -> tuple[list[str], set[tuple[str, ...]]]:
    headings = [line[4:] for line in block.splitlines() if line.startswith("### ")]
    headers = set()
    lines = block.splitlines()
    for above, line in itertools.pairwise(lines):
        if re.fullmatch(r"\|(?:---\|)+", line):
            headers.add(tuple(cell.strip() for cell in above.strip().strip("|").split("|")))
    return headings, headers


def test_the_benchmark_format_is_read_from_the_script() -> None:
    headings, headers = _printed_format()
    assert len(headings) >= 8 and ("target", "measured", "status") in headers
    assert any(pattern.fullmatch("## 5. Rejecting a 10 MB executor text") for pattern in headings)


def test_the_benchmark_page_is_a_whole_run_of_the_script() -> None:
    # Regenerate with `python benchmarks/run.py --write-docs docs/benchmarks.md`.
    headings, headers = _printed_format()
    page_headings, page_headers = _page_format(_generated_block())
    assert page_headers == headers
    unmatched = [h for h in page_headings if not any(p.fullmatch("## " + h) for p in headings)]
    missing = [
        p.pattern for p in headings if not any(p.fullmatch("## " + h) for h in page_headings)
    ]
    assert (unmatched, missing) == ([], [])
    block = _generated_block()
    assert re.search(r"^\| date \(UTC\) \| \d{4}-\d\d-\d\d \d\d:\d\d \|$", block, re.MULTILINE)
    assert re.search(r"^\| load average at start \| [\d.]+ [\d.]+ [\d.]+ \|$", block, re.MULTILINE)


def test_a_diverging_table_is_noticed() -> None:
    block = "### 1. x\n\n| payload | other |\n|---|---|\n| 1 | 2 |\n"
    assert _page_format(block) == (["1. x"], {("payload", "other")})
    assert ("payload", "other") not in _printed_format()[1]


@pytest.mark.slow
def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    # The generated tables and the reference pages must not break `mkdocs build --strict`.
    for module in ("mkdocs", "material", "mkdocstrings"):
        pytest.importorskip(module)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "reference" / "index.html").is_file()


# --- numbers a run produces: the conformance kit, the schemas, the protocol version -----

CONFORMANCE = DOCS / "conformance.md"


def test_the_conformance_listing_is_a_checked_console_block() -> None:
    # The listing once said 66 journal cases and 324 in all when the kit had 68 and 326:
    # as a `console` block, tests/test_docs_blocks.py compares it with the command's output.
    text = CONFORMANCE.read_text(encoding="utf-8")
    assert "```console\n$ diagnosis-core conformance list\n" in text


def test_the_conformance_example_run_counts_every_case() -> None:
    from diagnosis_core.conformance._corpus import load_corpus

    text = CONFORMANCE.read_text(encoding="utf-8")
    runs = re.findall(r"^(\d+) passed, (\d+) failed \(", text, re.MULTILINE)
    assert runs, "docs/conformance.md shows no example run"
    total = len(load_corpus())
    assert [int(passed) + int(failed) for passed, failed in runs] == [total] * len(runs)


def _documented_schemas() -> list[str]:
    text = CONFORMANCE.read_text(encoding="utf-8")
    section = text[text.index("## Schemas for code generators") :]
    table = section[section.index("| schema | describes |") :].split("\n\n")[0]
    rows = table.splitlines()[2:]
    return [name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])]


def test_the_schema_table_lists_every_schema_the_kit_writes(tmp_path: Path) -> None:
    # The table once listed 16 schemas while `schema --all` wrote 18 (the v2 journals).
    assert main(["schema", "--all", "--out", str(tmp_path)]) == 0
    written = sorted(path.name.removesuffix(".schema.json") for path in tmp_path.iterdir())
    documented = _documented_schemas()
    assert len(documented) == len(set(documented))
    assert sorted(documented) == written


def test_the_schema_ids_on_the_page_are_the_written_ones() -> None:
    from diagnosis_core.conformance import PROTOCOL_VERSION
    from diagnosis_core.conformance._schemas import schema_id

    text = CONFORMANCE.read_text(encoding="utf-8")
    assert f"`{schema_id('<name>')}`" in text
    assert re.findall(r"urn:diagnosis-core:([\d.]+):", text) == [PROTOCOL_VERSION]


def _protocol_version_mentions() -> dict[str, list[str]]:
    """Every ``protocol X.Y`` the README and the current pages state (history aside)."""
    history = {"decisions.md", "changelog.md", "benchmarks.md"}
    return {
        page.relative_to(ROOT).as_posix(): found
        for page in markdown_files()
        if page.name not in history
        and (found := re.findall(r"\bprotocol (\d+\.\d+)\b", page.read_text("utf-8")))
    }


def test_the_protocol_page_is_titled_with_the_version_the_package_implements() -> None:
    # The page said v1.1 while `diagnosis-core --version` said protocol 1.2.
    from diagnosis_core.conformance import PROTOCOL_VERSION

    title = (DOCS / "protocol.md").read_text(encoding="utf-8").splitlines()[0]
    assert title == f"# The protocol (v{PROTOCOL_VERSION})"
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="utf-8")
    with contextlib.redirect_stdout(stdout), contextlib.suppress(SystemExit):
        main(["--version"])
    stdout.flush()
    assert buffer.getvalue().decode().splitlines()[1] == f"protocol {PROTOCOL_VERSION}"
    mentions = _protocol_version_mentions()
    assert "docs/protocol.md" in mentions and "docs/conformance.md" in mentions
    assert {version for found in mentions.values() for version in found} == {PROTOCOL_VERSION}
