"""``rediss://`` (TLS) against a real redis-server serving TLS only, with a password: the engine publishes its events
and an attached client reads them when the server's certificate is trusted (``SSL_CERT_FILE``: the system's trust
store, as in production); an untrusted certificate leaves the engine running standalone with the reason, and the
password appears in no status or error."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.remote.base import RemoteEvent
from engine.remote.redis_client import RedisEngines
from engine.store.component import StoreComponent
from tests.engine.email.smtp_fixture import self_signed
from tests.engine.store.redis_peer import REDIS_SERVER, free_port
from tests.waiting import wait_until_sync

PASSWORD = "tls-canary-pw-7391"


def _tls_pong(port: int, ca: Path) -> bool:
    ctx = ssl.create_default_context(cafile=str(ca))
    try:
        import socket

        with (
            socket.create_connection(("127.0.0.1", port), timeout=0.5) as raw,
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s,
        ):
            s.sendall(f"AUTH {PASSWORD}\r\nPING\r\n".encode())
            answer = b""
            while b"PONG" not in answer:  # "+OK" and "+PONG" may come in one read or two
                got = s.recv(64)  # at most the socket's 0.5 s timeout (an OSError)
                if not got:
                    return False
                answer += got
            return True
    except OSError:
        return False


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (tests/peers/system-deps.sh installs it)")
    cert, key = self_signed(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            "0",
            "--tls-port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
            "--tls-cert-file",
            str(cert),
            "--tls-key-file",
            str(key),
            "--tls-ca-cert-file",
            str(cert),
            "--tls-auth-clients",
            "no",
            "--requirepass",
            PASSWORD,
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def serving() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"redis-server exited before serving TLS on port {port}")
        return _tls_pong(port, cert)

    try:
        wait_until_sync(serving, what=f"redis-server serving TLS on port {port}")
    except BaseException:
        proc.kill()
        raise
    try:
        yield f"rediss://:{PASSWORD}@127.0.0.1:{port}/0", cert
    finally:
        proc.kill()
        proc.wait(5)
        shutil.rmtree(tmp_path / "unused", ignore_errors=True)


def settings(tmp_path: Path, url: str) -> Settings:
    (tmp_path / "s.yaml").write_text("greeting: Hello over TLS.\nfallback: what?\n")
    return Settings.model_validate(
        {
            "engine": {"http": {"enabled": False}, "store": url, "id": "tls-1", "heartbeat_s": 0.3},
            "providers": {"s": {"type": "scripted", "script": str(tmp_path / "s.yaml")}},
            "mcp": {"enabled": False},
            "contexts": {"c": {"provider": "s"}},
        }
    )


async def test_events_over_tls_reach_an_attached_client(
    tmp_path: Path, tls_redis: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, ca = tls_redis
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # the server's certificate is in the trust store
    async with Engine(settings(tmp_path, url)) as engine:
        store = next(c for c in engine.components if isinstance(c, StoreComponent))
        assert store.connected, store.status()
        call = await engine.start_call("c", caller_name="Tess")
        client = RedisEngines(url)
        seen: list[str] = []

        async def follow() -> None:
            async for item in client.follow():
                if isinstance(item, RemoteEvent) and item.event.type == "transcript.added":
                    seen.append(getattr(item.event, "text", ""))
                    return

        try:
            await asyncio.wait_for(follow(), 20)
        finally:
            await client.close()
        assert seen == ["Hello over TLS."]
        await engine.end_call(call.call_id)
        assert PASSWORD not in str(store.status()) and "rediss://:***@127.0.0.1" in store.status()["store"]


async def test_an_untrusted_certificate_leaves_the_engine_standalone(
    tmp_path: Path, tls_redis: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ca = tls_redis
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "nobody.pem"))  # an empty trust store
    async with Engine(settings(tmp_path, url)) as engine:
        store = next(c for c in engine.components if isinstance(c, StoreComponent))
        status = store.status()
        assert not status["connected"]
        assert "certificate verify failed" in status["last_error"] or "CERTIFICATE" in status["last_error"].upper()
        assert PASSWORD not in str(status)
        call = await engine.start_call("c")  # calls go on without the store
        assert call.active
