"""OAuth as real servers behave over time: a sign-out in another terminal reaches a running engine, and an
authorization server that forgot the client's registration (it keeps them in memory and restarted) is recovered from.

The peers are real (``oauth_server.py``: the SDK's own authorization server and a protected ``MCPServer``); the CLI
is the installed ``ava-engine`` sharing a file keyring with the engine in this process (the console's engine).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from engine.config import load_settings
from engine.operator.tool_bench import UnknownTool, call_tool
from tests.engine.http.helpers import http_of
from tests.engine.mcp.helpers import wait_for
from tests.engine.mcp.oauth_helpers import Cli, OAuthPeer, config_text, stored_secrets


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(tmp_path: Path, ring: Path, peers: list[OAuthPeer], *, http: bool = False) -> tuple[OAuthPeer, Cli]:
    peer = OAuthPeer()
    peers.append(peer)
    config = tmp_path / "config.yaml"
    # a fixed redirect port, as an operator who registered it sets: the registration is reused across sign-ins
    text = config_text(peer.url).replace(
        "client_name: ava tests", f"client_name: ava tests\n          redirect_port: {_free_port()}"
    )
    config.write_text(text.replace("http: {enabled: false}", "http: {port: 0}") if http else text)
    return peer, Cli(config, ring)


async def _prot_status(engine: Any) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{http_of(engine).url}/mcp/status") as r:
        assert r.status == 200
        body = await r.json()
    return dict(next(s for s in body["servers"] if s["id"] == "prot"))


async def test_logout_in_another_terminal_reaches_the_running_engine(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any
) -> None:
    _, cli = _setup(tmp_path, ring, peers, http=True)
    code, _, err = cli.login("prot")
    assert code == 0, err
    engine = await make_engine(load_settings(cli.config), serve_http=True)
    sup = engine.mcp.supervisors["prot"]
    assert sup.state == "up", sup.last_error
    before = await _prot_status(engine)
    assert before["auth"]["signed_in"] is True and before["tool_count"] == 1
    assert (await call_tool(engine, "mcp_prot_whoami", {})).status == "success"

    code, out, err = cli.run("--json", "mcp", "logout", "prot")
    assert code == 0 and json.loads(out)["had_tokens"] is True, err
    assert stored_secrets(ring) == []
    # the server still accepts the old token (logout only forgets it here): only the engine's own look at the
    # keyring can notice
    await wait_for(lambda: sup.state == "needs sign-in", limit_s=30, interval=0.05)
    assert "mcp_prot_whoami" not in engine.registry.names()
    after = await _prot_status(engine)
    assert after["state"] == "needs sign-in" and after["tools"] == []
    assert after["auth"]["signed_in"] is False
    assert "ava-engine mcp login prot" in after["last_error"] and "signed out" in after["last_error"]
    with pytest.raises(UnknownTool):  # its tools left the calls' views
        await call_tool(engine, "mcp_prot_whoami", {})

    # and back: a sign-in in the other terminal is picked up the same way
    code, _, err = cli.login("prot")
    assert code == 0, err
    await wait_for(lambda: sup.state == "up", limit_s=30, interval=0.05)
    assert (await _prot_status(engine))["auth"]["signed_in"] is True
    assert (await call_tool(engine, "mcp_prot_whoami", {})).status == "success"


async def test_a_forgotten_client_registration_is_registered_again(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer]
) -> None:
    peer, cli = _setup(tmp_path, ring, peers)
    code, _, err = cli.login("prot")
    assert code == 0, err
    assert peer.stats()["registrations"] == 1
    peer.forget_clients()  # the authorization server restarted: "Client ID not found" on its authorize page

    # the sign-in must not send the operator to that page and then wait for the timeout
    code, lines, err = cli.login("prot", timeout_s=20)
    assert code == 0, err
    assert lines[-1]["signed_in"] is True and lines[-1]["tools"] == ["whoami"]
    assert peer.stats()["registrations"] == 2
    code, out, err = cli.run("--json", "mcp", "test", "prot")
    assert code == 0 and json.loads(out)["ok"] is True, err


async def test_a_refresh_refused_as_invalid_client_drops_the_registration(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any
) -> None:
    """The engine's own refresh meets the forgotten client: the server waits for sign-in saying why, the stale
    registration is gone, and the next sign-in registers again straight away."""
    peer, cli = _setup(tmp_path, ring, peers)
    code, _, err = cli.login("prot")
    assert code == 0, err
    engine = await make_engine(load_settings(cli.config))
    sup = engine.mcp.supervisors["prot"]
    assert sup.state == "up"
    peer.forget_clients()
    peer.revoke_access()  # the next call's 401 makes the engine refresh, which the server refuses: invalid_client
    refused = await call_tool(engine, "mcp_prot_whoami", {})
    assert refused.status != "success"
    await wait_for(lambda: sup.state == "needs sign-in", limit_s=30, interval=0.05)
    assert sup.last_error is not None and "no longer knows this client" in sup.last_error
    assert "ava-engine mcp login prot" in sup.last_error
    assert sup._tokens is not None and sup._tokens.client_info() is None  # the stale registration is gone
    code, _, err = cli.login("prot", timeout_s=20)
    assert code == 0, err
    assert peer.stats()["registrations"] == 2
    await wait_for(lambda: sup.state == "up", limit_s=30, interval=0.05)
