"""Whether traces are exported and how: ``engine.telemetry`` and the standard ``OTEL_*`` variables, and the SDK.

Why apart from the span builder: this (and the console exporter it loads) is where the OpenTelemetry SDK is
imported, and only when tracing is switched on; the ``otel`` extra is optional, so a missing SDK is a clear config
error naming the extra, not an ImportError. The SDK reads the rest of the standard variables itself
(OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER); the batch limits (OTEL_BSP_*)
are read by engine/telemetry/export.py as the SDK's batch processor reads them.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine._compat.otel import post_otlp
from engine.config.errors import ConfigError
from engine.config.models.telemetry import TelemetryConfig

if TYPE_CHECKING:
    from engine.telemetry.export import Output
    from engine.telemetry.otlp import Encoder

#: What to install when tracing is on but the SDK is missing.
EXTRA_HINT = "pip install 'ava-console[otel]'"
EXPORTERS = ("otlp", "console")
PROTOCOL = "http/protobuf"
#: The instrumentation scope of every span.
SCOPE = "ava-engine"


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


def span_outputs(setup: TraceSetup) -> tuple[list[Output], Callable[[int, str], bool]]:
    """An output per exporter, and the sampler's decision for a new trace (``OTEL_TRACES_SAMPLER``, as the SDK
    reads it; a call's decision holds for its whole trace). ``ConfigError`` naming the extra when the SDK is not
    installed."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter
        from opentelemetry.trace import SpanKind
    except ImportError as e:
        raise _error(
            f"traces are switched on (engine.telemetry or OTEL_* variables) but the OpenTelemetry SDK is not "
            f"installed ({e.name or e}): {EXTRA_HINT}, or switch tracing off (OTEL_SDK_DISABLED=true)"
        ) from None

    resource = Resource.create({"service.name": setup.service_name})  # with OTEL_RESOURCE_ATTRIBUTES
    sampler = TracerProvider(resource=resource, shutdown_on_exit=False).sampler

    def sampled(trace_id: int, name: str) -> bool:
        return sampler.should_sample(None, trace_id, name, SpanKind.SERVER).decision.is_sampled()

    outputs: list[Output] = []
    for name in setup.exporters:
        if name == "console":
            from engine.telemetry.console import ConsoleOutput

            outputs.append(ConsoleOutput(ConsoleSpanExporter(out=sys.stderr), resource, SCOPE))  # stdout is the CLI's
            continue
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as e:
            raise _error(f"the OTLP/HTTP exporter is not installed ({e.name or e}): {EXTRA_HINT}") from None
        from engine.telemetry.otlp import Encoder

        outputs.append(_Otlp(OTLPSpanExporter(endpoint=setup.endpoint), Encoder(resource.attributes, SCOPE)))
    return outputs, sampled


class _Otlp:
    """OTLP/HTTP: the request written by ``Encoder``, sent with the SDK exporter's client (its OTEL_* settings)."""

    def __init__(self, exporter: Any, encoder: Encoder) -> None:
        self.exporter, self.encoder = exporter, encoder
        self._pieces: list[bytes] = []  # two a span, as the builder wrote them

    def add(self, pieces: Sequence[bytes]) -> None:
        self._pieces += pieces

    def batch(self, n: int) -> bytes:
        pieces = self._pieces
        chunk = pieces[: 2 * n]
        del pieces[: 2 * n]
        return self.encoder.wrap(chunk)

    def send(self, payload: bytes) -> bool:
        return post_otlp(self.exporter, payload)

    def shutdown(self) -> None:
        self.exporter.shutdown()
