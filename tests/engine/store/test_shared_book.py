"""The shared latency book (engine.store.shared_book) on a real redis-server: engine A calibrates a tool declared
slow that is fast; engine B of the same environment, started later, shows it in the measured class from its start
(and A's calibration report); engine C of another environment still has only the declaration."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from engine.app import Engine
from engine.budget.stats import Sample
from engine.config.models import Settings
from engine.store.base import calibration_key
from engine.store.shared_book import SharedBook, book_key, tool_key
from engine.tools.base import FunctionTool, LatencyMeta, ToolDefinition, ToolExecutionContext, ToolResult
from tests.engine.core.helpers import settings_with
from tests.engine.store.redis_peer import RedisServer, eventually


def lookup_tool() -> FunctionTool:
    """Declared to take up to 3 s (the DEEP tier), answers at once; safe to probe."""

    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("found")

    d = ToolDefinition(
        name="lookup", description="Look a thing up.", latency=LatencyMeta(max_duration_ms=3000, idempotent=True)
    )
    return FunctionTool(d, run)


def engine_in(tmp_path: Path, url: str, engine_id: str, environment: str) -> Engine:
    cfg = {"store": url, "id": engine_id, "heartbeat_s": 0.2, "environment": environment}
    return Engine(settings_with(tmp_path, [], ["lookup"], engine=cfg), extra_tools=[lookup_tool()])


def shared_of(engine: Engine) -> SharedBook:
    return next(c for c in engine.components if isinstance(c, SharedBook))


async def test_a_later_engine_starts_with_what_an_earlier_one_measured(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    a = engine_in(tmp_path, redis_server.url, "a", "lab")
    async with a:
        before = a.budget.status("lookup")
        assert before is not None and (before.tier, before.source) == ("deep", "declared max 3000 ms")
        report = await a.calibrate("builtin", probes=6)
        row = next(t for t in report["tools"] if t["exposed_name"] == "lookup")
        assert row["result"] == "calibrated" and row["tier"] == "fast" and row["samples"] == 6
        await eventually(lambda: shared_of(a).samples_written >= 6, what="A's samples shared")
    b = engine_in(tmp_path, redis_server.url, "b", "lab")
    async with b:
        status = b.budget.status("lookup")
        assert status is not None and status.tier == "fast" and status.samples == 6
        assert status.source.startswith("p99 ") and status.badge == "Lightning"
        assert b.budget.last_calibration["builtin"]["engine"] == "a"
        assert shared_of(b).status()["samples_loaded"] >= 6  # lookup's, and other probed built-in tools
        assert "lookup" in [t.name for t in b.context_view("c", "fast").tools]  # shown on FAST from the start
    c = engine_in(tmp_path, redis_server.url, "c", "staging")
    async with c:
        other = c.budget.status("lookup")
        assert other is not None and other.tier == "deep" and other.samples == 0
        assert "builtin" not in c.budget.last_calibration


async def test_shared_keys_and_bad_rows(tmp_path: Path, redis_server: RedisServer) -> None:
    key = ("http://h:1", "srv:x", "tool/with:odd chars")
    assert book_key("lab", tool_key("lab", key)) == key
    assert book_key("lab", "ava:latency:lab:not-json") is None
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    name = tool_key("lab", ("local", "builtin", "lookup"))
    now = time.time()
    await r.lpush(
        name,
        json.dumps([now - 1, 12.5, "success", 0]),
        "garbage",
        json.dumps([now, -5, "success", 0]),
        json.dumps([now - 2, 20.0, "error", 1]),
    )
    await r.hset(calibration_key("lab"), mapping={"builtin": "{not json", "srv": json.dumps({"server": "srv"})})
    engine = engine_in(tmp_path, redis_server.url, "b", "lab")
    async with engine:
        window = engine.budget.book.get(("local", "builtin", "lookup"))
        assert window is not None
        samples: list[Sample] = window.samples()
        got = [(s.duration_ms, s.status, s.is_probe) for s in samples]
        assert got == [(20.0, "error", True), (12.5, "success", False)]  # garbage and a negative time skipped
        assert samples[0].at < samples[1].at <= engine.budget.clock()  # their age came along
        assert engine.budget.last_calibration == {"srv": {"server": "srv"}}
    await r.aclose()


def test_environment_names_are_checked() -> None:
    assert Settings.model_validate({"engine": {"environment": "prod-eu.1"}}).engine.environment == "prod-eu.1"
    for bad in ("has space", "a:b", "", "x*"):
        with pytest.raises(ValueError, match="is not an environment name"):
            Settings.model_validate({"engine": {"environment": bad}})
