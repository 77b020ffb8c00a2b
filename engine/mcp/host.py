"""The MCP host: one supervisor per configured server, started together, reloaded by diff, asked for status.

Why it exists: this is the engine component (``engine.mcp``) the console, the CLI and the HTTP API talk to. It
starts every eager server concurrently and returns once each has come up or failed its first attempt (each
bounded by its ``connect_timeout_ms``, so one hung server never blocks readiness), starts lazy servers on first
use, applies config reloads by diff (added started, removed stopped, changed restarted, the rest untouched),
and answers ``status()``, ``restart_server``, ``set_server_enabled`` and ``test_server``.

It gets what it needs, not the engine: ``HostServices`` (registry, bus, metrics, redaction, the budget layer's
``on_up`` callback, the engine's ``spawn``), a settings getter and ``spawn`` for its own watcher task.

The client machinery (supervisors, connections, the MCP SDK: ~1.4 s of imports) loads when the first server is
configured or tested, not with the host: an engine without MCP servers never pays for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.config.models import McpServerConfig, Settings
from engine.core.tasks import Spawn
from engine.mcp.host_services import HostServices
from engine.mcp.naming import check_config

if TYPE_CHECKING:
    from engine.mcp.supervisor import Supervisor

log = logging.getLogger(__name__)


class UnknownServer(KeyError):
    """No MCP server with that id is configured."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown MCP server"


