"""The sounddevice backend on a real (virtual) device: a private PulseAudio daemon with a null sink.

espeak audio is played through PortAudio into the null sink and recorded back from the sink's monitor source.
The daemon and what it needs are in ``tests.fixtures.pulse``.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from engine.voice.audio import AudioFrame, concat
from engine.voice.backend import AudioUnavailable
from engine.voice.device_backend import DeviceBackend, find_device, list_devices
from engine.voice.tts import Synthesizer

pytestmark = pytest.mark.audio


def _xcorr_peak(played: np.ndarray, recorded: np.ndarray) -> float:
    a = played.astype(np.float64)
    b = recorded.astype(np.float64)
    a = (a - a.mean()) / (np.linalg.norm(a - a.mean()) or 1.0)
    n = a.size + b.size
    size = 1 << (n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(b, size) * np.conj(np.fft.rfft(a, size)), size)
    best = int(np.argmax(corr[: b.size]))
    window = b[best : best + a.size]
    window = window - window.mean()
    return float(corr[best] / (np.linalg.norm(window) or 1.0))


async def test_play_into_null_sink_and_record_monitor(pulse: str) -> None:
    devices = list_devices()
    assert find_device("pulse", "output", devices).name == "pulse"
    levels: list[float] = []
    speech = Synthesizer(sample_rate=16000).synthesize_blocking("Roll two dice with six sides.")
    async with DeviceBackend("pulse", "pulse", sample_rate=16000, frame_ms=20, on_level=levels.append) as dev:
        recorded: list[AudioFrame] = []
        target = speech.duration + 1.5

        async def record() -> None:
            async for frame in dev.frames():
                recorded.append(frame)
                if sum(f.duration for f in recorded) >= target:
                    return

        recorder = asyncio.create_task(record())
        await asyncio.sleep(0.2)  # the input stream is running before playback starts
        assert await dev.play([speech]) is True
        await asyncio.wait_for(recorder, timeout=30)
    audio = concat(recorded)
    assert audio.sample_rate == 16000
    assert audio.rms_dbfs() > -45  # the signal came back (a silent monitor would be -120)
    # and it is the same signal: a 1 s stretch from the middle of what was played is found in the recording
    # (the monitor source may start a few tens of ms into playback, so the very start is not compared)
    middle = speech.samples[int(0.4 * 16000) : int(1.4 * 16000)]
    assert _xcorr_peak(middle, audio.samples) > 0.9
    assert max(levels) > -40  # the level meter saw it


async def test_barge_in_silences_device(pulse: str) -> None:
    long_speech = Synthesizer(sample_rate=16000).synthesize_blocking("This answer is long. " * 10)
    async with DeviceBackend(None, "pulse", sample_rate=16000, use_input=False) as dev:
        task = asyncio.create_task(dev.play([long_speech]))
        await asyncio.sleep(0.3)
        dev.stop_playback()
        assert await asyncio.wait_for(task, timeout=10) is False
        assert not dev.is_playing


def test_unknown_device_names_candidates(pulse: str) -> None:
    with pytest.raises(AudioUnavailable, match=r"no audio input device matches 'no-such-mic'; have: .*pulse"):
        find_device("no-such-mic", "input")
