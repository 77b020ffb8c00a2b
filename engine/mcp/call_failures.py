"""The results of MCP tool calls that did not get an answer: the raw text for the operator, a sentence for the caller.

Why it exists: a server that is down, needs a sign-in, went away mid-call, refused the request, timed out on its
own or answered with something that is not MCP each needs words naming the server and what happened (the log, the
tool row, ``mcp call``) and one short sentence a caller can hear (``engine.tools.speech``). Kept out of the
supervisor, which owns the server's lifecycle, not the wording of its failures.
"""

from __future__ import annotations

from collections.abc import Callable

import pydantic
from mcp.shared.exceptions import MCPError
from mcp.types import REQUEST_TIMEOUT

from engine.mcp.connection import ServerGone
from engine.mcp.oauth import sign_in_hint
from engine.mcp.structured import mismatch
from engine.tools import speech
from engine.tools.base import ToolDefinition, ToolResult

#: What ``call_failure`` turns into a result; anything else is not a failure of the call and goes on up.
CALL_FAILURES = (ServerGone, MCPError, pydantic.ValidationError, RuntimeError)


def not_running(server_id: str, state: str, d: ToolDefinition, needs_sign_in: bool) -> ToolResult:
    """The call was not sent: the server is not up (or waits for a sign-in)."""
    why = sign_in_hint(server_id) if needs_sign_in else f"server {server_id} is {state}"
    return ToolResult("error", f"{why}; the tool did not run.", spoken=speech.unavailable(d))


def call_failure(
    server_id: str, d: ToolDefinition, e: BaseException, redact: Callable[[str], str] | None
) -> ToolResult | None:
    """The result for a call that raised ``e``; None when ``e`` is not one of the call's failures (re-raise it)."""
    if isinstance(e, ServerGone):  # "server dice stopped (process exited with code 1)"
        return ToolResult("error", str(e), spoken=speech.unavailable(d))
    if isinstance(e, MCPError):
        if e.code == REQUEST_TIMEOUT:  # the server (or a proxy before it) gave up on its own
            raw = f"server {server_id} timed out on {d.name}: {e.message[:200]}"
            return ToolResult("timeout", raw, spoken=speech.timed_out(d))
        raw = f"server {server_id} refused the call: {e.message[:200]}"
        return ToolResult("error", raw, spoken=speech.refused(d))
    if isinstance(e, pydantic.ValidationError):
        raw = f"server {server_id} returned a result that is not valid MCP"
        return ToolResult("error", raw, spoken=speech.failed(d))
    if isinstance(e, RuntimeError):  # the SDK's outputSchema check: this call fails, the server stays up
        message = mismatch(d.name, e)
        if message is None:
            return None
        return ToolResult("error", redact(message) if redact else message, spoken=speech.failed(d))
    return None
