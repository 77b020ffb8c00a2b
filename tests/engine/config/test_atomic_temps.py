"""Temp files left by a save that was killed half-way are cleaned up by the next save of the same file."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from engine.config.atomic import STALE_TEMP_S, atomic_write


def _leftover(directory: Path, prefix: str, age_s: float) -> Path:
    """A temp file named exactly as an aborted save leaves it, last modified ``age_s`` ago."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    os.write(fd, b"half a config")
    os.close(fd)
    when = time.time() - age_s
    os.utime(name, (when, when))
    return Path(name)


def test_next_save_removes_stale_temps_of_that_file_only(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    target.write_text("a: 1\n")
    stale = _leftover(tmp_path, ".config.yaml.", STALE_TEMP_S * 10)
    stale_bak = _leftover(tmp_path, ".config.yaml.bak.", STALE_TEMP_S * 10)
    fresh = _leftover(tmp_path, ".config.yaml.", 0)  # may be a save running in another process right now
    other = _leftover(tmp_path, ".other.yaml.", STALE_TEMP_S * 10)  # another file's leftover: not ours
    lookalike = tmp_path / ".config.yaml.notours.tmp"
    lookalike.write_text("x")
    os.utime(lookalike, (0, 0))

    atomic_write(target, b"a: 2\n", backup=b"a: 1\n")

    assert target.read_bytes() == b"a: 2\n" and (tmp_path / "config.yaml.bak").read_bytes() == b"a: 1\n"
    assert not stale.exists() and not stale_bak.exists()
    assert fresh.exists() and other.exists() and lookalike.exists()
    leftovers = sorted(p.name for p in tmp_path.glob(".config.yaml.*.tmp"))
    assert leftovers == sorted([fresh.name, lookalike.name])  # the save itself left nothing behind
