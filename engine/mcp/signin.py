"""Interactive OAuth sign-in to a remote MCP server: the URL for the operator, a loopback redirect listener, a test.

Why it exists: ``ava-engine mcp login SERVER`` and the console's Sign in both need the same steps, and the engine's
supervised connections must never take them (``engine.mcp.oauth``). ``SignIn.run`` binds a listener on 127.0.0.1
(``auth.oauth.redirect_port``, 0 = any free port), drives the SDK's flow through a real connection to the server
(discovery, CIMD or registration, PKCE, ``resource``), hands the authorization URL to ``show_url``, waits for the
browser's redirect (bounded by ``timeout_s``; a request to the listener without this sign-in's ``state`` gets a
400 page and is otherwise ignored, since any page the browser opens can send one), lets the SDK exchange the code
and store the tokens in the keyring, then lists the server's tools: a sign-in that returns has been tested. A
registration made for another redirect URI (the port changed) is dropped first so the server registers the client
again; so is one the authorization server no longer knows (checked before the operator is sent to its page, and
registered again once). A step-up's wider scopes are asked for (``EngineOAuth.wanted_scope``). A grant without a
person (``auth.oauth.grant``, ``engine.mcp.oauth_machine``) skips the listener and the browser: ``run`` fetches a
new token, stores it and lists the tools the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from aiohttp import web
from mcp.shared.auth import AuthorizationCodeResult

from engine.config.models import McpServerConfig
from engine.mcp.connection import describe
from engine.mcp.oauth import AuthorizationDenied, EngineOAuth
from engine.mcp.token_store import KeyringTokenStorage
from engine.mcp.transports import build_client

log = logging.getLogger(__name__)

CALLBACK_PATH = "/callback"
#: How long a sign-in waits for the operator to finish in the browser.
SIGN_IN_TIMEOUT_S = 300.0

_PAGE = "<!doctype html><title>ava-console</title><p>{}</p>"
_NOT_OURS = (
    "ava-engine ignored this request: this sign-in link is not the one ava-engine is waiting for. "
    "Finish signing in from the link ava-engine showed, or start the sign-in again."
)


class SignInError(Exception):
    """Sign-in did not complete; the message names the server and the reason (never a token)."""


class LoopbackListener:
    """One authorization redirect, received on ``http://127.0.0.1:PORT/callback``."""

    def __init__(self, port: int = 0) -> None:
        self._port = port
        self._runner: web.AppRunner | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self._state: bytes | None = None
        self.redirect_uri = ""

    def expect(self, authorization_url: str) -> None:
        """Answer only the redirect that carries the ``state`` of ``authorization_url`` (the one shown now)."""
        states = parse_qs(urlsplit(authorization_url).query).get("state") or [""]
        self._state = states[0].encode() or None

    async def __aenter__(self) -> LoopbackListener:
        self._result = asyncio.get_running_loop().create_future()
        app = web.Application()
        app.router.add_get(CALLBACK_PATH, self._callback)
        self._runner = web.AppRunner(app, access_log=None)  # the query carries the code: never logged
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        try:
            await site.start()
        except OSError as e:
            await self._runner.cleanup()
            raise SignInError(f"cannot listen for the sign-in redirect on 127.0.0.1:{self._port}: {e.strerror}") from e
        addresses = self._runner.addresses  # (host, port) of each bound socket: the port the OS chose for 0
        port = int(addresses[0][1]) if addresses else self._port
        self.redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _callback(self, request: web.Request) -> web.Response:
        q = request.query
        assert self._result is not None
        state = q.get("state", "").encode()
        if self._state is None or not secrets.compare_digest(state, self._state):
            log.warning("sign-in listener: ignored a request without the state of the sign-in it waits for")
            return web.Response(text=_PAGE.format(_NOT_OURS), status=400, content_type="text/html")
        if self._result.done():
            return web.Response(text=_PAGE.format("This sign-in has already finished."), content_type="text/html")
        if "error" in q:
            desc = q.get("error_description", "")
            reason = f"{q['error'][:80]}{': ' + desc[:200] if desc else ''}"
            self._result.set_exception(AuthorizationDenied(f"the authorization server refused sign-in ({reason})"))
            return web.Response(
                text=_PAGE.format("Sign-in was refused. You can close this window."),
                content_type="text/html",
                status=400,
            )
        if "code" not in q:
            return web.Response(
                text=_PAGE.format("No authorization code in this request."), status=400, content_type="text/html"
            )
        self._result.set_result(AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss")))
        return web.Response(text=_PAGE.format("Signed in. You can close this window."), content_type="text/html")

    async def wait(self) -> AuthorizationCodeResult:
        assert self._result is not None
        return await self._result


class SignIn:
    """One sign-in to ``server_id``; ``run`` returns a report (no token in it) or raises ``SignInError``."""

    def __init__(
        self,
        server_id: str,
        cfg: McpServerConfig,
        *,
        base_dir: Path,
        on_secret: Callable[[Iterable[str]], None] | None = None,
        timeout_s: float = SIGN_IN_TIMEOUT_S,
    ) -> None:
        if cfg.transport != "http" or cfg.auth is None:
            raise SignInError(f"server {server_id} has no 'auth.oauth' (only http servers with it sign in)")
        self.server_id = server_id
        self.cfg = cfg
        self.base_dir = base_dir
        self.on_secret = on_secret
        self.timeout_s = timeout_s
        self.storage = KeyringTokenStorage(server_id, str(cfg.url), on_secret)
        #: The authorization URL, once the flow got that far (the console shows it).
        self.url: str | None = None

    async def run(self, show_url: Callable[[str], Awaitable[None] | None]) -> dict[str, Any]:
        started = time.monotonic()
        assert self.cfg.auth is not None
        if self.cfg.auth.oauth.machine:
            return await self._fetch(started)
        async with LoopbackListener(self.cfg.auth.oauth.redirect_port) as listener:
            client_info = self.storage.client_info()
            registered = [str(u) for u in (client_info.redirect_uris or [])] if client_info is not None else []
            if client_info is not None and listener.redirect_uri not in registered:
                self.storage.forget_client()  # registered for another redirect URI: register again

            tools: list[str] = []
            for attempt in (1, 2):  # a second time only after a forgotten registration was dropped
                auth = self._auth(listener, show_url)
                try:
                    async with asyncio.timeout(self.timeout_s):
                        tools = await self._connect(auth)
                    break
                except TimeoutError:
                    if auth.fault:
                        raise SignInError(auth.fault) from None
                    raise SignInError(
                        f"server {self.server_id}: sign-in not completed within {self.timeout_s:g} s"
                        f"{' (the browser never came back to ' + listener.redirect_uri + ')' if self.url else ''}"
                    ) from None
                except SignInError:
                    raise
                except Exception as e:
                    if auth.client_forgotten and auth.pre_registered is None and attempt == 1:
                        log.info("server %s: registering this client again", self.server_id)
                        continue
                    raise SignInError(auth.fault or f"server {self.server_id}: sign-in failed: {describe(e)}") from e
        status = self.storage.status()
        if not status["signed_in"]:
            raise SignInError(auth.fault or f"server {self.server_id}: the server answered without asking to sign in")
        return {
            "server": self.server_id,
            "signed_in": True,
            "expires_at": status["expires_at"],
            "can_refresh": status["can_refresh"],
            "scope": status["scope"],
            "tools": tools,
            "elapsed_ms": round((time.monotonic() - started) * 1000),
        }

    async def _fetch(self, started: float) -> dict[str, Any]:
        """A grant without a person: a new token from the authorization server, stored and tested; no browser."""
        from engine.mcp.oauth_machine import machine_auth

        auth = machine_auth(self.server_id, self.cfg, self.storage, interactive=True)
        try:
            async with asyncio.timeout(self.timeout_s):
                tools = await self._connect(auth)
        except TimeoutError:
            raise SignInError(auth.fault or f"server {self.server_id}: no token within {self.timeout_s:g} s") from None
        except Exception as e:
            raise SignInError(auth.fault or f"server {self.server_id}: getting a token failed: {describe(e)}") from e
        status = self.storage.status()
        grant = self.cfg.auth.oauth.grant if self.cfg.auth is not None else "?"
        return {
            "server": self.server_id,
            "signed_in": bool(status["signed_in"]),
            "grant": grant,
            "expires_at": status["expires_at"],
            "can_refresh": status["can_refresh"],
            "scope": status["scope"],
            "tools": tools,
            "elapsed_ms": round((time.monotonic() - started) * 1000),
            **({} if status["signed_in"] else {"note": "the server answered without asking for a token: none needed"}),
        }

    def _auth(self, listener: LoopbackListener, show_url: Callable[[str], Awaitable[None] | None]) -> EngineOAuth:
        async def redirect(url: str) -> None:
            await auth.check_client()  # never send the operator to a page that says "Client ID not found"
            listener.expect(url)
            self.url = url
            shown = show_url(url)
            if shown is not None:
                await shown

        auth = EngineOAuth(
            self.server_id,
            self.cfg,
            self.storage,
            redirect_uri=listener.redirect_uri,
            redirect_handler=redirect,
            callback_handler=listener.wait,
        )
        return auth

    async def _connect(self, auth: httpx2.Auth) -> list[str]:
        client = build_client(
            self.cfg,
            base_dir=self.base_dir,
            message_handler=None,
            errlog=None,
            connect_s=self.cfg.connect_timeout_ms / 1000,
            auth=auth,
        )
        async with client:
            listed = await client.list_tools(cache_mode="bypass")
            names = [t.name for t in listed.tools]
            with suppress(Exception):
                while listed.next_cursor and len(names) < 10_000:
                    listed = await client.list_tools(cursor=listed.next_cursor, cache_mode="bypass")
                    names.extend(t.name for t in listed.tools)
        return names


def open_in_browser(url: str) -> bool:
    """Open ``url`` in a graphical browser when one can be shown (never a text browser taking over the terminal);
    True when one was asked to."""
    graphical = sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )
    if not graphical:
        return False
    import webbrowser

    try:
        return webbrowser.open(url)
    except Exception:  # no browser after all: the URL is shown anyway
        return False


def sign_out(server_id: str, cfg: McpServerConfig) -> bool:
    """Forget a server's OAuth tokens and client registration; True when some were stored."""
    return KeyringTokenStorage(server_id, str(cfg.url)).delete()
