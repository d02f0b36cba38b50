"""The in-memory OpenTelemetry setup the observer, engine and interop tests share.

Import it only after ``pytest.importorskip("opentelemetry.sdk")``.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Exported:
    """A fresh tracer provider whose spans end up in memory, in the order they ended."""

    def __init__(self, exporter: SpanExporter | None = None) -> None:
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(exporter or self.memory))
        self.tracer = self.provider.get_tracer("tests")

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.memory.get_finished_spans())
