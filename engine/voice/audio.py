"""PCM16 mono audio frames and the small operations every voice part needs on them.

Everything in the voice stack (backends, VAD, STT, TTS, telephony) passes audio around as ``AudioFrame``: signed
16-bit little-endian mono PCM with its sample rate and a timestamp. This module holds the frame type, conversions
between bytes and numpy, resampling (``soxr``, one-shot and streaming), chunking into fixed-duration frames, and
the level meter (RMS in dBFS).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import numpy.typing as npt
import soxr

Int16Array = npt.NDArray[np.int16]

#: dBFS reported for digital silence (RMS of zero), instead of minus infinity.
SILENCE_DBFS = -120.0


def _as_int16(data: bytes | bytearray | memoryview | Int16Array) -> Int16Array:
    if isinstance(data, np.ndarray):
        if data.dtype != np.int16:
            raise TypeError(f"audio samples must be numpy int16, got {data.dtype}")
        if data.ndim != 1:
            raise ValueError(f"audio samples must be mono (1-D), got shape {data.shape}")
        return data
    raw = bytes(data)
    if len(raw) % 2:
        raise ValueError(f"PCM16 audio must have an even number of bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype="<i2").astype(np.int16, copy=False)


@functools.cache
def _ulaw_decode() -> Callable[[bytes], Int16Array]:
    from engine.voice.g711 import ulaw_decode  # its tables are built on import: only phone audio pays for them

    return ulaw_decode


class AudioFrame:
    """A piece of PCM16 mono audio; treat it as immutable (its samples are read-only).

    ``samples`` is a read-only 1-D numpy int16 array; construct with ``AudioFrame.from_pcm`` from bytes or
    ``AudioFrame(samples=array, ...)``. ``timestamp`` is seconds on the producer's clock (stream position for
    files, capture time for devices). A frame made ``from_ulaw`` (a phone call's 8 kHz G.711 μ-law) keeps its
    codes in ``ulaw`` and decodes them only when someone reads ``samples``: a realtime provider that speaks μ-law
    gets the caller's bytes as they came off the wire, and its own μ-law goes back out without a decode/encode.
    """

    __slots__ = ("_pcm", "_samples", "sample_rate", "timestamp", "ulaw")
    _samples: Int16Array | None
    sample_rate: int
    timestamp: float
    _pcm: bytes | None
    #: The G.711 μ-law codes this frame was made from (``from_ulaw``), else None.
    ulaw: bytes | None

    def __init__(self, samples: Int16Array, sample_rate: int, timestamp: float = 0.0) -> None:
        if not isinstance(sample_rate, int) or sample_rate <= 0:
            raise ValueError(f"sample_rate must be a positive int, got {sample_rate!r}")
        arr = _as_int16(samples)
        if arr.flags.writeable:
            arr = arr.copy()
            arr.flags.writeable = False
        self._samples = arr
        self.sample_rate = sample_rate
        self.timestamp = timestamp
        self._pcm = None
        self.ulaw = None

    def __repr__(self) -> str:
        return f"AudioFrame({self.num_samples} samples, {self.sample_rate} Hz, t={self.timestamp:.3f})"

    @classmethod
    def from_ulaw(cls, codes: bytes, timestamp: float = 0.0) -> AudioFrame:
        """8 kHz μ-law codes as a frame; decoded to PCM16 only when ``samples`` (or ``pcm``) is read."""
        frame = cls.__new__(cls)
        frame._samples = None
        frame.sample_rate = 8000
        frame.timestamp = timestamp
        frame._pcm = None
        frame.ulaw = codes if isinstance(codes, bytes) else bytes(codes)
        return frame

    def retimed(self, timestamp: float) -> AudioFrame:
        """The same audio (samples and μ-law codes shared, nothing decoded) at another ``timestamp``."""
        frame = AudioFrame.__new__(AudioFrame)
        frame._samples = self._samples
        frame.sample_rate = self.sample_rate
        frame.timestamp = timestamp
        frame._pcm = self._pcm
        frame.ulaw = self.ulaw
        return frame

    @property
    def samples(self) -> Int16Array:
        arr = self._samples
        if arr is None:
            assert self.ulaw is not None
            arr = _ulaw_decode()(self.ulaw)
            arr.flags.writeable = False
            self._samples = arr
        return arr

    @classmethod
    def from_pcm(
        cls, data: bytes | bytearray | memoryview | Int16Array, sample_rate: int, timestamp: float = 0.0
    ) -> AudioFrame:
        return cls(samples=_as_int16(data), sample_rate=sample_rate, timestamp=timestamp)

    @classmethod
    def silence(cls, duration_ms: float, sample_rate: int, timestamp: float = 0.0) -> AudioFrame:
        n = round(sample_rate * duration_ms / 1000.0)
        return cls(samples=np.zeros(n, dtype=np.int16), sample_rate=sample_rate, timestamp=timestamp)

    @property
    def pcm(self) -> bytes:
        """The samples as little-endian PCM16 bytes."""
        pcm = self._pcm
        if pcm is None:
            pcm = self._pcm = self.samples.astype("<i2", copy=False).tobytes()
        return pcm

    @property
    def num_samples(self) -> int:
        if self._samples is None and self.ulaw is not None:
            return len(self.ulaw)
        return int(self.samples.shape[0])

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return self.num_samples / self.sample_rate

    @property
    def end_time(self) -> float:
        return self.timestamp + self.duration

    def rms_dbfs(self) -> float:
        return rms_dbfs(self.samples)

    def resampled(self, rate: int) -> AudioFrame:
        if rate == self.sample_rate:
            return self
        return AudioFrame(
            samples=resample(self.samples, self.sample_rate, rate), sample_rate=rate, timestamp=self.timestamp
        )


def rms_dbfs(samples: Int16Array) -> float:
    """RMS level relative to full scale (a full-scale square wave is 0 dBFS); silence is ``SILENCE_DBFS``."""
    if samples.size == 0:
        return SILENCE_DBFS
    rms = float(np.sqrt(np.mean(np.square(samples.astype(np.float64)))))
    if rms <= 0.0:
        return SILENCE_DBFS
    return max(SILENCE_DBFS, 20.0 * math.log10(rms / 32768.0))


def _check_rate(rate: int, what: str) -> None:
    if not isinstance(rate, int) or rate <= 0:
        raise ValueError(f"{what} must be a positive int sample rate, got {rate!r}")


def _to_int16(x: npt.NDArray[np.floating]) -> Int16Array:
    # rounded and clamped in place: np.clip's Python wrapper costs more than the arithmetic on a 20 ms frame
    y = np.rint(x)
    np.minimum(y, 32767, out=y)
    np.maximum(y, -32768, out=y)
    return y.astype(np.int16)


def resample(samples: Int16Array, from_rate: int, to_rate: int) -> Int16Array:
    """Resample a whole signal with soxr (high quality). Output length is ``round(len * to / from)``."""
    _check_rate(from_rate, "from_rate")
    _check_rate(to_rate, "to_rate")
    arr = _as_int16(samples)
    if from_rate == to_rate or arr.size == 0:
        return arr.copy()
    out = soxr.resample(arr.astype(np.float32), from_rate, to_rate, quality="HQ")
    return _to_int16(np.asarray(out))


class StreamResampler:
    """Resamples a stream chunk by chunk without clicks at chunk borders (soxr's streaming resampler).

    Call ``process(samples)`` per chunk and ``flush()`` once at the end to get the tail soxr holds back.
    """

    def __init__(self, from_rate: int, to_rate: int, quality: str = "HQ", *, dither: bool = False) -> None:
        """``dither``: soxr's int16 mode, a third of the cost per chunk, which adds ±1 LSB of noise to its
        output — inaudible once the audio is companded to 8 bits (μ-law's or A-law's smallest step is wider), but
        it changes how the VAD segments digital silence (tests/engine/voice/test_stt_roundtrip.py), so only for
        audio going to G.711."""
        _check_rate(from_rate, "from_rate")
        _check_rate(to_rate, "to_rate")
        self.from_rate = from_rate
        self.to_rate = to_rate
        self.quality = quality
        self.dither = dither
        self._stream: soxr.ResampleStream | None = (
            None
            if from_rate == to_rate
            else soxr.ResampleStream(from_rate, to_rate, 1, dtype="int16" if dither else "float32", quality=quality)
        )

    def process(self, samples: Int16Array, last: bool = False) -> Int16Array:
        arr = _as_int16(samples)
        if self._stream is None:
            return arr.copy()
        if self.dither:
            return np.asarray(self._stream.resample_chunk(arr, last=last), dtype=np.int16)
        return _to_int16(np.asarray(self._stream.resample_chunk(arr.astype(np.float32), last=last)))

    def flush(self) -> Int16Array:
        return self.process(np.zeros(0, dtype=np.int16), last=True)


def samples_per_chunk(sample_rate: int, chunk_ms: float) -> int:
    _check_rate(sample_rate, "sample_rate")
    n = round(sample_rate * chunk_ms / 1000.0)
    if n <= 0:
        raise ValueError(f"chunk of {chunk_ms} ms at {sample_rate} Hz holds no samples")
    return n


class Chunker:
    """Cuts a stream of arbitrary-sized frames into frames of exactly ``chunk_ms`` (the last one padded or not).

    Timestamps of output frames follow the input's: the first output frame starts at the first input's timestamp
    and every following one advances by exactly one chunk.
    """

    def __init__(self, sample_rate: int, chunk_ms: float) -> None:
        self.sample_rate = sample_rate
        self.chunk_ms = chunk_ms
        self.size = samples_per_chunk(sample_rate, chunk_ms)
        self._buf = np.zeros(0, dtype=np.int16)
        self._t: float | None = None

    def push(self, frame: AudioFrame) -> list[AudioFrame]:
        if frame.sample_rate != self.sample_rate:
            raise ValueError(
                f"Chunker expects {self.sample_rate} Hz frames, got {frame.sample_rate} Hz; resample first"
            )
        if self._t is None:
            self._t = frame.timestamp
        if self._buf.size == 0 and frame.num_samples == self.size:
            # already one chunk (the usual case: the drivers cut their audio at the backend's frame size): passed on
            # as it is, so nothing is copied and a μ-law frame keeps its codes for the phone
            t, self._t = self._t, self._t + self.size / self.sample_rate
            return [frame if abs(frame.timestamp - t) < 1e-6 else frame.retimed(t)]
        self._buf = np.concatenate([self._buf, frame.samples])
        out: list[AudioFrame] = []
        while self._buf.size >= self.size:
            out.append(AudioFrame(samples=self._buf[: self.size], sample_rate=self.sample_rate, timestamp=self._t))
            self._buf = self._buf[self.size :]
            self._t += self.size / self.sample_rate
        return out

    def flush(self, pad: bool = True) -> list[AudioFrame]:
        """Return what is left as one frame (zero-padded to full size when ``pad``), or nothing."""
        if self._buf.size == 0:
            return []
        rest = self._buf
        if pad:
            rest = np.concatenate([rest, np.zeros(self.size - rest.size, dtype=np.int16)])
        self._buf = np.zeros(0, dtype=np.int16)
        frame = AudioFrame(samples=rest, sample_rate=self.sample_rate, timestamp=self._t or 0.0)
        self._t = None
        return [frame]


def chunk(frames: Iterable[AudioFrame], chunk_ms: float, pad: bool = True) -> Iterator[AudioFrame]:
    """Re-cut frames (all of one sample rate) into ``chunk_ms`` frames."""
    chunker: Chunker | None = None
    for frame in frames:
        if chunker is None:
            chunker = Chunker(frame.sample_rate, chunk_ms)
        yield from chunker.push(frame)
    if chunker is not None:
        yield from chunker.flush(pad=pad)


def concat(frames: Iterable[AudioFrame]) -> AudioFrame:
    """Join frames of one sample rate into one frame (timestamp of the first)."""
    items = list(frames)
    if not items:
        raise ValueError("concat needs at least one frame")
    rate = items[0].sample_rate
    for f in items:
        if f.sample_rate != rate:
            raise ValueError(f"cannot concat frames of {rate} Hz and {f.sample_rate} Hz")
    return AudioFrame(
        samples=np.concatenate([f.samples for f in items]), sample_rate=rate, timestamp=items[0].timestamp
    )
