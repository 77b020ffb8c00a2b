"""Capacity over HTTP: ``GET /capacity``, ``POST /drain`` and ``POST /resume``, for ``ava-engine drain`` and
orchestrators doing a rolling restart.

Why it exists: a headless ``serve`` has no console to tell it to stop taking calls; the drain command reaches the
running engine through its HTTP API, behind the same guard as every route (Host and Origin checked, the bearer
token when ``engine.http.auth_token`` is set, JSON-only bodies). /health carries the same facts (``health()``),
so a load balancer sees a draining engine and the store's state without a token.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web

from engine.http.responses import json_response


class CapacityDesk(Protocol):
    """The capacity commands of the operator's desk (``engine.operator.desk.OperatorDesk``)."""

    def drain(self) -> dict[str, object]: ...

    def resume(self) -> dict[str, object]: ...

    def capacity(self, status: object = None) -> dict[str, object]: ...


class HttpCapacity:
    """The capacity routes and /health's ``capacity`` section (the wiring registers both; nothing to start)."""

    name = "capacity"

    def __init__(self, desk: CapacityDesk) -> None:
        self.desk = desk

    def health(self) -> dict[str, object]:
        return self.desk.capacity()

    def install_routes(self, app: web.Application) -> None:
        app.router.add_get("/capacity", self.show)
        app.router.add_post("/drain", self.drain)
        app.router.add_post("/resume", self.resume)

    async def show(self, request: web.Request) -> web.Response:
        return json_response(self.desk.capacity())

    async def drain(self, request: web.Request) -> web.Response:
        return json_response(self.desk.drain())

    async def resume(self, request: web.Request) -> web.Response:
        return json_response(self.desk.resume())
