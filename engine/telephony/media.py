"""The audio backend of a phone call: the voice drivers (pipeline or realtime) talk to Asterisk through it.

Why it exists: ``VoiceCall`` and ``RealtimeVoiceCall`` run over any ``AudioBackend`` (sound card, WAV files); an
``RtpBackend`` makes an Asterisk external media stream one more backend, so a phone call runs the same driver code,
barge-in and farewell handling as the softphone. It decodes the caller's μ-law to PCM16 at 8 kHz and encodes the
agent's audio back (G.711 decode/encode round-trips exactly, so a provider that speaks μ-law loses nothing);
``stop_playback`` flushes the RTP queue, so barge-in cuts the agent within one 20 ms packet. ``WsBackend`` is the
same over Asterisk's WebSocket channel (``asterisk.media: websocket``): Asterisk paces, the engine keeps its queue
short, barge-in sends ``FLUSH_MEDIA``, and "played out" means Asterisk processed a mark placed after the audio.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from engine.telephony.rtp import RtpStream
from engine.telephony.ws_media import WsMedia
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.g711 import ulaw_decode, ulaw_encode

#: Audio handed to the RTP sender ahead of the wire (enough to ride out a busy event loop, small for barge-in).
OUTPUT_AHEAD_S = 0.12
#: Audio sent ahead into Asterisk's chan_websocket queue (it paces; barge-in empties it with FLUSH_MEDIA).
WS_OUTPUT_AHEAD_S = 0.2

#: One call's media stream, whichever path ``asterisk.media`` chose.
MediaStream = RtpStream | WsMedia


class RtpBackend(AudioBackend):
    def __init__(self, stream: RtpStream) -> None:
        super().__init__(sample_rate=8000, frame_ms=20)
        self.stream = stream

    async def frames(self) -> AsyncIterator[AudioFrame]:
        start = time.monotonic()
        position = 0.0
        async for payload in self.stream.frames():
            if self._closed:
                return
            yield AudioFrame(ulaw_decode(payload), 8000, timestamp=start + position)
            position += len(payload) / 8000.0

    async def _output_chunk(self, frame: AudioFrame) -> None:
        await self.stream.room(OUTPUT_AHEAD_S)
        if self._stop.is_set():
            return
        self.stream.queue(ulaw_encode(frame.samples))

    def _drop_pending_output(self) -> None:
        self.stream.flush()

    def queued_output_s(self) -> float:
        return self.stream.queued_s

    async def _drain_output(self) -> None:
        await self.stream.drained()

    async def _release(self) -> None:
        await self.stream.aclose()


class WsBackend(AudioBackend):
    def __init__(self, media: WsMedia) -> None:
        super().__init__(sample_rate=8000, frame_ms=20)
        self.media = media

    async def frames(self) -> AsyncIterator[AudioFrame]:
        start = time.monotonic()
        position = 0.0
        async for payload in self.media.frames():
            if self._closed:
                return
            yield AudioFrame(ulaw_decode(payload), 8000, timestamp=start + position)
            position += len(payload) / 8000.0

    async def _output_chunk(self, frame: AudioFrame) -> None:
        await self.media.room(WS_OUTPUT_AHEAD_S)
        if self._stop.is_set():
            return
        self.media.queue(ulaw_encode(frame.samples))

    def queued_output_s(self) -> float:
        return self.media.ahead_s

    def _drop_pending_output(self) -> None:
        self.media.flush()

    async def _drain_output(self) -> None:
        await self.media.drained()

    async def _release(self) -> None:
        await self.media.aclose()


def backend_for(stream: MediaStream) -> AudioBackend:
    """The audio backend the voice driver runs over for this media stream."""
    return WsBackend(stream) if isinstance(stream, WsMedia) else RtpBackend(stream)
