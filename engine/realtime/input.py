"""The caller's side of a realtime call: backend frames → level meter, mute → the session's input format → send.

Why it exists: the provider hears the caller directly, so every frame the backend delivers must reach the session
converted to its ``input_spec`` (a phone frame's own μ-law bytes go straight through to a session that takes
μ-law; PCM is resampled with a stream resampler that keeps its state across frames), after the level meter saw
the real input and mute replaced it with silence. While a tool's question to the caller is open the
``listener`` keeps the caller's frames (the engine hears the answer itself) and the provider gets silence in
their place. File runs read the next frame only when the ``Pacer`` allows it, so the output stays on the input's
timeline. A send that fails (the adapter reconnecting) is logged once per
run of failures; the adapter's ``events()`` decides whether the call goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from engine.providers.base import ProviderError
from engine.realtime.audio import AudioConverter
from engine.realtime.session import PCMU_8K, AudioSpec, RealtimeSession
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.call_life import pump_frames, silenced
from engine.voice.pacing import Pacer

log = logging.getLogger(__name__)


class CallerInput:
    def __init__(
        self, backend: AudioBackend, pacer: Pacer, live: RealtimeSession, on_level: Callable[[float], None] | None
    ) -> None:
        self.backend = backend
        self.pacer = pacer
        self.live = live
        self.on_level = on_level
        self.muted = False
        #: Takes a caller frame for the engine to hear (True: kept, the provider gets silence instead).
        self.listener: Callable[[AudioFrame], bool] | None = None
        self.ended = asyncio.Event()
        self.frames_sent = 0
        self.sent_s = 0.0  # seconds of caller audio handed on (the resampler may still hold its last ms)
        self._failures = 0  # sends failed in a row (logged once per run of them)
        self._conv = AudioConverter(AudioSpec("pcm16", backend.sample_rate), live.input_spec)
        # A phone frame's μ-law goes to the session from its codes (as it is, or decoded in one lookup) when that
        # needs no resampler: a stateful one must see the whole stream, muted silence included.
        from_ulaw = AudioConverter(PCMU_8K, live.input_spec)
        self._from_ulaw = None if from_ulaw.resamples or backend.sample_rate != PCMU_8K.rate else from_ulaw

    async def run(self) -> None:
        """Send the caller's audio until the input ends (a file) or the task is cancelled."""
        await pump_frames(self.backend, self.pacer, self._send, ended=self.ended.set)

    async def _send(self, frame: AudioFrame) -> None:
        data = self.payload(self._heard(frame))
        self.sent_s += frame.duration
        if not data:
            return
        try:
            await self.live.send_audio(data)
            self.frames_sent += 1
            self._failures = 0
        except ProviderError as e:
            self._failures += 1
            if self._failures == 1:
                log.warning("caller audio not sent: %s", e)

    def payload(self, frame: AudioFrame) -> bytes:
        """``frame`` in the session's input format (from its μ-law codes when it has them and that is stateless)."""
        if self._from_ulaw is not None and frame.ulaw is not None:
            return self._from_ulaw.convert(frame.ulaw)
        return self._conv.convert(frame.pcm)

    def _heard(self, frame: AudioFrame) -> AudioFrame:
        if self.on_level is not None:  # the meter costs as much as the rest of a frame: only when shown
            self.on_level(frame.rms_dbfs())
        if self.muted or (self.listener is not None and self.listener(frame)):
            return silenced(frame)
        return frame
