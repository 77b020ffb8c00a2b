"""Fixtures for the MCP host tests: settings builders, a running engine, network servers, the no-orphan check."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.mcp import transports
from engine.mcp.reaper import reaper_pid
from tests.engine.mcp.helpers import NetServer
from tests.engine.mcp.oauth_helpers import OAuthPeer
from tests.fixtures.file_keyring import FileKeyring


def _stat(pid: str) -> tuple[str, int, int] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1]), int(fields[2])  # state, ppid, pgrp


def _leftovers(me: int, groups: set[int]) -> list[int]:
    """Live descendants of ``me``, and any live process in a process group an MCP child led (the reaper aside: it
    lives as long as the process that runs the engines, see engine/mcp/reaper.py)."""
    procs: dict[int, tuple[str, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(entry)) is not None and st[0] not in ("Z", "X"):
            procs[int(entry)] = st
    out = []
    procs.pop(reaper_pid() or 0, None)
    for pid, (_state, ppid, pgrp) in procs.items():
        if pgrp in groups:
            out.append(pid)
            continue
        p = ppid
        for _ in range(50):
            if p == me:
                out.append(pid)
                break
            if p not in procs:
                break
            p = procs[p][1]
    return out


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    """After every test: no child process left behind (waits up to 6 s for shutdowns to finish)."""
    groups: set[int] = set()
    transports.spawn_listeners.append(groups.add)
    try:
        yield
    finally:
        transports.spawn_listeners.remove(groups.add)
    me = os.getpid()
    deadline = time.monotonic() + 6
    left = _leftovers(me, groups)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _leftovers(me, groups)
    assert not left, f"processes left behind: {left}"


@pytest.fixture
async def make_engine() -> AsyncIterator[Any]:
    """``await make_engine(settings)`` → a started Engine, stopped after the test."""
    engines: list[Engine] = []

    async def factory(s: Settings, start: bool = True, serve_http: bool = False) -> Engine:
        e = Engine(s, serve_http=serve_http)
        for c in e.components:
            if getattr(c, "name", "") == "mcp":
                c.services.debounce_s = 0.05  # type: ignore[attr-defined]
        engines.append(e)
        if start:
            await e.start()
        return e

    yield factory
    for e in engines:
        await e.stop()


@pytest.fixture
def net_server() -> Iterator[Callable[..., NetServer]]:
    """``net_server("sse" | "http", *flags)`` → a started ``NetServer``, killed after the test."""
    servers: list[NetServer] = []

    def factory(transport: str, *args: str) -> NetServer:
        server = NetServer(transport, *args)
        servers.append(server)
        return server.start()

    yield factory
    for server in servers:
        server.kill()


@pytest.fixture
def peers() -> Iterator[list[OAuthPeer]]:
    """OAuth peers (authorization + protected MCP server) a test started; killed when it ends."""
    started: list[OAuthPeer] = []
    yield started
    for p in started:
        p.kill()


@pytest.fixture
def ring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test process and the CLI children share one file keyring."""
    path = tmp_path / "keyring.json"
    monkeypatch.setenv("AVA_TEST_KEYRING_FILE", str(path))
    old = keyring.get_keyring()
    keyring.set_keyring(FileKeyring())
    yield path
    keyring.set_keyring(old)
