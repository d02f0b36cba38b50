"""The ``diagnosis-core`` command line (``python -m diagnosis_core``).

A part of the package, not an audience namespace: its one public name is
``main``, the console script's entry point. The parser and the subcommands
live in the private modules beside it.
"""

from ._main import main

__all__ = ["main"]
