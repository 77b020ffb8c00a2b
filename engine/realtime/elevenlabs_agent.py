"""ElevenLabs Agents (Conversational AI) as a realtime provider: a signed-URL conversation socket per call.

Why it exists: an ElevenLabs agent runs the turn itself (ASR, LLM, TTS) and calls the engine's tools as client
tools over the conversation socket (reference/wire-formats.md §8). This module is the provider: its options, the
REST client that pushes tools and signs conversation URLs, the audio formats; each call's conversation is an
``ElevenLabsAgentSession`` (elevenlabs_session.py). ElevenLabs cannot change a live conversation's tools:
next-turn changes are pushed for the next conversation, apply-now and a dropped socket reconnect carrying the
conversation so far (README, "ElevenLabs Agents"). No announcements: slow tools get ElevenLabs' own
``pre_tool_speech: force``. The operator's steering: ``elevenlabs_steer.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.config.models import ProviderConfig
from engine.core.backoff import Backoff
from engine.providers.base import ProviderError
from engine.providers.http import HttpSettings
from engine.realtime import elevenlabs_wire as wire
from engine.realtime.elevenlabs_session import ElevenLabsAgentSession
from engine.realtime.elevenlabs_tools import DEFAULT_BASE_URL, ElevenLabsRest, client_tools, provider_options
from engine.realtime.session import AudioSpec, RealtimeProvider, RealtimeSession
from engine.sessions.session import CallSession
from engine.tools.view import ToolView

__all__ = ["ElevenLabsAgentProvider", "ElevenLabsAgentSession"]


class ElevenLabsAgentProvider(RealtimeProvider):
    """``providers.<name>`` with ``type: elevenlabs_agent``, ``agent_id``, ``api_key`` and optional ``base_url``."""

    type = "elevenlabs_agent"

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)
        self.agent_id = self.required("agent_id")
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        opts = provider_options(name, config.options)
        self.http_settings = HttpSettings(config.timeout_ms / 1000, config.max_retries, opts["retry_backoff_ms"] / 1000)
        self.reconnects = int(opts["reconnect_attempts"])
        self.backoff = Backoff(opts["reconnect_backoff_ms"] / 1000, 8.0)
        self.push_lock = asyncio.Lock()  # one tool push per agent at a time (calls share the agent)

    @property
    def api_key(self) -> str:
        return self.config.api_key.get_secret_value() if self.config.api_key is not None else ""

    def rest(self) -> ElevenLabsRest:
        if not self.api_key:
            raise ProviderError(self.name, "an api_key (xi-api-key) is needed to push tools and get a signed URL")
        return ElevenLabsRest(self.name, self.base_url, self.api_key, self.http_settings)

    async def check_connection(self) -> dict[str, Any]:
        rest = self.rest()
        try:
            return {"provider": self.name, "type": self.type, **await rest.check(self.agent_id)}
        finally:
            await rest.aclose()

    def supported_formats(self) -> Sequence[AudioSpec]:
        return tuple(wire.FORMATS.values())  # μ-law first: telephony audio goes straight through

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]:
        return client_tools(view)[1]

    def open_session(self, session: CallSession) -> RealtimeSession:
        return ElevenLabsAgentSession(self, session)
