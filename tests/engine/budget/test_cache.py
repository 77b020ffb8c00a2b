"""The result cache: TTL on an injected clock, LRU bound, canonical keys, only idempotent successes, and
cache hits marked in tool.completed through the real execution path."""

from __future__ import annotations

from pathlib import Path

from engine.budget.cache import ResultCache, canonical_args
from engine.events import ToolCompleted
from engine.tools.base import LatencyMeta, ToolDefinition, ToolParameter, ToolResult
from tests.engine.budget.helpers import FakeClock, engine_for, only, session_on, settings_for, tool


def defn(name: str = "wx", idempotent: bool = True, ttl: int = 60) -> ToolDefinition:
    return ToolDefinition(name, "d", latency=LatencyMeta(idempotent=idempotent, cacheable_seconds=ttl))


def test_ttl_expires_on_the_clock() -> None:
    clock = FakeClock()
    cache = ResultCache(10, clock)
    d = defn(ttl=60)
    assert cache.put(d, {"city": "Oslo"}, ToolResult.success("cold"))
    clock.advance(59.9)
    hit = cache.get(d, {"city": "Oslo"})
    assert hit is not None and hit.cache_hit and hit.message == "cold"
    clock.advance(0.1)
    assert cache.get(d, {"city": "Oslo"}) is None and len(cache) == 0


def test_bounded_lru() -> None:
    cache = ResultCache(2, FakeClock())
    d = defn()
    for city in ("a", "b"):
        cache.put(d, {"city": city}, ToolResult.success(city))
    assert cache.get(d, {"city": "a"}) is not None  # a is now most recently used
    cache.put(d, {"city": "c"}, ToolResult.success("c"))
    assert len(cache) == 2
    assert cache.get(d, {"city": "b"}) is None
    assert cache.get(d, {"city": "a"}) is not None and cache.get(d, {"city": "c"}) is not None
    cache.resize(1)
    assert len(cache) == 1


def test_canonical_keys_and_what_is_never_cached() -> None:
    assert canonical_args({"b": 2, "a": {"y": 1, "x": 0}}) == canonical_args({"a": {"x": 0, "y": 1}, "b": 2})
    cache = ResultCache(10, FakeClock())
    cache.put(defn(), {"a": 1, "b": 2}, ToolResult.success("ok"))
    assert cache.get(defn(), {"b": 2, "a": 1}) is not None
    assert not cache.put(defn("w2", idempotent=False), {}, ToolResult.success("x"))
    assert not cache.put(defn("w3", ttl=0), {}, ToolResult.success("x"))
    assert not cache.put(defn(), {"z": 1}, ToolResult.error("boom"))
    assert ResultCache(0, FakeClock()).put(defn(), {}, ToolResult.success("x")) is False
    stored = ToolResult.success("original")
    cache.put(defn(), {"k": 1}, stored)
    stored.message = "mutated later"
    hit = cache.get(defn(), {"k": 1})
    assert hit is not None and hit.message == "original"


async def test_cache_hits_through_the_execution_path(tmp_path: Path) -> None:
    clock = FakeClock()
    runs: list[dict] = []
    params = (ToolParameter("city", "string", required=True), ToolParameter("unit", "string"))
    t = tool("weather", est=300, idempotent=True, cacheable=30, calls=runs, params=params)
    engine = engine_for(settings_for(tmp_path, ["weather"]), t, clock=clock)
    sub = engine.bus.subscribe(types={"tool.completed"})
    call = session_on("deep", {"weather"})
    first = await engine.execute_tool(call, "weather", {"city": "Oslo", "unit": "c"})
    second = await engine.execute_tool(call, "weather", {"unit": "c", "city": "Oslo"})
    assert (first.status, second.status) == ("success", "success")
    assert (first.cache_hit, second.cache_hit) == (False, True) and len(runs) == 1
    assert [e.cache_hit for e in only(sub.drain(), ToolCompleted)] == [False, True]
    assert 'ai_agent_mcp_tool_cache_hits_total{tool="weather"} 1.0' in engine.metrics.render().decode()
    clock.advance(31)
    third = await engine.execute_tool(call, "weather", {"city": "Oslo", "unit": "c"})
    assert not third.cache_hit and len(runs) == 2
    window = engine.budget.book.get(engine.budget.board.key_for(t.definition))
    assert window is not None and len(window) == 2  # cache hits do not enter the latency book
