"""Gemini Live (BidiGenerateContent WebSocket) as a realtime provider: config, endpoint, tool declarations.

Why it exists: Gemini Live is one of the four speech-to-speech providers AVA runs on the phone
(reference/wire-formats.md §6). This module is what the factory builds from ``providers.<name>``: it checks the
model and options once, knows the endpoint (``base_url`` or Google's) and puts the key in its query — the only
place the key goes; ``RealtimeSocket`` strips the query from every message — and renders the call's tool view
with the project's renderer for ``gemini_live``, each declaration with a ``behavior`` from the tool's latency
class (``gemini_wire``), and knows the model's family (``gemini_families``: how it takes text from the client).
``check_connection`` proves key, model and endpoint without a call. The call itself is
``gemini_session.GeminiLiveSession``: PCM16 in at the driver's rate (8 kHz on the phone, 16 kHz from
the softphone), 24 kHz out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from engine.config.models import ProviderConfig
from engine.providers.rendering import RenderedTools, ToolRenderer
from engine.realtime.gemini_connect import open_live
from engine.realtime.gemini_families import family_for
from engine.realtime.gemini_session import GeminiLiveSession
from engine.realtime.gemini_wire import DEFAULT_URL, GeminiOptions, declarations, setup_message
from engine.realtime.session import PCM16_8K, PCM16_16K, AudioSpec, RealtimeProvider
from engine.realtime.socket import safe_url
from engine.sessions.session import CallSession
from engine.tools.view import ToolView


class GeminiLiveProvider(RealtimeProvider):
    type = "gemini_live"

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        model = self.required("model", "gemini-live-2.5-flash")
        self.options = GeminiOptions.parse(name, config.options)
        #: What this model accepts from the client (``gemini_families``): every text path asks it for its route.
        self.family = family_for(model, self.options.family)
        self.renderer = ToolRenderer(self.type, gemini_schema=self.options.gemini_schema)
        self.url = config.base_url or DEFAULT_URL

    @property
    def api_key(self) -> str:
        return self.config.api_key.get_secret_value() if self.config.api_key is not None else ""

    def connect_url(self) -> str:
        if not self.api_key:
            return self.url
        return f"{self.url}{'&' if '?' in self.url else '?'}key={quote(self.api_key, safe='')}"

    def headers(self) -> dict[str, str]:
        return {k: v.get_secret_value() for k, v in self.config.headers.items()}

    def tools_for(self, view: ToolView) -> tuple[list[dict[str, Any]], dict[str, bool], RenderedTools]:
        """The declarations, each tool's behaviour, and the rendering (names and parameter names to read calls back)."""
        rendered = self.renderer.render(view)
        tools, behaviour = declarations(rendered, view, self.options)
        return tools, behaviour, rendered

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        return self.tools_for(view)[0]

    def supported_formats(self) -> Sequence[AudioSpec]:
        # Gemini hears 16 kHz natively but resamples any ``rate=`` it is told (wire-formats §6), so the phone's
        # 8 kHz goes as it is: upsampling adds no information, costs CPU per frame and doubles the bytes.
        return (PCM16_8K, PCM16_16K)

    def open_session(self, session: CallSession) -> GeminiLiveSession:
        return GeminiLiveSession(self, session)

    async def check_connection(self) -> dict[str, Any]:
        """Connect and complete a minimal ``setup`` (no tools): proves the key, the model and the endpoint
        (``ProviderError`` with the provider's reason otherwise, never the key)."""
        setup = setup_message(
            model=str(self.config.model),
            voice=self.config.voice,
            instructions="",
            tools=[],
            opts=self.options,
            handle=None,
        )
        sock, _ = await open_live(self, setup, lambda msg, when: None)
        await sock.close()
        return {"provider": self.name, "type": self.type, "model": self.config.model, "url": safe_url(self.url)}
