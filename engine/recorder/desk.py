"""The flight recorder's part of the engine's public API: export a call, list recordings, record voice audio.

Why apart from ``engine.recorder.component``: the recorder is a component with a lifecycle; these are the thin
doors onto it that the engine's facade forwards to. ``RecordingDesk`` is handed the recorder and a way to learn the
softphone's call id, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.recorder.files import RecordingFile, list_recordings

if TYPE_CHECKING:
    from engine.recorder.component import Recorder
    from engine.voice.backend import AudioBackend
    from engine.voice.softphone import BackendFactory


class RecordingDesk:
    def __init__(self, recorder: Recorder, softphone_call: Callable[[], str | None]) -> None:
        self.recorder = recorder
        self._softphone_call = softphone_call

    async def export_call(self, call_id: str, fmt: str = "md", out: str | Path | None = None) -> Path:
        """Write a call's transcript, tools and tiers (``md`` or ``json``) from its recording; returns the file
        (default: beside the recording). Raises with the reason when there is no recording of that call."""
        path, text = await self.recorder.export(call_id, fmt)
        target = Path(out) if out is not None else path.with_suffix(f".{fmt}")
        target.write_text(text, encoding="utf-8")
        return target

    @property
    def recordings_dir(self) -> Path:
        """Where this engine's recordings go (``recording.dir``, else the user data folder's ``recordings``)."""
        return self.recorder.directory

    def recordings(self) -> list[RecordingFile]:
        """The recordings on disk, newest first (path, call id, start, size)."""
        return list_recordings(self.recorder.directory)

    def record_audio(self, backend: AudioBackend, call_id: Callable[[], str | None]) -> AudioBackend:
        """``backend`` with the call's audio recorded (phone calls, ``ava-engine call --audio-in``); the voice
        driver factory (``engine.realtime.driver.voice_call``) asks for it."""
        from engine.recorder.audio import recorded  # the voice stack (numpy) loads on first use

        return recorded(backend, call_id, self.recorder.audio_sink())

    def recorded(self, factory: BackendFactory | None) -> BackendFactory:
        """The softphone's backend factory (default: the sound card) with each backend's audio recorded (when
        ``recording.audio``)."""
        from engine.recorder.audio import recorded  # the voice stack (numpy, PortAudio) loads on first use
        from engine.voice.softphone import device_backend

        chosen = factory or device_backend

        def make(*args: object) -> object:
            backend = chosen(*args)  # type: ignore[arg-type]
            return recorded(backend, self._softphone_call, self.recorder.audio_sink())

        return make  # type: ignore[return-value]
