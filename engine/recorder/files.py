"""Where recordings live, what they are called, how one is found again, and retention (age and total size).

A recording is a group of files sharing one stem, ``<UTC start>-<call id>``: ``.jsonl`` (the events) and, for voice
calls, ``.caller.wav`` / ``.agent.wav``. Call ids repeat across engine runs (``call-1``…), so the stem leads with
the start time; "the recording of call-1" means the newest one. Pure file-system code, no engine state.
"""

from __future__ import annotations

import calendar
import glob
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import platformdirs

EVENTS_SUFFIX = ".jsonl"
AUDIO_SUFFIXES = (".caller.wav", ".agent.wav")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_STEM = re.compile(r"^(\d{8}T\d{6}\.\d{3}Z)-(.+)$")


def default_dir() -> Path:
    return Path(platformdirs.user_data_dir("ava-console")) / "recordings"


def recordings_dir(configured: str | None, base_dir: Path) -> Path:
    """``recording.dir`` (relative to the config file's folder), else ``recordings`` in the user data folder."""
    if configured:
        return (base_dir / Path(configured).expanduser()).resolve()
    return default_dir()


def safe_call_id(call_id: str) -> str:
    return _UNSAFE.sub("_", call_id)[:80] or "call"


def stem_for(call_id: str, started: float) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(started)) + f".{int(started * 1000) % 1000:03d}Z"
    return f"{stamp}-{safe_call_id(call_id)}"


def open_new_events(directory: Path, call_id: str, started: float) -> tuple[Path, TextIO]:
    """A fresh ``.jsonl`` file for a call, created and opened for writing (a ``~N`` suffix when another engine
    recorded the same id in the same ms). Created with ``O_EXCL`` in one step: checking for the name first and
    creating it after left a window in which two engines sharing the folder both picked the same name, and the
    loser's whole recording was lost."""
    stem = stem_for(call_id, started)
    path = directory / f"{stem}{EVENTS_SUFFIX}"
    n = 1
    while True:
        try:
            return path, path.open("x", encoding="utf-8")
        except FileExistsError:
            n += 1
            path = directory / f"{stem}~{n}{EVENTS_SUFFIX}"


def audio_path(events_path: Path, role: str) -> Path:
    return events_path.with_name(events_path.name.removesuffix(EVENTS_SUFFIX) + f".{role}.wav")


@dataclass(frozen=True, slots=True)
class RecordingFile:
    """One recording on disk: its events file, the call id in its name, its start time, its files' total size."""

    path: Path
    call_id: str
    started: float
    size: int
    mtime: float


def _parse(path: Path) -> tuple[str, float] | None:
    m = _STEM.match(path.name.removesuffix(EVENTS_SUFFIX).split("~")[0])
    if m is None:
        return None
    try:
        started = calendar.timegm(time.strptime(m.group(1)[:15], "%Y%m%dT%H%M%S"))
    except ValueError:
        return None
    return m.group(2), started + int(m.group(1)[16:19]) / 1000


def group_files(events_path: Path) -> list[Path]:
    """The events file and the audio files beside it (those that exist)."""
    return [events_path, *(p for p in (audio_path(events_path, r) for r in ("caller", "agent")) if p.exists())]


def list_recordings(directory: Path) -> list[RecordingFile]:
    """Every recording in ``directory``, newest first (an absent folder has none)."""
    if not directory.is_dir():
        return []
    out: list[RecordingFile] = []
    for p in directory.glob(f"*{EVENTS_SUFFIX}"):
        parsed = _parse(p)
        try:
            stats = [f.stat() for f in group_files(p)]
        except OSError:  # deleted meanwhile
            continue
        call_id, started = parsed if parsed is not None else (p.stem, stats[0].st_mtime)
        out.append(RecordingFile(p, call_id, started, sum(s.st_size for s in stats), stats[0].st_mtime))
    out.sort(key=lambda r: (r.started, r.path.name), reverse=True)
    return out


def find_recording(directory: Path, call_id: str) -> Path | None:
    """The newest recording of ``call_id`` (as the engine named the call), or None."""
    wanted = safe_call_id(call_id)
    if not directory.is_dir():
        return None
    # Only the files named for this call are looked at: a folder of thousands of recordings is not read (stat and
    # name parsing of every file cost ``export`` ~2 s at 16,000 recordings).
    name = glob.escape(wanted)
    best: tuple[float, str, Path] | None = None
    for p in (*directory.glob(f"*-{name}{EVENTS_SUFFIX}"), *directory.glob(f"*-{name}~*{EVENTS_SUFFIX}")):
        parsed = _parse(p)
        if parsed is None or parsed[0] != wanted:  # "x-call-1" also ends in "-call-1"
            continue
        if best is None or (parsed[1], p.name) > best[:2]:
            best = (parsed[1], p.name, p)
    plain = directory / f"{wanted}{EVENTS_SUFFIX}"  # a file named for the call alone (renamed by hand): its mtime
    if plain.is_file() and (best is None or (plain.stat().st_mtime, plain.name) > best[:2]):
        return plain
    return best[2] if best is not None else None


def enforce_retention(
    directory: Path,
    max_age_days: float,
    max_total_mb: float,
    *,
    keep: frozenset[Path] = frozenset(),
    now: float | None = None,
) -> list[Path]:
    """Delete recordings older than ``max_age_days``, then the oldest until all take at most ``max_total_mb``.

    ``keep`` (the recordings of live calls) is never deleted. Returns the events files whose recordings went.
    """
    now = time.time() if now is None else now
    recs = list_recordings(directory)
    removed: list[Path] = []
    limit = max_total_mb * 1024 * 1024
    total = sum(r.size for r in recs)
    for r in reversed(recs):  # oldest first
        if r.path in keep:
            continue
        too_old = now - r.mtime > max_age_days * 86400
        if not too_old and total <= limit:
            continue
        for f in group_files(r.path):
            f.unlink(missing_ok=True)
        total -= r.size
        removed.append(r.path)
    return removed
