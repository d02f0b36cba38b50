"""The AIOps workflow (supervisor → planner → executor → reporter; spec §10, §11).

It mirrors ``diagnosis_core._chat`` module for module and is built on
``diagnosis_core._kernel``; its public names live in ``diagnosis_core.aiops`` and
the shared public namespaces.
"""
