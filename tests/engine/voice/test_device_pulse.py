"""The sounddevice backend on a real (virtual) device: a private PulseAudio daemon with a null sink.

espeak audio is played through PortAudio into the null sink and recorded back from the sink's monitor source.
PortAudio (Debian's libportaudio2) reaches PulseAudio through ALSA's "pulse" device, so the system needs:
libportaudio2, pulseaudio, pulseaudio-utils (pactl) and libasound2-plugins (the ALSA pulse plugin).
The test skips with the reason when any of these is missing, and always stops the daemon it started.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.voice.audio import AudioFrame, concat
from engine.voice.backend import AudioUnavailable
from engine.voice.device_backend import DeviceBackend, find_device, import_sounddevice, list_devices
from engine.voice.tts import Synthesizer

pytestmark = pytest.mark.audio

ALSA_PULSE_PLUGIN_GLOBS = (
    "/usr/lib/*/alsa-lib/libasound_module_pcm_pulse.so",
    "/usr/lib/alsa-lib/libasound_module_pcm_pulse.so",
)


def _missing() -> str | None:
    for tool in ("pulseaudio", "pactl"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (apt-get install pulseaudio pulseaudio-utils)"
    if not any(Path("/").glob(g.lstrip("/")) for g in ALSA_PULSE_PLUGIN_GLOBS):
        return "ALSA pulse plugin missing (apt-get install libasound2-plugins)"
    try:
        import_sounddevice()
    except AudioUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture
def pulse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    runtime = tmp_path / "pulse-runtime"
    runtime.mkdir()
    socket = runtime / "native"
    env = dict(os.environ, HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path), PULSE_RUNTIME_PATH=str(runtime))
    proc = subprocess.Popen(
        [
            "pulseaudio", "--daemonize=no", "--exit-idle-time=-1", "-n", "--use-pid-file=no", "--disallow-exit",
            "--disable-shm=yes", f"--load=module-native-protocol-unix auth-anonymous=1 socket={socket}",
            "--load=module-null-sink sink_name=ava_test rate=48000 channels=1",
        ],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    server = f"unix:{socket}"
    try:
        penv = dict(env, PULSE_SERVER=server)
        deadline = time.monotonic() + 15
        while subprocess.run(["pactl", "info"], env=penv, capture_output=True).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace")[-500:] if proc.stderr else ""
                pytest.skip(f"private pulseaudio daemon did not start: {err}")
            time.sleep(0.1)
        for cmd in (["set-default-sink", "ava_test"], ["set-default-source", "ava_test.monitor"]):
            subprocess.run(["pactl", *cmd], env=penv, check=True, capture_output=True)
        monkeypatch.setenv("PULSE_SERVER", server)
        monkeypatch.setenv("PULSE_RUNTIME_PATH", str(runtime))
        list_devices(rescan=True)  # PortAudio enumerates again, now seeing the daemon through ALSA
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
        monkeypatch.undo()
        list_devices(rescan=True)


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
