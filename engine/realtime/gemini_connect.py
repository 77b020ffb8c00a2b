"""Opening one Gemini Live connection: the socket, JSON in binary frames, ``setup`` until ``setupComplete``.

Why it exists: the session (every reconnect) and ``check_connection`` open connections the same way, and the
way has traps of its own: Gemini sends its JSON in binary WebSocket frames (opcode 2) — ``setupComplete``
included — so binary frames are read as JSON under the same bounds as text frames; a setup the server does not
want is answered by closing the socket (1008 for a bad key or an unknown model, a stale resumption handle …),
which becomes ``SetupRefused`` with the close code, so the session can tell a retry from a dead end; and the
key, which travels in the URL's query, is scrubbed from any reason quoted back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from websockets.exceptions import ConnectionClosed

from engine.providers.base import ProviderError
from engine.realtime.socket import BadFrame, RealtimeSocket

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.config.models import ProviderConfig
    from engine.providers.rendering import RenderedTools
    from engine.realtime.gemini_families import Family
    from engine.realtime.gemini_wire import GeminiOptions
    from engine.realtime.session import AudioSpec
    from engine.tools.view import ToolView


class LiveEndpoint(Protocol):
    """What opening a Live socket uses of the provider (``GeminiLiveProvider`` is one)."""

    name: str
    config: ProviderConfig

    @property
    def api_key(self) -> str: ...

    def connect_url(self) -> str: ...

    def headers(self) -> dict[str, str]: ...


class LiveAccount(LiveEndpoint, Protocol):
    """What a call's Live session uses of its provider (``GeminiLiveProvider`` is one)."""

    options: GeminiOptions
    family: Family

    def tools_for(self, view: ToolView) -> tuple[list[dict[str, Any]], dict[str, bool], RenderedTools]: ...

    def render_tools(self, view: ToolView) -> list[dict[str, Any]]: ...

    def supported_formats(self) -> Sequence[AudioSpec]: ...


class SetupRefused(ProviderError):
    """The server closed the connection instead of answering ``setup`` (``code``: its close code)."""

    def __init__(self, provider: str, message: str, code: int | None) -> None:
        super().__init__(provider, message)
        self.code = code


Messages = AsyncIterator[dict[str, Any] | bytes | BadFrame]


async def json_frames(sock: RealtimeSocket) -> AsyncIterator[dict[str, Any] | bytes | BadFrame]:
    """The socket's messages with binary frames read as JSON: Gemini sends its JSON (``setupComplete`` too) in
    binary frames, opcode 2. The same bounds apply as to text frames."""
    async for msg in sock.messages():
        if isinstance(msg, bytes):
            try:
                msg = sock.parse(msg.decode("utf-8"))
            except UnicodeDecodeError:
                msg = BadFrame("a binary frame that is not UTF-8 JSON")
        yield msg


def scrub(p: LiveEndpoint, text: str) -> str:
    """``text`` without the key (a server's close reason is quoted in notices)."""
    return text.replace(p.api_key, "***") if p.api_key else text


async def open_live(
    p: LiveEndpoint, setup: dict[str, Any], unexpected: Callable[[Any, str], None]
) -> tuple[RealtimeSocket, Messages]:
    """Connect, send ``setup`` and wait for ``setupComplete`` (within ``timeout_ms``); ``SetupRefused`` when the
    server closes instead (its close code and reason), ``ProviderError`` for a refused handshake or a timeout."""
    timeout = p.config.timeout_ms / 1000
    sock = await RealtimeSocket.open(p.name, p.connect_url(), p.headers(), timeout)
    msgs = json_frames(sock)
    try:
        await sock.send_json(setup)
        async with asyncio.timeout(timeout):
            async for first in msgs:
                if isinstance(first, dict) and "setupComplete" in first:
                    return sock, msgs
                unexpected(first, "before setupComplete")
        raise SetupRefused(p.name, f"setup refused: {scrub(p, sock.close_reason)}", sock.close_code)
    except TimeoutError:
        await sock.close()
        raise ProviderError(p.name, f"no setupComplete within {timeout:g} s") from None
    except ConnectionClosed:
        raise SetupRefused(p.name, f"setup refused: {scrub(p, sock.close_reason)}", sock.close_code) from None
    except ProviderError:
        await sock.close()
        raise
