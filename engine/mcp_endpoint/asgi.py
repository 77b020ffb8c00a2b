"""Serve an ASGI application from an aiohttp handler (request scope, streamed body, streamed response, SSE).

Why it exists: the MCP SDK's streamable-HTTP server side is ASGI (starlette), while the engine's HTTP server is
aiohttp. The one maintained adapter on PyPI (aiohttp-asgi 0.7) answers ``receive()`` after the body with endless
empty ``http.request`` messages instead of waiting for the disconnect, which makes starlette's and
sse-starlette's disconnect listeners spin; this adapter keeps to the ASGI 3 HTTP spec instead:

* ``receive()`` yields the body chunk by chunk as it streams in, then blocks until the client disconnects or the
  response is complete, and then answers ``http.disconnect``;
* ``send()`` starts the aiohttp ``StreamResponse`` on ``http.response.start`` (repeated headers kept, chunked when
  no Content-Length is given) and writes each ``http.response.body`` chunk as it comes, so SSE events reach the
  client at once; writes after the client left are dropped and turn into ``http.disconnect``;
* a body longer than ``engine.http.max_body_bytes`` (also a chunked one, which has no Content-Length for the
  guard to refuse early) ends the exchange: the app is told the client left and the client gets a JSON 413.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from engine.http.backend import BACKEND_KEY
from engine.http.guard import too_large

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

#: How often a request whose body is read checks whether its client is still connected.
DISCONNECT_POLL_S = 0.25


def build_scope(request: web.Request) -> dict[str, Any]:
    """The ASGI ``http`` scope of one aiohttp request."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) and len(peer) >= 2 else None,
        "server": (str(sock[0]), int(sock[1])) if isinstance(sock, tuple) and len(sock) >= 2 else None,
        "state": {},
    }


class _Exchange:
    """One request/response pair between aiohttp and the ASGI app."""

    def __init__(self, request: web.Request, max_body: int | None = None) -> None:
        self.request = request
        self.max_body = max_body
        self.received = 0
        self.overflow = False
        self.response: web.StreamResponse | None = None
        self.body_done = False
        self.finished = False
        self.gone = asyncio.Event()

    def _client_left(self) -> bool:
        transport = self.request.transport
        return transport is None or transport.is_closing()

    async def receive(self) -> Message:
        if not self.body_done:
            try:
                chunk = await self.request.content.readany()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.gone.set()
                return {"type": "http.disconnect"}
            self.received += len(chunk)
            if self.max_body is not None and self.received > self.max_body:
                self.overflow = True  # the app sees a client that left; run() answers 413
                self.body_done = True
                self.gone.set()
                return {"type": "http.disconnect"}
            more = bool(chunk) and not self.request.content.at_eof()
            self.body_done = not more
            return {"type": "http.request", "body": chunk, "more_body": more}
        while not self.gone.is_set():
            if self.finished or self._client_left():
                self.gone.set()
                break
            try:
                await asyncio.wait_for(self.gone.wait(), DISCONNECT_POLL_S)
            except TimeoutError:
                continue
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.overflow and self.response is None:
            return  # whatever the app says about a body it never got whole, the client gets the 413
        kind = message["type"]
        if kind == "http.response.start":
            if self.response is not None:
                raise RuntimeError("ASGI app sent http.response.start twice")
            headers: CIMultiDict[str] = CIMultiDict()
            for name, value in message.get("headers", ()):
                headers.add(name.decode("latin-1"), value.decode("latin-1"))
            response = web.StreamResponse(status=int(message["status"]), headers=headers)
            if "Content-Length" not in headers and self.request.version >= (1, 1):
                response.enable_chunked_encoding()
            self.response = response
            try:
                await response.prepare(self.request)
            except ConnectionError:
                self.gone.set()
            return
        if kind == "http.response.body":
            if self.response is None:
                raise RuntimeError("ASGI app sent a body before http.response.start")
            if self.finished:
                return
            body = bytes(message.get("body", b""))
            more = bool(message.get("more_body", False))
            if self.gone.is_set():
                self.finished = not more
                return
            try:
                if body:
                    await self.response.write(body)
                if not more:
                    await self.response.write_eof()
                    self.finished = True
            except (ConnectionError, RuntimeError) as e:
                log.debug("client left during the response: %s", e)
                self.gone.set()
            return
        log.debug("ignoring ASGI message %r", kind)

    async def run(self, app: AsgiApp) -> web.StreamResponse:
        try:
            await app(build_scope(self.request), self.receive, self.send)
        except Exception:
            if not self.overflow:
                raise
            log.debug("the ASGI app failed after an oversized body", exc_info=True)
        finally:
            self.finished = True
            self.gone.set()
        if self.overflow and self.response is None and self.max_body is not None:
            message = too_large(self.received, self.max_body) + " (counted so far)"
            return web.json_response({"error": message, "key": "engine.http.max_body_bytes"}, status=413)
        if self.response is None:
            return web.json_response({"error": "the MCP endpoint sent no response"}, status=500)
        if self.response.prepared:
            try:
                await self.response.write_eof()
            except (ConnectionError, RuntimeError):
                pass
        return self.response


def body_limit(request: web.Request) -> int | None:
    """``engine.http.max_body_bytes`` of the app serving ``request`` (None outside the engine's HTTP app)."""
    backend = request.app.get(BACKEND_KEY)
    return None if backend is None else backend.settings.engine.http.max_body_bytes


async def serve_asgi(app: AsgiApp, request: web.Request, max_body: int | None = None) -> web.StreamResponse:
    """Run ``app`` for one aiohttp request and return the (already sent) response.

    The body is bounded by ``max_body`` bytes, by default the engine's ``engine.http.max_body_bytes``.
    """
    return await _Exchange(request, max_body if max_body is not None else body_limit(request)).run(app)
