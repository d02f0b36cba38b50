"""Mutation testing of the decision modules' tables (what mutmut cannot mutate).

mutmut 3 mutates function bodies only. The decisions of this package also live
in module-level data — the routing tables, the predicate maps, the ceilings,
the HTTP client table of ``_kernel/machine/classify.py`` — and in the defaults of
public attrs classes (``RoutingFacts.gap_count``). This script mutates exactly
those: every module-level assignment (``__all__`` and type variables aside)
and every class-level annotated default of the decision modules, with these
operators, applied anywhere inside the assigned expression (lambdas included):

* ``dict-drop`` / ``dict-value``: drop one entry; give one entry the value of
  the next entry with a different value (``_N`` → ``_R``);
* ``item-drop`` / ``item-swap``: drop one element of a tuple, list or set;
  swap two neighbours of a tuple or list (row order is a decision);
* ``member``: ``Base.MEMBER`` → another ``Base.OTHER`` used in the module
  (an enum member, a node, a reason code);
* ``number``: an int or float ± 1; ``bool``: ``True`` ↔ ``False``;
* ``string``: a string key or element of a table → ``"XX…XX"``;
* ``compare``: ``==``/``!=``, ``<``/``<=``, ``>``/``>=``, ``is``/``is not``,
  ``in``/``not in`` swapped; ``boolop``: ``and`` ↔ ``or``;
* ``keyword``: drop one keyword argument of a call (the default applies).

Enum member *values* are wire names (reason codes, node names): they are
pinned by the golden corpus and the schema tests, which are not in the fast
selection, so enum class bodies are not mutated here.

Each mutant replaces one statement of a copy of the project (``mutants-tables/``,
git-ignored) and runs the module's test selection (:func:`tests_for`) there (``pytest -x``,
``HYPOTHESIS_PROFILE=mutation``) in a child process forked from this one (which
has pytest, Hypothesis and the HTTP clients loaded, never the package), killed
after a timeout; a non-zero exit is *killed*, exit 0 *survived*, the timeout
*timeout*. Results are appended
to ``mutants-tables/results.jsonl``; a re-run skips mutants already judged.

    python mutation/table_mutants.py list                     # every mutant, numbered
    python mutation/table_mutants.py run                      # every mutant
    python mutation/table_mutants.py run --size 40 --seed 23  # <= 40 per module, seeded
    python mutation/table_mutants.py run --size 40 --seed 23 --no-baseline  # resume
    python mutation/table_mutants.py run --size 40 --seed 23 --rejudge  # survivors again
    python mutation/table_mutants.py run --only _kernel/machine/classify.py:12
    python mutation/table_mutants.py report                   # per module, survivors
    python mutation/table_mutants.py show _kernel/machine/classify.py:12   # the mutated statement

Run it under ``nice -n 19``: the machine is shared.
"""

from __future__ import annotations

import ast
import compileall
import contextlib
import copy
import json
import os
import py_compile
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
WORKDIR = ROOT / "mutants-tables"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from journal_mutmut import DECISION_MODULES, DECISION_TESTS  # noqa: E402  (one list of each)

MODULES = DECISION_MODULES

_CHAT = ("tests/test_decisions_pinned.py", "tests/test_routing_machine.py",
         "tests/test_decision_details.py", "tests/test_decisions.py", "tests/test_gatekeeper.py",
         "tests/test_hardening_gatekeeper.py", "tests/test_parsing.py",
         "property_tests/test_routing_table_walk.py")
_AIOPS = ("tests/test_decisions_pinned.py", "tests/test_aiops_rules.py",
          "tests/test_aiops_machine.py", "tests/test_aiops_parsing.py",
          "tests/test_kernel_shared_rules.py", "property_tests/test_routing_table_walk.py")
_CLASSIFY = ("tests/test_decisions_pinned.py", "tests/test_classify.py",
             "tests/test_classify_http_clients.py")


def tests_for(module: str) -> tuple[str, ...]:
    """The fast tests of ``module``: its own first (``-x`` stops at the first failure)."""
    if module.endswith("classify.py"):
        return _CLASSIFY
    if "/aiops/" in module:
        return _AIOPS
    if "/_chat/" in module:
        return _CHAT
    return DECISION_TESTS  # the shared kernel parts: every decision test


TIMEOUT_SECONDS = 300
_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt,
    ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}


class Mutant(NamedTuple):
    """One mutant: ``module`` with statement ``statement`` replaced by ``source``."""

    id: str
    module: str
    line: int
    operator: str
    description: str
    statement: tuple[int, int]  # 1-based first and last line of the replaced statement
    indent: str
    source: str


