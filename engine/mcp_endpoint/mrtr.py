"""A question from a server behind the engine, handed to the endpoint's 2026 client who can answer it (MRTR).

Why it exists: on 2026-07-28 a server that needs input mid-call (elicitation, sampling, roots) answers with an
``InputRequiredResult`` (SEP-2322) and the caller retries with ``inputResponses`` and the echoed ``requestState``.
When the call came through the endpoint from a 2026 client, that client is the one who can answer — not the
engine's elicitation desk, which answers by voice on a phone call. So ``tools/call`` and ``prompts/get`` of a
2026 client go to the server with the client's answers and state (``engine.mcp.passthrough.answering``), and a
question comes back to the client:

* only the questions the client declared it can answer (``_meta`` ``clientCapabilities``); when none is left the
  request fails with ``-32021`` MissingRequiredClientCapability naming what the server needed (HTTP 400);
* its ``requestState`` sealed by the endpoint (the SDK's ``RequestStateBoundary``: AES-GCM, bound to the method,
  the tool or prompt and its arguments, ten minutes), so a state the client changed is refused with ``-32602``
  before any server sees it — whatever the server behind checks itself.

Handshake-era clients (2025-11-25 …) have no such round trip: their calls go on as before, the desk answering.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.types import (
    CLIENT_CAPABILITIES_META_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ClientCapabilities,
    InputRequiredResult,
    MissingRequiredClientCapabilityErrorData,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

#: The client capability each kind of question needs.
NEEDS: dict[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


def client_answers(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client takes questions as results (a 2026-07-28 client) rather than as requests."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def declared(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, Any]:
    """The capabilities the client declared on this request (``_meta``), ``{}`` when it declared none."""
    caps = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    return caps if isinstance(caps, Mapping) else {}


def for_client(question: InputRequiredResult, ctx: ServerRequestContext[Any, Any]) -> InputRequiredResult:
    """The server's question as the client may get it: only what it can answer, else ``-32021``."""
    caps = declared(ctx)
    asked = question.input_requests or {}
    kept = {k: r for k, r in asked.items() if caps.get(NEEDS.get(r.method, r.method)) is not None}
    if asked and not kept:
        missing: dict[str, dict[str, Any]] = {NEEDS.get(r.method, r.method): {} for r in asked.values()}
        data = MissingRequiredClientCapabilityErrorData(
            required_capabilities=ClientCapabilities.model_validate(missing)
        )
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"The server behind this tool needs the client capabilities {sorted(missing)}, which this request "
            "did not declare (_meta io.modelcontextprotocol/clientCapabilities)",
            data.model_dump(by_alias=True, exclude_none=True),
        )
    return question if len(kept) == len(asked) else question.model_copy(update={"input_requests": kept})


def seal_request_state(server: Server[Any], audience: str) -> None:
    """Seal every ``requestState`` the endpoint hands out and refuse one that comes back changed (a fresh key per
    process: a state outlives neither a restart nor ten minutes)."""
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=audience))
