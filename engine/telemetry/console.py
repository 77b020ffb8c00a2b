"""The console exporter (``OTEL_TRACES_EXPORTER=console``): the builder's spans as the SDK's ``ReadableSpan``s,
printed by the SDK's ``ConsoleSpanExporter`` (JSON on stderr).

Why apart from the OTLP path: it is for looking at traces by hand, so it may take the SDK's slower span objects,
read back from the protobuf the builder wrote with opentelemetry-proto (the OTLP exporter's own dependency), so
there is one way spans are made; imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from engine.telemetry.otlp import CLIENT, SERVER

_KINDS = {SERVER: SpanKind.SERVER, CLIENT: SpanKind.CLIENT}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class ConsoleOutput:
    def __init__(self, exporter: Any, resource: Resource, scope: str) -> None:
        self.exporter, self.resource, self.scope = exporter, resource, InstrumentationScope(scope)
        self._pieces: list[bytes] = []

    def add(self, pieces: Sequence[bytes]) -> None:
        self._pieces += pieces

    def batch(self, n: int) -> list[ProtoSpan]:
        pieces = self._pieces
        chunk = pieces[: 2 * n]
        del pieces[: 2 * n]
        return list(ScopeSpans.FromString(b"".join(chunk)).spans)  # the pieces are ScopeSpans' spans field

    def send(self, spans: Sequence[ProtoSpan]) -> bool:
        return bool(self.exporter.export([self.readable(s) for s in spans]) == SpanExportResult.SUCCESS)

    def readable(self, s: ProtoSpan) -> ReadableSpan:
        trace_id = int.from_bytes(s.trace_id, "big")
        parent = None
        if s.parent_span_id:
            parent = SpanContext(trace_id, int.from_bytes(s.parent_span_id, "big"), False, _SAMPLED)
        attrs = {a.key: getattr(a.value, a.value.WhichOneof("value") or "string_value") for a in s.attributes}
        return ReadableSpan(
            s.name,
            SpanContext(trace_id, int.from_bytes(s.span_id, "big"), False, _SAMPLED),
            parent,
            resource=self.resource,
            attributes=attrs,
            kind=_KINDS.get(s.kind, SpanKind.INTERNAL),
            status=Status(StatusCode.ERROR, s.status.message) if s.status.code == 2 else Status(StatusCode.UNSET),
            start_time=s.start_time_unix_nano,
            end_time=s.end_time_unix_nano,
            instrumentation_scope=self.scope,
        )

    def shutdown(self) -> None:
        self.exporter.shutdown()
