"""The MCP host against the stdio fixture server: discovery, naming, calls, results, progress, cancellation."""

from __future__ import annotations

from typing import Any

from engine.events import ServerStateChanged, ToolProgressed
from tests.engine.mcp.helpers import settings, stdio, wait_for


async def call(engine: Any, name: str, args: dict[str, Any]) -> Any:
    return await engine.executor.execute(None, name, args, allowed=frozenset({name}))


async def test_discovery_names_and_calls(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}))
    status = engine.server_status()["servers"][0]
    assert status["state"] == "up"
    assert status["pid"] and status["protocol_version"] == "2026-07-28"
    names = {t["exposed_name"] for t in status["tools"]}
    assert {"mcp_fx_echo", "mcp_fx_add", "mcp_fx_add_tool", "mcp_fx_list_count"} <= names
    assert engine.ready

    r = await call(engine, "mcp_fx_echo", {"text": "hello there"})
    assert (r.status, r.message, r.data) == ("success", "hello there", {"result": "hello there"})

    r = await call(engine, "mcp_fx_add", {"a": 2, "b": 3})
    assert r.status == "success"
    assert r.data == {"sum": 5, "a": 2, "b": 3}
    assert r.message == "I've fetched the result."  # the only text is JSON: not spoken

    r = await call(engine, "mcp_fx_fail", {"reason": "no dice"})
    assert r.status == "error" and "no dice" in r.message

    r = await call(engine, "mcp_fx_image", {})
    assert r.status == "success" and r.message == "A tiny image."
    assert r.data["attachments"][0]["type"] == "image" and r.data["attachments"][0]["size_bytes"] == 108
    assert "data" not in r.data["attachments"][0]


async def test_speech_template_and_field(make_engine: Any) -> None:
    cfg = stdio(
        tools=[
            {"name": "add", "speech_template": "{a} plus {b} is {sum}."},
            {"name": "echo", "speech_template": "{missing.key} never", "speech_field": "nothing"},
        ]
    )
    engine = await make_engine(settings({"fx": cfg}))
    r = await call(engine, "mcp_fx_add", {"a": 2, "b": 3})
    assert r.message == "2 plus 3 is 5."
    r = await call(engine, "mcp_fx_echo", {"text": "falls through"})
    assert r.message == "falls through"


async def test_progress_events_and_timeout_cancels_on_the_server(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio(tools=[{"name": "slow", "timeout_ms": 300}])}))
    sub = engine.bus.subscribe()
    r = await call(engine, "mcp_fx_slow", {"seconds": 0.15})
    assert r.status == "success"
    progress = [e for e in sub.drain() if isinstance(e, ToolProgressed)]
    assert [p.progress for p in progress] == [1, 2, 3] and progress[0].total == 3

    r = await call(engine, "mcp_fx_slow", {"seconds": 5})
    assert r.status == "timeout"
    sup = engine.mcp.supervisors["fx"]
    await wait_for(lambda: any("CANCELLED slow" in line for line in sup.stderr.lines))
    assert sup.state == "up"  # a timeout is not a crash


async def test_crash_mid_call_ends_the_call_at_once_and_restarts(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}, tool_timeout_ms=30_000))
    sub = engine.bus.subscribe()
    first_pid = engine.server_status()["servers"][0]["pid"]
    r = await call(engine, "mcp_fx_crash", {"delay": 0.05})
    assert r.status == "error" and r.message.startswith("server fx stopped")
    sup = engine.mcp.supervisors["fx"]
    await wait_for(lambda: sup.restarts == 1 and sup.state == "up")
    st = engine.server_status()["servers"][0]
    assert st["pid"] != first_pid and st["restarts"] == 1
    states = [e.state for e in sub.drain() if isinstance(e, ServerStateChanged)]
    assert states[:2] == ["restarting", "up"]
    metrics = engine.metrics.render().decode()
    assert 'ai_agent_mcp_server_restarts_total{server="fx"} 1.0' in metrics
    assert 'ai_agent_mcp_server_up{server="fx"} 1.0' in metrics
    r = await call(engine, "mcp_fx_echo", {"text": "back"})
    assert r.status == "success"
