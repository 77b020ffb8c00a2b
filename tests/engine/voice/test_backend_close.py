"""Every audio backend closes the same way (AudioBackend.close): playback stops, resources are freed once."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path

from engine.voice.audio import AudioFrame
from engine.voice.wav_backend import NullBackend, WavBackend


async def test_close_stops_playback_and_a_second_close_does_nothing() -> None:
    backend = NullBackend()
    playing = asyncio.create_task(backend.play([AudioFrame.silence(5000, 16000)]))
    await asyncio.sleep(0)  # the task starts and waits inside its first chunk
    assert backend.is_playing
    await backend.close()
    assert await asyncio.wait_for(playing, 3) is False  # stopped, not played to the end
    await backend.close()
    assert [f async for f in backend.frames()] == []


async def test_wav_backend_close_finishes_its_files(tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    backend = WavBackend(output_path=out)
    await backend.play([AudioFrame.silence(100, 16000)])
    await backend.close()
    await backend.close()
    with wave.open(str(out), "rb") as w:  # the header was written: the file is complete
        assert w.getnframes() == 1600