def _unpacked(statement: ast.stmt) -> bool:
    """``a, b = x, y``: dropping an item only breaks the import (not a behaviour)."""
    return isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Tuple)


def _targets(tree: ast.Module) -> Iterator[ast.stmt]:
    """Module-level assignments and class-level annotated defaults (not of enums)."""
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            names = [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Name)]
            call = node.value
            if "__all__" in names or (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                                      and call.func.id in ("TypeVar", "object")):
                continue
            yield node
        elif isinstance(node, ast.ClassDef):
            bases = {ast.unparse(base) for base in node.bases}
            if any("Enum" in base for base in bases):
                continue
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and item.value is not None:
                    yield item


def _members(tree: ast.Module) -> dict[str, list[str]]:
    """``Base`` → the upper-case attribute names used with it (``_N`` → PLANNER, …)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.attr.isupper()):
            names = found.setdefault(node.value.id, [])
            if node.attr not in names:
                names.append(node.attr)
    return found


def _next_other(options: list[str], current: str) -> str | None:
    if current not in options or len(options) < 2:
        return None
    return options[(options.index(current) + 1) % len(options)]


Edit = Callable[[ast.AST], None]


def _edits(node: ast.AST, members: dict[str, list[str]], in_table: bool
           ) -> Iterator[tuple[str, str, Edit]]:
    """``(operator, description, edit)`` for one node; ``edit`` changes a copy of it."""
    text = ast.unparse(node)[:80]
    if isinstance(node, ast.Dict):
        for i, key in enumerate(node.keys):
            label = ast.unparse(key) if key is not None else "**"
            yield "dict-drop", f"drop entry {label}", _drop_dict(i)
            values = [ast.unparse(v) for v in node.values]
            for j in range(1, len(values)):
                other = (i + j) % len(values)
                if values[other] != values[i]:
                    yield ("dict-value", f"entry {label}: {values[i]} -> {values[other]}",
                           _dict_value(i, other))
                    break
    elif isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
        for i, elt in enumerate(node.elts):
            yield "item-drop", f"drop item {ast.unparse(elt)[:60]}", _drop_item(i)
        if not isinstance(node, ast.Set):
            for i in range(len(node.elts) - 1):
                if ast.unparse(node.elts[i]) != ast.unparse(node.elts[i + 1]):
                    yield "item-swap", f"swap items {i} and {i + 1} of {text[:40]}", _swap(i)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        other = _next_other(members.get(node.value.id, []), node.attr)
        if other is not None:
            yield "member", f"{node.value.id}.{node.attr} -> {node.value.id}.{other}", \
                _set_attr(other)
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield "bool", f"{value} -> {not value}", _set_const(not value)
        elif isinstance(value, int | float):
            yield "number", f"{value} -> {value + 1}", _set_const(value + 1)
            yield "number", f"{value} -> {value - 1}", _set_const(value - 1)
        elif isinstance(value, str) and in_table:
            yield "string", f"{value!r} -> 'XX{value}XX'", _set_const(f"XX{value}XX")
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swapped = _COMPARE_SWAP.get(type(op))
            if swapped is not None:
                yield "compare", f"{text}: {type(op).__name__} -> {swapped.__name__}", \
                    _set_compare(i, swapped)
    elif isinstance(node, ast.BoolOp):
        other_op: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield "boolop", f"{text}: -> {other_op.__name__}", _set_boolop(other_op)
    elif isinstance(node, ast.Call):
        for i, keyword in enumerate(node.keywords):
            if keyword.arg is not None:
                yield "keyword", f"drop {keyword.arg}= of {text[:40]}", _drop_keyword(i)


def _drop_dict(i: int) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Dict)
        del node.keys[i], node.values[i]
    return edit


def _dict_value(i: int, other: int) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Dict)
        node.values[i] = copy.deepcopy(node.values[other])
    return edit


def _drop_item(i: int) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Tuple | ast.List | ast.Set)
        del node.elts[i]
    return edit


def _swap(i: int) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Tuple | ast.List)
        node.elts[i], node.elts[i + 1] = node.elts[i + 1], node.elts[i]
    return edit


def _set_attr(name: str) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Attribute)
        node.attr = name
    return edit


def _set_const(value: object) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Constant)
        node.value = value
    return edit


def _set_compare(i: int, op: type[ast.cmpop]) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Compare)
        node.ops[i] = op()
    return edit


def _set_boolop(op: type[ast.boolop]) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.BoolOp)
        node.op = op()
    return edit


def _drop_keyword(i: int) -> Edit:
    def edit(node: ast.AST) -> None:
        assert isinstance(node, ast.Call)
        del node.keywords[i]
    return edit


def _table_strings(statement: ast.stmt) -> set[int]:
    """ids of the string constants that are dict keys or collection elements."""
    found: set[int] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Dict):
            found.update(id(k) for k in node.keys if isinstance(k, ast.Constant))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            found.update(id(e) for e in node.elts if isinstance(e, ast.Constant))
    return found


def mutants_of(module: str, root: Path = ROOT) -> list[Mutant]:
    """Every mutant of ``module``'s tables, in source order."""
    source = (root / module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    members = _members(tree)
    lines = source.splitlines()
    short = module.rsplit("/", 1)[-1] if module.count("/") < 2 else "/".join(
        module.split("/")[-2:])
    found: list[Mutant] = []
    for statement in _targets(tree):
        value = statement.value
        assert value is not None
        original = ast.unparse(statement)
        strings = _table_strings(statement)
        nodes = list(ast.walk(value))
        for index, node in enumerate(nodes):
            for operator, description, edit in _edits(node, members, id(node) in strings):
                if operator == "item-drop" and node is value and _unpacked(statement):
                    continue
                mutated = copy.deepcopy(statement)
                mutated_value = mutated.value
                assert mutated_value is not None
                edit(list(ast.walk(mutated_value))[index])
                try:
                    text = ast.unparse(ast.fix_missing_locations(mutated))
                except Exception:  # e.g. a dict emptied of its only entry
                    continue
                if text == original:
                    continue  # no change: not a mutant
                line = getattr(node, "lineno", statement.lineno)
                assert statement.end_lineno is not None
                indent = lines[statement.lineno - 1][: statement.col_offset]
                found.append(Mutant(f"{short}:{len(found) + 1}", module, line, operator,
                                    description, (statement.lineno, statement.end_lineno),
                                    indent, text))
    return found


def mutated_source(mutant: Mutant, original: str) -> str:
    lines = original.splitlines(keepends=True)
    first, last = mutant.statement
    body = "".join(mutant.indent + line + "\n" for line in mutant.source.splitlines())
    return "".join(lines[: first - 1]) + body + "".join(lines[last:])


def prepare(workdir: Path) -> None:
    """A fresh copy of the sources and tests (results kept)."""
    workdir.mkdir(exist_ok=True)
    skip = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.egg-info")
    for name in ("diagnosis_core", "tests", "property_tests", "examples"):
        shutil.rmtree(workdir / name, ignore_errors=True)
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, workdir / name, ignore=skip)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, workdir / name)
    # Compiled once here; a mutant run writes no bytecode (PYTHONDONTWRITEBYTECODE)
    # and only the mutated module is compiled again.
    compileall.compile_dir(workdir / "diagnosis_core", quiet=1)


