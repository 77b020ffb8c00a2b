"""Whether a remote MCP server's URL is behind OAuth, found before anything is saved (``ava-engine mcp add URL``).

Why it exists: a server that wants a sign-in answers the first request with 401 and points at its protected-resource
metadata (RFC 9728: ``WWW-Authenticate: Bearer resource_metadata=...``, else the well-known paths). Testing such a
server the usual way ends in an opaque transport error; asking it first lets ``mcp add`` write ``auth.oauth`` and
tell the operator to run ``mcp login``. One unauthenticated request and the metadata lookups, no token, no
registration; the discovery URL order is the SDK's own (SEP-985).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx2
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_protected_resource_response,
)
from mcp.shared.auth import ProtectedResourceMetadata

#: The first request an MCP client sends; a protected server refuses it before reading it.
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "ava-engine", "version": "0"},
    },
}


@dataclass(frozen=True, slots=True)
class Challenge:
    """A 401 from the server: its protected-resource metadata (None when it publishes none) and challenged scope."""

    metadata: ProtectedResourceMetadata | None
    scope: str | None


async def oauth_challenge(url: str, *, timeout_s: float = 10.0) -> Challenge | None:
    """The server's 401 challenge, or None when it does not answer an unauthenticated request with 401."""
    async with httpx2.AsyncClient(timeout=timeout_s) as http:
        first = await http.post(url, json=_INITIALIZE, headers={"Accept": "application/json, text/event-stream"})
        await first.aclose()
        if first.status_code != 401:
            return None
        scope = extract_scope_from_www_auth(first)
        where = extract_resource_metadata_from_www_auth(first)
        for candidate in build_protected_resource_metadata_discovery_urls(where, url):
            try:
                found = await handle_protected_resource_response(await http.get(candidate))
            except httpx2.HTTPError:
                continue
            if found is not None:
                return Challenge(found, scope)
    return Challenge(None, scope)
