"""The package's import graph, read from its source (AST, nothing imported).

``tests/test_layout.py`` checks the layout's rules on it and
``tests/architecture_figure.py`` draws the architecture page from it. An import
is counted wherever it stands, function-local imports included, so an arrow a
module hides inside a function is an arrow all the same.
"""

from __future__ import annotations

import ast
import pathlib

__all__ = ["import_graph", "module_files", "module_imports"]


def module_files(package: pathlib.Path) -> dict[str, pathlib.Path]:
    """``dotted module name -> file`` for every module under ``package`` (a folder)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def module_imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """Every module of ``known`` that module ``name`` imports, at any depth of its code."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
                break
    return targets


def import_graph(package: pathlib.Path) -> dict[str, frozenset[str]]:
    """``module -> the package's modules it imports``, for every module under ``package``."""
    modules = module_files(package)
    known = set(modules)
    return {name: frozenset(module_imports(name, path, known)) for name, path in modules.items()}
