"""The exporter side of tracing (issue 36 item 5): spans built off the loop in batches, sent as the SDK's batch
processor would (OTEL_BSP_* limits, OTEL_TRACES_SAMPLER), to a real OTLP/HTTP receiver decoding opentelemetry-proto;
``flush`` sends what a running engine has gathered; the loop side starts no task and nothing wakes per event."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from engine.config import ConfigError
from engine.config.models import Settings
from engine.events import CallEnded, CallStarted, ToolCompleted, TurnTimings
from engine.events.bus import EventBus
from engine.telemetry import Telemetry
from tests.engine.telemetry.otlp_receiver import otlp_receiver
from tests.engine.telemetry.test_traces import _no_otel_env  # noqa: F401  (autouse: the runner's OTEL_* are not ours)


def _no_task(coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    coro.close()
    raise AssertionError(f"tracing started a task ({name}): the loop side must only gather events")


def _telemetry(url: str, bus: EventBus) -> Telemetry:
    settings = Settings.model_validate({"engine": {"telemetry": {"endpoint": url}}})
    return Telemetry(lambda: settings, bus, _no_task, lambda name: "fast")


def _calls(bus: EventBus, n: int) -> None:
    """``n`` calls, each a call span, a turn span and a tool span."""
    t0 = time.time()
    for i in range(n):
        call_id = f"c{i}"
        bus.publish(CallStarted(ts=t0, call_id=call_id, context="c", provider="p"))
        bus.publish(
            ToolCompleted(
                ts=t0 + 0.5,
                call_id=call_id,
                tool_call_id=f"t{i}",
                exposed_name="echo",
                server="builtin",
                tool="echo",
                status="error",
                latency_ms=20.0,
                message="",
            )
        )
        bus.publish(TurnTimings(ts=t0 + 1, call_id=call_id, turn=1, tier="fast", budget_ms=800, latency_ms=900.0))
        bus.publish(CallEnded(ts=t0 + 2, call_id=call_id, reason="done"))


def _spans_per_request(bodies: list[bytes]) -> list[int]:
    counts = []
    for body in bodies:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        counts.append(sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans))
    return counts


async def test_flush_sends_what_a_running_engine_gathered_and_no_task_wakes_per_event() -> None:
    async with otlp_receiver() as rx:
        bus = EventBus()
        tel = _telemetry(rx.url, bus)
        await tel.start()  # with a spawn that fails: no pump task
        try:
            _calls(bus, 1)
            assert await tel.flush()
            call, turn, tool = rx.one("call"), rx.one("turn"), rx.one("execute_tool echo")
            assert turn.parent_id == call.span_id and tool.parent_id == turn.span_id
            assert tool.status_code == 2 and tool.attributes["ava.tool.latency_class"] == "fast"
            assert tool.attributes["gen_ai.tool.call.id"] == "t0" and tool.end_ns - tool.start_ns == 20_000_000
            assert turn.attributes["ava.over_budget"] is True and turn.attributes["ava.latency_ms"] == 900.0
        finally:
            await tel.stop()


async def test_batches_keep_the_batch_processors_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    async with otlp_receiver() as rx:
        bus = EventBus()
        tel = _telemetry(rx.url, bus)
        await tel.start()
        _calls(bus, 5)
        await tel.stop()
        assert len(rx.named("call")) == 5 and len(rx.spans) == 15
        assert max(_spans_per_request(rx.bodies)) == 4


async def test_the_sampler_variable_is_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    async with otlp_receiver() as rx:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
        bus = EventBus()
        tel = _telemetry(rx.url, bus)
        await tel.start()
        _calls(bus, 3)
        assert await tel.flush()  # everything handed over was built and sent: none of it was sampled
        assert rx.bodies == []
        await tel.stop()


def test_a_batch_larger_than_the_queue_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.telemetry.export import Limits

    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "10")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "20")
    with pytest.raises(ConfigError, match="OTEL_BSP_MAX_EXPORT_BATCH_SIZE=20 is larger than OTEL_BSP_MAX_QUEUE_SIZE"):
        Limits.from_env()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "0")
    with pytest.raises(ConfigError, match="OTEL_BSP_SCHEDULE_DELAY='0' must be at least 1"):
        Limits.from_env()


async def test_the_console_exporter_prints_the_same_spans(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    bus = EventBus()
    settings = Settings.model_validate({"engine": {"telemetry": {"enabled": True}}})
    tel = Telemetry(lambda: settings, bus, _no_task)
    await tel.start()
    _calls(bus, 1)
    await tel.stop()
    err = capsys.readouterr().err
    spans = [json.loads(chunk) for chunk in err.split("\n}\n") if chunk.strip() for chunk in [chunk + "}"]]
    by_name = {s["name"]: s for s in spans}
    assert set(by_name) == {"call", "turn", "execute_tool echo"}
    assert by_name["turn"]["parent_id"] == by_name["call"]["context"]["span_id"]
    assert by_name["execute_tool echo"]["status"]["status_code"] == "ERROR"


async def test_a_batch_leaves_on_its_schedule_without_a_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    async with otlp_receiver() as rx:
        bus = EventBus()
        tel = _telemetry(rx.url, bus)
        await tel.start()
        try:
            _calls(bus, 1)  # 3 spans: far below a batch, so only the schedule sends them
            await asyncio.wait_for(rx.received.wait(), 5)
            assert {s.name for s in rx.spans} == {"call", "turn", "execute_tool echo"}
        finally:
            await tel.stop()
