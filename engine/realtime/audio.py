"""Audio between the driver's format and a realtime provider's: pass-through when equal, else G.711 and soxr.

Why it exists: telephony speaks 8 kHz μ-law and three of the four realtime providers accept it, so on the phone
the caller's bytes go straight into the provider's socket and back; only where a provider cannot take the
driver's format (Gemini Live: PCM16 at 16 kHz in, 24 kHz out) is audio decoded, resampled with soxr's streaming
resampler (no clicks at 20 ms frame borders) and encoded again. ``negotiate`` picks the provider format for a
driver format so every adapter makes the same choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.realtime.session import AudioSpec
from engine.voice.audio import Int16Array, StreamResampler
from engine.voice.g711 import alaw_decode, alaw_encode, ulaw_decode, ulaw_encode, ulaw_to_pcm16

#: Encodings companded to 8 bits: a resampler feeding them may dither (its ±1 LSB is below their smallest step).
G711 = ("pcmu", "pcma")


def negotiate(native: AudioSpec, accepted: Sequence[AudioSpec]) -> AudioSpec:
    """The provider format to use for a driver whose audio is ``native``: ``native`` itself when accepted (no
    conversion at all), else the accepted PCM16 format closest in rate at or above it, else the first accepted."""
    if not accepted:
        raise ValueError("a realtime provider must accept at least one audio format")
    if native in accepted:
        return native
    pcm = sorted((s for s in accepted if s.encoding == "pcm16"), key=lambda s: s.rate)
    for spec in pcm:
        if spec.rate >= native.rate:
            return spec
    return pcm[-1] if pcm else accepted[0]


def stream_quality(source: AudioSpec, target: AudioSpec) -> str:
    """soxr quality for a live call's stream: its high-quality filters hold back 80–120 ms of audio, which a
    caller hears as latency. Upsampling only adds images above the source band (harmless to a provider's
    recogniser), so it uses the quick filter that holds nothing back; downsampling still needs a real
    anti-aliasing filter and uses the low-quality one (60 ms instead of 80 ms for 24 → 8 kHz)."""
    return "QQ" if target.rate > source.rate else "LQ"


def _decode(spec: AudioSpec, data: bytes) -> Int16Array:
    if spec.encoding == "pcmu":
        return ulaw_decode(data)
    if spec.encoding == "pcma":
        return alaw_decode(data)
    if len(data) % 2:
        raise ValueError(f"{spec} audio must have an even number of bytes, got {len(data)}")
    return np.frombuffer(data, dtype="<i2").astype(np.int16, copy=False)


def _encode(spec: AudioSpec, samples: Int16Array) -> bytes:
    if spec.encoding == "pcmu":
        return ulaw_encode(samples)
    if spec.encoding == "pcma":
        return alaw_encode(samples)
    return samples.astype("<i2", copy=False).tobytes()


class AudioConverter:
    """Converts one direction of a stream from ``source`` to ``target``; equal formats cost nothing.

    Keeps the resampler's state between calls, so feed it the stream's pieces in order; ``flush`` returns the tail
    the resampler holds back at the end of an utterance.
    """

    def __init__(self, source: AudioSpec, target: AudioSpec) -> None:
        self.source = source
        self.target = target
        self.passthrough = source == target
        self._resampler = (
            None
            if source.rate == target.rate
            else StreamResampler(
                source.rate, target.rate, stream_quality(source, target), dither=target.encoding in G711
            )
        )
        self._odd = b""  # a PCM16 byte left over from an odd-length piece
        self._ulaw_to_pcm = source.encoding == "pcmu" and target.encoding == "pcm16" and self._resampler is None

    @property
    def resamples(self) -> bool:
        """The converter keeps resampler state between pieces (feed it one stream only)."""
        return self._resampler is not None

    def convert(self, data: bytes) -> bytes:
        if self.passthrough or not data:
            return data
        if self._ulaw_to_pcm:
            return ulaw_to_pcm16(data)
        if self.source.encoding == "pcm16" and (self._odd or len(data) % 2):  # a sample split between pieces
            data = self._odd + data
            cut = len(data) - (len(data) % 2)
            data, self._odd = data[:cut], data[cut:]
        samples = _decode(self.source, data)
        if self._resampler is not None:
            samples = self._resampler.process(samples)
        return _encode(self.target, samples)

    def flush(self) -> bytes:
        if self.passthrough or self._resampler is None:
            return b""
        return _encode(self.target, self._resampler.flush())

    def reset(self) -> None:
        """Forget buffered state (after a barge-in the old utterance's tail must not leak into the next)."""
        if self._resampler is not None:
            old = self._resampler
            self._resampler = StreamResampler(old.from_rate, old.to_rate, old.quality, dither=old.dither)
        self._odd = b""
