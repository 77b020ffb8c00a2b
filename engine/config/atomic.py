"""Crash-safe file replacement: the file on disk is always either the old or the new content, never torn.

Write a temp file in the same directory, fsync it, keep the previous version as ``PATH.bak`` (itself written
the same way), ``os.replace`` the temp over the file, then fsync the directory so the rename survives a power
cut.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":  # Windows cannot open a directory for fsync; os.replace is still atomic there
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_with(path: Path, data: bytes, mode: int | None) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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

    The file's permission bits are kept (a config may hold tokens and be 0600).
    """
    target = Path(path)
    try:
        mode: int | None = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    if backup is not None:
        _replace_with(target.with_name(target.name + ".bak"), backup, mode)
    _replace_with(target, data, mode)
    _fsync_dir(target.parent)
