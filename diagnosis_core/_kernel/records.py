"""One ``__repr__`` for the package's attrs classes: the same text, no code generated per class.

attrs writes and compiles a ``__repr__`` for every class when the class is
created. On CPython 3.11 compiling that method (an f-string with one
expression per field) is the largest share of the code attrs generates, and
code generation is about a third of the CPU time of ``import
diagnosis_core``. A class that says ``__repr__ = attrs_repr`` in its body gets
no generated one (attrs does not replace a method the class defines itself)
and prints exactly what the generated one would print: ``Name(field=value,
...)`` with each field's ``repr=`` setting honoured and the same guard against
a value that contains itself. A repr is never on a hot path, so reading the
fields from ``__attrs_attrs__`` at call time costs nothing that matters.
"""

from __future__ import annotations

import threading

import attrs

__all__ = ["attrs_repr"]

_guard = threading.local()


def attrs_repr(self: object) -> str:
    """attrs' generated ``__repr__``, shared: same output, nothing compiled per class."""
    try:
        seen: set[int] = _guard.seen
    except AttributeError:
        seen = _guard.seen = set()
    key = id(self)
    if key in seen:
        return "..."
    seen.add(key)
    try:
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
    finally:
        seen.discard(key)
