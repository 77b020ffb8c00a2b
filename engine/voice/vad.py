"""Endpointing: cut a stream of audio frames into utterances, by voice activity or by push-to-talk.

``VadSegmenter`` classifies fixed frames (10/20/30 ms) with pocketsphinx's ``Vad`` (the WebRTC VAD algorithm)
and applies hysteresis: an utterance starts when ``start_ms`` of the last ``start_window_ms`` are speech, and
ends after ``silence_ms`` of continuous non-speech. Each utterance carries ``padding_ms`` of audio before the
detected start (so word onsets are not clipped) and the trailing silence. ``max_utterance_ms`` force-ends a
monologue. ``PushToTalkSegmenter`` is the alternative where the operator holds a key: audio between ``press()``
and ``release()`` is one utterance. Both expose ``push(frame) -> list[Utterance]`` and ``flush()``;
``segment_stream`` runs either over an async frame iterator.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.voice.audio import AudioFrame, Chunker, Int16Array

VAD_RATES = (8000, 16000, 32000, 48000)
VAD_MODES = {"loose": 0, "medium_loose": 1, "medium_strict": 2, "strict": 3}


@dataclass(frozen=True, slots=True)
class Utterance:
    audio: AudioFrame  # the utterance's samples (with leading padding and trailing silence)
    start: float  # stream time (s) where speech was detected
    end: float  # stream time (s) where the utterance was closed
    reason: str  # "silence" | "max_length" | "end_of_stream" | "released"


class Segmenter(Protocol):
    def push(self, frame: AudioFrame) -> list[Utterance]: ...

    def flush(self) -> list[Utterance]: ...


class VadSegmenter:
    """Voice-activity endpointing (see module docstring). Feed any frame sizes at ``sample_rate``."""

    def __init__(
        self,
        sample_rate: int = 16000,
        *,
        silence_ms: int = 600,
        start_ms: int = 90,
        start_window_ms: int = 150,
        padding_ms: int = 200,
        max_utterance_ms: int = 30000,
        frame_ms: int = 30,
        mode: str = "medium_loose",
    ) -> None:
        from pocketsphinx import Vad

        if sample_rate not in VAD_RATES:
            raise ValueError(f"VAD sample_rate must be one of {VAD_RATES}, got {sample_rate}; resample first")
        if frame_ms not in (10, 20, 30):
            raise ValueError(f"VAD frame_ms must be 10, 20 or 30, got {frame_ms}")
        if mode not in VAD_MODES:
            raise ValueError(f"VAD mode must be one of {sorted(VAD_MODES)}, got {mode!r}")
        for name, value in (("silence_ms", silence_ms), ("start_ms", start_ms), ("max_utterance_ms", max_utterance_ms)):
            if value < frame_ms:
                raise ValueError(f"{name} must be at least one frame ({frame_ms} ms), got {value}")
        if start_window_ms < start_ms:
            raise ValueError(f"start_window_ms ({start_window_ms}) must be >= start_ms ({start_ms})")
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self._vad = Vad(VAD_MODES[mode], sample_rate, frame_ms / 1000.0)
        self._chunker = Chunker(sample_rate, frame_ms)
        self._silence_frames = -(-silence_ms // frame_ms)
        self._start_frames = -(-start_ms // frame_ms)
        self._window: deque[tuple[AudioFrame, bool]] = deque(maxlen=max(1, start_window_ms // frame_ms))
        self._pad: deque[AudioFrame] = deque(maxlen=max(0, padding_ms // frame_ms) + self._window.maxlen)  # type: ignore[operator]
        self._max_frames = max_utterance_ms // frame_ms
        self._in_speech = False
        self._collected: list[AudioFrame] = []
        self._silent_run = 0
        self._speech_start = 0.0

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    def _emit(self, end: float, reason: str) -> Utterance:
        samples = np.concatenate([f.samples for f in self._collected])
        audio = AudioFrame(samples=samples, sample_rate=self.sample_rate, timestamp=self._collected[0].timestamp)
        utt = Utterance(audio=audio, start=self._speech_start, end=end, reason=reason)
        self._collected = []
        self._in_speech = False
        self._silent_run = 0
        self._window.clear()
        self._pad.clear()
        return utt

    def _process(self, frame: AudioFrame) -> Utterance | None:
        speech = bool(self._vad.is_speech(frame.pcm))
        if not self._in_speech:
            self._pad.append(frame)
            self._window.append((frame, speech))
            if sum(1 for _, s in self._window if s) >= self._start_frames:
                self._in_speech = True
                first_speech = next(f for f, s in self._window if s)
                self._speech_start = first_speech.timestamp
                self._collected = list(self._pad)
                self._silent_run = 0
            return None
        self._collected.append(frame)
        self._silent_run = 0 if speech else self._silent_run + 1
        if self._silent_run >= self._silence_frames:
            return self._emit(frame.end_time, "silence")
        if len(self._collected) >= self._max_frames:
            return self._emit(frame.end_time, "max_length")
        return None

    def push(self, frame: AudioFrame) -> list[Utterance]:
        out: list[Utterance] = []
        for f in self._chunker.push(frame):
            utt = self._process(f)
            if utt is not None:
                out.append(utt)
        return out

    def flush(self) -> list[Utterance]:
        """End of stream: a pending utterance is returned (reason ``end_of_stream``)."""
        out: list[Utterance] = []
        for f in self._chunker.flush(pad=True):
            utt = self._process(f)
            if utt is not None:
                out.append(utt)
        if self._in_speech and self._collected:
            out.append(self._emit(self._collected[-1].end_time, "end_of_stream"))
        self._window.clear()
        self._pad.clear()
        return out


class PushToTalkSegmenter:
    """Audio pushed between ``press()`` and ``release()`` is one utterance; audio outside is dropped."""

    def __init__(self, sample_rate: int = 16000, max_utterance_ms: int = 60000) -> None:
        self.sample_rate = sample_rate
        self._max_samples = sample_rate * max_utterance_ms // 1000
        self._pressed = False
        self._chunks: list[Int16Array] = []
        self._start = 0.0
        self._t0: float | None = None
        self._last_end = 0.0
        self._count = 0

    @property
    def pressed(self) -> bool:
        return self._pressed

    def press(self) -> None:
        if self._pressed:
            return
        self._pressed = True
        self._chunks = []
        self._count = 0
        self._t0 = None

    def _take(self, end: float, reason: str) -> list[Utterance]:
        self._pressed = False
        if not self._chunks:
            return []
        audio = AudioFrame(samples=np.concatenate(self._chunks), sample_rate=self.sample_rate, timestamp=self._start)
        self._chunks = []
        self._count = 0
        return [Utterance(audio=audio, start=self._start, end=end, reason=reason)]

    def release(self) -> list[Utterance]:
        """Stop collecting; returns the utterance (empty list when nothing was heard while pressed)."""
        if not self._pressed:
            return []
        return self._take(self._last_end, "released")

    def push(self, frame: AudioFrame) -> list[Utterance]:
        if frame.sample_rate != self.sample_rate:
            raise ValueError(f"push-to-talk expects {self.sample_rate} Hz frames, got {frame.sample_rate} Hz")
        self._last_end = frame.end_time
        if not self._pressed:
            return []
        if self._t0 is None:
            self._t0 = self._start = frame.timestamp
        self._chunks.append(frame.samples)
        self._count += frame.num_samples
        if self._count >= self._max_samples:
            return self._take(frame.end_time, "max_length")
        return []

    def flush(self) -> list[Utterance]:
        return self._take(self._last_end, "end_of_stream") if self._pressed else []


async def segment_stream(frames: AsyncIterator[AudioFrame], segmenter: Segmenter) -> AsyncIterator[Utterance]:
    """Run ``segmenter`` over ``frames``, yielding utterances as they close, and the last one at the end."""
    async for frame in frames:
        for utt in segmenter.push(frame):
            yield utt
    for utt in segmenter.flush():
        yield utt
