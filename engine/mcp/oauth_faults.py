"""What went wrong in an OAuth flow, worded for the operator: one line naming the server, never a token.

Why it exists: every grant (a person's sign-in, client credentials, workload identity, enterprise ID-JAG) meets the
same faults (no discovery metadata, a refused token request, an unknown client, an authorization server that does
not answer) and each must reach the CLI, the console and the server's ``last_error`` as the same sentence. The SDK
logs each flow error at ERROR with its traceback; ``_QuietFlowErrors`` keeps that record as one DEBUG line, since
the sentence here is what the operator sees.
"""

from __future__ import annotations

import logging
from typing import Protocol

import httpx2
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull

from engine.mcp.oauth_client import ClientForgotten


class FlowState(Protocol):
    """What ``explain`` reads of an OAuth provider (``engine.mcp.oauth.EngineOAuth``)."""

    server_id: str
    context: OAuthContext
    client_forgotten: bool
    pre_registered: OAuthClientInformationFull | None
    credential_keys: str


class SignInRequired(Exception):
    """The server needs an interactive sign-in (no token, or it expired and cannot be refreshed)."""


class AuthorizationDenied(OAuthFlowError):
    """The authorization server redirected back with an ``error`` instead of a code."""


class GrantInputError(OAuthFlowError):
    """A grant's own input (a key file, an assertion, an ID token) could not be read; the message names the key."""


class _QuietFlowErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.msg == "OAuth flow error":
            exc = record.exc_info[1]
            record.msg = "OAuth flow error: %s: %s"
            record.args = (type(exc).__name__, short(exc) if exc is not None else "")
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietFlowErrors())


def short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


def explain(auth: FlowState, exc: BaseException) -> str:
    """One line for the operator, naming the server; never a token (the SDK's messages carry none)."""
    sid = auth.server_id
    ctx = auth.context
    if isinstance(exc, SignInRequired) and auth.client_forgotten:
        return (
            f"{exc} (the authorization server no longer knows this client: its registration was dropped and the "
            "sign-in registers it again)"
        )
    if isinstance(exc, SignInRequired):
        return str(exc)
    if isinstance(exc, ClientForgotten) and auth.pre_registered is not None:
        return (
            f"server {sid}: the authorization server does not accept client_id {auth.pre_registered.client_id!r} "
            f"(mcp.servers.{sid}.auth.oauth.client_id / {auth.credential_keys}): check both with its administrator"
        )
    if isinstance(exc, ClientForgotten):
        return (
            f"server {sid}: the authorization server no longer knows this client (invalid_client); its "
            f"registration was dropped: run `ava-engine mcp login {sid}` again to register anew"
        )
    if isinstance(exc, AuthorizationDenied | GrantInputError):
        return f"server {sid}: {exc}"
    if (
        isinstance(exc, OAuthRegistrationError)
        and ctx.protected_resource_metadata is None
        and ctx.oauth_metadata is None
    ):
        return (
            f"server {sid} answered 401 but publishes no OAuth discovery metadata (no protected-resource "
            f"metadata, no authorization-server metadata at {ctx.get_authorization_base_url(ctx.server_url)}): "
            "it cannot be signed in to; check the URL, or give its token in 'headers' instead"
        )
    if isinstance(exc, OAuthRegistrationError):
        return f"server {sid}: the authorization server refused to register this client: {short(exc)}"
    if isinstance(exc, OAuthTokenError):
        return f"server {sid}: the authorization server refused the token request: {short(exc)}"
    if isinstance(exc, OAuthFlowError):
        return f"server {sid}: OAuth sign-in failed: {short(exc)}"
    if isinstance(exc, httpx2.TransportError):
        return f"server {sid}: the authorization server did not answer: {type(exc).__name__}"
    return f"server {sid}: OAuth sign-in failed: {type(exc).__name__}: {short(exc)}"
