"""Builders shared by the MCP host tests: fixture-server configs, settings, polling, network fixture servers."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.config.models import Settings

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "mcp_servers"
FIXTURE_SERVER = str(FIXTURES / "fixture_server.py")
NET_SERVER = str(FIXTURES / "net_server.py")
EVERYTHING_BIN = ROOT / ".peers" / "node_modules" / ".bin" / "mcp-server-everything"


def stdio(*args: str, **extra: Any) -> dict[str, Any]:
    """A stdio server config running the fixture server with ``args``."""
    cfg: dict[str, Any] = {
        "transport": "stdio",
        "command": [sys.executable, FIXTURE_SERVER, *args],
        "connect_timeout_ms": 8000,
        "restart": {"backoff_ms": 20, "backoff_max_ms": 100, "max_restarts": 2},
    }
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


class NetServer:
    """``net_server.py`` as a child process on 127.0.0.1: an ephemeral port, killed and started again on it."""

    def __init__(self, transport: str, *args: str) -> None:
        self.transport = transport
        self.args = args
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'sse' if self.transport == 'sse' else 'mcp'}"

    def start(self) -> NetServer:
        """Start (on the port it had, after a kill) and return once its socket listens."""
        proc = subprocess.Popen(
            [sys.executable, NET_SERVER, "--transport", self.transport, "--port", str(self.port), *self.args],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.proc = proc
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline().decode() if ready else ""
        if not line.startswith("PORT "):
            self.kill()
            raise AssertionError(f"net_server.py did not start (exit code {proc.poll()})")
        self.port = int(line.split()[1])
        return self

    def kill(self) -> None:
        """SIGKILL its process group (no goodbye on the wire) and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
