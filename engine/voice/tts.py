"""Text to speech with espeak-ng: whole utterances, or streamed chunk by chunk so playback starts at once.

``Synthesizer`` holds the voice settings (espeak voice name, rate in words per minute, pitch 0-100) and the output
sample rate. ``stream(text)`` returns a ``SpeechStream``: an async iterator of ``AudioFrame`` chunks (about
``espeak.buffer_ms`` each) resampled from espeak's native 22050 Hz. Synthesis runs in a worker thread under the
espeak lock, which every call of the process shares, so it never waits for its reader: espeak makes speech ~200x
faster than it is played (a 17 s greeting in ~85 ms), and a worker paced by a phone line's playback would keep every
other caller's speech waiting until the first was heard to the end. The chunks wait in the stream's queue (the text
is bounded, so is the audio); ``aclose()`` (or breaking out of ``async for``) aborts synthesis within one chunk.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import numpy as np

from engine.voice.audio import AudioFrame, Int16Array, StreamResampler, concat
from engine.voice.espeak import Espeak


@dataclass(frozen=True, slots=True)
class VoiceSettings:
    voice: str = "en-us"
    rate: int = 175
    pitch: int = 50


_DONE = object()


class SpeechStream:
    """Chunks of one synthesis, in order. Iterate with ``async for``; ``aclose()`` aborts the synthesis."""

    def __init__(
        self,
        espeak: Espeak,
        text: str,
        settings: VoiceSettings,
        sample_rate: int,
        on_cpu: Callable[[float], None] | None = None,
    ) -> None:
        self._espeak = espeak
        self._text = text
        self._settings = settings
        self._rate = sample_rate
        self._resampler = StreamResampler(espeak.sample_rate, sample_rate)
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._abort = threading.Event()
        self._finished = threading.Event()
        self._position = 0  # samples emitted at the output rate
        self._closed = False
        self._on_cpu = on_cpu
        self._loop = asyncio.get_running_loop()
        self._worker = self._loop.run_in_executor(None, self._run)

    @property
    def synthesis_done(self) -> bool:
        """True once espeak has produced the last chunk (or was aborted)."""
        return self._finished.is_set()

    def _put(self, item: object) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _on_audio(self, samples: Int16Array) -> bool:
        if self._abort.is_set():
            return False
        self._put(samples)
        return True

    def _run(self) -> None:
        start = time.thread_time()
        try:
            s = self._settings
            self._espeak.synth(self._text, self._on_audio, voice=s.voice, rate=s.rate, pitch=s.pitch)
        except BaseException as exc:
            self._finished.set()
            self._put(exc)
            return
        finally:
            if self._on_cpu is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed under a synthesis it no longer waits for
                    self._loop.call_soon_threadsafe(self._on_cpu, time.thread_time() - start)
        self._finished.set()
        self._put(_DONE)

    def _frame(self, samples: Int16Array) -> AudioFrame:
        frame = AudioFrame(samples=samples, sample_rate=self._rate, timestamp=self._position / self._rate)
        self._position += samples.size
        return frame

    def __aiter__(self) -> AsyncIterator[AudioFrame]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[AudioFrame]:
        try:
            while not self._closed:
                item = await self._queue.get()
                if item is _DONE:
                    tail = self._resampler.flush()
                    if tail.size:
                        yield self._frame(tail)
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, np.ndarray)
                out = self._resampler.process(item)
                if out.size:
                    yield self._frame(out)
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop synthesis (within one chunk) and wait for the worker thread to let go of espeak."""
        if self._closed and self._worker.done():
            return
        self._closed = True
        self._abort.set()
        await asyncio.shield(self._worker)


class Synthesizer:
    """espeak-ng TTS with fixed voice settings and output sample rate."""

    def __init__(
        self,
        voice: str = "en-us",
        rate: int = 175,
        pitch: int = 50,
        sample_rate: int = 16000,
        espeak: Espeak | None = None,
    ) -> None:
        self.settings = VoiceSettings(voice=voice, rate=rate, pitch=pitch)
        self.sample_rate = sample_rate
        self._espeak = espeak
        #: CPU seconds this synthesiser's streams have spent (the offline pipeline's usage).
        self.cpu_s = 0.0
        StreamResampler(22050, sample_rate)  # validates sample_rate early

    @property
    def espeak(self) -> Espeak:
        if self._espeak is None:
            self._espeak = Espeak.instance()
        return self._espeak

    def stream(self, text: str) -> SpeechStream:
        """Start synthesising ``text`` in a worker thread; iterate the result for chunks as they come."""
        if not text.strip():
            raise ValueError("cannot synthesise empty text")
        return SpeechStream(self.espeak, text, self.settings, self.sample_rate, self._spent)

    def _spent(self, seconds: float) -> None:
        self.cpu_s += seconds

    def synthesize_blocking(self, text: str) -> AudioFrame:
        """The whole utterance at ``sample_rate`` (blocks; call from a thread, or use ``synthesize``)."""
        if not text.strip():
            raise ValueError("cannot synthesise empty text")
        chunks: list[Int16Array] = []
        s = self.settings

        def collect(samples: Int16Array) -> bool:
            chunks.append(samples)
            return True

        self.espeak.synth(text, collect, voice=s.voice, rate=s.rate, pitch=s.pitch)
        native = AudioFrame(
            samples=np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16),
            sample_rate=self.espeak.sample_rate,
        )
        return native.resampled(self.sample_rate)

    async def synthesize(self, text: str) -> AudioFrame:
        """The whole utterance, synthesised in a thread so the event loop keeps running."""
        frames = [f async for f in self.stream(text)]
        if not frames:
            return AudioFrame(samples=np.zeros(0, dtype=np.int16), sample_rate=self.sample_rate)
        return concat(frames)
