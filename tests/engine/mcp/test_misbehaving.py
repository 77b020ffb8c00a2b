"""Fixture servers that misbehave, each with its documented outcome (see tests/fixtures/mcp_servers/)."""

from __future__ import annotations

import sys
from typing import Any

from engine.events import ServerStateChanged, ToolsChanged
from tests.engine.mcp.helpers import FIXTURES, settings, stdio, wait_for

HANG_INIT = str(FIXTURES / "hang_initialize.py")


async def call(engine: Any, name: str, args: dict[str, Any]) -> Any:
    return await engine.executor.execute(None, name, args, allowed=frozenset({name}))


async def test_crash_at_start_fails_with_its_stderr_and_the_engine_is_ready(make_engine: Any) -> None:
    engine = await make_engine(
        settings({"bad": stdio("--crash-at-start", restart={"max_restarts": 1}), "good": stdio()})
    )
    assert engine.ready
    sup = engine.mcp.supervisors["bad"]
    await wait_for(lambda: sup.state == "failed")
    st = sup.snapshot()
    assert st["restarts"] == 1 and st["tool_count"] == 0
    assert "gave up after 1 restarts" in st["last_error"]
    assert any("refusing to start" in line for line in st["stderr_tail"])
    assert engine.mcp.supervisors["good"].state == "up"
    assert 'ai_agent_mcp_server_up{server="bad"} 0.0' in engine.metrics.render().decode()


async def test_hang_on_initialize_is_bounded(make_engine: Any) -> None:
    hung = {
        "transport": "stdio",
        "command": [sys.executable, HANG_INIT],
        "connect_timeout_ms": 400,
        "restart": {"enabled": False},
    }
    engine = await make_engine(settings({"hung": hung, "good": stdio()}))
    assert engine.ready and engine.mcp.pending() == []
    st = engine.mcp.supervisors["hung"].snapshot()
    assert st["state"] == "failed"
    assert st["last_error"].startswith("no answer within connect_timeout_ms (400 ms)")
    assert engine.mcp.supervisors["good"].state == "up"


async def test_hang_on_tools_list_is_bounded(make_engine: Any) -> None:
    engine = await make_engine(
        settings({"fx": stdio("--hang-list", connect_timeout_ms=1500, restart={"enabled": False})})
    )
    st = engine.mcp.supervisors["fx"].snapshot()
    assert st["state"] == "failed" and "connect_timeout_ms (1500 ms)" in st["last_error"]


async def test_hang_on_a_call_times_out(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio(defaults={"timeout_ms": 200})}))
    r = await call(engine, "mcp_fx_slow", {"seconds": 30})
    assert r.status == "timeout" and "0.2 seconds" in r.message
    assert engine.mcp.supervisors["fx"].state == "up"


async def test_malformed_output_is_counted_and_the_call_still_answers(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}))
    r = await call(engine, "mcp_fx_garble", {})
    assert r.status == "success" and r.message == "garbled"
    await wait_for(lambda: engine.server_status()["servers"][0]["malformed_messages"] >= 1)


async def test_big_results_are_capped(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio(tools=[{"name": "big", "timeout_ms": 30_000}])}))
    r = await call(engine, "mcp_fx_big", {"size": 2_000_000})
    assert r.status == "success"
    assert len(r.message) <= 301 and r.message.endswith("…")  # the first text, trimmed to speakable
    assert r.data["truncated"] is True and r.data["size_chars"] > 1_000_000
    assert len(r.data["text"]) == 64_000
    assert engine.mcp.supervisors["fx"].state == "up"
    # 10 MB on every transport, and past a tool's timeout: test_large_results.py


async def test_stderr_flood_is_ring_buffered_and_rate_limited(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}))
    r = await call(engine, "mcp_fx_flood", {"lines": 5000})
    assert r.status == "success"
    sup = engine.mcp.supervisors["fx"]
    await wait_for(lambda: sup.stderr.total_lines >= 5000)
    assert len(sup.stderr.lines) == 200 and sup.stderr.lines[-1] == "flood line 4999"
    assert sup.stderr.suppressed_total >= 4000
    assert len(sup.snapshot()["stderr_tail"]) == 20


