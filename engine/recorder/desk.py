"""The flight recorder's part of the engine's public API: export a call, list recordings, record voice audio.

Why apart from ``engine.app``: the recorder is a component (``engine.recorder``); these are the thin doors onto it,
kept out of the engine's core so ``app.py`` stays about lifecycle, calls and wiring. ``Engine`` inherits them;
they use only the engine's ``components`` and its softphone's call id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.recorder.component import Recorder
    from engine.recorder.files import RecordingFile
    from engine.voice.backend import AudioBackend
    from engine.voice.softphone import BackendFactory


class RecordingDesk:
    components: Sequence[object]

    @property
    def recorder(self) -> Recorder:
        """The flight recorder component."""
        from engine.recorder.component import Recorder

        for c in self.components:
            if isinstance(c, Recorder):
                return c
        raise RuntimeError("the recorder is not attached to this engine")

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
        from engine.recorder.files import list_recordings

        return list_recordings(self.recorder.directory)

    def record_audio(self, backend: AudioBackend, call_id: Callable[[], str | None]) -> AudioBackend:
        """``backend`` with the call's audio recorded (phone calls, ``ava-engine call --audio-in``); the voice
        driver factory (``engine.realtime.host.voice_call``) asks for it."""
        from engine.recorder.audio import recorded

        return recorded(backend, call_id, self.recorder.audio_sink())

    def _recorded(self, factory: BackendFactory | None) -> BackendFactory:
        """The softphone's backend factory (default: the sound card) with each backend's audio recorded (when
        ``recording.audio``)."""
        from engine.recorder.audio import recorded
        from engine.voice.softphone import device_backend

        chosen = factory or device_backend

        def make(*args: object) -> object:
            backend = chosen(*args)  # type: ignore[arg-type]
            phone = getattr(self, "_softphone", None)
            return recorded(backend, lambda: phone.call_id if phone is not None else None, self.recorder.audio_sink())

        return make  # type: ignore[return-value]
