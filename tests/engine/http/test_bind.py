"""Binding: a token is required off loopback (check and serve refuse), a busy port is a clear HttpBindError."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from engine.config.models import HttpConfig, Settings
from engine.http import HealthSection, HttpBackend, HttpBindError, HttpServer, Lifecycle
from tests.engine.http.helpers import TOKEN

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"


def run_cli(config: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


PUBLIC_NO_TOKEN = "# a public bind\nengine:\n  http:\n    host: 0.0.0.0\n    port: 8088\n"


def test_check_fails_for_a_public_bind_without_a_token(tmp_path: Path) -> None:
    config = tmp_path / "public.yaml"
    config.write_text(PUBLIC_NO_TOKEN)
    done = run_cli(config, "check")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"{config}:4: engine.http.host: binding '0.0.0.0' (not loopback) requires engine.http.auth_token" in done.stderr
    )


def test_check_passes_for_a_public_bind_with_a_token(tmp_path: Path) -> None:
    config = tmp_path / "public.yaml"
    config.write_text(PUBLIC_NO_TOKEN + "    auth_token: ${AVA_HTTP_TEST_TOKEN}\n")
    done = run_cli(config, "check", env={"AVA_HTTP_TEST_TOKEN": TOKEN})
    assert done.returncode == 0, done.stdout + done.stderr
    assert TOKEN not in done.stdout + done.stderr


def test_serve_refuses_to_start_on_a_public_bind_without_a_token(tmp_path: Path) -> None:
    config = tmp_path / "public.yaml"
    config.write_text(PUBLIC_NO_TOKEN)
    done = run_cli(config, "serve")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "engine.http.auth_token" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_binds_need_no_token(host: str) -> None:
    assert HttpConfig(host=host).auth_token is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.168.1.5", "ava.lan"])
def test_other_binds_need_a_token(host: str) -> None:
    with pytest.raises(ValueError, match=r"requires engine\.http\.auth_token"):
        HttpConfig(host=host)
    assert HttpConfig(host=host, auth_token=TOKEN).host == host  # type: ignore[arg-type]
    assert HttpConfig(host=host, enabled=False).host == host  # nothing is bound


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("auth_token", " ", "must not be empty"),
        ("allowed_hosts", ["http://ava.lan"], "is not a Host value"),
        ("allowed_origins", ["ava.lan"], "is not an origin"),
        ("allowed_origins", ["https://ui.example/"], "is not an origin"),
    ],
)
def test_malformed_http_keys_are_refused(field: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HttpConfig.model_validate({field: value})


async def test_a_busy_port_is_a_clear_http_bind_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        backend = fake_backend(Settings.model_validate({"engine": {"http": {"port": port}}}))
        with pytest.raises(HttpBindError) as err:
            await HttpServer(backend).start()
    assert str(err.value).startswith(f"port {port} on 127.0.0.1 is in use (engine.http.port)")
    assert isinstance(err.value, OSError)


class FakeParts:
    """Just the parts an ``HttpBackend`` is made of: the HTTP layer needs no whole Engine."""

    def __init__(self) -> None:
        self.tested: list[Any] = []

    def render(self) -> bytes:
        return b"ai_agent_fake 1\n"

    async def test_server(self, target: str | Mapping[str, Any]) -> dict[str, Any]:
        self.tested.append(target)
        return {"ok": True}


def fake_backend(settings: Settings, parts: FakeParts | None = None, **more: Any) -> HttpBackend:
    parts = parts or FakeParts()
    return HttpBackend(
        read_settings=lambda: settings,
        lifecycle=lambda: Lifecycle(started=True, ready=True, not_ready_reason=""),
        metrics=parts,
        pending_servers=list,
        server_status=lambda: {"servers": []},
        test_server=parts.test_server,
        **more,
    )


async def test_the_http_server_runs_on_any_http_backend() -> None:
    parts = FakeParts()
    server = HttpServer(fake_backend(Settings.model_validate({"engine": {"http": {"port": 0}}}), parts))
    await server.start()
    try:
        async with aiohttp.ClientSession() as client:
            async with client.get(f"{server.url}/metrics") as r:
                assert await r.text() == "ai_agent_fake 1\n"
            async with client.post(f"{server.url}/mcp/test/s1") as r:
                assert await r.json() == {"ok": True}
    finally:
        await server.stop()
    assert parts.tested == ["s1"]


async def test_health_shows_the_sections_and_the_app_the_routes_it_was_handed() -> None:
    """/health is the task group's report plus the named sections, in order; the routes are the installers'."""

    def install(app: web.Application) -> None:
        async def hello(request: web.Request) -> web.Response:
            return web.json_response({"hello": True})

        app.router.add_get("/hello", hello)

    backend = fake_backend(
        Settings.model_validate({"engine": {"http": {"port": 0}}}),
        task_health=lambda: {"status": "degraded", "stopped": [{"task": "t", "error": "E: x"}]},
        health=[HealthSection("store", lambda: {"connected": True}), HealthSection("capacity", lambda: {"n": 1})],
        routes=[install],
    )
    server = HttpServer(backend)
    await server.start()
    try:
        async with aiohttp.ClientSession() as client:
            async with client.get(f"{server.url}/health") as r:
                body = await r.json()
            async with client.get(f"{server.url}/hello") as r:
                assert await r.json() == {"hello": True}
    finally:
        await server.stop()
    assert list(body) == ["status", "started", "stopped", "store", "capacity"]
    assert body["status"] == "degraded" and body["store"] == {"connected": True} and body["capacity"] == {"n": 1}


def test_two_health_sections_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match=r"HttpBackend.health: two /health sections named 'store'"):
        fake_backend(Settings(), health=[HealthSection("store", dict), HealthSection("store", dict)])
