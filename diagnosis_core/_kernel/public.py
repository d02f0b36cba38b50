"""Which public namespace a public class names as its home (``__module__``).

Classes are defined in private modules (``_chat/``, ``_aiops/``,
``_kernel/``) and exported from the public namespaces. A traceback, a
class repr and pickle read ``__module__``: left as defined, they name a
private module (``diagnosis_core._kernel.errors.MachineError``) that a host
must never import. Each public namespace is published (:func:`publish` on its
``__all__``) once it is built; every class it exports that still names a
private module, or a public namespace later in :data:`HOMES`, then names this
one. So the home of a class is the first namespace of :data:`HOMES` that
exports it and has been imported (``diagnosis_core`` before the audience
namespaces).
The name always resolves there: pickle finds the class where it says it is.

No namespace publishes itself. The top-level package calls :func:`publish_namespace`
on itself last; from then on it is a :class:`PublishingPackage`, whose attribute
binding publishes each submodule as Python's import system binds it to its parent
(right after the submodule's code has run), and makes a public subpackage
(``adapters``) one too. So a namespace is published exactly when it is first
imported, however it is imported, and the layers above the kernel (``stores``,
``testing``, ``conformance``, the adapters) need nothing private to be published.

Moving ``__module__`` would change where :func:`typing.get_type_hints` reads
the class's string annotations (``from __future__ import annotations``); so
the class's own annotations are first resolved in the module that defines
it (those that cannot be, such as names imported for type checking only,
stay strings). :func:`defined_in` keeps the defining module for the few
places that store a class's name as data (a recorded tool error's ``type``,
spec §12.3), whose bytes must not change.

A public namespace may also serve names whose modules are costly to import (the
schemas, the replay loader): :func:`lazy_module` builds its module ``__getattr__``
and ``__dir__`` (PEP 562) from a table of module to names, so every such namespace
refuses an unknown name the same way (``AttributeError`` naming the module),
publishes a class it exports when loaded, and keeps a loaded value as a plain
global afterwards. The shared namespaces serve the AIOps workflow's names so: a chat
host that imports ``diagnosis_core.protocol`` never loads the AIOps workflow. A class
defined there and exported by a shared namespace names that namespace as soon as the
AIOps workflow is loaded (:func:`publish_homes`), since it can be reached through
``diagnosis_core.aiops`` before the namespace ever loads it.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, MutableMapping

__all__ = [
    "HOMES",
    "PublishingPackage",
    "defined_in",
    "lazy_module",
    "publish",
    "publish_homes",
    "publish_namespace",
]

HOMES = (
    "diagnosis_core",
    "diagnosis_core.protocol",
    "diagnosis_core.machine",
    "diagnosis_core.journal",
    "diagnosis_core.tools",
    "diagnosis_core.scenarios",
    "diagnosis_core.aiops",
    "diagnosis_core.stores",
    "diagnosis_core.testing",
    "diagnosis_core.conformance",
    "diagnosis_core.prompts",
)
"""The public namespaces in order of precedence; ``diagnosis_core.adapters.*`` come
after, in alphabetical order."""

_DEFINED: dict[type, str] = {}


def defined_in(cls: type) -> str:
    """The module that defines ``cls`` (its ``__module__`` before :func:`publish`)."""
    return _DEFINED.get(cls, cls.__module__)


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _rank(namespace: str) -> tuple[int, str] | None:
    if namespace in HOMES:
        return HOMES.index(namespace), ""
    if namespace.startswith("diagnosis_core.adapters.") and not _is_private(namespace):
        return len(HOMES), namespace
    return None


def _resolve_annotations(cls: type, module: str) -> None:
    """Resolve ``cls``'s own string annotations where it is defined (see the module doc)."""
    own = cls.__dict__.get("__annotations__")  # noqa: RUF063 - its own, never inherited
    if not isinstance(own, dict) or not any(isinstance(v, str) for v in own.values()):
        return
    defining = sys.modules.get(module)
    if defining is None:
        return
    globalns, localns = vars(defining), dict(vars(cls))
    resolved: dict[str, object] = {}
    for name, annotation in own.items():
        if isinstance(annotation, str):
            # As get_type_hints reads a class (nested forward references included),
            # one annotation at a time; one unresolvable where it is written (a
            # type-checking-only name) is left as it was.
            holder = type("holder", (), {"__annotations__": {name: annotation}})
            with contextlib.suppress(Exception):
                annotation = typing.get_type_hints(
                    holder, globalns, localns, include_extras=True
                )[name]
        resolved[name] = annotation
    type.__setattr__(cls, "__annotations__", resolved)


