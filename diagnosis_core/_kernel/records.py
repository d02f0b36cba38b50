"""One ``__repr__`` for the package's attrs classes: the same text, no code generated per class.

attrs writes and compiles a ``__repr__`` for every class when the class is
created. On CPython 3.11 compiling that method (an f-string with one
expression per field) is the largest share of the code attrs generates, and
code generation is about a third of the CPU time of ``import
diagnosis_core``. So the classes that import creates are declared
``repr=False`` and named in their module's closing :func:`share_repr` call
(a class may instead say ``__repr__ = attrs_repr`` in its body: attrs does
not replace a method the class defines itself). They print exactly what the
generated method would print: ``Name(field=value, ...)``, each field's
``repr=`` setting honoured, with the same guard against a value that
contains itself. A repr is never on a hot path, so reading the fields from
``__attrs_attrs__`` at call time costs nothing that matters. Classes loaded
later (the AIOps workflow, journals, stores) keep attrs' generated method.
"""

from __future__ import annotations

import reprlib

import attrs

__all__ = ["attrs_repr", "share_repr"]


@reprlib.recursive_repr("...")  # a value that contains itself prints "...", per thread
def attrs_repr(self: object) -> str:
    """attrs' generated ``__repr__``, shared: same output, nothing compiled per class."""
    cls = self.__class__
    parts = []
    for field in cls.__attrs_attrs__:  # type: ignore[attr-defined]
        if field.repr is False:
            continue
        show = repr if field.repr is True else field.repr
        name = field.name
        value = getattr(self, name) if field.init else getattr(self, name, attrs.NOTHING)
        parts.append(f"{name}={show(value)}")
    return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"


def share_repr(*classes: type) -> None:
    """Give each of ``classes`` (attrs classes declared ``repr=False``) the shared repr.

    One call at the end of a module names its value classes, so no class body
    grows a line for it; ``tests/test_layout.py`` checks that no attrs class of
    the package is left with ``object.__repr__``.
    """
    for cls in classes:
        if "__repr__" in vars(cls):
            raise TypeError(f"{cls.__qualname__}: already has a __repr__; declare it repr=False")
        type.__setattr__(cls, "__repr__", attrs_repr)
