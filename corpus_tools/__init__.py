"""The generator of the conformance corpus: repository tooling, not part of the package.

``python -m corpus_tools.generate`` (from the repository root) writes
``diagnosis_core/conformance/corpus/<area>.json``, the corpus the wheel ships;
``--check`` only compares. It reads the repository's ``examples/`` and runs
every drafted case through this checkout's package, the reference: so it lives
next to ``benchmarks/``, outside the package, and the installed kit carries the
generated corpus, not the code that wrote it.
"""
