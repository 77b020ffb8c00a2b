"""WAV-file audio backend: a microphone that reads a WAV, a speaker that writes one, and the null backend.

Input: any PCM16 WAV (mono, or stereo downmixed), resampled to the backend rate, delivered in ``frame_ms``
frames either as fast as possible (tests, batch runs) or at real-time pace (``realtime=True``).
Output: played audio is appended to a mono PCM16 WAV at the backend rate, in order. With ``timeline=True`` the
speaker keeps a timeline instead: before each chunk it writes silence up to "now", where now is the input
position when a microphone file is open (so output lines up with what was heard), else time since open.
Barge-in (``stop_playback``) ends the current ``play`` before its next chunk. ``NullBackend`` hears silence and
plays into nothing, at real-time pace, for headless runs without a device.
"""

from __future__ import annotations

import asyncio
import time
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from engine.voice.audio import AudioFrame, Chunker, StreamResampler
from engine.voice.backend import AudioBackend

_READ_BLOCK = 4096


def read_wav(path: str | Path) -> AudioFrame:
    """Read a whole PCM16 WAV file (stereo downmixed) as one frame at its own sample rate."""
    p = Path(path)
    try:
        with wave.open(str(p), "rb") as w:
            width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except (OSError, wave.Error, EOFError) as exc:
        raise ValueError(f"cannot read WAV file {p}: {exc}") from exc
    if width != 2:
        raise ValueError(f"{p}: only 16-bit PCM WAV is supported, got {8 * width}-bit")
    samples = np.frombuffer(raw, dtype="<i2")
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1).round()
    return AudioFrame(samples=samples.astype(np.int16), sample_rate=rate)


def write_wav(path: str | Path, audio: AudioFrame) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(audio.sample_rate)
        w.writeframes(audio.pcm)


class WavBackend(AudioBackend):
    """Microphone from ``input_path`` and/or speaker into ``output_path`` (either may be None)."""

    def __init__(
        self,
        input_path: str | Path | None = None,
        output_path: str | Path | None = None,
        *,
        sample_rate: int = 16000,
        frame_ms: int = 20,
        realtime: bool = False,
        timeline: bool = False,
    ) -> None:
        super().__init__(sample_rate, frame_ms)
        self.realtime = realtime
        self.timeline = timeline
        self.input_path = Path(input_path) if input_path is not None else None
        self.output_path = Path(output_path) if output_path is not None else None
        self._reader: wave.Wave_read | None = None
        if self.input_path is not None:
            try:
                self._reader = wave.open(str(self.input_path), "rb")
            except (OSError, wave.Error, EOFError) as exc:
                raise ValueError(f"cannot open input WAV {self.input_path}: {exc}") from exc
            if self._reader.getsampwidth() != 2:
                self._reader.close()
                raise ValueError(f"{self.input_path}: only 16-bit PCM WAV is supported")
        self._writer: wave.Wave_write | None = None
        if self.output_path is not None:
            self._writer = wave.open(str(self.output_path), "wb")
            self._writer.setnchannels(1)
            self._writer.setsampwidth(2)
            self._writer.setframerate(sample_rate)
        self.input_position = 0.0  # seconds of input delivered so far
        self.samples_written = 0
        self._out_clock: float | None = None  # loop time the written output reaches (real-time pace)
        self._t0 = time.monotonic()
        self._consumed = False

    async def frames(self) -> AsyncIterator[AudioFrame]:
        if self._reader is None:
            raise RuntimeError("this WAV backend has no input file")
        if self._consumed:
            raise RuntimeError(f"input WAV {self.input_path} was already read")
        self._consumed = True
        reader = self._reader
        channels, rate = reader.getnchannels(), reader.getframerate()
        resampler = StreamResampler(rate, self.sample_rate)
        chunker = Chunker(self.sample_rate, self.frame_ms)
        loop = asyncio.get_running_loop()
        start = loop.time()
        while not self._closed:
            raw = reader.readframes(_READ_BLOCK)
            last = len(raw) == 0
            samples = np.frombuffer(raw, dtype="<i2")
            if channels > 1:
                samples = samples.reshape(-1, channels).mean(axis=1).round().astype(np.int16)
            out = resampler.process(samples.astype(np.int16), last=last)
            pieces = chunker.push(AudioFrame(out, self.sample_rate, self.input_position)) if out.size else []
            if last:
                pieces += chunker.flush(pad=True)
            for piece in pieces:
                if self.realtime:
                    delay = start + piece.end_time - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                else:
                    await asyncio.sleep(0)  # let the consumer's other tasks run between frames
                self.input_position = piece.end_time
                yield piece
            if last:
                return

    def _now(self) -> float:
        if self._reader is not None:
            return self.input_position
        return time.monotonic() - self._t0

    async def _output_chunk(self, frame: AudioFrame) -> None:
        if self._writer is None:
            raise RuntimeError("this WAV backend has no output file")
        if self.timeline:
            target = round(self._now() * self.sample_rate)
            # at real-time pace, output lagging the input by less than one chunk is scheduling jitter, not a pause:
            # padding it would cut gaps into a continuous utterance
            slack = frame.num_samples if self.realtime else 0
            if target > self.samples_written + slack:
                gap = target - self.samples_written
                self._writer.writeframes(bytes(2 * gap))
                self.samples_written += gap
        self._writer.writeframes(frame.pcm)
        self.samples_written += frame.num_samples
        if self.realtime:
            # an absolute clock, so sleeps that overshoot do not add up (restarted when output paused)
            now = asyncio.get_running_loop().time()
            if self._out_clock is None or now - self._out_clock > frame.duration:
                self._out_clock = now
            self._out_clock += frame.duration
            await asyncio.sleep(self._out_clock - now)
        else:
            await asyncio.sleep(0)

    def _drop_pending_output(self) -> None:
        """Nothing is buffered: each chunk is written when played, so stopping before the next is enough."""

    async def _drain_output(self) -> None:
        """Nothing is buffered: a chunk is in the file once ``_output_chunk`` returned."""

    async def _release(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._writer is not None:
            self._writer.close()


class NullBackend(AudioBackend):
    """Hears silence and plays into nothing, both at real-time pace."""

    def __init__(self, sample_rate: int = 16000, frame_ms: int = 20) -> None:
        super().__init__(sample_rate, frame_ms)
        self.played_samples = 0

    async def frames(self) -> AsyncIterator[AudioFrame]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        t = 0.0
        while not self._closed:
            frame = AudioFrame.silence(self.frame_ms, self.sample_rate, timestamp=t)
            t = frame.end_time
            delay = start + t - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            yield frame

    async def _output_chunk(self, frame: AudioFrame) -> None:
        self.played_samples += frame.num_samples
        await asyncio.sleep(frame.duration)

    def _drop_pending_output(self) -> None:
        """Nothing is buffered: output is discarded chunk by chunk as it is played."""

    async def _drain_output(self) -> None:
        """Nothing is buffered: a chunk is done once ``_output_chunk`` returned."""

    async def _release(self) -> None:
        """Nothing is held."""
