"""Deepgram's Voice Agent by its documented rules: no more functions than the think provider takes (the rest left
out, named in ``tools.omitted`` and not shown to the call), arrays with ``items``, and message types the adapter
does not handle counted and logged once."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from realtime_deepgram_fake import DeepgramFake
from realtime_deepgram_harness import live_call, provider_config

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, Settings
from engine.events import ToolsOmitted
from engine.realtime.session import PCMU_8K, ProviderNotice
from engine.tools.base import FunctionTool, Tool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult


def bulk_tools(n: int) -> list[Tool]:
    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("ok")

    tags = ToolParameter("tags", "array", "Tags", required=False)
    return [FunctionTool(ToolDefinition(f"bulk_{i:03d}", "A bulk tool.", parameters=(tags,)), run) for i in range(n)]


async def test_functions_past_the_limit_are_left_out_and_named() -> None:
    async with DeepgramFake() as fake:
        settings = Settings(
            engine=EngineConfig(http=HttpConfig(enabled=False)),
            providers={"dg": provider_config(fake.url)},
            contexts={"desk": ContextConfig(provider="dg", prompt="x", tools=["bulk_*", "hangup_call"])},
        )
        engine = Engine(settings, extra_tools=bulk_tools(130))
        async with engine:
            sub = engine.bus.subscribe(types={ToolsOmitted.type})
            call, live = await engine.calls.start_realtime_call("desk", audio=PCMU_8K)
            try:
                events = [e for e in sub.drain() if isinstance(e, ToolsOmitted)]
                shown = call.shown_tools
            finally:
                await live.aclose()
    assert fake.errors == [], fake.errors
    functions = fake.settings[0]["agent"]["think"]["functions"]
    assert len(functions) == 128 and "hangup_call" in {f["name"] for f in functions}
    assert len(events) == 1 and events[0].limit == 128 and len(events[0].omitted) == 131 - 128
    assert not shown & set(events[0].omitted) and len(shown) == 128


async def test_unknown_message_types_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with live_call() as live:
        for _ in range(3):
            await live.fake.send({"type": "BrandNewThing", "x": 1})
        await live.fake.send({"type": "Error", "code": "E9", "description": "a later signal"})
        await live.wait_event(lambda e: isinstance(e, ProviderNotice) and e.code == "E9")
        scrape = live.engine.metrics.render().decode()
    line = 'ai_agent_provider_events_ignored_total{provider="dg",type="BrandNewThing"} 3.0'
    assert line in scrape.splitlines()
    assert len([r for r in caplog.records if "BrandNewThing" in r.getMessage()]) == 1
