"""The package as its users meet it: the curated top level, the workflow layout, the docs.

These are the guarantees of the public surface: a small top level, no workflow
or adapter loaded behind a host's back, every public name documented and
type-checked in ``tests/typing/api.py``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pathlib
import subprocess
import sys
import types

import pytest

import diagnosis_core

PACKAGE = pathlib.Path(diagnosis_core.__file__).parent
API_FILE = pathlib.Path(__file__).parent / "typing" / "api.py"

# The public modules whose names a host imports; api.py exercises all of them.
TYPED_PUBLIC = (
    "diagnosis_core",
    "diagnosis_core.aiops",
    "diagnosis_core.blocks",
    "diagnosis_core.journal",
    "diagnosis_core.tools",
    "diagnosis_core.stores",
)
OPTIONAL_PUBLIC = (
    "diagnosis_core.testing",
    "diagnosis_core.adapters",
    "diagnosis_core.adapters.langgraph",
    "diagnosis_core.adapters.temporal",
    "diagnosis_core.adapters.langchain",
    "diagnosis_core.adapters.otel",
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
    assert len(diagnosis_core.__all__) <= 100
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
        " 'diagnosis_core.adapters', 'diagnosis_core.testing', 'diagnosis_core.blocks'))]\n"
        "assert not loaded, loaded\n"
    )
    assert done.returncode == 0, done.stderr


def test_the_aiops_package_imports_on_its_own_and_writes_sparse_details() -> None:
    done = _fresh(
        "import json\n"
        "from diagnosis_core.aiops import AiOpsEventDetails\n"
        "from diagnosis_core import to_json\n"
        "assert json.loads(to_json(AiOpsEventDetails(plan_steps=2))) == {'plan_steps': 2}\n"
    )
    assert done.returncode == 0, done.stderr


def test_the_kernel_imports_no_workflow_package() -> None:
    """Statically: no top-level private module imports ``diagnosis_core.aiops``."""
    offenders = []
    for path in PACKAGE.glob("_*.py"):
        if path.name in ("_cli.py", "_store_cli.py"):  # the command line: lazily, in functions
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiops"):
                offenders.append(path.name)
    assert offenders == []


@pytest.mark.parametrize("name", ["diagnosis_core.aiops", "diagnosis_core.blocks"])
def test_submodule_names_do_not_repeat_the_top_level(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__).isdisjoint(diagnosis_core.__all__)
