"""Orchestrator adapters: the same core, driven by LangGraph, Temporal, DBOS or LangChain models.

``langgraph_aiops`` runs the AIOps flow on LangGraph; ``dbos`` runs both
workflows on DBOS. ``otel`` is an observer rather than a driver: it turns a
run into OpenTelemetry spans. Each submodule needs its extra (``langgraph``,
``temporal``, ``dbos``, ``langchain``, ``otel``) and is imported explicitly, e.g. ``from
diagnosis_core.adapters.langgraph import build_diagnosis_graph``; importing
this package pulls in no optional dependency. Adapters only perform effects
and persist state: every routing decision stays in
:func:`diagnosis_core.machine.next_action` / :func:`diagnosis_core.machine.advance`.
"""

from __future__ import annotations

__all__: list[str] = []