def publish(namespace: str, values: Mapping[str, object], names: Iterable[str]) -> None:
    """Make ``namespace`` the ``__module__`` of the classes it exports, per :data:`HOMES`.

    ``values`` is the namespace's globals, ``names`` its ``__all__``; a name
    not yet loaded (a lazy one) is skipped here and published when loaded.
    Only the package's own classes move; a class already at home in a
    namespace of higher precedence stays.
    """
    rank = _rank(namespace)
    if rank is None:
        return
    for name in names:
        cls = values.get(name)
        if not isinstance(cls, type) or cls.__qualname__ != name:
            continue
        current = cls.__module__
        if not current.startswith("diagnosis_core"):
            continue
        held = _rank(current)  # None for a private module
        if held is not None and held <= rank:
            continue
        if cls not in _DEFINED:
            _DEFINED[cls] = current
            _resolve_annotations(cls, current)
        cls.__module__ = namespace


class PublishingPackage(types.ModuleType):
    """A package that publishes each public submodule as the import system binds it.

    Python binds a submodule to its parent package (``setattr(parent, name,
    module)``) once the submodule's code has run; that is the moment a namespace
    is complete, so it is published then (:func:`publish`, which leaves a private
    module alone). A public subpackage becomes a :class:`PublishingPackage` itself,
    so its own submodules (``diagnosis_core.adapters.langgraph``) are published too.
    """

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, value)
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            publish_namespace(value)


def publish_namespace(module: types.ModuleType) -> None:
    """Publish a public namespace's classes; a public package then publishes its submodules.

    The top-level package calls it on itself as its last statement (see the module
    doc); :class:`PublishingPackage` calls it on each submodule it binds. The package
    imports no public submodule while it initialises, so none is bound before the hook.
    """
    if _is_private(module.__name__):
        return
    publish(module.__name__, vars(module), getattr(module, "__all__", ()))
    if hasattr(module, "__path__") and type(module) is types.ModuleType:
        module.__class__ = PublishingPackage


def lazy_module(
    module: str,
    package: str | None,
    homes: Iterable[tuple[str, Iterable[str]]],
    namespace: MutableMapping[str, object],
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A namespace's ``__getattr__`` and ``__dir__`` serving ``homes``: (module, its names).

    Each name is read from its module (relative to ``package``) on first use and
    stored in ``namespace`` (the module's globals), so it is looked up once; a
    class the namespace exports (``__all__``) is published there when loaded
    (:func:`publish`). Any other name: ``AttributeError`` naming ``module``.
    ``dir()`` lists the names beside the namespace's globals.
    """
    table = {name: home for home, names in homes for name in names}

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

    return load, lambda: sorted({*namespace, *table})


def publish_homes(homes: Mapping[str, Iterable[tuple[str, Iterable[str]]]]) -> None:
    """Publish, in each namespace of ``homes``, the classes it serves lazily (:func:`lazy_module`).

    ``homes`` maps a namespace to its (module, names) rows; only modules already
    loaded are read, so this never imports anything.
    """
    for namespace, rows in homes.items():
        for module, names in rows:
            loaded = sys.modules.get(module)
            if loaded is not None:
                publish(namespace, vars(loaded), names)
