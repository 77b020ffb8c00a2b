"""Confining file access to one root directory.

Why it exists: a voice agent's file tools must never read or write outside the folder the operator chose.
Every path is relative to the root; ``..`` components, absolute paths, and symlinks whose target lies
outside the root are refused, as are files over the size limit and (for reading) binary files. The checks
are pure functions over the filesystem so they can be tested directly.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

DEFAULT_MAX_BYTES = 1024 * 1024
MAX_LISTING = 200


class SandboxError(ValueError):
    """A refused path or file; the message says which rule it broke."""


@dataclass(frozen=True)
class Sandbox:
    root: Path
    max_bytes: int = DEFAULT_MAX_BYTES

    @classmethod
    def at(cls, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> Sandbox:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise SandboxError(f"the root {path} is not an existing directory")
        if max_bytes < 1:
            raise SandboxError(f"the size limit must be at least 1 byte, got {max_bytes}")
        return cls(path.resolve(), max_bytes)

    def resolve(self, relative: str) -> Path:
        """The real path for ``relative`` inside the root, or :class:`SandboxError`."""
        text = relative.strip()
        if not text:
            raise SandboxError("the path is empty; give a path relative to the root, like notes/todo.txt")
        if "\x00" in text:
            raise SandboxError("the path contains a NUL character")
        if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or text.startswith("~"):
            raise SandboxError(f"{relative!r} is an absolute path; give a path relative to the root")
        parts = PurePosixPath(text.replace("\\", "/")).parts
        if ".." in parts:
            raise SandboxError(f"{relative!r} contains '..'; paths may not leave the root")
        candidate = self.root.joinpath(*parts)
        real = candidate.resolve()
        if real != self.root and not real.is_relative_to(self.root):
            raise SandboxError(f"{relative!r} is a symlink that leads outside the root")
        return real

    def display(self, path: Path) -> str:
        return "." if path == self.root else path.relative_to(self.root).as_posix()

    def read_text(self, relative: str) -> tuple[str, int]:
        path = self.resolve(relative)
        if not path.exists():
            raise SandboxError(f"{relative!r} does not exist")
        if not path.is_file():
            raise SandboxError(f"{relative!r} is not a regular file")
        size = path.stat().st_size
        if size > self.max_bytes:
            raise SandboxError(f"{relative!r} is {size} bytes; the limit is {self.max_bytes} bytes")
        data = path.read_bytes()
        if b"\x00" in data:
            raise SandboxError(f"{relative!r} is a binary file; only text files can be read")
        try:
            return data.decode("utf-8"), size
        except UnicodeDecodeError:
            raise SandboxError(f"{relative!r} is not UTF-8 text; only text files can be read") from None

    def write_text(self, relative: str, content: str, overwrite: bool) -> tuple[Path, int, bool]:
        data = content.encode("utf-8")
        if len(data) > self.max_bytes:
            raise SandboxError(f"the content is {len(data)} bytes; the limit is {self.max_bytes} bytes")
        path = self.resolve(relative)
        if path == self.root or path.is_dir():
            raise SandboxError(f"{relative!r} is a directory")
        existed = path.exists()
        if existed and not overwrite:
            raise SandboxError(f"{relative!r} already exists; pass overwrite=true to replace it")
        path.parent.mkdir(parents=True, exist_ok=True)
        parent = path.parent.resolve()  # a folder may have been swapped for a symlink meanwhile
        if parent != self.root and not parent.is_relative_to(self.root):
            raise SandboxError(f"{relative!r} leads outside the root")
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return path, len(data), existed

    def list_dir(self, relative: str) -> list[dict[str, object]]:
        path = self.resolve(relative or ".")
        if not path.exists():
            raise SandboxError(f"{relative!r} does not exist")
        if not path.is_dir():
            raise SandboxError(f"{relative!r} is not a directory")
        entries: list[dict[str, object]] = []
        for child in sorted(path.iterdir(), key=lambda p: p.name.casefold()):
            if len(entries) >= MAX_LISTING:
                break
            kind = "symlink" if child.is_symlink() else "dir" if child.is_dir() else "file"
            size = child.lstat().st_size if kind == "file" else None
            entries.append({"name": child.name, "type": kind, "size": size})
        return entries
