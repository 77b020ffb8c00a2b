"""Shared fixtures for the console tests: a private copy of the demo config, an in-memory keyring, waiting."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import keyring
import pytest

from tests.fixtures.memory_keyring import MemoryKeyring

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    old = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        yield ring
    finally:
        keyring.set_keyring(old)


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    """The console tests' config and its script, copied so tests may save over it."""
    data = Path(__file__).resolve().parent / "data"
    shutil.copy(data / "console.yaml", tmp_path / "config.yaml")
    shutil.copy(data / "script.yaml", tmp_path / "script.yaml")
    return tmp_path / "config.yaml"


def crash_server_yaml(server_id: str = "crashy") -> str:
    return (
        f"    {server_id}:\n"
        f"      command: [{sys.executable}, {FIXTURE_SERVER}, --crash-at-start]\n"
        f"      connect_timeout_ms: 5000\n"
        f"      restart: {{max_restarts: 0, backoff_ms: 50}}\n"
    )


async def wait_for(pilot: object, predicate: Callable[[], bool], within: float = 30.0) -> None:
    """Let the app run until ``predicate()`` holds; fail with a clear message otherwise.

    ``within`` only bounds a failure: a loaded machine (2 cores, several suites) took over 10 s to start the
    console's engine; a passing test never waits longer than its condition."""
    import asyncio

    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not predicate():
        if loop.time() > end:
            raise AssertionError(f"condition not met within {within}s: {predicate.__doc__ or predicate}")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


def servers_up(app: object, *server_ids: str) -> bool:
    """True once the console's engine lists the named servers (all of them when none are named), every one up.

    The engine exists before its servers are registered, so an empty list must read as "not yet", never as
    "all up" (CI once failed indexing ``servers[0]`` in that window)."""
    engine = getattr(app, "engine", None)
    if engine is None:
        return False
    states = {s["id"]: s["state"] for s in engine.server_status()["servers"]}
    wanted = server_ids or tuple(states)
    return bool(wanted) and all(states.get(sid) == "up" for sid in wanted)


@pytest.fixture
def wait() -> Callable[..., object]:
    return wait_for


@pytest.fixture
def crash_yaml() -> Callable[[str], str]:
    return crash_server_yaml
