"""The ``openai_realtime`` provider type: OpenAI's Realtime API (GA) as a speech-to-speech call provider.

Why it exists: the factory builds one ``OpenAIRealtimeProvider`` per ``providers.<name>`` entry of this type;
it checks the config once (model, base_url, options), renders the call's tools with the project's renderer
(flat ``{type: function, name, description, parameters}``), knows the socket's URL
(``{base_url or wss://api.openai.com/v1/realtime}?model=…``) and headers (``Authorization: Bearer``, no
``OpenAI-Beta``), and opens one ``OpenAIRealtimeSession`` per call. ``check_connection`` proves key, model and
endpoint without a call. The wire payloads live in ``openai_realtime_wire``, the call's lifecycle in
``openai_realtime_session``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from engine.config.models import ProviderConfig
from engine.providers.rendering import ToolRenderer
from engine.realtime import openai_realtime_wire as wire
from engine.realtime.openai_realtime_link import await_session_updated
from engine.realtime.openai_realtime_session import OpenAIRealtimeSession
from engine.realtime.session import AudioSpec, RealtimeProvider
from engine.realtime.socket import RealtimeSocket, safe_url
from engine.sessions.session import CallSession
from engine.tools.view import ToolView

__all__ = ["OpenAIRealtimeProvider", "OpenAIRealtimeSession"]


class OpenAIRealtimeProvider(RealtimeProvider):
    """``providers.<name>`` with ``type: openai_realtime``: model, api_key, voice, base_url (ws/wss), options."""

    type = "openai_realtime"

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        self.required("model", "gpt-realtime")
        if config.max_tokens is not None and config.max_tokens > 4096:
            raise ValueError(f"providers.{name}.max_tokens: OpenAI Realtime takes 1 to 4096, not {config.max_tokens}")
        base = config.base_url or wire.DEFAULT_URL
        if urlsplit(base).scheme not in ("ws", "wss"):
            raise ValueError(f"providers.{name}.base_url: a ws:// or wss:// URL, not {safe_url(base)!r}")
        self.options = wire.RealtimeOptions.parse(name, config.options)
        self.renderer = ToolRenderer(self.type)
        self.url = base + ("&" if "?" in base else "?") + urlencode({"model": config.model})
        self.timeout_s = config.timeout_ms / 1000.0

    @property
    def model(self) -> str:
        return self.config.model or ""

    def headers(self) -> dict[str, str]:
        """Bearer auth (GA sends no ``OpenAI-Beta`` header), then the config's own ``headers``, which win."""
        out: dict[str, str] = {}
        key = self.config.api_key.get_secret_value() if self.config.api_key is not None else ""
        if key:
            out["Authorization"] = f"Bearer {key}"
        out.update({k: v.get_secret_value() for k, v in self.config.headers.items()})
        return out

    def supported_formats(self) -> Sequence[AudioSpec]:
        return wire.FORMATS

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        return self.renderer.render(view).tools

    def open_session(self, session: CallSession) -> OpenAIRealtimeSession:
        return OpenAIRealtimeSession(self, session)

    async def connect(self) -> RealtimeSocket:
        return await RealtimeSocket.open(self.name, self.url, self.headers(), self.timeout_s)

    async def check_connection(self) -> dict[str, Any]:
        """Connect, send a minimal ``session.update`` and wait for ``session.updated``: proves the key, the model
        and the endpoint (``ProviderError`` with the provider's reason otherwise, never the key)."""
        sock = await self.connect()
        try:
            await sock.send_json({"type": "session.update", "session": {"type": "realtime"}})
            await await_session_updated(sock, self.name, self.timeout_s)
        finally:
            await sock.close()
        return {"provider": self.name, "type": self.type, "model": self.model, "url": safe_url(self.url)}
