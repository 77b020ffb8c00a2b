"""Crash-safe file replacement: the file on disk is always either the old or the new content, never torn.

Write a temp file in the same directory, fsync it, keep the previous version as ``PATH.bak`` (itself written
the same way), ``os.replace`` the temp over the file, then fsync the directory so the rename survives a power
cut. A save that was killed between writing its temp file and the rename leaves ``.NAME.XXXXXXXX.tmp`` behind;
the next save of the same file removes such leftovers once they are older than ``STALE_TEMP_S`` (a younger one may
belong to a save still running in another process), and only files of that exact pattern.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from pathlib import Path

#: A temp file of this file's saves older than this is a leftover of a save that was killed (seconds).
STALE_TEMP_S = 60.0
_TEMP_SUFFIX = ".tmp"


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":  # Windows cannot open a directory for fsync; os.replace is still atomic there
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_temps(path: Path, *, older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Delete leftover temp files of saves of ``path`` (and of its ``.bak``); returns what was removed.

    Only names ``mkstemp`` gives this module's temp files (``.NAME.`` or ``.NAME.bak.``, 8 random characters,
    ``.tmp``) and only files last modified more than ``older_than_s`` ago.
    """
    pattern = re.compile(rf"^{re.escape(_temp_prefix(path))}(?:bak\.)?[A-Za-z0-9_]{{8}}{re.escape(_TEMP_SUFFIX)}$")
    cutoff = time.time() - older_than_s
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _replace_with(path: Path, data: bytes, mode: int | None) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX, dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes, *, backup: bytes | None = None) -> None:
    """Replace ``path`` with ``data`` atomically; when ``backup`` is given it becomes ``PATH.bak`` first.

    The file's permission bits are kept (a config may hold tokens and be 0600). Leftover temp files of earlier
    saves that were killed half-way are removed first (``remove_stale_temps``).
    """
    target = Path(path)
    remove_stale_temps(target)
    try:
        mode: int | None = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    if backup is not None:
        _replace_with(target.with_name(target.name + ".bak"), backup, mode)
    _replace_with(target, data, mode)
    _fsync_dir(target.parent)
