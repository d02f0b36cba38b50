"""The package's public surface, counted: ``python tests/public_surface.py``.

A public namespace is a module of the package whose dotted name has no part
starting with ``_`` (the same walk as the API reference's check); its public
names are its ``__all__``. The figure is the sum over every namespace, a name
counted once per namespace that exports it. A *duplicate* is a name that two
namespaces other than the top level export: the top level re-exports the chat
host's names from their audience namespaces by design, anything else exported
twice asks a reader to choose. A namespace whose extra is not installed is
listed as skipped and not counted.
"""

from __future__ import annotations

import importlib
import pathlib
import sys
import warnings

import diagnosis_core

__all__ = ["duplicates", "main", "namespaces", "surface"]

TOP = "diagnosis_core"


def namespaces() -> list[str]:
    """Every public namespace of the package, sorted."""
    root = pathlib.Path(diagnosis_core.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts[1:]):
            found.append(".".join(parts))
    return sorted(found)


def surface() -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """``namespace -> __all__`` for every importable namespace, and those skipped."""
    names: dict[str, tuple[str, ...]] = {}
    skipped = []
    for namespace in namespaces():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                module = importlib.import_module(namespace)
        except ImportError:  # an adapter whose extra is not installed
            skipped.append(namespace)
            continue
        names[namespace] = tuple(getattr(module, "__all__", ()))
    return names, skipped


def duplicates(names: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """``name -> namespaces`` for each name two namespaces besides the top level export."""
    homes: dict[str, list[str]] = {}
    for namespace, exported in names.items():
        if namespace == TOP:
            continue
        for name in exported:
            homes.setdefault(name, []).append(namespace)
    return {name: where for name, where in sorted(homes.items()) if len(where) > 1}


def main() -> int:
    """Print each namespace's count, the total, then the duplicates."""
    names, skipped = surface()
    width = max(map(len, names)) + 2
    for namespace, exported in names.items():
        sys.stdout.write(f"{namespace:<{width}}{len(exported):>5}\n")
    for namespace in skipped:
        sys.stdout.write(f"{namespace:<{width}}  (skipped: its extra is not installed)\n")
    sys.stdout.write(f"{'public names':<{width}}{sum(map(len, names.values())):>5}\n")
    found = duplicates(names)
    sys.stdout.write(f"names exported by two namespaces besides the top level: {len(found)}\n")
    for name, where in found.items():
        sys.stdout.write(f"  {name}: {', '.join(where)}\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
