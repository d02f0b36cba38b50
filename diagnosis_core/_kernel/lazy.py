"""Module attributes imported on first use: the public namespaces' lazy names.

A public namespace may serve names whose modules are costly to import (the
schemas, the replay loader) or that only a deprecated shim still serves;
each builds its module ``__getattr__`` (PEP 562) here, from a table of name
to module, so every such namespace refuses an unknown name the same way
(``AttributeError`` naming the module) and keeps a loaded value as a plain
global afterwards.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

from .public import publish

__all__ = ["lazy_attributes"]


def lazy_attributes(
    module: str,
    package: str | None,
    table: Mapping[str, str],
    namespace: MutableMapping[str, object],
) -> Callable[[str], object]:
    """A module ``__getattr__`` serving each name of ``table`` from its module.

    ``table`` maps a name to the (relative to ``package``) module it is read
    from; the value is stored in ``namespace`` (the module's globals), so it
    is looked up once. Any other name: ``AttributeError`` naming ``module``.
    A class the namespace exports (``__all__``) is published there when
    loaded (``_kernel/public.py``).
    """

    def load(name: str) -> object:
        home = table.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        namespace[name] = value
        exported = namespace.get("__all__", ())
        if isinstance(exported, list | tuple) and name in exported:
            publish(module, namespace, (name,))  # a public class names its namespace
        return value

    return load
