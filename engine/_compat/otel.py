"""The OpenTelemetry OTLP/HTTP exporter's private API the engine relies on (pinned in pyproject.toml).

- ``OTLPSpanExporter._client`` and its ``export(bytes)`` (a result with ``success``): engine/telemetry writes the
  export request's protobuf itself (the SDK's span objects and encoder cost more than the tool path they trace), and
  sends it with the exporter's own HTTP client, so the endpoint, headers, compression, certificates, timeout and
  retries stay the SDK's reading of the OTEL_EXPORTER_OTLP_* variables.
"""

from __future__ import annotations

from typing import Any

from engine._compat._check import private

__all__ = ["post_otlp"]

DIST = "opentelemetry-exporter-otlp-proto-http"


def post_otlp(exporter: Any, body: bytes) -> bool:
    """POST an encoded ``ExportTraceServiceRequest`` with ``exporter``'s client; whether the collector took it."""
    client = private(exporter, "_client", DIST)
    return bool(private(client, "export", DIST, ("data",))(body).success)