async def test_crash_loop_ends_failed_then_operator_restart(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio("--exit-after", "0.3", restart={"max_restarts": 2})}))
    sub = engine.bus.subscribe()
    sup = engine.mcp.supervisors["fx"]
    await wait_for(lambda: sup.state == "failed", limit_s=20)
    assert sup.restarts == 2 and sup.restarts_total == 2
    assert "gave up after 2 restarts" in (sup.last_error or "")
    assert engine.registry.by_server("fx") == []
    metrics = engine.metrics.render().decode()
    assert 'ai_agent_mcp_server_restarts_total{server="fx"} 2.0' in metrics
    assert 'ai_agent_mcp_server_up{server="fx"} 0.0' in metrics
    states = [e.state for e in sub.drain() if isinstance(e, ServerStateChanged)]
    assert states[-1] == "failed" and "restarting" in states
    snap = await engine.restart_server("fx")
    # the fixture exits again 0.3 s after it comes up, so on a busy machine the snapshot may already say
    # "restarting": what the operator's restart guarantees is that the server came up with its count reset
    assert snap["restarts"] <= 1
    after: list[tuple[str, int]] = []

    def came_up() -> bool:  # restart_server may return while a loaded box is still starting it
        after.extend((e.state, e.restarts) for e in sub.drain() if isinstance(e, ServerStateChanged))
        return ("up", 0) in after

    await wait_for(came_up, limit_s=20)
    await engine.set_server_enabled("fx", False)
    assert sup.state == "stopped" and engine.registry.by_server("fx") == []


async def test_slow_start_is_waited_for(make_engine: Any) -> None:
    engine = await make_engine(
        settings(
            {
                "slow": stdio("--slow-start", "0.6"),
                "tooslow": stdio("--slow-start", "3", connect_timeout_ms=300, restart={"enabled": False}),
            }
        )
    )
    assert engine.ready
    assert engine.mcp.supervisors["slow"].state == "up"
    assert engine.mcp.supervisors["tooslow"].state == "failed"


async def test_list_changed_storm_is_debounced(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}))
    sub = engine.bus.subscribe()
    revision = engine.registry.revision
    r = await call(engine, "mcp_fx_storm", {"count": 60})
    assert r.status == "success"
    await wait_for(lambda: engine.mcp.supervisors["fx"]._changed.is_set() is False)
    r = await call(engine, "mcp_fx_list_count", {})
    # one initial list + a few debounced re-lists, never one per notification
    assert 2 <= r.data["result"] <= 6
    assert engine.registry.revision == revision  # nothing changed, so the registry was left alone
    assert not [e for e in sub.drain() if isinstance(e, ToolsChanged)]


async def _tool_added_at_run_time(make_engine: Any, mode: str) -> None:
    engine = await make_engine(settings({"fx": stdio(mode=mode)}))
    sub = engine.bus.subscribe()
    revision = engine.registry.revision
    r = await call(engine, "mcp_fx_add_tool", {"name": "late_tool"})
    assert r.status == "success"
    await wait_for(lambda: engine.registry.get("mcp_fx_late_tool") is not None)
    assert engine.registry.revision > revision
    changed = [e for e in sub.drain() if isinstance(e, ToolsChanged)]
    assert changed and changed[-1].added == ("mcp_fx_late_tool",) and changed[-1].revision == engine.registry.revision
    r = await call(engine, "mcp_fx_late_tool", {"x": "yes"})
    assert r.status == "success" and r.message == "extra yes"


async def test_tool_added_at_run_time_2026_listen(make_engine: Any) -> None:
    await _tool_added_at_run_time(make_engine, "auto")


async def test_tool_added_at_run_time_legacy_notification(make_engine: Any) -> None:
    await _tool_added_at_run_time(make_engine, "legacy")
