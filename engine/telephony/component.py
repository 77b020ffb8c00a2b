"""Telephony as an engine component: when ``asterisk.enabled``, take phone calls from Asterisk's Stasis app.

Why it exists: ``ava-engine serve`` and the console both take calls when the config says so, through the same
component list as the MCP host and the HTTP server. Asterisk being down or refusing the credentials never stops
the engine: the events socket keeps retrying with backoff and ``status()`` says what is wrong (the console and
``/mcp/status`` show it). A reload that changes how the engine reaches Asterisk (``CONNECTION``) restarts
telephony: the AI's calls end with the farewell, calls a human has are left to them; any other change to
``asterisk:`` reaches the next call and drops none. When the engine stops, ``end_calls`` says goodbye to every
caller before the engine ends the sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.config.models import AsteriskConfig, Settings
from engine.services import Component, Services, restart_if_changed

if TYPE_CHECKING:  # the voice stack (numpy, soxr) loads only when telephony is enabled
    from engine.realtime.host import RealtimeHost
    from engine.telephony.ari import AriClient
    from engine.telephony.stasis import StasisApp
    from engine.tools.builtin.transfer import PhoneLines
    from engine.voice.backend import AudioBackend

log = logging.getLogger(__name__)

#: The ``asterisk:`` keys a reload can change only by reconnecting (which ends the AI's calls); the others reach
#: the next call while live calls go on.
CONNECTION = ("enabled", "ari_url", "username", "password", "app_name", "request_timeout_s")


def ari_client(cfg: AsteriskConfig) -> AriClient:
    from engine.telephony.ari import AriClient

    password = cfg.password.get_secret_value() if cfg.password is not None else ""
    return AriClient(cfg.ari_url, cfg.username, password, cfg.app_name, timeout_s=cfg.request_timeout_s)


class Telephony(Component):
    name = "telephony"

    def __init__(
        self,
        services: Services,
        host: RealtimeHost,
        lines: PhoneLines | None = None,
        admit: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
    ) -> None:
        super().__init__(services)
        #: Holds a new caller's place while the call is set up (engine.calls.capacity), or raises CallRefused: busy.
        self._admit = admit
        self._lines = lines
        #: What the phone calls' voice drivers use of the engine (``VoiceParts``, built from parts by the wiring).
        self._host = host
        self.ari: AriClient | None = None
        self.app: StasisApp | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        cfg = self._settings().asterisk
        if not cfg.enabled:
            return
        from engine.telephony.owned import ResourceIds
        from engine.telephony.stasis import StasisApp

        self.ari = ari_client(cfg)
        self.app = StasisApp(
            self.ari,
            cfg,
            self._host,
            self._spawn,
            lambda: list(self._settings().contexts),
            lines=self._lines,
            admit=self._admit,
            ids=ResourceIds.for_engine(self._settings().engine.id, cfg.app_name),
        )
        self.app.pool.on_foreign = self.metrics.rtp_foreign_packets.inc
        self._task = self._spawn(self.app.run(), name="telephony:events")
        log.info("telephony: Stasis app %r on %s", cfg.app_name, cfg.ari_url)

    async def end_calls(self) -> None:
        """The engine stops: end the phone calls (farewell, release) while their sessions still run; ``Engine.stop``
        calls this before it ends every session, and ``stop`` does it too when it comes first (a reload)."""
        if self.app is not None:
            await self.app.stop()

    async def stop(self) -> None:
        if self.app is not None:
            await self.app.stop()
        if self.ari is not None:
            await self.ari.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.ari = self.app = self._task = None

    async def reload(self, old: Settings, new: Settings) -> None:
        """A changed ``asterisk:`` section: when the connection stays (``CONNECTION``), new calls take the new
        settings and live ones go on; else telephony restarts as on a stop (AI calls hear the farewell, calls a
        human has are left to them) and connects anew."""
        cfg = new.asterisk
        same_connection = all(getattr(old.asterisk, k) == getattr(cfg, k) for k in CONNECTION)
        if old.asterisk != cfg and self.app is not None and same_connection:
            self.app.reconfigure(cfg)
            log.info(
                "telephony: asterisk settings changed; the connection and %d live call(s) stay", len(self.app.calls)
            )
            return
        await restart_if_changed(self, old, new, lambda s: s.asterisk)

    async def monitor(self, channel_id: str, mode: str, backend: Callable[[], AudioBackend]) -> str:
        """The operator on a phone call (see ``engine.telephony.monitor``); MonitorError when it cannot be."""
        from engine.telephony.monitor import MonitorError

        if self.app is None:
            raise MonitorError("telephony is off (asterisk.enabled: false)")
        return await self.app.set_monitor(channel_id, mode, backend)

    def status(self) -> dict[str, Any]:
        cfg = self._settings().asterisk
        if not cfg.enabled or self.ari is None or self.app is None:
            return {"enabled": False}
        return {
            "enabled": True,
            "ari_url": cfg.ari_url,
            "app": cfg.app_name,
            "connected": self.ari.connected,
            "error": self.ari.last_error,
            "reconnects": self.ari.reconnects,
            "calls": len(self.app.calls),
        }
