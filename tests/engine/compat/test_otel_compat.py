"""The OTLP/HTTP exporter's private client (engine/_compat/otel.py): bytes the engine encoded reach a real receiver
through it, and an exporter without it fails naming the dependency."""

from __future__ import annotations

import asyncio
import types

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from engine._compat._check import CompatError
from engine._compat.otel import post_otlp
from engine.telemetry.otlp import INTERNAL, Encoder, SpanData
from tests.engine.telemetry.otlp_receiver import otlp_receiver


async def test_post_otlp_sends_encoded_spans_with_the_exporters_client() -> None:
    async with otlp_receiver() as rx:
        exporter = OTLPSpanExporter(endpoint=f"{rx.url}/v1/traces")
        span = SpanData(b"\x01" * 16, b"\x02" * 8, b"", "one", INTERNAL, 1, 2, None, {"k": "v"}, None)
        body = Encoder({"service.name": "compat"}, "ava-engine").request([span])
        assert await asyncio.to_thread(post_otlp, exporter, body)
        exporter.shutdown()
        got = rx.one("one")
        assert got.service == "compat" and got.attributes == {"k": "v"} and got.span_id == "02" * 8


def test_an_exporter_without_the_client_names_the_dependency() -> None:
    with pytest.raises(CompatError, match=r"opentelemetry-exporter-otlp-proto-http .* has no .*_client"):
        post_otlp(types.SimpleNamespace(), b"")
