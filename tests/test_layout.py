"""The package as its users meet it: the curated top level, the workflow layout, the docs.

These are the guarantees of the public surface: a small top level, no workflow
or adapter loaded behind a host's back, every public name documented and
type-checked in ``tests/typing/api.py``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import pathlib
import re
import subprocess
import sys
import types

import pytest

import diagnosis_core
from tests._import_graph import import_graph, module_files

PACKAGE = pathlib.Path(diagnosis_core.__file__).parent
API_FILE = pathlib.Path(__file__).parent / "typing" / "api.py"

# The public modules whose names a host imports; api.py exercises all of them.
TYPED_PUBLIC = (
    "diagnosis_core",
    "diagnosis_core.aiops",
    "diagnosis_core.journal",
    "diagnosis_core.machine",
    "diagnosis_core.protocol",
    "diagnosis_core.scenarios",
    "diagnosis_core.tools",
    "diagnosis_core.conformance",
    "diagnosis_core.stores",
    "diagnosis_core.prompts",
)
OPTIONAL_PUBLIC = (
    "diagnosis_core.testing",
    "diagnosis_core.adapters",
    "diagnosis_core.adapters.langgraph",
    "diagnosis_core.adapters.temporal",
    "diagnosis_core.adapters.langchain",
    "diagnosis_core.adapters.otel",
    "diagnosis_core.adapters.dbos",
    "diagnosis_core.adapters.langgraph_aiops",
    "diagnosis_core.adapters.temporal_aiops",
)


def _documented_constants() -> set[str]:
    """Module-level names followed by a string literal (an attribute docstring) anywhere."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, following in itertools.pairwise(body):
            documented = (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
                and following.value.value.strip()
            )
            if not documented:
                continue
            if isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.TypeAlias):  # pragma: no cover - Python 3.12+
                names.add(node.name.id)
    return names


def _own_doc(value: object) -> str:
    if inspect.isclass(value):
        doc = vars(value).get("__doc__")
        return "" if doc in (None, "An enumeration.") else str(doc)
    if callable(value):  # functions, also behind functools.cache
        return getattr(value, "__doc__", None) or ""
    return ""


def _public_modules() -> list[types.ModuleType]:
    modules = [importlib.import_module(name) for name in TYPED_PUBLIC]
    for name in OPTIONAL_PUBLIC:
        try:
            modules.append(importlib.import_module(name))
        except ImportError:  # pragma: no cover - an extra is not installed
            continue
    return modules


def test_the_top_level_is_curated() -> None:
    """The chat host's API, about sixty names; the rest lives in an audience namespace."""
    assert len(diagnosis_core.__all__) <= 65
    assert "converter" not in diagnosis_core.__all__
    assert not hasattr(diagnosis_core, "converter")


def test_every_public_name_has_a_docstring() -> None:
    constants = _documented_constants()
    undocumented = [
        f"{module.__name__}.{name}"
        for module in _public_modules()
        for name in module.__all__
        if not _own_doc(getattr(module, name)).strip() and name not in constants
    ]
    assert undocumented == []


def test_the_typing_file_uses_every_public_name() -> None:
    words = set(
        node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
        else node.name if isinstance(node, ast.alias) else ""
        for node in ast.walk(ast.parse(API_FILE.read_text(encoding="utf-8")))
        if isinstance(node, ast.Name | ast.Attribute | ast.alias)
    )
    missing = [
        f"{module_name}.{name}"
        for module_name in (*TYPED_PUBLIC, "diagnosis_core.testing")
        for name in importlib.import_module(module_name).__all__
        if name not in words
    ]
    assert missing == []


