"""Host lifecycle: in-process servers, lazy start, hot reload by diff, operator test, HTTP endpoints."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from engine.app import Engine
from engine.config.models import Settings
from tests.engine.mcp.helpers import settings, stdio, wait_for

INPROC = {"transport": "inprocess", "target": "tests.fixtures.mcp_servers.inproc:server"}


async def call(engine: Any, name: str, args: dict[str, Any]) -> Any:
    return await engine.executor.execute(None, name, args, allowed=frozenset({name}))


async def test_inprocess_server_in_both_modes(make_engine: Any) -> None:
    engine = await make_engine(
        settings(
            {
                "hi": INPROC,
                "leg": {**INPROC, "mode": "legacy"},
                "fresh": {"transport": "inprocess", "target": "tests.fixtures.mcp_servers.inproc:make"},
            }
        )
    )
    st = {s["id"]: s for s in engine.server_status()["servers"]}
    assert st["hi"]["state"] == "up" and st["hi"]["pid"] is None
    assert st["leg"]["protocol_version"] == "2025-11-25"
    r = await call(engine, "mcp_hi_greet", {"name": "Ada"})
    assert (r.status, r.message) == ("success", "Hello, Ada!")
    r = await call(engine, "mcp_fresh_ping", {})
    assert r.message == "pong"


async def test_bad_inprocess_target_fails_with_a_clear_error(make_engine: Any) -> None:
    engine = await make_engine(
        settings({"bad": {"transport": "inprocess", "target": "no.such.module:server", "restart": {"enabled": False}}})
    )
    st = engine.server_status()["servers"][0]
    assert st["state"] == "failed" and "cannot import 'no.such.module'" in st["last_error"]


async def test_lazy_server_starts_on_first_use(make_engine: Any) -> None:
    engine = await make_engine(settings({"lz": {**INPROC, "start": "lazy"}}))
    sup = engine.mcp.supervisors["lz"]
    assert sup.state == "stopped" and engine.registry.by_server("lz") == []
    assert await engine.mcp.ensure_started("lz")
    assert engine.registry.get("mcp_lz_greet") is not None


async def test_reload_restarts_only_changed_servers(make_engine: Any) -> None:
    s1 = settings({"keep": stdio(), "change": stdio(), "drop": INPROC})
    engine: Engine = await make_engine(s1)
    pids = {s["id"]: s["pid"] for s in engine.server_status()["servers"]}
    s2 = settings({"keep": stdio(), "change": stdio(defaults={"timeout_ms": 1234}), "new": INPROC})
    await engine.reload(s2)
    st = {s["id"]: s for s in engine.server_status()["servers"]}
    assert set(st) == {"keep", "change", "new"}
    assert st["keep"]["pid"] == pids["keep"]
    assert st["change"]["pid"] != pids["change"] and st["change"]["state"] == "up"
    assert st["change"]["tools"][0]["timeout_ms"] == 1234
    assert st["new"]["state"] == "up"
    assert engine.registry.by_server("drop") == []
    # switched off for this run: a reload that leaves its entry alone leaves it off; editing the entry applies it
    await engine.set_server_enabled("keep", False)
    await engine.reload(settings({"keep": stdio(), "change": stdio(defaults={"timeout_ms": 1234})}))
    st = {s["id"]: s for s in engine.server_status()["servers"]}
    assert st["keep"]["state"] == "stopped" and st["change"]["state"] == "up" and "new" not in st
    await engine.reload(settings({"keep": stdio(defaults={"timeout_ms": 999}), "change": stdio()}))
    assert engine.server_status()["servers"][0]["state"] == "up"


async def test_test_server_with_an_unsaved_config(make_engine: Any) -> None:
    engine = await make_engine(settings({}))
    report = await engine.test_server({"id": "probe", **stdio()})
    assert report["ok"] and report["protocol_version"] == "2026-07-28"
    assert {"connect_initialize", "list_tools", "total"} <= set(report["timings_ms"])
    assert any(t["exposed_name"] == "mcp_probe_echo" for t in report["tools"])
    bad = await engine.test_server({"transport": "stdio", "command": ["/no/such/binary"]})
    assert not bad["ok"] and "/no/such/binary" in bad["error"]


async def test_http_endpoints(make_engine: Any) -> None:
    s = Settings.model_validate(
        {
            "engine": {"http": {"enabled": True, "port": 0, "auth_token": "s3cret"}},
            "mcp": {"servers": {"hi": INPROC}},
        }
    )
    engine = await make_engine(s, serve_http=True)
    http = next(c for c in engine.components if c.name == "http")
    base = http.url
    auth = {"Authorization": "Bearer s3cret"}
    as_json = {**auth, "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{base}/health") as r:
            assert r.status == 200 and (await r.json())["status"] == "ok"
        async with client.get(f"{base}/ready") as r:
            assert r.status == 200
        async with client.get(f"{base}/mcp/status") as r:
            assert r.status == 401 and "s3cret" not in await r.text()
        async with client.get(f"{base}/mcp/status", headers=auth) as r:
            body = await r.json()
            assert body["servers"][0]["id"] == "hi" and body["servers"][0]["state"] == "up"
        async with client.get(f"{base}/metrics", headers=auth) as r:
            assert 'ai_agent_mcp_server_up{server="hi"} 1.0' in await r.text()
        async with client.post(f"{base}/mcp/test/hi", headers=auth) as r:
            assert (await r.json())["ok"] is True
        async with client.post(f"{base}/mcp/test/new", headers=as_json, data=json.dumps(INPROC)) as r:
            assert (await r.json())["tools"][0]["exposed_name"] == "mcp_new_greet"
        async with client.post(f"{base}/mcp/test/new", headers=as_json, data=json.dumps({"transport": "http"})) as r:
            assert r.status == 400 and "url" in (await r.json())["error"]
        async with client.post(f"{base}/mcp/test/nope", headers=auth) as r:
            assert r.status == 404
        engine.ready = False
        engine.not_ready_reason = "stopping"
        async with client.get(f"{base}/ready") as r:
            assert r.status == 503 and (await r.json())["reason"] == "stopping"


async def test_ready_waits_for_eager_servers(make_engine: Any) -> None:
    engine = await make_engine(settings({"slow": stdio("--slow-start", "0.5")}), start=False)
    import asyncio

    starting = asyncio.ensure_future(engine.start())
    from engine.http.app import ready_state

    await wait_for(lambda: engine.mcp.pending() == ["slow"])
    ok, reason = ready_state(engine.http_backend())
    assert not ok and reason == "waiting for MCP servers: slow"
    await starting
    assert ready_state(engine.http_backend()) == (True, "")


async def test_servers_see_the_engine_by_its_name_in_both_protocol_eras(make_engine: Any) -> None:
    """A server's logs and its operator see which client called (``clientInfo``): the engine, not the SDK default."""
    from engine import __version__

    who = {"transport": "inprocess", "target": "tests.fixtures.mcp_servers.inproc:who"}
    engine = await make_engine(settings({"new": who, "old": {**who, "mode": "legacy"}}))
    for server in ("new", "old"):
        r = await call(engine, f"mcp_{server}_who", {})
        assert (r.status, r.message) == ("success", f"ava-engine {__version__}"), server
