"""Shared helpers for the built-in MCP server tests: a server over stdio (a child process of its own), in this
process (``inprocess``, as the engine loads it) or in the shared bundle child (``bundled``) — every test that
talks to a server runs all three ways."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from engine.mcp.bundle import bundled_transport
from engine.mcp.transports import load_target

REPO = Path(__file__).resolve().parents[3]


def _spawn(module: str, *args: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", f"engine.servers.{module}", *args], env=env, cwd=str(REPO)
    )
    return Client(params, read_timeout_seconds=30.0)


def _inprocess(module: str, *args: str, env: dict[str, str] | None = None) -> Client:
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        server = load_target(f"engine.servers.{module}.server:create", list(args))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Client(server, read_timeout_seconds=30.0)


def _bundled(module: str, *args: str, env: dict[str, str] | None = None) -> Client:
    if env:
        raise ValueError("the bundle child is shared: a bundled server takes its settings as args (use spawn_env)")
    transport = bundled_transport(f"engine.servers.{module}.server:create", list(args), 30.0, None)
    return Client(transport, read_timeout_seconds=30.0)


@pytest.fixture(params=["stdio", "inprocess", "bundled"])
def spawn(request: pytest.FixtureRequest) -> Callable[..., Client]:
    """``spawn("dice", "--seed", "7")`` -> an unentered SDK Client for that server, run the fixture's way."""
    modes: dict[str, Callable[..., Client]] = {"stdio": _spawn, "inprocess": _inprocess, "bundled": _bundled}
    return modes[request.param]


@pytest.fixture(params=["stdio", "inprocess"])
def spawn_env(request: pytest.FixtureRequest) -> Callable[..., Client]:
    """Like ``spawn`` for a test that sets the server's environment: a shared bundle child has one environment for
    every server it hosts, so its servers are configured through ``args`` only and this runs the other two ways."""
    modes: dict[str, Callable[..., Client]] = {"stdio": _spawn, "inprocess": _inprocess}
    return modes[request.param]


def _text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.fixture
def text() -> Callable[[CallToolResult], str]:
    """The text content of a tool result."""
    return _text
