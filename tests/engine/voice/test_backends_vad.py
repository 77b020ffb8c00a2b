"""WAV and null backends (input pacing, output, timeline, barge-in) and the two segmenters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from engine.voice.audio import AudioFrame
from engine.voice.tts import Synthesizer
from engine.voice.vad import PushToTalkSegmenter, VadSegmenter
from engine.voice.wav_backend import NullBackend, WavBackend, read_wav, write_wav


def _tone(seconds: float, rate: int = 16000) -> AudioFrame:
    t = np.arange(int(rate * seconds)) / rate
    return AudioFrame((8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16), rate)


async def test_wav_input_resampled_and_chunked(tmp_path: Path) -> None:
    path = tmp_path / "in.wav"
    write_wav(path, _tone(1.0, 8000))
    async with WavBackend(path, sample_rate=16000, frame_ms=20) as mic:
        frames = [f async for f in mic.frames()]
    assert all(f.num_samples == 320 and f.sample_rate == 16000 for f in frames)
    assert len(frames) == 50
    assert frames[10].timestamp == pytest.approx(0.2)


async def test_wav_output_in_order_and_timeline(tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    async with WavBackend(output_path=out, sample_rate=16000) as spk:
        assert await spk.play([_tone(0.5, 8000)]) is True
        await spk.write(_tone(0.25))
    audio = read_wav(out)
    assert audio.sample_rate == 16000 and audio.num_samples == 8000 + 4160  # last chunk padded to 20 ms
    # timeline: output lines up with input position (silence where nothing was played)
    inp, out2 = tmp_path / "in.wav", tmp_path / "out2.wav"
    write_wav(inp, AudioFrame.silence(1000, 16000))
    async with WavBackend(inp, out2, sample_rate=16000, timeline=True) as both:
        n = 0
        async for _ in both.frames():
            n += 1
            if n == 25:  # 0.5 s into the input
                await both.play([_tone(0.1)])
    played = read_wav(out2).samples
    assert played.size == 8000 + 1600
    assert not played[:8000].any() and played[8000:].any()


async def test_barge_in_stops_within_one_chunk(tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    async with WavBackend(output_path=out, sample_rate=16000, frame_ms=20) as spk:

        async def answer() -> AsyncIterator[AudioFrame]:
            for i in range(100):
                if i == 10:
                    spk.stop_playback()  # the caller started talking
                yield AudioFrame(np.full(320, 1000, dtype=np.int16), 16000)

        assert await spk.play(answer()) is False
        assert isinstance(spk, WavBackend) and spk.samples_written == 10 * 320
        assert await spk.play([_tone(0.1)]) is True  # the next answer plays normally


async def test_tts_stream_into_wav(tmp_path: Path) -> None:
    out = tmp_path / "tts.wav"
    synth = Synthesizer(sample_rate=16000)
    async with WavBackend(output_path=out, sample_rate=16000) as spk:
        assert await spk.play(synth.stream("Hello there, the weather is fine.")) is True
    audio = read_wav(out)
    assert audio.duration > 1.0 and audio.rms_dbfs() > -35


async def test_null_backend() -> None:
    async with NullBackend(frame_ms=10) as null:
        frames = []
        async for f in null.frames():
            frames.append(f)
            if len(frames) == 3:
                break
        assert not any(f.samples.any() for f in frames)
        assert await null.play([AudioFrame.silence(30, 16000)]) is True
        assert isinstance(null, NullBackend) and null.played_samples == 480


def test_wav_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot open input WAV"):
        WavBackend(tmp_path / "missing.wav")
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not a wav")
    with pytest.raises(ValueError, match="cannot read WAV file"):
        read_wav(bad)


def _speech_with_gaps(texts: list[str], gap_s: float) -> AudioFrame:
    synth = Synthesizer(sample_rate=16000)
    gap = np.zeros(int(16000 * gap_s), dtype=np.int16)
    parts = [gap]
    for t in texts:
        parts += [synth.synthesize_blocking(t).samples, gap]
    return AudioFrame(np.concatenate(parts), 16000)


def test_vad_segments_utterances_and_respects_silence_setting() -> None:
    audio = _speech_with_gaps(["hello", "roll two dice with six sides", "yes"], gap_s=0.8)
    seg = VadSegmenter(16000, silence_ms=500)
    utts = seg.push(audio) + seg.flush()
    assert [u.reason for u in utts] == ["silence"] * 3
    assert all(u.audio.rms_dbfs() > -40 for u in utts)
    assert utts[0].start == pytest.approx(0.8, abs=0.1)
    # with a silence setting longer than the gaps, everything is one utterance
    seg = VadSegmenter(16000, silence_ms=1500)
    utts = seg.push(audio) + seg.flush()
    assert len(utts) == 1 and utts[0].reason == "end_of_stream"


def test_vad_max_length_and_bad_settings() -> None:
    seg = VadSegmenter(16000, silence_ms=300, max_utterance_ms=600)
    utts = seg.push(_tone(2.0)) + seg.flush()
    assert utts[0].reason == "max_length" and utts[0].audio.duration <= 1.0
    with pytest.raises(ValueError, match="resample first"):
        VadSegmenter(22050)
    with pytest.raises(ValueError, match="mode must be one of"):
        VadSegmenter(16000, mode="fierce")


def test_push_to_talk() -> None:
    ptt = PushToTalkSegmenter(16000)
    tone = _tone(0.1)
    assert ptt.push(tone) == []  # not pressed: dropped
    ptt.press()
    ptt.push(tone)
    ptt.push(tone)
    (utt,) = ptt.release()
    assert utt.reason == "released" and utt.audio.num_samples == 3200
    assert ptt.release() == []


def test_missing_portaudio_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import sys

    from engine.voice.backend import AudioUnavailable
    from engine.voice.device_backend import import_sounddevice

    real_import = builtins.__import__

    def fake_import(name: str, *args: object, **kwargs: object) -> object:
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(AudioUnavailable, match=r"install libportaudio2 \(apt-get install libportaudio2"):
        import_sounddevice()


def test_find_device_errors() -> None:
    from engine.voice.backend import AudioUnavailable
    from engine.voice.device_backend import DeviceInfo, find_device

    devs = [DeviceInfo(0, "USB Mic", "ALSA", 1, 0, 48000.0), DeviceInfo(1, "Speakers", "ALSA", 0, 2, 44100.0)]
    assert find_device("usb", "input", devs).index == 0
    assert find_device(1, "output", devs).name == "Speakers"
    with pytest.raises(AudioUnavailable, match="index 1 not found or not an input; have: 0: USB Mic"):
        find_device(1, "input", devs)
    with pytest.raises(AudioUnavailable, match="no audio output device found"):
        find_device(None, "output", devs[:1])


async def test_a_device_stream_that_will_not_start_is_a_clear_error_and_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from engine.voice import device_backend
    from engine.voice.backend import AudioUnavailable
    from engine.voice.device_backend import DeviceBackend, DeviceInfo

    opened: list[FailingStream] = []

    class FailingStream:
        def __init__(self, **kw: object) -> None:
            self.kw, self.closed = kw, False
            opened.append(self)

        def start(self) -> None:
            raise RuntimeError("device busy")

        def close(self) -> None:
            self.closed = True

    fake_sd = types.SimpleNamespace(
        RawInputStream=FailingStream,
        RawOutputStream=FailingStream,
        check_input_settings=lambda **kw: None,
        check_output_settings=lambda **kw: None,
        default=types.SimpleNamespace(device=(0, 1)),
    )
    devices = [DeviceInfo(0, "Test Mic", "ALSA", 1, 0, 16000.0), DeviceInfo(1, "Test Speaker", "ALSA", 0, 1, 8000.0)]
    monkeypatch.setattr(device_backend, "import_sounddevice", lambda: fake_sd)
    monkeypatch.setattr(device_backend, "list_devices", lambda rescan=False: devices)
    backend = DeviceBackend(sample_rate=16000, frame_ms=20)
    with pytest.raises(AudioUnavailable, match=r"cannot open audio input 'Test Mic': device busy"):
        await anext(backend.frames())
    with pytest.raises(AudioUnavailable, match=r"cannot open audio output 'Test Speaker': device busy"):
        await backend.play([AudioFrame(np.zeros(320, dtype=np.int16), 16000, 0.0)])
    assert [(s.kw["device"], s.kw["samplerate"], s.kw["blocksize"], s.closed) for s in opened] == [
        (0, 16000, 320, True),
        (1, 16000, 320, True),
    ]
    await backend.close()
