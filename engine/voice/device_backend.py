"""Sound-card audio backend (PortAudio through ``sounddevice``) for the operator's mic/speaker softphone.

``sounddevice`` is imported lazily: without the PortAudio library, or without any device, constructing the
backend raises ``AudioUnavailable`` saying what is missing and how to fix it. Devices are chosen by index or by
a case-insensitive name substring. The sample rate is negotiated per device: the requested rate if the device
takes it, otherwise the device's default rate, with resampling (soxr) on both sides so callers always see
``sample_rate``. Input is captured by a PortAudio callback into a bounded queue (oldest frames dropped if the
consumer stalls, drops counted); the input level (RMS dBFS) is kept in ``input_level_dbfs`` and reported to
``on_level``. Output goes through a small buffer the output callback drains; ``stop_playback`` empties it, so
barge-in silences the speaker within one callback block (``frame_ms``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import ctypes.util
import logging
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from engine._compat.portaudio import reinitialize
from engine.voice.audio import SILENCE_DBFS, AudioFrame, StreamResampler, rms_dbfs
from engine.voice.backend import AudioBackend, AudioUnavailable

DeviceSpec = int | str | None
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    index: int
    name: str
    hostapi: str
    max_input_channels: int
    max_output_channels: int
    default_samplerate: float


def route_alsa_messages() -> bool:
    """Send ALSA's own messages ("underrun occurred", unknown PCM cards …) to our log instead of stderr.

    libasound prints them straight to file descriptor 2, which scribbles over a full-screen terminal UI. ALSA has a
    hook for this (``snd_lib_error_set_handler``); the handler must outlive every use of ALSA, so it is kept in a
    module global. Returns False where there is no ALSA (macOS, Windows, no libasound2).
    """
    global _alsa_handler
    if _alsa_handler is not None:
        return True
    name = ctypes.util.find_library("asound")
    if name is None:
        return False
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return False

    @ALSA_ERROR_HANDLER
    def handler(file: bytes | None, line: int, function: bytes | None, err: int, fmt: bytes | None) -> None:
        where = f"{(function or b'?').decode(errors='replace')} ({(file or b'?').decode(errors='replace')}:{line})"
        log.debug("ALSA %s: %s (error %d)", where, (fmt or b"").decode(errors="replace"), err)

    lib.snd_lib_error_set_handler(handler)
    _alsa_handler = handler
    return True


# void (*)(const char *file, int line, const char *function, int err, const char *fmt, ...); the variadic
# arguments are not read (ctypes cannot), so the message is logged unformatted.
ALSA_ERROR_HANDLER = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p
)
_alsa_handler: Any = None


def import_sounddevice() -> ModuleType:
    """Import sounddevice, turning a missing PortAudio into ``AudioUnavailable`` with the fix."""
    route_alsa_messages()
    try:
        import sounddevice
    except OSError as exc:
        raise AudioUnavailable(
            "PortAudio library not found: install libportaudio2 (apt-get install libportaudio2; "
            f"on macOS: brew install portaudio) ({exc})"
        ) from exc
    except ImportError as exc:
        raise AudioUnavailable("the sounddevice package is not installed (pip install sounddevice)") from exc
    return sounddevice


def list_devices(rescan: bool = False) -> list[DeviceInfo]:
    """All PortAudio devices. ``rescan`` re-initialises PortAudio to see devices added since start-up."""
    sd = import_sounddevice()
    if rescan:
        reinitialize(sd)
    apis = sd.query_hostapis()
    out = []
    for i, d in enumerate(sd.query_devices()):
        out.append(
            DeviceInfo(
                index=i,
                name=str(d["name"]),
                hostapi=str(apis[d["hostapi"]]["name"]),
                max_input_channels=int(d["max_input_channels"]),
                max_output_channels=int(d["max_output_channels"]),
                default_samplerate=float(d["default_samplerate"]),
            )
        )
    return out


def find_device(spec: DeviceSpec, kind: str, devices: list[DeviceInfo] | None = None) -> DeviceInfo:
    """The device for ``spec`` (index, name substring, or None for the default) that can do ``kind``."""
    if kind not in ("input", "output"):
        raise ValueError(f"kind must be 'input' or 'output', got {kind!r}")
    devs = devices if devices is not None else list_devices()

    def usable(d: DeviceInfo) -> bool:
        return (d.max_input_channels if kind == "input" else d.max_output_channels) > 0

    candidates = [d for d in devs if usable(d)]
    if not candidates:
        raise AudioUnavailable(
            f"no audio {kind} device found (PortAudio sees {len(devs)} device(s)); connect a device, or on Linux "
            "run PulseAudio/PipeWire with the ALSA pulse plugin (apt-get install libasound2-plugins)"
        )
    names = ", ".join(f"{d.index}: {d.name}" for d in candidates)
    if spec is None:
        sd = import_sounddevice()
        default = sd.default.device[0 if kind == "input" else 1]
        for d in candidates:
            if d.index == default:
                return d
        return candidates[0]
    if isinstance(spec, int):
        for d in candidates:
            if d.index == spec:
                return d
        raise AudioUnavailable(f"audio {kind} device index {spec} not found or not an {kind}; have: {names}")
    for d in candidates:
        if spec.lower() in d.name.lower():
            return d
    raise AudioUnavailable(f"no audio {kind} device matches {spec!r}; have: {names}")


def negotiate_rate(device: DeviceInfo, kind: str, wanted: int) -> int:
    """``wanted`` if the device accepts it, else the device's default rate (the caller resamples)."""
    sd = import_sounddevice()
    check = sd.check_input_settings if kind == "input" else sd.check_output_settings
    try:
        check(device=device.index, samplerate=wanted, channels=1, dtype="int16")
        return wanted
    except Exception:
        fallback = int(device.default_samplerate)
        try:
            check(device=device.index, samplerate=fallback, channels=1, dtype="int16")
        except Exception as exc:
            raise AudioUnavailable(
                f"audio {kind} device {device.name!r} accepts neither {wanted} Hz nor its default {fallback} Hz "
                f"mono int16: {exc}"
            ) from exc
        return fallback


