"""Deepgram Voice Agent (``wss://agent.deepgram.com/v1/agent/converse``) as a realtime provider.

Why it exists: the factory's entry for ``type: deepgram_agent``. The provider reads its config once (``model`` the
think LLM, ``voice`` the speak model, ``options`` the rest: ``deepgram_settings.AgentOptions``), connects with
``Authorization: Token <key>`` to ``base_url`` or Deepgram's endpoint, takes caller audio as μ-law/A-law at
8 kHz (passed straight through from the phone) or linear16 at 16/24 kHz, and renders the call's tool view as
``Settings.agent.think.functions`` (the project's renderer, plus ``defer_until_eot`` for tools that are not
idempotent). Each call gets a ``DeepgramAgentSession`` (engine/realtime/deepgram_session.py), which
holds the socket and speaks the protocol of reference/wire-formats.md §7.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed

from engine.config.models import ProviderConfig
from engine.providers.base import ProviderError
from engine.providers.rendering import RenderedTools, ToolRenderer
from engine.realtime import deepgram_settings as ds
from engine.realtime.deepgram_link import Handler
from engine.realtime.deepgram_session import DeepgramAgentSession
from engine.realtime.session import PCMU_8K, AudioSpec, RealtimeProvider, RealtimeSession
from engine.realtime.socket import RealtimeSocket, safe_url
from engine.sessions.session import CallSession
from engine.tools.view import ToolView

__all__ = ["DeepgramAgentProvider", "DeepgramAgentSession"]


class DeepgramAgentProvider(RealtimeProvider):
    type = "deepgram_agent"

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        self.options = ds.AgentOptions.from_config(name, config)
        self.url = config.base_url or ds.DEFAULT_URL
        self.renderer = ToolRenderer(self.type)

    def headers(self) -> dict[str, str]:
        headers = {k: v.get_secret_value() for k, v in self.config.headers.items()}
        if self.config.api_key is not None and self.config.api_key.get_secret_value():
            headers["Authorization"] = f"Token {self.config.api_key.get_secret_value()}"
        return headers

    def supported_formats(self) -> Sequence[AudioSpec]:
        return ds.SUPPORTED_FORMATS

    def rendered(self, view: ToolView) -> RenderedTools:
        return self.renderer.render(view)

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        """Exactly ``Settings.agent.think.functions`` for ``view`` (with ``defer_until_eot`` where it applies)."""
        return self.rendered(view).tools

    def open_session(self, session: CallSession) -> RealtimeSession:
        return DeepgramAgentSession(self, session)

    async def connect(self, settings: dict[str, Any], other: Handler | None = None) -> RealtimeSocket:
        """Connect, wait for ``Welcome``, send ``settings``, and return the socket once ``SettingsApplied`` came
        (within ``timeout_ms``); ``other`` gets whatever else arrives meanwhile (audio only comes after). An
        ``Error`` (the agent refusing the settings: unknown model, invalid function) or a close during the
        handshake is a ``ProviderError`` saying so."""
        timeout = self.config.timeout_ms / 1000
        sock = await RealtimeSocket.open(self.name, self.url, self.headers(), timeout)
        closed = "the agent closed the connection during setup: {}"
        try:
            async with asyncio.timeout(timeout):
                sent = False
                async for m in sock.messages():
                    kind = m.get("type") if isinstance(m, dict) else None
                    if kind == "Welcome" and not sent:
                        await sock.send_json(settings)
                        sent = True
                    elif kind == "SettingsApplied" and sent:
                        return sock
                    elif kind == "Error" and isinstance(m, dict):
                        raise ProviderError(self.name, f"settings refused: {ds.describe(m)}")
                    elif other is not None and not isinstance(m, bytes):
                        await other(m)
                raise ProviderError(self.name, closed.format(sock.close_reason))
        except TimeoutError:
            await sock.close()
            raise ProviderError(self.name, f"no SettingsApplied within {timeout:g} s") from None
        except ConnectionClosed:
            raise ProviderError(self.name, closed.format(sock.close_reason)) from None
        except BaseException:
            await sock.close()
            raise

    async def check_connection(self) -> dict[str, Any]:
        """Connect and have a minimal ``Settings`` (no tools, no greeting) applied: proves the key, the models and
        the endpoint (``ProviderError`` with the agent's reason otherwise, never the key)."""
        msg = ds.settings(self.options, PCMU_8K, ds.think_settings(self.options, "", []), greeting=None)
        sock = await self.connect(msg)
        await sock.close()
        return {
            "provider": self.name,
            "type": self.type,
            "model": self.options.think_provider.get("model"),
            "url": safe_url(self.url),
        }
