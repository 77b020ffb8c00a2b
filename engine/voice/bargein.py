"""Barge-in onset detection: has the caller started talking over the agent?

The endpointer (``VadSegmenter``) wants ~90 ms of speech before it opens an utterance, to ignore clicks; that is
too slow for cutting off the agent, which should stop within 100 ms of the caller's voice. ``SpeechOnset`` runs
its own WebRTC VAD (pocketsphinx ``Vad``) on the same frames and fires once ``onset_ms`` of the last
``onset_ms + one frame`` were speech (default 60 ms on 20 ms frames: three speech frames out of four). It is
reset at the start of every playback; the voice driver's ``echo_guard_ms`` ignores the first part of each
playback (speaker echo).
"""

from __future__ import annotations

from collections import deque

from engine.voice.audio import AudioFrame, Chunker
from engine.voice.vad import VAD_MODES, VAD_RATES


class SpeechOnset:
    def __init__(self, sample_rate: int = 16000, onset_ms: int = 60, frame_ms: int = 20, mode: str = "medium_loose"):
        from pocketsphinx import Vad

        if sample_rate not in VAD_RATES:
            raise ValueError(f"barge-in VAD sample_rate must be one of {VAD_RATES}, got {sample_rate}")
        if frame_ms not in (10, 20, 30):
            raise ValueError(f"barge-in VAD frame_ms must be 10, 20 or 30, got {frame_ms}")
        if onset_ms < frame_ms:
            raise ValueError(f"barge-in onset_ms must be at least one frame ({frame_ms} ms), got {onset_ms}")
        self.frame_ms = frame_ms
        self._vad = Vad(VAD_MODES[mode], sample_rate, frame_ms / 1000.0)
        self._chunker = Chunker(sample_rate, frame_ms)
        self._needed = -(-onset_ms // frame_ms)
        self._window: deque[bool] = deque(maxlen=self._needed + 1)

    def reset(self) -> None:
        self._window.clear()
        self._chunker.flush(pad=False)

    def push(self, frame: AudioFrame) -> bool:
        """Feed caller audio; True when speech onset is detected in it (then the detector resets)."""
        for f in self._chunker.push(frame):
            self._window.append(bool(self._vad.is_speech(f.pcm)))
            if sum(self._window) >= self._needed:
                self._window.clear()
                return True
        return False
