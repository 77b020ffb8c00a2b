"""Why an MCP connection failed, in words safe to show: ``ServerGone`` and ``describe``.

Apart from ``engine.mcp.connection`` (which re-exports both) because the prober, sign-in, the supervisor and the
endpoint's proxy name a failure without needing a live connection.
"""

from __future__ import annotations

import asyncio

from mcp.shared.exceptions import MCPError


class ServerGone(Exception):
    """The server died or the connection closed while a request was in flight."""


def describe(exc: BaseException) -> str:
    """A short, safe description of why a connection attempt failed."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if inner:
            return describe(inner[0])
    if isinstance(exc, MCPError):
        return f"protocol error {exc.code}: {exc.message}"[:300]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}{': ' + text[:250] if text else ''}"