def test_every_public_name_is_reachable_and_exported_once_per_module() -> None:
    for module in _public_modules():
        assert len(set(module.__all__)) == len(module.__all__), module.__name__
        for name in module.__all__:
            getattr(module, name)


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_import_diagnosis_core_loads_no_workflow_package_and_no_adapter() -> None:
    done = _fresh(
        "import sys, diagnosis_core\n"
        "loaded = [m for m in sys.modules if m.startswith(('diagnosis_core.aiops',"
        " 'diagnosis_core._aiops',"
        " 'diagnosis_core.adapters', 'diagnosis_core.testing',"
        " 'diagnosis_core.journal', 'diagnosis_core.tools', 'diagnosis_core.protocol',"
        " 'diagnosis_core.scenarios', 'diagnosis_core._kernel.journal',"
        " 'diagnosis_core._kernel.tools', 'diagnosis_core._kernel.wire.schema'))]\n"
        "assert not loaded, loaded\n"
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("namespace", ["protocol", "machine", "journal", "tools", "scenarios"])
def test_a_shared_namespace_loads_the_aiops_workflow_on_first_use_of_its_names(
    namespace: str,
) -> None:
    """A chat host importing an audience namespace never loads the AIOps workflow's modules."""
    done = _fresh(
        "import sys, importlib\n"
        f"module = importlib.import_module('diagnosis_core.{namespace}')\n"
        "loaded = lambda: [m for m in sys.modules if m.startswith('diagnosis_core._aiops.')]\n"
        "assert not loaded(), loaded()\n"
        "from diagnosis_core._aiops import AIOPS_NAMES\n"
        "for home, names in AIOPS_NAMES.get(module.__name__, ()):\n"
        "    assert all(name in module.__all__ for name in names), (home, names)\n"
        "    assert getattr(module, names[0]) is getattr(importlib.import_module(home), names[0])\n"
        "    assert home in sys.modules\n"
    )
    assert done.returncode == 0, done.stderr


def test_every_aiops_name_is_served_by_one_namespace() -> None:
    from diagnosis_core._aiops import AIOPS_NAMES

    served = [name for rows in AIOPS_NAMES.values() for _, names in rows for name in names]
    assert len(served) == len(set(served))
    host = importlib.import_module("diagnosis_core.aiops")
    assert set(served).isdisjoint(host.__all__)
    for namespace, rows in AIOPS_NAMES.items():
        exported = importlib.import_module(namespace).__all__
        assert {name for _, names in rows for name in names} <= set(exported), namespace


def test_import_diagnosis_core_loads_neither_hashlib_nor_logging() -> None:
    """Both are loaded on first use: OpenSSL and logging are a tenth of the import's CPU."""
    done = _fresh(
        "import sys, diagnosis_core\n"
        "loaded = [m for m in ('hashlib', '_hashlib', 'logging') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    assert done.returncode == 0, done.stderr


def test_import_diagnosis_core_leaves_rarely_used_modules_to_first_use() -> None:
    """Fallback rendering, replay, the reference gatekeeper, the ledger, the loop: on first use."""
    done = _fresh(
        "import sys, diagnosis_core\n"
        "lazy = ('diagnosis_core._chat.rendering', 'diagnosis_core._kernel.machine.text',"
        " 'diagnosis_core._chat.replay', 'diagnosis_core._chat.reference_gatekeeper',"
        " 'diagnosis_core._kernel.tools.ledger', 'diagnosis_core._chat.schema',"
        " 'diagnosis_core._chat.journal', 'diagnosis_core._kernel.driving.driver')\n"
        "loaded = [m for m in lazy if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "assert diagnosis_core.ReferenceGatekeeper.__module__ == 'diagnosis_core'\n"
        "assert 'diagnosis_core._chat.reference_gatekeeper' in sys.modules\n"
    )
    assert done.returncode == 0, done.stderr


def test_every_attrs_class_import_diagnosis_core_creates_shares_the_repr() -> None:
    """The import path's classes compile no ``__repr__`` (a new class there must join in)."""
    done = _fresh(
        "import sys, attrs, diagnosis_core\n"
        "from diagnosis_core._kernel.records import attrs_repr\n"
        "own = [f'{name}.{cls.__qualname__}' for name, module in list(sys.modules.items())"
        " if name.startswith('diagnosis_core') for cls in vars(module).values()"
        " if isinstance(cls, type) and attrs.has(cls) and cls.__module__ == name"
        " and cls.__repr__ is not attrs_repr]\n"
        "assert not own, own\n"
    )
    assert done.returncode == 0, done.stderr


def test_a_fallback_run_loads_the_renderer_it_needs() -> None:
    """The machine imports the fallback renderer inside the fallback node (not at import)."""
    done = _fresh(
        "import sys\n"
        "from diagnosis_core import DiagnosisRequest, Effects, Outcome, run_diagnosis\n"
        "from diagnosis_core import RunConfig\n"
        "assert 'diagnosis_core._chat.rendering' not in sys.modules\n"
        "def agent(text, config):\n"
        "    raise RuntimeError('agent down')\n"
        "def gatekeeper(run_id, output):\n"
        "    raise RuntimeError('gatekeeper down')\n"
        "request = DiagnosisRequest('why?', RunConfig('r', 's'))\n"
        "state = run_diagnosis(request, Effects(planner=agent, executor=agent, verifier=agent,"
        " composer=agent, gatekeeper=gatekeeper))\n"
        "assert state.result.outcome is Outcome.PRE_VERIFICATION_FALLBACK, state.result\n"
        "assert 'r' in state.result.answer, state.result.answer\n"
        "assert 'diagnosis_core._chat.rendering' in sys.modules\n"
    )
    assert done.returncode == 0, done.stderr


def test_the_aiops_package_imports_on_its_own_and_writes_sparse_details() -> None:
    done = _fresh(
        "import json\n"
        "from diagnosis_core._aiops.trace import AiOpsEventDetails\n"
        "from diagnosis_core import to_json\n"
        "assert json.loads(to_json(AiOpsEventDetails(plan_steps=2))) == {'plan_steps': 2}\n"
    )
    assert done.returncode == 0, done.stderr


def test_the_aiops_names_do_not_repeat_the_top_level() -> None:
    module = importlib.import_module("diagnosis_core.aiops")
    assert set(module.__all__).isdisjoint(diagnosis_core.__all__)


# --- names that live in an audience namespace are not served here ----------------


@pytest.mark.parametrize("name", ["Action", "start_diagnosis", "parse_planner_plan"])
def test_a_name_of_an_audience_namespace_is_not_a_top_level_attribute(name: str) -> None:
    # The package has never been released: a name that left the top level for its
    # audience namespace has no deprecation path to serve, and is not served twice.
    with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
        getattr(diagnosis_core, name)


def test_an_unknown_top_level_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'parse_nothing'"):
        diagnosis_core.parse_nothing  # type: ignore[attr-defined]  # noqa: B018


# --- the layout: one kernel, two workflows, public names outside ---------------------


def _modules() -> dict[str, pathlib.Path]:
    return module_files(PACKAGE)


def _graph() -> dict[str, set[str]]:
    """The package's import graph (a fresh copy: a test may change it)."""
    return {name: set(targets) for name, targets in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    # Every module is parsed once per process, not once per test (the files do not change
    # during a session).
    return import_graph(PACKAGE)


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split(".")[1:])


def _offenders(prefix: str, allowed: object) -> list[str]:
    assert callable(allowed)
    return sorted(
        f"{source} -> {target}"
        for source, targets in _graph().items()
        if source == prefix or source.startswith(prefix + ".")
        for target in targets
        if not allowed(source, target)
    )


def test_the_graph_sees_function_local_imports() -> None:
    graph = _graph()
    assert "diagnosis_core.aiops" in graph["diagnosis_core.cli._main"]  # imported inside functions
    assert "diagnosis_core._kernel.wire.json" in graph["diagnosis_core._kernel.wire.converter"]


def test_the_kernel_imports_neither_workflow() -> None:
    assert _offenders(
        "diagnosis_core._kernel", lambda _s, t: t.startswith("diagnosis_core._kernel")
    ) == []


# The kernel's rooms. The ground floor holds leaves that import nothing of the kernel;
# each room imports the ground floor, itself and the rooms below it, never one above:
# wire < machine < tools < journal < driving, and scenario beside driving.
_KERNEL = "diagnosis_core._kernel"
_GROUND_FLOOR = ("errors", "enums", "records", "public", "terminal")
_ROOMS_BELOW = {
    "wire": (),
    "machine": ("wire",),
    "tools": ("wire", "machine"),
    "journal": ("wire", "machine", "tools"),
    "driving": ("wire", "machine", "tools", "journal"),
    "scenario": ("wire", "machine", "tools"),
}


def _kernel_room(module: str) -> str:
    """``ground`` for the ground floor (and the kernel's own ``__init__``), else the room."""
    parts = module.removeprefix(_KERNEL).lstrip(".").split(".")
    return "ground" if parts[0] in ("", *_GROUND_FLOOR) else parts[0]


def test_every_kernel_module_is_on_the_ground_floor_or_in_a_room() -> None:
    loose = [
        name for name in _modules()
        if name.startswith(_KERNEL) and _kernel_room(name) not in ("ground", *_ROOMS_BELOW)
    ]
    assert loose == []
    assert all(
        (PACKAGE / "_kernel" / f"{leaf}.py").is_file() for leaf in _GROUND_FLOOR
    )


def test_the_kernel_ground_floor_imports_nothing_of_the_kernel() -> None:
    assert _offenders(
        _KERNEL,
        lambda s, t: _kernel_room(s) != "ground" or not t.startswith(_KERNEL),
    ) == []


@pytest.mark.parametrize("room", sorted(_ROOMS_BELOW))
def test_a_kernel_room_imports_the_ground_floor_itself_and_the_rooms_below_only(
    room: str,
) -> None:
    allowed = {"ground", room, *_ROOMS_BELOW[room]}
    assert _offenders(
        f"{_KERNEL}.{room}", lambda _s, t: _kernel_room(t) in allowed
    ) == []


def test_the_room_check_finds_an_import_from_a_room_above() -> None:
    assert _kernel_room(f"{_KERNEL}.wire.json") == "wire"
    assert _kernel_room(f"{_KERNEL}.errors") == "ground"
    assert _kernel_room(_KERNEL) == "ground"
    assert "journal" not in {"ground", "tools", *_ROOMS_BELOW["tools"]}


def test_the_aiops_workflow_imports_the_kernel_and_public_names_only_never_chat() -> None:
    assert _offenders(
        "diagnosis_core._aiops",
        lambda _s, t: t.startswith(("diagnosis_core._kernel", "diagnosis_core._aiops"))
        or _is_public(t),
    ) == []


def test_the_chat_workflow_never_imports_the_aiops_workflow() -> None:
    assert _offenders("diagnosis_core._chat", lambda _s, t: "aiops" not in t) == []


@pytest.mark.parametrize(
    "prefix", ["diagnosis_core._kernel", "diagnosis_core._chat", "diagnosis_core._aiops"]
)
def test_the_pure_core_never_imports_the_executor_effect(prefix: str) -> None:
    """The tool loop calls a model: it sits above both workflows, and nothing below imports it."""
    assert _offenders(prefix, lambda _s, t: not t.startswith("diagnosis_core._executor")) == []


def test_the_executor_effect_imports_the_kernel_the_workflows_and_itself_only() -> None:
    assert _offenders(
        "diagnosis_core._executor",
        lambda _s, t: t.startswith(
            ("diagnosis_core._kernel", "diagnosis_core._chat", "diagnosis_core._aiops",
             "diagnosis_core._executor")
        ),
    ) == []


@pytest.mark.parametrize(
    "prefix",
    [
        "diagnosis_core.adapters",
        "diagnosis_core.testing",
        "diagnosis_core.conformance",
        "diagnosis_core.stores",
    ],
)
def test_adapters_testing_conformance_and_stores_import_public_names_only(prefix: str) -> None:
    # Nothing publishes itself (``_kernel/public.py``: the top-level package publishes
    # each namespace as it is imported). The stores read their summaries through the
    # public positional form, and the LangGraph thread owner holds its claims through
    # the public ``stores.Claims``, under the same rules as the stores.
    assert _offenders(prefix, lambda _s, t: _is_public(t) or t.startswith(prefix)) == []


def test_only_the_command_line_and_main_import_the_command_line() -> None:
    """The CLI is part of the package and may import its internals; nothing imports it back."""
    assert _offenders(
        "diagnosis_core",
        lambda s, t: not t.startswith("diagnosis_core.cli")
        or s.startswith("diagnosis_core.cli") or s == "diagnosis_core.__main__",
    ) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_package_has_no_import_cycle_counting_function_local_imports() -> None:
    assert _cycles(_graph()) == []


def test_the_wheel_takes_the_corpus_and_not_its_generator() -> None:
    """The corpus generator is repository tooling (``corpus_tools/``), outside the package."""
    import tomllib

    import setuptools

    root = PACKAGE.parent
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    packages = setuptools.find_packages(
        str(root), include=config["setuptools"]["packages"]["find"]["include"]
    )
    assert "diagnosis_core.conformance" in packages and "corpus_tools" not in packages
    assert "conformance/corpus/*.json" in config["setuptools"]["package-data"]["diagnosis_core"]
    assert list((PACKAGE / "conformance" / "corpus").glob("*.json"))
    assert not list(PACKAGE.rglob("*generate*.py")) and not list(PACKAGE.rglob("_builders.py"))
    importers = [
        path.name for path in PACKAGE.rglob("*.py")
        if any(isinstance(node, ast.Import | ast.ImportFrom) and "corpus_tools" in ast.unparse(node)
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    ]
    assert importers == []


def _public_imports(name: str, path: pathlib.Path) -> set[tuple[str, str]]:
    """``(namespace, name)`` for every name ``name``'s module imports from a public namespace."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            anchor = package[: len(package) - node.level + 1]
            base = ".".join([*anchor, *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        if base.startswith("diagnosis_core") and _is_public(base):
            found.update((base, alias.name) for alias in node.names)
    return found


def test_no_public_name_is_public_only_for_the_command_line() -> None:
    """The CLI imports internals it needs; a public name has a user besides the CLI.

    A user is a module of the package importing it from its public namespace, or a
    test, example, benchmark or page that names it (the typing file and the API
    reference name every public name, and the decisions record names the ones that
    left, so they do not count).
    """
    root = PACKAGE.parent
    outside = [
        path for folder in ("tests", "property_tests", "examples", "benchmarks", "docs")
        for path in (root / folder).rglob("*")
        if path.suffix in (".py", ".md") and path not in (API_FILE, pathlib.Path(__file__))
        and "reference" not in path.relative_to(root).parts and path.name != "decisions.md"
    ]
    words: set[str] = set()
    for path in [*outside, root / "README.md"]:
        words.update(re.findall(r"\w+", path.read_text(encoding="utf-8")))
    by_cli: set[tuple[str, str]] = set()
    by_others: set[tuple[str, str]] = set()
    for name, path in _modules().items():
        imported = _public_imports(name, path)
        (by_cli if name.startswith("diagnosis_core.cli") else by_others).update(imported)
    only_cli = sorted(
        f"{namespace}.{value}" for namespace, value in by_cli - by_others
        if value not in words
        and value in getattr(importlib.import_module(namespace), "__all__", ())
    )
    assert only_cli == []


# --- the public surface: counted (tests/public_surface.py), one namespace per name ------



def test_the_public_surface_does_not_grow() -> None:
    """A ratchet: 614 names when first counted (issue 32, ``blocks`` aside; the aim is 450).

    A change that adds public names raises this figure in the same commit, so that the
    growth is seen in review: the prompts (§17) and the executor's tool loop with grounding
    by construction (§18) added 42, the adapters' door checks 6, the reports as values,
    their summaries and pages 28 (issue 31), the local model's adapter 16. Each namespace
    was then cut to what its audience imports (issue 32): 696 to 450.
    """
    import public_surface

    names, skipped = public_surface.surface()
    if skipped:
        pytest.skip(f"not installed: {', '.join(skipped)}")
    assert sum(map(len, names.values())) <= 450


def test_no_name_is_exported_by_two_namespaces_besides_the_top_level() -> None:
    import public_surface

    names, _ = public_surface.surface()
    assert public_surface.duplicates(names) == {}


def test_the_duplicate_finder_ignores_the_top_level_only() -> None:
    import public_surface

    found = public_surface.duplicates({
        "diagnosis_core": ("a", "b"), "diagnosis_core.x": ("a", "c"), "diagnosis_core.y": ("c",),
    })
    assert found == {"c": ["diagnosis_core.x", "diagnosis_core.y"]}
