"""``ava-console --web`` serves only the operator who started it: the real server, driven as a hostile page would.

A page on any site the operator visits can reach 127.0.0.1 (and a DNS-rebinding site can call it by its own name),
so the page, its WebSocket and downloads need the printed token, the right Host and the console's own Origin.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import pytest
from textual_serve.server import Server

from console.web_access import web_access
from tests.conftest import children_of
from tests.integration.test_serve_shutdown import _alive, descendants, wait_for

ENTRY = Path(sys.executable).parent / "ava-console"
WS_HEADERS = {"Sec-WebSocket-Version": "13"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class WebConsole:
    def __init__(self, proc: subprocess.Popen[str], port: int, url: str) -> None:
        self.proc, self.port, self.url = proc, port, url
        self.base = f"http://127.0.0.1:{port}"
        self.token = url.rsplit("token=", 1)[1]
        #: What the server printed after the URL line (its log), read until it exits.
        self.output: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        self.output.extend(self.proc.stdout)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            self.reader.join(10)
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.reader.join(10)


@pytest.fixture
def web_console(tmp_path: Path, demo_config_path: Path) -> Iterator[WebConsole]:
    assert ENTRY.exists(), f"{ENTRY} is missing: install the package (make test does) first"
    config = tmp_path / "console.yaml"  # a config of its own: --web takes one tab lock per config file
    shutil.copy(demo_config_path, config)
    port = free_port()
    env = os.environ | {"XDG_RUNTIME_DIR": str(tmp_path)}
    env.pop("AVA_CONSOLE_WEB_TOKEN", None)
    proc = subprocess.Popen(
        [str(ENTRY), "--config", str(config), "--web", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    pool = ThreadPoolExecutor(1)
    try:
        line = pool.submit(read_url_line, proc).result(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        pool.shutdown(wait=False)  # the reader ends with the killed server's stdout
    console = WebConsole(proc, port, line.split()[-1])
    try:
        yield console
    finally:
        console.stop()


def read_url_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("ava-console is served at "):
            return line.strip()
    raise AssertionError(f"--web printed no URL: {''.join(seen)}")


async def handshake_status(url: str, **headers: str) -> int:
    """The HTTP status a WebSocket handshake to ``url`` gets (101 when it is accepted)."""
    async with aiohttp.ClientSession() as http:
        try:
            ws = await http.ws_connect(url, headers=headers)
        except aiohttp.WSServerHandshakeError as e:
            return e.status
        await ws.close()
        return 101


async def test_the_printed_url_is_loopback_and_carries_a_fresh_token(web_console: WebConsole) -> None:
    assert web_console.url.startswith(f"http://127.0.0.1:{web_console.port}/?token=")
    assert len(web_console.token) >= 32


async def test_the_page_needs_the_token_and_the_right_host(web_console: WebConsole) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(web_console.base + "/") as r:
            assert r.status == 401
            assert "token" in await r.text()
        async with http.get(web_console.base + "/?token=" + "x" * 43) as r:
            assert r.status == 401
        # DNS rebinding: the attacker's own name pointed at 127.0.0.1, token or not.
        rebound = {"Host": f"evil.example:{web_console.port}"}
        async with http.get(web_console.url, headers=rebound) as r:
            assert r.status == 421
        async with http.get(web_console.url, allow_redirects=False) as r:
            assert r.status == 200
            assert r.cookies[f"ava_console_token_{web_console.port}"]["httponly"]
            assert r.cookies[f"ava_console_token_{web_console.port}"]["samesite"] == "Strict"
        # Another loopback name is sent to the printed URL, so the page and its WebSocket share one origin.
        async with http.get(web_console.url.replace("127.0.0.1", "localhost"), allow_redirects=False) as r:
            assert r.status == 302
            assert r.headers["Location"] == web_console.url


async def test_a_foreign_page_cannot_open_the_websocket(web_console: WebConsole) -> None:
    ws = f"ws://127.0.0.1:{web_console.port}/ws"
    own = f"http://127.0.0.1:{web_console.port}"
    # A page on another site, even one that learnt the token, and one on another local port.
    assert await handshake_status(f"{ws}?token={web_console.token}", Origin="https://evil.example") == 403
    assert await handshake_status(f"{ws}?token={web_console.token}", Origin="http://127.0.0.1:1") == 403
    # A rebinding page is same-origin with itself: its Host gives it away.
    assert (
        await handshake_status(
            f"{ws}?token={web_console.token}",
            Host=f"evil.example:{web_console.port}",
            Origin=f"http://evil.example:{web_console.port}",
        )
        == 421
    )
    # The console's own origin without the token, or with a wrong one.
    assert await handshake_status(ws, Origin=own) == 401
    assert await handshake_status(f"{ws}?token=wrong", Origin=own) == 401
    # Every refusal came before the handshake, so no console process was started for any of them.
    assert children_of(web_console.proc.pid) == []


async def test_the_operators_page_opens_the_console(web_console: WebConsole) -> None:
    own = f"http://127.0.0.1:{web_console.port}"
    # A browser keeps cookies for an IP address; aiohttp's jar only when told to.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(web_console.url) as r:
            assert r.status == 200
            assert f"ws://127.0.0.1:{web_console.port}/ws" in await r.text()
        # The page's WebSocket carries the cookie the page set, and the page's own Origin.
        ws = await http.ws_connect(f"ws://127.0.0.1:{web_console.port}/ws?width=80&height=24", origin=own)
        try:
            msg = await asyncio.wait_for(ws.receive(), 60)  # the console process's first output
            assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
        finally:
            await ws.close()


async def test_the_token_never_reaches_the_log(web_console: WebConsole) -> None:
    async with aiohttp.ClientSession() as http:
        for url in (web_console.url, web_console.base + "/download/x?token=" + web_console.token):
            async with http.get(url, allow_redirects=False) as r:
                assert r.status in (200, 404)
    web_console.stop()
    log = "".join(web_console.output)
    assert "GET /?token=" in log  # the access log saw the request (so the check below means something)
    assert web_console.token not in log


def test_options_that_would_serve_the_wrong_page_are_refused() -> None:
    with pytest.raises(ValueError, match="--public-url"):
        web_access("0.0.0.0", 8000)
    with pytest.raises(ValueError, match="at least 24"):
        web_access("127.0.0.1", 8000, token="short")
    with pytest.raises(ValueError, match="http:// or https://"):
        web_access("0.0.0.0", 8000, public_url="ftp://ava.example")
    with pytest.raises(ValueError, match="no path"):
        web_access("0.0.0.0", 8000, public_url="https://ava.example/console")
    with pytest.raises(ValueError, match="--port 0"):
        web_access("127.0.0.1", 0)
    behind_proxy = web_access("0.0.0.0", 8000, public_url="https://ava.example")
    assert "ava.example" in behind_proxy.allowed_hosts
    assert "https://ava.example" in behind_proxy.allowed_origins
    assert behind_proxy.url.startswith("https://ava.example/?token=")
    assert web_access("::1", 8000).public_url == "http://[::1]:8000"


def test_textual_serve_still_builds_its_app_where_the_guard_hooks_in() -> None:
    """``GuardedServer`` overrides textual-serve's ``Server._make_app`` (not public API): fail loudly if it moves."""
    assert asyncio.iscoroutinefunction(getattr(Server, "_make_app", None)), (
        "textual_serve.server.Server._make_app is gone: console/web_serve.py must hook its guard in elsewhere"
    )


async def test_a_killed_web_server_takes_its_tab_consoles_along(web_console: WebConsole) -> None:
    """A tab's console runs the engine (and its calls and MCP servers): it must not run on, unreachable, when the web
    server that started it is SIGKILLed."""
    own = f"http://127.0.0.1:{web_console.port}"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(web_console.url) as r:
            assert r.status == 200
        ws = await http.ws_connect(f"ws://127.0.0.1:{web_console.port}/ws?width=80&height=24", origin=own)
        await asyncio.wait_for(ws.receive(), 60)  # the tab's console is up
        tab = descendants(web_console.proc.pid)
        assert tab, "no console process under the web server"
        os.kill(web_console.proc.pid, signal.SIGKILL)
        await asyncio.to_thread(
            wait_for, lambda: not any(_alive(pid) for pid in tab), 30, f"the tab's console to end: {tab}"
        )
