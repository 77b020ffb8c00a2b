"""The caller's audio on its way to Gemini Live: joined into pieces, held while a connection is being replaced.

Why it exists: Gemini takes caller audio as ``realtimeInput`` messages of any length, so the phone's 20 ms frames
are joined into pieces of ``input_batch_ms`` (fewer messages for a few ms of delay), and because tool changes and
``goAway`` replace the connection, audio that arrives meanwhile is held — bounded, the oldest dropped first, so a
long outage keeps the latest speech — and sent in order once the new connection is up. The session owns the socket;
this keeps the bytes and their order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

from engine.realtime.gemini_wire import audio_in_message, audio_in_mime
from engine.realtime.session import AudioSpec

#: Caller audio kept while a connection is being replaced, sent once the new one is up.
HOLD_MS = 2000


class CallerAudio:
    def __init__(self, spec: AudioSpec, batch_ms: int) -> None:
        self.batch_ms = batch_ms
        self._held: deque[bytes] = deque()
        self._held_bytes = 0
        self._piece = bytearray()  # caller audio not yet sent, joined up to ``batch_ms``
        self.use(spec)

    def use(self, spec: AudioSpec) -> None:
        """The format the session negotiated (the rate goes into every message's ``mimeType``)."""
        self.spec = spec
        self._mime = audio_in_mime(spec.rate)
        self._hold_limit = spec.bytes_for_ms(HOLD_MS)
        self._piece_bytes = spec.bytes_for_ms(self.batch_ms)

    def join(self, audio: bytes) -> bytes | None:
        """``audio`` added to the piece being joined; the piece once it is long enough, else None."""
        self._piece += audio
        if len(self._piece) < self._piece_bytes:
            return None
        piece = bytes(self._piece)
        self._piece.clear()
        return piece

    def message(self, piece: bytes) -> str:
        return audio_in_message(self._mime, piece)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def hold(self, piece: bytes) -> None:
        self._held.append(piece)
        self._held_bytes += len(piece)
        while self._held_bytes > self._hold_limit:  # the oldest goes first: a long outage keeps the latest speech
            self._held_bytes -= len(self._held.popleft())

    async def release(self, send: Callable[[bytes], Awaitable[bool]]) -> None:
        """Send what is held, in order, until all is gone or ``send`` fails (the rest stays held)."""
        while self._held:
            piece = self._held[0]
            if not await send(piece):
                return
            self._held.popleft()
            self._held_bytes -= len(piece)
