"""Whether tracing is on and where spans go: ``engine.telemetry`` and the standard OTEL_* variables."""

from __future__ import annotations

import pytest

from engine.config import ConfigError
from engine.config.models.telemetry import TelemetryConfig
from engine.telemetry.setup import CallTraceIds, TraceSetup, trace_setup


def test_off_unless_asked_for_and_the_kill_switches_win() -> None:
    assert trace_setup(TelemetryConfig(), {}) is None
    assert trace_setup(TelemetryConfig(enabled=True), {"OTEL_SDK_DISABLED": "true"}) is None
    assert trace_setup(TelemetryConfig(endpoint="http://c:4318"), {"OTEL_TRACES_EXPORTER": "none"}) is None
    assert trace_setup(TelemetryConfig(enabled=False), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) is None


def test_the_variables_or_the_config_switch_it_on_and_the_config_wins() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SERVICE_NAME": "from-env"}
    assert trace_setup(TelemetryConfig(), env) == TraceSetup(("otlp",), None, "from-env")
    cfg = TelemetryConfig(endpoint="http://col:4318/", service_name="from-config")
    assert trace_setup(cfg, env) == TraceSetup(("otlp",), "http://col:4318/v1/traces", "from-config")
    assert trace_setup(TelemetryConfig(), {"OTEL_TRACES_EXPORTER": "console"}) == TraceSetup(
        ("console",), None, "ava-engine"
    )


def test_what_cannot_be_done_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="OTEL_TRACES_EXPORTER='zipkin' is not supported"):
        trace_setup(TelemetryConfig(enabled=True), {"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported"):
        trace_setup(TelemetryConfig(enabled=True), {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    with pytest.raises(ValueError, match="is not an OTLP/HTTP URL"):
        TelemetryConfig(endpoint="collector:4318")


def test_a_calls_trace_id_is_stable_in_a_run_and_differs_between_runs() -> None:
    a, b = CallTraceIds(), CallTraceIds()
    assert a.hex("call-1") == a.hex("call-1") != a.hex("call-2")
    assert a.hex("call-1") != b.hex("call-1") and len(a.hex("call-1")) == 32
