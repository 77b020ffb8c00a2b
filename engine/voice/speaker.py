"""The agent's mouth for one voice call: speaks texts one at a time, can be cut off, and logs what it played.

Every spoken thing (greeting, reply, slow-tool announcement, farewell) goes through ``Speaker.say``, which holds
one lock, so two never overlap: whatever asks second waits until the first has finished playing. ``say`` streams
the synthesiser's chunks into the backend (paced by the ``Pacer`` on file runs) and returns only when the audio
has been played (``AudioBackend.play`` drains the output), or was cut off by ``interrupt`` (barge-in), which stops
the backend's playback and aborts the synthesis. ``only_if`` is checked once the lock is held, so a queued
announcement can drop itself when the answer is already out. Each playback is logged as a ``Playback`` with its
wall-clock timing and, on file backends, its position in the output.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from engine.voice.audio import AudioFrame, Chunker
from engine.voice.backend import AudioBackend
from engine.voice.pacing import Pacer
from engine.voice.tts import SpeechStream, Synthesizer

log = logging.getLogger(__name__)


@dataclass
class Playback:
    kind: str  # "greeting" | "reply" | "announcement" | "farewell" | "steer" (the operator's say-now line)
    text: str
    turn: int
    requested: float  # time.perf_counter() when asked
    first_audio: float | None = None  # time.perf_counter() when the first chunk went to the backend
    finished_wall: float | None = None  # time.time() when playback returned (comparable with event ts)
    start_sample: int | None = None  # output position of the first sample (file backends)
    end_sample: int | None = None  # output position after the last sample (file backends)
    chunks: int = 0
    completed: bool = False
    interrupted: bool = False

    @property
    def played_ms(self) -> float:
        return 0.0 if self.first_audio is None else 1000.0 * (time.perf_counter() - self.first_audio)


class Speaker:
    def __init__(self, backend: AudioBackend, synthesizer: Synthesizer, pacer: Pacer) -> None:
        self.backend = backend
        self.synthesizer = synthesizer
        self.pacer = pacer
        self.log: list[Playback] = []
        self.current: Playback | None = None
        self.on_playing: Callable[[Playback | None], None] | None = None
        self._lock = asyncio.Lock()
        self._stopped = False
        self._stream: SpeechStream | None = None
        self._closers: set[asyncio.Task[None]] = set()

    @property
    def playing(self) -> bool:
        return self.current is not None

    def current_played_ms(self) -> float:
        """How much of the current playback has gone out (by chunks written: exact on file runs too)."""
        pb = self.current
        return 0.0 if pb is None else pb.chunks * self.backend.frame_ms

    async def say(self, text: str, kind: str, turn: int, only_if: Callable[[], bool] | None = None) -> Playback | None:
        """Speak ``text`` after whatever is playing; None when ``only_if`` said no once it was our turn."""
        pb = Playback(kind=kind, text=text, turn=turn, requested=time.perf_counter())
        async with self._lock:
            if only_if is not None and not only_if():
                return None
            self._stopped = False
            self.current = pb
            self.log.append(pb)
            self.pacer.add_playing(1)
            self._notify(pb)
            stream = self.synthesizer.stream(text)
            self._stream = stream
            try:
                ok = await self.backend.play(self._chunks(stream, pb))
            finally:
                self._stream = None
                await stream.aclose()
                self.current = None
                self.pacer.add_playing(-1)
                pb.finished_wall = time.time()
                pb.end_sample = self.pacer.output_samples()
                self._notify(None)
            pb.completed = ok and not self._stopped
            pb.interrupted = not pb.completed
        return pb

    def _notify(self, pb: Playback | None) -> None:
        if self.on_playing is not None:
            self.on_playing(pb)

    async def _chunks(self, stream: SpeechStream, pb: Playback) -> AsyncIterator[AudioFrame]:
        chunker = Chunker(self.backend.sample_rate, self.backend.frame_ms)
        async for frame in stream:
            for piece in chunker.push(frame.resampled(self.backend.sample_rate)):
                if not await self._ready():
                    return
                yield self._mark(piece, pb)
                self.pacer.changed()
        for piece in chunker.flush(pad=True):
            if not await self._ready():
                return
            yield self._mark(piece, pb)
            self.pacer.changed()

    async def _ready(self) -> bool:
        if self._stopped:
            return False
        await self.pacer.before_output(lambda: self._stopped)
        return not self._stopped

    def _mark(self, piece: AudioFrame, pb: Playback) -> AudioFrame:
        if pb.first_audio is None:
            pb.first_audio = time.perf_counter()
            out = self.pacer.output_samples()
            if out is not None and self.pacer.enabled:
                # the timeline backend pads with silence up to the input position before this chunk
                assert hasattr(self.backend, "input_position")
                in_pos = round(self.backend.input_position * self.backend.sample_rate)
                pb.start_sample = max(out, in_pos)
            else:
                pb.start_sample = out
        pb.chunks += 1
        return piece

    def interrupt(self) -> bool:
        """Barge-in: stop what is playing (within one chunk) and abort its synthesis; False if nothing played."""
        if self.current is None:
            return False
        self._stopped = True
        self.current.interrupted = True
        self.backend.stop_playback()
        self.pacer.changed()
        stream = self._stream
        if stream is not None:
            task = asyncio.create_task(stream.aclose(), name="voice:speaker:close-stream")
            self._closers.add(task)
            task.add_done_callback(self._closers.discard)
        log.debug("playback of %r interrupted", self.current.text[:40])
        return True