class DeviceBackend(AudioBackend):
    """Microphone and speaker on PortAudio devices; either side can be turned off."""

    def __init__(
        self,
        input_device: DeviceSpec = None,
        output_device: DeviceSpec = None,
        *,
        sample_rate: int = 16000,
        frame_ms: int = 20,
        use_input: bool = True,
        use_output: bool = True,
        max_queued_ms: int = 2000,
        output_buffer_ms: int = 100,
        on_level: Callable[[float], None] | None = None,
    ) -> None:
        super().__init__(sample_rate, frame_ms)
        if not (use_input or use_output):
            raise ValueError("DeviceBackend needs input, output or both")
        self._sd = import_sounddevice()
        devices = list_devices()
        self.input_info = find_device(input_device, "input", devices) if use_input else None
        self.output_info = find_device(output_device, "output", devices) if use_output else None
        self.input_rate = negotiate_rate(self.input_info, "input", sample_rate) if self.input_info else 0
        self.output_rate = negotiate_rate(self.output_info, "output", sample_rate) if self.output_info else 0
        self.on_level = on_level
        self.input_level_dbfs = SILENCE_DBFS
        self.dropped_input_frames = 0
        self._max_queued = max(1, max_queued_ms // frame_ms)
        self._out_buffer_samples = max(1, self.output_rate * output_buffer_ms // 1000)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_queue: asyncio.Queue[AudioFrame] | None = None
        self._in_stream: Any = None
        self._out_stream: Any = None
        self._out_lock = threading.Lock()
        self._out_chunks: collections.deque[np.ndarray] = collections.deque()
        self._out_pending = 0  # samples queued for the output callback
        self._out_resampler = StreamResampler(sample_rate, self.output_rate) if self.output_rate else None
        self._in_position = 0
        self._out_progress = asyncio.Event()  # set by the output callback whenever it consumed audio

    # -- input ------------------------------------------------------------------------------------------------
    def _on_input(self, indata: Any, frames: int, _time: Any, _status: Any) -> None:
        samples = np.frombuffer(bytes(indata), dtype="<i2").astype(np.int16)
        level = rms_dbfs(samples)
        self.input_level_dbfs = level
        loop, queue = self._loop, self._in_queue
        if loop is None or queue is None or loop.is_closed():
            return
        t = self._in_position / self.input_rate
        self._in_position += frames
        loop.call_soon_threadsafe(self._deliver, AudioFrame(samples, self.input_rate, t), level)

    def _deliver(self, frame: AudioFrame, level: float) -> None:
        assert self._in_queue is not None
        if self._in_queue.qsize() >= self._max_queued:
            self._in_queue.get_nowait()
            self.dropped_input_frames += 1
        self._in_queue.put_nowait(frame)
        if self.on_level is not None:
            self.on_level(level)

    def _open_input(self) -> None:
        assert self.input_info is not None
        self._in_queue = asyncio.Queue()
        self._in_stream = self._open_stream(
            self._sd.RawInputStream, "input", self.input_info, self.input_rate, self._on_input
        )

    async def frames(self) -> AsyncIterator[AudioFrame]:
        if self.input_info is None:
            raise RuntimeError("this device backend was opened without input")
        if self._in_stream is None:
            self._open_input()
        assert self._in_queue is not None
        resampler = StreamResampler(self.input_rate, self.sample_rate)
        while not self._closed:
            frame = await self._in_queue.get()
            out = resampler.process(frame.samples)
            if out.size:
                yield AudioFrame(out, self.sample_rate, frame.timestamp)

    # -- output -----------------------------------------------------------------------------------------------
    def _on_output(self, outdata: Any, frames: int, _time: Any, _status: Any) -> None:
        out = np.zeros(frames, dtype=np.int16)
        filled = 0
        with self._out_lock:
            while filled < frames and self._out_chunks:
                head = self._out_chunks[0]
                take = min(frames - filled, head.size)
                out[filled : filled + take] = head[:take]
                filled += take
                if take == head.size:
                    self._out_chunks.popleft()
                else:
                    self._out_chunks[0] = head[take:]
            self._out_pending -= filled
        outdata[:] = out.astype("<i2").tobytes()
        loop = self._loop
        if filled and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._out_progress.set)

    def _open_output(self) -> None:
        assert self.output_info is not None
        self._out_stream = self._open_stream(
            self._sd.RawOutputStream, "output", self.output_info, self.output_rate, self._on_output
        )

    def _open_stream(
        self, kind: Callable[..., Any], direction: str, info: DeviceInfo, rate: int, callback: Callable[..., None]
    ) -> Any:
        """A started mono 16-bit stream of ``kind`` (``RawInputStream``/``RawOutputStream``) on ``info`` at ``rate``,
        one frame a block (AudioUnavailable when it cannot open or start; one that opened but did not start is
        closed)."""
        self._loop = asyncio.get_running_loop()
        stream: Any = None
        try:
            stream = kind(
                samplerate=rate,
                blocksize=rate * self.frame_ms // 1000,
                device=info.index,
                channels=1,
                dtype="int16",
                callback=callback,
            )
            stream.start()
        except Exception as exc:
            if stream is not None:
                with contextlib.suppress(Exception):
                    stream.close()
            raise AudioUnavailable(f"cannot open audio {direction} {info.name!r}: {exc}") from exc
        return stream

    async def _output_chunk(self, frame: AudioFrame) -> None:
        if self.output_info is None or self._out_resampler is None:
            raise RuntimeError("this device backend was opened without output")
        if self._out_stream is None:
            self._open_output()
        samples = self._out_resampler.process(frame.samples)
        while self._out_pending > self._out_buffer_samples and not self._stop.is_set():
            await self._wait_progress()
        if self._stop.is_set():
            return
        with self._out_lock:
            self._out_chunks.append(samples)
            self._out_pending += samples.size

    def queued_output_s(self) -> float:
        return self._out_pending / self.output_rate if self.output_rate else 0.0

    async def _wait_progress(self) -> None:
        """Wait until the output callback consumed audio, or one block passed (a stalled device must not hang)."""
        self._out_progress.clear()
        try:
            await asyncio.wait_for(self._out_progress.wait(), timeout=4 * self.frame_ms / 1000)
        except TimeoutError:
            return

    async def _drain_output(self) -> None:
        while self._out_pending > 0 and not self._stop.is_set() and not self._closed:
            await self._wait_progress()

    def _drop_pending_output(self) -> None:
        with self._out_lock:
            self._out_chunks.clear()
            self._out_pending = 0
        if self._out_resampler is not None:
            self._out_resampler = StreamResampler(self.sample_rate, self.output_rate)

    async def _release(self) -> None:
        for stream in (self._in_stream, self._out_stream):
            if stream is not None:
                await asyncio.to_thread(stream.close)
        self._in_stream = self._out_stream = None
