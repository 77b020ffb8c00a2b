"""OAuth 2.1 for remote MCP servers: the SDK's ``OAuthClientProvider``, configured for the engine, with its gaps filled.

Why it exists: the SDK does the protocol (protected-resource metadata discovery, authorization-server metadata and
its ``issuer`` check, PKCE, the RFC 8707 ``resource`` indicator, Client ID Metadata Documents when the server
supports them with dynamic registration as the fallback, the RFC 9207 ``iss`` check of the redirect, refresh). What
the engine needs beyond it lives here, and only that:

- **A refused token is refreshed first.** On a 401 for a token that had not expired (revoked, or forgotten by a
  restarted server) the SDK goes straight to a new authorization; here the refresh token is tried first.
- **No browser from the engine.** A supervised connection never waits for a person: when the flow would send the
  operator to the authorization page, ``SignInRequired`` ends it, the request gets the server's 401 back as an
  ordinary error (the transport stays sane), and ``on_needs_sign_in`` tells the supervisor, which moves the server
  to ``needs sign-in``. Sign-in itself is ``engine.mcp.signin`` (CLI and console).
- **Refresh before expiry, across restarts.** The SDK treats a token loaded from storage as valid until a 401,
  refreshes only once the expiry has passed, and forgets the discovered token endpoint (a refresh after a restart
  would go to the resource server's origin); here the absolute expiry and the discovered metadata are kept in the
  keyring record (``engine.mcp.token_store``) and the token counts as expired ``refresh_margin_s`` early, so the
  SDK refreshes before the server would refuse it. ``oauth_watch.keep_fresh`` makes an idle connection refresh on
  time too (or find out that it cannot, and go to ``needs sign-in``) instead of on its next tool call.
- **Pre-registered clients and forgotten registrations** (``engine.mcp.oauth_client``): the client from
  ``auth.oauth.client_id`` is used as given; a stored registration the authorization server no longer knows
  (``invalid_client``) is dropped, so the next sign-in registers again.
- **Scope step-up.** A 403 ``insufficient_scope`` needs a person to consent to more: the server goes to
  ``needs sign-in`` with the new scopes named, the scopes wanted are kept in the keyring record, and the next sign-in
  asks for all of them (the configured ``scopes``, the ones granted before and the new ones: SEP-2350's union).
- **Clear faults** (``engine.mcp.oauth_faults``): the SDK's errors are turned into one line naming the server and
  what went wrong: a 401 without any discovery metadata, an unreachable token endpoint, an error answer from the
  authorization server.
- **Grants without a person** (``auth.oauth.grant``: client credentials, workload identity, enterprise ID-JAG) are
  ``engine.mcp.oauth_machine``: subclasses of this provider on the SDK's own grant extensions.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Final

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import (
    create_client_registration_request,
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

from engine.config.models import McpServerConfig
from engine.mcp.oauth_client import ClientForgotten, client_known, invalid_client, pre_registered
from engine.mcp.oauth_dpop import DPoP
from engine.mcp.oauth_faults import AuthorizationDenied, SignInRequired, explain

__all__ = ["AuthorizationDenied", "EngineOAuth", "SignInRequired", "sign_in_hint"]
from engine.mcp.token_store import KeyringTokenStorage

log = logging.getLogger(__name__)

NEEDS_SIGN_IN: Final = "needs sign-in"
#: The longest head start a refresh takes before the access token's expiry …
REFRESH_MARGIN_S = 60.0
#: … and never more than this share of the token's lifetime (a 10-second token refreshes 2 s early).
REFRESH_MARGIN_SHARE = 0.2
#: Where an engine-side provider says it would redirect to, before any sign-in registered a real one.
PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"


def sign_in_hint(server_id: str) -> str:
    return (
        f"server {server_id} {NEEDS_SIGN_IN}: run `ava-engine mcp login {server_id}` "
        "or use Sign in on the console's Servers screen"
    )


def client_metadata(cfg: McpServerConfig, redirect_uri: str) -> OAuthClientMetadata:
    oauth = cfg.auth.oauth if cfg.auth is not None else None
    return OAuthClientMetadata(
        client_name=oauth.client_name if oauth else "ava-console",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic turns the str into AnyUrl
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_basic" if oauth and oauth.client_secret else "none",
        scope=" ".join(oauth.scopes) if oauth and oauth.scopes else None,
    )


class EngineOAuth(OAuthClientProvider):
    """``OAuthClientProvider`` with the keyring store, an early refresh, fault wording and no browser in the engine.

    ``interactive`` providers (sign-in) get the redirect and callback handlers and start from no token; engine
    providers load the stored token and end in ``SignInRequired`` where a person would be needed.
    """

    #: The client the config names (``client_id``), used as given; None for a registered or CIMD client.
    pre_registered: OAuthClientInformationFull | None

    def __init__(
        self,
        server_id: str,
        cfg: McpServerConfig,
        storage: KeyringTokenStorage,
        *,
        redirect_uri: str,
        redirect_handler: Callable[[str], Awaitable[None]] | None = None,
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
        on_needs_sign_in: Callable[[str], None] | None = None,
    ) -> None:
        self._engine_setup(server_id, cfg, storage, redirect_handler is not None, on_needs_sign_in)
        self.pre_registered = pre_registered(cfg, redirect_uri)
        oauth = cfg.auth.oauth if cfg.auth is not None else None
        OAuthClientProvider.__init__(
            self,
            server_url=str(cfg.url),
            client_metadata=client_metadata(cfg, redirect_uri),
            storage=storage,
            redirect_handler=redirect_handler if self.interactive else self._no_browser,
            callback_handler=callback_handler if self.interactive else self._no_callback,
            client_metadata_url=oauth.client_metadata_url if oauth else None,
        )

    def _engine_setup(
        self,
        server_id: str,
        cfg: McpServerConfig,
        storage: KeyringTokenStorage,
        interactive: bool,
        on_needs_sign_in: Callable[[str], None] | None,
    ) -> None:
        """The engine's own fields, set before the SDK provider's ``__init__`` (subclasses call another one)."""
        self.server_id = server_id
        self.storage = storage
        #: A sign-in (``mcp login``, the console): starts from no token and raises what goes wrong.
        self.interactive = interactive
        self._on_needs_sign_in = on_needs_sign_in
        #: The last fault of the flow, worded for the operator (None while all is well).
        self.fault: str | None = None
        oauth = cfg.auth.oauth if cfg.auth is not None else None
        self.cfg_scope = " ".join(oauth.scopes) if oauth and oauth.scopes else None
        self.pre_registered = None
        #: The authorization server answered ``invalid_client`` for the stored registration (now dropped).
        self.client_forgotten = False
        #: This flow registered the client (a registration just made needs no check that the server knows it).
        self.registered_now = False
        #: The scopes a 403 ``insufficient_scope`` of the last request asked for (step-up), else None.
        self._step_up: str | None = None
        #: The config keys beside ``client_id`` that prove who the client is (named when it is refused).
        self.credential_keys = "client_secret"
        #: A grant without a person (``engine.mcp.oauth_machine``): it gets its own token, a sign-out changes nothing.
        self.machine = False
        self.dpop = DPoP(storage, oauth.dpop if oauth is not None else False)

    # ------------------------------------------------------------------------------------------- expiry

    async def _initialize(self) -> None:
        self.context.client_info = self.pre_registered or await self.context.storage.get_client_info()
        if self.interactive:  # a sign-in always asks the operator afresh
            self.context.current_tokens = None
        else:
            self.context.current_tokens = await self.context.storage.get_tokens()
            prm, asm = self.storage.discovery()
            if self.context.oauth_metadata is None and asm is not None:  # what the sign-in discovered
                self.context.protected_resource_metadata = prm
                self.context.oauth_metadata = asm
                self.context.auth_server_url = str(prm.authorization_servers[0]) if prm is not None else None
            expires_at = self.storage.expires_at()
            token = self.context.current_tokens
            if expires_at is not None and token is not None:
                lifetime = token.expires_in or (expires_at - time.time())
                self.context.token_expiry_time = expires_at - _margin(lifetime)
        self._initialized = True

    def _early(self) -> None:
        token = self.context.current_tokens
        if token is not None and token.expires_in is not None and self.context.token_expiry_time is not None:
            self.context.token_expiry_time -= _margin(token.expires_in)

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if response.status_code not in (200, 201) and invalid_client(response.status_code, await response.aread()):
            self._forget_client()
            raise ClientForgotten("the authorization server does not know this client (invalid_client)")
        await super()._handle_token_response(response)
        self._early()
        ctx = self.context
        self.storage.set_discovery(
            ctx.protected_resource_metadata.model_dump(mode="json") if ctx.protected_resource_metadata else None,
            ctx.oauth_metadata.model_dump(mode="json") if ctx.oauth_metadata else None,
        )

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response.status_code != 200 and invalid_client(response.status_code, await response.aread()):
            self._forget_client()
        ok = await super()._handle_refresh_response(response)
        if ok:
            self._early()
            log.info("server %s: OAuth access token refreshed", self.server_id)
        return ok

    def _forget_client(self) -> None:
        self.client_forgotten = True
        if self.pre_registered is None:  # a pre-registered one is the administrator's to fix, not ours to drop
            log.info(
                "server %s: the authorization server forgot this client; its registration is dropped", self.server_id
            )
            self.storage.forget_client()
            self.context.client_info = None

    async def check_client(self) -> None:
        """Before the operator is sent to the authorization page: ``ClientForgotten`` when the server no longer
        knows the stored (dynamically registered) client, which is dropped then."""
        ctx = self.context
        if (
            self.pre_registered is not None
            or self.registered_now
            or ctx.client_info is None
            or ctx.client_info.client_id == ctx.client_metadata_url
        ):
            return
        if not await client_known(self):
            self._forget_client()
            raise ClientForgotten("the authorization server does not know this client (invalid_client)")

    def wanted_scope(self) -> str | None:
        """What a sign-in asks for: the configured scopes, then those a step-up asked for (kept in the keyring)."""
        return union_scopes(self.cfg_scope, self.storage.wanted_scope())

    async def _perform_authorization(self) -> httpx2.Request:
        self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, self.wanted_scope())
        return await super()._perform_authorization()

    def refresh_due_in(self) -> float | None:
        """Seconds until the token should be refreshed (it counts as expired then); None without an expiry."""
        expiry = self.context.token_expiry_time
        return None if expiry is None else max(0.0, expiry - time.time())

    # ------------------------------------------------------------------------------------------- no browser

    async def _no_browser(self, url: str) -> None:
        raise SignInRequired(sign_in_hint(self.server_id))

    async def _no_callback(self) -> AuthorizationCodeResult:  # never reached: _no_browser raised before
        raise SignInRequired(sign_in_hint(self.server_id))

    # ------------------------------------------------------------------------------------------- the flow

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The engine's flow (``_flow``) with DPoP (``engine.mcp.oauth_dpop``) on every request it sends."""
        flow = self._flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                token_request = outgoing.method == "POST" and str(outgoing.url) == self._get_token_endpoint()
                self.dpop.sign(outgoing, token_request=token_request)
                response = yield outgoing
                if await self.dpop.wants_nonce(outgoing, response):  # a nonce to put in the proof: once more with it
                    self.dpop.sign(outgoing, token_request=token_request)
                    response = yield outgoing
                await self.dpop.observe(outgoing, response)
                if token_request:
                    response = await self.dpop.token_answer(outgoing, response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        inner = super()._auth_flow(request)
        waiting_on: httpx2.Request | None = None  # an OAuth request (metadata, token …) sent and not yet answered
        self._step_up = None
        try:
            outgoing = await inner.__anext__()
            while True:
                waiting_on = None if outgoing is request else outgoing
                if self.interactive and self._registering(outgoing):  # register for every scope wanted
                    self.registered_now = True
                    ctx = self.context
                    ctx.client_metadata.scope = union_scopes(ctx.client_metadata.scope, self.wanted_scope())
                    base = ctx.get_authorization_base_url(ctx.server_url)
                    outgoing = create_client_registration_request(ctx.oauth_metadata, ctx.client_metadata, base)
                response = yield outgoing
                waiting_on = None
                if outgoing is request:
                    self._step_up = _step_up_scope(response)
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        except Exception as e:
            if self.interactive:
                self.fault = self.explain(e)
                raise
            if isinstance(e, SignInRequired) and self._step_up is not None:
                e = SignInRequired(self._more_scope(self._step_up))  # a refresh cannot widen the grant
            elif isinstance(e, SignInRequired) and self.context.can_refresh_token():
                # The server refused a token that had not expired (revoked, or the server forgot it): the SDK
                # would send a person to the browser; a refresh token may still get a new one without anybody.
                sent = request.headers.get("Authorization")
                async with self.context.lock:
                    tokens = self.context.current_tokens
                    if tokens is not None and (sent or "").partition(" ")[2] != tokens.access_token:
                        refreshed = True  # a concurrent request refreshed it already: retry with that one
                    else:
                        refresh = await self._refresh_token()
                        waiting_on = refresh
                        refreshed = await self._handle_refresh_response((yield refresh))
                        waiting_on = None
                if refreshed:
                    self._add_auth_header(request)
                    retried = yield request
                    if retried.status_code != 401:
                        self.fault = None
                        return
            self.fault = self.explain(e)
            if isinstance(e, SignInRequired) and self._on_needs_sign_in is not None:
                self._on_needs_sign_in(self.fault)
            # The request goes out once more without a token: its 401 reaches the caller as an ordinary error,
            # where an exception from here would take the transport's writer down with it.
            request.headers.pop("Authorization", None)
            yield request
        finally:
            if waiting_on is not None:  # the request itself failed (httpx closes the flow): say which
                self.fault = self._unreachable(waiting_on)
            await inner.aclose()

    def _registering(self, outgoing: httpx2.Request) -> bool:
        ctx = self.context
        if outgoing.method != "POST" or ctx.client_info is not None:
            return False
        endpoint = ctx.oauth_metadata.registration_endpoint if ctx.oauth_metadata is not None else None
        return str(outgoing.url) == str(endpoint) if endpoint else outgoing.url.path == "/register"

    def _more_scope(self, challenged: str) -> str:
        """Keep the wider scope for the next sign-in; the operator's instruction, naming the new scopes."""
        tokens = self.context.current_tokens
        granted = tokens.scope if tokens is not None else None
        wanted = union_scopes(union_scopes(self.wanted_scope(), granted), challenged) or challenged
        new = [s for s in challenged.split() if s not in (granted or "").split()] or challenged.split()
        with contextlib.suppress(Exception):  # a keyring that fails now: the message still names the scopes
            self.storage.want_scope(wanted)
        return (
            f"server {self.server_id} {NEEDS_SIGN_IN} for more access: it asks for scope {' '.join(new) or '?'}; run "
            f"`ava-engine mcp login {self.server_id}` (or Sign in on the console's Servers screen) to consent to "
            f"{wanted}"
        )

    def _unreachable(self, request: httpx2.Request) -> str:
        what = "authorization server's token endpoint" if request.method == "POST" else "OAuth metadata URL"
        url = str(request.url).split("?")[0]
        return f"server {self.server_id}: the {what} {url} did not answer (is the authorization server up?)"

    def explain(self, exc: BaseException) -> str:
        """One line for the operator, naming the server; never a token (the SDK's messages carry none)."""
        return explain(self, exc)


def _step_up_scope(response: httpx2.Response) -> str | None:
    """The scope a 403 ``insufficient_scope`` challenge asks for (RFC 6750 §3.1), else None."""
    if response.status_code != 403 or extract_field_from_www_auth(response, "error") != "insufficient_scope":
        return None
    return extract_scope_from_www_auth(response) or ""


def _margin(lifetime_s: float) -> float:
    return min(REFRESH_MARGIN_S, max(0.0, lifetime_s) * REFRESH_MARGIN_SHARE)
