"""The audio backend of a phone call: the voice drivers (pipeline or realtime) talk to Asterisk through it.

Why it exists: ``VoiceCall`` and ``RealtimeVoiceCall`` run over any ``AudioBackend`` (sound card, WAV files); a
``PhoneBackend`` makes an Asterisk external media stream one more backend, so a phone call runs the same driver code,
barge-in and farewell handling as the softphone. The caller's μ-law comes as frames that decode to PCM16 at 8 kHz
only when read (``AudioFrame.from_ulaw``), and a frame that still carries its μ-law goes out as it is, else is
encoded: a realtime provider that speaks μ-law gets the wire's bytes and sends its own straight back;
``stop_playback`` flushes the RTP queue, so barge-in cuts the agent within one 20 ms packet. The same backend runs
over Asterisk's WebSocket channel (``asterisk.media: websocket``): Asterisk paces, the engine keeps its queue
short, barge-in sends ``FLUSH_MEDIA``, and "played out" means Asterisk processed a mark placed after the audio.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from engine.telephony.rtp import RtpStream
from engine.telephony.ws_media import WsMedia
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.g711 import ulaw_encode

#: Audio handed to the RTP sender ahead of the wire (enough to ride out a busy event loop, small for barge-in).
OUTPUT_AHEAD_S = 0.12
#: Audio sent ahead into Asterisk's chan_websocket queue (it paces; barge-in empties it with FLUSH_MEDIA).
WS_OUTPUT_AHEAD_S = 0.2

#: One call's media stream, whichever path ``asterisk.media`` chose.
MediaStream = RtpStream | WsMedia


def phone_payload(frame: AudioFrame) -> bytes:
    """The μ-law bytes that carry ``frame`` on the wire: its own when it was made from μ-law, else encoded."""
    return frame.ulaw if frame.ulaw is not None else ulaw_encode(frame.samples)


class PhoneMedia(Protocol):
    """What a phone call's media stream offers the backend (``RtpStream`` and ``WsMedia`` both do)."""

    def frames(self) -> AsyncIterator[bytes]: ...

    async def room(self, max_s: float, /) -> None: ...

    def queue(self, ulaw: bytes) -> None: ...

    def flush(self) -> None: ...

    async def drained(self) -> None: ...

    async def aclose(self) -> None: ...


class PhoneBackend(AudioBackend):
    """An ``AudioBackend`` over one call's μ-law media stream; ``ahead_s`` bounds what is handed over unheard and
    ``queued`` says how much that is now (barge-in reports subtract it from what was played)."""

    def __init__(self, stream: PhoneMedia, ahead_s: float, queued: Callable[[], float]) -> None:
        super().__init__(sample_rate=8000, frame_ms=20)
        self.wire_ulaw = True
        self.stream = stream
        self.ahead_s = ahead_s
        self._queued = queued

    async def frames(self) -> AsyncIterator[AudioFrame]:
        start = time.monotonic()
        position = 0.0
        async for payload in self.stream.frames():
            if self._closed:
                return
            yield AudioFrame.from_ulaw(payload, timestamp=start + position)
            position += len(payload) / 8000.0

    async def _output_chunk(self, frame: AudioFrame) -> None:
        await self.stream.room(self.ahead_s)
        if self._stop.is_set():
            return
        self.stream.queue(phone_payload(frame))

    def _drop_pending_output(self) -> None:
        self.stream.flush()

    def queued_output_s(self) -> float:
        return self._queued()

    async def _drain_output(self) -> None:
        await self.stream.drained()

    async def _release(self) -> None:
        await self.stream.aclose()


def backend_for(stream: MediaStream) -> AudioBackend:
    """The audio backend the voice driver runs over for this media stream."""
    if isinstance(stream, WsMedia):
        return PhoneBackend(stream, WS_OUTPUT_AHEAD_S, lambda: stream.ahead_s)
    return PhoneBackend(stream, OUTPUT_AHEAD_S, lambda: stream.queued_s)
