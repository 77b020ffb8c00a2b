"""Shared helpers for the built-in MCP server tests: start a server as a child process over stdio."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

REPO = Path(__file__).resolve().parents[3]


def _spawn(module: str, *args: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", f"engine.servers.{module}", *args], env=env, cwd=str(REPO)
    )
    return Client(params, read_timeout_seconds=30.0)


@pytest.fixture
def spawn() -> Callable[..., Client]:
    """``spawn("dice", "--seed", "7")`` -> an unentered SDK Client for that server over stdio."""
    return _spawn


def _text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.fixture
def text() -> Callable[[CallToolResult], str]:
    """The text content of a tool result."""
    return _text
