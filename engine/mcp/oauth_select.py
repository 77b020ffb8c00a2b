"""Which OAuth provider a supervised connection gets: a grant without a person, or a person's stored sign-in.

Why it exists: the choice needs both ``engine.mcp.oauth`` (a person's sign-in) and ``engine.mcp.oauth_machine``
(which builds on it), so it sits above both rather than in ``oauth`` importing its own subclass module.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.config.models import McpServerConfig
from engine.mcp.oauth import PLACEHOLDER_REDIRECT, EngineOAuth, SignInRequired, sign_in_hint
from engine.mcp.oauth_machine import machine_auth
from engine.mcp.token_store import KeyringTokenStorage


def engine_auth(
    server_id: str,
    cfg: McpServerConfig,
    storage: KeyringTokenStorage,
    *,
    on_needs_sign_in: Callable[[str], None],
) -> EngineOAuth:
    """The provider a supervised connection uses; ``SignInRequired`` at once when a person's sign-in is needed and
    no token is stored (the engine never registers a client or opens a browser on its own). A grant without a
    person (``auth.oauth.grant``) gets its token itself, on connect and again on expiry or a 401."""
    if cfg.auth is not None and cfg.auth.oauth.machine:
        return machine_auth(server_id, cfg, storage, on_needs_sign_in=on_needs_sign_in)
    if storage.tokens() is None:
        raise SignInRequired(sign_in_hint(server_id))
    client = storage.client_info()
    redirect = str(client.redirect_uris[0]) if client is not None and client.redirect_uris else PLACEHOLDER_REDIRECT
    return EngineOAuth(server_id, cfg, storage, redirect_uri=redirect, on_needs_sign_in=on_needs_sign_in)
