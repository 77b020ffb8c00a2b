"""Whether traces are exported and how: ``engine.telemetry`` and the standard ``OTEL_*`` variables, and the SDK.

Why apart from the span builder: this is the only module that imports the OpenTelemetry SDK, and only when tracing
is switched on; the ``otel`` extra is optional, so a missing SDK is a clear config error naming the extra, not an
ImportError. The SDK reads the rest of the standard variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_BSP_* …).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.config.errors import ConfigError
from engine.config.models.telemetry import TelemetryConfig

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

#: What to install when tracing is on but the SDK is missing.
EXTRA_HINT = "pip install 'ava-console[otel]'"
EXPORTERS = ("otlp", "console")
PROTOCOL = "http/protobuf"


@dataclass(frozen=True)
class TraceSetup:
    """Tracing is on: where the spans go."""

    exporters: tuple[str, ...]
    #: The OTLP traces URL from ``engine.telemetry.endpoint``; None: the exporter reads the OTEL_* variables.
    endpoint: str | None
    service_name: str


def _error(message: str) -> ConfigError:
    return ConfigError.single("engine.telemetry", message)


def trace_setup(cfg: TelemetryConfig, env: Mapping[str, str] | None = None) -> TraceSetup | None:
    """The tracing this config and environment ask for (None: off); ``ConfigError`` for what cannot be done."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = tuple(n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip())
    if "none" in names:
        return None
    asked = bool(
        names or cfg.endpoint or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    if not (cfg.enabled if cfg.enabled is not None else asked):
        return None
    exporters = names or ("otlp",)
    for n in exporters:
        if n not in EXPORTERS:
            raise _error(f"OTEL_TRACES_EXPORTER={n!r} is not supported: otlp (OTLP/HTTP), console or none")
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or PROTOCOL
    if "otlp" in exporters and protocol.strip().lower() != PROTOCOL:
        raise _error(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: traces go as {PROTOCOL}")
    endpoint = cfg.endpoint.rstrip("/") + "/v1/traces" if cfg.endpoint else None
    service = cfg.service_name or env.get("OTEL_SERVICE_NAME") or "ava-engine"
    return TraceSetup(exporters, endpoint, service)


class CallTraceIds:
    """A trace id per call, the same wherever it is asked for (the span builder, the recorder's thread): derived
    from the call id with a key of this engine run, so ids are unpredictable, unique per run and need no table."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(16)

    def of(self, call_id: str) -> int:
        n = int.from_bytes(hashlib.blake2b(call_id.encode(), key=self._key, digest_size=16).digest(), "big")
        return n or 1

    def hex(self, call_id: str) -> str:
        return format(self.of(call_id), "032x")


def tracer_provider(setup: TraceSetup, next_trace_id: list[int]) -> TracerProvider:
    """The SDK's provider with a batch processor per exporter; a root span takes ``next_trace_id[0]`` as its
    trace id when it is set (the call's, see ``CallTraceIds``). ``ConfigError`` naming the extra when the SDK is
    not installed."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    except ImportError as e:
        raise _error(
            f"traces are switched on (engine.telemetry or OTEL_* variables) but the OpenTelemetry SDK is not "
            f"installed ({e.name or e}): {EXTRA_HINT}, or switch tracing off (OTEL_SDK_DISABLED=true)"
        ) from None

    class _Ids(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            if next_trace_id and next_trace_id[0]:
                trace_id, next_trace_id[0] = next_trace_id[0], 0
                return trace_id
            return super().generate_trace_id()

    provider = TracerProvider(resource=Resource.create({"service.name": setup.service_name}), id_generator=_Ids())
    for name in setup.exporters:
        exporter: SpanExporter
        if name == "console":
            exporter = ConsoleSpanExporter(out=sys.stderr)  # stdout is the CLI's (--json prints only JSON)
        else:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError as e:
                raise _error(f"the OTLP/HTTP exporter is not installed ({e.name or e}): {EXTRA_HINT}") from None
            exporter = OTLPSpanExporter(endpoint=setup.endpoint)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
