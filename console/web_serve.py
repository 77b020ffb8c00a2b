"""``ava-console --web``: the browser console, served only to the operator who started it.

Why it exists: textual-serve's server answers any page and any ``Host``. Its WebSocket starts a console process
for whoever connects, and a console can run commands (the server form's Test button runs the command typed into
it). Every web page the operator visits can reach a port on 127.0.0.1, and a DNS-rebinding site can even call it
by its own name, so without a guard any site could drive the console. ``GuardedServer`` puts three checks in front
of every route of textual-serve's app, in this order:

1. **Host**: a loopback name, the literal bind address, the public URL's host, or a name given with
   ``--allow-host``; anything else is refused (421), even from 127.0.0.1: that is DNS rebinding.
2. **Origin**: a request a page sends (browsers always send ``Origin`` on a WebSocket handshake) must come from
   the console's own origin (the request's own ``Host``), the public URL's, or one given with ``--allow-origin`` (403).
3. **Token**: a secret made at each start (``secrets.token_urlsafe``), printed in the URL as Jupyter does. The page
   takes it from ``?token=`` and keeps it in an HttpOnly, SameSite=Strict cookie for its WebSocket; the WebSocket and
   downloads need it too (401). Compared in constant time. Only the page's static files are served without it.

The Host/Origin rule is the engine's (``engine.browser_refusal``), the one its HTTP API applies.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from html import escape
from typing import TextIO

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler, Middleware
from textual_serve.server import Server

from console._compat import check_serve_overrides
from console.web_access import PUBLIC_PREFIX, WebAccess
from engine import RedactingFilter, Redactor, browser_refusal
from engine.config.models.engine import is_loopback_host

check_serve_overrides()  # GuardedServer overrides textual-serve's private _make_app


def refuse(status: int, text: str) -> web.Response:
    page = f"<!doctype html><title>ava-console</title><p>{escape(text)}</p>\n"
    return web.Response(status=status, text=page, content_type="text/html")


def guard(access: WebAccess) -> Middleware:
    """The aiohttp middleware in front of every route of the browser console."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = browser_refusal(
            request.headers.getall(hdrs.HOST, []),
            request.headers.getall(hdrs.ORIGIN, []),
            access.host,
            access.allowed_hosts,
            access.allowed_origins,
        )
        if refused is not None and refused[0] == "host":
            return refuse(
                421,
                f"Host {refused[1]!r} is not served here: the browser console answers loopback names and the "
                "address it was started with, to defeat DNS rebinding (ava-console --web --allow-host NAME admits "
                "a name)",
            )
        if refused is not None:
            return refuse(
                403,
                f"Origin {refused[1]!r} is not allowed: only the console's own page may use it "
                "(ava-console --web --allow-origin ORIGIN admits another)",
            )
        if request.path.startswith(PUBLIC_PREFIX):
            return await handler(request)
        given = request.query.get("token")
        if access.token_ok(given):
            if request.path == "/" and (moved := access.same_machine_redirect(request.host)) is not None:
                raise web.HTTPFound(moved)  # one origin for the page, its cookie and its WebSocket
            response = await handler(request)
            if request.path == "/" and not response.prepared:
                response.set_cookie(
                    access.cookie_name,
                    access.token,
                    httponly=True,
                    samesite="Strict",
                    secure=access.public_url.startswith("https://"),
                    path="/",
                )
            return response
        if access.token_ok(request.cookies.get(access.cookie_name)):
            return await handler(request)
        return refuse(
            401,
            "This console needs its access token: open the URL ava-console printed when it started "
            "(it ends in ?token=…).",
        )

    return middleware


class GuardedServer(Server):
    """textual-serve's ``Server`` with the guard in front of every route and the tokened URL printed at start."""

    def __init__(self, command: str, access: WebAccess, out: TextIO | None = None) -> None:
        super().__init__(command, host=access.host, port=access.port, title="ava-console", public_url=access.public_url)
        self.access = access
        self.out = out or sys.stdout

    def initialize_logging(self) -> None:
        super().initialize_logging()
        # The page's URL carries the token: every log line (aiohttp's access log included) is masked by the
        # engine's redactor before any handler writes it.
        masking = RedactingFilter(Redactor([self.access.token]))
        for handler in logging.getLogger().handlers:
            handler.addFilter(masking)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.insert(0, guard(self.access))  # before any route: Host, Origin, then the token
        return app

    async def on_startup(self, app: web.Application) -> None:
        # aiohttp runs the start-up hooks before it binds the port: the URL is printed once the port answers, so
        # whoever opens it (a person, a script reading this line) never meets a refused connection
        self._announcing = asyncio.get_running_loop().create_task(self._announce_when_listening())

    async def _announce_when_listening(self) -> None:
        host = self.access.host.strip("[]")
        probe = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        for _ in range(200):  # 10 s at most, then say it anyway
            try:
                _reader, writer = await asyncio.open_connection(probe, self.access.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            break
        print(f"ava-console is served at {self.access.url}", file=self.out, flush=True)
        if not is_loopback_host(host) and not self.access.public_url.startswith("https://"):
            print(
                "warning: this address is reachable from other machines and the token travels in clear text; "
                "serve it behind a TLS proxy (--public-url https://…)",
                file=self.out,
                flush=True,
            )
        print("Press Ctrl+C to stop.", file=self.out, flush=True)
