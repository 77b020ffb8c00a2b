"""A voice call's audio for the recorder: an ``AudioBackend`` that passes everything through and tees it off.

Why a wrapper around the backend: the caller's audio (``frames``) and the agent's (``play``) both cross the
backend, whatever drives the call (the cascaded pipeline or a realtime provider) and whatever the backend is
(sound card, WAV files, a phone line). The tee only hands the read-only samples to the writer's queue; the call
id is asked for lazily (it exists only once the call started), and audio before it is not recorded.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import Any

from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend

#: ``offer_audio(call_id, role, samples, rate)`` of the recorder's writer.
AudioSink = Callable[[str, str, Any, int], None]


class RecordedBackend(AudioBackend):
    def __init__(self, inner: AudioBackend, call_id: Callable[[], str | None], sink: AudioSink) -> None:
        self.inner = inner  # before the base's __init__: it sets on_output_level, which goes to the inner backend
        super().__init__(inner.sample_rate, inner.frame_ms)
        self._call_id = call_id
        self._sink = sink

    def _tee(self, role: str, frame: AudioFrame) -> None:
        call_id = self._call_id()
        if call_id:
            self._sink(call_id, role, frame.samples, frame.sample_rate)

    async def frames(self) -> AsyncIterator[AudioFrame]:
        async for frame in self.inner.frames():
            self._tee("caller", frame)
            yield frame

    async def play(self, frames: AsyncIterable[AudioFrame] | Iterable[AudioFrame]) -> bool:
        async def teed() -> AsyncIterator[AudioFrame]:
            if isinstance(frames, AsyncIterable):
                async for f in frames:
                    self._tee("agent", f)
                    yield f
            else:
                for f in frames:
                    self._tee("agent", f)
                    yield f

        return await self.inner.play(teed())

    async def write(self, frame: AudioFrame) -> None:
        self._tee("agent", frame)
        await self.inner.write(frame)

    @property
    def on_output_level(self) -> Callable[[float], None] | None:
        return self.inner.on_output_level

    @on_output_level.setter
    def on_output_level(self, hook: Callable[[float], None] | None) -> None:
        self.inner.on_output_level = hook  # the inner backend plays the chunks

    def stop_playback(self) -> None:
        self.inner.stop_playback()

    @property
    def is_playing(self) -> bool:
        return self.inner.is_playing

    def queued_output_s(self) -> float:
        return self.inner.queued_output_s()

    async def close(self) -> None:
        self._closed = True
        await self.inner.close()

    # the primitives belong to the inner backend (``play`` and ``close`` go straight to it)
    async def _output_chunk(self, frame: AudioFrame) -> None:
        await self.inner._output_chunk(frame)

    def _drop_pending_output(self) -> None:
        self.inner._drop_pending_output()

    async def _drain_output(self) -> None:
        await self.inner._drain_output()

    async def _release(self) -> None:
        await self.inner._release()

    def __getattr__(self, name: str) -> Any:  # a backend's own extras (a phone stream, a WAV file's path …)
        return getattr(self.inner, name)


def recorded(backend: AudioBackend, call_id: Callable[[], str | None], sink: AudioSink | None) -> AudioBackend:
    """``backend`` with its audio recorded into ``sink``, or ``backend`` itself when audio is not recorded — or
    when the call runs from one WAV file into another (``ava-engine call --audio-in/--audio-out``): that audio is
    on disk already, and the pipeline paces such a call by its file backend."""
    from engine.voice.wav_backend import WavBackend

    if sink is None or (isinstance(backend, WavBackend) and not backend.realtime):
        return backend
    return RecordedBackend(backend, call_id, sink)
