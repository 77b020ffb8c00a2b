"""Traces of calls sent over OTLP/HTTP to a real receiver on loopback (decoded with opentelemetry-proto): the span
tree (call → turn → stages, tool calls → MCP requests, transfers), the attributes (tier, budget, provider, model,
token counts, latency class), the call's trace id in its recording and export, and never the caller's words or a
tool's arguments in anything exported."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.events import (
    CallEnded,
    CallStarted,
    CallTransferAnswered,
    CallTransferStarted,
    ToolCompleted,
    ToolRequested,
    TranscriptAdded,
    TurnStage,
    TurnTimings,
    UsageUpdated,
)
from engine.events.bus import EventBus
from engine.recorder.codec import read_recording
from engine.recorder.export import render
from engine.recorder.files import find_recording
from engine.telemetry import Telemetry
from engine.usage.report import UsageReport
from tests.engine.core.helpers import echo_tool, settings_with
from tests.engine.telemetry.otlp_receiver import otlp_receiver

CANARY = "Zqx7canary"
ECHO = [{"name": "echo", "args": {"text": "{text}"}}]
INTENTS = [{"name": "echo", "patterns": [r"echo (?P<text>\w+)"], "tools": ECHO, "reply": "done"}]


@pytest.fixture(autouse=True)
def _no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's own OTEL_* variables must not switch tracing on or point it elsewhere."""
    for name in (
        "OTEL_SDK_DISABLED",
        "OTEL_TRACES_EXPORTER",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_SERVICE_NAME",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    ):
        monkeypatch.delenv(name, raising=False)


def _settings(tmp_path: Path, url: str) -> Settings:
    return settings_with(
        tmp_path,
        INTENTS,
        ["echo"],
        recording={"dir": str(tmp_path / "rec")},
        engine={"telemetry": {"endpoint": url, "service_name": "ava-test"}},
    )


async def test_a_text_call_is_one_trace_call_turn_model_and_tool_without_the_callers_words(tmp_path: Path) -> None:
    async with otlp_receiver() as rx:
        engine = Engine(_settings(tmp_path, rx.url), extra_tools=[echo_tool()])
        async with engine:
            session = await engine.start_call("c", caller_name=CANARY, caller_number="+41790000000")
            await engine.user_said(session.call_id, f"echo {CANARY}")
            await engine.end_call(session.call_id, "done")
        # the engine's stop flushed the exporter: everything is here without waiting
        call = rx.one("call")
        assert call.parent_id == "" and call.service == "ava-test"
        assert call.attributes["ava.call.id"] == session.call_id and call.attributes["ava.context"] == "c"
        assert call.attributes["ava.provider"] == "s" and call.attributes["ava.call.end_reason"] == "done"
        turns = [s for s in rx.children(call) if s.name == "turn"]
        assert len(turns) == 1
        turn = turns[0]
        assert turn.attributes["ava.turn"] == 1 and turn.attributes["ava.tier"] == "standard"
        assert turn.attributes["ava.budget_ms"] > 0
        assert [s.name for s in rx.children(turn)] == ["model", "execute_tool echo"]
        tool = rx.one("execute_tool echo")
        assert tool.attributes["gen_ai.tool.name"] == "echo" and tool.attributes["ava.tool.status"] == "success"
        assert tool.attributes["ava.tool.server"] == "builtin" and rx.children(tool) == []  # no MCP request
        assert turn.start_ns <= tool.start_ns <= tool.end_ns <= turn.end_ns <= call.end_ns
        assert {s.trace_id for s in rx.spans} == {call.trace_id}
        assert not any(CANARY.encode() in b or b"+41790000000" in b for b in rx.bodies)
    rec = read_recording(find_recording(tmp_path / "rec", session.call_id) or tmp_path)
    assert rec.header["trace_id"] == call.trace_id
    assert f"**Trace:** {call.trace_id}" in render(rec, "md")


def _spawn(coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    return asyncio.create_task(coro, name=name)


async def test_a_voice_turn_has_a_span_per_stage_and_the_model_span_carries_provider_model_and_tokens(
    tmp_path: Path,
) -> None:
    async with otlp_receiver() as rx:
        settings = _settings(tmp_path, rx.url)
        bus = EventBus()
        tel = Telemetry(lambda: settings, bus, _spawn, lambda name: "fast" if name == "mcp_dice_roll" else None)
        await tel.start()
        t0 = time.time()
        bus.publish(CallStarted(ts=t0, call_id="v1", context="c", provider="rt", caller_name=CANARY))
        bus.publish(TranscriptAdded(call_id="v1", role="user", text=f"roll for {CANARY}"))
        bus.publish(
            ToolRequested(
                call_id="v1",
                tool_call_id="t1",
                exposed_name="mcp_dice_roll",
                server="dice",
                tool="roll",
                arguments={"expression": CANARY},
            )
        )
        bus.publish(
            ToolCompleted(
                ts=t0 + 2.25,
                call_id="v1",
                tool_call_id="t1",
                exposed_name="mcp_dice_roll",
                server="dice",
                tool="roll",
                status="success",
                latency_ms=50.0,
                message=f"rolled for {CANARY}",
                data={"who": CANARY},
            )
        )
        stages = (
            TurnStage(name="endpointing", start_ms=0, duration_ms=300),
            TurnStage(name="stt", start_ms=300, duration_ms=200),
            TurnStage(name="model", start_ms=500, duration_ms=900),
            TurnStage(name="tool", start_ms=1200, duration_ms=50, label="mcp_dice_roll", server="dice"),
            TurnStage(name="tts", start_ms=1400, duration_ms=100),
            TurnStage(name="playout", start_ms=1500, duration_ms=2000),
        )
        bus.publish(
            TurnTimings(
                ts=t0 + 4.5,
                call_id="v1",
                turn=1,
                tier="fast",
                budget_ms=1200,
                latency_ms=1500,
                stages=stages,
                started_at=t0 + 1.0,
            )
        )
        bus.publish(
            UsageUpdated(
                call_id="v1",
                provider="openai_chat",
                model="gpt-4o-mini",
                turn=1,
                usage=UsageReport(input_tokens=120, output_tokens=30, cached_input_tokens=64),
            )
        )
        bus.publish(CallTransferStarted(ts=t0 + 5, call_id="v1", target="sales", destination="+41790000000"))
        bus.publish(CallTransferAnswered(ts=t0 + 7, call_id="v1", target="sales", handoff_ms=1800))
        bus.publish(CallEnded(ts=t0 + 9, call_id="v1", reason="transferred"))
        await tel.stop()  # what the pump has not taken yet is handed to the span builder here
        call, turn = rx.one("call"), rx.one("turn")
        assert turn.parent_id == call.span_id and turn.start_ns == int((t0 + 1.0) * 1e9)
        assert turn.attributes["ava.over_budget"] is True and turn.attributes["ava.budget_ms"] == 1200
        names = [s.name for s in rx.children(turn)]
        assert names == ["endpointing", "stt", "model", "execute_tool mcp_dice_roll", "tts", "playout"]
        stt = rx.one("stt")
        assert stt.end_ns - stt.start_ns == 200_000_000
        model = rx.one("model")
        assert model.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert model.attributes["gen_ai.provider.name"] == "openai_chat" and model.attributes["ava.provider"] == "rt"
        assert model.attributes["gen_ai.usage.input_tokens"] == 120
        assert model.attributes["gen_ai.usage.output_tokens"] == 30
        assert model.attributes["gen_ai.usage.cached_input_tokens"] == 64
        tool = rx.one("execute_tool mcp_dice_roll")
        assert tool.attributes["ava.tool.latency_class"] == "fast" and tool.end_ns == int((t0 + 2.25) * 1e9)
        [mcp] = rx.children(tool)
        assert mcp.name == "tools/call roll" and mcp.attributes["mcp.method.name"] == "tools/call"
        assert mcp.attributes["ava.mcp.server"] == "dice"
        transfer = rx.one("transfer")
        assert transfer.parent_id == call.span_id and transfer.attributes["ava.transfer.outcome"] == "answered"
        assert transfer.attributes["ava.transfer.target"] == "sales"
        assert not any(CANARY.encode() in b or b"+41790000000" in b for b in rx.bodies)
