"""``transport: sse`` against a real SSE server process (the SDK's own server side, tests/fixtures/mcp_servers/).

Through the Engine: discovery and exposed names, calls on the engine's execution path and the CLI's, configured
headers reaching the server (it refuses requests without them), and a server killed mid-session noticed at once
(the SSE stream ends) and reconnected when it is back.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.events import ServerStateChanged
from tests.engine.mcp.helpers import settings, wait_for

KEY = "sse-test-key-7f3a"


async def call(engine: Any, name: str, args: dict[str, Any]) -> Any:
    return await engine.executor.execute(None, name, args, allowed=frozenset({name}))


def sse(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "transport": "sse",
        "url": url,
        "headers": {"X-Api-Key": KEY},
        "connect_timeout_ms": 8000,
        "restart": {"backoff_ms": 50, "backoff_max_ms": 200, "max_restarts": 50},
        **extra,
    }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sse_server_discovery_calls_and_headers(net_server: Any, make_engine: Any, mode: str) -> None:
    server = net_server("sse", "--require-header", f"X-Api-Key={KEY}")
    engine = await make_engine(settings({"remote": sse(server.url, mode=mode)}))
    st = engine.server_status()["servers"][0]
    assert st["state"] == "up" and st["transport"] == "sse" and st["pid"] is None
    assert st["protocol_version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    names = {t["exposed_name"] for t in st["tools"]}
    assert {"mcp_remote_echo", "mcp_remote_add", "mcp_remote_slow", "mcp_remote_seen_header"} <= names
    r = await call(engine, "mcp_remote_echo", {"text": "over sse"})
    assert (r.status, r.message) == ("success", "over sse")
    r = await call(engine, "mcp_remote_add", {"a": 2, "b": 3})
    assert r.status == "success" and r.data == {"sum": 5, "a": 2, "b": 3}
    r = await call(engine, "mcp_remote_seen_header", {"name": "X-Api-Key"})
    # the header rode on the POST that carried the call (the server answers a digest: the engine masks secrets)
    assert r.status == "success" and r.message == hashlib.sha256(KEY.encode()).hexdigest()
    r = await call(engine, "mcp_remote_fail", {"reason": "nope"})
    assert r.status == "error" and "nope" in r.message


async def test_sse_wrong_header_is_refused_without_leaking_it(net_server: Any, make_engine: Any) -> None:
    server = net_server("sse", "--require-header", f"X-Api-Key={KEY}")
    wrong = sse(server.url, headers={"X-Api-Key": "wrong-secret-value"}, restart={"enabled": False})
    engine = await make_engine(settings({"remote": wrong}))
    st = engine.server_status()["servers"][0]
    assert st["state"] == "failed" and "401" in st["last_error"]
    assert "wrong-secret-value" not in json.dumps(engine.server_status())


async def test_sse_server_killed_mid_session_is_noticed_and_reconnected(net_server: Any, make_engine: Any) -> None:
    server = net_server("sse", "--require-header", f"X-Api-Key={KEY}")
    engine = await make_engine(settings({"remote": sse(server.url)}))
    sup = engine.mcp.supervisors["remote"]
    sub = engine.bus.subscribe()
    # idle: no call in flight, so only the end of the SSE stream can tell
    server.kill()
    await wait_for(lambda: sup.state != "up")
    assert (sup.last_error or "").startswith("server remote stopped (connection closed")
    r = await call(engine, "mcp_remote_echo", {"text": "anyone?"})
    assert r.status == "error" and "remote" in r.message
    await asyncio.to_thread(server.start)  # back on the same port
    await wait_for(lambda: sup.state == "up", limit_s=20)
    r = await call(engine, "mcp_remote_echo", {"text": "back"})
    assert (r.status, r.message) == ("success", "back")
    states = [e.state for e in sub.drain() if isinstance(e, ServerStateChanged)]
    assert "restarting" in states and states[-1] == "up"
    # busy: a call in flight ends as soon as the server dies, not at its 5 s timeout
    slow = asyncio.ensure_future(call(engine, "mcp_remote_slow", {"seconds": 30}))
    await asyncio.sleep(0.3)
    server.kill()
    r = await asyncio.wait_for(slow, 4)
    assert r.status == "error" and r.message.startswith("server remote stopped")
    await wait_for(lambda: sup.state != "up")
    await asyncio.to_thread(server.start)
    await wait_for(lambda: sup.state == "up", limit_s=20)
    assert sup.restarts_total >= 2
    r = await call(engine, "mcp_remote_echo", {"text": "again"})
    assert (r.status, r.message) == ("success", "again")


def test_sse_call_through_the_cli(net_server: Any, tmp_path: Path, capsys: Any) -> None:
    server = net_server("sse", "--require-header", f"X-Api-Key={KEY}")
    config = tmp_path / "config.yaml"
    config.write_text(f"""mcp:
  servers:
    remote:
      transport: sse
      url: "{server.url}"
      headers:
        X-Api-Key: "{KEY}"
      tools:
        - name: add
          speech_template: "{{a}} and {{b}} make {{sum}}."
""")
    code = main(["--config", str(config), "--json", "mcp", "call", "mcp_remote_add", "--args", '{"a": 4, "b": 5}'])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out == {"status": "success", "message": "4 and 5 make 9.", "data": {"sum": 9, "a": 4, "b": 5}}
    code = main(["--config", str(config), "--json", "mcp", "list"])
    listed = json.loads(capsys.readouterr().out)["servers"][0]
    assert code == 0 and listed["state"] == "up" and listed["transport"] == "sse"
    assert KEY not in json.dumps(listed)
