"""The chat diagnosis workflow (planner → executor → gatekeeper → verifier → composer).

It mirrors ``diagnosis_core.aiops`` module for module and is built on
``diagnosis_core._kernel``; the public names live in ``diagnosis_core`` and its
public submodules.
"""
