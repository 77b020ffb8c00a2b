"""Shared helpers for the voice-call tests and the voice-loop bench: demo settings, caller WAVs, energy checks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.config import load_settings
from engine.config.models import Settings
from engine.voice.audio import AudioFrame, rms_dbfs
from engine.voice.tts import Synthesizer
from engine.voice.wav_backend import write_wav

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "config" / "default.yaml"
RATE = 16000
SPEECH_DBFS = -45.0  # a 100 ms window of espeak speech is far above this; digital silence is -120


def demo_settings(tmp_path: Path) -> Settings:
    """config/default.yaml with the memory server on a private database in ``tmp_path``."""
    settings = load_settings(DEMO_CONFIG)
    memory, db = settings.mcp.servers["memory"], ["--db", str(tmp_path / "memory.db")]
    if memory.transport == "stdio":
        memory.command += db
    else:  # inprocess or bundled (the demo runs it in-process): its command line is ``args``
        memory.args = [*(memory.args or []), *db]
    return settings


@dataclass(frozen=True)
class Spoken:
    text: str
    start: float  # seconds into the caller's WAV where the voice is first audible
    end: float  # seconds where it falls silent


def onset(samples: np.ndarray, threshold: int = 300) -> int:
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold)
    return int(loud[0]) if loud.size else 0


def offset(samples: np.ndarray, threshold: int = 300) -> int:
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold)
    return int(loud[-1]) + 1 if loud.size else 0


def caller_wav(path: Path, lead_s: float, plan: list[tuple[str, str, int, float]]) -> list[Spoken]:
    """Write the caller's side: ``lead_s`` of silence, then each (text, voice, wpm, gap_after_s)."""
    parts = [np.zeros(round(lead_s * RATE), dtype=np.int16)]
    pos = parts[0].size
    spoken: list[Spoken] = []
    for text, voice, wpm, gap in plan:
        clip = Synthesizer(voice=voice, rate=wpm, sample_rate=RATE).synthesize_blocking(text).samples
        spoken.append(Spoken(text, (pos + onset(clip)) / RATE, (pos + offset(clip)) / RATE))
        silence = np.zeros(round(gap * RATE), dtype=np.int16)
        parts += [clip, silence]
        pos += clip.size + silence.size
    write_wav(path, AudioFrame(np.concatenate(parts), RATE))
    return spoken


def level(audio: AudioFrame, start: float, end: float) -> float:
    """RMS dBFS of ``audio`` between two times (seconds)."""
    a, b = round(start * audio.sample_rate), round(end * audio.sample_rate)
    return rms_dbfs(audio.samples[max(0, a) : max(0, b)])


def has_speech(audio: AudioFrame, start: float, end: float) -> bool:
    return level(audio, start, end) > SPEECH_DBFS


def silent(audio: AudioFrame, start: float, end: float) -> bool:
    a, b = round(start * audio.sample_rate), round(end * audio.sample_rate)
    return not audio.samples[max(0, a) : max(0, b)].any()
