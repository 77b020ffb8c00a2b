"""The one interface every audio input/output backend implements (devices, WAV files, null).

A backend delivers microphone audio as an async iterator of ``AudioFrame`` (``frames()``, ``frame_ms`` each at
``sample_rate``) and plays audio (``play(frames)`` for a whole answer, ``write(frame)`` for one piece).
``stop_playback()`` is barge-in: it drops whatever is queued and silences output within one chunk, and makes the
running ``play`` return False. ``close()`` releases devices and files; backends are async context managers.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from types import TracebackType

from engine.voice.audio import AudioFrame, Chunker


class AudioUnavailable(RuntimeError):
    """An audio backend cannot run here; the message says what is missing and how to fix it."""


class AudioBackend(ABC):
    """Base class: subclasses implement input (``frames``), the output primitives and ``_release``."""

    def __init__(self, sample_rate: int = 16000, frame_ms: int = 20) -> None:
        if sample_rate <= 0:
            raise ValueError(f"sample_rate must be positive, got {sample_rate}")
        if not 5 <= frame_ms <= 200:
            raise ValueError(f"frame_ms must be 5..200, got {frame_ms}")
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        #: The output goes out as 8 kHz μ-law (a phone line): frames that carry μ-law are sent as they are, so a
        #: producer that can encode whole pieces at once (the realtime playout) hands over μ-law frames.
        self.wire_ulaw = False
        self._stop = asyncio.Event()
        self._playing = 0
        self._closed = False
        #: Told the level (dBFS) of each chunk as it goes out (the softphone's meter of the agent's voice).
        self.on_output_level: Callable[[float], None] | None = None

    @abstractmethod
    def frames(self) -> AsyncIterator[AudioFrame]:
        """Microphone audio, ``frame_ms`` per frame, until the source ends or the backend closes."""

    @abstractmethod
    async def _output_chunk(self, frame: AudioFrame) -> None:
        """Send one ``frame_ms`` chunk (at ``sample_rate``) to the output; may wait for room (backpressure)."""

    @abstractmethod
    def _drop_pending_output(self) -> None:
        """Barge-in: discard output already handed over but not yet audible."""

    @abstractmethod
    async def _drain_output(self) -> None:
        """Wait until everything handed to the output has been played."""

    async def close(self) -> None:
        """Stop playback and release what the backend holds; closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        self.stop_playback()
        await self._release()

    @abstractmethod
    async def _release(self) -> None:
        """Free the backend's streams or files (called once, by ``close``, after playback stopped)."""

    @property
    def is_playing(self) -> bool:
        return self._playing > 0

    def queued_output_s(self) -> float:
        """Audio handed to ``_output_chunk`` but not audible yet (a device or network buffer): barge-in drops it,
        so the caller heard what was handed over minus this. Default: nothing is buffered."""
        return 0.0

    def stop_playback(self) -> None:
        """Barge-in: stop what is playing now, within one chunk."""
        self._stop.set()
        self._drop_pending_output()

    async def write(self, frame: AudioFrame) -> None:
        """Play one frame (any length, any rate) now, in order with other writes."""
        await self.play([frame])

    async def play(self, frames: AsyncIterable[AudioFrame] | Iterable[AudioFrame]) -> bool:
        """Play frames (any rate; resampled) in ``frame_ms`` chunks. Returns False when stopped by barge-in."""
        if self._closed:
            raise RuntimeError("audio backend is closed")
        self._stop.clear()
        self._playing += 1
        chunker = Chunker(self.sample_rate, self.frame_ms)
        try:
            async for frame in _aiter(frames):
                if self._stop.is_set():
                    return False
                for piece in chunker.push(frame.resampled(self.sample_rate)):
                    if self._stop.is_set():
                        return False
                    if self.on_output_level is not None:
                        self.on_output_level(piece.rms_dbfs())
                    await self._output_chunk(piece)
            for piece in chunker.flush(pad=True):
                if self._stop.is_set():
                    return False
                await self._output_chunk(piece)
            await self._drain_output()
            return not self._stop.is_set()
        finally:
            self._playing -= 1

    async def __aenter__(self) -> AudioBackend:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def _aiter(frames: AsyncIterable[AudioFrame] | Iterable[AudioFrame]) -> AsyncIterator[AudioFrame]:
    if isinstance(frames, AsyncIterable):
        async for f in frames:
            yield f
    else:
        for f in frames:
            yield f
