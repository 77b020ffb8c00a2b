"""Which OAuth client the engine is to a remote server's authorization server, and whether that server still knows it.

Why it exists: the client is either pre-registered by an administrator (``auth.oauth.client_id`` and, for a
confidential client, ``client_secret`` from the keyring; sent with HTTP Basic as RFC 6749 §2.3.1 asks every server
to accept) or registered dynamically at the first sign-in and kept in the keyring. A dynamic registration can be
forgotten by the authorization server (one that keeps registrations in memory and restarted): its authorize page then
says "Client ID not found" to the operator's browser, where the engine never sees it, and the sign-in would wait for a
redirect that never comes. So before the operator is sent there, the token endpoint is asked about the stored client
(an authorization-code request with a code that cannot exist: a known client gets ``invalid_grant``, an unknown one
``invalid_client``, nothing is issued), and ``ClientForgotten`` makes the sign-in register again.
"""

from __future__ import annotations

import json
import logging
import secrets

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.shared.auth import OAuthClientInformationFull

from engine._compat.mcp_sdk import token_endpoint
from engine.config.models import McpServerConfig

log = logging.getLogger(__name__)

#: How long the check of a stored registration may take before the sign-in goes on without it.
PROBE_TIMEOUT_S = 10.0


class ClientForgotten(OAuthFlowError):
    """The authorization server answered ``invalid_client``: it does not know the client id presented."""


def pre_registered(cfg: McpServerConfig, redirect_uri: str) -> OAuthClientInformationFull | None:
    """The client from ``auth.oauth.client_id`` / ``client_secret``; None when the config names none."""
    oauth = cfg.auth.oauth if cfg.auth is not None else None
    if oauth is None or oauth.client_id is None:
        return None
    secret = oauth.client_secret.get_secret_value() if oauth.client_secret is not None else None
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic turns the str into AnyUrl
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_name=oauth.client_name,
        scope=" ".join(oauth.scopes) or None,
    )


def invalid_client(status: int, body: bytes) -> bool:
    """Whether an authorization server's error answer says the client is unknown (RFC 6749 §5.2)."""
    if status not in (400, 401):
        return False
    try:
        found = json.loads(body)
    except ValueError:
        return False
    return isinstance(found, dict) and found.get("error") == "invalid_client"


async def client_known(provider: OAuthClientProvider) -> bool:
    """Whether the authorization server still knows the provider's client (True when it cannot tell)."""
    ctx = provider.context
    if ctx.client_info is None or ctx.client_metadata.redirect_uris is None:
        return True
    data = {
        "grant_type": "authorization_code",
        "code": "ava-engine-registration-check-" + secrets.token_urlsafe(8),
        "redirect_uri": str(ctx.client_metadata.redirect_uris[0]),
        "client_id": ctx.client_info.client_id or "",
        "code_verifier": secrets.token_urlsafe(48),
    }
    data, headers = ctx.prepare_token_auth(data, {"Content-Type": "application/x-www-form-urlencoded"})
    try:
        async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT_S) as http:
            answer = await http.post(token_endpoint(provider), data=data, headers=headers)
    except httpx2.HTTPError as e:  # the sign-in itself will meet (and word) an unreachable server
        log.debug("the registration check did not get an answer: %s", type(e).__name__)
        return True
    return not invalid_client(answer.status_code, answer.content)
