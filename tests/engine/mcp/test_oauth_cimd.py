"""Client ID Metadata Documents (CIMD): with ``auth.oauth.client_metadata_url`` set and an authorization server that
supports CIMD, the engine signs in with that https URL as its client id and registers nothing; the authorization
server fetches the document (over real TLS, from a loopback https server with its own certificate) and accepts the
client because the document names that URL. The same config against a server without CIMD falls back to dynamic
registration. Through the installed ``ava-engine mcp login``.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from tests.engine.email.smtp_fixture import free_port, self_signed
from tests.engine.mcp.oauth_helpers import Cli, OAuthPeer, config_text, stored_secrets


@contextmanager
def client_document(folder: Path, redirect_port: int) -> Iterator[tuple[str, Path, list[str]]]:
    """An https server on 127.0.0.1 serving the client's metadata document; (its URL, the CA to trust, paths hit)."""
    cert, key = self_signed(folder)
    port = free_port()
    url = f"https://127.0.0.1:{port}/ava/client.json"
    doc = {
        "client_id": url,
        "client_name": "ava tests",
        "redirect_uris": [f"http://127.0.0.1:{redirect_port}/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "tools",
    }
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = json.dumps(doc).encode() if self.path == "/ava/client.json" else b"{}"
            self.send_response(200 if self.path == "/ava/client.json" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url, cert, hits
    finally:
        server.shutdown()
        server.server_close()


def cimd_config(resource_url: str, document_url: str, redirect_port: int) -> str:
    extra = f'          client_metadata_url: "{document_url}"\n          redirect_port: {redirect_port}\n'
    return config_text(resource_url).replace("          scopes: [tools]\n", "          scopes: [tools]\n" + extra)


def test_sign_in_with_a_client_id_metadata_document(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    redirect_port = free_port()
    with client_document(tmp_path, redirect_port) as (doc_url, ca, hits):
        peer = OAuthPeer("--cimd", str(ca))
        peers.append(peer)
        config = tmp_path / "config.yaml"
        config.write_text(cimd_config(peer.url, doc_url, redirect_port))
        cli = Cli(config, ring)
        code, lines, err = cli.login("prot")
        assert code == 0, (err, lines)
        first, result = lines[0], lines[-1]
        query = parse_qs(urlparse(first["authorize_url"]).query)
        assert query["client_id"] == [doc_url]  # the document's URL is the client id
        assert first["redirect_uri"] == f"http://127.0.0.1:{redirect_port}/callback"
        assert result["signed_in"] is True and result["tools"] == ["whoami"]
        stats = peer.stats()
        assert stats["registrations"] == 0  # nothing registered: the server read the document instead
        assert doc_url in stats["cimd_fetches"] and "/ava/client.json" in hits
        assert stats["resources"] == [peer.url]
        code, out, err = cli.run("mcp", "call", "mcp_prot_whoami", "--json")
        assert code == 0, err
        assert f"client {doc_url}" in out  # the server knows the caller by the document's URL
        secrets = stored_secrets(ring)
        assert secrets and not any(s in "\n".join(cli.output) for s in secrets)


def test_without_cimd_support_the_same_config_registers(tmp_path: Path, ring: Path, peers: list[OAuthPeer]) -> None:
    redirect_port = free_port()
    with client_document(tmp_path, redirect_port) as (doc_url, _, hits):
        peer = OAuthPeer()
        peers.append(peer)
        config = tmp_path / "config.yaml"
        config.write_text(cimd_config(peer.url, doc_url, redirect_port))
        code, lines, err = Cli(config, ring).login("prot")
        assert code == 0, err
        query = parse_qs(urlparse(lines[0]["authorize_url"]).query)
        assert query["client_id"] != [doc_url] and lines[-1]["signed_in"] is True
        assert peer.stats()["registrations"] == 1 and hits == []  # dynamic registration; the document unused
