"""Remote MCP servers behind OAuth 2.1: sign-in with the installed CLI, calls with the token, refresh, expiry, logout.

The peers are real: the SDK's own authorization server (dynamic registration, PKCE, RFC 8707 ``resource``, RFC 9207
``iss``) and a protected ``MCPServer`` that checks every bearer token (``oauth_server.py``). The test plays the
browser by following the printed URL. No token may appear in any output: CLI stdout/stderr, the status, events, logs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.config import load_settings
from engine.events import ServerStateChanged
from engine.operator.tool_bench import call_tool
from tests.engine.mcp.helpers import FIXTURE_SERVER, wait_for
from tests.engine.mcp.oauth_helpers import Cli, OAuthPeer, config_text, follow, stored_secrets

STDIO_FX = f"""    fx:
      command: ["{__import__("sys").executable}", "{FIXTURE_SERVER}"]
"""


def setup(tmp_path: Path, ring: Path, peers: list[OAuthPeer], *flags: str, extra: str = "") -> tuple[OAuthPeer, Cli]:
    peer = OAuthPeer(*flags)
    peers.append(peer)
    config = tmp_path / "config.yaml"
    config.write_text(config_text(peer.url, extra=extra))
    return peer, Cli(config, ring)


def assert_no_canary(canaries: list[str], *outputs: Any) -> None:
    assert canaries, "no tokens were stored: the canary check would prove nothing"
    text = "\n".join(o if isinstance(o, str) else json.dumps(o, default=str) for o in outputs)
    for canary in canaries:
        assert canary not in text, "an OAuth token leaked into the output"


async def test_sign_in_call_refresh_and_logout(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    peer, cli = setup(tmp_path, ring, peers, "--token-ttl", "4", extra=STDIO_FX)

    code, lines, err = cli.login("prot")
    assert code == 0, err
    first, result = lines[0], lines[-1]
    assert first["authorize_url"].startswith(peer.as_url + "/authorize?")
    assert "code_challenge_method=S256" in first["authorize_url"]  # PKCE
    assert first["redirect_uri"].startswith("http://127.0.0.1:")
    assert result["signed_in"] is True and result["tools"] == ["whoami"] and result["can_refresh"] is True
    stats = peer.stats()
    assert stats["registrations"] == 1 and stats["codes"] == 1  # dynamic registration (no CIMD on loopback)
    assert stats["resources"] == [peer.url]  # RFC 8707: the token is bound to this resource
    first_tokens = stored_secrets(ring)
    assert len(first_tokens) == 2  # access + refresh, in the keyring
    assert peer.url not in (tmp_path / "config.yaml").read_text().split("url:")[0]  # nothing written to the YAML
    assert "access_token" not in (tmp_path / "config.yaml").read_text()

    engine = await make_engine(load_settings(tmp_path / "config.yaml"))
    sub = engine.bus.subscribe()
    status = engine.server_status()["servers"]
    prot = next(s for s in status if s["id"] == "prot")
    assert prot["state"] == "up", prot["last_error"]
    assert prot["auth"]["type"] == "oauth" and prot["auth"]["signed_in"] is True
    result1 = await call_tool(engine, "mcp_prot_whoami", {})
    assert result1.status == "success" and result1.message.startswith("client ")

    # the token lives 4 s: the engine refreshes it before it expires, with no call in between
    await wait_for(lambda: peer.stats()["refreshed"] >= 1, limit_s=30, interval=0.2)
    await wait_for(lambda: stored_secrets(ring)[0] != first_tokens[0], limit_s=5)
    result2 = await call_tool(engine, "mcp_prot_whoami", {})
    assert result2.status == "success"
    assert engine.mcp.supervisors["prot"].state == "up"
    second_tokens = stored_secrets(ring)

    # logout: tokens gone; a restart then waits for sign-in, the other server untouched
    code, out, err = cli.run("--json", "mcp", "logout", "prot")
    assert code == 0 and json.loads(out) == {"server": "prot", "signed_out": True, "had_tokens": True}
    assert stored_secrets(ring) == []
    await engine.restart_server("prot")
    await wait_for(lambda: engine.mcp.supervisors["prot"].state == "needs sign-in")
    assert "mcp_prot_whoami" not in engine.registry.names()
    assert engine.mcp.supervisors["fx"].state == "up"
    blocked = await call_tool(engine, "mcp_fx_add", {"a": 1, "b": 2})
    assert blocked.status == "success"

    events = []
    while (ev := sub.get_nowait()) is not None:
        events.append(ev)
    assert any(isinstance(e, ServerStateChanged) and e.state == "needs sign-in" for e in events)
    assert_no_canary(
        first_tokens + second_tokens,
        *cli.output,
        engine.server_status(),
        [e.__dict__ if hasattr(e, "__dict__") else repr(e) for e in events],
        result1.to_dict(),
        result2.to_dict(),
        caplog.text,
    )


async def test_expired_token_without_refresh_needs_sign_in(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any
) -> None:
    # the engine runs first and picks the sign-in up (within a second): the token's lifetime then only has to
    # cover that pick-up, not an engine start too
    peer, cli = setup(tmp_path, ring, peers, "--token-ttl", "12", "--no-refresh", extra=STDIO_FX)
    engine = await make_engine(load_settings(tmp_path / "config.yaml"))
    sup = engine.mcp.supervisors["prot"]
    assert sup.state == "needs sign-in"
    code, lines, err = cli.login("prot")
    assert code == 0 and lines[-1]["can_refresh"] is False, err
    tokens = stored_secrets(ring)
    await wait_for(lambda: sup.state == "up", limit_s=10, interval=0.05)
    assert "mcp_prot_whoami" in engine.registry.names()

    await wait_for(lambda: sup.state == "needs sign-in", limit_s=45, interval=0.05)
    assert "mcp_prot_whoami" not in engine.registry.names()  # its tools withdrawn
    assert engine.mcp.supervisors["fx"].state == "up"  # the rest untouched
    status = next(s for s in engine.server_status()["servers"] if s["id"] == "prot")
    assert status["state"] == "needs sign-in"
    assert "ava-engine mcp login prot" in status["last_error"]
    assert not await sup.wait_up(0.5)  # no new attempt on its own: it waits for a sign-in
    assert sup.state == "needs sign-in"

    # a fresh engine (the CLI's `mcp list`) with the expired token: needs sign-in at once, no browser, no wait
    code, out, err = cli.run("--json", "mcp", "list")
    assert code == 0, err
    listed = {s["id"]: s for s in json.loads(out)["servers"]}
    assert listed["prot"]["state"] == "needs sign-in" and listed["prot"]["tools"] == []
    assert listed["fx"]["state"] == "up"
    assert peer.stats()["registrations"] == 1  # the engine never registers a client on its own

    # signing in from another terminal: the running engine notices the new tokens and connects
    code, _, err = cli.login("prot")
    assert code == 0, err
    await wait_for(lambda: sup.state == "up", limit_s=15, interval=0.05)
    assert "mcp_prot_whoami" in engine.registry.names()
    assert_no_canary(tokens + stored_secrets(ring), *cli.output, engine.server_status())


async def test_never_signed_in_is_needs_sign_in_without_touching_the_server(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any
) -> None:
    peer, cli = setup(tmp_path, ring, peers)
    engine = await make_engine(load_settings(tmp_path / "config.yaml"))
    sup = engine.mcp.supervisors["prot"]
    assert sup.state == "needs sign-in"
    assert sup.last_error is not None and "mcp login prot" in sup.last_error
    assert peer.stats() == {
        "cimd_fetches": [],
        "registrations": 0,
        "codes": 0,
        "refreshed": 0,
        "access_tokens": 0,
        "resources": [],
    }
    assert "mcp_prot_whoami" not in engine.registry.names()
    assert "needs sign-in" in engine.server_status()["servers"][0]["state"]
    code, out, _ = cli.run("--json", "mcp", "test", "prot")
    assert code == 1 and "needs sign-in" in json.loads(out)["error"]

    # the console's way in: the engine's sign-in (a URL to show, a loopback listener), then the server is up
    shown: list[str] = []

    async def show(url: str) -> None:
        shown.append(url)
        asyncio.get_running_loop().create_task(asyncio.to_thread(follow, url))

    report = await engine.sign_in_server("prot", show, timeout_s=20)
    assert report["state"] == "up" and report["tools"] == ["whoami"] and shown
    assert (await call_tool(engine, "mcp_prot_whoami", {})).status == "success"
    code, out, _ = cli.run("--json", "mcp", "test", "prot")  # a fresh connection with the stored token
    assert code == 0 and json.loads(out)["ok"] is True
    out_report = await engine.sign_out_server("prot")
    assert out_report["had_tokens"] is True and out_report["state"] == "needs sign-in"
    assert stored_secrets(ring) == []


async def test_a_refused_token_is_refreshed_without_a_browser(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any
) -> None:
    """The server forgets its access tokens (a restart): the next call gets a 401, the engine refreshes and retries."""
    peer, cli = setup(tmp_path, ring, peers)
    code, _, err = cli.login("prot")
    assert code == 0, err
    engine = await make_engine(load_settings(tmp_path / "config.yaml"))
    assert engine.mcp.supervisors["prot"].state == "up"
    peer.revoke_access()
    result = await call_tool(engine, "mcp_prot_whoami", {})
    assert result.status == "success", result.message
    assert peer.stats()["refreshed"] == 1
    assert engine.mcp.supervisors["prot"].state == "up"


async def test_http_mcp_status_shows_needs_sign_in(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any
) -> None:
    import aiohttp

    from tests.engine.http.helpers import http_of

    peer = OAuthPeer()
    peers.append(peer)
    config = tmp_path / "config.yaml"
    config.write_text(config_text(peer.url).replace("http: {enabled: false}", "http: {port: 0}"))
    engine = await make_engine(load_settings(config), serve_http=True)
    async with aiohttp.ClientSession() as http, http.get(f"{http_of(engine).url}/mcp/status") as r:
        assert r.status == 200
        body = await r.json()
    prot = next(s for s in body["servers"] if s["id"] == "prot")
    assert prot["state"] == "needs sign-in" and prot["tools"] == []
    assert prot["auth"] == {
        "type": "oauth",
        "signed_in": False,
        "expires_at": None,
        "can_refresh": False,
        "scope": None,
    }
    assert "ava-engine mcp login prot" in prot["last_error"]
