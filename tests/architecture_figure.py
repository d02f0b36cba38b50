"""Draw the package's layers and their import arrows for docs/architecture.md.

    python tests/architecture_figure.py              # rewrite the page's "today" table
    python tests/architecture_figure.py --tree DIR   # print the table of another checkout

A layer is a folder of the package (each kernel room its own layer; the prompts'
package with the namespace that publishes it) or, for the chat host's public
namespaces, the modules a host imports. The table lists the layers from
the bottom up; a layer's arrows are the layers its modules import (function-local
imports included). An arrow to a layer drawn above it points up: the table says
so. ``tests/test_architecture_page.py`` checks that the page's table is the one
this script draws from the tree.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from tests._import_graph import import_graph, module_files  # noqa: E402

PAGE = ROOT / "docs" / "architecture.md"
START = "<!-- layers today: written by tests/architecture_figure.py; do not edit by hand -->"
END = "<!-- end of layers today -->"

# Bottom to top. A layer that is not listed is drawn at the top.
ORDER = (
    "_kernel", "_kernel/wire", "_kernel/machine", "_kernel/tools", "_kernel/journal",
    "_kernel/scenario", "_kernel/driving", "_chat", "_aiops", "_executor", "namespaces", "stores",
    "conformance", "prompts", "testing", "adapters", "cli",
)
NAMESPACE_FILES = {"protocol", "machine", "journal", "tools", "scenarios", "aiops"}


def layer(module: str, packages: frozenset[str] = frozenset()) -> str:
    """The layer a dotted module name belongs to (``packages``: the package's folders)."""
    parts = module.split(".")[1:]
    if not parts or (len(parts) == 1 and parts[0] in NAMESPACE_FILES):
        return "namespaces"
    top = parts[0]
    if top == "_kernel":
        room = len(parts) >= 2 and f"diagnosis_core._kernel.{parts[1]}" in packages
        return f"_kernel/{parts[1]}" if room else "_kernel"
    if top in ("__main__", "_cli"):
        return "cli"
    if top in ("prompts", "_prompts"):  # the prompts' namespace and the package it publishes
        return "prompts"
    return top


def layers(package: pathlib.Path) -> tuple[list[str], dict[str, tuple[int, set[str]]]]:
    """The layers in drawing order, and each one's ``(modules, layers it imports)``.

    Lines are not counted: they change with every edit, the layers and their arrows
    only when the layout does.
    """
    files = module_files(package)
    graph = import_graph(package)
    packages = frozenset(name for name, path in files.items() if path.name == "__init__.py")
    modules: dict[str, int] = defaultdict(int)
    arrows: dict[str, set[str]] = defaultdict(set)
    for name in files:
        own = layer(name, packages)
        modules[own] += 1
        arrows[own].update(layer(target, packages) for target in graph[name])
        arrows[own].discard(own)
    rank = {name: index for index, name in enumerate(ORDER)}
    order = sorted(modules, key=lambda name: (rank.get(name, len(ORDER)), name))
    return order, {name: (modules[name], arrows[name]) for name in order}


def table(package: pathlib.Path) -> str:
    """The Markdown table of ``package``'s layers, bottom up, and its upward arrows."""
    order, found = layers(package)
    position = {name: index for index, name in enumerate(order)}
    rows = ["| layer | modules | imports |", "| --- | ---: | --- |"]
    upward = []
    for name in order:
        modules, targets = found[name]
        ordered = sorted(targets, key=position.__getitem__)
        upward += [f"`{name}` → `{target}`" for target in ordered
                   if position[target] > position[name]]
        cell = ", ".join(f"`{target}`" for target in ordered) or "—"
        rows.append(f"| `{name}` | {modules} | {cell} |")
    total_modules = sum(found[name][0] for name in order)
    rows.append(f"| all | {total_modules} | |")
    rows.append("")
    rows.append("Arrows pointing up: " + (", ".join(upward) if upward else "none") + ".")
    return "\n".join(rows)


def page_table(text: str) -> str:
    """The table between the page's markers."""
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=pathlib.Path, help="a checkout to draw instead")
    args = parser.parse_args(argv)
    if args.tree is not None:
        print(table(args.tree.resolve() / "diagnosis_core"))
        return 0
    text = PAGE.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    PAGE.write_text(f"{before}{START}\n{table(ROOT / 'diagnosis_core')}\n{END}{after}",
                    encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
