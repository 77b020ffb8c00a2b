"""The ``engine.telemetry`` section: OpenTelemetry traces of calls (engine.telemetry).

A model of its own because the standard ``OTEL_*`` variables already configure most of it (endpoint, headers,
service name, sampler, batch sizes): this section only switches tracing on or off and sets the few values an
operator wants in the config file, each of them winning over its variable when written.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from engine.config.models.common import Strict


class TelemetryConfig(Strict):
    """Traces of every call (a span per call, turn, stage, tool call, MCP request and transfer), sent over
    OTLP/HTTP; needs the ``otel`` extra (``pip install 'ava-console[otel]'``)."""

    enabled: bool | None = Field(
        default=None,
        description="Export traces. Unset: on when `endpoint` is written or OTEL_EXPORTER_OTLP_ENDPOINT, "
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER is set. OTEL_SDK_DISABLED=true or "
        "OTEL_TRACES_EXPORTER=none turn it off always.",
    )
    endpoint: str | None = Field(
        default=None,
        description="The OTLP/HTTP collector's base URL (as OTEL_EXPORTER_OTLP_ENDPOINT; '/v1/traces' is added), "
        "e.g. http://localhost:4318. Unset: the OTEL_* variables, else http://localhost:4318.",
    )
    service_name: str | None = Field(
        default=None, description="service.name of the spans. Unset: OTEL_SERVICE_NAME, else 'ava-engine'."
    )

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"{v!r} is not an OTLP/HTTP URL: write http://host:4318 or https://host")
        return v
