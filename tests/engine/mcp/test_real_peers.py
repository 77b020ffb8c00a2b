"""Real MCP servers as peers: npm server-everything (stdio and streamable HTTP) and PyPI mcp-server-time (stdio)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from engine.events import ToolProgressed
from tests.engine.mcp.helpers import EVERYTHING_BIN, settings
from tests.waiting import wait_until_sync

needs_everything = pytest.mark.skipif(
    not EVERYTHING_BIN.exists(),
    reason=f"{EVERYTHING_BIN} is missing: run `make test` (or npm install tests/peers/package.json into .peers/)",
)


async def call(engine: Any, name: str, args: dict[str, Any]) -> Any:
    return await engine.executor.execute(None, name, args, allowed=frozenset({name}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def everything_http() -> Iterator[str]:
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PORT": str(port)}
    proc = subprocess.Popen(
        [str(EVERYTHING_BIN), "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def up() -> bool:
            if proc.poll() is not None:
                pytest.fail("server-everything (streamableHttp) exited at start")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    return True
            except OSError:
                return False

        wait_until_sync(up, within=10, what="server-everything (streamableHttp) listening")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(5)


async def _exercise_everything(engine: Any, sid: str) -> None:
    st = engine.server_status()["servers"][0]
    assert st["state"] == "up" and st["protocol_version"] == "2025-11-25"  # a handshake-era server under auto
    names = {t["exposed_name"] for t in st["tools"]}
    assert {f"mcp_{sid}_echo", f"mcp_{sid}_get_sum", f"mcp_{sid}_get_structured_content"} <= names
    r = await call(engine, f"mcp_{sid}_echo", {"message": "hi"})
    assert r.status == "success" and "hi" in r.message
    r = await call(engine, f"mcp_{sid}_get_structured_content", {"location": "New York"})
    assert r.status == "success" and set(r.data) == {"temperature", "conditions", "humidity"}
    r = await call(engine, f"mcp_{sid}_get_tiny_image", {})
    assert r.status == "success" and r.data["attachments"][0]["type"] == "image"
    assert r.data["attachments"][0]["size_bytes"] > 0
    r = await call(engine, f"mcp_{sid}_gzip_file_as_resource", {"name": "x.gz", "data": "http://127.0.0.1:9/none"})
    assert r.status == "error"
    sub = engine.bus.subscribe()
    r = await call(engine, f"mcp_{sid}_trigger_long_running_operation", {"duration": 0.3, "steps": 3})
    assert r.status == "success"
    assert len([e for e in sub.drain() if isinstance(e, ToolProgressed)]) == 3


@needs_everything
async def test_everything_over_stdio_without_the_parent_environment(make_engine: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("AVA_PARENT_SECRET", "must-not-leak")
    cfg = {"transport": "stdio", "command": [str(EVERYTHING_BIN), "stdio"], "env": {"GIVEN": "yes"}}
    engine = await make_engine(settings({"ev": cfg}))
    await _exercise_everything(engine, "ev")
    r = await call(engine, "mcp_ev_get_env", {})
    assert r.data["GIVEN"] == "yes" and "AVA_PARENT_SECRET" not in r.data


@needs_everything
async def test_everything_over_streamable_http(make_engine: Any, everything_http: str) -> None:
    cfg = {"transport": "http", "url": everything_http, "headers": {"X-Test": "1"}}
    engine = await make_engine(settings({"evh": cfg}))
    await _exercise_everything(engine, "evh")


async def test_mcp_server_time_over_stdio(make_engine: Any) -> None:
    cfg = {
        "transport": "stdio",
        "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
        "tools": [{"name": "get_current_time", "speech_template": "It is {datetime} in {timezone}."}],
    }
    engine = await make_engine(settings({"time": cfg}))
    st = engine.server_status()["servers"][0]
    assert st["state"] == "up"
    assert {t["exposed_name"] for t in st["tools"]} == {"mcp_time_get_current_time", "mcp_time_convert_time"}
    r = await call(engine, "mcp_time_get_current_time", {"timezone": "Europe/Paris"})
    assert r.status == "success" and r.data["timezone"] == "Europe/Paris"
    assert r.message.startswith("It is ") and r.message.endswith(" in Europe/Paris.")
    r = await call(engine, "mcp_time_get_current_time", {"timezone": "Not/AZone"})
    assert r.status == "error" and "Not/AZone" in r.message
    await asyncio.sleep(0)
