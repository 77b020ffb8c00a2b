"""The hand-written OTLP encoder (engine/telemetry/otlp.py) read back with opentelemetry-proto's generated classes,
as a collector reads it: every attribute value kind, at the lengths where a one-byte length stops fitting, and the
spans with and without a parent, shared attributes and an error status."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from engine.telemetry.otlp import CLIENT, INTERNAL, Encoder, Shared, SpanData


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind)


@pytest.mark.parametrize("n", [0, 1, 99, 100, 101, 105, 106, 107, 126, 127, 128, 200, 20_000])
def test_unique_and_repeated_attributes_decode_at_every_length(n: int) -> None:
    shared = Shared({"gen_ai.tool.name": "echo", "ava.tool.cache_hit": False, "ava.budget_ms": 800})
    own = {
        "gen_ai.tool.call.id": "c" * n,  # a value that rarely repeats
        "ava.latency_ms": 0.1 * n,
        "k" * min(n, 300): "v",  # a long key beside a short value
        "ava.turn": n,
        "ava.note": "n" * n,  # a value that repeats: cached
        "ava.negative": -n,
    }
    child = SpanData(b"\x01" * 16, b"\x02" * 8, b"\x03" * 8, "execute_tool echo", INTERNAL, 5, 7, shared, own, "error")
    root = SpanData(b"\x01" * 16, b"\x03" * 8, b"", "call", CLIENT, 1, 2**63 + 5, None, {}, None)
    encoder = Encoder({"service.name": "ava-test"}, "ava-engine", "1.0")
    for _ in range(2):  # the second time from the caches
        req = ExportTraceServiceRequest()
        req.ParseFromString(encoder.request([child, root]))
        [rs] = req.resource_spans
        assert {a.key: _value(a.value) for a in rs.resource.attributes} == {"service.name": "ava-test"}
        [ss] = rs.scope_spans
        assert (ss.scope.name, ss.scope.version) == ("ava-engine", "1.0")
        a, b = ss.spans
        assert (a.trace_id, a.span_id, a.parent_span_id, a.name, a.kind) == (
            b"\x01" * 16,
            b"\x02" * 8,
            b"\x03" * 8,
            "execute_tool echo",
            INTERNAL,
        )
        assert (a.start_time_unix_nano, a.end_time_unix_nano, a.status.code, a.status.message) == (5, 7, 2, "error")
        attrs = {x.key: _value(x.value) for x in a.attributes}
        assert attrs == {**shared.attributes, **own}
        assert (b.parent_span_id, b.name, b.kind, b.end_time_unix_nano, list(b.attributes)) == (
            b"",
            "call",
            CLIENT,
            2**63 + 5,
            [],
        )
