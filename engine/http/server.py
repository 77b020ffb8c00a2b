"""The HTTP server as an engine component: binds ``engine.http.host:port`` (port 0 = any free port).

Why it exists: the HTTP API has a lifecycle of its own (bind at start, release at stop, rebind when its config
changes on reload) and tests and one-shot CLI commands must be able to run it on an ephemeral port, or not at all;
``port`` tells where it actually listens.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from engine.config.models import Settings
from engine.http.app import RouteInstaller, build_app

if TYPE_CHECKING:
    from engine.app import Engine

log = logging.getLogger(__name__)


class HttpServer:
    name = "http"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._installers: list[RouteInstaller] = []
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        self.host: str | None = None

    def add_routes(self, installer: RouteInstaller) -> None:
        """Register routes to add when the app is built (call before ``start``)."""
        self._installers.append(installer)

    @property
    def url(self) -> str | None:
        return f"http://{self.host}:{self.port}" if self.port is not None else None

    async def start(self) -> None:
        cfg = self.engine.settings.engine.http
        app = build_app(self.engine, self._installers)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, cfg.host, cfg.port, reuse_address=True)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise OSError(f"engine HTTP cannot listen on {cfg.host}:{cfg.port}: {e.strerror or e}") from e
        self._runner = runner
        addresses = runner.addresses
        self.host = cfg.host
        self.port = int(addresses[0][1]) if addresses else cfg.port
        log.info("engine HTTP listening on http://%s:%s", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self.port = None

    async def reload(self, old: Settings, new: Settings) -> None:
        o, n = old.engine.http, new.engine.http
        if (o.host, o.port, o.enabled) == (n.host, n.port, n.enabled):
            return  # the token is read per request
        await self.stop()
        if n.enabled:
            await self.start()
