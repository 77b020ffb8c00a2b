"""The realtime providers' WebSocket: connect with a timeout and clear errors, bounded JSON in, JSON or bytes out.

Why it exists: all four speech-to-speech adapters talk JSON over one WebSocket (Deepgram also sends raw audio
in binary frames). What they share lives here once: the connect timeout, turning a refused handshake (401, 403,
404, 429) into one ``ProviderError`` naming the provider and the status — never the URL's query, which carries
Gemini's key, or a header — a size bound on every incoming frame (the ``websockets`` ``max_size``) and a depth
bound before any JSON is parsed, and a malformed frame reported as a ``BadFrame`` value instead of an exception,
so an adapter logs it with the provider's name and goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from engine.bounds.json_text import JsonBoundsError, loads_bounded
from engine.providers.base import ProviderError

log = logging.getLogger(__name__)

#: Largest frame accepted from a provider (a few seconds of 24 kHz PCM in base64 fits many times over).
MAX_FRAME_BYTES = 8 * 1024 * 1024
#: Deepest JSON accepted from a provider (their events nest about 6 levels; tool arguments more).
MAX_DEPTH = 64

_STATUS_HINTS = {
    400: "the provider refused the request (check the model name and options)",
    401: "authentication failed (check the API key)",
    403: "access denied (the key lacks access to this model or API)",
    404: "not found (check the model name and base_url)",
    429: "rate limit or quota exceeded",
}


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A frame that could not be used: too deep, not JSON, or not a JSON object. ``reason`` never echoes it."""

    reason: str


def safe_url(url: str) -> str:
    """``url`` without its query and user info, fit for a message (Gemini's key travels in the query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def handshake_error(provider: str, url: str, exc: BaseException) -> ProviderError:
    """One clear message for a failed connect: what happened, where, and what to check."""
    where = safe_url(url)
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        hint = _STATUS_HINTS.get(status, "the provider refused the connection")
        return ProviderError(provider, f"{hint}: HTTP {status} from {where}", status=status)
    if isinstance(exc, InvalidURI):
        return ProviderError(provider, f"invalid WebSocket URL {where!r} (check base_url)")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return ProviderError(provider, f"no answer from {where} within the connect timeout")
    if isinstance(exc, InvalidHandshake):
        return ProviderError(provider, f"WebSocket handshake with {where} failed: {type(exc).__name__}")
    return ProviderError(provider, f"cannot connect to {where}: {exc.__class__.__name__}: {exc}")


class RealtimeSocket:
    """One connection; ``messages()`` yields dicts (JSON objects), ``bytes`` (binary frames) or ``BadFrame``."""

    def __init__(self, provider: str, conn: ClientConnection) -> None:
        self.provider = provider
        self._conn = conn

    @classmethod
    async def open(
        cls, provider: str, url: str, headers: Mapping[str, str] | None = None, timeout_s: float = 10.0
    ) -> RealtimeSocket:
        try:
            conn = await connect(
                url,
                additional_headers=dict(headers or {}),
                open_timeout=timeout_s,
                max_size=MAX_FRAME_BYTES,
                proxy=None,
                compression=None,
            )
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as e:
            raise handshake_error(provider, url, e) from None
        return cls(provider, conn)

    @property
    def closed(self) -> bool:
        return self._conn.close_code is not None

    @property
    def close_code(self) -> int | None:
        """The WebSocket close code (None while open): 1008/1007 refusals are not worth a retry, 1011 may be."""
        return self._conn.close_code

    @property
    def close_reason(self) -> str:
        """Why the socket closed, as the provider said (code and reason), for notices and end reasons."""
        code, reason = self._conn.close_code, self._conn.close_reason
        if code is None:
            return "open"
        return f"closed by the provider ({code}{': ' + reason if reason else ''})"

    async def send_json(self, message: Mapping[str, Any]) -> None:
        await self._conn.send(json.dumps(message, separators=(",", ":")))

    async def send_text(self, text: str) -> None:
        """A message already serialised as JSON text (hot paths that build it cheaper than ``json.dumps``)."""
        await self._conn.send(text)

    async def send_bytes(self, data: bytes) -> None:
        await self._conn.send(data)

    def parse(self, raw: str | bytes) -> dict[str, Any] | bytes | BadFrame:
        if isinstance(raw, bytes):
            return raw
        try:
            value = loads_bounded(raw, MAX_DEPTH)
        except JsonBoundsError as e:
            return BadFrame(f"JSON {e}" if e.too_deep else f"not JSON: {e}")
        if not isinstance(value, dict):
            return BadFrame(f"a JSON {type(value).__name__}, not an object")
        return value

    async def messages(self) -> AsyncIterator[dict[str, Any] | bytes | BadFrame]:
        """Every frame until the socket closes (normally or not); then the iterator ends."""
        try:
            async for raw in self._conn:
                yield self.parse(raw)
        except ConnectionClosed:
            return

    async def close(self) -> None:
        try:
            await self._conn.close()
        except Exception as e:  # closing must never raise into a hang-up
            log.debug("%s: closing the socket failed: %s", self.provider, e)