_PRELOADED = ("pytest", "hypothesis", "attrs", "cattrs", "httpx", "requests", "urllib3",
              "aiohttp")
"""Imported once by the parent, so a forked mutant run starts without them to load.
The package itself is never imported by the parent: each child imports the mutant."""


def _preload(workdir: Path) -> None:
    import importlib

    for name in _PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    assert not any(name.startswith("diagnosis_core") for name in sys.modules)
    os.environ["HYPOTHESIS_PROFILE"] = os.environ.get("HYPOTHESIS_PROFILE", "mutation")
    sys.path.insert(0, str(workdir))


def _pytest_args(tests: tuple[str, ...]) -> list[str]:
    return ["-x", "-q", "-p", "no:cacheprovider", "-k", "not sigkill", *tests]


def _run_forked(workdir: Path, tests: tuple[str, ...], timeout: int) -> tuple[str, float]:
    """Run pytest in a forked child of this (preloaded) process; exit code → status."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: quiet, in the copy, imports the (mutated) package afresh
        code = 3
        try:
            os.chdir(workdir)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import pytest

            code = int(pytest.main(_pytest_args(tests)))
        finally:
            os._exit(code)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > timeout:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - started
        time.sleep(0.05)
    code = os.waitstatus_to_exitcode(status)
    return ("survived" if code == 0 else "killed"), time.monotonic() - started


def run_tests(workdir: Path, tests: tuple[str, ...], timeout: int) -> tuple[str, float]:
    if hasattr(os, "fork") and sys.modules.get("pytest") is not None:
        return _run_forked(workdir, tests, timeout)
    env = dict(os.environ, PYTHONPATH=str(workdir),
               HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "mutation"))
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", *_pytest_args(tests)],
            cwd=workdir, env=env, capture_output=True, timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    status = "survived" if result.returncode == 0 else "killed"
    return status, time.monotonic() - started


def _judged(workdir: Path) -> dict[str, dict[str, object]]:
    path = workdir / "results.jsonl"
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {str(row["id"]): row for row in rows}


def select(size: int | None, seed: int, only: list[str]) -> list[Mutant]:
    rng = random.Random(seed)
    chosen: list[Mutant] = []
    for module in MODULES:
        every = mutants_of(module)
        if only:
            chosen += [m for m in every if m.id in only]
        elif size is None or len(every) <= size:
            chosen += every
        else:
            picked = set(rng.sample(range(len(every)), size))
            chosen += [m for i, m in enumerate(every) if i in picked]
    return chosen


def run(workdir: Path, mutants: list[Mutant], timeout: int, baseline: bool = True,
        rejudge: bool = False) -> None:
    prepare(workdir)
    _preload(workdir)
    for tests in sorted({tests_for(mutant.module) for mutant in mutants}) if baseline else ():
        status, seconds = run_tests(workdir, tests, timeout)
        if status != "survived":
            raise SystemExit(f"the unmutated tests do not pass in {workdir} ({status})")
        print(f"baseline: {len(tests)} test files pass in {seconds:.1f} s", flush=True)
    judged = _judged(workdir)
    with (workdir / "results.jsonl").open("a", encoding="utf-8") as out:
        for mutant in mutants:
            if mutant.id in judged and not (rejudge and judged[mutant.id]["status"] == "survived"):
                continue  # judged (a re-judged mutant's last row counts)
            path = workdir / mutant.module
            original = path.read_text(encoding="utf-8")
            path.write_text(mutated_source(mutant, original), encoding="utf-8")
            for cached in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
                cached.unlink()  # compiled afresh from the mutant, then from the original
            try:
                status, seconds = run_tests(workdir, tests_for(mutant.module), timeout)
            finally:
                path.write_text(original, encoding="utf-8")
                py_compile.compile(str(path))
            row = {**mutant._asdict(), "status": status, "seconds": round(seconds, 1)}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{mutant.id} {status} {seconds:.1f}s  {mutant.description}", flush=True)


def report(workdir: Path) -> str:
    judged = _judged(workdir)
    lines = ["| module | generated | run | killed | survived | timeout |",
             "|---|---:|---:|---:|---:|---:|"]
    totals: Counter[str] = Counter()
    survivors: list[str] = []
    for module in MODULES:
        every = mutants_of(module)
        rows = [judged[m.id] for m in every if m.id in judged]
        counts = Counter(str(row["status"]) for row in rows)
        totals.update(counts)
        totals["generated"] += len(every)
        totals["run"] += len(rows)
        lines.append(f"| `{module.removeprefix('diagnosis_core/')}` | {len(every)} | {len(rows)} "
                     f"| {counts['killed']} | {counts['survived']} | {counts['timeout']} |")
        survivors += [f"* `{row['id']}` (line {row['line']}, {row['operator']}): "
                      f"{row['description']}" for row in rows if row["status"] != "killed"]
    lines.append(f"| **all** | **{totals['generated']}** | **{totals['run']}** "
                 f"| **{totals['killed']}** | **{totals['survived']}** | **{totals['timeout']}** |")
    return "\n".join([*lines, "", "Not killed:", *survivors])


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "report"
    flags = [arg for arg in argv[1:] if arg not in ("--no-baseline", "--rejudge")]
    options = dict(zip(flags[0::2], flags[1::2], strict=False))
    workdir = Path(options.get("--workdir", str(WORKDIR))).resolve()
    size = int(options["--size"]) if "--size" in options else None
    seed = int(options.get("--seed", "23"))
    only = options["--only"].split(",") if "--only" in options else []
    timeout = int(options.get("--timeout", str(TIMEOUT_SECONDS)))
    if command == "list":
        for mutant in select(size, seed, only):
            print(f"{mutant.id} line {mutant.line} {mutant.operator}: {mutant.description}")
        return 0
    if command == "show":
        for mutant in select(None, seed, [argv[1]]):
            print(f"{mutant.module}:{mutant.statement[0]}-{mutant.statement[1]}\n{mutant.source}")
        return 0
    if command == "run":
        chosen = select(size, seed, only)
        random.Random(seed).shuffle(chosen)  # a run cut short is still a sample of every module
        run(workdir, chosen, timeout, baseline="--no-baseline" not in argv,
            rejudge="--rejudge" in argv)
        print(report(workdir))
        return 0
    if command == "report":
        print(report(workdir))
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
