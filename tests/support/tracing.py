"""OpenTelemetry's SDK for the tracing tests: the test process's spans in memory, a
worker process's in the file ``SQLQUEUE_TEST_SPANS`` names, one JSON object a line."""

from __future__ import annotations

import functools
import os

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from django_sqlqueue.runner.middleware import Handler


@functools.cache
def in_memory() -> InMemorySpanExporter:
    """The exporter of this process's tracer provider, set as the global one on the
    first call (OpenTelemetry sets it once per process)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def exporting(get_result: Handler) -> Handler:
    """A middleware that wraps nothing: it sets up, once per worker process, a tracer
    provider that writes each span as it ends to the file ``SQLQUEUE_TEST_SPANS`` names."""
    spans = open(os.environ["SQLQUEUE_TEST_SPANS"], "a", buffering=1)  # noqa: SIM115  # the process's
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=spans, formatter=_line)))
    trace.set_tracer_provider(provider)
    return get_result


def _line(span: ReadableSpan) -> str:
    return f"{span.to_json(indent=None)}\n"
