"""The chat workflow's observer type (protocol §14): the kernel's protocol, narrowed."""

from __future__ import annotations

from typing import TypeAlias

from .._kernel.driving.observe import Observer
from .machine import CallGatekeeper, EffectResult, InvokeAgent
from .trace import TraceEvent

__all__ = ["DiagnosisObserver"]

DiagnosisObserver: TypeAlias = Observer[InvokeAgent | CallGatekeeper, EffectResult, TraceEvent]
"""An observer of the chat workflow's drivers."""
