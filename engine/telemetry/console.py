"""The console exporter (``OTEL_TRACES_EXPORTER=console``): the builder's spans as the SDK's ``ReadableSpan``s,
printed by the SDK's ``ConsoleSpanExporter`` (JSON on stderr).

Why apart from the OTLP path: it is for looking at traces by hand, so it may take the SDK's slower span objects;
imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from engine.telemetry.otlp import CLIENT, SERVER, SpanData

_KINDS = {SERVER: SpanKind.SERVER, CLIENT: SpanKind.CLIENT}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class ConsoleOutput:
    def __init__(self, exporter: Any, resource: Resource, scope: str) -> None:
        self.exporter, self.resource, self.scope = exporter, resource, InstrumentationScope(scope)
        self._spans: list[SpanData] = []

    def add(self, spans: Sequence[SpanData]) -> None:
        self._spans += spans

    def batch(self, n: int) -> list[SpanData]:
        spans = self._spans
        chunk = spans[:n]
        del spans[:n]
        return chunk

    def send(self, spans: Sequence[SpanData]) -> bool:
        return bool(self.exporter.export([self.readable(s) for s in spans]) == SpanExportResult.SUCCESS)

    def readable(self, s: SpanData) -> ReadableSpan:
        trace_id = int.from_bytes(s.trace_id, "big")
        parent = SpanContext(trace_id, int.from_bytes(s.parent_id, "big"), False, _SAMPLED) if s.parent_id else None
        attrs = {**(s.shared.attributes if s.shared is not None else {}), **s.attributes}
        return ReadableSpan(
            s.name,
            SpanContext(trace_id, int.from_bytes(s.span_id, "big"), False, _SAMPLED),
            parent,
            resource=self.resource,
            attributes=attrs,
            kind=_KINDS.get(s.kind, SpanKind.INTERNAL),
            status=Status(StatusCode.ERROR, s.error) if s.error is not None else Status(StatusCode.UNSET),
            start_time=s.start_ns,
            end_time=s.end_ns,
            instrumentation_scope=self.scope,
        )

    def shutdown(self) -> None:
        self.exporter.shutdown()
