"""Helpers for the OAuth tests: the authorization + resource server fixture as a child, and the installed CLI.

``OAuthPeer`` runs ``tests/fixtures/mcp_servers/oauth_server.py`` (the SDK's own authorization server and a protected
``MCPServer``); ``Cli`` runs the installed ``ava-engine`` with a file keyring shared with the test process, and
``follow`` plays the browser: a GET on the authorization URL, following the redirect to the loopback listener.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.engine.mcp.helpers import FIXTURES, ROOT

OAUTH_SERVER = str(FIXTURES / "oauth_server.py")
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"


class OAuthPeer:
    def __init__(self, *flags: str, script: str = OAUTH_SERVER) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, script, *flags],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("PORTS "):
            self.kill()
            raise AssertionError(f"{Path(script).name} did not start")
        _, as_port, rs_port = line.split()
        self.as_url = f"http://127.0.0.1:{as_port}"
        self.rs_base = f"http://127.0.0.1:{rs_port}"
        self.url = f"{self.rs_base}/mcp"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.rs_base}/control/stats", timeout=5) as r:
            return dict(json.loads(r.read()))

    def as_down(self) -> None:
        req = urllib.request.Request(f"{self.rs_base}/control/as-down", method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    def revoke_access(self) -> None:
        req = urllib.request.Request(f"{self.rs_base}/control/revoke-access", method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    def forget_clients(self) -> None:
        req = urllib.request.Request(f"{self.rs_base}/control/forget-clients", method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(5)


def follow(url: str) -> tuple[int, str]:
    """What a browser does with the authorization URL: GET it and follow the redirect back to the listener."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Cli:
    """The installed ``ava-engine`` with a file keyring (``$AVA_TEST_KEYRING_FILE``) the test process shares."""

    def __init__(self, config: Path, keyring_file: Path) -> None:
        self.config = config
        paths = [str(ROOT / "tests" / "fixtures"), *filter(None, os.environ.get("PYTHONPATH", str(ROOT)).split(":"))]
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")},
            "PYTHONPATH": ":".join(paths),
            "AVA_TEST_KEYRING_FILE": str(keyring_file),
            "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
        }
        #: Everything every run printed (the canary check reads it).
        self.output: list[str] = []

    def run(self, *argv: str, timeout: float = 60) -> tuple[int, str, str]:
        p = subprocess.run(
            [str(ENTRY_POINT), "--config", str(self.config), *argv],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
        )
        self.output += [p.stdout, p.stderr]
        return p.returncode, p.stdout, p.stderr

    def login(
        self,
        server: str,
        *,
        browse: bool = True,
        before_browser: Callable[[dict[str, Any]], None] | None = None,
        timeout_s: float = 300,
    ) -> tuple[int, list[dict[str, Any]], str]:
        """``mcp login SERVER --json``, following the printed URL like a browser; (exit code, JSON lines, stderr).
        ``before_browser`` gets the first line (the URL, the redirect URI) while the listener waits."""
        argv = ["--config", str(self.config), "--json", "mcp", "login", server, "--no-browser"]
        proc = subprocess.Popen(
            [str(ENTRY_POINT), *argv, "--timeout", f"{timeout_s:g}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        assert proc.stdout is not None and proc.stderr is not None
        lines: list[dict[str, Any]] = []
        first = proc.stdout.readline()
        self.output.append(first)
        if first.strip():
            lines.append(json.loads(first))
            if before_browser is not None:
                before_browser(lines[0])
            if browse and "authorize_url" in lines[0]:
                _, page = follow(lines[0]["authorize_url"])
                self.output.append(page)
        out, err = proc.communicate(timeout=60)
        self.output += [out, err]
        lines += [json.loads(line) for line in out.splitlines() if line.strip()]
        return proc.returncode, lines, err


def stored_secrets(keyring_file: Path) -> list[str]:
    """Every token and client secret in the file keyring (the canaries)."""
    if not keyring_file.exists():
        return []
    found: list[str] = []
    for key, raw in json.loads(keyring_file.read_text()).items():
        if key.startswith("ava-console-oauth\x00"):
            record = json.loads(raw)
            tokens = record.get("tokens") or {}
            found += [v for v in (tokens.get("access_token"), tokens.get("refresh_token")) if v]
            secret = (record.get("client") or {}).get("client_secret")
            if secret:
                found.append(secret)
    return found


def config_text(url: str, *, extra: str = "") -> str:
    return f"""engine:
  http: {{enabled: false}}
  tool_timeout_ms: 5000
mcp:
  servers:
    prot:
      transport: http
      url: "{url}"
      connect_timeout_ms: 8000
      restart: {{backoff_ms: 50, backoff_max_ms: 200, max_restarts: 2}}
      auth:
        oauth:
          client_name: ava tests
          scopes: [tools]
{extra}"""
