"""ElevenLabs server events the adapter does not run itself are never dropped silently: ``dtmf_request`` (the
agent asks for keypad tones) and ``mcp_tool_call`` (a tool the agent ran on its own MCP server) reach the
operator as notices; any other type it does not handle is counted every time and logged once."""

from __future__ import annotations

import logging

import pytest
from realtime_elevenlabs_world import world

from engine.realtime.session import AssistantText, ProviderNotice


def series(scrape: str, name: str, **labels: str) -> float | None:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    hit = [line for line in scrape.splitlines() if line.startswith(f"{name}{{{want}}} ")]
    return float(hit[0].rsplit(" ", 1)[1]) if hit else None


async def test_dtmf_request_reaches_the_operator() -> None:
    async with world() as w:
        await w.start()
        await w.ws.dtmf_request("42#")
        got = await w.until(lambda e: isinstance(e, ProviderNotice) and e.code == "dtmf_request")
    assert isinstance(got, ProviderNotice) and not got.fatal and "42#" in got.message
    assert w.ws.errors == []


async def test_an_agent_side_mcp_tool_call_is_reported_not_run() -> None:
    async with world() as w:
        await w.start()
        await w.ws.mcp_tool_call("search_docs", {"q": "refunds"})
        got = await w.until(lambda e: isinstance(e, ProviderNotice) and e.code == "mcp_tool_call")
        assert w.box.calls == []  # the engine did not run it
    assert isinstance(got, ProviderNotice) and "search_docs" in got.message and "not run" in got.message


async def test_unknown_types_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with world() as w:
        await w.start()
        for _ in range(3):
            await w.ws.send({"type": "brand_new_event", "brand_new_event_event": {}})
        await w.ws.agent_says("Still here.")
        await w.until(lambda e: isinstance(e, AssistantText) and e.text == "Still here.")
        scrape = w.engine.metrics.render().decode()
    assert series(scrape, "ai_agent_provider_events_ignored_total", provider="el", type="brand_new_event") == 3
    assert len([r for r in caplog.records if "brand_new_event" in r.getMessage()]) == 1