class McpHost:
    name = "mcp"

    def __init__(self, services: HostServices, settings: Callable[[], Settings], spawn: Spawn) -> None:
        self.services = services
        self._settings = settings
        self._spawn = spawn
        self.supervisors: dict[str, Supervisor] = {}
        self._lazy_watch: asyncio.Task[None] | None = None
        self.started = False

    # ------------------------------------------------------------------------------------------- lifecycle

    def _configured(self, settings: Settings) -> dict[str, McpServerConfig]:
        if not settings.mcp.enabled:
            return {}
        return dict(settings.mcp.servers)

    async def start(self) -> None:
        settings = self._settings()
        check_config(settings.mcp)
        for sid, cfg in self._configured(settings).items():
            self.supervisors[sid] = self._supervisor(sid, cfg)
        eager = [s for s in self.supervisors.values() if s.cfg.enabled and s.cfg.start == "eager"]
        for s in eager:
            s.start()
        self.started = True
        if any(s.cfg.start == "lazy" for s in self.supervisors.values()):
            self._lazy_watch = self._spawn(self._watch_calls(), name="mcp:lazy-start")
        await self.wait_settled()

    def _supervisor(self, server_id: str, cfg: McpServerConfig) -> Supervisor:
        from engine.mcp.supervisor import Supervisor  # the MCP SDK loads only once a server is configured

        return Supervisor(server_id, cfg, self.services)

    async def wait_settled(self) -> None:
        """Until every running eager server is up or has ended its first attempt (the engine's readiness)."""
        pending = [s for s in self.supervisors.values() if s.running and not s.settled.is_set()]
        while pending:
            waiters = [asyncio.create_task(s.settled.wait(), name=f"mcp:settled:{s.server_id}") for s in pending]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()
            pending = [s for s in pending if not s.settled.is_set()]

    def pending(self) -> list[str]:
        """Eager servers whose first attempt has not ended yet."""
        return [s.server_id for s in self.supervisors.values() if s.running and not s.settled.is_set()]

    async def stop(self) -> None:
        if self._lazy_watch is not None:
            self._lazy_watch.cancel()
            await asyncio.wait({self._lazy_watch})
            self._lazy_watch = None
        await asyncio.gather(*(s.stop() for s in self.supervisors.values()), return_exceptions=True)
        self.started = False

    async def reload(self, old: Settings, new: Settings) -> None:
        """Start added servers, stop removed ones, restart changed ones; untouched servers keep running.

        "Changed" compares the two files, not the running servers: a server the operator switched off for this
        run (``set_server_enabled``) stays off through a reload that does not touch its entry.
        """
        check_config(new.mcp)
        before, after = self._configured(old), self._configured(new)
        removed = [sid for sid in self.supervisors if sid not in after]
        added = [sid for sid in after if sid not in self.supervisors]
        changed = [sid for sid in after if sid in self.supervisors and before.get(sid) != after[sid]]
        await asyncio.gather(*(self.supervisors.pop(sid).stop("removed from the config") for sid in removed))
        for sid in removed:
            self.services.names.forget(sid)  # its name claims go: servers that now win a name take it
        await asyncio.gather(*(self.supervisors[sid].stop("config changed") for sid in changed))
        for sid in (*changed, *added):
            self.supervisors[sid] = self._supervisor(sid, after[sid])
        for sid in (*changed, *added):
            s = self.supervisors[sid]
            if s.cfg.enabled and s.cfg.start == "eager":
                s.start()
        if self._lazy_watch is None and any(s.cfg.start == "lazy" for s in self.supervisors.values()):
            self._lazy_watch = self._spawn(self._watch_calls(), name="mcp:lazy-start")
        if removed or added or changed:
            log.info("MCP reload: added %s, removed %s, restarted %s", added or "-", removed or "-", changed or "-")
        await self.wait_settled()

    # ------------------------------------------------------------------------------------------- lazy start

    def _lazy_for_context(self, context: str) -> list[Supervisor]:
        ctx = self._settings().contexts.get(context)
        if ctx is None:
            return []
        out = []
        for s in self.supervisors.values():
            if s.cfg.start != "lazy" or not s.cfg.enabled or s.running or s.state == "failed":
                continue
            prefix = f"mcp_{s.server_id}_"
            aliases = {t.expose_as for t in s.cfg.tools if t.expose_as}
            if any(n.startswith(prefix) or n in aliases for n in ctx.tools):
                out.append(s)
        return out

    async def _watch_calls(self) -> None:
        """Lazy servers start when a call begins in a context that lists one of their tools."""
        with self.services.bus.subscribe(types={"call.started"}) as sub:
            async for event in sub:
                for s in self._lazy_for_context(getattr(event, "context", "")):
                    log.info(
                        "MCP server %s: first use by context %s, starting", s.server_id, getattr(event, "context", "")
                    )
                    s.start()

    def server_for(self, exposed_name: str) -> Supervisor | None:
        """The server whose tool is (or would be) exposed under ``exposed_name``."""
        entry = self.services.registry.get(exposed_name)
        if entry is not None and entry.tool.definition.server in self.supervisors:
            return self.supervisors[entry.tool.definition.server]
        for s in sorted(self.supervisors.values(), key=lambda x: -len(x.server_id)):
            if exposed_name.startswith(f"mcp_{s.server_id}_") or any(t.expose_as == exposed_name for t in s.cfg.tools):
                return s
        return None

    async def ensure_started(self, server_id: str) -> bool:
        """Start a lazy (or stopped) server now and wait for it; True when it is up."""
        s = self._get(server_id)
        return await s.wait_up(s.cfg.connect_timeout_ms / 1000)

    # ------------------------------------------------------------------------------------------- operator

    def _get(self, server_id: str) -> Supervisor:
        s = self.supervisors.get(server_id)
        if s is None:
            known = ", ".join(sorted(self.supervisors)) or "none"
            raise UnknownServer(f"no MCP server {server_id!r} is configured (known: {known})")
        return s

    async def restart_server(self, server_id: str) -> dict[str, Any]:
        """Stop and start one server with its restart count reset (the way out of ``failed``)."""
        s = self._get(server_id)
        await s.restart()
        await s.wait_up(s.cfg.connect_timeout_ms / 1000)
        return s.snapshot()

    async def sign_in(
        self, server_id: str, show_url: Callable[[str], Awaitable[None] | None], timeout_s: float = 300.0
    ) -> dict[str, Any]:
        """OAuth sign-in (``engine.mcp.signin``): ``show_url`` gets the authorization URL, a loopback listener the
        redirect; then the server restarts with the new token. ``SignInError`` says why it did not complete."""
        from engine.mcp.signin import SignIn

        s = self._get(server_id)
        sign_in = SignIn(
            server_id,
            s.cfg,
            base_dir=self.services.base_dir,
            on_secret=self.services.remember_secrets,
            timeout_s=timeout_s,
        )
        report = await sign_in.run(show_url)
        await s.restart()
        await s.wait_up(s.cfg.connect_timeout_ms / 1000)
        return {**report, "state": s.state}

    async def sign_out(self, server_id: str) -> dict[str, Any]:
        """Forget the server's OAuth tokens; it restarts into ``needs sign-in``."""
        from engine.mcp.signin import sign_out

        s = self._get(server_id)
        if s.cfg.auth is None:
            raise UnknownServer(f"server {server_id!r} has no 'auth.oauth'")
        had = sign_out(server_id, s.cfg)
        await s.restart()
        await s.wait_up(s.cfg.connect_timeout_ms / 1000)  # settles at once, in needs sign-in
        return {"server": server_id, "had_tokens": had, "state": s.state}

    async def set_server_enabled(self, server_id: str, enabled: bool) -> dict[str, Any]:
        """Switch a server on or off for this run (not saved to the config file)."""
        s = self._get(server_id)
        s.cfg = s.cfg.model_copy(update={"enabled": enabled})
        if enabled:
            if not s.running:
                s.restarts = 0
                await s.wait_up(s.cfg.connect_timeout_ms / 1000)
        else:
            await s.stop("disabled by the operator")
        return s.snapshot()

    async def test_server(
        self, target: str | Mapping[str, Any] | McpServerConfig, *, server_id: str | None = None
    ) -> dict[str, Any]:
        """A fresh connect → initialize → list with timings, for a configured id or an unsaved config."""
        if isinstance(target, str):
            cfg = self.supervisors[target].cfg if target in self.supervisors else None
            if cfg is None:
                cfg = self._settings().mcp.servers.get(target)
            if cfg is None:
                self._get(target)  # raises UnknownServer naming the known ones
                raise AssertionError("unreachable")
            sid = target
        elif isinstance(target, McpServerConfig):
            cfg, sid = target, server_id or "test"
        else:
            data = dict(target)
            sid = str(data.pop("id", "test"))
            cfg = McpServerConfig.model_validate(data)
        from engine.mcp.probe import probe_server  # the MCP SDK loads only once a server is tested

        return await probe_server(sid, cfg, self.services)

    def status(self) -> dict[str, Any]:
        """The snapshot the console, ``mcp list`` and ``/mcp/status`` show."""
        return {
            "enabled": self._settings().mcp.enabled,
            "pending": self.pending(),
            "servers": [s.snapshot() for s in self.supervisors.values()],
        }
