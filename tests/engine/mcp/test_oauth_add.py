"""``ava-engine mcp add URL`` of an OAuth-protected server: the 401 and its RFC 9728 metadata are found before the
entry is saved, the entry gets ``auth.oauth``, the output says to run ``mcp login ID`` (never an opaque -32603), and
that sign-in then works with the entry as written. Real peer: ``oauth_server.py``; the installed CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.engine.mcp.oauth_helpers import Cli, OAuthPeer


def test_mcp_add_of_a_protected_url_writes_auth_oauth_and_says_to_sign_in(
    tmp_path: Path, ring: Path, peers: list[OAuthPeer]
) -> None:
    peer = OAuthPeer()
    peers.append(peer)
    config = tmp_path / "config.yaml"
    config.write_text("engine:\n  http: {enabled: false}\nmcp:\n  servers: {}\n")
    cli = Cli(config, ring)
    code, out, err = cli.run("--json", "mcp", "add", peer.url, "--id", "prot", "--yes")
    assert code == 0, out + err
    result = json.loads(out)
    assert result["written"] is True and result["sign_in"] == "ava-engine mcp login prot"
    assert "ava-engine mcp login prot" in result["message"]
    assert "-32603" not in out + err
    saved = yaml.safe_load(config.read_text())["mcp"]["servers"]["prot"]
    assert saved["transport"] == "http" and saved["url"] == peer.url and saved["auth"] == {"oauth": {}}
    assert peer.stats()["registrations"] == 0  # found out without registering anything

    code, lines, err = cli.login("prot")
    assert code == 0 and lines[-1]["tools"] == ["whoami"], err


def test_mcp_add_of_a_401_without_metadata_says_what_to_do(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    peer = OAuthPeer("--bare-401")
    peers.append(peer)
    config = tmp_path / "config.yaml"
    config.write_text("engine:\n  http: {enabled: false}\nmcp:\n  servers: {}\n")
    code, out, err = Cli(config, ring).run("--json", "mcp", "add", peer.url, "--id", "bare", "--yes")
    assert code == 1 and json.loads(out)["written"] is False
    assert "auth" not in json.loads(out)["entry"] and "-32603" not in out + err
