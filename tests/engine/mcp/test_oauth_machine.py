"""``auth.oauth.grant: client_credentials`` against a loopback authorization server the test starts.

The peer (``oauth_machine_server.py``) issues short-lived tokens for one client, checks its secret (HTTP Basic) or
its signed assertion (``private_key_jwt``), and guards an SDK ``MCPServer``. No person, no browser: a supervised
connection gets its token on connect, again before it expires and again after the server forgot it; ``mcp login``
fetches one as a test; a wrong secret or an unreadable key says which key to fix. No secret or token in any output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from engine.config import load_settings
from engine.config.secrets import set_secret
from engine.operator.tool_bench import call_tool
from tests.engine.mcp.helpers import FIXTURES, wait_for
from tests.engine.mcp.oauth_helpers import Cli, OAuthPeer, stored_secrets

MACHINE_SERVER = str(FIXTURES / "oauth_machine_server.py")
SECRET = "cc-secret-canary-7Hq2"


def _config(tmp_path: Path, peer: OAuthPeer, credentials: str) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"""engine:
  http: {{enabled: false}}
  tool_timeout_ms: 5000
mcp:
  servers:
    prot:
      transport: http
      url: "{peer.url}"
      connect_timeout_ms: 8000
      restart: {{backoff_ms: 50, backoff_max_ms: 200, max_restarts: 2}}
      auth:
        oauth:
          grant: client_credentials
          client_id: cc-client
          issuer: "{peer.as_url}"
          {credentials}
"""
    )
    return config


def _peer(peers: list[OAuthPeer], *flags: str) -> OAuthPeer:
    peer = OAuthPeer(*flags, script=MACHINE_SERVER)
    peers.append(peer)
    return peer


async def test_a_token_on_connect_before_expiry_and_after_a_401(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer], make_engine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    peer = _peer(peers, "--client-secret", SECRET, "--token-ttl", "3")
    cli = Cli(_config(tmp_path, peer, 'client_secret: "${keyring:cc_secret}"'), ring)
    set_secret("cc_secret", SECRET)  # the file keyring the CLI children share

    # no login first: the engine gets its own token on connect
    engine = await make_engine(load_settings(tmp_path / "config.yaml"))
    sup = engine.mcp.supervisors["prot"]
    assert sup.state == "up", sup.last_error
    first = await call_tool(engine, "mcp_prot_whoami", {})
    assert first.status == "success" and first.message == "client cc-client"
    assert peer.stats()["methods"] == ["client_secret_basic"] and peer.stats()["resources"] == [peer.url]
    assert stored_secrets(ring)  # kept in the keyring like a person's sign-in

    # the token lives 3 s: a new one comes before it expires, with no call in between
    await wait_for(lambda: peer.stats()["tokens"] >= 2, limit_s=30, interval=0.1)
    assert sup.state == "up"
    # the server forgets every token: the next call's 401 gets a new one, and the call goes through
    issued = peer.stats()["tokens"]
    peer.revoke_access()
    again = await call_tool(engine, "mcp_prot_whoami", {})
    assert again.status == "success", again.message
    assert peer.stats()["tokens"] > issued and peer.stats()["refused"] == []

    # mcp login fetches one as a test and never shows a URL
    code, lines, err = cli.login("prot")
    assert code == 0, err
    assert lines == [lines[-1]] and "authorize_url" not in lines[-1]
    assert lines[-1]["signed_in"] is True and lines[-1]["grant"] == "client_credentials"
    assert lines[-1]["tools"] == ["whoami"]

    canaries = [SECRET, *stored_secrets(ring)]
    text = "\n".join([*cli.output, json.dumps(engine.server_status(), default=str), caplog.text])
    assert all(c not in text for c in canaries), "a secret or token leaked into the output"


def test_a_refused_secret_names_the_keys_to_fix(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    peer = _peer(peers, "--client-secret", SECRET)
    cli = Cli(_config(tmp_path, peer, 'client_secret: "${keyring:cc_secret}"'), ring)
    set_secret("cc_secret", "not-the-secret")
    code, out, err = cli.run("mcp", "login", "prot")
    assert code == 1 and peer.stats()["refused"] == ["invalid_client"]
    assert (
        "server prot: the authorization server does not accept client_id 'cc-client' "
        "(mcp.servers.prot.auth.oauth.client_id / client_secret)" in err
    ), err
    assert "not-the-secret" not in out + err and "authorize" not in out + err


def test_private_key_jwt_and_a_key_file_that_is_gone(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = tmp_path / "client.pub"
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    private = tmp_path / "client.pem"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    peer = _peer(peers, "--public-key", str(public))
    cli = Cli(_config(tmp_path, peer, f'private_key_file: "{private}"'), ring)
    code, lines, err = cli.login("prot")
    assert code == 0, err
    assert lines[-1]["signed_in"] is True and peer.stats()["methods"] == ["private_key_jwt"]

    private.unlink()
    code, _, err = cli.run("mcp", "login", "prot")
    assert code == 1
    assert f"server prot: mcp.servers.prot.auth.oauth.private_key_file: cannot read {private}" in err, err
    assert peer.stats()["tokens"] == 1  # nothing was sent without the key
