"""Voice settings of one voice call: TTS voice, endpointing, barge-in and echo guard, from config or code.

A voice call takes its settings from the ``softphone`` section, and a ``type: pipeline`` provider can override
them per provider through ``voice`` and ``options`` (``rate``, ``pitch``, ``vad_silence_ms``, ``barge_in``,
``barge_in_ms``, ``echo_guard_ms``, ``push_to_talk``, ``dictionary``). This module is plain data (no audio
imports), so the provider layer can validate those options without loading any voice library.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.config.models import SoftphoneConfig


@dataclass(frozen=True, slots=True)
class VoiceOptions:
    voice: str = "en-us"
    rate: int = 170  # words per minute (espeak-ng: 80..450)
    pitch: int = 50  # 0..100
    sample_rate: int = 16000
    frame_ms: int = 20
    vad_silence_ms: int = 600  # trailing silence that ends an utterance
    push_to_talk: bool = False
    #: Stop the agent when the caller speaks over it.
    barge_in: bool = True
    #: Speech needed (ms) while the agent talks before playback stops; the VAD runs on 20 ms frames.
    barge_in_ms: int = 60
    #: Ignore the caller's audio for barge-in during the first N ms of each playback (speaker echo without a
    #: headset; 0 = off). Echo later in the playback still counts: a headset is the real fix.
    echo_guard_ms: int = 0
    dictionary: str | None = None

    def __post_init__(self) -> None:
        checks: list[tuple[str, bool, str]] = [
            ("rate", 80 <= self.rate <= 450, "must be 80..450 words per minute"),
            ("pitch", 0 <= self.pitch <= 100, "must be 0..100"),
            ("sample_rate", self.sample_rate in (8000, 16000, 32000, 48000), "must be 8000, 16000, 32000 or 48000"),
            ("frame_ms", self.frame_ms in (10, 20, 30), "must be 10, 20 or 30"),
            ("vad_silence_ms", self.vad_silence_ms >= self.frame_ms, f"must be at least {self.frame_ms}"),
            ("barge_in_ms", self.barge_in_ms >= self.frame_ms, f"must be at least {self.frame_ms}"),
            ("echo_guard_ms", self.echo_guard_ms >= 0, "must not be negative"),
        ]
        for name, ok, why in checks:
            if not ok:
                raise ValueError(f"voice option {name}={getattr(self, name)!r}: {why}")
        if not self.voice.strip():
            raise ValueError("voice option voice: must name an espeak-ng voice, e.g. 'en-us'")

    @classmethod
    def from_softphone(cls, cfg: SoftphoneConfig) -> VoiceOptions:
        return cls(
            voice=cfg.voice,
            rate=cfg.rate,
            pitch=cfg.pitch,
            sample_rate=cfg.sample_rate,
            vad_silence_ms=cfg.vad_silence_ms,
            push_to_talk=cfg.push_to_talk,
            dictionary=cfg.dictionary,
        )

    def with_overrides(self, voice: str | None, options: Mapping[str, Any], where: str) -> VoiceOptions:
        """These options with a provider's ``voice`` and ``options`` applied; unknown keys are errors."""
        allowed = {f.name for f in dataclasses.fields(self)} - {"voice", "sample_rate", "frame_ms"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            known = ", ".join(sorted(allowed))
            raise ValueError(f"{where}: unknown voice option(s) {', '.join(unknown)} (known: {known})")
        changes: dict[str, Any] = dict(options)
        for key, value in changes.items():
            want = bool if key in ("barge_in", "push_to_talk") else (str if key == "dictionary" else int)
            ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
            if not ok and not (key == "dictionary" and value is None):
                raise ValueError(f"{where}: voice option {key} must be {want.__name__}, got {value!r}")
        if voice is not None:
            changes["voice"] = voice
        try:
            return dataclasses.replace(self, **changes)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
