"""OAuth faults end in a clear message on that server only: no discovery metadata, the AS refusing, its token
endpoint down; and bad ``auth`` config is a config error naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from engine.config import ConfigError, load_settings
from engine.operator.tool_bench import call_tool
from tests.engine.mcp.helpers import wait_for
from tests.engine.mcp.oauth_helpers import Cli, OAuthPeer, config_text, follow, stored_secrets


def setup(tmp_path: Path, ring: Path, peers: list[OAuthPeer], *flags: str) -> tuple[OAuthPeer, Cli]:
    peer = OAuthPeer(*flags)
    peers.append(peer)
    config = tmp_path / "config.yaml"
    config.write_text(config_text(peer.url))
    return peer, Cli(config, ring)


def test_401_without_discovery_metadata(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    _, cli = setup(tmp_path, ring, peers, "--bare-401")
    code, lines, _ = cli.login("prot", browse=False)
    assert code == 1
    error = lines[-1]["error"]
    assert error.startswith("server prot answered 401 but publishes no OAuth discovery metadata"), error
    assert stored_secrets(ring) == []


def test_authorization_server_refuses(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    _, cli = setup(tmp_path, ring, peers, "--deny")
    code, lines, _ = cli.login("prot")
    assert code == 1
    assert "authorize_url" in lines[0]
    assert (
        lines[-1]["error"] == "server prot: the authorization server refused sign-in (access_denied: the user said no)"
    )
    assert stored_secrets(ring) == []


def test_a_redirect_with_another_state_is_ignored_and_the_real_one_completes(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer]
) -> None:
    """Any page the operator's browser opens can send it to the loopback listener: a redirect that does not carry
    this sign-in's ``state`` (forged code, forged error, none) gets a 400 page and changes nothing."""
    peer, cli = setup(tmp_path, ring, peers)
    pages: list[tuple[int, str]] = []

    def intruder(first: dict[str, Any]) -> None:
        state = parse_qs(urlsplit(first["authorize_url"]).query)["state"][0]
        for query in (
            {"code": "forged", "state": "not-" + state},
            {"code": "forged"},
            {"code": "forged", "state": ""},
            {"code": "forged", "state": state[:-1]},
            {"error": "access_denied", "state": "not-" + state},
            {"error": "access_denied"},
            {},
        ):
            pages.append(follow(f"{first['redirect_uri']}?{urlencode(query)}"))

    code, lines, err = cli.login("prot", before_browser=intruder)
    assert code == 0, (lines, err)
    assert lines[-1]["signed_in"] is True and lines[-1]["tools"] == ["whoami"]
    assert peer.stats()["codes"] == 1
    assert len(pages) == 7
    for status, page in pages:
        assert status == 400 and "this sign-in link is not the one ava-engine is waiting for" in page, page
    assert len(stored_secrets(ring)) == 2


def test_redirect_from_another_issuer_is_refused(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    """RFC 9207: the redirect's ``iss`` must be the authorization server's own issuer (a mix-up attack otherwise)."""
    _, cli = setup(tmp_path, ring, peers, "--wrong-iss")
    code, lines, _ = cli.login("prot")
    assert code == 1
    assert lines[-1]["error"].startswith("server prot: OAuth sign-in failed: Authorization response iss mismatch")
    assert stored_secrets(ring) == []


def test_login_and_logout_usage_errors(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    _, cli = setup(tmp_path, ring, peers)
    code, out, _ = cli.run("--json", "mcp", "login", "nope")
    assert code == 2 and "unknown MCP server 'nope'" in json.loads(out)["error"]
    code, out, _ = cli.run("--json", "mcp", "logout", "prot")
    assert code == 0 and json.loads(out)["had_tokens"] is False


async def test_token_endpoint_down(tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any) -> None:
    peer, cli = setup(tmp_path, ring, peers, "--token-ttl", "6")
    code, _, err = cli.login("prot")
    assert code == 0, err
    tokens = stored_secrets(ring)
    engine = await make_engine(load_settings(tmp_path / "config.yaml"))
    sup = engine.mcp.supervisors["prot"]
    assert sup.state == "up"
    peer.as_down()  # the refresh (due 1.2 s before expiry) meets a closed port
    await wait_for(lambda: sup.last_error is not None and "token endpoint" in sup.last_error, limit_s=15)
    assert sup.last_error is not None
    assert "server prot: the authorization server's token endpoint" in sup.last_error
    assert "did not answer" in sup.last_error
    await wait_for(lambda: sup.state == "failed", limit_s=15)
    result = await call_tool(engine, "mcp_prot_whoami", {}) if "mcp_prot_whoami" in engine.registry.names() else None
    assert result is None  # its tools were withdrawn with it
    text = json.dumps(engine.server_status())
    assert all(t not in text for t in tokens)


@pytest.mark.parametrize(
    ("auth", "where", "message"),
    [
        ("{oauth: {scopes: ['two words']}}", "mcp.servers.prot.auth.oauth.scopes", "must be one word"),
        ("{oauth: {client_metadata_url: 'http://example.com/c.json'}}", "client_metadata_url", "https URL"),
        ("{oauth: {redirect_port: 70000}}", "redirect_port", "65535"),
        ("{oauth: {client_secret: x}}", "mcp.servers.prot.auth.oauth.client_secret", "needs the client_id"),
        (
            "{oauth: {client_id: a, client_metadata_url: 'https://example.com/c.json'}}",
            "client_metadata_url",
            "either client_id",
        ),
        ("{oauth: {client_token: x}}", "mcp.servers.prot.auth.oauth.client_token", "unknown key"),
        ("{}", "oauth", "required"),
    ],
)
def test_bad_auth_config(tmp_path: Path, auth: str, where: str, message: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"mcp:\n  servers:\n    prot:\n      transport: http\n      url: http://127.0.0.1:1/mcp\n      auth: {auth}\n"
    )
    with pytest.raises(ConfigError) as e:
        load_settings(config)
    assert where in str(e.value) and message in str(e.value)


def test_auth_only_on_http(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  servers:\n    prot:\n      transport: sse\n"
        "      url: http://127.0.0.1:1/sse\n      auth: {oauth: {}}\n"
    )
    with pytest.raises(ConfigError) as e:
        load_settings(config)
    assert "mcp.servers.prot.auth" in str(e.value) and "only an http" in str(e.value)
