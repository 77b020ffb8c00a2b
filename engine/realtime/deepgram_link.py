"""What a Deepgram Voice Agent session uses of its provider: ``AgentLink``, and the handshake's ``Handler``.

Apart from both (``deepgram_agent`` builds sessions, ``deepgram_session`` is one) so the session names a narrow
Protocol instead of importing the provider class that imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from engine.providers.rendering import RenderedTools
from engine.realtime import deepgram_settings as ds
from engine.realtime.session import AudioSpec
from engine.realtime.socket import BadFrame, RealtimeSocket
from engine.tools.view import ToolView

#: Where the messages that arrive during the handshake go (the session's own reader).
Handler = Callable[[dict[str, Any] | BadFrame], Awaitable[None]]


class AgentLink(Protocol):
    """What a Voice Agent session uses of its provider (``DeepgramAgentProvider`` is one)."""

    name: str
    options: ds.AgentOptions

    def supported_formats(self) -> Sequence[AudioSpec]: ...

    def rendered(self, view: ToolView) -> RenderedTools: ...

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]: ...

    async def connect(self, settings: dict[str, Any], other: Handler | None = None) -> RealtimeSocket: ...
