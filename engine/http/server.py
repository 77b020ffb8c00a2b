"""The HTTP server as an engine component: binds ``engine.http.host:port`` (port 0 = any free port).

Why it exists: the HTTP API has a lifecycle of its own (bind at start, release at stop, rebind when its config
changes on reload) and tests and one-shot CLI commands must be able to run it on an ephemeral port, or not at all;
``port`` tells where it actually listens. A bind that fails (port in use, no permission, no such address) is an
``HttpBindError`` whose message names the address and the config key, for ``serve`` to print as it is.
"""

from __future__ import annotations

import errno
import logging
import socket

from aiohttp import web

from engine.config.models import HttpConfig, Settings
from engine.config.models.engine import is_loopback_host
from engine.http.app import build_app
from engine.http.backend import HttpBackend

log = logging.getLogger(__name__)


class HttpBindError(OSError):
    """The HTTP API could not listen where the config says; ``str()`` is the whole explanation."""


def bind_problem(cfg: HttpConfig, e: OSError) -> str:
    """What went wrong binding ``cfg.host:cfg.port``, naming the config key to change."""
    where = f"port {cfg.port} on {cfg.host}"
    if e.errno == errno.EADDRINUSE:
        return (
            f"{where} is in use (engine.http.port): another program (or another ava-engine) listens there; "
            "stop it or choose another engine.http.port"
        )
    if e.errno == errno.EACCES:
        return f"{where} needs privileges this user lacks (engine.http.port): use a port above 1023"
    if isinstance(e, socket.gaierror):
        return f"cannot resolve {cfg.host!r} (engine.http.host): {e.strerror or e}"
    if e.errno == errno.EADDRNOTAVAIL:
        return f"{cfg.host} is not an address of this machine (engine.http.host)"
    return f"cannot listen on {where} (engine.http.host, engine.http.port): {e.strerror or e}"


def bind_error(cfg: HttpConfig, e: OSError) -> HttpBindError:
    err = HttpBindError(bind_problem(cfg, e))
    err.errno = e.errno
    return err


class HttpServer:
    name = "http"

    def __init__(self, backend: HttpBackend) -> None:
        self.backend = backend
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        self.host: str | None = None

    @property
    def url(self) -> str | None:
        if self.port is None or self.host is None:
            return None
        return f"http://[{self.host}]:{self.port}" if ":" in self.host else f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        cfg = self.backend.settings.engine.http
        if cfg.auth_token is None and not is_loopback_host(cfg.host):  # the config validator says so too
            raise HttpBindError(
                f"engine.http.host {cfg.host!r} is not loopback: set engine.http.auth_token to serve other machines"
            )
        app = build_app(self.backend)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, cfg.host, cfg.port, reuse_address=True)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise bind_error(cfg, e) from e
        self._runner = runner
        addresses = runner.addresses
        self.host = cfg.host
        self.port = int(addresses[0][1]) if addresses else cfg.port
        log.info("engine HTTP listening on %s", self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self.port = None

    async def reload(self, old: Settings, new: Settings) -> None:
        o, n = old.engine.http, new.engine.http
        if (o.host, o.port, o.enabled) == (n.host, n.port, n.enabled):
            return  # the token, allowed hosts/origins and body limit are read per request
        await self.stop()
        if n.enabled:
            await self.start()
