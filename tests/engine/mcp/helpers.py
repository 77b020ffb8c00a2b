"""Builders shared by the MCP host tests: fixture-server configs, settings, polling."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from engine.config.models import Settings

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "mcp_servers"
FIXTURE_SERVER = str(FIXTURES / "fixture_server.py")
EVERYTHING_BIN = ROOT / ".peers" / "node_modules" / ".bin" / "mcp-server-everything"


def stdio(*args: str, **extra: Any) -> dict[str, Any]:
    """A stdio server config running the fixture server with ``args``."""
    cfg: dict[str, Any] = {"transport": "stdio", "command": [sys.executable, FIXTURE_SERVER, *args],
                           "connect_timeout_ms": 8000,
                           "restart": {"backoff_ms": 20, "backoff_max_ms": 100, "max_restarts": 2}}
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    return cfg


def settings(servers: dict[str, dict[str, Any]], **engine: Any) -> Settings:
    eng = {"http": {"enabled": False}, "tool_timeout_ms": 5000, **engine}
    return Settings.model_validate({"engine": eng, "mcp": {"servers": servers}})


async def wait_for(predicate: Any, limit_s: float = 8.0, interval: float = 0.02) -> None:
    """Poll ``predicate()`` until true (state changes happen in background tasks)."""
    deadline = asyncio.get_running_loop().time() + limit_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(interval)
